"""The app under a real uvicorn server on a free loopback port, on a thread of this process: for
tests of what talks to joust over a socket (the client, the CLI's HTTP commands)."""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from service.config import Settings
from service.web.app import create_app


@contextmanager
def serving(settings: Settings) -> Iterator[str]:
    """Serve the app on `settings`; yields its URL (`http://127.0.0.1:PORT/`)."""
    # proto IPPROTO_TCP, not socket()'s 0: asyncio sets TCP_NODELAY only on such sockets (and their
    # accepted ones); without it each answer after a connection's first waits 40 ms for a delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
