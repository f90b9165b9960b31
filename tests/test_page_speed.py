"""Pages never wait on a recomputation: a tournament's board and roster (on `/tournaments/{id}` and
`/?tournament=`) and the tournaments' counts (on `/tournaments`) are served from their last
computation at once while a newer one is made in the background; such a page says how old its
board is and is `pending` (no ETag, its mark ends "~pending"), and is current once the refresh is
done. Each refresh is held on an Event, so the stale page is seen for certain."""
from __future__ import annotations

import threading

import pytest
from fastapi.testclient import TestClient
from rq import Queue

import service.usecases.boards
import service.web.pages.counted
from leaderboard.types import Level
from service.config import Settings
from service.web.routes.page_tournaments import LISTS
from tests.api_fixtures import app_state_of, store_of
from tests.page_text import visible
from tests.test_page_tournaments import JUDGE, KEY, QUEUE, create, judge, submit

WAIT_S = 30  # a bound on the held refresh, never reached when the code is right


@pytest.fixture
def api_settings(api_settings: Settings) -> Settings:
    return api_settings.with_(api_key=KEY, queue_name=QUEUE)


def held(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> threading.Event:
    """`owner.name` made to wait for the returned Event (set: not held) before it reads."""
    gate = threading.Event()
    gate.set()
    read = getattr(owner, name)

    def waiting(*args: object, **kwargs: object) -> object:
        assert gate.wait(WAIT_S), "the held refresh was never released"
        return read(*args, **kwargs)

    monkeypatch.setattr(owner, name, waiting)
    return gate


def pending(response: object) -> bool:
    """True when the page says a part of it is still being computed (and so carries no ETag)."""
    text = response.text  # type: ignore[attr-defined]
    return "etag" not in response.headers and '~pending"' in text  # type: ignore[attr-defined]


@pytest.mark.parametrize("path", ["/tournaments/{tid}", "/?tournament={tid}"])
def test_a_tournament_board_is_served_stale_while_a_newer_one_is_computed(
        client: TestClient, queue: Queue, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    monkeypatch.setattr(service.usecases.boards, "STALE_FROM", 0)  # every board is big enough to be served stale
    submit(client)
    tid, matches = create(client, queue)
    store = store_of(client)
    judge(store, matches[0])
    url = path.format(tid=tid)
    first = client.get(url)
    assert first.status_code == 200 and not pending(first) and "newer being added" not in visible(first.text)
    old = store.revision()

    cache = app_state_of(client).boards._boards  # type: ignore[attr-defined]
    gate = held(monkeypatch, cache, "_read_board")
    gate.clear()
    judge(store, matches[1])
    stale = client.get(url)  # answered while the refresh waits on the gate
    assert stale.status_code == 200 and pending(stale)
    assert f"1 judgement counted up to revision {old}; newer being added" in visible(stale.text) or \
        f"it counts 1 judgement up to revision {old}; newer being added" in visible(stale.text)

    gate.set()
    cache._refreshes.join((Level.MODEL, tid, JUDGE), WAIT_S)
    fresh = client.get(url)
    assert fresh.status_code == 200 and not pending(fresh)
    assert "newer being added" not in visible(fresh.text) and "2 judgements" in visible(fresh.text)


def test_the_tournament_list_is_served_stale_while_its_counts_are_read_again(
        client: TestClient, queue: Queue, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service.web.pages.counted, "STALE_FROM", 0)  # every list is big enough to be served stale
    submit(client)
    tid, matches = create(client, queue)
    store = store_of(client)
    first = client.get("/tournaments")
    assert first.status_code == 200 and not pending(first)
    gate = held(monkeypatch, store, "list_tournaments")
    gate.clear()
    judge(store, matches[0])
    stale = client.get("/tournaments")
    assert pending(stale) and stale.text.count(" 0 / 3") == first.text.count(" 0 / 3")  # the counts read before

    gate.set()
    LISTS.refreshes.join((id(store), 0), WAIT_S)
    fresh = client.get("/tournaments")
    assert not pending(fresh) and fresh.text != stale.text
