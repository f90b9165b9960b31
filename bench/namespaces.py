"""Machines on one host: Linux network namespaces on private bridges, made and always removed by
the run that needs them (root only; `ip` from iproute2).

Layout, all names and addresses derived from the run's pid (unique per run):

    root namespace  (the run itself: the fake provider, the API, the clients)
      bridge <tag>d  data net     10.A.B.1/25     ── db namespace 10.A.B.2 (Redis, PostgreSQL)
                                                   ── machine i   10.A.B.(10+i)
      bridge <tag>p  provider net 10.A.B.129/25   ── machine i   10.A.B.(140+i)

A machine reaches Redis and PostgreSQL over the data net and the provider over the provider net,
so `cut(i)` (its data leg taken off the bridge: frames dropped silently, as a pulled cable or a
partition does, no error to the sockets) leaves it talking to the provider: its calls in flight
come home while its leases lapse. `heal(i)` puts the leg back.

`Network` is a context manager; it also removes everything at exit and on SIGTERM/SIGINT, and
`sweep(tag)` removes what a killed run left (namespaces, bridges, veths named after `tag`).
"""
from __future__ import annotations

import atexit
import os
import signal
import subprocess
from dataclasses import dataclass, field


class NamespacesUnavailable(RuntimeError):
    """Not root, or `ip netns` does not work here."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and done.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def available() -> str | None:
    """None when namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"jprobe{os.getpid()}"
    try:
        made = ip("netns", "add", probe, check=False)
    except FileNotFoundError:
        return "no `ip` command (iproute2)"
    if made.returncode:
        return f"`ip netns add` fails here: {made.stderr.strip()}"
    ip("netns", "del", probe, check=False)
    return None


@dataclass
class Network:
    machines: int
    tag: str = field(default_factory=lambda: f"jf{os.getpid()}")

    def __post_init__(self) -> None:
        pid = os.getpid()
        self.prefix = f"10.{100 + (pid // 256) % 150}.{pid % 256}"
        self._made = False
        self._previous: dict[int, object] = {}

    # names and addresses -----------------------------------------------------------------------

    @property
    def db_ns(self) -> str:
        return f"{self.tag}-db"

    def machine_ns(self, i: int) -> str:
        return f"{self.tag}-m{i}"

    @property
    def db_ip(self) -> str:
        return f"{self.prefix}.2"

    @property
    def provider_ip(self) -> str:
        """The root namespace on the provider net: where the fake provider listens."""
        return f"{self.prefix}.129"

    def data_ip(self, i: int) -> str:
        return f"{self.prefix}.{10 + i}"

    # making and removing -----------------------------------------------------------------------

    def __enter__(self) -> Network:
        self.make()
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def make(self) -> None:
        why = available()
        if why:
            raise NamespacesUnavailable(why)
        self._made = True
        atexit.register(self.remove)
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._previous[sig] = signal.signal(sig, self._on_signal)
        try:
            for bridge, address in ((f"{self.tag}d", f"{self.prefix}.1/25"), (f"{self.tag}p", f"{self.prefix}.129/25")):
                ip("link", "add", bridge, "type", "bridge")
                ip("addr", "add", address, "dev", bridge)
                ip("link", "set", bridge, "up")
            self._namespace(self.db_ns, [(f"{self.tag}dx", f"{self.tag}d", "data0", f"{self.db_ip}/25")])
            for i in range(self.machines):
                self._namespace(self.machine_ns(i), [
                    (f"{self.tag}d{i}", f"{self.tag}d", "data0", f"{self.data_ip(i)}/25"),
                    (f"{self.tag}p{i}", f"{self.tag}p", "prov0", f"{self.prefix}.{140 + i}/25"),
                ])
        except BaseException:
            self.remove()
            raise

    def _namespace(self, name: str, legs: list[tuple[str, str, str, str]]) -> None:
        ip("netns", "add", name)
        ip("-n", name, "link", "set", "lo", "up")
        for host_end, bridge, inside, address in legs:
            ip("link", "add", host_end, "type", "veth", "peer", "name", inside, "netns", name)
            ip("link", "set", host_end, "master", bridge, "up")
            ip("-n", name, "addr", "add", address, "dev", inside)
            ip("-n", name, "link", "set", inside, "up")

    def _on_signal(self, signum: int, frame: object) -> None:
        self.remove()
        previous = self._previous.get(signum)
        if callable(previous):
            previous(signum, frame)
        raise SystemExit(128 + signum)

    def remove(self) -> None:
        """Kill what runs in the namespaces, delete them, the bridges and the veths. Idempotent."""
        if not self._made:
            return
        self._made = False
        sweep(self.tag)
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)  # type: ignore[arg-type]
        self._previous.clear()

    # running and faults ------------------------------------------------------------------------

    def argv(self, namespace: str, argv: list[str]) -> list[str]:
        """A command run inside a namespace (`ip netns exec` execs it: the pid is the command's)."""
        return ["ip", "netns", "exec", namespace, *argv]

    def cut(self, i: int) -> None:
        """Machine i loses Redis and the database (not the provider): its data leg leaves the bridge."""
        ip("link", "set", f"{self.tag}d{i}", "nomaster")

    def heal(self, i: int) -> None:
        ip("link", "set", f"{self.tag}d{i}", "master", f"{self.tag}d")


def pids_in(namespace: str) -> list[int]:
    done = ip("netns", "pids", namespace, check=False)
    return [int(p) for p in done.stdout.split()] if done.returncode == 0 else []


def kill_namespace(namespace: str) -> list[int]:
    """SIGKILL everything running in a namespace (a machine's power cut); the pids killed."""
    pids = pids_in(namespace)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids


def sweep(tag: str) -> None:
    """Remove every namespace, bridge and veth named after `tag` (this run's, or a dead run's)."""
    listed = ip("netns", "list", check=False).stdout.split("\n")
    for line in listed:
        name = line.split(" ")[0].strip()
        if name.startswith(f"{tag}-"):
            kill_namespace(name)
            ip("netns", "del", name, check=False)
    links = ip("-o", "link", "show", check=False).stdout.split("\n")
    for line in links:
        parts = line.split(": ")
        if len(parts) > 1:
            name = parts[1].split("@")[0]
            if name.startswith(tag) and name[len(tag):len(tag) + 1] in ("d", "p"):
                ip("link", "del", name, check=False)
