"""What test_front_door.py and test_front_door_limits.py share: requests written byte for
byte, the checks every refused request must pass, and the workspace and patchd fixtures."""

import re

import pytest
from hotpatch_testing import Workspace
from raw_http import RawConn, json_error

PUBLISH = "/v1/apps/demo/patches?appVersion={}"
HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def msg(*lines, body=b""):
    """A request: LINES (str, or bytes sent as they are) joined with CRLF, an empty line, BODY."""
    raw = [line if isinstance(line, bytes) else line.encode("latin-1") for line in lines]
    return b"\r\n".join(raw) + b"\r\n\r\n" + body


def publish_head(token, length, version="2.3", *extra):
    return msg(f"POST {PUBLISH.format(version)} HTTP/1.1", "Host: 127.0.0.1",
               f"Authorization: Bearer {token}", f"Content-Length: {length}", *extra)


def refused(url, data, status, timeout=2.0):
    """Sends DATA on a new connection. It must get exactly one answer, at once: STATUS with
    the JSON error body and `Connection: close`, one status line; then the connection closes
    and nothing after the error is served."""
    with RawConn(url) as conn:
        conn.send(data)
        resp = conn.response(timeout)
        assert resp is not None, f"no answer within {timeout} s; received {conn.received[:300]!r}"
        json_error(resp, status)
        assert "close" in (resp.header("connection") or "").lower(), f"no Connection: close: {resp.headers}"
        assert conn.wait_closed(timeout), "the connection stayed open after the error"
        assert conn.buffer == b"", f"something more was answered after the error: {conn.buffer[:300]!r}"
        assert len(re.findall(rb"(?:^|\r\n)HTTP/1\.[01] \d{3}", conn.received)) == 1, conn.received[:600]
        return resp


def answered(url, data, timeout=2.0, source=None):
    with RawConn(url, source=source) as conn:
        conn.send(data)
        resp = conn.response(timeout)
        assert resp is not None, f"no answer within {timeout} s; received {conn.received[:300]!r}"
        return resp


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    """demo (per-IP limit off, one patch for 2.3) and tight (3 requests/min per IP)."""
    w = Workspace(tmp_path_factory.mktemp("front") / "ws")
    w.json("apps", "create", "demo")
    w.ok("apps", "throttle", "demo", "--ip-rate", "off")
    w.json("apps", "create", "tight")
    w.ok("apps", "throttle", "tight", "--ip-rate", "3")
    w.publish("demo", "2.3", "defineClass('A', {});\n")
    return w


