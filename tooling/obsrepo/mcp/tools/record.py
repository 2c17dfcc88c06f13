"""record_observation: one new observation, proposed as one commit on the server's proposal branch."""

from __future__ import annotations

from typing import Any

from ...errors import UsageError
from ...ops import New, ProposalBranch, Session, run
from ..registry import bounded_json, write_tool

MAX_OBSERVATION = 256 * 1024  # characters of the observation as JSON (the front matter's own bound is 256 KiB)
GENERATED = {"spec": "the write path writes spec: observation/v1 itself",
             "id": "the write path makes the id from the UTC timestamp and the content hash"}


@write_tool(New, "Record an observation", {"front": "observation", "body": "body", "valid_from": "valid_from",
                                                  "valid_until": "valid_until"},
            fixed={"destination": ProposalBranch(), "tool": "record_observation"})
def record_observation(session: Session, request: New) -> Any:
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
        if key in request.front:
            raise UsageError(f"argument 'observation.{key}': leave it out; {why}", parameter=f"observation.{key}")
    bounded_json(request.front, "observation", MAX_OBSERVATION)
    return run(session, request).to_json()
