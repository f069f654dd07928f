"""A loopback server that accepts connections and never answers: what a ``$ref`` to a host that
holds the line looks like. It counts what it accepted, so "nothing connected" is counted.

Each connection is dropped after ``hold`` seconds, unanswered, so code under test that did
connect (the bug this catches) fails the test instead of hanging it.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class SilentServer:
    def __init__(self, *, hold: float = 3.0) -> None:
        self.hold = hold
        self.accepted = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def port(self) -> int:
        return self._listener.getsockname()[1]

    def url(self, path: str = "schema.json") -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    def _serve(self) -> None:
        held: list[tuple[float, socket.socket]] = []
        while not self._stopped.is_set():
            try:
                conn, _ = self._listener.accept()
                self.accepted += 1
                held.append((time.monotonic() + self.hold, conn))
            except TimeoutError:
                pass
            now = time.monotonic()
            for due, conn in [h for h in held if h[0] <= now]:
                conn.close()
                held.remove((due, conn))
        for _, conn in held:
            conn.close()

    def start(self) -> SilentServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)
        self._listener.close()


@contextmanager
def silent_server(*, hold: float = 3.0) -> Iterator[SilentServer]:
    server = SilentServer(hold=hold).start()
    try:
        yield server
    finally:
        server.stop()
