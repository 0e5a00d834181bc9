"""Slowloris against patchd: open many connections that send a request line and then one
header byte every few seconds, and check that normal requests are still answered quickly.
Usage: slowloris.py URL CONNECTIONS SECONDS. Prints one JSON line; exit 1 on failure."""
import json
import socket
import sys
import time
import urllib.parse
import urllib.request


def main():
    url, count, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    parts = urllib.parse.urlsplit(url)
    idle = []
    for i in range(count):
        s = socket.create_connection((parts.hostname, parts.port), timeout=5)
        s.sendall(f"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow-{i}: ".encode())
        idle.append(s)
    worst, served, closed = 0.0, 0, 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.monotonic()
        with urllib.request.urlopen(url + "/healthz", timeout=10) as response:
            assert response.status == 200
        worst = max(worst, time.monotonic() - started)
        served += 1
        for s in idle:
            try:
                s.send(b"a")  # one byte: keeps the request "in progress"
            except OSError:
                closed += 1
        idle = [s for s in idle if s.fileno() != -1]
        time.sleep(1)
    for s in idle:
        s.close()
    result = {"idle_connections": count, "healthz_answered": served, "worst_healthz_ms": round(worst * 1000, 1),
              "idle_closed_by_server": closed}
    print(json.dumps(result))
    sys.exit(0 if served > 0 and worst < 2.0 else 1)


if __name__ == "__main__":
    main()
