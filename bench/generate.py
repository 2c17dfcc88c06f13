#!/usr/bin/env python3
"""Generate a synthetic obsrepo repository for benchmarks.

    python3 bench/generate.py OUT_DIR --count N [--commits C] [--seed S]
                              [--entities E] [--tenants T] [--feedback F] [--force]

Creates a fresh git repository at OUT_DIR holding N observation/v1 documents under
`observations/YYYY/MM/DD/<id>.md`, committed over C commits on branch `main`, with
lightweight tags v0.1 / v0.2 / v0.3 at about 25% / 50% / 75% of the history. The output is
a pure function of the arguments: same arguments => byte-identical files and commit shas.

The history is written with one `git fast-import` stream (no `git add` per file), then
`git reset --hard` fills the work tree. Standard library only.

What the documents look like (all valid for a strict observation/v1 validator):
* E entities of types company, repo, person, project, contract, invoice, task, incident,
  meeting, document; observation counts per entity are skewed (a few entities have hundreds
  or thousands of observations, many have one or two). `task/bench-hot` gets exactly
  min(50, C, N // 10) observations, each in a different commit.
* About 12% of the documents are plain log events (scope only, no entity / fields).
* Relations (PART_OF, REFERS_TO, DEPENDS_ON) only target entities that already have an
  observation in the same or an earlier commit with the same tenant mapping; PART_OF and
  DEPENDS_ON always point from a lower-ranked entity type to a higher one (or, for
  task DEPENDS_ON task, to a task with a smaller creation index), so they are acyclic.
* `--periods F`: about that share of the entity documents also write `valid` (docs/design.md §19): a
  period starting within 30 days of the timestamp, ending 1..90 days later (a fifth stay open).
  `--disputes F`: after about that share of the entity documents, a second opinion on the same
  entity a few hours later from another source (`agent/second-opinion`) at the same priority,
  with the entity's fields drawn again (usually other values): a contest where it stays the
  winner's challenger. `--no-valid`: the same documents without their `valid` keys (the baseline
  of a measurement). Both draw from their own random streams, so the other documents stay as
  they are without them.
* ids are `obs-YYYYMMDD-HHMMSS-<first 8 hex of the content hash>` (docs/design.md §2.4); timestamps are
  non-decreasing in commit order (about 3% share the previous document's timestamp, to
  exercise the id tie-break), starting 2026-01-01T00:00:00Z and spread over ~10 months.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time
import unicodedata
from datetime import datetime, timezone

START = 1767225600  # 2026-01-01T00:00:00Z
SPAN = 300 * 86400  # ~10 months of observations
HOT_ENTITY = "task/bench-hot"

# --------------------------------------------------------------------------------------
# vocabulary

TENANTS = [
    {"org": "northwind", "project": "finance"},
    {"org": "northwind", "project": "platform"},
    {"org": "contoso"},
    {"org": "initech", "agent": "billing-bot"},
    {"org": "contoso", "user": "alice"},
    {"org": "globex", "project": "support"},
    {"org": "northwind", "project": "sales", "user": "bob"},
    {"org": "umbrella", "project": "research", "agent": "lab-assistant"},
]

COMPANIES = [
    "Acme Corp", "Globex", "Initech", "Umbrella Corporation", "Stark Industries", "Wayne Enterprises",
    "Hooli", "Pied Piper", "Vandelay Industries", "Soylent", "Tyrell Corporation", "Cyberdyne Systems",
    "Wonka Industries", "Oceanic Airlines", "Massive Dynamic", "Aperture Science", "Black Mesa",
    "Dunder Mifflin", "Northwind Traders", "Contoso", "Fabrikam", "Tailspin Toys", "Litware",
    "Adventure Works", "Wide World Importers", "Blue Yonder Airlines", "Coho Winery", "Proseware",
    "Lamna Healthcare", "Margie's Travel", "Zoë's Bakery", "Müller & Söhne GmbH", "Café Olé",
    "Nordisk Fjord AS", "Sakura Denki", "Grupo Alvarez", "Łódź Logistics", "Bluth Company",
    "Prestige Worldwide", "Sterling Cooper", "Gekko & Co", "Krusty Krab", "Los Pollos Hermanos",
    "Duff Brewery", "Planet Express", "MomCorp", "Virtucon", "Yoyodyne", "InGen", "Weyland-Yutani",
]
FIRST = [
    "Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy", "Mallory",
    "Niaj", "Olivia", "Peggy", "Rupert", "Sybil", "Trent", "Victor", "Walter", "Zoë", "José", "Søren",
    "Amélie", "Björn", "Chiara", "Dmitri", "Fatima", "Hiroshi", "Ingrid", "Kwame", "Lucía", "Mei",
    "Nikolai", "Priya", "Rafael", "Sven", "Tomasz", "Yusuf", "Aisha", "Łukasz",
]
LAST = [
    "Martin", "Schmidt", "Nguyen", "García", "Rossi", "Kowalski", "Tanaka", "Okafor", "Johansson",
    "Dubois", "Müller", "O'Brien", "Silva", "Novak", "Haddad", "Fischer", "Ivanova", "Larsen", "Costa",
    "Becker", "Yamamoto", "Mensah", "Horvath", "Lindqvist", "Moreau", "Patel", "Kim", "Andersen",
]
ROLES = ["engineer", "accountant", "product manager", "designer", "sales lead", "support agent",
         "CTO", "CFO", "contractor", "data scientist", "legal counsel", "ops engineer"]
INDUSTRIES = ["manufacturing", "retail", "software", "logistics", "healthcare", "finance",
              "food and beverage", "energy", "media", "education", "aerospace"]
COUNTRIES = ["DE", "US", "FR", "NO", "GB", "JP", "BR", "PL", "ES", "IT", "SE", "NL", "ON", "YES"]
CURRENCIES = ["EUR", "USD", "GBP", "NOK", "JPY", "SEK", "PLN"]
TIMEZONES = ["Europe/Berlin", "America/New_York", "Europe/Paris", "Asia/Tokyo", "Europe/Oslo",
             "America/Sao_Paulo", "Europe/Warsaw", "UTC"]
LANGUAGES = ["python", "go", "typescript", "rust", "java", "kotlin", "ruby", "c++"]
REPO_NAMES = ["api-gateway", "billing-service", "web-frontend", "mobile-app", "data-pipeline",
              "auth-service", "infra", "docs", "search-indexer", "notification-service",
              "ml-models", "design-system", "reporting", "cli", "sdk-python", "sdk-js"]
PROJECT_NAMES = ["Q3 Migration", "Website Redesign", "Cloud Cost Reduction", "EU Expansion",
                 "Onboarding Revamp", "SOC 2 Audit", "Data Warehouse", "Mobile Launch",
                 "Pricing Update", "Support Automation", "Vendor Consolidation", "GDPR Cleanup"]
TASK_VERBS = ["Fix", "Migrate", "Refactor", "Document", "Investigate", "Add", "Remove", "Upgrade",
              "Review", "Automate", "Benchmark", "Deprecate", "Test", "Design", "Localize"]
TASK_OBJECTS = ["login timeout", "billing DB", "invoice export", "search ranking", "CI cache",
                "password reset flow", "webhook retries", "CSV import", "dark mode", "rate limiter",
                "PDF parser", "audit log", "SSO integration", "nightly backup", "onboarding emails",
                "currency rounding", "timezone handling", "API pagination", "feature flags",
                "error budget alerts", "customer portal", "tax calculation", "K8s manifests"]
LABELS = ["backend", "frontend", "urgent", "bug", "tech-debt", "security", "ux", "infra", "docs",
          "customer", "yes", "no", "on", "2026", "v1.2"]
TASK_STATUS = ["todo", "in_progress", "blocked", "review", "done"]
SEVERITIES = ["sev1", "sev2", "sev3", "sev4"]
SERVICES = ["checkout", "search", "auth", "payments", "email", "storage", "api", "dashboard"]
DOC_TITLES = ["Master Services Agreement", "Security Questionnaire", "Architecture Overview",
              "Quarterly Report", "Runbook", "Data Processing Addendum", "Release Notes",
              "Incident Postmortem", "Pricing Sheet", "Onboarding Guide", "Board Minutes"]
MEETING_KINDS = ["Weekly sync", "Sprint planning", "Retro", "Customer call", "Board meeting",
                 "1:1", "Design review", "Incident review", "Budget review", "Kickoff"]

TYPES = {
    # type: (rank, share of entities, observation weight factor)
    "company": (0, 0.08, 1.0),
    "repo": (0, 0.05, 1.6),
    "person": (1, 0.15, 0.8),
    "project": (1, 0.05, 1.0),
    "contract": (2, 0.05, 0.6),
    "invoice": (2, 0.22, 0.9),
    "task": (2, 0.25, 1.5),
    "incident": (2, 0.07, 1.2),
    "meeting": (3, 0.04, 0.4),
    "document": (3, 0.04, 0.5),
}
PART_OF = {  # always from a higher rank number to a lower one
    "person": ["company"], "project": ["company"], "contract": ["company"], "invoice": ["company"],
    "task": ["project", "repo"], "incident": ["repo"], "meeting": ["project", "company"],
    "document": ["project", "company"],
}
DEPENDS_ON = {"task": ["task"], "incident": ["repo"]}  # task -> task only to a smaller index
REFERS_TO = {
    "company": ["person"], "person": ["project", "repo"], "project": ["person", "repo"],
    "contract": ["person", "document"], "invoice": ["contract", "person"],
    "task": ["person", "repo", "document", "incident"], "incident": ["person", "task"],
    "meeting": ["person", "document", "task"], "document": ["person", "contract"],
    "repo": ["person", "project"],
}

SOURCES = {
    "company": ["agent/crm-sync", "plugin:hubspot", "human/alice", "agent:enricher", "plugin:salesforce"],
    "repo": ["plugin:github", "agent/repo-watcher", "system:ci", "plugin:gitlab"],
    "person": ["plugin:hubspot", "human/bob", "agent/crm-sync", "plugin:telegram", "agent:hr-bot"],
    "project": ["human/carol", "plugin:jira", "agent:planner", "plugin:linear"],
    "contract": ["agent/contract-reader", "human/dave", "plugin:docusign"],
    "invoice": ["agent/billing-extractor", "agent:invoice-ocr", "plugin:gmail", "system:erp-sync",
                "human/erin"],
    "task": ["plugin:github", "plugin:jira", "human/alice", "agent:planner", "plugin:linear",
             "plugin:telegram", "agent/triage-bot"],
    "incident": ["plugin:pagerduty", "system:monitor", "human/frank", "agent/sre-assistant"],
    "meeting": ["plugin:calendar", "agent/note-taker", "human/grace", "plugin:zoom"],
    "document": ["plugin:gdrive", "agent/doc-indexer", "human/heidi", "plugin:notion"],
}
LOG_EVENTS = [
    # (type, source, scope seed, event template)
    ("backup.completed", "system:cron", "ops", "Nightly backup completed: {n} objects, {mb} MB in {s}s"),
    ("backup.failed", "system/backup", "ops", "Backup of volume vol-{k} failed: {err}"),
    ("system.heartbeat", "system:monitor", "ops", "Heartbeat from worker-{k}: load {load}"),
    ("sync.finished", "agent/crm-sync", "sales", "CRM sync finished: {n} records updated, {m} skipped"),
    ("deploy.finished", "system:ci", "platform", "Deployed {repo} build {build} to {env}"),
    ("alert.fired", "system:monitor", "ops", "Alert {alert} fired on {svc}: p99 latency {ms} ms"),
    ("alert.resolved", "system:monitor", "ops", "Alert {alert} resolved on {svc} after {s}s"),
    ("message.received", "plugin:telegram", "inbox", "Telegram message from {person}: \u201c{snippet}\u201d"),
    ("note:added", "human/alice", "notes", "Note: {snippet}"),
    ("mail:received", "plugin:gmail", "inbox", "Mail from {email}: {subject}"),
    ("run.started", "agent:planner", "agents", "Agent run {run} started with {n} tasks queued"),
    ("run.finished", "agent:planner", "agents", "Agent run {run} finished: {n} actions, {m} errors"),
    ("cost.reported", "agent/finops", "finance", "Cloud spend for {date}: {amount} {cur}"),
]
ERRORS = ["timeout after 30s", "disk full", "permission denied", "checksum mismatch",
          "connection reset by peer", "quota exceeded"]
SNIPPETS = ["can we move the call to 3pm?", "invoice looks wrong, #42 is duplicated",
            "deploy done \U0001f44d", "who owns the billing alerts?", "key: value pairs are fine",
            "no", "yes, ship it", "see ticket 1234 # priority", "numbers: 1, 2, 3", "ça marche",
            "shipping the fix tonight", "please review the PR", "déjà vu: same bug again",
            "Grüße aus Berlin", "the report is ready", "ok", "null", "true story"]
SUBJECTS = ["Re: Invoice question", "Contract renewal", "Your receipt", "Meeting notes",
            "Action required: verify account", "Weekly digest", "Fwd: pricing", "Out of office"]
ALERTS = ["HighLatency", "ErrorRateHigh", "DiskPressure", "CertExpiry", "QueueBacklog", "OOMKilled"]
ENVS = ["staging", "production", "canary", "dev"]

FILLER = [
    "The change was picked up from {src} and cross-checked against the previous state.",
    "No conflicting observations were found for the same period.",
    "Values were normalized (currency codes upper case, dates ISO 8601).",
    "Confidence is moderate: the source document was partly scanned.",
    "Follow-up scheduled with {person} for next week.",
    "See the linked record for the full history of this item.",
    "The extraction run took {s} seconds and used {n} pages of input.",
    "A reviewer confirmed the numbers by hand.",
    "This supersedes nothing; it only adds detail to earlier notes.",
    "Flagged for review because the amount differs by {pct}% from the estimate.",
    "Mentioned in the standup by {person}.",
    "Raw payload archived under the source reference.",
    "Some fields were left unchanged because the source did not mention them.",
    "The owner was notified via {channel}.",
    "Timestamps in the source were local time and were converted to UTC.",
    "Matched {n} of {m} line items automatically; the rest were matched manually.",
    "Nothing unusual in the logs around this time.",
    "Related discussion happened in the #{room} channel.",
    "Tagged as {label} for the quarterly review.",
    "The summary below was generated and then edited by a human.",
]
CHANNELS = ["email", "Slack", "Telegram", "SMS", "a Jira comment", "the weekly sync"]


# --------------------------------------------------------------------------------------
# YAML writing helpers

_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9 _./+-]*[A-Za-z0-9.]\Z")
_YAML11 = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf"}


q = json.encoder.encode_basestring  # a JSON string is a valid YAML double-quoted scalar
canonical_json = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode
flow_json = json.JSONEncoder(ensure_ascii=False).encode


def pick(rng: random.Random, seq):
    """rng.choice, several times faster (the generator makes millions of these calls)."""
    return seq[int(rng.random() * len(seq))]


def rint(rng: random.Random, lo: int, hi: int) -> int:
    return lo + int(rng.random() * (hi - lo + 1))


def rpos(rng: random.Random, n: int) -> int:
    return int(rng.random() * n)


def scalar(value, plain: bool) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(q(v) for v in value) + "]"
    if plain and _PLAIN.match(value) and value.lower() not in _YAML11 and "  " not in value:
        return value
    return q(value)


def slug(text: str) -> str:
    text = text.replace("ø", "o").replace("Ø", "O").replace("ł", "l").replace("Ł", "L")
    text = text.replace("ß", "ss").replace("æ", "ae").replace("&", "and")
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-") or "x"


_DAYS: dict[int, str] = {}


def day(ts: int) -> str:
    d = ts // 86400
    text = _DAYS.get(d)
    if text is None:
        text = _DAYS[d] = datetime.fromtimestamp(d * 86400, timezone.utc).strftime("%Y-%m-%d")
    return text


def iso(ts: int) -> str:
    sec = ts % 86400
    return f"{day(ts)}T{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}Z"


def money(rng: random.Random, lo: float, hi: float) -> float:
    return round(rng.uniform(lo, hi), 2)


# --------------------------------------------------------------------------------------
# entities


class Entity:
    __slots__ = ("idx", "etype", "key", "eid", "name", "tenant", "rank", "state", "nobs",
                 "parent", "count", "birth", "extra")

    def __init__(self, idx: int, etype: str, key: str, name: str, tenant: int) -> None:
        self.idx = idx
        self.etype = etype
        self.key = key
        self.eid = f"{etype}/{key}"
        self.name = name
        self.tenant = tenant  # index into the tenant list, -1 for none
        self.rank = TYPES[etype][0]
        self.state: dict = {}
        self.nobs = 0
        self.parent: str | None = None  # the PART_OF target, once chosen
        self.count = 0
        self.birth = 0.0
        self.extra: dict = {}


def make_entities(rng: random.Random, count: int, tenants: int) -> list[Entity]:
    types = list(TYPES)
    counts = {t: int(TYPES[t][1] * count) for t in types}
    for t in ("task", "company", "repo", "person", "project")[:count]:
        counts[t] = max(counts[t], 1)  # task first: it holds the hot entity
    while sum(counts.values()) < count:
        counts[types[sum(counts.values()) % len(types)]] += 1
    while sum(counts.values()) > count:
        biggest = max(types, key=lambda t: counts[t])
        counts[biggest] -= 1
    counts["task"] = max(counts["task"], 1)
    used: dict[str, int] = {}
    entities: list[Entity] = []

    def unique(etype: str, base: str) -> str:
        key = base
        n = used.get(f"{etype}/{base}", 0)
        while f"{etype}/{key}" in used:
            n += 1
            key = f"{base}-{n}"
        used[f"{etype}/{base}"] = n
        used[f"{etype}/{key}"] = 0
        return key

    serial = {"invoice": 1000, "contract": 1, "incident": 100, "meeting": 1, "task": 1}
    for etype in types:
        for i in range(counts[etype]):
            if etype == "task" and i == 0:
                key, name = "bench-hot", "Benchmark hot task"
            elif etype == "company":
                name = COMPANIES[i % len(COMPANIES)]
                if i >= len(COMPANIES):
                    suffix = ['Holding', 'Labs', 'Group', 'International', 'Nordic'][i // len(COMPANIES) % 5]
                    name = f"{name} {suffix} {i // len(COMPANIES)}"
                key = slug(name)
            elif etype == "person":
                name = f"{pick(rng, FIRST)} {pick(rng, LAST)}"
                key = slug(name)
            elif etype == "repo":
                base = REPO_NAMES[i % len(REPO_NAMES)]
                name = base if i < len(REPO_NAMES) else f"{base}-{i // len(REPO_NAMES) + 1}"
                key = slug(name)
            elif etype == "project":
                name = PROJECT_NAMES[i % len(PROJECT_NAMES)]
                if i >= len(PROJECT_NAMES):
                    name += f" {2026 + i // len(PROJECT_NAMES) % 3} #{i // len(PROJECT_NAMES)}"
                key = slug(name)
            elif etype == "invoice":
                serial["invoice"] += rint(rng, 1, 9)
                name = f"INV-{serial['invoice']}"
                key = slug(name)
            elif etype == "contract":
                serial["contract"] += rint(rng, 1, 3)
                name = f"CTR-2026-{serial['contract']:04d}"
                key = slug(name)
            elif etype == "incident":
                serial["incident"] += rint(rng, 1, 4)
                name = f"INC-{serial['incident']}"
                key = slug(name)
            elif etype == "task":
                serial["task"] += rint(rng, 1, 5)
                name = f"{pick(rng, TASK_VERBS)} {pick(rng, TASK_OBJECTS)}"
                key = f"{slug(name)}-{serial['task']}"
            elif etype == "meeting":
                serial["meeting"] += 1
                name = pick(rng, MEETING_KINDS)
                key = f"{slug(name)}-{serial['meeting']}"
            else:  # document
                name = pick(rng, DOC_TITLES)
                key = slug(name)
            key = unique(etype, key)
            if key == "bench-hot":
                tenant = 0 if tenants else -1
            elif tenants == 0 or rng.random() < 0.08:
                tenant = -1
            else:
                tenant = rpos(rng, tenants)
            entities.append(Entity(len(entities), etype, key, name, tenant))
    return entities


# --------------------------------------------------------------------------------------
# per-type content: (type, event, fields, title, lines)


def person_name(rng: random.Random, ctx) -> str:
    return ctx.person_names[rpos(rng, len(ctx.person_names))]


def gen_company(e: Entity, rng, ts, ctx):
    s = e.state
    if not s:
        s.update(name=e.name, domain=f"{e.key}.example", country=pick(rng, COUNTRIES),
                 industry=pick(rng, INDUSTRIES), employees=rint(rng, 3, 50000), active=True,
                 tags=rng.sample(["customer", "vendor", "partner", "prospect", "enterprise", "smb"], rint(rng, 1, 3)))
        return ("company.created", f"Company {e.name} added to CRM ({s['industry']}, {s['country']})",
                dict(s), e.name, [f"New {s['industry']} company with about {s['employees']} employees."])
    r = rng.random()
    if r < 0.45:
        old = s["employees"]
        s["employees"] = min(250000, max(1, int(old * rng.uniform(0.9, 1.1)) + rint(rng, -2, 3)))
        return ("company.headcount_updated", f"{e.name} headcount changed from {old} to {s['employees']}",
                {"employees": s["employees"]}, e.name, [f"Headcount source: public filing, previous value {old}."])
    if r < 0.7:
        s["industry"] = pick(rng, INDUSTRIES)
        s["tags"] = rng.sample(["customer", "vendor", "partner", "prospect", "enterprise", "smb"], rint(rng, 1, 3))
        return ("company.profile_updated", f"Profile of {e.name} updated: industry {s['industry']}",
                {"industry": s["industry"], "tags": s["tags"]}, e.name, ["Profile refreshed from the enrichment service."])
    if r < 0.85:
        s["active"] = not s["active"]
        what = "reactivated" if s["active"] else "marked inactive"
        return ("company.status_changed", f"{e.name} {what}", {"active": s["active"]}, e.name,
                [f"Account {what} after review by {person_name(rng, ctx)}."])
    s["country"] = pick(rng, COUNTRIES)
    return ("company.moved", f"{e.name} headquarters now in {s['country']}", {"country": s["country"], "vat_id": None},
            e.name, ["Country changed; the VAT id must be re-verified, so it is cleared."])


def gen_person(e: Entity, rng, ts, ctx):
    s = e.state
    if not s:
        s.update(name=e.name, email=f"{e.key}@{pick(rng, ctx.domains)}", role=pick(rng, ROLES),
                 timezone=pick(rng, TIMEZONES), phone=f"+{rint(rng, 1, 99)} {rint(rng, 10, 999)} {rint(rng, 100000, 9999999)}",
                 active=True)
        return ("person.created", f"Contact {e.name} ({s['role']}) created", dict(s), e.name,
                [f"Contact details taken from an email signature; timezone {s['timezone']}."])
    r = rng.random()
    if r < 0.4:
        old = s["role"]
        s["role"] = pick(rng, ROLES)
        return ("person.role_changed", f"{e.name} changed role: {old} \u2192 {s['role']}", {"role": s["role"]},
                e.name, [f"Announced on LinkedIn; previous role was {old}."])
    if r < 0.7:
        s["email"] = f"{e.key}.{rint(rng, 1, 99)}@{pick(rng, ctx.domains)}"
        return ("person.updated", f"New email address for {e.name}", {"email": s["email"]}, e.name,
                ["The old address bounced twice; the new one was confirmed by reply."])
    if r < 0.85:
        s["timezone"] = pick(rng, TIMEZONES)
        return ("person:timezone", f"{e.name} now works from {s['timezone']}", {"timezone": s["timezone"]}, e.name,
                ["Calendar invitations should use the new timezone."])
    s["active"] = not s["active"]
    return ("person.status_changed", f"{e.name} is {'active' if s['active'] else 'no longer active'}",
            {"active": s["active"], "phone": None if not s["active"] else s["phone"]}, e.name,
            ["Access reviewed accordingly."])


def gen_project(e: Entity, rng, ts, ctx):
    s = e.state
    if not s:
        s.update(name=e.name, status="planned", budget=float(rint(rng, 10, 499) * 1000),
                 owner=person_name(rng, ctx), due=day(ts + rint(rng, 30, 200) * 86400))
        return ("project.created", f"Project {e.name} created, owner {s['owner']}", dict(s), e.name,
                [f"Budget {s['budget']:.0f} approved, due {s['due']}."])
    r = rng.random()
    if r < 0.5:
        old = s["status"]
        s["status"] = pick(rng, ["planned", "active", "paused", "done", "active"])
        return ("project.status_changed", f"Project {e.name}: {old} \u2192 {s['status']}", {"status": s["status"]},
                e.name, [f"Status changed in the {pick(rng, ['weekly', 'monthly'])} review."])
    if r < 0.75:
        s["budget"] = round(min(5e6, max(5000.0, s["budget"] * rng.uniform(0.85, 1.15))), 2)
        return ("project.budget_updated", f"Budget of {e.name} is now {s['budget']:.2f}", {"budget": s["budget"]},
                e.name, ["Budget revision approved by finance."])
    s["due"] = day(ts + rint(rng, 10, 120) * 86400)
    return ("project.rescheduled", f"{e.name} rescheduled to {s['due']}", {"due": s["due"]}, e.name,
            ["Dependencies slipped; new date agreed with stakeholders."])


def gen_repo(e: Entity, rng, ts, ctx):
    s = e.state
    if not s:
        s.update(name=e.name, default_branch="main", language=pick(rng, LANGUAGES), stars=rint(rng, 0, 300),
                 archived=False, visibility=pick(rng, ["private", "internal", "public"]))
        return ("repo.created", f"Repository {e.name} registered ({s['language']})", dict(s), e.name,
                ["Imported from the code host."])
    r = rng.random()
    if r < 0.55:
        n = rint(rng, 1, 12)
        sha = hashlib.sha1(f"{e.eid}{ts}".encode()).hexdigest()
        s["last_commit"] = sha[:12]
        s["stars"] += rint(rng, 0, 3)
        return ("repo.pushed", f"{n} commit(s) pushed to {e.name}@{s['default_branch']} (head {sha[:7]})",
                {"last_commit": s["last_commit"], "stars": s["stars"]}, e.name,
                [f"Head is now `{sha[:12]}`.", f"CI status: {pick(rng, ['passed', 'failed', 'pending'])}."])
    if r < 0.7:
        s["language"] = pick(rng, LANGUAGES)
        return ("repo:language_detected", f"Primary language of {e.name} is {s['language']}", {"language": s["language"]},
                e.name, ["Detected from file statistics."])
    if r < 0.85:
        s["visibility"] = pick(rng, ["private", "internal", "public"])
        return ("repo.visibility_changed", f"{e.name} visibility set to {s['visibility']}", {"visibility": s["visibility"]},
                e.name, ["Changed by an administrator."])
    s["archived"] = not s["archived"]
    return ("repo.archived" if s["archived"] else "repo.unarchived", f"{e.name} {'archived' if s['archived'] else 'unarchived'}",
            {"archived": s["archived"]}, e.name, ["Archive state toggled."])


def gen_contract(e: Entity, rng, ts, ctx):
    s = e.state
    if not s:
        start = ts + rint(rng, -30, 30) * 86400
        s.update(title=f"{pick(rng, DOC_TITLES)} {e.name}", value=money(rng, 1000, 250000),
                 currency=pick(rng, CURRENCIES), start=day(start), end=day(start + 365 * 86400),
                 status="draft", renewal=rng.random() < 0.5)
        return ("contract.drafted", f"Contract {e.name} drafted: {s['value']:.2f} {s['currency']}", dict(s), e.name,
                [f"Term {s['start']} to {s['end']}."])
    r = rng.random()
    if r < 0.5:
        s["status"] = pick(rng, ["signed", "signed", "expired", "terminated", "under_review"])
        fields = {"status": s["status"]}
        if s["status"] == "signed":
            fields["signed_on"] = day(ts)
        return ("contract.status_changed", f"Contract {e.name} is now {s['status']}", fields, e.name,
                ["Signature status taken from the e-signature provider."])
    s["value"] = money(rng, 1000, 250000)
    return ("contract.amended", f"Contract {e.name} amended: value {s['value']:.2f} {s['currency']}",
            {"value": s["value"], "renewal": rng.random() < 0.5}, e.name, ["Amendment attached to the original."])


def gen_invoice(e: Entity, rng, ts, ctx):
    s = e.state
    if not s:
        vendor = pick(rng, ctx.company_names)
        total = money(rng, 20, 20000)
        inv_date = day(ts - rint(rng, 0, 10) * 86400)
        s.update(vendor=vendor, total=total, currency=pick(rng, CURRENCIES), invoice_date=inv_date,
                 due_date=day(ts + pick(rng, [14, 30, 45, 60]) * 86400), status="open",
                 po_number=f"PO-{rint(rng, 100, 9999)}", line_items=rint(rng, 1, 40))
        return ("invoice.parsed", f"Invoice {e.name} from {vendor} parsed: total {total:.2f} {s['currency']}", dict(s),
                f"Invoice {e.name}",
                [f"Parsed from the PDF attachment of message {rint(rng, 1000, 99999)}.",
                 "Line items matched the PO." if rng.random() < 0.7 else "Two line items did not match the PO."])
    r = rng.random()
    if r < 0.4:
        s["status"] = "paid"
        return ("invoice.paid", f"Invoice {e.name} paid ({s['total']:.2f} {s['currency']})",
                {"status": "paid", "paid_at": iso(ts)}, f"Invoice {e.name}",
                [f"Payment matched on bank statement line {rint(rng, 1, 400)}."])
    if r < 0.6:
        s["status"] = pick(rng, ["overdue", "disputed", "open"])
        return ("invoice.status_changed", f"Invoice {e.name} is {s['status']}", {"status": s["status"], "paid_at": None},
                f"Invoice {e.name}", ["Reminder sent to the vendor contact."])
    if r < 0.85:
        old = s["total"]
        s["total"] = round(min(100000.0, max(1.0, old + pick(rng, [-1, 1]) * rng.uniform(0.01, old * 0.1))), 2)
        return ("invoice.corrected_total", f"Total of {e.name} re-read as {s['total']:.2f} (was {old:.2f})",
                {"total": s["total"]}, f"Invoice {e.name}", ["OCR misread a digit in the first pass."])
    return ("invoice:note", f"Note on {e.name}: {pick(rng, SNIPPETS)}", {"note": pick(rng, SNIPPETS)},
            f"Invoice {e.name}", ["Free-text note from the accounts payable inbox."])


def gen_task(e: Entity, rng, ts, ctx):
    s = e.state
    if not s:
        s.update(title=e.name, status="todo", assignee=person_name(rng, ctx),
                 priority_label=pick(rng, ["low", "medium", "high", "urgent"]),
                 estimate_hours=float(pick(rng, [0.5, 1, 2, 3, 5, 8, 13])), labels=rng.sample(LABELS, rint(rng, 0, 3)),
                 due=day(ts + rint(rng, 1, 60) * 86400))
        return ("task.created", f"Task created: {e.name} (assigned to {s['assignee']})", dict(s), e.name,
                [f"Created from a {pick(rng, ['bug report', 'customer request', 'planning session', 'chat message'])}."])
    r = rng.random()
    if r < 0.45:
        old = s["status"]
        s["status"] = pick(rng, [x for x in TASK_STATUS if x != old])
        fields = {"status": s["status"]}
        if s["status"] == "blocked":
            fields["blocked_reason"] = pick(rng, ["waiting on vendor", "needs design", "CI broken", "on: hold"])
        elif old == "blocked":
            fields["blocked_reason"] = None
        return ("task.status_changed", f"Task '{e.name}' moved {old} \u2192 {s['status']}", fields, e.name,
                [f"Moved by {person_name(rng, ctx)}."])
    if r < 0.65:
        s["assignee"] = person_name(rng, ctx)
        return ("task.updated", f"Task '{e.name}' reassigned to {s['assignee']}", {"assignee": s["assignee"]}, e.name,
                ["Reassigned during triage."])
    if r < 0.8:
        s["estimate_hours"] = float(pick(rng, [0.5, 1, 2, 3, 5, 8, 13, 21]))
        s["labels"] = rng.sample(LABELS, rint(rng, 0, 4))
        return ("task.updated", f"Task '{e.name}' re-estimated at {s['estimate_hours']}h",
                {"estimate_hours": s["estimate_hours"], "labels": s["labels"]}, e.name, ["Estimate revised after a spike."])
    if r < 0.9:
        s["priority_label"] = pick(rng, ["low", "medium", "high", "urgent"])
        return ("task:priority", f"Priority of '{e.name}' set to {s['priority_label']}",
                {"priority_label": s["priority_label"]}, e.name, ["Priority changed in planning."])
    return ("task.commented", f"Comment on '{e.name}': {pick(rng, SNIPPETS)}", {"comments": e.nobs}, e.name,
            [f"> {pick(rng, SNIPPETS)}", f"\u2014 {person_name(rng, ctx)}"])


def gen_incident(e: Entity, rng, ts, ctx):
    s = e.state
    if not s:
        s.update(title=f"{pick(rng, SERVICES)} {pick(rng, ['degraded', 'down', 'slow', 'erroring'])}",
                 severity=pick(rng, SEVERITIES), status="open", service=pick(rng, SERVICES),
                 customer_impact=rng.random() < 0.5, opened_at=iso(ts))
        return ("incident.opened", f"Incident {e.name} opened: {s['title']} ({s['severity']})", dict(s),
                f"Incident {e.name}", [f"Paged the on-call engineer {person_name(rng, ctx)}."])
    r = rng.random()
    if r < 0.4:
        s["status"] = pick(rng, ["mitigated", "resolved", "open", "monitoring"])
        fields = {"status": s["status"]}
        if s["status"] == "resolved":
            fields["duration_minutes"] = rint(rng, 3, 600)
        return ("incident.status_changed", f"Incident {e.name} {s['status']}", fields, f"Incident {e.name}",
                ["Timeline updated in the incident channel."])
    if r < 0.7:
        s["severity"] = pick(rng, SEVERITIES)
        return ("incident.severity_changed", f"Incident {e.name} severity now {s['severity']}", {"severity": s["severity"]},
                f"Incident {e.name}", ["Severity re-assessed after impact analysis."])
    update = pick(rng, ['root cause found', 'rollback started', 'customers notified', 'fix deployed'])
    return ("incident.updated", f"Update on {e.name}: {update}",
            {"customer_impact": rng.random() < 0.5, "updates": e.nobs}, f"Incident {e.name}",
            ["Status page updated."])


def gen_meeting(e: Entity, rng, ts, ctx):
    s = e.state
    if not s:
        att = sorted({person_name(rng, ctx) for _ in range(rint(rng, 2, 6))})
        s.update(title=e.name, date=day(ts + rint(rng, 0, 14) * 86400), attendees=att,
                 duration_minutes=pick(rng, [15, 30, 45, 60, 90]), notes_url=f"https://notes.example/{e.key}")
        return ("meeting.scheduled", f"{e.name} scheduled for {s['date']} with {len(att)} attendees", dict(s), e.name,
                ["Agenda:", "", "- status updates", "- open questions", "- next steps"])
    s["date"] = day(ts + rint(rng, 1, 14) * 86400)
    return ("meeting.rescheduled" if rng.random() < 0.5 else "meeting.notes_added", f"{e.name}: moved to {s['date']}",
            {"date": s["date"], "minutes_taken": rng.random() < 0.5}, e.name, ["Calendar invitation updated."])


def gen_document(e: Entity, rng, ts, ctx):
    s = e.state
    if not s:
        s.update(title=e.name, format=pick(rng, ["pdf", "docx", "md", "xlsx"]), pages=rint(rng, 1, 120),
                 language=pick(rng, ["en", "de", "fr", "no", "ja"]),
                 checksum="sha256:" + hashlib.sha256(f"{e.eid}{ts}".encode()).hexdigest()[:32])
        return ("document.indexed", f"Document '{e.name}' indexed ({s['pages']} pages, {s['format']})", dict(s), e.name,
                ["Text extracted and indexed for search."])
    s["pages"] += rint(rng, -2, 8)
    s["pages"] = min(500, max(1, s["pages"]))
    s["checksum"] = "sha256:" + hashlib.sha256(f"{e.eid}{ts}{e.nobs}".encode()).hexdigest()[:32]
    return ("document.revised", f"New revision of '{e.name}': {s['pages']} pages",
            {"pages": s["pages"], "checksum": s["checksum"]}, e.name, ["Diff against the previous revision attached."])


GENERATORS = {
    "company": gen_company, "person": gen_person, "project": gen_project, "repo": gen_repo,
    "contract": gen_contract, "invoice": gen_invoice, "task": gen_task, "incident": gen_incident,
    "meeting": gen_meeting, "document": gen_document,
}


# --------------------------------------------------------------------------------------
# documents


class Context:
    def __init__(self, rng: random.Random, entities: list[Entity], tenants: list[dict]) -> None:
        self.rng = rng
        self.entities = entities
        self.tenants = tenants
        self.person_names = [e.name for e in entities if e.etype == "person"] or ["Alice Martin"]
        self.company_names = [e.name for e in entities if e.etype == "company"] or ["Acme Corp"]
        self.domains = ["example.com", "mail.example", "corp.example"] + [
            f"{e.key}.example" for e in entities if e.etype == "company"][:20]
        self.repo_names = [e.name for e in entities if e.etype == "repo"] or ["api"]
        # (tenant, type) -> entities observed so far, in order of first observation
        self.seen: dict[tuple[int, str], list[Entity]] = {}
        self.hashes: set[str] = set()  # tenant key + content hash
        self.ids: set[str] = set()
        self.written: list[tuple[str, int]] = []  # (id, tenant index) of every observation, in order
        self.run = 0


_FILL = {
    "src": lambda rng, ctx: pick(rng, ["the source system", "an email", "a scanned PDF", "the API", "a chat thread"]),
    "person": lambda rng, ctx: person_name(rng, ctx),
    "s": lambda rng, ctx: rint(rng, 1, 300),
    "n": lambda rng, ctx: rint(rng, 1, 500),
    "m": lambda rng, ctx: rint(rng, 1, 50),
    "pct": lambda rng, ctx: rint(rng, 1, 40),
    "channel": lambda rng, ctx: pick(rng, CHANNELS),
    "label": lambda rng, ctx: pick(rng, LABELS),
    "room": lambda rng, ctx: pick(rng, ["billing", "ops", "random", "incidents", "sales-emea"]),
}
_FILL_KEYS = {t: re.findall(r"\{(\w+)\}", t) for t in FILLER}


def fill(rng: random.Random, ctx: Context, template: str) -> str:
    keys = _FILL_KEYS[template]
    if not keys:
        return template
    return template.format(**{k: _FILL[k](rng, ctx) for k in keys})


def make_body(rng: random.Random, ctx: Context, title: str | None, lines: list[str], seq: int) -> str:
    if title is None and rng.random() < 0.25:
        return ""  # log events may have an empty body
    out = [""]
    if title is not None:
        out += [f"# {title}", ""]
    out += lines
    n = pick(rng, [0, 1, 1, 2, 2, 3, 4])
    if n:
        out.append("")
        out.append(" ".join(fill(rng, ctx, t) for t in rng.sample(FILLER, n)))
    style = rng.random()
    if style < 0.15:
        out += ["", "| key | value |", "|---|---|",
                f"| run | {ctx.run} |", f"| seq | {seq} |"]
    elif style < 0.3:
        out += ["", "Checklist:", ""] + [f"- [{'x' if rng.random() < 0.5 else ' '}] {fill(rng, ctx, pick(rng, FILLER))}"
                                        for _ in range(rint(rng, 1, 3))]
    elif style < 0.38:
        out += ["", "```json", flow_json({"seq": seq, "ok": rng.random() < 0.8}), "```"]
    elif style < 0.45:
        out += ["", f"_Observed by run {ctx.run}, item {seq}._"]
    return "\n".join(out) + "\n"


def tenant_yaml(t: dict, block: bool) -> list[str]:
    if block:
        return ["tenant:"] + [f"  {k}: {v}" for k, v in t.items()]
    return ["tenant: {" + ", ".join(f"{k}: {v}" for k, v in t.items()) + "}"]


def pick_seen(rng, ctx: Context, tenant: int, types: list[str], exclude: Entity, below: int | None = None):
    etype = pick(rng, types)
    pool = ctx.seen.get((tenant, etype))
    if not pool:
        return None
    for _ in range(3):
        cand = pool[rpos(rng, len(pool))]
        if cand is exclude:
            continue
        if below is not None and cand.idx >= below:
            continue
        return cand
    return None


def build_document(rng: random.Random, ctx: Context, ent: Entity | None, ts: int, seq: int,
                   valid: tuple[int, int | None] | None = None) -> tuple[str, bytes]:
    """One observation: returns (path, bytes); `valid`: its period (from, until or None)."""
    front: dict = {}
    lines: list[str] = []
    plain = rng.random() < 0.5  # this document's writer prefers plain scalars where safe
    tenant_idx = ent.tenant if ent is not None else (rpos(rng, len(ctx.tenants)) if ctx.tenants and rng.random() < 0.75 else -1)

    if ent is not None:
        otype, event, fields, title, body_lines = GENERATORS[ent.etype](ent, rng, ts, ctx)
        source = pick(rng, SOURCES[ent.etype])
        if ent.eid == HOT_ENTITY:
            fields = dict(fields, hot_seq=ent.nobs)
        scope = [ent.eid]
    else:
        otype, source, seed, template = pick(rng, LOG_EVENTS)
        ctx.run += rng.random() < 0.1
        event = template.format(
            n=rint(rng, 1, 20000), mb=rint(rng, 1, 90000), s=rint(rng, 1, 3600), k=rint(rng, 1, 64),
            err=pick(rng, ERRORS), load=round(rng.uniform(0, 8), 2), m=rint(rng, 0, 300),
            repo=pick(rng, ctx.repo_names), build=rint(rng, 100, 99999), env=pick(rng, ENVS),
            alert=pick(rng, ALERTS), svc=pick(rng, SERVICES), ms=rint(rng, 200, 9000),
            person=person_name(rng, ctx), snippet=pick(rng, SNIPPETS),
            email=f"{slug(person_name(rng, ctx))}@{pick(rng, ctx.domains)}", subject=pick(rng, SUBJECTS),
            run=f"run-{day(ts)}-{ctx.run}", date=day(ts), amount=money(rng, 10, 9000), cur=pick(rng, CURRENCIES),
        )
        fields, title, body_lines = None, None, [event + "."] if rng.random() < 0.6 else []
        scope = [seed]
        if rng.random() < 0.5:
            scope.append(pick(rng, ["ops/oncall", "team/platform", "team/finance", "system/backup", "inbox/shared"]))
        pool = ctx.seen.get((tenant_idx, pick(rng, ["repo", "company", "person"])))
        if pool and rng.random() < 0.5:
            scope.append(pool[rpos(rng, len(pool))].eid)
        scope = list(dict.fromkeys(scope))

    lines.append("spec: observation/v1")
    lines.append("id: ")  # filled in once the content hash is known
    lines.append(f"timestamp: {iso(ts)}")
    front["timestamp"] = iso(ts)
    lines.append(f"source: {source}")
    front["source"] = source
    lines.append(f"event: {q(event)}")
    front["event"] = event
    if rng.random() < 0.95:
        lines.append(f"type: {otype}")
        front["type"] = otype

    relations: list[dict] = []
    if ent is not None:
        # PART_OF the entity's parent (chosen once), REFERS_TO / DEPENDS_ON now and then
        if ent.etype in PART_OF and (ent.parent is None and rng.random() < 0.9 or rng.random() < 0.05):
            if ent.parent is None:
                target = pick_seen(rng, ctx, ent.tenant, PART_OF[ent.etype], ent)
                if target is not None:
                    ent.parent = target.eid
            if ent.parent is not None:
                relations.append({"type": "PART_OF", "target": ent.parent})
        if ent.etype in DEPENDS_ON and rng.random() < 0.15:
            target = pick_seen(rng, ctx, ent.tenant, DEPENDS_ON[ent.etype], ent,
                               below=ent.idx if ent.etype == "task" else None)
            if target is not None:
                relations.append({"type": "DEPENDS_ON", "target": target.eid})
        if rng.random() < 0.2:
            target = pick_seen(rng, ctx, ent.tenant, REFERS_TO[ent.etype], ent)
            if target is not None:
                relations.append({"type": "REFERS_TO", "target": target.eid})
        uniq: dict[tuple, dict] = {}
        for rel in relations:
            uniq.setdefault((rel["type"], rel["target"]), rel)
        relations = list(uniq.values())
        for rel in relations:
            if rel["target"] not in scope and rng.random() < 0.7:
                scope.append(rel["target"])

    if rng.random() < 0.5:
        lines.append("scope: [" + ", ".join(scope) + "]")
    else:
        lines.append("scope:")
        lines += [f"  - {s}" for s in scope]
    front["scope"] = scope

    if ent is not None:
        lines.append(f"entity: {ent.eid}")
        front["entity"] = ent.eid
        lines.append("fields:")
        for k, v in fields.items():
            lines.append(f"  {k}: {scalar(v, plain)}")
        front["fields"] = fields
        if valid is not None:
            lines += ["valid:", f"  from: {iso(valid[0])}"] + ([f"  until: {iso(valid[1])}"] if valid[1] else [])
            front["valid"] = {"from": iso(valid[0]), **({"until": iso(valid[1])} if valid[1] else {})}

    r = rng.random()
    if r < 0.25:
        prio = 100
    elif r < 0.45:
        prio = 0
    else:
        prio = None
    if prio is None and source.startswith("agent") and rng.random() < 0.5:
        prio = 0
    if prio is not None:
        lines.append(f"priority: {prio}")
        front["priority"] = prio
    if rng.random() < 0.55:
        spec_v = pick(rng, [0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 0.95, 1.0, 0.0])
        lines.append(f"specificity: {spec_v!r}")
        front["specificity"] = spec_v
    if tenant_idx >= 0:
        t = ctx.tenants[tenant_idx]
        lines += tenant_yaml(t, rng.random() < 0.2)
        front["tenant"] = dict(t)
    if rng.random() < 0.7:
        cls = rng.choices(["public", "internal", "confidential", "restricted"], [2, 6, 3, 1])[0]
        lines.append(f"classification: {cls}")
        front["classification"] = cls
    if rng.random() < 0.5:
        kind = rng.random()
        if kind < 0.4:
            ref = f"mail/{day(ts)}/msg-{rint(rng, 100, 99999)}.eml"
        elif kind < 0.7:
            ref = f"https://tracker.example/items/{rint(rng, 1, 99999)}"
        elif kind < 0.85:
            ref = f"s3://raw-inbox/{day(ts)}/{hashlib.md5(str(seq).encode()).hexdigest()[:10]}.pdf"
        else:
            ref = f"telegram:chat/{rint(rng, 1000, 9999)}/msg/{rint(rng, 1, 99999)}"
        lines.append(f"source_ref: {scalar(ref, plain)}")
        front["source_ref"] = ref
    if source.startswith("agent") and rng.random() < 0.6 or rng.random() < 0.1:
        interp = f"run-{day(ts)}-{pick(rng, ['llm', 'ocr', 'rules'])}-{rint(rng, 1, 40)}"
        lines.append(f"interpretation: {interp}")
        front["interpretation"] = interp
    if rng.random() < (0.5 if ent is None else 0.12):
        data = {"seq": seq, "ok": rng.random() < 0.9, "duration_ms": rint(rng, 1, 60000)}
        if rng.random() < 0.5:
            data["items"] = [pick(rng, SNIPPETS) for _ in range(rint(rng, 0, 3))]
        if rng.random() < 0.3:
            data["meta"] = {"host": f"worker-{rint(rng, 1, 64)}", "ratio": round(rng.random(), 3), "note": None}
        if rng.random() < 0.2:
            data["message"] = pick(rng, SNIPPETS)
        lines.append("data: " + flow_json(data))
        front["data"] = data
    if relations:
        lines.append("relations:")
        for rel in relations:
            if rng.random() < 0.75:
                lines.append(f"  - {{type: {rel['type']}, target: {rel['target']}}}")
            else:
                lines += [f"  - type: {rel['type']}", f"    target: {rel['target']}"]
        front["relations"] = relations
    if rng.random() < 0.2:
        context = {"task": pick(rng, ["extract-invoices", "triage", "sync-crm", "summarize-chat", "nightly-report"]),
                   "attempt": rint(rng, 1, 3)}
        if rng.random() < 0.4:
            context["session"] = f"s-{rint(rng, 10000, 99999)}"
        if rng.random() < 0.3:
            context["tools"] = rng.sample(["ocr", "llm", "search", "sql", "http"], 2)
        lines.append("context:")
        for k, v in context.items():
            lines.append(f"  {k}: {scalar(v, plain)}")
        front["context"] = context
    if rng.random() < 0.15:
        trace = f"otel:{hashlib.sha256(f'{seq}-{ts}'.encode()).hexdigest()[:32]}"
        lines.append(f"trace_ref: {trace}")
        front["trace_ref"] = trace

    body = make_body(rng, ctx, title, body_lines, seq)
    canonical = canonical_json(front)
    tenant_key = str(tenant_idx) + ":"
    stamp = iso(ts).replace("-", "").replace(":", "").replace("T", "-")[:15]
    while True:
        digest = hashlib.sha256((canonical + "\n" + body.rstrip()).encode("utf-8")).hexdigest()
        obs_id = f"obs-{stamp}-{digest[:8]}"
        if tenant_key + digest not in ctx.hashes and obs_id not in ctx.ids:
            break
        body = body.rstrip() + f"\n\n(item {seq})\n"  # practically never: make the content distinct
    ctx.hashes.add(tenant_key + digest)
    ctx.ids.add(obs_id)
    ctx.written.append((obs_id, tenant_idx))
    lines[1] = f"id: {obs_id}"

    if ent is not None:
        ent.nobs += 1
        if ent.nobs == 1:
            ctx.seen.setdefault((ent.tenant, ent.etype), []).append(ent)
    text = "---\n" + "\n".join(lines) + "\n---\n" + body
    path = f"observations/{stamp[0:4]}/{stamp[4:6]}/{stamp[6:8]}/{obs_id}.md"
    return path, text.encode("utf-8")


class TimeOptions:
    """`--periods`, `--disputes`, `--no-valid`, each with its own random stream."""

    def __init__(self, seed: int, periods: float, disputes: float, valid: bool) -> None:
        self.periods, self.disputes, self.valid = periods, disputes, valid
        self.prng, self.drng = random.Random(seed * 104729 + 3), random.Random(seed * 7877 + 5)

    def period(self, ts: int) -> tuple[int, int | None] | None:
        if self.periods <= 0 or self.prng.random() >= self.periods:
            return None
        start = max(86400, ts + rint(self.prng, -30 * 86400, 30 * 86400))
        until = start + rint(self.prng, 86400, 90 * 86400) if self.prng.random() < 0.8 else None
        return (start, until) if self.valid else None


def second_opinion(rng: random.Random, ctx: Context, ent: Entity, ts: int, original: bytes) -> tuple[str, bytes]:
    """Another source's reading of `ent` at `ts`, at the original's priority (see --disputes)."""
    _otype, _event, fields, _title, _body = GENERATORS[ent.etype](ent, rng, ts, ctx)
    priority = re.search(rb"\npriority: (\d+)\n", original.split(b"\n---\n", 1)[0] + b"\n")
    lines = ["spec: observation/v1", "id: ", f"timestamp: {iso(ts)}", "source: agent/second-opinion",
             f"event: {q('Second opinion on ' + ent.eid)}", f"type: {ent.etype}.reviewed", f"scope: [{ent.eid}]",
             f"entity: {ent.eid}", "fields:"] + [f"  {k}: {scalar(v, True)}" for k, v in fields.items()]
    if priority:
        lines.append(f"priority: {priority.group(1).decode()}")
    if ent.tenant >= 0:
        lines += tenant_yaml(ctx.tenants[ent.tenant], False)
    body = f"\nA second reading of {ent.eid}.\n"
    stamp = iso(ts).replace("-", "").replace(":", "").replace("T", "-")[:15]
    digest = hashlib.sha256(("\n".join(lines[2:]) + body).encode("utf-8")).hexdigest()
    while f"obs-{stamp}-{digest[:8]}" in ctx.ids:
        digest = hashlib.sha256(digest.encode()).hexdigest()
    obs_id = f"obs-{stamp}-{digest[:8]}"
    ctx.ids.add(obs_id)
    ctx.written.append((obs_id, ent.tenant))
    lines[1] = f"id: {obs_id}"
    text = "---\n" + "\n".join(lines) + "\n---\n" + body
    return f"observations/{stamp[0:4]}/{stamp[4:6]}/{stamp[6:8]}/{obs_id}.md", text.encode("utf-8")


OUTCOMES = ["accepted"] * 10 + ["rejected"] * 4 + ["rework"] * 3 + ["misleading"] * 3
HOT_TARGETS = 200  # a share of the feedback goes to a few observations (some pass 3 `misleading`)


def build_feedback(frng: random.Random, ctx: Context, ts: int, seq: int) -> tuple[str, bytes]:
    """One feedback observation on an observation written earlier, in its tenant (docs/design.md §14)."""
    pool = ctx.written
    if frng.random() < 0.3:
        target, tenant_idx = pool[rpos(frng, min(HOT_TARGETS, len(pool)))]
    else:
        target, tenant_idx = pool[rpos(frng, len(pool))]
    outcome = pick(frng, OUTCOMES)
    session = f"s-{seq:06d}"
    source = pick(frng, ["agent/ranker", "agent:planner", "human/alice", "agent/triage-bot"])
    event = f"Feedback on {target}: {outcome}"
    front: dict = {"timestamp": iso(ts), "source": source, "event": event, "type": "feedback",
                   "feedback": {"target": target, "outcome": outcome, "session": session}}
    lines = ["spec: observation/v1", "id: ", f"timestamp: {iso(ts)}", f"source: {source}", f"event: {q(event)}",
             "type: feedback", f"feedback: {{target: {target}, outcome: {outcome}, session: {session}}}"]
    if tenant_idx >= 0:
        front["tenant"] = dict(ctx.tenants[tenant_idx])
        lines += tenant_yaml(ctx.tenants[tenant_idx], False)
    digest = hashlib.sha256((canonical_json(front) + "\n").encode("utf-8")).hexdigest()
    stamp = iso(ts).replace("-", "").replace(":", "").replace("T", "-")[:15]
    obs_id = f"obs-{stamp}-{digest[:8]}"
    lines[1] = f"id: {obs_id}"
    return f"observations/{stamp[0:4]}/{stamp[4:6]}/{stamp[6:8]}/{obs_id}.md", ("---\n" + "\n".join(lines) + "\n---\n").encode()


# --------------------------------------------------------------------------------------
# the plan: which observation goes into which commit


def regular_exists(entities: list[Entity]) -> bool:
    return any(e.eid != HOT_ENTITY for e in entities)


def plan(rng: random.Random, n: int, commits: int, entities: list[Entity]) -> tuple[list[list[Entity | None]], int]:
    hot = next(e for e in entities if e.eid == HOT_ENTITY)
    hot_n = min(50, commits, n // 10)
    rest = n - hot_n
    commits = max(1, min(commits, rest))  # rest >= 1 since hot_n <= n // 10
    log_n = int(rest * 0.12) if regular_exists(entities) else rest
    ent_n = rest - log_n
    regular = [e for e in entities if e is not hot]
    # skewed popularity: a power law over a shuffled order, scaled by type
    order = list(range(len(regular)))
    rng.shuffle(order)
    weights = [0.0] * len(regular)
    for r, i in enumerate(order):
        weights[i] = TYPES[regular[i].etype][2] / (r + 10)
    if ent_n >= len(regular):
        for e in regular:
            e.count = 1
        extra = ent_n - len(regular)
        if extra:
            cum, acc = [], 0.0
            for w in weights:
                acc += w
                cum.append(acc)
            for i in rng.choices(range(len(regular)), cum_weights=cum, k=extra):
                regular[i].count += 1
    else:
        for i in sorted(range(len(regular)), key=lambda i: -weights[i])[:ent_n]:
            regular[i].count = 1
    items: list[tuple[float, int]] = []
    for e in regular:
        if not e.count:
            continue
        limit = {0: 0.25, 1: 0.5}.get(e.rank, 0.9)
        b = rng.random() * limit
        e.birth = b
        items.append((b, e.idx))
        items.extend((b + (1 - b) * rng.random(), e.idx) for _ in range(e.count - 1))
    items.extend((rng.random(), -1) for _ in range(log_n))
    items.sort()
    seq = [entities[i] if i >= 0 else None for _, i in items]

    cuts = sorted(rng.sample(range(1, rest), commits - 1)) if commits > 1 else []
    bounds = [0] + cuts + [rest]
    batches = [seq[bounds[c]:bounds[c + 1]] for c in range(commits)]
    for k in range(hot_n):
        c = (k * commits) // hot_n
        batches[c].insert(rint(rng, 0, len(batches[c])), hot)
    return batches, hot_n


# --------------------------------------------------------------------------------------
# git

AUTHORS = [
    ("obsrepo bench", "bench@obsrepo.example"),
    ("Billing Bot", "billing-bot@northwind.example"),
    ("Alice Martin", "alice@northwind.example"),
    ("CRM Sync", "crm-sync@contoso.example"),
    ("Bob Nguyen", "bob@contoso.example"),
]
MESSAGES = [
    "Add {n} observations from {src}",
    "ingest: {src} batch {c} ({n} observations)",
    "obs: {n} new observations",
    "Merge pull request #{pr} from agents/{src}-{c}",
    "chore(obs): nightly import {date}",
]


def git_env() -> dict:
    env = dict(os.environ)
    env.update(
        GIT_AUTHOR_NAME=AUTHORS[0][0], GIT_AUTHOR_EMAIL=AUTHORS[0][1], GIT_AUTHOR_DATE=f"{START} +0000",
        GIT_COMMITTER_NAME=AUTHORS[0][0], GIT_COMMITTER_EMAIL=AUTHORS[0][1], GIT_COMMITTER_DATE=f"{START} +0000",
        GIT_CONFIG_NOSYSTEM="1", LC_ALL="C",
    )
    return env


def run_git(out: str, *args: str, env: dict) -> None:
    subprocess.run(["git", "-C", out, *args], check=True, env=env, stdout=subprocess.DEVNULL)


def generate(out: str, n: int, commits: int, seed: int, n_entities: int, n_tenants: int,
             feedback: int = 0, timed: TimeOptions | None = None) -> tuple[int, int, float]:
    """Build the repository; returns (files, commits, the perf_counter time fast-import finished)."""
    rng = random.Random(seed)
    tenants = [dict(TENANTS[i]) if i < len(TENANTS) else {"org": f"org-{i}", "project": f"p{i % 5}"}
               for i in range(n_tenants)]
    entities = make_entities(rng, max(n_entities, 1), n_tenants)
    batches, _hot_n = plan(rng, n, commits, entities)
    ctx = Context(rng, entities, tenants)

    env = git_env()
    os.makedirs(out, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", out], check=True, env=env)
    run_git(out, "config", "core.autocrlf", "false", env=env)
    proc = subprocess.Popen(["git", "-C", out, "fast-import", "--quiet", "--done"],
                            stdin=subprocess.PIPE, env=env)
    assert proc.stdin is not None
    try:
        files = stream(proc.stdin.write, rng, ctx, batches, feedback, random.Random(seed * 7919 + 17), timed)
        proc.stdin.close()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    if proc.wait() != 0:
        raise SystemExit("git fast-import failed")
    imported = time.perf_counter()
    subprocess.run(["git", "-C", out, "-c", "checkout.workers=0", "reset", "-q", "--hard", "main"],
                   check=True, env=env)
    return files, len(batches), imported


def stream(write, rng: random.Random, ctx: Context, batches: list[list[Entity | None]], feedback: int = 0,
           frng: random.Random | None = None, timed: TimeOptions | None = None) -> int:
    """Generate every document and write the fast-import stream; returns the file count.
    `feedback` documents (made with `frng` alone, so the other documents do not change) are
    spread over the commits, each on an observation of the same or an earlier commit."""
    total = sum(len(b) for b in batches)
    avg_gap = max(1.0, SPAN / max(total, 1) - 1)
    ts = START
    commit_ts = START
    first = True
    tags: dict[int, list[str]] = {}
    for f, name in ((0.25, "v0.1"), (0.5, "v0.2"), (0.75, "v0.3")):
        tags.setdefault(max(0, round(len(batches) * f) - 1), []).append(name)
    files = 0
    for c, batch in enumerate(batches):
        parts: list[bytes] = []
        for ent in batch:
            if not first and rng.random() >= 0.03:
                ts += 1 + int(rng.expovariate(1 / avg_gap))
            first = False
            period = timed.period(ts) if timed is not None and ent is not None else None
            path, data = build_document(rng, ctx, ent, ts, files, period)
            files += 1
            parts.append(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
            if timed is not None and ent is not None and timed.disputes > 0 and timed.drng.random() < timed.disputes:
                path, data = second_opinion(timed.drng, ctx, ent, ts + rint(timed.drng, 60, 6 * 3600), data)
                files += 1
                parts.append(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
        regular = len(batch)
        for k in range(feedback * c // len(batches), feedback * (c + 1) // len(batches)):
            if frng is not None and ctx.written:
                path, data = build_feedback(frng, ctx, ts + k % 60, k)
                files += 1
                parts.append(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
        commit_ts = max(commit_ts + 1, ts + rint(rng, 30, 900)) if c else max(START, ts + rint(rng, 30, 900))
        name, email = AUTHORS[rng.choices(range(len(AUTHORS)), [5, 2, 2, 2, 1])[0]]
        msg = pick(rng, MESSAGES).format(
            n=regular, src=pick(rng, ["billing-extractor", "crm-sync", "github", "telegram", "planner"]),
            c=c + 1, pr=100 + c, date=day(commit_ts),
        ).encode() + b"\n"
        head = b"commit refs/heads/main\nmark :%d\nauthor %s <%s> %d +0000\ncommitter %s <%s> %d +0000\ndata %d\n%s" % (
            c + 1, name.encode(), email.encode(), commit_ts, name.encode(), email.encode(), commit_ts, len(msg), msg)
        if c:
            head += b"from :%d\n" % c
        write(head)
        write(b"".join(parts))
        write(b"\n")
        for tag in tags.get(c, ()):
            write(b"reset refs/tags/%s\nfrom :%d\n\n" % (tag.encode(), c + 1))
    write(b"done\n")
    return files


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Generate a synthetic obsrepo repository for benchmarks.")
    p.add_argument("out", metavar="OUT_DIR")
    p.add_argument("--count", "-n", type=int, required=True, help="number of observation files")
    p.add_argument("--commits", "-c", type=int, help="number of commits (default max(10, N // 200))")
    p.add_argument("--seed", "-s", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--entities", "-e", type=int, help="number of entities (default max(50, N // 20))")
    p.add_argument("--tenants", "-t", type=int, default=3, help="number of tenants (default 3; 0 = none)")
    p.add_argument("--feedback", "-f", type=int, default=0,
                   help="also this many feedback observations, spread over the commits (default 0)")
    p.add_argument("--periods", type=float, default=0.0, help="share of entity documents with `valid` (default 0)")
    p.add_argument("--disputes", type=float, default=0.0,
                   help="share of entity documents followed by another source's second opinion (default 0)")
    p.add_argument("--no-valid", action="store_true", help="the same documents without their `valid` keys")
    p.add_argument("--force", action="store_true", help="delete OUT_DIR first if it exists")
    a = p.parse_args(argv)
    if a.count < 1:
        p.error("--count must be at least 1")
    commits = a.commits if a.commits is not None else max(10, a.count // 200)
    entities = a.entities if a.entities is not None else max(50, a.count // 20)
    if commits < 1 or entities < 1 or a.tenants < 0 or a.feedback < 0:
        p.error("--commits and --entities must be at least 1, --tenants and --feedback at least 0")

    out = os.path.abspath(a.out)
    if os.path.lexists(out):
        if not os.path.isdir(out) or os.path.islink(out):
            p.error(f"{out} exists and is not a directory")
        if os.listdir(out):
            if not a.force:
                p.error(f"{out} exists and is not empty (use --force to replace it)")
            here = os.path.abspath(os.getcwd())
            if out in ("/", os.path.expanduser("~")) or here == out or here.startswith(out + os.sep):
                p.error(f"refusing to delete {out}")
            shutil.rmtree(out)

    started = time.perf_counter()
    timed = TimeOptions(a.seed, a.periods, a.disputes, not a.no_valid) if a.periods or a.disputes else None
    files, made, imported = generate(out, a.count, commits, a.seed, entities, a.tenants, a.feedback, timed)
    done = time.perf_counter()
    print(f"generated {out}: {files} files, {made} commits, {entities} entities, {a.tenants} tenants, "
          f"seed {a.seed}, {done - started:.1f}s (generate+fast-import {imported - started:.1f}s, "
          f"checkout {done - imported:.1f}s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
