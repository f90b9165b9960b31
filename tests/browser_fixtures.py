"""Debian's chromium through Playwright, one per test module: the browser tests share it (they
skip, saying why, where the browser or Playwright is missing; under CI=true they fail instead)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.required import require_browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    binary = require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=binary, args=["--no-sandbox"])
        yield launched
        launched.close()
