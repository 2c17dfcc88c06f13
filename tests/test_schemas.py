"""The committed JSON Schemas are exactly what the models generate, and they agree with them."""

import json
from pathlib import Path

import jsonschema
import pytest
import regress  # ECMA 262 regular expressions (check-jsonschema's, in the test extra)
from obsrepo.format import schemas
from obsrepo.format.document import read_document
from obsrepo.format.model import Observation, split_extensions
from pydantic import ValidationError as ModelError

ROOT = Path(__file__).resolve().parent.parent


def test_committed_schemas_match_the_models():
    for name, text in schemas.render().items():
        committed = (ROOT / "schemas" / name).read_text(encoding="utf-8")
        assert committed == text, f"schemas/{name} is stale: run `python -m obsrepo.format.schemas schemas`"


def test_schema_allows_extensions_and_refuses_unknown_keys():
    schema = json.loads((ROOT / "schemas" / "observation.v1.schema.json").read_text())
    assert schema["additionalProperties"] is False
    assert "^x-" in schema["patternProperties"]
    assert set(schema["required"]) == {"spec", "id", "timestamp", "source", "event"}


def test_schema_validates_like_the_model():
    schema = json.loads((ROOT / "schemas" / "observation.v1.schema.json").read_text())
    good = {"spec": "observation/v1", "id": "obs-1", "timestamp": "2026-02-13T10:25:00Z",
            "source": "agent/x", "event": "seen", "x-note": 1}
    jsonschema.validate(good, schema)
    bad = dict(good, colour="red")
    try:
        jsonschema.validate(bad, schema)
    except jsonschema.ValidationError:
        pass
    else:
        raise AssertionError("an unknown key passed the JSON Schema")


# --- what the JSON Schemas can say, and what only `check` enforces ---------------------------

CASES = ROOT / "tests" / "cases"
SCHEMAS = {kind: json.loads((ROOT / "schemas" / f"{kind}.v1.schema.json").read_text(encoding="utf-8"))
           for kind in ("observation", "comprehension")}


def _ecma_pattern(validator, pattern, instance, schema):
    """`pattern` as JSON Schema defines it (ECMA 262), as editors and check-jsonschema apply it."""
    if validator.is_type(instance, "string") and not regress.Regex(pattern, flags="u").find(instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


VALIDATORS = {
    "ecma": jsonschema.validators.extend(jsonschema.Draft202012Validator, {"pattern": _ecma_pattern}),
    "python": jsonschema.Draft202012Validator,  # Python's `re`, as jsonschema applies it
}


def _errors(front, path: str) -> dict[str, list[str]]:
    schema = SCHEMAS["comprehension" if path.startswith("comprehension/") else "observation"]
    return {name: [e.message for e in cls(schema).iter_errors(front)] for name, cls in VALIDATORS.items()}


def _cases(kind: str):
    for md in sorted((CASES / kind).glob("*.md")):
        expect = json.loads(md.with_suffix(".expect.json").read_text(encoding="utf-8"))
        yield md.stem, expect, read_document(expect["path"], md.read_bytes())


# The invalid cases the JSON Schema lets through, by rule: what only `check` enforces.
# (A case whose front matter the strict reader cannot turn into a value never reaches a schema.)
ONLY_CHECK = {
    # the bytes and the YAML text, before there is a value: encodings, fences, YAML policy
    "encoding-bom": {"encoding-bom"},
    "encoding-nul": {"encoding-nul"},
    "encoding-utf8": {"encoding-utf8", "encoding-utf8-body"},
    "line-ending": {"line-ending-lone-cr", "line-ending-lone-cr-in-crlf"},
    "front-matter-missing": {"front-matter-missing", "front-matter-missing-leading-blank-line"},
    "front-matter-fence": {"front-matter-fence-trailing-comment", "front-matter-fence-trailing-space"},
    "front-matter-unclosed": {"front-matter-unclosed"},
    "front-matter-not-mapping": {"front-matter-empty", "front-matter-list", "front-matter-scalar"},
    "front-matter-extra": {"front-matter-extra"},
    "yaml-syntax": {"yaml-control-character", "yaml-syntax", "yaml-syntax-tab-after-spaces", "yaml-syntax-tab-indent",
                    "yaml-syntax-unclosed-brace", "yaml-syntax-unclosed-bracket", "yaml-syntax-unclosed-single-quote",
                    "yaml-syntax-unterminated-quote"},
    "yaml-directive": {"yaml-directive", "yaml-directive-explicit-start"},
    "yaml-line-break": {"yaml-line-separator-keeps-lines", "yaml-next-line-in-comment-keeps-lines"},
    "yaml-too-deep": {"yaml-too-deep"},
    "yaml-anchor": {"yaml-alias", "yaml-alias-bomb", "yaml-anchor", "yaml-merge-key-alias"},
    "yaml-alias": {"yaml-alias", "yaml-alias-bomb", "yaml-alias-undefined", "yaml-merge-key-alias"},
    "yaml-merge-key": {"yaml-merge-key", "yaml-merge-key-alias"},
    "yaml-complex-key": {"yaml-complex-key"},
    "yaml-duplicate-key": {"yaml-duplicate-key", "yaml-duplicate-key-flow", "yaml-duplicate-key-nested",
                           "yaml-duplicate-key-quoted"},
    "yaml-multiple-documents": {"yaml-multiple-documents"},
    "yaml-number-range": {"yaml-number-range-1e400", "yaml-number-range-int64", "yaml-number-range-negative-int64"},
    "yaml-tag": {"yaml-tag-binary", "yaml-tag-custom", "yaml-tag-nonspecific", "yaml-tag-python", "yaml-tag-str"},
    # the file's path, not its content
    "id-filename-mismatch": {"id-filename-mismatch"},
    "file-extension": {"file-extension"},
    "layout": {"comprehension-layout"},
    # comparisons between values
    "comprehension-dates": {"comprehension-dates"},
    "observations-used-subset": {"comprehension-observations-used"},
    "valid-range": {"valid-range"},
    # a real calendar date (2026-02-30): `format: date-time` is only an annotation to most validators
    "timestamp-format": {"timestamp-not-a-date"},
    # years 0001..9999 after conversion to UTC: arithmetic on the offset, beyond a pattern
    "timestamp-range": {"comprehension-date-range", "timestamp-range-early", "timestamp-range-late",
                        "timestamp-range-year-zero", "valid-year-zero"},
}


def test_the_json_schema_catches_every_invalid_case_except_what_only_check_enforces():
    missed: dict[str, set[str]] = {}
    for name, expect, doc in _cases("invalid"):
        errors = _errors(doc.front, expect["path"]) if doc.front is not None else {"ecma": [], "python": []}
        assert bool(errors["ecma"]) == bool(errors["python"]), (name, errors)  # the same in both dialects
        if not errors["ecma"]:
            for issue in expect["issues"]:
                missed.setdefault(issue["rule"], set()).add(name)
    assert missed == ONLY_CHECK


def test_every_valid_case_satisfies_the_json_schema():
    for name, expect, doc in _cases("valid"):
        assert doc.front is not None, name
        assert _errors(doc.front, expect["path"]) == {"ecma": [], "python": []}, name


GOOD = {"spec": "observation/v1", "id": "obs-1", "timestamp": "2026-02-13T10:25:00Z", "source": "agent/x", "event": "seen"}
CORRECTS = {"corrects": "obs-0"}


@pytest.mark.parametrize("extra", [
    {}, {"x-note": "a\nb"}, {"fields": {"name": "Acme"}}, {"entity": "company/acme", "fields": {"name": "Acme"}},
    {"fields": None}, {"relations": []}, {"entity": None, "fields": {}},
    {"entity": "task/1", "relations": [{"type": "PART_OF", "target": "project/p"}]},
    {"relations": [{"type": "PART_OF", "target": "project/p"}]},
    {"entity": "company/acme", "fields": {"_deleted": True}}, {"entity": "company/acme", "fields": {"_deleted": "yes"}},
    {"entity": "company/acme", "fields": {"_name": 1}}, {"entity": "company/acme", "fields": {"9name": 1}},
    CORRECTS, dict(CORRECTS, priority=1000), dict(CORRECTS, priority=999), dict(CORRECTS, priority=None),
    {"corrects": None, "priority": 5}, {"priority": 5},
    {"scope": ["a", "b"]}, {"scope": ["a", "a"]}, {"scope": [" a"]}, {"scope": ["a "]}, {"scope": ["a\tb"]}, {"scope": [""]},
    {"source_ref": "a\n"}, {"event": "x\n"}, {"event": "x\r"}, {"event": "  "}, {"event": "a b"},
    {"timestamp": "2026-02-13T10:25:00Z\n"}, {"timestamp": "x2026-02-13T10:25:00Z"}, {"timestamp": "2026-02-13T10:25:00"},
], ids=repr)
def test_the_json_schema_agrees_with_the_model(extra):
    front = dict(GOOD, **extra)
    try:
        Observation.model_validate(split_extensions(front)[0])
        model_ok = True
    except ModelError:
        model_ok = False
    assert _errors(front, "observations/x.md") == {"ecma": [], "python": []} if model_ok else \
        all(_errors(front, "observations/x.md").values()), (model_ok, _errors(front, "observations/x.md"))


@pytest.mark.parametrize("event", ["a\u0085b", "a\u2028b", "a\u2029b", "a\vb", "a\fb", "a\nb", "a\r\nb"], ids=repr)
def test_the_json_schema_refuses_an_event_with_any_line_break(event):
    assert all(_errors(dict(GOOD, event=event), "observations/x.md").values())


@pytest.mark.parametrize("extra", [{"event": "a\0b"}, {"data": {"deep": [1, {"k": "v\0"}]}}, {"x-note": "\0"},
                                   {"entity": "company/a", "fields": {"name": "\0"}}], ids=repr)
def test_the_json_schema_refuses_nul_in_any_value(extra):
    assert all(_errors(dict(GOOD, **extra), "observations/x.md").values())
    assert _errors(dict(GOOD, data={"deep": [1, {"k": "v"}]}), "observations/x.md") == {"ecma": [], "python": []}


def test_the_schema_writer_takes_a_folder_and_never_an_option(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert schemas.main(["--help"]) == 0 and "usage" in capsys.readouterr().err
    assert schemas.main(["-x"]) == 2 and schemas.main(["a", "b"]) == 2
    assert list(tmp_path.iterdir()) == []
    assert schemas.main(["out"]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(schemas.FILES)
