"""Stewardship and belief updates (docs/design.md §14): feedback weights, classification,
retention, export and comprehension updates, on real repositories and real indexes."""

from __future__ import annotations

import csv
import io
import json

import pytest
from helpers import PROPOSALS, check_branch, comprehension, fingerprint, hermetic, observation
from hypothesis import given, settings
from hypothesis import strategies as st
from obsrepo.api import Repository
from obsrepo.errors import UsageError
from obsrepo.format.classify import card_number, content_classification
from obsrepo.index.weights import fold
from obsrepo.ops import Comprehend, Session, WorkTree, run
from obsrepo.read.query import QueryRequest
from obsrepo.write.comprehend import TRANSITIONS, next_confidence

TARGET = "obs-20260201-090000-0001"


def _feedback(n: int, outcome: str, target: str = TARGET, minute: int | None = None, **front) -> observation:
    stamp = f"2026-02-02T10:{minute if minute is not None else n:02d}:00Z"
    return observation(f"obs-20260202-10{minute if minute is not None else n:02d}00-{n:04d}", stamp, type="feedback",
                       feedback={"target": target, "outcome": outcome, "session": f"s-{n}"}, **front)


def _weights(api: Repository) -> dict[str, tuple[float, int]]:
    return {row[0]: (row[1], row[2]) for row in api.sql("SELECT * FROM observation_weights ORDER BY 1")[1]}


# --- feedback weights -------------------------------------------------------------------------

SEQUENCE = ["accepted", "rejected", "misleading", "misleading", "misleading", "accepted", "rework"]
# by hand: w' = w(1-a) + s·a; a = .1 accepted, .15 otherwise, doubled from the third misleading on
BY_HAND = [1.0 * 0.9 + 0.1,            # accepted: 1.0
           1.0 * 0.85,                 # rejected: 0.85
           0.85 * 0.85,                # misleading #1: 0.7225
           0.7225 * 0.85,              # misleading #2: 0.614125
           0.614125 * 0.7,             # misleading #3, doubled: 0.4298875
           0.4298875 * 0.8 + 0.2,      # accepted, doubled: 0.543910
           0.543910 * 0.7]             # rework, doubled: 0.380737
ALPHAS = [0.1, 0.15, 0.15, 0.15, 0.3, 0.2, 0.3]


def test_the_fold_matches_a_hand_computation():
    weights, history = fold((TARGET, f"f{i}", None, outcome, "c") for i, outcome in enumerate(SEQUENCE))
    assert [h[5] for h in history] == pytest.approx(BY_HAND, abs=1e-9)
    assert [h[6] for h in history] == pytest.approx(ALPHAS, abs=1e-12)
    assert weights[TARGET][0] == pytest.approx(0.380737, abs=1e-9) and weights[TARGET][1] == 7


def test_the_index_folds_feedback_commit_by_commit(repo):
    repo.add(observation(TARGET, event="invoice paid late", body="the payment came late"))
    repo.commit("target")
    for n, outcome in enumerate(SEQUENCE, 1):
        repo.add(_feedback(n, outcome))
        repo.commit(f"feedback {n}")
    with hermetic(repo.env):
        api = Repository(str(repo.path))
        api.index()
        assert _weights(api)[TARGET] == (pytest.approx(BY_HAND[-1], abs=1e-9), 7)
        history = api.sql("SELECT alpha, previous_weight, new_weight, outcome, session FROM observation_weight_history")[1]
        assert [h[0] for h in history] == pytest.approx(ALPHAS)
        assert [h[2] for h in history] == pytest.approx(BY_HAND, abs=1e-9)
        page = api.query(QueryRequest(text="payment late"))
        assert page["observations"][0]["weight"] == pytest.approx(BY_HAND[-1], abs=1e-9)
        # an older commit has the weights of that commit
        old = api.query(QueryRequest(text="payment late"), at="HEAD~5")
        assert old["observations"][0]["weight"] == pytest.approx(BY_HAND[1], abs=1e-9)


def test_an_update_without_new_feedback_leaves_the_weight_tables_untouched(repo, tmp_path):
    """An update folds the feedback again but writes the weight tables only when the fold
    changed (their storage blocks stay the same otherwise); after each update they equal a
    full build's."""
    repo.add(observation(TARGET, event="invoice paid late"))
    repo.add(_feedback(1, "accepted"))
    repo.add(_feedback(2, "misleading"))
    repo.commit("target and feedback")

    def blocks(api):
        return api.sql("SELECT column_name, segment_id, block_id, block_offset FROM "
                       "pragma_storage_info('observation_weight_history') ORDER BY ALL")[1]

    def history(api):
        return api.sql("SELECT * FROM observation_weight_history ORDER BY feedback_id")[1]

    with hermetic(repo.env):
        api = Repository(str(repo.path))
        api.index()
        before, weights = blocks(api), _weights(api)
        repo.add(observation("obs-20260301-090000-0009", event="unrelated"))
        repo.commit("no feedback")
        api.index()
        assert blocks(api) == before and _weights(api) == weights
        repo.add(_feedback(3, "rejected"))
        repo.commit("more feedback")
        api.index()
        assert blocks(api) != before and _weights(api)[TARGET][1] == 3
        full = Repository(str(repo.path), index=str(tmp_path / "full.duckdb"))
        full.index(full=True)
        assert history(api) == history(full) and _weights(api) == _weights(full)


def test_merged_branches_fold_like_a_linear_history(make_repo):
    outcomes = {"a": ("misleading", 1), "b": ("misleading", 2), "c": ("misleading", 3), "d": ("accepted", 4)}

    def add(repo, key):
        outcome, n = outcomes[key]
        repo.add(_feedback(n, outcome))
        repo.commit(key)

    merged, linear = make_repo("merged"), make_repo("linear")
    for repo in (merged, linear):
        repo.add(observation(TARGET))
        repo.commit("target")
    # merged: main gets a; a side branch gets b and c; then d on main after the merge
    merged.git("checkout", "-q", "-b", "side")
    add(merged, "b")
    add(merged, "c")
    merged.git("checkout", "-q", "main")
    add(merged, "a")
    merged.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
    add(merged, "d")
    for key in "abcd":  # the order the merged first-parent chain gives: a, (b, c by timestamp), d
        add(linear, key)
    results = []
    for repo in (merged, linear):
        with hermetic(repo.env):
            api = Repository(str(repo.path))
            api.index()
            results.append(_weights(api))
    assert results[0] == results[1]
    assert results[0][TARGET][0] == pytest.approx(0.85 * 0.85 * 0.7 * 0.8 + 0.2, abs=1e-9)


def test_retracted_and_invisible_feedback_does_not_count(repo):
    repo.add(observation(TARGET, tenant={"org": "acme", "project": "web"}, event="deploy notes", body="deploy"))
    repo.add(_feedback(1, "rejected", tenant={"org": "acme"}))
    repo.add(_feedback(2, "rejected", tenant={"org": "acme", "project": "web"}))
    repo.commit("target and feedback")
    with hermetic(repo.env):
        unbound = Repository(str(repo.path))
        assert unbound.query(QueryRequest(text="deploy"))["observations"][0]["weight"] == pytest.approx(0.85 * 0.85)
        bound = Repository(str(repo.path), tenant={"org": "acme", "project": "web"})
        # the org-wide feedback is invisible to a caller bound to the project
        assert bound.query(QueryRequest(text="deploy"))["observations"][0]["weight"] == pytest.approx(0.85)
    repo.add(observation("obs-20260203-090000-0009", retracts=[_feedback(2, "rejected").id],
                         tenant={"org": "acme", "project": "web"}))
    repo.commit("retract one")
    with hermetic(repo.env):
        assert unbound.query(QueryRequest(text="deploy"))["observations"][0]["weight"] == pytest.approx(0.85)
        assert _weights(unbound)[TARGET] == (pytest.approx(0.85), 1)
        unweighted = unbound.query(QueryRequest(text="deploy", unweighted=True))
        assert unweighted["observations"][0]["weight"] == pytest.approx(0.85)  # still reported


def test_weights_rank_text_search(repo):
    repo.add(observation("obs-20260201-090000-0001", event="printer jammed", body="printer"),
             observation("obs-20260201-090000-0002", event="printer jammed", body="printer again"))
    repo.commit("two")
    with hermetic(repo.env):
        api = Repository(str(repo.path))
        before = [o["id"] for o in api.query(QueryRequest(text="printer"))["observations"]]
        target = before[0]
        for n in range(1, 4):
            repo.add(_feedback(n, "misleading", target=target))
        repo.commit("feedback")
        after = [o["id"] for o in api.query(QueryRequest(text="printer"))["observations"]]
        assert after == before[::-1]
        assert [o["id"] for o in api.query(QueryRequest(text="printer", unweighted=True))["observations"]] == before


def test_feedback_command_writes_a_checked_document(repo):
    repo.add(observation(TARGET, tenant={"org": "acme"}))
    repo.commit("target")
    proc = repo.obsrepo("feedback", TARGET, "--outcome", "accepted", "--session", "s-1", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    path = json.loads(proc.stdout)["path"]
    text = repo.read(path)
    assert "outcome: accepted" in text and "org: acme" in text
    assert repo.check("--base", "HEAD").returncode == 0
    missing = repo.obsrepo("feedback", "obs-20260201-090000-0404", "--outcome", "accepted", "--format", "json")
    assert missing.returncode == 3 and json.loads(missing.stdout)["error"]["code"] == "REF_NOT_FOUND"
    other = repo.obsrepo("feedback", TARGET, "--outcome", "accepted", "--tenant", "org=globex")
    assert other.returncode == 3


def _json(proc) -> dict:
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def test_feedback_and_reclassify_commit_on_a_proposal_branch(repo):
    repo.add(observation(TARGET, tenant={"org": "acme"}, event="invoice paid late", body="the payment came late"))
    repo.commit("target")
    before = fingerprint(repo)
    out = _json(repo.obsrepo("feedback", TARGET, "--outcome", "misleading", "--session", "s-1", "--commit", "--format", "json"))
    assert out["branch"] == PROPOSALS and out["commit"] == repo.sha(PROPOSALS)
    assert repo.git("rev-parse", f"{PROPOSALS}^") == repo.sha("main")  # made from HEAD
    assert fingerprint(repo) == before  # work tree, index, HEAD and main untouched
    text = repo.git("show", f"{PROPOSALS}:{out['path']}")
    assert "outcome: misleading" in text and "session: s-1" in text and "org: acme" in text
    assert "Obsrepo-Tool: feedback" in repo.git("log", "-1", "--format=%B", PROPOSALS)
    # the target is looked up at the branch's tip: one proposed there is found with --commit only
    proposed = _json(repo.obsrepo("new", "--source", "agent/x", "--event", "proposed", "--tenant", "org=acme", "--commit",
                                  "--format", "json"))
    again = _json(repo.obsrepo("feedback", proposed["id"], "--outcome", "accepted", "--commit", "--format", "json"))
    assert repo.git("rev-parse", f"{PROPOSALS}^") == proposed["commit"] and again["commit"] == repo.sha(PROPOSALS)
    in_tree = repo.obsrepo("feedback", proposed["id"], "--outcome", "accepted", "--format", "json")
    assert in_tree.returncode == 3 and _json(in_tree)["error"]["code"] == "REF_NOT_FOUND"
    # …and a document only in the work tree is not a target for the branch
    draft = observation("obs-20260203-090000-0003", event="not committed")
    repo.add(draft)
    tip = repo.sha(PROPOSALS)
    refused = repo.obsrepo("feedback", draft.id, "--outcome", "accepted", "--commit", "--format", "json")
    assert refused.returncode == 3 and _json(refused)["error"]["code"] == "REF_NOT_FOUND"
    assert repo.sha(PROPOSALS) == tip
    (repo.path / draft.path).unlink()
    wrong = repo.obsrepo("feedback", TARGET, "--outcome", "accepted", "--branch", "x", "--format", "json")
    assert wrong.returncode == 2 and _json(wrong)["error"]["details"]["parameter"] == "--branch"
    # reclassify onto a branch of its own, made from HEAD too
    before = fingerprint(repo, "review/classes")
    cls = _json(repo.obsrepo("reclassify", TARGET, "--to", "restricted", "--reason", "holds a card number", "--commit",
                             "--branch", "review/classes", "--format", "json"))
    assert cls["branch"] == "review/classes" and repo.git("rev-parse", "review/classes^") == repo.sha("main")
    doc = repo.git("show", f"review/classes:{cls['path']}")
    assert "classification: restricted" in doc and "holds a card number" in doc and "org: acme" in doc
    assert fingerprint(repo, "review/classes") == before
    check_branch(repo, PROPOSALS)
    check_branch(repo, "review/classes")
    # merged, the feedback counts
    repo.git("merge", "-q", "--ff-only", PROPOSALS)
    with hermetic(repo.env):
        assert _weights(Repository(str(repo.path)))[TARGET] == (pytest.approx(0.85), 1)


# --- classification ---------------------------------------------------------------------------

# the secret itself raises the level, never a word about one (a chat turn that says "secret")
@pytest.mark.parametrize(("event", "body", "source_ref", "expected"), [
    ("card on file", "4111 1111 1111 1111 exp 12/29", None, "restricted"),
    ("paid with 4111-1111-1111-1111", "", None, "restricted"),
    ("customer SSN 123-45-6789 on file", "", None, "restricted"),
    ("order 4111111111111112 shipped", "", None, "public"),  # fails Luhn: an order number
    ("tracking 1234567890123", "", None, "public"),
    ("the total was 1,234,567,890,123.00", "", None, "public"),
    ("rotated the key", "AKIAIOSFODNN7EXAMPLE", None, "confidential"),
    ("db password: hunter2!", "", None, "confidential"),
    ("", "API_KEY=sk_live_4eC39HqLyjWDarjtT1zdp7dc", None, "confidential"),
    ("token = ghp_16C7e42F292c6912E7710c838347Ae178B4a", "", None, "confidential"),
    ("", "-----BEGIN RSA PRIVATE KEY-----\nMIIB...", None, "confidential"),
    ("clone https://deploy:s3cr3tpass@git.example.com/x.git", "", None, "confidential"),
    ("curl -H 'Authorization: Bearer abcdefghijklmnop0123'", "", None, "confidential"),
    # words about secrets, cards and keys hold none
    ("I kept it a secret from my sister", "", None, "public"),
    ("Password reset requested", "the customer SSN field is empty", None, "public"),
    ("she gave me a token of thanks", "my credit card was declined; PII training done", None, "public"),
    ("tokenize the input", "see passwords.md and secrets-manager docs", None, "public"),
    ("the password is: ", "", None, "public"),
    ("read the config", "", "repo/config/secrets/app.yaml", "confidential"),
    ("read the config", "", "https://example.com/auth/login", "confidential"),
    ("read the config", "", "deploy/.env", "confidential"),
    ("read the config", "", "deploy/.envrc", "public"),
    ("read the config", "", "docs/keys-and-values.md", "public"),
])
def test_content_rules(event, body, source_ref, expected):
    assert content_classification(event, body, source_ref) == expected


@settings(max_examples=400, derandomize=True, database=None)
@given(st.text(alphabet="0123456789", min_size=10, max_size=24))
def test_a_card_number_is_13_to_19_digits_that_pass_luhn(digits):
    luhn = sum(int(d) if i % 2 == 0 else (2 * int(d) - 9 if int(d) > 4 else 2 * int(d))
               for i, d in enumerate(reversed(digits))) % 10 == 0
    expected = 13 <= len(digits) <= 19 and luhn and len(set(digits)) > 1
    assert card_number(digits) == expected
    assert card_number(f"paid with {digits[:4]} {digits[4:8]} {digits[8:]}.") == expected


def test_check_warns_when_the_declared_level_is_below_the_content(repo):
    repo.add(observation("obs-20260201-090000-0001", event="the admin password: Tr0ub4dor&3", classification="internal"),
             observation("obs-20260201-090000-0002", event="we tokenize input, the password was rotated"))
    result = repo.check()
    assert result.returncode == 0, result
    assert result.issues == [("VALIDATION_ERROR", "classification-below-content",
                              "observations/2026/02/01/obs-20260201-090000-0001.md")]
    assert result.data["issues"][0]["severity"] == "warning"
    repo.commit("docs")
    with hermetic(repo.env):
        api = Repository(str(repo.path))
        page = api.query(QueryRequest(max_classification="internal"))
        assert [o["id"] for o in page["observations"]] == ["obs-20260201-090000-0002"]


def test_a_reclassified_observation_leaves_a_lower_ceiling_at_that_commit(repo):
    repo.add(observation(TARGET, entity="company/acme", fields={"name": "Acme"}))
    before = repo.commit("target")
    repo.add(observation("obs-20260202-090000-0002", reclassify={"targets": [TARGET], "classification": "restricted"}))
    repo.commit("reclassify")
    assert repo.check("--base", before).returncode == 0
    with hermetic(repo.env):
        api = Repository(str(repo.path))
        low = QueryRequest(max_classification="confidential")
        assert TARGET in [o["id"] for o in api.query(low, at=before)["observations"]]
        assert TARGET not in [o["id"] for o in api.query(low)["observations"]]
        full = api.query(QueryRequest())["observations"]
        assert {o["id"]: o["classification"] for o in full}[TARGET] == "restricted"
        assert api.snapshot("company/acme", max_classification="internal", at=before)["snapshot"] == {"name": "Acme"}
        hidden = api.snapshot("company/acme", max_classification="internal")
        assert hidden["snapshot"] == {} and hidden["observation_count"] == 0
        capped = Repository(str(repo.path), max_classification="internal")
        assert TARGET not in [o["id"] for o in capped.query(QueryRequest())["observations"]]
    proc = repo.obsrepo("reclassify", TARGET, "--to", "confidential", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert repo.check("--base", "HEAD").returncode == 0


# --- retention --------------------------------------------------------------------------------

RETENTION = "spec: retention/v1\npolicies:\n  - {type: chat.line, ttl: 30d}\n  - {classification: restricted, ttl: 365d}\n"


def _commit_at(repo, when: str, message: str) -> str:
    repo.env["GIT_COMMITTER_DATE"] = when
    return repo.commit(message, allow_empty=True)


def test_expiry_at_a_commit_and_not_at_its_parent(repo):
    chat = observation("obs-20260201-000000-0001", "2026-02-01T00:00:00Z", type="chat.line", event="hello there")
    kept = observation("obs-20260201-000000-0002", "2026-02-01T00:00:00Z", type="note", event="a note")
    repo.add(chat, kept)
    repo.write("schemas/retention.yaml", RETENTION)
    parent = _commit_at(repo, "2026-03-02T23:59:59+00:00", "before")
    expiring = _commit_at(repo, "2026-03-03T00:00:00+00:00", "at the ttl")
    assert repo.check().returncode == 0
    with hermetic(repo.env):
        api = Repository(str(repo.path))
        ids = lambda page: [o["id"] for o in page["observations"]]  # noqa: E731
        assert ids(api.query(QueryRequest(order="asc"), at=parent)) == [chat.id, kept.id]
        assert ids(api.query(QueryRequest(order="asc"), at=expiring)) == [kept.id]
        assert ids(api.query(QueryRequest(order="asc", include_expired=True))) == [chat.id, kept.id]
        now = api.retention()
        assert [e["id"] for e in now["expired"]] == [chat.id] and now["expired"][0]["expires_at"] == "2026-03-03T00:00:00Z"
        earlier = api.retention(at=parent)
        assert earlier["total_expired"] == 0 and [e["id"] for e in earlier["upcoming"]] == [chat.id]
    bad = repo.write("schemas/retention.yaml", "spec: retention/v1\npolicies:\n  - {ttl: 30 days}\n")
    assert bad.exists()
    result = repo.check()
    assert result.returncode == 1 and ("VALIDATION_ERROR", "retention-policy", "schemas/retention.yaml") in result.issues


# --- export -----------------------------------------------------------------------------------

def _export_repo(repo) -> None:
    for n in range(1, 13):
        tenant = {"org": "acme" if n % 3 else "globex", "project": "web" if n % 2 else "api"}
        repo.add(observation(f"obs-2026{n:02d}01-090000-{n:04d}", f"2026-{n:02d}-01T09:00:00Z", tenant=tenant,
                             type="note" if n % 4 else "alert", event=f"event {n} about the server",
                             classification="confidential" if n == 5 else "internal"))
    repo.add(observation("obs-20261202-090000-0099", "2026-12-02T09:00:00Z", retracts=["obs-20260401-090000-0004"],
                         tenant={"org": "acme", "project": "api"}))
    repo.commit("data")


@pytest.mark.parametrize(("tenant", "filters"), [
    (None, {}),
    ({"org": "acme"}, {}),
    ({"org": "acme"}, {"type": "note", "max_classification": "internal"}),
    (None, {"text": "server", "scopes": ()}),
])
def test_export_rows_equal_query_totals(repo, tenant, filters):
    _export_repo(repo)
    with hermetic(repo.env):
        api = Repository(str(repo.path), tenant=tenant)
        total = api.query(QueryRequest(**filters))["total"]
        sink = io.BytesIO()
        result = api.export(QueryRequest(**filters), "csv", out=sink)
        rows = list(csv.DictReader(io.StringIO(sink.getvalue().decode())))
        assert result["count"] == total == len(rows)
        assert list(rows[0])[:8] == ["id", "agent", "project", "timestamp", "classification", "content_hash",
                                     "feedback_weight", "content"]
        if tenant:
            assert {r["tenant_org"] for r in rows} == {"acme"}
        lines = io.BytesIO()
        api.export(QueryRequest(**filters), "jsonl", out=lines)
        assert len(lines.getvalue().splitlines()) == total


def test_a_bound_export_holds_nothing_of_another_tenant(repo, tmp_path):
    _export_repo(repo)
    proc = repo.obsrepo("export", "--tenant", "org=globex", "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert records and {r["tenant_org"] for r in records} == {"globex"}
    assert "acme" not in proc.stdout
    widened = repo.obsrepo("export", "--tenant", "org=globex", "--org", "acme", "--format", "csv")
    assert widened.returncode == 0 and len(widened.stdout.splitlines()) == 1  # the header only
    folder = tmp_path / "lake"
    proc = repo.obsrepo("export", "--tenant", "org=globex", "--format", "parquet", "--output", str(folder))
    assert proc.returncode == 0, proc.stderr
    import duckdb
    import pyarrow.dataset as ds

    dataset = ds.dataset(str(folder), partitioning="hive")
    table = dataset.to_table()
    assert table.num_rows == len(records) and set(table.column("tenant_org").to_pylist()) == {"globex"}
    assert {p.name for p in folder.iterdir()} == {"year=2026"}
    count = duckdb.sql(f"SELECT count(*) FROM read_parquet('{folder}/**/*.parquet', hive_partitioning = true) "
                       "WHERE year = 2026").fetchone()[0]
    assert count == len(records)
    again = repo.obsrepo("export", "--format", "parquet", "--output", str(folder))
    assert again.returncode == 2  # never writes into a folder that holds files


# --- belief updates ---------------------------------------------------------------------------

def test_the_twelve_transitions():
    table = {(c, e): next_confidence(c, e) for c in ("unknown", "low", "medium", "high")
             for e in ("confirm", "contradict", "neutral")}
    assert len(table) == 12
    assert table == {
        ("unknown", "confirm"): "low", ("unknown", "contradict"): "low", ("unknown", "neutral"): "unknown",
        ("low", "confirm"): "medium", ("low", "contradict"): "low", ("low", "neutral"): "low",
        ("medium", "confirm"): "high", ("medium", "contradict"): "low", ("medium", "neutral"): "medium",
        ("high", "confirm"): "high", ("high", "contradict"): "medium", ("high", "neutral"): "high",
    }
    assert set(TRANSITIONS) < set(table)


def test_comprehend_writes_the_next_version(repo):
    first = observation("obs-20260201-090000-0001", type="payment.late")
    second = observation("obs-20260202-090000-0002", type="payment.late")
    repo.add(first, second, comprehension("comp-acme-payments", [first.id], domain="customers/acme"))
    repo.commit("belief")
    refused = repo.obsrepo("comprehend", "comp-acme-payments", "--observation", second.id, "--effect", "contradict")
    assert refused.returncode == 2
    # the door's error names the request's field; the command line renames it to its argument
    bad = repo.obsrepo("comprehend", "../comp-x", "--observation", second.id, "--effect", "confirm", "--format", "json")
    assert (bad.returncode, json.loads(bad.stdout)["error"]["details"]["parameter"]) == (2, "COMP_ID"), bad.stdout
    with pytest.raises(UsageError) as caught:
        run(Session(str(repo.path)), Comprehend("../comp-x", second.id, "confirm", destination=WorkTree()))
    assert caught.value.details["parameter"] == "comprehension_id" and caught.value.message.startswith("comprehension_id")
    proc = repo.obsrepo("comprehend", "comp-acme-payments", "--observation", second.id, "--effect", "confirm",
                        "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"id": "comp-acme-payments", "path": "comprehension/comp-acme-payments.md",
                                       "version": 2, "previous_confidence": "medium", "confidence": "high", "changed": True}
    text = repo.read("comprehension/comp-acme-payments.md")
    assert f"Observation {second.id} (payment.late) changed confidence from medium to high" in text
    assert repo.check("--base", "HEAD").returncode == 0
    again = repo.obsrepo("comprehend", "comp-acme-payments", "--observation", second.id, "--effect", "confirm",
                         "--format", "json")
    assert json.loads(again.stdout)["changed"] is False and repo.read("comprehension/comp-acme-payments.md") == text
    repo.commit("confirmed")
    listed = repo.obsrepo("comprehensions", "--confidence", "high", "--text", "belief", "--format", "json")
    assert [c["id"] for c in json.loads(listed.stdout)["comprehensions"]] == ["comp-acme-payments"]
    none = repo.obsrepo("comprehensions", "--domain", "elsewhere", "--format", "json")
    assert json.loads(none.stdout)["total"] == 0
    bound = repo.obsrepo("comprehensions", "--tenant", "org=acme", "--format", "json")
    assert json.loads(bound.stdout)["total"] == 0  # it cites observations the binding cannot read


def test_comprehend_commits_the_next_version_on_the_branch(repo):
    first, second, third = (observation(f"obs-2026020{n}-090000-000{n}", type="payment.late") for n in (1, 2, 3))
    repo.add(first, second, third, comprehension("comp-acme-payments", [first.id], domain="customers/acme"))
    repo.commit("belief")
    before = fingerprint(repo)
    args = ("comprehend", "comp-acme-payments", "--commit", "--format", "json", "--observation")
    out = _json(repo.obsrepo(*args, second.id, "--effect", "confirm"))
    assert out == {"id": "comp-acme-payments", "path": "comprehension/comp-acme-payments.md", "version": 2,
                   "previous_confidence": "medium", "confidence": "high", "changed": True,
                   "commit": repo.sha(PROPOSALS), "branch": PROPOSALS}
    assert repo.git("rev-parse", f"{PROPOSALS}^") == repo.sha("main")
    assert repo.git("diff-tree", "-r", "--no-commit-id", "--name-status", PROPOSALS) == f"M\t{out['path']}"
    assert fingerprint(repo) == before  # the work tree's file is still version 1
    text = repo.git("show", f"{PROPOSALS}:{out['path']}")
    assert "version: 2" in text and f"Observation {second.id} (payment.late) changed confidence from medium to high" in text
    assert "Obsrepo-Tool: comprehend" in repo.git("log", "-1", "--format=%B", PROPOSALS)
    # already cited at the branch's tip: no commit
    tip = repo.sha(PROPOSALS)
    same = _json(repo.obsrepo(*args, second.id, "--effect", "confirm"))
    assert same["changed"] is False and same["commit"] is None and same["version"] == 2 and repo.sha(PROPOSALS) == tip
    # the next update starts from the branch's version, not the work tree's
    contra = _json(repo.obsrepo(*args, third.id, "--effect", "contradict", "--statement", "Acme pays late"))
    assert (contra["version"], contra["previous_confidence"], contra["confidence"]) == (3, "high", "medium")
    assert repo.git("rev-parse", f"{PROPOSALS}^") == tip
    for bad, code in ((("comprehend", "comp-nope", "--commit", "--observation", second.id, "--effect", "confirm"), 3),
                      ((*args[:-1], "--observation", "obs-20260209-090000-0404", "--effect", "confirm"), 3),
                      ((*args, third.id, "--effect", "contradict"), 2)):
        refused = repo.obsrepo(*bad, *(() if "--format" in bad else ("--format", "json")))
        assert refused.returncode == code, refused.stdout
    assert repo.sha(PROPOSALS) == contra["commit"] and fingerprint(repo) == before
    check_branch(repo)


def test_a_kept_rule_state_follows_comprehension_edits_made_by_others(repo):
    """A writer holding a Repository moves its rule state along another writer's belief update
    (nothing the rules keep changed) instead of reading the whole tree again."""
    first, second = (observation(f"obs-2026020{n}-090000-000{n}") for n in (1, 2))
    repo.add(first, second, comprehension("comp-x", [first.id]))
    repo.commit("belief")
    with hermetic(repo.env):
        api = Repository(str(repo.path))
        api.feedback(first.id, "accepted")
        state = api._tree_states().state
        assert repo.obsrepo("comprehend", "comp-x", "--observation", second.id, "--effect", "neutral", "--commit").returncode == 0
        api.feedback(second.id, "rejected")
        assert api._tree_states().state is state and api._tree_states().tip == repo.sha(PROPOSALS)
    check_branch(repo)


BELIEVER = """
import sys
from obsrepo.api import Repository
from obsrepo.errors import UsageError
repo = Repository(".")
for obs_id in sys.argv[1:]:
    assert repo.comprehend("comp-shared", obs_id, "neutral")["commit"]
"""


def test_concurrent_belief_updates_all_land_one_on_top_of_the_other(repo):
    import subprocess
    import sys

    docs = [observation(f"obs-20260201-0900{n:02d}-{n:04d}") for n in range(1, 11)]
    repo.add(*docs, comprehension("comp-shared", [docs[0].id]))
    repo.commit("belief")
    ids = [d.id for d in docs[1:]]
    writers = [subprocess.Popen([sys.executable, "-c", BELIEVER, *ids[w::3]], cwd=repo.path, env=repo.env,
                                stderr=subprocess.PIPE, text=True) for w in range(3)]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
    assert repo.git("rev-list", "--count", f"main..{PROPOSALS}") == "9"
    text = repo.git("show", f"{PROPOSALS}:comprehension/comp-shared.md")
    assert "version: 10" in text and all(obs_id in text for obs_id in ids)
    check_branch(repo)
