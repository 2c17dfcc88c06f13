"""The strict composer over libyaml's events (the reader of record) and over PyYAML's pure-Python
parser (the fallback when PyYAML was built without libyaml) (format/events.py).

Byte for byte the same `Document` wherever libyaml reads the front matter without a syntax
problem and it holds none of the few characters the two parsers read differently: a tab (libyaml
allows it inside a plain scalar, the pure parser refuses it), U+FEFF (the pure parser does not
count it in columns), `?` (the pure parser ends a flow scalar there) and `!` (an empty tag is
null to one and "" to the other). Over the test cases, the demo documents, every seventh
truncation of their front matter, seeded character edits and generated YAML. Where libyaml
refuses the front matter the two differ: the pure parser words every message differently,
and accepts some of what libyaml refuses (`[0:]`, U+FEFF at a line's start); the fallback is
then only held to answer without raising.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from obsrepo.format import document as reader
from obsrepo.format.document import read_document
from obsrepo.format.events import CParser
from test_subset import CORPUS, PATH, document, edits, fields, split, yaml_texts

pytestmark = pytest.mark.skipif(CParser is None, reason="PyYAML built without libyaml")
READ_APART = ("\t", "\ufeff", "?", "!")


def both(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple:
    with_c = read_document(PATH, data, strict_only=True)
    with monkeypatch.context() as patch:
        patch.setattr(reader, "CParser", None)  # what a PyYAML without libyaml gives
        pure = read_document(PATH, data, strict_only=True)
    return with_c, pure


def compared(data: bytes, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Assert the two agree where they must; True when the input was one of those."""
    with_c, pure = both(data, monkeypatch)
    if any(c in data.decode("utf-8", "replace") for c in READ_APART):
        return False
    if any(issue.rule == "yaml-syntax" for issue in with_c.issues):
        return False
    assert repr(fields(with_c)) == repr(fields(pure)), data
    return True


def inputs() -> list[bytes]:
    """The corpus, every seventh truncation of each front matter, and 3,000 seeded edits."""
    out = [data for _, data in CORPUS]
    for _, data in CORPUS:
        if (parts := split(data)) is not None:
            front, rest = parts
            out.extend(document(front[:end] + "\n", rest) for end in range(0, len(front) + 1, 7))
    out.extend(edits(random.Random(5), 3000))
    return out


@pytest.mark.parametrize("part", range(3))
def test_libyaml_and_the_pure_parser_give_the_same_documents(part: int, monkeypatch: pytest.MonkeyPatch) -> None:
    every = inputs()
    held = sum(compared(data, monkeypatch) for data in every[part::3])
    assert held >= len(every[part::3]) // 4, (held, len(every))  # the comparison is not vacuous


@settings(max_examples=300, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(yaml_texts())
def test_generated_yaml_reads_the_same_with_either_parser(front: str) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        compared(document(front), monkeypatch)


@pytest.mark.parametrize("front", ["x-note: bell\x07here\n", "a: \x01\n", "a: x\x7fy\n", "a: \ud7ff\x08\n"])
def test_the_pure_parser_reports_a_control_character_instead_of_raising(front: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "CParser", None)
    doc = read_document(PATH, document("spec: observation/v1\n" + front))
    [issue] = doc.issues
    assert (issue.line, issue.rule) == (3, "yaml-syntax") and "is not allowed in YAML text" in issue.message, issue
