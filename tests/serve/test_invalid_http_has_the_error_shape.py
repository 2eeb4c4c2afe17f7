"""A request that is not valid HTTP gets OpenAI's error shape too (JSON, ``error.code``),
as every other 4xx: uvicorn answered "Invalid HTTP request received." in plain text (and,
for broken chunked framing, inside a chunked body)."""

from __future__ import annotations

import json
import socket

import pytest

from tests.support.servehelp import serving

HEAD = b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
CASES = {
    "content-length not a number": HEAD + b"Content-Length: abc\r\n\r\n{}",
    "content-length negative": HEAD + b"Content-Length: -5\r\n\r\n{}",
    "two content-lengths": HEAD + b"Content-Length: 2\r\nContent-Length: 500\r\n\r\n{}",
    "chunk size not hex": HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
    "header line without a colon": b"GET /healthz HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n",
}


def _exchange(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):  # the server closes the connection after its answer
            out += chunk
    return out


@pytest.fixture(scope="module")
def port():
    with serving() as (url, _):
        yield int(url.rsplit(":", 1)[1])


@pytest.mark.parametrize("case", list(CASES))
def test_invalid_http_is_answered_in_the_api_error_shape(port: int, case: str) -> None:
    head, _, body = _exchange(port, CASES[case]).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0] == "HTTP/1.1 400 Bad Request", lines
    assert "content-type: application/json" in [h.lower() for h in lines[1:]], lines
    error = json.loads(body)["error"]
    assert error["code"] == "invalid_http" and error["type"] == "invalid_request_error"
    assert "not valid HTTP" in error["message"]
