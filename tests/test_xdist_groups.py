"""`--dist loadgroup` sends every test of an `xdist_group` to one process (tests/xdist_groups.py):
without it the encoder would load twice and module fixtures be built once per process."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

GROUPED = '''
import os
import pytest

pytestmark = pytest.mark.xdist_group("together")


@pytest.mark.parametrize("i", range(8))
def test_grouped(i):
    print("WORKER", os.environ["PYTEST_XDIST_WORKER"])
'''
LOOSE = '''
import pytest


@pytest.mark.parametrize("i", range(8))
def test_loose(i):
    pass
'''


def test_a_group_runs_in_one_process_and_the_rest_spreads(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    (tmp_path / "test_loose.py").write_text(LOOSE)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.xdist_groups", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadgroup", "-v", "-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    placed = re.findall(r"\[(gw\d)\] .*? PASSED (\S+)", run.stdout)
    grouped = {worker for worker, test in placed if "test_grouped" in test}
    assert len([t for _, t in placed if "test_grouped" in t]) == 8
    assert all(test.endswith("@together") for _, test in placed if "test_grouped" in test)
    assert len(grouped) == 1, placed
    assert len(placed) == 16
