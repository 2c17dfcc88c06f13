"""A cache of per-document analyses, keyed by blob id, kept inside the git directory.

Content-addressed, so an entry can never be stale; keyed also by a digest of the rule code,
so a new version of the rules starts afresh. Only the entries used by the last run are kept.
A missing, unreadable or foreign cache file is simply ignored.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import tempfile
from pathlib import Path

from ..format.rules import Analysis, kind_of
from ..gitstore import Git

# the code whose answers the cache holds (paths under the package): a change to any of them
# discards every cached analysis
_RULE_MODULES = ("format/document.py", "format/model.py", "format/rules.py", "times.py", "format/validate.py")


def _rules_digest() -> str:
    here = Path(__file__).parent.parent
    digest = hashlib.sha256()
    for name in _RULE_MODULES:
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:16]


class AnalysisCache:
    def __init__(self, file: Path | None, entries: dict[str, list], digest: str) -> None:
        self.file = file
        self.entries = entries
        self.digest = digest
        self.used: dict[str, list] = {}
        self.dirty = False

    @classmethod
    def open(cls, git: Git | None) -> AnalysisCache:
        if git is None or os.environ.get("OBSREPO_NO_CACHE"):
            return cls(None, {}, "")
        try:
            git_dir = git.run("rev-parse", "--absolute-git-dir").decode().strip()
        except Exception:  # a broken repository is reported elsewhere; the cache just stays off
            return cls(None, {}, "")
        file = Path(git_dir) / "obsrepo" / "check-cache.marshal"
        digest = _rules_digest()
        try:
            # marshal: plain data only, ~10x faster to load than JSON; the file lives inside
            # the git directory, as trusted as the repository's own hooks
            stored = marshal.loads(file.read_bytes())
            entries = stored["entries"] if stored.get("rules") == digest else {}
        except (OSError, ValueError, EOFError, KeyError, TypeError, AttributeError):
            entries = {}
        return cls(file, entries if isinstance(entries, dict) else {}, digest)

    @staticmethod
    def _key(path: str, sha: str) -> str:
        return f"{kind_of(path)}:{sha}"

    def get(self, path: str, sha: str) -> Analysis | None:
        key = self._key(path, sha)
        row = self.entries.get(key)
        if row is None:
            return None
        try:
            analysis = Analysis.from_cache(path, row)
        except (TypeError, ValueError):
            return None
        self.used[key] = row
        return analysis

    def put(self, path: str, sha: str, analysis: Analysis) -> None:
        key = self._key(path, sha)
        self.used[key] = analysis.to_cache()
        self.dirty = True

    def save(self) -> None:
        if self.file is None or not (self.dirty or len(self.used) != len(self.entries)):
            return
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.file.parent, prefix=".check-cache.")
            with os.fdopen(fd, "wb") as handle:
                handle.write(marshal.dumps({"rules": self.digest, "entries": self.used}))
            os.replace(tmp, self.file)
        except OSError:
            pass  # a read-only git directory only costs speed
