"""Raw HTTP/1.1 over a plain socket, for the front-door tests (test_front_door.py): bytes go
out exactly as written (bare LF, NUL, obs-fold, two Content-Lengths...), and what comes back
is split into responses by a small strict reader, so a second answer, a `100 Continue` or a
status line written twice is seen, and so is the server closing the connection."""

import json
import re
import socket
import time
import urllib.parse
from dataclasses import dataclass, field

STATUS_LINE = re.compile(rb"HTTP/1\.[01] (\d{3})(?: [^\r\n]*)?")


@dataclass
class RawResponse:
    status: int
    headers: list = field(default_factory=list)  # [(lower-case name, value)] in order
    body: bytes = b""

    def header(self, name):
        """The value of header NAME (the first line), or None."""
        values = self.all(name)
        return values[0] if values else None

    def all(self, name):
        return [v for k, v in self.headers if k == name.lower()]


def _chunked(data: bytes):
    """(body, bytes consumed) of a complete chunked body at the start of data, or None."""
    body, pos = b"", 0
    while True:
        end = data.find(b"\r\n", pos)
        if end < 0:
            return None
        size = int(data[pos:end].split(b";")[0], 16)
        pos = end + 2
        if size == 0:
            trailer_end = data.find(b"\r\n\r\n", pos - 2)
            return (body, trailer_end + 4) if trailer_end >= 0 else None
        if len(data) < pos + size + 2:
            return None
        body += data[pos:pos + size]
        pos += size + 2


def parse_response(data: bytes, closed: bool):
    """(RawResponse, bytes consumed) for the first complete response in data, or None.
    A response without a length is complete only once the peer has closed."""
    head_end = data.find(b"\r\n\r\n")
    if head_end < 0:
        return None
    lines = data[:head_end].split(b"\r\n")
    match = STATUS_LINE.fullmatch(lines[0])
    assert match, f"not an HTTP/1.x status line: {lines[0]!r} (received {data[:300]!r})"
    resp = RawResponse(int(match.group(1)))
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        assert sep and name and not name[-1:].isspace(), f"malformed response header {line!r}"
        resp.headers.append((name.decode("latin-1").lower(), value.strip().decode("latin-1")))
    rest = data[head_end + 4:]
    if resp.status < 200 or resp.status in (204, 304):
        return resp, head_end + 4
    if "chunked" in (resp.header("transfer-encoding") or "").lower():
        parsed = _chunked(rest)
        if parsed is None:
            return None
        resp.body = parsed[0]
        return resp, head_end + 4 + parsed[1]
    lengths = resp.all("content-length")
    if lengths:
        assert len(lengths) == 1, f"response with {len(lengths)} Content-Length headers: {data[:500]!r}"
        n = int(lengths[0])
        if len(rest) < n:
            return None
        resp.body = rest[:n]
        return resp, head_end + 4 + n
    if not closed:
        return None
    resp.body = rest
    return resp, len(data)


class RawConn:
    """One TCP connection to a server URL (http://host:port), optionally from a given local
    address (any of 127.0.0.0/8 on loopback) and with a small receive buffer (a client that
    reads slowly). `received` keeps every byte read."""

    def __init__(self, url, source=None, timeout=3.0, rcvbuf=None):
        parts = urllib.parse.urlsplit(url)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:  # before connect, so the advertised window stays small
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        if source:
            self.sock.bind((source, 0))
        self.sock.settimeout(timeout)
        self.sock.connect((parts.hostname, parts.port))
        self.buffer, self.received, self.closed = b"", b"", False

    def send(self, data: bytes) -> bool:
        """Sends data; False if the server already closed (its answer can still be read)."""
        try:
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False

    def _fill(self, deadline) -> bool:
        """Reads once; False on timeout or end of stream (then `closed` is set)."""
        remaining = deadline - time.monotonic()
        if self.closed or remaining <= 0:
            return False
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(1 << 16)
        except socket.timeout:
            return False
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.closed = True
            return False
        self.buffer += chunk
        self.received += chunk
        return True

    def response(self, timeout=3.0):
        """The next complete response, or None if none came within timeout (or the stream ended)."""
        deadline = time.monotonic() + timeout
        while True:
            parsed = parse_response(self.buffer, self.closed) if self.buffer else None
            if parsed:
                self.buffer = self.buffer[parsed[1]:]
                return parsed[0]
            if not self._fill(deadline):
                parsed = parse_response(self.buffer, self.closed) if self.buffer else None
                if parsed:
                    self.buffer = self.buffer[parsed[1]:]
                    return parsed[0]
                return None

    def wait_closed(self, timeout=2.0) -> bool:
        """Reads until the server closes (True) or timeout (False); bytes read stay in `buffer`."""
        deadline = time.monotonic() + timeout
        while self._fill(deadline):
            pass
        return self.closed

    def close(self):
        self.sock.close()

    def abort(self):
        """Shuts the connection down, then closes it; a thread blocked sending on it wakes."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def json_error(resp: RawResponse, status: int):
    """Checks that resp is STATUS with the JSON error body; returns its error object."""
    assert resp is not None, f"no response (expected {status})"
    assert resp.status == status, f"expected {status}, got {resp.status}: {resp.headers} {resp.body[:300]!r}"
    assert (resp.header("content-type") or "").startswith("application/json"), resp.headers
    err = json.loads(resp.body)["error"]
    assert isinstance(err["code"], str) and err["code"] and isinstance(err["message"], str) and err["message"], err
    return err
