"""Blobs: the id git gives a content, and one `git cat-file --batch` process that reads
many (fed by a writer thread, so reads are pipelined rather than lock-stepped)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading

from ..errors import GitError

GIT_ENV = {"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_NO_REPLACE_OBJECTS": "1"}


def blob_sha(data: bytes) -> str:
    """The id git would give `data` as a blob."""
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class BlobReader:
    """One `git cat-file --batch` process that answers request after request; it ends when
    closed, or when its reader's process ends (its input closes)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.proc: subprocess.Popen[bytes] | None = None

    def read(self, shas: list[str]) -> list[bytes]:
        """The contents of `shas`, in order. After a failure (a missing object) the process
        is closed and the next read starts another: no answer is ever read out of turn."""
        if self.proc is None:
            self.proc = subprocess.Popen(["git", "-C", self.root, "cat-file", "--batch"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=1 << 20,
                                         env={**os.environ, **GIT_ENV})
        stdin, out = self.proc.stdin, self.proc.stdout
        assert stdin is not None and out is not None
        request = "".join(f"{s}\n" for s in shas).encode()

        def feed() -> None:  # on a thread: git may fill its output before it has read every request
            try:
                stdin.write(request)
                stdin.flush()
            except (BrokenPipeError, ValueError):
                pass

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        contents = []
        try:
            for sha in shas:
                header = out.readline().split()
                if len(header) != 3:
                    raise GitError(f"object {sha} is missing from the repository", sha=sha)
                contents.append(out.read(int(header[2])))
                out.read(1)
        except BaseException:
            self._abandon(writer)
            raise
        writer.join()
        return contents

    def _abandon(self, writer: threading.Thread) -> None:
        """After a failure the answers still coming are out of turn: the process is killed,
        which also ends a write of ours blocked on a full pipe, and the next read starts anew."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.kill()
        writer.join()
        for stream in (proc.stdout, proc.stdin):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()
        proc.wait()

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()
            proc.wait()
