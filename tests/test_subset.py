"""The subset reader (format/subset.py) never answers differently from the strict reader.

`read_document` tries the subset reader first and falls back to libyaml's events and the policy
composer; `strict_only=True` skips the subset reader. Both must give the same `Document` (front
matter with its exact types, body, positions, issues) and the same `Analysis` for every input:
the test cases, the demo repository's documents, every truncation of their front matter, and
mutated and generated inputs, with the YAML that agents get wrong written in on purpose.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from obsrepo.format.analyze import analyze
from obsrepo.format.document import Document, read_document
from obsrepo.format.subset import read_subset

ROOT = Path(__file__).resolve().parent.parent
CORPUS_FILES = sorted([*(ROOT / "tests" / "cases").rglob("*.md"), *(ROOT / "observations").rglob("*.md"),
                       *(ROOT / "comprehension").glob("*.md")])
CORPUS = [(p.relative_to(ROOT).as_posix(), p.read_bytes()) for p in CORPUS_FILES]
PATH = "observations/2026/01/01/obs-x.md"
FUZZ = {"derandomize": True, "deadline": None, "database": None, "suppress_health_check": list(HealthCheck)}


def fields(doc: Document) -> tuple:
    return doc.path, doc.front, doc.body, doc.issues, sorted(doc.locs.items(), key=repr), doc.body_line


def assert_same(data: bytes, path: str = PATH, with_analysis: bool = False) -> None:
    """The same values with the same types (repr tells 1, 1.0 and True apart, and 0.0 and -0.0).
    The subset reader is also called alone: read_document would hide an exception of it."""
    parts = split(data)
    if parts is not None:
        read_subset(parts[0])
    fast, strict = read_document(path, data), read_document(path, data, strict_only=True)
    assert repr(fields(fast)) == repr(fields(strict)), data
    if with_analysis:
        a, b = analyze(path, data, with_record=True), analyze(path, data, with_record=True, strict_only=True)
        assert repr((a.kind, a.issues, a.facts, a.record)) == repr((b.kind, b.issues, b.facts, b.record)), data


def split(data: bytes) -> tuple[str, str] | None:
    """(front matter, rest from the closing fence) of a document that has both."""
    text = data.decode("utf-8", "surrogateescape").replace("\r\n", "\n")
    close = text.find("\n---\n", 3) if text.startswith("---\n") else -1
    return (text[4 : close + 1], text[close + 1 :]) if close > 0 else None


def document(front: str, rest: str = "---\nbody\n") -> bytes:
    return ("---\n" + front + rest).encode("utf-8", "surrogateescape")


def test_every_case_and_demo_document_reads_and_analyses_the_same() -> None:
    answered = 0
    for path, data in CORPUS:
        assert_same(data, path, with_analysis=True)
        parts = split(data)
        answered += parts is not None and read_subset(parts[0]) is not None
    # the subset reader is what reads these documents, not a bystander: the demo data and most cases
    assert answered >= 0.75 * len(CORPUS)
    for path, data in CORPUS:
        if path.startswith(("observations/", "comprehension/")):
            parts = split(data)
            assert parts is not None and read_subset(parts[0]) is not None, path


@pytest.mark.parametrize("part", range(4))
def test_every_truncation_of_every_front_matter_reads_the_same(part: int) -> None:
    """The front matter cut after each character (and closed again), and the whole document cut
    after each line."""
    for path, data in CORPUS[part::4]:
        parts = split(data)
        if parts is None:
            continue
        front, rest = parts
        for end in range(len(front) + 1):
            cut = front[:end] + "\n"
            if read_subset(cut) is not None:  # declined, read_document runs the strict reader alone
                assert_same(document(cut, rest), path)
        lines = data.split(b"\n")
        for end in range(len(lines)):
            assert_same(b"\n".join(lines[:end]), path)


# what agents write, and what YAML readers disagree on
EDGE_VALUES = [
    "no", "NO", "yes", "on", "off", "y", "0123", "0755", "0o17", "0x1F", "1:20", "2026-02-13", "2026-02-13T10:25:00Z",
    "3.10", "1e3", "1E3", "1e+3", "-1e-3", "7e3", ".5", "5.", "-0", "-0.0", "0", "00", "+1", "1_000", ".inf", "-.inf",
    ".nan", "~", "null", "Null", "NULL", "true", "True", "false", "9223372036854775807", "9223372036854775808",
    "-9223372036854775808", "-9223372036854775809", "123456789012345678901234567890", "1e400", "1" * 70,
    "0." + "1" * 70, "'it''s'", "'a'", "''", '""', '"a b"', '"\\u0000"', '"\\0"', '"\\x00"', '"\\t\\n\\\\\\"\\/"',
    '"\\x41\\u00e9\\U0001F600"', '"\\ud800"', '"\\q"', '"\\e\\N\\_\\L\\P"', '"tab\there"', "a #comment",
    "a#b", '"#not a comment" # a comment', "'# also not' #c", "a: b", "a:b", "a :b", "key:value", "- a", "-a", "--a",
    "---", "...", "[a, b]", "[a,b]", "[ a , b ]", "[]", "[ ]", "{}", "{a: 1}", "{a:1}", "{a: 1, b: [2, 3]}",
    '{"a": 1}', '{"a":1}', '["x", "y"]', "[a, , b]", "[a,]", "[a: 1]", "[-1, -x]", "[a b, c]", "[it's]", "{a}",
    "{a: }", "{<<: x}", "[[[]]]", "[1, [2, [3, [4]]]]", "&a x", "*a", "!!str 1", "!tag x", "? x", "|", "|\n  text",
    ">-\n  folded", "%x", "@x", "`x`", "a\tb", "a  ", "  a", "é ü 日本", "😀", "\u00a0nbsp", "x\u00a0", "\ufeffbom",
    "<<", "a, b", "a]", "{a", "[a", "'open", '"open', "value with ' quote", 'value with " quote', "50%", "a/b/c",
]
EDGE_KEYS = ["a", "key", "x-ext", "a.b", "a/b", "1", "true", "null", "no", "<<", '"q"', "'q'", '"a b"', '"<<"',
             '"\\u0000"', '"k:v"', "a b", "-a", "_x", "k" * 130, "é", "? c", "[a]", "{a: 1}", "&x k", "!t k", ""]


@pytest.mark.parametrize("value", EDGE_VALUES)
def test_edge_values_read_the_same(value: str) -> None:
    for front in (f"a: {value}\n", f"spec: observation/v1\nlist:\n  - {value}\n  - x\nend: 1\n",
                  f"m:\n  k: {value}\n", f"flow: [{value}]\n", f"flow: {{k: {value}}}\n", f"a: {value}\nb: 1\n",
                  f"- {value}\n", f"a:\n- {value}\nb: 2\n", f"a: {value} # c\n", f"a:\n  {value}\n"):
        assert_same(document(front), with_analysis=True)


@pytest.mark.parametrize("key", EDGE_KEYS)
def test_edge_keys_read_the_same(key: str) -> None:
    for front in (f"{key}: 1\n", f"a: 1\n{key}: 2\n", f"m:\n  {key}: x\n", f"m: {{{key}: x}}\n",
                  f"l:\n  - {key}: x\n    y: 2\n", f"{key}: 1\n{key}: 2\n", f"{key}:\n  - 1\n"):
        assert_same(document(front), with_analysis=True)


STRUCTURES = [
    "a: 1\na: 2\n", "a:\n  b: 1\n  b: 2\n", "a: [1]\nb:\n- x\n- y: 1\n  z: 2\n- [p, q]\nc: 3\n",
    "a:\n  - b: 1\n    c:\n      - d\n      - e: f\n", "a:\n    b: 1\n  c: 2\n", "a:\n  b: 1\n c: 2\n", "a:\n  - x\n  b: 1\n",
    "a:\n- x\n  - y\n", "a: b\n  c\n", "a: 'x'\n  # c\n", "a:\n  b: 1\n # c\n  c: 2\n", "a: b\n# c\n\n\nd: e\n",
    "  a: 1\n  b: 2\n", "a: 1\n  # indented comment\nb: 2\n", "a:\n\n  b: 1\n", "a: x\n---\nb: y\n", "a: x\n...\n",
    "a: [x,\n  y]\n", "a: {k: v,\n  j: w}\n", "a: \"multi\n  line\"\n", "a: 'multi\n  line'\n", "a: plain\n  continued\n",
    "? complex\n: value\n", "a: &anchor 1\nb: *anchor\n", "a: !!int 1\n", "%YAML 1.1\n", "<<: {a: 1}\n", "a:\n  -\n  - x\n",
    "a:\n  - - x\n", "a: -\n", "- a\n- b\n", "just a scalar\n", "\n", "# only a comment\n", "a: 1 # c\nb: [1, 2] # c\n",
    "a: " + "[" * 40 + "]" * 40 + "\n", "a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 40)) + "  " * 40 + "v: 1\n",
    "a: 1\r\nb: 2\r\n", "a:   spaced   \nb:    \"q\"   \n", "a: x\u2028y\n", "a: x\x85y\n", "a: \x7f\n", "a: \x01\n",
    "a: [\"x, y\", 'p, q']\n", "a: {\"k\": \"v, w\"}\n", "a: [a, b] trailing\n", "a: \"x\" trailing\n", "a: \"x\"#c\n",
    "a: [a, b]#c\n", "a:\n  - x # c\n  - 'y' # c\n", "a: [\"\\u0041\"]\n", "é: ü\nb: [é, 'ü']\n", "😀: 1\nb: [😀, x]\n",
]


@pytest.mark.parametrize("front", STRUCTURES)
def test_structures_read_the_same(front: str) -> None:
    assert_same(document(front), with_analysis=True)
    assert_same(document(front, "---\n---\nspec: x\n---\n"))  # `---` inside the body
    assert_same(document(front).replace(b"\n", b"\r\n"))


def test_a_fault_of_the_subset_reader_leaves_the_strict_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    from obsrepo.format import document as reader

    def fault(text: str) -> None:
        raise IndexError("a bug in the subset reader")

    strict = [fields(read_document(path, data, strict_only=True)) for path, data in CORPUS[:40]]
    monkeypatch.setattr(reader, "read_subset", fault)
    assert [fields(read_document(path, data)) for path, data in CORPUS[:40]] == strict


def test_bytes_the_fence_logic_sees_read_the_same() -> None:
    for data in (b"\xef\xbb\xbf---\na: 1\n---\n", b"---\na: \xff\n---\n", b"---\na: 1\x00\n---\n", b"---\r\na: 1\r\n---\r\n",
                 b"---\na: 1\n---", b"---\na: 1\n--- \n", b"---\n---\n", b"---\n\n---\n", b"--- \na: 1\n---\n"):
        assert_same(data, with_analysis=True)


# -- generated and mutated inputs -------------------------------------------------------------

SCALARS = (st.sampled_from(EDGE_VALUES) | st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
           | st.from_regex(r"[a-z0-9][a-z0-9 ./:_-]{0,15}", fullmatch=True) | st.integers().map(str)
           | st.floats(allow_nan=False).map(repr) | st.from_regex(r'"[a-z #:,]{0,8}"', fullmatch=True))
KEYS = st.sampled_from(EDGE_KEYS[:-3]) | st.from_regex(r"[a-z_][a-z0-9_.-]{0,8}", fullmatch=True)


@st.composite
def yaml_texts(draw: st.DrawFn, depth: int = 0, indent: int = 0) -> str:
    """Block mappings and sequences of edge scalars and flow collections, with odd indents,
    comments and blank lines now and then."""
    pad = " " * indent
    out = []
    sequence = depth > 0 and draw(st.booleans())
    for _ in range(draw(st.integers(1, 4))):
        head = f"{pad}- " if sequence else f"{pad}{draw(KEYS)}:"
        kind = draw(st.integers(0, 9))
        if kind <= 4:
            out.append(f"{head}{'' if sequence else ' '}{draw(SCALARS)}\n")
        elif kind <= 6 and depth < 3:
            inner = draw(yaml_texts(depth + 1, indent + draw(st.sampled_from([0, 1, 2, 2, 4]))))  # type: ignore[call-arg]
            out.append(f"{head.rstrip()}\n{inner}")
        elif kind == 7:
            items = draw(st.lists(SCALARS, max_size=3))
            out.append(f"{head}{'' if sequence else ' '}[{', '.join(items)}]\n")
        elif kind == 8:
            items = draw(st.lists(st.tuples(KEYS, SCALARS), max_size=3))
            out.append(f"{head}{'' if sequence else ' '}{{{', '.join(f'{k}: {v}' for k, v in items)}}}\n")
        else:
            out.append(draw(st.sampled_from(["\n", f"{pad}# comment\n", "  \n", "#\n"])))
    return "".join(out)


@settings(max_examples=800, **FUZZ)
@given(yaml_texts())
def test_generated_yaml_reads_the_same(front: str) -> None:
    assert_same(document(front))


MUTATIONS = ["", " ", "  ", "\n", ":", ": ", "-", "- ", "#", " #", "'", '"', "\\", "[", "]", "{", "}", ",", "&a ", "*a",
             "!", "?", "|", ">", "%", "@", "\t", "\r", "\x00", "\x85", "\ufeff", "é", "\u00a0", "---\n", "...", "~", "0",
             "1e3", "<<: ", "\n  ", "\n- ", "x: y\n", '"\\u0000"', "'it''s'"]


@settings(max_examples=1200, **FUZZ)
@given(st.sampled_from(CORPUS), st.lists(st.tuples(st.floats(0, 1), st.integers(0, 8), st.sampled_from(MUTATIONS)),
                                         min_size=1, max_size=4))
def test_mutated_documents_read_the_same(case: tuple[str, bytes], edits: list[tuple[float, int, str]]) -> None:
    """A case or demo document with a few characters deleted or replaced inside its front matter."""
    path, data = case
    parts = split(data)
    if parts is None:
        assert_same(data, path)
        return
    front, rest = parts
    for where, cut, insert in edits:
        at = int(where * len(front))
        front = front[:at] + insert + front[at + cut:]
    assert_same(document(front, rest), path)


def test_random_character_edits_read_the_same() -> None:
    """Many more edits of the same kind, seeded (the same inputs every run), without hypothesis's
    bookkeeping: each input costs two reads."""
    for edited in edits(random.Random(7), 12000):
        assert_same(edited)


def edits(rng: random.Random, count: int) -> Iterator[bytes]:
    """`count` documents of the corpus, each with one to three seeded edits in its front matter."""
    fronts = [parts for _, data in CORPUS if (parts := split(data)) is not None]
    for _ in range(count):
        front, rest = rng.choice(fronts)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(front) + 1)
            front = front[:at] + rng.choice(MUTATIONS) + front[at + rng.choice([0, 0, 1, 2, 5]):]
        yield document(front, rest)


def test_random_line_shuffles_and_reindents_read_the_same() -> None:
    """Whole lines moved, repeated, dropped or re-indented (seeded: the same inputs every run)."""
    rng = random.Random(11)
    fronts = [parts[0] for _, data in CORPUS if (parts := split(data)) is not None]
    for _ in range(3000):
        lines = rng.choice(fronts).split("\n")
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(lines))
            choice = rng.randrange(4)
            if choice == 0:
                lines.insert(rng.randrange(len(lines) + 1), lines[i])
            elif choice == 1:
                del lines[i]
            elif choice == 2:
                lines[i] = " " * rng.choice([1, 2, 3, 4]) + lines[i]
            else:
                lines[i] = lines[i].lstrip(" ")
            if not lines:
                lines = [""]
        assert_same(document("\n".join(lines) + "\n"))
