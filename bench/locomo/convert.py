"""LoCoMo conversations as a git repository of observations (one `git fast-import`, one commit).

Each dialog turn is one observation: scope `conversation/<sample id>`, entity `person/<speaker>`,
timestamp the session's date plus the turn's place in the session in seconds (so the turns of
a session keep their order), the turn's words in `event`, a shared image's caption in the body,
the turn's id (`D3:12`) in `data.turn`. The data set is read from where it lies and never copied
into this repository; what is written goes to the folder given (a scratch directory).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

EPOCH = 1672531200  # the commit's time: 2023-01-01


@dataclass(frozen=True)
class Turn:
    conversation: str
    turn: str  # D<session>:<n>
    speaker: str
    text: str
    caption: str
    when: datetime
    obs_id: str = ""


def load(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def session_time(text: str) -> datetime:
    """`1:56 pm on 8 May, 2023` -> that moment in UTC."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def turns(data: list[dict]) -> list[Turn]:
    found = []
    for sample in data:
        talk = sample["conversation"]
        sessions = sorted(int(m.group(1)) for key in talk if (m := re.fullmatch(r"session_(\d+)", key)))
        for number in sessions:
            start = session_time(talk[f"session_{number}_date_time"])
            for place, turn in enumerate(talk[f"session_{number}"]):
                found.append(Turn(sample["sample_id"], turn["dia_id"], turn["speaker"], turn["text"],
                                  turn.get("blip_caption", ""), start + timedelta(seconds=place)))
    return found


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def document(turn: Turn) -> tuple[str, str, str]:
    """(id, path, text) of the turn's observation."""
    stamp = turn.when.strftime("%Y%m%d-%H%M%S")
    event = " ".join(turn.text.split()) or "(an image)"
    body = f"Shared an image: {turn.caption}\n" if turn.caption else ""
    digest = hashlib.sha256(f"{turn.conversation}\n{turn.turn}\n{event}\n{body}".encode()).hexdigest()
    obs_id = f"obs-{stamp}-{digest[:8]}"
    front = [
        "---", "spec: observation/v1", f"id: {obs_id}", f"timestamp: {turn.when.strftime('%Y-%m-%dT%H:%M:%SZ')}",
        f"source: {json.dumps('human:' + _slug(turn.speaker))}", f"event: {json.dumps(event[:2000], ensure_ascii=False)}",
        "type: chat.turn", f"entity: person/{_slug(turn.speaker)}",
        f"scope: [{json.dumps('conversation/' + turn.conversation)}]",
        f"data: {{turn: {json.dumps(turn.turn)}}}", "---", "",
    ]
    path = f"observations/{stamp[:4]}/{stamp[4:6]}/{stamp[6:8]}/{obs_id}.md"
    return obs_id, path, "\n".join(front) + body


def build(data_path: str, out: str) -> dict[tuple[str, str], str]:
    """The repository at `out` (a fresh folder); returns {(conversation, turn id): observation id}."""
    found = turns(load(data_path))
    env = dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.invalid",
               GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.invalid", GIT_CONFIG_NOSYSTEM="1", LC_ALL="C")
    os.makedirs(out, exist_ok=False)
    subprocess.run(["git", "init", "-q", "-b", "main", out], check=True, env=env)
    ids: dict[tuple[str, str], str] = {}
    parts = []
    for turn in found:
        obs_id, path, text = document(turn)
        ids[(turn.conversation, turn.turn)] = obs_id
        data = text.encode()
        parts.append(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
    message = b"LoCoMo conversations, one observation a turn\n"
    stream = (b"commit refs/heads/main\nauthor bench <bench@example.invalid> %d +0000\n"
              b"committer bench <bench@example.invalid> %d +0000\ndata %d\n%s" % (EPOCH, EPOCH, len(message), message)
              + b"".join(parts) + b"\ndone\n")
    subprocess.run(["git", "-C", out, "fast-import", "--quiet", "--done"], input=stream, check=True, env=env)
    subprocess.run(["git", "-C", out, "reset", "-q", "--hard", "main"], check=True, env=env)
    return ids
