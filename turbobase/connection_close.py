"""gunicorn closes the connection after an answer that says ``Connection: close`` or that starts
before the request's body was read to its end — and says so.

gunicorn (27) drops the ``Connection`` header an application sets and writes its own: a Django
answer with ``Connection: close`` (``api_errors.bad_request``) went out as ``keep-alive``. After a
keep-alive answer gunicorn's ``gthread`` worker drains what the application left of the request
body — at most 64 KB, within 5 s — and closes the connection when it cannot, so the client's next
request on it met a closed socket (issue 20: a 400 or a 401 for a body of MBs, 5 trials of 6).
Refusals answered before the body is read (no credentials, no route, a body over
``DATA_UPLOAD_MAX_MEMORY_SIZE``) leave it unread, and so does Django for a chunked body, which it
never reads. This wrapper (installed around the application by ``gunicorn_worker``) counts what
the application reads, and when the answer asks to close or starts before the body's end it tells
gunicorn's response to close (``force_close``: gunicorn then writes ``Connection: close`` and
closes gracefully after the answer). So an answer that says keep-alive leaves nothing to drain.
Any unread body closes, not only one over gunicorn's 64 KB: the rule does not lean on gunicorn's
internals, and a refusal's connection is cheap to open again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _CountedInput:
    """``wsgi.input`` counting the bytes read and noticing its end."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.read_bytes = 0
        self.is_at_end = False

    def _seen(self, data: bytes, size: int | None) -> bytes:
        self.read_bytes += len(data)
        if not data and size != 0:
            self.is_at_end = True
        return data

    def read(self, size: int | None = -1) -> bytes:
        size = -1 if size is None else size
        data = self._stream.read(size)
        if size < 0:  # everything there is was read
            self.is_at_end = True
        return self._seen(data, size)

    def readline(self, size: int | None = -1) -> bytes:
        size = -1 if size is None else size
        return self._seen(self._stream.readline(size), size)

    def readlines(self, hint: int | None = None) -> list[bytes]:
        lines = list(self._stream.readlines(hint) if hint else self._stream.readlines())
        self.read_bytes += sum(len(line) for line in lines)
        self.is_at_end = self.is_at_end or not hint or not lines
        return lines

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.readline, b"")

    def __getattr__(self, name: str) -> Any:  # anything else the server's input offers
        return getattr(self._stream, name)


def _declared_length(environ: dict[str, Any]) -> int | None:
    """The body's Content-Length; None for a chunked body (length unknown until its end)."""
    if "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
        return None
    try:
        return max(int(environ.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0


def _says_close(headers: list[tuple[str, str]]) -> bool:
    return any(k.lower() == "connection" and "close" in v.lower() for k, v in headers)


def _force_close(start_response: Callable[..., Any]) -> None:
    """Tell gunicorn's response (``start_response`` is its bound method) to close."""
    server_response = getattr(start_response, "__self__", None)
    force_close = getattr(server_response, "force_close", None)
    if callable(force_close):
        force_close()


class CloseWhenDue:
    """WSGI wrapper around the Django application, under gunicorn (``gunicorn_worker``)."""

    def __init__(self, app: WsgiApp) -> None:
        self.app = app

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        length = _declared_length(environ)
        body = None
        if length != 0:  # a body that may be left unread
            body = _CountedInput(environ["wsgi.input"])
            environ["wsgi.input"] = body

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            is_unread = body is not None and not (
                body.is_at_end if length is None else body.read_bytes >= length
            )
            if is_unread or _says_close(headers):
                _force_close(start_response)
            return start_response(status, headers, exc_info)

        return self.app(environ, start)
