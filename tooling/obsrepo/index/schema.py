"""The index's tables. Physical `*_versions` tables hold every version of every document on
the first-parent chain of the indexed commit, each visible at commit sequence numbers
`added_seq <= s < removed_seq`; the public views show the indexed commit.
"""

from ..format.vocabulary import CLASSIFICATION_RANK  # noqa: F401 - re-exported
from .columns import COMP_VERSIONS, OBS_KEYS, OBS_VERSIONS, OBSERVATION, RECORD_COLUMNS, column_list, ddl

FORMAT_VERSION = "13"  # bump on any change to TABLES or VIEWS: an index of another format is rebuilt
NOW = 2147483647  # removed_seq of what is present at the indexed commit

# what the reference page of the tables says of a table beyond its columns (tools/docs_reference.py)
DESCRIPTIONS = {
    "field_intervals": "valid-time intervals (docs/design.md §19) at the indexed commit over every tenant's "
                       "observations, for each entity that a period touches (one of its candidates, or of an entity "
                       "merged into it, wrote `valid`): a row per interval, exactly what `obsrepo intervals` prints "
                       "(`valid_until` NULL: open; `observation_id`: the winner, a merged array's first contributor). "
                       "An entity without any period has no rows: its values change only at its observations' "
                       "timestamps (`history`, `snapshot --as-of`)",
}

TABLES = f"""
CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL);
CREATE TABLE commits (
    seq INTEGER NOT NULL, sha VARCHAR NOT NULL, committed_at TIMESTAMP NOT NULL,
    author VARCHAR NOT NULL, author_email VARCHAR NOT NULL
);
{ddl("obs_versions", OBS_VERSIONS)}
-- what a query prints, in row-id order (the order documents were added, close to chronological):
-- obs_versions is stored by entity for snapshots, and a page of recent matches would otherwise
-- touch as many storage blocks as it has rows
CREATE TABLE obs_records AS SELECT row_id, {RECORD_COLUMNS} FROM obs_versions LIMIT 0;
-- a version's scopes and type as keys, stored by key: the rows a scoped query reads (see keyed)
{ddl("obs_keys", OBS_KEYS)}
CREATE TABLE obs_terms (row_id BIGINT NOT NULL, term VARCHAR NOT NULL, tf INTEGER NOT NULL);
CREATE TABLE obs_doclen (row_id BIGINT NOT NULL, doc_len INTEGER NOT NULL);
-- recall (docs/design.md §15): each row's text key (the first 128 bits of the SHA-256 of what
-- is embedded); the segments of the repository's vector cache under meta's
-- `semantic_fingerprint` this index has read, and where each key's vector is in them
CREATE TABLE obs_texts (row_id BIGINT NOT NULL, text_key UHUGEINT NOT NULL);
CREATE TABLE vector_segments (segment INTEGER NOT NULL, name VARCHAR NOT NULL, size BIGINT NOT NULL);
CREATE TABLE embedded_texts (text_key UHUGEINT NOT NULL, segment INTEGER NOT NULL, slot INTEGER NOT NULL);
-- each row's vector as embedded_texts places its text (kept with it): what a query reads, ints only
CREATE TABLE obs_vectors (row_id BIGINT NOT NULL, segment INTEGER NOT NULL, slot INTEGER NOT NULL);
{ddl("comp_versions", COMP_VERSIONS)}
CREATE TABLE entity_snapshots (  -- at the indexed commit, over every tenant (see entity_table)
    entity_id VARCHAR NOT NULL, entity_type VARCHAR NOT NULL, snapshot JSON NOT NULL, provenance JSON NOT NULL,
    observation_count INTEGER NOT NULL, last_observation_at TIMESTAMP, deleted BOOLEAN NOT NULL
);
-- contested values (docs/design.md §19) at the indexed commit, over every tenant, window 1d: one row
-- per challenger, in the reducer's order (see entity_table)
CREATE TABLE contested_fields (
    entity_id VARCHAR NOT NULL, field VARCHAR NOT NULL, winner_observation_id VARCHAR NOT NULL,
    challenger_observation_id VARCHAR NOT NULL
);
-- valid-time intervals (docs/design.md §19) at the indexed commit, over every tenant, of the entities
-- a period touches: what `obsrepo intervals` prints, a row per interval; valid_until NULL is open
-- (see interval_table)
CREATE TABLE field_intervals (
    entity_id VARCHAR NOT NULL, field VARCHAR NOT NULL, valid_from TIMESTAMP NOT NULL, valid_until TIMESTAMP,
    value_json JSON NOT NULL, observation_id VARCHAR NOT NULL
);
-- feedback folded at the indexed commit, over every tenant (see weights)
CREATE TABLE observation_weights (observation_id VARCHAR NOT NULL, weight DOUBLE NOT NULL, feedback_count INTEGER NOT NULL);
CREATE TABLE observation_weight_history (
    observation_id VARCHAR NOT NULL, feedback_id VARCHAR NOT NULL, session VARCHAR, outcome VARCHAR NOT NULL,
    previous_weight DOUBLE NOT NULL, new_weight DOUBLE NOT NULL, alpha DOUBLE NOT NULL, "commit" VARCHAR NOT NULL
);
CREATE TABLE problems (
    added_seq INTEGER NOT NULL, removed_seq INTEGER NOT NULL, path VARCHAR NOT NULL, blob VARCHAR NOT NULL,
    line INTEGER NOT NULL, col INTEGER NOT NULL, code VARCHAR NOT NULL, rule VARCHAR NOT NULL,
    message VARCHAR NOT NULL
);
"""

# a page's records by key (read/query.py, fetch_records): a scan decompresses every printed column
# of every row between the page's first and last, and a ranked page's rows are far apart. Made at
# the end of every build, and dropped at the start of an update: DuckDB's checkpoint rewrites an
# index changed in place whole and slowly (~0.6 s at 100k rows), one made again in ~40 ms.
INDEXES = "CREATE INDEX obs_records_row ON obs_records (row_id)"
DROP_INDEXES = "DROP INDEX IF EXISTS obs_records_row"

VIEWS = f"""
CREATE OR REPLACE VIEW observations AS
    SELECT {column_list(OBSERVATION)} FROM obs_versions WHERE removed_seq = {NOW};
CREATE OR REPLACE VIEW observation_scopes AS
    SELECT id AS observation_id, unnest(scope) AS scope_id FROM observations;
CREATE OR REPLACE VIEW observation_fields AS
    SELECT o.id AS observation_id, o.entity, f.key AS field, f.value::JSON AS value
    FROM observations o, json_each(o.fields) f WHERE o.fields IS NOT NULL;
CREATE OR REPLACE VIEW relations AS
    SELECT id AS observation_id, entity AS source_entity, r.type AS type, r.target AS target_entity, path
    FROM (SELECT id, entity, path, unnest(relations) AS r FROM observations);
CREATE OR REPLACE VIEW snapshots AS
    SELECT entity_id, entity_type, snapshot, provenance, observation_count, last_observation_at, deleted
    FROM entity_snapshots;
CREATE OR REPLACE VIEW entities AS
    SELECT entity_id, entity_type, observation_count, last_observation_at, deleted FROM entity_snapshots;
CREATE OR REPLACE VIEW comprehensions AS
    SELECT id, topic, domain, created, updated, version, verified, prior, posterior, body, extensions,
           path, blob, "commit", author, committed_at
    FROM comp_versions WHERE removed_seq = {NOW};
CREATE OR REPLACE VIEW comprehension_observations AS
    SELECT c.id AS comprehension_id, o AS observation_id, list_contains(c.observations_used, o) AS used
    FROM (SELECT id, observations_used, unnest(observations) AS o FROM comp_versions WHERE removed_seq = {NOW}) c;
"""
