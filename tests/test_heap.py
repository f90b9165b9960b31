"""The API process's garbage collector (service.ops.heap): set only by the process that owns it."""
from __future__ import annotations

import gc
import subprocess
import sys

from fastapi.testclient import TestClient

from service.config import Settings
from service.ops import heap
from service.web.app import create_app


def test_tune_and_settle_set_the_collector_of_their_process() -> None:
    script = (
        "import gc\n"
        "from service.ops import heap\n"
        "before = gc.get_threshold()\n"
        "heap.tune()\n"
        "kept = [[i] for i in range(1000)]\n"  # long-lived containers, as the boards are
        "heap.settle()\n"
        "print(before, gc.get_threshold(), gc.get_freeze_count() >= 1000, len(gc.get_objects()) < gc.get_freeze_count())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[0] == f"(700, 10, 10) ({heap.YOUNG}, {heap.OLDER}, {heap.OLDER}) True True"


def test_an_app_inside_another_process_leaves_its_collector_alone(api_settings: Settings) -> None:
    thresholds, frozen = gc.get_threshold(), gc.get_freeze_count()
    with TestClient(create_app(api_settings)) as client:
        assert client.get("/api/health").status_code == 200
    # leaving the lifespan joined the warm-up thread, which is where a settle would have run
    assert gc.get_threshold() == thresholds and gc.get_freeze_count() == frozen
