"""docker-compose.yml as written runs a tournament, without Docker: the file is read (YAML, with
compose's `${...}` interpolation from a deployer's environment), and each service's command runs
as a process here with exactly that service's environment. Service names are mapped to loopback
(`redis:6379` to the Redis started from the redis service's own command, `postgres:5432/joust` to
a fresh database of the session's PostgreSQL, `/data` to one folder, as the one `joust-data`
volume), and the provider's URL is the fake Messages API's. The API holds no provider key, as in
compose: it accepts the default judge because the worker says it can reach it."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from redis import Redis

from service.config import DEFAULT_JUDGE
from service.ops.liveness import worker_alive
from service.ops.processes import stop_groups
from service.ops.redis_server import die_with_parent, find_redis_server, free_port
from tests.fake_anthropic import FakeAnthropic, prefer

REPO = Path(__file__).resolve().parents[1]
MODELS = ["good", "mid", "bad"]
KEY = "the-deploys-anthropic-key"
POLL_S = 0.1
START_WAIT_S = 60  # a bound for a service that never gets ready, not a measure
_NAME = r"[_a-zA-Z][_a-zA-Z0-9]*"


class Unset(ValueError):
    """A `${NAME:?message}` whose variable is unset."""


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """Compose's interpolation of one value: `$$`, `$NAME`, `${NAME}`, `${NAME:-default}`,
    `${NAME-default}`, `${NAME:?error}`, `${NAME?error}`, `${NAME:+other}`, `${NAME+other}`,
    operands themselves interpolated (nested)."""
    out, i = [], 0
    while i < len(text):
        if text[i] != "$":
            out.append(text[i])
            i += 1
        elif text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("${", i):
            end = _closing(text, i)
            out.append(_expand(text[i + 2:end], env))
            i = end + 1
        elif m := re.match(_NAME, text[i + 1:]):
            out.append(env.get(m.group(), ""))
            i += 1 + len(m.group())
        else:
            out.append("$")
            i += 1
    return "".join(out)


def _closing(text: str, start: int) -> int:
    depth, i = 0, start
    while i < len(text):
        if text.startswith("${", i):
            depth, i = depth + 1, i + 2
            continue
        if text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError(f"unclosed ${{ in {text!r}")


def _expand(inner: str, env: Mapping[str, str]) -> str:
    m = re.fullmatch(rf"({_NAME})(?:(:?[-?+])(.*))?", inner, re.DOTALL)
    assert m, f"not compose interpolation: ${{{inner}}}"
    name, op, operand = m.groups()
    value = env.get(name)
    present = bool(value) if op and op.startswith(":") else value is not None
    if op is None:
        return value or ""
    if op.endswith("-"):
        return value if present else interpolate(operand, env)  # type: ignore[return-value]
    if op.endswith("?"):
        if not present:
            raise Unset(f"{name}: {interpolate(operand, env)}")
        return value  # type: ignore[return-value]
    return interpolate(operand, env) if present else ""  # "+"


def interpolated(node: Any, env: Mapping[str, str]) -> Any:
    """Every string value of the document interpolated (compose leaves keys alone)."""
    if isinstance(node, str):
        return interpolate(node, env)
    if isinstance(node, list):
        return [interpolated(x, env) for x in node]
    if isinstance(node, dict):
        return {k: interpolated(v, env) for k, v in node.items()}
    return node


def load_compose(env: Mapping[str, str]) -> dict[str, Any]:
    """docker-compose.yml as compose reads it from a shell holding `env` (YAML anchors and `<<`
    merges resolved by the YAML loader)."""
    return interpolated(yaml.safe_load((REPO / "docker-compose.yml").read_text()), env)


def environment(service: dict[str, Any]) -> dict[str, str]:
    """A service's environment as its container gets it (a map or a list of NAME=value)."""
    found = service.get("environment") or {}
    if isinstance(found, list):
        found = dict(item.split("=", 1) for item in found)
    return {k: "" if v is None else str(v) for k, v in found.items()}


def argv_of(test: list[str]) -> list[str]:
    """A healthcheck's `["CMD", ...]` as an argv."""
    assert test[0] == "CMD", test
    return test[1:]


class Deployment:
    """The services as processes, each in its own session, their output in files."""

    def __init__(self, base: Path, loopback: Callable[[str], str]) -> None:
        self.base, self.loopback = base, loopback
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        # What the image and a container give every process; all else is the service's own.
        path = os.pathsep.join([str(Path(sys.executable).parent), str(Path(find_redis_server()).parent),
                                os.environ.get("PATH", "/usr/bin:/bin")])
        self.base_env = {"PATH": path, "HOME": str(base), "PYTHONUNBUFFERED": "1"}

    def env_of(self, service: dict[str, Any]) -> dict[str, str]:
        return {**self.base_env, **{k: self.loopback(v) for k, v in environment(service).items()}}

    def start(self, name: str, service: dict[str, Any], argv: list[str], cwd: Path) -> None:
        cwd.mkdir(parents=True, exist_ok=True)
        with open(self.base / f"{name}.log", "wb") as log:
            self.procs[name] = subprocess.Popen(
                [self.loopback(a) for a in argv], env=self.env_of(service), cwd=cwd, stdout=log, stderr=log,
                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent())

    def run(self, service: dict[str, Any], argv: list[str]) -> int:
        """Run one command (a healthcheck) in a service's environment; its exit code."""
        done = subprocess.run([self.loopback(a) for a in argv], env=self.env_of(service), cwd=self.base,
                              capture_output=True, timeout=60, check=False)
        return done.returncode

    def logs(self) -> str:
        return "\n".join(f"--- {name}:\n" + (self.base / f"{name}.log").read_text(errors="replace")[-3000:]
                         for name in self.procs)

    def wait(self, what: str, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + START_WAIT_S
        while not ready():
            dead = [n for n, p in self.procs.items() if p.poll() is not None]
            assert not dead, f"{dead} exited while waiting for {what}:\n{self.logs()}"
            assert time.monotonic() < deadline, f"{what}: not ready:\n{self.logs()}"
            time.sleep(POLL_S)

    def stop(self) -> None:
        """As `docker compose down`: the dependents first (a worker stopping after Redis would
        wait out its reconnection retries)."""
        dependents = [p for n, p in self.procs.items() if n in ("worker", "scheduler")]
        stop_groups(dependents, timeout_s=15)
        for name in ("api", "redis"):
            if name in self.procs:
                stop_groups([self.procs[name]], timeout_s=15)


def call(url: str, method: str = "GET", body: Any = None, key: str | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    request.add_header("Content-Type", "application/json")
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(prefer(MODELS), api_key=KEY) as server:  # other keys get a 401
        yield server


def test_compose_requires_its_secrets() -> None:
    for left_out in ("JOUST_API_KEY", "REDIS_PASSWORD"):
        shell = {"JOUST_API_KEY": "k", "REDIS_PASSWORD": "p"}
        del shell[left_out]
        with pytest.raises(Unset, match=left_out):
            load_compose(shell)


def test_the_default_judge_follows_the_deploys_key_which_only_the_workers_get() -> None:
    base = {"JOUST_API_KEY": "k", "REDIS_PASSWORD": "p"}
    services = load_compose({**base, "ANTHROPIC_API_KEY": KEY})["services"]
    assert environment(services["api"])["JOUST_JUDGE"] == DEFAULT_JUDGE
    holders = sorted(name for name, s in services.items() if KEY in environment(s).values())
    assert holders == ["worker"], holders  # the API, the one published service, never holds it
    assert environment(load_compose(base)["services"]["api"])["JOUST_JUDGE"] == ""  # the API's own default
    chosen = load_compose({**base, "ANTHROPIC_API_KEY": KEY, "JOUST_JUDGE": "offline/rubric"})["services"]
    assert environment(chosen["api"])["JOUST_JUDGE"] == "offline/rubric"


@pytest.mark.slow  # every service a real process
def test_docker_compose_as_written_runs_a_tournament(tmp_path: Path, postgres_url: str, fake: FakeAnthropic) -> None:
    """A deployer's shell: the two required secrets, the provider's key and (here) its URL. A few
    seconds: a Redis, then the API's start, then a worker's and the scheduler's once the API is
    healthy, as compose starts them (each imports joust; the API makes the schema on
    PostgreSQL), a round robin of 6 matches judged twice each, the worker's and scheduler's
    healthchecks; then the services stop in compose's order, dependents first."""
    shell = {"JOUST_API_KEY": "deploy-admin-key", "REDIS_PASSWORD": "0123456789abcdef",
             "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake.url}
    compose = load_compose(shell)
    services = compose["services"]
    assert set(services) == {"redis", "postgres", "api", "worker", "scheduler"}
    assert "ANTHROPIC_API_KEY" not in environment(services["api"])

    # The database the services are given is the one the postgres service makes.
    pg = environment(services["postgres"])
    wanted = urlsplit(environment(services["api"])["DATABASE_URL"])
    assert (wanted.hostname, wanted.port, wanted.username, wanted.password, wanted.path) == (
        "postgres", 5432, pg["POSTGRES_USER"], pg["POSTGRES_PASSWORD"], "/" + pg["POSTGRES_DB"])
    ours = urlsplit(postgres_url)
    redis_port, api_port, data = free_port(), free_port(), tmp_path / "joust-data"
    mapped = {"@redis:6379": f"@127.0.0.1:{redis_port}",
              f"@postgres:5432{wanted.path}": f"@{ours.hostname}:{ours.port}{ours.path}",
              "localhost:8000": f"127.0.0.1:{api_port}"}

    def loopback(value: str) -> str:
        if value == "/data":
            return str(data)  # the joust-data volume, shared by api, worker and scheduler
        if value == "0.0.0.0":
            return "127.0.0.1"
        if value == "8000":
            return str(api_port)  # the container's port 8000, published
        for name, here in mapped.items():
            value = value.replace(name, here)
        return value

    deploy = Deployment(tmp_path, loopback)
    try:
        redis = services["redis"]
        script = redis["command"]
        assert script[:2] == ["sh", "-c"]
        deploy.start("redis", redis, ["sh", "-c", f"{script[2]} --port {redis_port} --bind 127.0.0.1"],
                     tmp_path / "redis-data")
        client = Redis(host="127.0.0.1", port=redis_port, password=shell["REDIS_PASSWORD"])

        def redis_answers() -> bool:
            try:
                return bool(client.ping())
            except Exception:
                return False

        deploy.wait("redis", redis_answers)
        client.close()

        api = services["api"]
        deploy.start("api", api, api["command"], tmp_path / "app")
        deploy.wait("api healthcheck", lambda: deploy.run(api, argv_of(api["healthcheck"]["test"])) == 0)
        for name in ("worker", "scheduler"):  # after the API is healthy, as their depends_on says
            deploy.start(name, services[name], services[name]["command"], tmp_path / "app")
        with Redis.from_url(loopback(environment(services["worker"])["REDIS_URL"])) as queue_redis:
            deploy.wait("a worker", lambda: worker_alive(queue_redis, "joust"))  # what its healthcheck asks

        url, key = f"http://127.0.0.1:{api_port}", shell["JOUST_API_KEY"]
        outputs = [{"question": f"Question {q}?", "model": m, "output": f"[{m}] answer {q}"}
                   for q in range(2) for m in MODELS]
        assert call(f"{url}/api/submissions", "POST", outputs, key)[0] == 201
        status, created = call(f"{url}/api/tournaments", "POST", {"name": "compose"}, key)  # the default judge
        assert status == 202, (created, deploy.logs())
        tid = created["id"]
        view: dict = {}

        def finished() -> bool:
            nonlocal view
            view = call(f"{url}/api/tournaments/{tid}")[1]
            return view["status"] in ("done", "failed", "cancelled")

        deploy.wait(f"tournament {tid}", finished)
        assert (view["judge"], view["status"], view["matches_done"]) == (DEFAULT_JUDGE, "done", 6), view
        assert fake.replies == 12 and {c.status for c in fake.received} == {200}  # the worker had the key
        _, board = call(f"{url}/api/leaderboard?by=model")
        assert [row["player"] for row in board["rows"]] == MODELS, board
        for name in ("worker", "scheduler"):  # their healthchecks pass (the scheduler beats at each tick)
            service = services[name]
            deploy.wait(f"{name} healthcheck",
                        lambda s=service: deploy.run(s, argv_of(s["healthcheck"]["test"])) == 0)
    finally:
        deploy.stop()
        shutil.rmtree(tmp_path / "redis-data", ignore_errors=True)


def test_interpolation_as_compose_does_it() -> None:
    env = {"SET": "v", "EMPTY": ""}
    cases = {"$$X": "$X", "$SET-$NOPE.": "v-.", "${SET:-d}": "v", "${EMPTY:-d}": "d", "${EMPTY-d}": "",
             "${NOPE-${SET}}": "v", "${SET:+r}": "r", "${EMPTY:+r}": "", "${EMPTY+r}": "r",
             "${NOPE:-${EMPTY:+x}}": "", "a${NOPE:-${SET:+b${SET}c}}d": "abvcd", "sh \"$$P\"": 'sh "$P"'}
    for text, expected in cases.items():
        assert interpolate(text, env) == expected, text
    with pytest.raises(Unset, match="NOPE: say v"):
        interpolate("${NOPE:?say ${SET}}", env)
