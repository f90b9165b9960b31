"""pytest fixtures for tests of the API through a `TestClient`: an app on this test's data dir,
its database (SQLite in the data dir, then a fresh PostgreSQL database: `api_database_url` runs
each test on both) and the session's Redis (freshly flushed), its lifespan entered for the test.

A module changes the app's settings by defining its own `api_settings` (it may request the one
here by the same name and change it with `.with_(...)`).

tests/conftest.py imports them (`from tests.api_fixtures import *` takes exactly `__all__`).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from redis import Redis
from rq import Queue

from service.config import Settings
from service.store import Store
from service.store.queue import SERIALIZER
from service.web.app import create_app
from service.web.state import AppState, app_state

__all__ = ["api_database_url", "api_settings", "client", "make_client", "queue"]  # fixtures; the rest by name

API_KEY = "test-key"
# The judges' credentials: a tournament with an anthropic/ judge (the default) needs a key configured.
ANTHROPIC_KEY = "test-anthropic-key"
MakeClient = Callable[..., TestClient]


@pytest.fixture(params=["sqlite", "postgresql"])
def api_database_url(request: pytest.FixtureRequest) -> str | None:
    """The app's database: SQLite in its data dir (None), then a fresh PostgreSQL database (each
    API test runs on both; the PostgreSQL run is skipped where PostgreSQL is absent)."""
    return request.getfixturevalue("postgres_url") if request.param == "postgresql" else None


@pytest.fixture
def api_settings(tmp_path: Path, redis_url: str, api_database_url: str | None) -> Settings:
    """The app's settings: data under tmp_path/data, the database of `api_database_url`, the
    shared Redis, API key `API_KEY`, an Anthropic key (nothing here calls Anthropic)."""
    return Settings(data_dir=tmp_path / "data", redis_url=redis_url, api_key=API_KEY,
                    database_url=api_database_url, anthropic_api_key=ANTHROPIC_KEY)


@pytest.fixture
def make_client(api_settings: Settings) -> Iterator[MakeClient]:
    """Build an app on `api_settings` (fields overridable) and enter its lifespan."""
    clients: list[TestClient] = []

    def make(**changes: object) -> TestClient:
        client = TestClient(create_app(api_settings.with_(**changes)))
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def client(make_client: MakeClient) -> TestClient:
    """A client of the app on `api_settings`."""
    return make_client()


@pytest.fixture
def queue(api_settings: Settings, redis_url: str) -> Iterator[Queue]:
    """The app's job queue, to count and take its jobs."""
    redis = Redis.from_url(redis_url)
    yield Queue(api_settings.queue_name, connection=redis, serializer=SERIALIZER)
    redis.close()


def app_state_of(client: TestClient) -> AppState:
    """The typed state (`service.web.state`) of the app behind `client`."""
    return app_state(client.app)  # type: ignore[arg-type]  # TestClient types its app as any ASGI app


def store_of(client: TestClient) -> Store:
    """The store the app behind `client` uses."""
    return app_state_of(client).store
