"""Every rule `check` applies, and the one the write path adds (`type-change`), by name, with
the code its problems carry: the one list the rule tables of docs/guide/errors.md, the generated
docs/reference/errors.md, the test corpus and the JSON Schema coverage are held to (tests)."""

from __future__ import annotations

from .. import errors

V = errors.VALIDATION_ERROR

# rule → (code, family)
RULES: dict[str, tuple[str, str]] = {
    **{rule: (V, "bytes") for rule in (
        "encoding-bom", "encoding-utf8", "encoding-nul", "line-ending", "yaml-line-break",
        "document-too-large", "front-matter-too-large", "front-matter-missing", "front-matter-fence",
        "front-matter-unclosed", "front-matter-extra", "front-matter-not-mapping")},
    **{rule: (V, "yaml") for rule in (
        "yaml-syntax", "yaml-duplicate-key", "yaml-anchor", "yaml-alias", "yaml-merge-key", "yaml-tag",
        "yaml-complex-key", "yaml-directive", "yaml-multiple-documents", "yaml-too-deep", "yaml-number-range",
        "value-nul")},
    **{rule: (V, "schema") for rule in (
        "missing-key", "unknown-key", "wrong-type", "invalid-value", "invalid-format", "empty-value", "too-long",
        "out-of-range", "duplicate-value", "timestamp-format", "timestamp-timezone", "timestamp-range",
        "event-one-line", "fields-need-entity", "relations-need-entity", "reserved-field", "deleted-flag",
        "correction-priority", "comprehension-dates", "observations-used-subset", "valid-range", "valid-on-merge")},
    "relation-type": (errors.INVALID_RELATIONSHIP_TYPE, "schema"),
    **{rule: (V, "placement") for rule in (
        "id-filename-mismatch", "file-extension", "wrong-folder", "layout", "file-missing", "self-reference")},
    "entity-schema": (V, "entity-schema"),
    "duplicate-id": (errors.DUPLICATE_ID, "repository"),
    "duplicate-content": (errors.DUPLICATE_CONTENT, "repository"),
    "corrects-target": (errors.REF_NOT_FOUND, "repository"),
    "retracts-target": (errors.REF_NOT_FOUND, "repository"),
    "citation": (errors.REF_NOT_FOUND, "repository"),
    "feedback-target": (errors.REF_NOT_FOUND, "repository"),
    "reclassify-target": (errors.REF_NOT_FOUND, "repository"),
    # a warning, never a failure: the index applies the higher level anyway
    "classification-below-content": (V, "classification"),
    "retention-policy": (V, "retention"),
    "relation-target": (errors.ENTITY_NOT_FOUND, "repository"),
    "relation-cycle": (errors.CYCLE_DETECTED, "repository"),
    "merged-twice": (errors.ENTITY_ALREADY_MERGED, "repository"),
    "identity-conflict": (errors.IDENTITY_CONFLICT, "repository"),
    **{rule: (errors.IMMUTABLE_VIOLATION, "immutability") for rule in (
        "modified", "deleted", "mode-changed", "type-changed", "symlink", "submodule")},
    "comprehension-edit": (V, "immutability"),
    "git-attributes": (V, "immutability"),
    # the write path's own: a correction keeps the field's JSON type unless its caller allows the change
    "type-change": (V, "write"),
}
