"""The reader never raises, whatever bytes it is given, and always locates its problems."""

from hypothesis import given, settings
from hypothesis import strategies as st
from obsrepo.format.analyze import analyze

FRAGMENTS = ["---\n", "spec: observation/v1\n", "id: obs-1\n", "a: &x [1]\n", "b: *x\n", "<<: {}\n",
             "- x\n", "  k: v\n", "? [a]\n", "!!str\n", '"\\u0000"\n', "\t\n", "{[}\n", "%YAML 1.1\n",
             "\xef\xbb\xbf", "\r", "...\n", "key: |\n  text\n", "n: 1e400\n", "n: 123456789012345678901234\n"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=20), st.binary(max_size=40))
def test_analyze_never_raises_and_locates_every_issue(parts, noise):
    data = ("".join(parts)).encode("utf-8", "surrogatepass") + noise
    result = analyze("observations/2026/01/01/obs-1.md", data)
    for issue in result.issues:
        assert issue.line >= 1 and issue.col >= 1
        assert issue.code and issue.rule and issue.message


def test_deep_nesting_is_bounded_not_a_recursion_error():
    data = b"---\na: " + b"[" * 5000 + b"]" * 5000 + b"\n---\n"
    result = analyze("observations/x.md", data)
    assert [i.rule for i in result.issues] == ["yaml-too-deep"]


def test_alias_bomb_is_refused_without_expansion():
    lines = ["---", 'a: &a ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, 9):
        prev, cur = chr(ord("a") + i - 1), chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]")
    lines.append("---")
    result = analyze("observations/x.md", "\n".join(lines).encode())
    assert {i.rule for i in result.issues} >= {"yaml-anchor", "yaml-alias"}
