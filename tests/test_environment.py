"""The suite cannot be fooled by the caller's shell: an `OBSREPO_*` variable set where pytest
runs reaches neither the test process nor the processes it starts (tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A test that reads an index in process, bound to a tenant by its own arguments only.
TENANT_TEST = "tests/test_scope.py::test_an_unbound_scope_sees_every_tenant_and_scopes_do_not_share_views"


def test_the_test_process_holds_no_obsrepo_variable() -> None:
    assert [key for key in os.environ if key.startswith("OBSREPO_")] == []


def test_a_hostile_shell_changes_no_result_and_writes_nothing_outside(tmp_path: Path) -> None:
    shared = tmp_path / "shared" / "index.duckdb"
    shared.parent.mkdir()
    env = dict(os.environ, OBSREPO_INDEX=str(shared), OBSREPO_TENANT="org=nobody", OBSREPO_NO_CACHE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0",
         f"--basetemp={tmp_path / 'base'}", TENANT_TEST, f"tests/{Path(__file__).name}::test_the_test_process_holds_no_obsrepo_variable"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout
    assert list(shared.parent.iterdir()) == []
