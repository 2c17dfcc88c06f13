"""The product's fixed words and numbers, each defined once (docs/design.md §2, §4, §6)."""

from __future__ import annotations

from typing import Final

# where documents live
OBSERVATIONS_DIR = "observations/"
COMPREHENSION_DIR = "comprehension/"
DOCUMENT_ROOTS = ("observations", "comprehension")
ENTITY_SCHEMAS_DIR = "schemas/entities/"


def is_document_name(path: str) -> bool:
    """A draft candidate: `*.md`, not hidden (editors' swap and backup files are not drafts)."""
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".md") and not name.startswith(".")


def entity_schema_path(entity_type: str) -> str:
    return f"{ENTITY_SCHEMAS_DIR}{entity_type}.yaml"


# priorities: a correction (`corrects`) outranks every non-correction under every policy
AI_EXTRACTION_PRIORITY = 0
DEFAULT_PRIORITY = 100
CORRECTION_PRIORITY = 1000

# per-field reducer policies of entity-schema/v1; the first is the default
POLICIES = ("highest_priority", "last_write", "most_specific", "merge_array")

# the classification ladder, least restrictive first; an observation without one is `internal`
CLASSIFICATIONS = ("public", "internal", "confidential", "restricted")
CLASSIFICATION_RANK = {name: rank for rank, name in enumerate(CLASSIFICATIONS)}
DEFAULT_CLASSIFICATION: Final = "internal"

# how `query` prints observations
QUERY_MODES = ("short", "full", "json", "jsonl")

# relation types that stay acyclic, each within its own type
ACYCLIC_RELATIONS = ("PART_OF", "DEPENDS_ON")

# feedback on an observation (docs/design.md §14): `accepted` is the one success
FEEDBACK_OUTCOMES = ("accepted", "rejected", "rework", "misleading")

# a comprehension's id, and what one more observation does to its belief (docs/design.md §14)
COMPREHENSION_ID = r"^comp-[a-z0-9]+(-[a-z0-9]+)*$"
COMPREHENSION_EFFECTS = ("confirm", "contradict", "neutral")

# a comprehension's confidence, least first
CONFIDENCES = ("unknown", "low", "medium", "high")

# the retention file (docs/design.md §14)
RETENTION_PATH = "schemas/retention.yaml"
