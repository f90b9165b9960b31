"""A pytest plugin that makes `--dist loadgroup` group again on pytest 9.2 (registered by
tests/conftest.py). pytest-xdist 3.8 marks a test's group by appending `@group` to
`item._nodeid`, which pytest 9.2's structured node ids no longer read, so every `xdist_group`
mark was silently ignored (pytest-dev/pytest-xdist#1386; its fix is not released). The groups
matter: tests that share an expensive module fixture or load torch run in one process."""
from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """`--dist loadgroup` again on pytest 9.2: pytest-xdist 3.8 marks a test's group by appending
    `@group` to `item._nodeid`, which pytest 9.2's structured node ids no longer read, so every
    `xdist_group` mark was silently ignored (pytest-dev/pytest-xdist#1386, fix not released).
    In an xdist worker, the group goes onto the id the controller schedules by, unless xdist
    already put it there (older pytest); this hook runs before xdist's own, which sends the ids."""
    config = session.config
    if not getattr(config.option, "loadgroup", False):
        return
    for item in session.items:
        groups = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                         for mark in item.iter_markers("xdist_group")})
        nodeid = item.nodeid
        if not groups or nodeid.rfind("@") > nodeid.rfind("]"):
            continue
        grouped = f"{nodeid}@{'_'.join(groups)}"
        if hasattr(item, "_id"):
            from _pytest.nodeid import coerce_node_id  # pytest >= 9.2 only

            item._id = coerce_node_id(grouped)
        else:
            item._nodeid = grouped
