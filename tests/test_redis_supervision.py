"""`joust up` supervises its redis-server like every other child, keeps it and the data dir
private, and prints no secret.

Real processes throughout: `joust up` with the fake Messages API (tests/test_e2e.py's helpers), a
real redis-server, a real SQLite file. Waits are bounded generously; durations are printed as
measurements (run with -s), never asserted.
"""
from __future__ import annotations

import os
import signal
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient
from redis.backoff import NoBackoff
from redis.retry import Retry

from service.config import Settings
from service.ops.processes import REDIS_PASSWORD_FILE, Supervisor
from service.ops.redis_server import RedisServer, pid_alive
from service.ops.scheduler import Scheduler
from service.store.queue import JobQueue
from service.web.app import create_app
from tests.api_fixtures import app_state_of
from tests.fake_anthropic import FakeAnthropic, prefer
from tests.test_e2e import SYSTEMS, Joust, start_joust, stop_joust, submissions

KEY = "test-key"


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(prefer(SYSTEMS)) as server:
        yield server


def wait_for(condition, within: float, every: float = 0.05) -> bool:  # type: ignore[no-untyped-def]
    """Poll until the condition holds: a bound on waiting, not a claim about speed."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every)
    return bool(condition())


def redis_pid(data_dir: Path) -> int:
    return int((data_dir / "redis" / "redis.pid").read_text().split()[0])


def child_env(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


# -- a SIGKILLed Redis under `joust up` -------------------------------------------------------------


@pytest.mark.slow
def test_a_killed_redis_comes_back_and_the_run_completes_paying_nothing_twice(
    tmp_path: Path, fake: FakeAnthropic
) -> None:
    """Redis SIGKILLed mid-run under `joust up`: the supervisor restarts it from its files and the
    run completes, paying for no call twice. Over 20 s beside the rest of the suite (about 14 s
    alone): a `joust up`, Redis's restart, and the workers reconnecting."""
    # 8 calls in flight per worker: the run takes several rounds of calls, and the kill lands
    # with some calls in flight and others not yet sent.
    joust = start_joust(tmp_path / "data", fake, JOUST_JUDGE_CONCURRENCY="8")
    try:
        _kill_redis_mid_tournament(joust, fake)
    finally:
        stop_joust(joust)


def _kill_redis_mid_tournament(joust: Joust, fake: FakeAnthropic) -> None:
    data_dir = joust.data_dir
    password = (data_dir / REDIS_PASSWORD_FILE).read_text().strip()
    old_pid = redis_pid(data_dir)
    url = child_env(joust.worker_pids()[0])["REDIS_URL"]  # the URL every child was given
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    assert url == f"redis://:{password}@127.0.0.1:{port}/0"
    with redis.Redis.from_url(url) as client:
        assert int(client.info("server")["process_id"]) == old_pid
        client.set("joust:test:kept", "before the kill")

    fake.latency_s = 0.4  # calls are in flight when Redis dies
    assert joust.call("POST", "/api/submissions", submissions())[0] == 201
    status, created = joust.call("POST", "/api/tournaments", {"name": "through a redis kill",
                                                              "judge": "anthropic/judge-1"})
    assert status == 202 and created["queued"] is True
    matches = created["matches_total"]
    assert matches == 3 * 15
    workers = sorted(joust.worker_pids())
    assert wait_for(lambda: fake.replies >= 6 and fake.requests - fake.replies >= 4, within=60), \
        "no call was answered, or none is in flight"
    done_at_kill = joust.call("GET", f"/api/tournaments/{created['id']}")[1]["matches_done"]
    replies_at_kill, requests_at_kill = fake.replies, fake.requests
    assert requests_at_kill < 2 * matches, "every call was sent before the kill"

    killed_at = time.monotonic()
    os.kill(old_pid, signal.SIGKILL)
    health: list[tuple[float, int, object]] = []
    while time.monotonic() - killed_at < 60:  # right after the kill: the health while it is down
        code, body = joust.call("GET", "/api/health")
        health.append((time.monotonic() - killed_at, code, body))
        if code == 200:
            break
        time.sleep(0.02)  # a look every 20 ms, leaving the CPU to the restart it waits for
    down = [(at, body) for at, code, body in health if code == 503]
    assert down, f"/api/health never answered 503 after the kill: {health[:5]}"
    assert down[0][1] == {"status": "down", "database": "ok", "redis": "down"}
    assert health[-1][1] == 200, "Redis did not come back within 60 s:\n" + "".join(joust.lines[-30:])
    back_after = health[-1][0]

    new_pid = redis_pid(data_dir)
    assert new_pid != old_pid and pid_alive(new_pid) and new_pid in joust.children()
    with redis.Redis.from_url(url) as client:  # same port, same password, same data
        assert int(client.info("server")["process_id"]) == new_pid
        assert client.get("joust:test:kept") == b"before the kill"
    # The run resumes: a call sent and a match judged after the kill (each needs Redis first).
    assert wait_for(lambda: fake.requests > requests_at_kill, within=60), "no call sent after the kill"
    called_after = time.monotonic() - killed_at
    assert wait_for(lambda: joust.call("GET", f"/api/tournaments/{created['id']}")[1]["matches_done"] > done_at_kill,
                    within=60), "no match judged after the kill"
    judged_after = time.monotonic() - killed_at

    view = joust.wait_done(created["id"], timeout_s=180)
    assert (view["status"], view["matches_done"], view["matches_failed"]) == ("done", matches, 0)
    _, listing = joust.call("GET", f"/api/tournaments/{created['id']}/judgements")
    ids = [j["judgement_id"] for j in listing["judgements"]]
    assert len(ids) == matches and len(set(ids)) == matches  # one judgement per match
    assert all(len(j["calls"]) == 2 for j in listing["judgements"])
    # Nothing paid twice: the workers rode the outage out (same pids), so the replies of the
    # calls in flight at the kill were used, not asked for again.
    assert fake.replies == 2 * matches, (fake.replies, fake.requests)
    assert sorted(joust.worker_pids()) == workers, "a worker died of the outage"
    assert any("redis-server is back" in line for line in joust.lines)
    print(f"\nredis down until {down[-1][0]:.2f}-{back_after:.2f} s after the kill (503 seen {len(down)} "
          f"times); first call sent after the kill at <= {called_after:.2f} s, first match judged at <= "
          f"{judged_after:.2f} s; {requests_at_kill - replies_at_kill} calls in flight at the kill")

    children = joust.children()  # stop still stops everything, the new Redis included
    joust.proc.send_signal(signal.SIGTERM)
    assert joust.proc.wait(timeout=60) == 0
    assert wait_for(lambda: not any(pid_alive(pid) for pid in children), within=15)


CONFIRMED_SLACK_S = 1.0  # how late a call confirmed before Redis died may still arrive
# How long Redis stays away. Longer than CONFIRMED_SLACK_S, so the test watches 2 s of outage in
# which no call may be sent; longer than the workers' reconnect backoff reaches its cap of 1 s
# (workers.engine.redis_retry), so they keep retrying at it; far below the ~30 s their retries
# ride out and the 15 s their claims last.
OUTAGE_S = 3.0


@pytest.mark.slow
def test_workers_ride_out_a_redis_outage_of_seconds(tmp_path: Path, fake: FakeAnthropic) -> None:
    """Redis away for seconds (OUTAGE_S; REDIS_URL: a server this test stops and starts): the
    workers wait for it rather than fail their matches in flight, so the run completes on the
    same worker processes and pays for no call twice. Over 20 s beside the rest of the suite
    (about 14 s alone): a `joust up`, the outage itself, and the workers' reconnect backoff."""
    server = RedisServer(tmp_path / "redis", password="sekret").start()
    joust = start_joust(tmp_path / "data", fake, JOUST_JUDGE_CONCURRENCY="8", REDIS_URL=server.url)
    try:
        assert "sekret" not in "".join(joust.lines)
        fake.latency_s = 0.4
        assert joust.call("POST", "/api/submissions", submissions())[0] == 201
        _, created = joust.call("POST", "/api/tournaments", {"name": "outage", "judge": "anthropic/judge-1"})
        matches = created["matches_total"]
        workers = sorted(joust.worker_pids())
        assert wait_for(lambda: fake.replies >= 6 and fake.requests - fake.replies >= 4, within=60)
        assert server.pid is not None
        os.kill(server.pid, signal.SIGKILL)
        killed = time.monotonic()
        assert wait_for(lambda: not server.running, within=15)
        time.sleep(OUTAGE_S)  # the outage
        assert joust.call("GET", "/api/health")[0] == 503
        back = time.monotonic()
        # A call needs Redis to confirm its claim right before it is sent, so none is sent while
        # Redis is down. Calls confirmed just before the kill may still reach the fake a little
        # later on a loaded machine (the send itself takes CPU): CONFIRMED_SLACK_S allows them.
        late = [round(at - killed, 2) for at in fake.arrivals() if killed + CONFIRMED_SLACK_S < at < back]
        assert late == [], f"calls sent while Redis was down, seconds after the kill: {late}"
        server.start()
        view = joust.wait_done(created["id"], timeout_s=180)
        assert (view["status"], view["matches_done"], view["matches_failed"]) == ("done", matches, 0)
        assert fake.replies == 2 * matches, (fake.replies, fake.requests)
        assert sorted(joust.worker_pids()) == workers, "a worker died of the outage"
    finally:
        stop_joust(joust)
        server.stop()


# -- the supervisor alone ---------------------------------------------------------------------------


@pytest.mark.slow
def test_the_supervisor_restarts_redis_on_its_port_once_the_port_is_free(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis", password="sekret").start()
    sup = Supervisor(Settings(data_dir=tmp_path), redis=server)
    try:
        with server.client() as client:
            client.rpush("queue", "a")
        port, first = server.port, server.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        assert wait_for(lambda: not server.running, within=15)
        with socket.socket() as squatter:  # someone takes the port meanwhile: retried, not fatal
            squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            squatter.bind(("127.0.0.1", port))
            squatter.listen()
            assert sup.tend_redis() is False and not server.running
        assert wait_for(sup.tend_redis, within=15, every=0.2), "redis did not come back once the port was free"
        assert (server.port, sup.redis_restarts) == (port, 1) and server.pid != first
        with server.client() as client:
            assert client.lrange("queue", 0, -1) == [b"a"]
        assert sup.tend_redis() is False  # running: nothing to do
    finally:
        server.stop()


# -- writes while Redis is down ---------------------------------------------------------------------


@pytest.mark.slow
def test_a_run_started_while_redis_is_down_is_stored_and_handed_out_once_it_is_back(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis", password="sekret").start()
    settings = Settings(data_dir=tmp_path / "data", redis_url=server.url, api_key=KEY, judge="offline/rubric")
    headers = {"Authorization": f"Bearer {KEY}"}
    try:
        with TestClient(create_app(settings)) as client:
            pair = [{"question": "q", "model": m, "output": f"answer of {m}"} for m in ("m1", "m2", "m3")]
            assert client.post("/api/submissions", json=pair, headers=headers).status_code == 201
            server.stop()
            health = client.get("/api/health")
            assert (health.status_code, health.json()) == (503, {"status": "down", "database": "ok", "redis": "down"})
            created = client.post("/api/tournaments", json={"name": "meanwhile"}, headers=headers)
            assert created.status_code == 202
            assert (created.json()["matches_total"], created.json()["queued"]) == (3, False)
            server.start()
            assert client.get("/api/health").status_code == 200
            store = app_state_of(client).store
            with redis.Redis.from_url(server.url) as conn:
                queue = JobQueue(conn, settings.queue_name, settings.match_timeout_s / 2)
                assert queue.depth() == 0
                # the scheduler's sweep, once the pending grace has passed
                report = Scheduler(store, queue, settings).tick(time.time() + 31)
                assert len(report.rehanded) == 3 and queue.depth() == 3
    finally:
        server.stop()


def test_health_is_documented_with_its_503(tmp_path: Path, redis_url: str) -> None:
    settings = Settings(data_dir=tmp_path / "data", redis_url=redis_url, api_key=KEY)
    with TestClient(create_app(settings)) as client:
        responses = client.get("/openapi.json").json()["paths"]["/api/health"]["get"]["responses"]
    assert {"200", "503"} <= set(responses)
    assert "down" in responses["503"]["description"]


# -- private files, no printed secrets --------------------------------------------------------------


def _up_and_down(data_dir: Path, fake: FakeAnthropic) -> Joust:
    joust = start_joust(data_dir, fake, workers=1)
    try:
        assert joust.call("GET", "/api/health")[0] == 200
        joust.proc.send_signal(signal.SIGTERM)
        assert joust.proc.wait(timeout=60) == 0
    finally:
        stop_joust(joust)
    return joust


@pytest.mark.slow
def test_the_data_dir_is_private_and_an_older_one_is_tightened(tmp_path: Path, fake: FakeAnthropic) -> None:
    data_dir = tmp_path / "data"
    (data_dir / "redis").mkdir(parents=True)  # as an older joust left it: 0755 and 0644
    data_dir.chmod(0o755)
    (data_dir / "redis").chmod(0o755)
    (data_dir / "api_key").write_text("an-older-key\n")
    (data_dir / "redis" / "redis.log").write_text("")
    for path in (data_dir / "api_key", data_dir / "redis" / "redis.log"):
        path.chmod(0o644)
    mine = data_dir / "notes.txt"  # not joust's: left as it is
    mine.write_text("")
    mine.chmod(0o644)

    first = _up_and_down(data_dir, fake)
    assert first.key == "an-older-key"  # reused, not replaced
    assert sum("made the data dir private" in line for line in first.lines) == 1

    assert mode(data_dir) == 0o700
    for name in ("api_key", REDIS_PASSWORD_FILE, "joust.db", "joust.db-wal", "joust.db-shm"):
        if name.startswith("joust.db-") and not (data_dir / name).exists():
            continue  # SQLite removes them on a clean close
        assert mode(data_dir / name) == 0o600, name
    redis_files = sorted((data_dir / "redis").rglob("*"))
    assert any(p.name.startswith("appendonly") for p in redis_files) and (data_dir / "redis" / "dump.rdb").exists()
    for path in [data_dir / "redis", *redis_files]:
        assert mode(path) == (0o700 if path.is_dir() else 0o600), path
    assert mode(mine) == 0o644

    second = _up_and_down(data_dir, fake)  # nothing left to tighten: not said again
    assert not any("made the data dir private" in line for line in second.lines)
    assert mode(data_dir / "joust.db") == 0o600


@pytest.mark.slow
def test_no_secret_is_printed_on_any_start(tmp_path: Path, fake: FakeAnthropic) -> None:
    data_dir = tmp_path / "data"
    for start in ("first", "second"):
        joust = _up_and_down(data_dir, fake)
        password = (data_dir / REDIS_PASSWORD_FILE).read_text().strip()
        printed = "".join(joust.lines)
        assert f"API key: in {data_dir.resolve() / 'api_key'}" in printed, start
        assert joust.key not in printed, f"the API key was printed on the {start} start"
        assert password not in printed, f"the Redis password was printed on the {start} start"
        assert "redis://:***@127.0.0.1:" in printed


@pytest.mark.slow
def test_embedded_redis_of_joust_up_refuses_a_client_without_its_password(tmp_path: Path) -> None:
    with RedisServer(tmp_path / "redis", password="sekret") as server:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as raw:  # a bare client
            raw.sendall(b"SET k v\r\n")
            assert raw.recv(200).startswith(b"-NOAUTH")
        # No retries: redis-py's default would try each refusal 3 more times, seconds apart, and
        # be refused the same way each time.
        bare = redis.Redis(host="127.0.0.1", port=server.port, retry=Retry(NoBackoff(), 0))
        with pytest.raises(redis.AuthenticationError):  # redis-py (RESP3: its HELLO is refused)
            bare.set("k", "v")
        bare.close()
        wrong = redis.Redis(host="127.0.0.1", port=server.port, password="guess", retry=Retry(NoBackoff(), 0))
        with pytest.raises(redis.AuthenticationError):
            wrong.ping()
        wrong.close()
        assert server.url == f"redis://:sekret@127.0.0.1:{server.port}/0"
        assert "sekret" not in server.shown_url and "sekret" not in repr(server)
        with server.client() as client:
            assert client.ping()
