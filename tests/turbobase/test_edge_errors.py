"""Issue 20 item 5, against the real server (tb_run: gunicorn with turbobase/gunicorn_conf.py) over
raw sockets: every answer under /v1/ is JSON with an ``error`` code — gunicorn's own refusals
included — and a connection the server closes says ``Connection: close`` first."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.workers

UPLOAD_LIMIT = 2_621_440  # Django's DATA_UPLOAD_MAX_MEMORY_SIZE (the default; settings leave it)


class Answer:
    def __init__(self, head: bytes, body: bytes) -> None:
        status_line, *lines = head.decode("latin-1").split("\r\n")
        self.status = int(status_line.split(" ")[1])
        self.headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
        self.body = body

    def json(self) -> object:
        assert self.headers["content-type"] == "application/json", self.headers
        return json.loads(self.body)


def connect(live) -> socket.socket:
    address = urlparse(live.base)
    return socket.create_connection((address.hostname, address.port), timeout=30)


def send(sock: socket.socket, data: bytes) -> None:
    """In a thread: the server may answer (and close) before a large body is all sent."""

    def sending() -> None:
        with contextlib.suppress(OSError):  # the server stopped reading: its answer says why
            sock.sendall(data)

    thread = threading.Thread(target=sending, daemon=True)
    thread.start()


def read_answer(sock: socket.socket, buffer: bytearray) -> Answer:
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        assert chunk, f"closed before an answer: {bytes(buffer)!r}"
        buffer += chunk
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    answer = Answer(head, b"")
    length = int(answer.headers["content-length"])
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, "closed in the middle of an answer"
        rest += chunk
    answer.body, leftover = rest[:length], rest[length:]
    buffer[:] = leftover
    return answer


def is_closed_by_server(sock: socket.socket) -> bool:
    """The server closes the connection (end of stream, or a reset for the unread body)."""
    sock.settimeout(10)
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True


def request(method: str, path: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    lines = [
        f"{method} {path} HTTP/1.1",
        "Host: 127.0.0.1",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def test_a_body_over_the_upload_limit_answers_json_and_closes(live, admin_token):
    body = json.dumps({"parent": {"note": "x" * (UPLOAD_LIMIT + 10)}}).encode()
    headers = {"Authorization": f"Bearer {admin_token}", "Content-Type": "application/json"}
    with connect(live) as sock:  # keep-alive is HTTP/1.1's default: nothing asks to close
        send(sock, request("POST", "/v1/data/legacy_customer", headers, body))
        answer = read_answer(sock, bytearray())
        assert answer.status == 400
        assert answer.json() == {
            "error": "bad_request",
            "message": "Request body exceeded settings.DATA_UPLOAD_MAX_MEMORY_SIZE.",
        }
        assert answer.headers["connection"] == "close"
        assert is_closed_by_server(sock)


def test_a_refusal_that_leaves_the_body_unread_closes_and_a_read_one_keeps_alive(live, admin_token):
    big = json.dumps({"parent": {"note": "x" * 300_000}}).encode()
    with connect(live) as sock:  # no credentials: 401 before the body is read
        send(sock, request("POST", "/v1/data/legacy_customer", {}, big))
        answer = read_answer(sock, bytearray())
        assert (answer.status, answer.headers["connection"]) == (401, "close")
        assert answer.json()["error"] == "not_authenticated"
        assert is_closed_by_server(sock)

    # A body the view reads: the connection stays open and serves the next request.
    small = json.dumps({"parent": {"company_name": "Edge keep-alive"}}).encode()
    headers = {"Authorization": f"Bearer {admin_token}", "Content-Type": "application/json"}
    with connect(live) as sock:
        buffer = bytearray()
        sock.sendall(request("POST", "/v1/data/legacy_customer", headers, small))
        created = read_answer(sock, buffer)
        assert (created.status, created.headers["connection"]) == (201, "keep-alive")
        sock.sendall(request("GET", "/v1/health", {}))
        assert read_answer(sock, buffer).status == 200


# What gunicorn refuses before Django sees the request: its limits stay, its answer is JSON.
REFUSED = {
    "request line over 4,094 bytes": (
        b"GET /v1/" + b"a" * 4100 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
        414,
        {
            "error": "request_line_too_long",
            "message": "the request line is longer than 4094 bytes",
        },
    ),
    "header line over 8,190 bytes": (
        b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 8200 + b"\r\n\r\n",
        431,
        {
            "error": "request_headers_too_large",
            "message": "the request has a header line longer than 8190 bytes",
        },
    ),
    "more than 100 headers": (
        b"GET /v1/health HTTP/1.1\r\nHost: x\r\n"
        + b"".join(b"X-H%d: 1\r\n" % n for n in range(101))
        + b"\r\n",
        431,
        {"error": "request_headers_too_large", "message": "the request has more than 100 headers"},
    ),
    "control byte in a header": (
        b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Ctl: a\x01b\r\n\r\n",
        400,
        {
            "error": "bad_request",
            "message": "the request cannot be read: Invalid HTTP Header: 'X-CTL'",
        },
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_what_gunicorn_refuses_answers_json_and_closes(live, case):
    data, status, body = REFUSED[case]
    with connect(live) as sock:
        sock.sendall(data)
        answer = read_answer(sock, bytearray())
        assert (answer.status, answer.headers["connection"]) == (status, "close")
        assert answer.json() == body
        assert is_closed_by_server(sock)
