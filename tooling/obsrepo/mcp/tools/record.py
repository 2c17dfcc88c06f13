"""record_observation: one new observation, proposed as one commit on the server's proposal branch."""

from __future__ import annotations

from typing import Any

from ...errors import UsageError
from ..registry import bounded_json, write_tool

MAX_OBSERVATION = 256 * 1024  # characters of the observation as JSON (the front matter's own bound is 256 KiB)
MAX_BODY = 1024 * 1024  # characters (a document's own bound is 1 MiB)
GENERATED = {"spec": "the write path writes spec: observation/v1 itself",
             "id": "the write path makes the id from the UTC timestamp and the content hash"}


@write_tool("Record an observation", {
    "observation": {
        "type": "object", "minProperties": 1, "maxProperties": 64,
        "description": "The front matter of an observation/v1 document as a JSON object, without `spec` and `id`: "
                       "`source` (who observed: agent/x, human/alice …) and `event` (one line) are required; "
                       "`timestamp` (ISO 8601 with a timezone) defaults to now; also `type`, `scope`, `entity`, "
                       "`fields`, `priority`, `specificity`, `corrects`, `retracts`, `relations`, `tenant`, "
                       "`classification`, `source_ref`, `interpretation`, `trace_ref`, `data`, `x-…` extensions.",
    },
    "body": {"type": "string", "maxLength": MAX_BODY, "default": "", "description": "The Markdown body (may be empty)."},
}, required=("observation",))
def record_observation(repo: Any, observation: dict[str, Any], body: str = "") -> Any:
    """Record one new observation, as a proposal: one new file in one new commit on the
    server's proposal branch (`obsrepo mcp --branch`, default obsrepo/proposals, made from the
    served tip when missing), exactly what `obsrepo new --commit` writes. The id and the path
    come from the UTC timestamp and the content hash. The document is checked first as `obsrepo
    check --base` would check the branch (schema, duplicates, references, relation targets,
    cycles, merges, with earlier proposals counted); a refused write changes nothing. A
    tenant-bound server writes its tenant into the observation. The served branch and the work
    tree are never touched: reads answer from the served tip until the proposal is merged (a
    pull request). Answers with {id, path, content_hash, commit, branch}."""
    for key, why in GENERATED.items():
        if key in observation:
            raise UsageError(f"argument 'observation.{key}': leave it out; {why}", parameter=f"observation.{key}")
    bounded_json(observation, "observation", MAX_OBSERVATION)
    return repo.propose(observation, body, tool="record_observation")
