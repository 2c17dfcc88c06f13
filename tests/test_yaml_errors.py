"""A YAML mistake is reported where it starts, with a hint, and an unknown key names the key
that was meant (docs/design.md §8a).

libyaml gives up at the end of the front matter for an unclosed quote or bracket; the report
points at the opening character instead. The fast subset reader and the strict reader agree on
every case (the subset reader declines bad YAML, so both end in the same report).
"""

from __future__ import annotations

import pytest
from obsrepo.format.document import read_document

PATH = "observations/2026/02/13/obs-20260213-102500-0001.md"
HEAD = "---\nspec: observation/v1\nid: obs-20260213-102500-0001\ntimestamp: 2026-02-13T10:25:00Z\nsource: agent/t\n"
# the mistakes, written on line 6 of the file (the front matter's fifth line) or after it
MISTAKES = [
    ('event: "abc\ntype: task.updated\n', 6, 8, "while scanning a quoted scalar, found unexpected end of stream on line 8; "
                                                "close the quote"),
    ("event: 'abc\n", 6, 8, "close the quote"),
    ('event: "first line\n  second line\n', 6, 8, "close the quote"),
    ("event: x\nscope:\n\t- task/42\n", 8, 1, "; indent with spaces, not tabs"),
    ("event: x\nentity: company/acme\nfields:\n  a: 1\n\tb: 2\n", 10, 1, "; indent with spaces, not tabs"),
    ("event: a: b: c\n", 6, 9, "mapping values are not allowed in this context: a value holds ': '; quote the value"),
    ("event: deploy failed: timeout\n", 6, 21, "; quote the value"),
    ("scope: [a, b\nevent: x\n", 6, 8, "while parsing a flow sequence, did not find expected ',' or ']' on line 7; "
                                       "close the '[' with ']'"),
    ("event: x\ntenant: {org: a\ntype: t\n", 7, 9, "close the '{' with '}'"),
]


@pytest.mark.parametrize(("front", "line", "col", "said"), MISTAKES, ids=[m[0].split("\n")[0] for m in MISTAKES])
def test_a_yaml_mistake_is_reported_where_it_starts_with_a_hint(front, line, col, said):
    data = (HEAD + front + "---\n\nBody.\n").encode()
    fast, strict = read_document(PATH, data), read_document(PATH, data, strict_only=True)
    assert fast.issues == strict.issues
    [issue] = strict.issues
    assert (issue.line, issue.col, issue.rule) == (line, col, "yaml-syntax"), issue
    assert issue.message.startswith("invalid YAML: ") and said in issue.message, issue.message


@pytest.mark.parametrize("front", ["scope: [a, b: c: d]\nevent: x\n", "event: x\nentity: company/a\nfields:\n  a: 1\n b: 2\n"])
def test_a_mistake_that_is_not_a_common_one_gets_no_hint(front):
    [issue] = read_document(PATH, (HEAD + front + "---\n").encode()).issues
    assert issue.rule == "yaml-syntax" and ";" not in issue.message, issue.message


def test_check_points_at_the_unclosed_quote_in_text_and_json(repo):
    repo.write(PATH, HEAD + 'event: "never closed\n---\n\nBody.\n')
    proc = repo.obsrepo("check", PATH)
    assert proc.returncode == 1
    assert proc.stdout == (f"{PATH}:6:8 VALIDATION_ERROR invalid YAML: while scanning a quoted scalar, found unexpected "
                           "end of stream on line 7; close the quote [yaml-syntax]\n"), proc
    [issue] = repo.check(PATH).data["issues"]
    assert (issue["line"], issue["col"], issue["rule"]) == (6, 8, "yaml-syntax")


@pytest.mark.parametrize(("front", "message"), [
    ("evnt: x\n", "unknown key 'evnt'; did you mean 'event'?"),
    ("event: x\nEvent: y\n", "unknown key 'Event'; did you mean 'event'?"),
    ("event: x\nclasification: public\n", "unknown key 'clasification'; did you mean 'classification'?"),
    ("event: x\ntenant: {ogr: a}\n", "unknown key 'tenant.ogr'; did you mean 'org'?"),
    ("event: x\nentity: company/a\nrelations: [{tpye: PART_OF, target: company/b}]\n",
     "unknown key 'relations.0.tpye'; did you mean 'type'?"),
    ("event: x\ncolor: blue\n", "unknown key 'color' (extensions"),  # nothing near: no guess
])
def test_an_unknown_key_names_the_closest_known_key(repo, front, message):
    repo.write(PATH, HEAD + front + "---\n")
    messages = [i["message"] for i in repo.check(PATH).data["issues"] if i["rule"] == "unknown-key"]
    assert any(m.startswith(message) for m in messages), messages


def test_an_unknown_key_of_an_entity_schema_names_the_closest_known_key(repo):
    repo.write("schemas/entities/company.yaml", "spec: entity-schema/v1\ntype: company\nfeilds: {}\n")
    messages = [i["message"] for i in repo.check("schemas/entities/company.yaml").data["issues"]]
    assert "unknown key 'feilds'; did you mean 'fields'?" in messages, messages
