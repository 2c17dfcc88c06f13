"""The house stays drawn as it is built: import contracts (layers only point down, no circles
inside a layer) hold, and the code is lint- and type-clean."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# run by `pytest -m lint` and as their own steps of .ci/run, not by the everyday test command
pytestmark = pytest.mark.lint

ROOT = Path(__file__).resolve().parent.parent


def _run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True)


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: install the test extra (pip install '.[index,test]')")
    return found


def test_import_contracts_hold():
    proc = _run(_tool("lint-imports"), "--no-cache")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "BROKEN" not in proc.stdout


def test_ruff_is_clean():
    proc = _run(_tool("ruff"), "check", "tooling", "tests", "bench")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean():
    proc = _run(sys.executable, "-m", "mypy", "tooling/obsrepo")
    assert proc.returncode == 0, proc.stdout + proc.stderr
