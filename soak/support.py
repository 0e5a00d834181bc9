"""What the front-door soak scripts (pipelining.py, starvation.py, idle_sockets.py) share: a
/healthz probe on a new connection from a chosen loopback address, and percentiles."""

import socket
import time

HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"


def healthz(host, port, source, timeout=2.0):
    """(status or error name, seconds) of /healthz on a new connection from SOURCE; TIMEOUT
    bounds the whole exchange, connect included, not each read."""
    started = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=timeout, source_address=(source, 0)) as s:
            s.sendall(HEALTHZ)
            data = b""
            while b"\r\n\r\n" not in data:
                s.settimeout(max(0.01, timeout - (time.monotonic() - started)))
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            return (int(data.split(b" ")[1]) if data.startswith(b"HTTP/1.") else "no answer"), time.monotonic() - started
    except OSError as e:
        return type(e).__name__, time.monotonic() - started


def percentile(values, p):
    """The P-th percentile of VALUES by nearest rank (nan for none)."""
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else float("nan")
