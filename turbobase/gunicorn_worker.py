"""gunicorn's worker with JSON refusals: what gunicorn answers itself, before Django, is JSON too.

gunicorn refuses a request it cannot parse before any Django code runs — a request line over
``limit_request_line`` (414), a header line over ``limit_request_field_size`` or more than
``limit_request_fields`` headers (431), a control byte or other bad byte in a header, a bad
method or version (400) — and answers with an HTML page (``gunicorn.util.write_error``). Under
``/v1/`` every answer is JSON with an ``error`` code, so this worker writes the same status as a
JSON body instead, with ``Connection: close`` (gunicorn closes the connection after it).

The path is not known reliably then (the request line itself may be what was refused), so the
body is JSON for every path, the admin's and the home page's too. The limits stay gunicorn's:
they bound what a connection may make the server buffer before anything else runs.

Rejected: raising gunicorn's limits and enforcing them again in Django (a middleware answering
414 / 431 as JSON). Only the size limits could move; a control byte in a header still never
reaches Django, so this worker would be needed anyway, and the same limits would then live in two
places. gunicorn's own answer, status and log line are kept: its ``handle_error`` runs as
written, and only the page it writes is replaced.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from gunicorn import util
from gunicorn.workers.gthread import ThreadWorker

from kernel.codes import KernelError
from turbobase.codes import EdgeCode
from turbobase.connection_close import CloseWhenDue

# The error code of each status gunicorn can answer itself; another status answers its reason.
CODES = {
    400: EdgeCode.BAD_REQUEST,
    403: KernelError.FORBIDDEN,
    414: EdgeCode.REQUEST_LINE_TOO_LONG,
    417: EdgeCode.EXPECTATION_FAILED,
    431: EdgeCode.REQUEST_HEADERS_TOO_LARGE,
    500: EdgeCode.SERVER_ERROR,
    501: EdgeCode.NOT_IMPLEMENTED,
}
DETAIL_MAX_CHARS = 200


class _Page:
    """Stands in for the client socket while gunicorn writes its HTML page: keeps the bytes."""

    def __init__(self) -> None:
        self.data = b""

    def gettimeout(self) -> float:
        return 0.0  # already non-blocking: write_nonblock only calls sendall

    def sendall(self, data: bytes) -> None:
        self.data += data


class JsonErrorThreadWorker(ThreadWorker):
    """gunicorn's ``gthread`` worker whose own refusals are JSON (``worker_class`` in
    ``gunicorn_conf.py``), and which closes a connection whenever its answer says so
    (``connection_close``)."""

    wsgi: Any  # the application, set by gunicorn's load_wsgi

    def load_wsgi(self) -> None:
        super().load_wsgi()
        self.wsgi = CloseWhenDue(self.wsgi)

    def handle_error(self, req: Any, client: socket.socket, addr: Any, exc: BaseException) -> None:
        page = _Page()
        super().handle_error(req, page, addr, exc)
        status_line = page.data.split(b"\r\n", 1)[0].decode("latin-1")
        _, status, reason = (status_line.split(" ", 2) + ["", ""])[:3]
        status_int = int(status) if status.isdigit() else 500
        body = json_error(status_int, reason, exc, self.cfg)
        try:
            util.write_nonblock(client, body)
        except Exception:  # the client is gone: as gunicorn's own writer, nothing to answer
            self.log.debug("Failed to send error message.")


def json_error(status: int, reason: str, exc: BaseException, cfg: Any) -> bytes:
    """The HTTP answer for ``status``: a JSON ``{error, message}`` body, ``Connection: close``."""
    code = CODES.get(status)
    payload = {
        "error": str(code) if code else reason.lower().replace(" ", "_") or EdgeCode.BAD_REQUEST,
        "message": _message(status, exc, cfg),
    }
    body = json.dumps(payload).encode("utf-8")
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "Connection: close\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1") + body


def _message(status: int, exc: BaseException, cfg: Any) -> str:
    if status == 414:
        return f"the request line is longer than {cfg.limit_request_line} bytes"
    if status == 431:  # gunicorn's LimitRequestHeaders says which limit
        if "size" in str(exc):
            return f"the request has a header line longer than {cfg.limit_request_field_size} bytes"
        if "fields" in str(exc):
            return f"the request has more than {cfg.limit_request_fields} headers"
        return "the request's headers are larger than the server accepts"
    if status >= 500 and status != 501:  # the server's failure: its details are for the log
        return "the server could not handle the request; it was logged"
    detail = str(exc)
    if len(detail) > DETAIL_MAX_CHARS:
        detail = detail[:DETAIL_MAX_CHARS] + "…"
    return f"the request cannot be read: {detail}" if detail else "the request cannot be read"
