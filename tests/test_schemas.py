"""The committed JSON Schemas are exactly what the models generate, and they agree with them."""

import json
from pathlib import Path

from obsrepo.format import schemas

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
    jsonschema = __import__("pytest").importorskip("jsonschema")
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
