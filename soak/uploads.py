"""Uploads against patchd's front door: CONNECTIONS connections each declaring an 11 MB body
(10 MB with a token) to the publish route and sending it as fast as the server reads it, first without a token
and then with one, while a client on another loopback address checks /healthz. Before the
front door took uploads by their head, every such body was buffered whole before auth ran
(200 × 11 MB took patchd from 72 MB to 2.1 GB RSS). Prints one JSON line with patchd's RSS
before and at its peak; exit 1 if /healthz failed or RSS grew more than LIMIT_MB.
Usage: uploads.py URL PID TOKEN CONNECTIONS LIMIT_MB"""
import http.client
import json
import socket
import sys
import threading
import time
import urllib.parse

# 11 MB as in the report that found the defect; authenticated uploads declare 10 MB, just
# under the publish route's 10 MiB limit, so they are admitted and meet the body budget.
BODY = 11 * 1000 * 1000
AUTHENTICATED_BODY = 10 * 1000 * 1000


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))


def upload(host, port, token, results, index):
    body = AUTHENTICATED_BODY if token else BODY
    s = socket.create_connection((host, port), timeout=20)
    head = f"POST /v1/apps/demo/patches?appVersion=9.{index} HTTP/1.1\r\nHost: x\r\nContent-Length: {body}\r\n"
    if token:
        head += f"Authorization: Bearer {token}\r\n"
    s.sendall((head + "\r\n").encode())
    chunk = b"x" * 65536
    sent, status = 0, None
    try:
        s.settimeout(0.5)
        while sent < body:
            try:
                data = s.recv(4096)
                if data:
                    status = data.split(b" ")[1].decode()
                    break
                break
            except socket.timeout:
                pass
            s.settimeout(20)
            sent += s.send(chunk)
            s.settimeout(0.001)
        if status is None:
            s.settimeout(20)
            data = s.recv(4096)
            status = data.split(b" ")[1].decode() if data else "closed"
    except OSError as e:
        status = status or f"error {type(e).__name__}"
    finally:
        s.close()
    results[index] = (status, sent)


def main():
    url, pid, token, count, limit_mb = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    parts = urllib.parse.urlsplit(url)
    before = rss_kb(pid)
    peak = before
    report = {"connections": count, "declared_bytes": {"unauthenticated": BODY, "authenticated": AUTHENTICATED_BODY}, "rss_before_kb": before}
    ok = True
    for label, tok in (("unauthenticated", None), ("authenticated", token)):
        results = [None] * count
        threads = [threading.Thread(target=upload, args=(parts.hostname, parts.port, tok, results, i)) for i in range(count)]
        for t in threads:
            t.start()
        worst, answered = 0.0, 0
        while any(t.is_alive() for t in threads):
            peak = max(peak, rss_kb(pid))
            started = time.monotonic()
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10, source_address=("127.0.0.2", 0))
            conn.request("GET", "/healthz")
            response = conn.getresponse()
            response.read()
            conn.close()
            ok &= response.status == 200
            worst = max(worst, time.monotonic() - started)
            answered += 1
            time.sleep(0.05)
        for t in threads:
            t.join()
        statuses = {}
        for status, _ in results:
            statuses[status] = statuses.get(status, 0) + 1
        report[label] = {"statuses": statuses, "body_bytes_sent_total": sum(sent for _, sent in results),
                         "healthz_answered": answered, "worst_healthz_ms": round(worst * 1000, 1)}
    report["rss_peak_kb"] = peak
    report["rss_growth_mb"] = round((peak - before) / 1024, 1)
    print(json.dumps(report))
    sys.exit(0 if ok and peak - before <= limit_mb * 1024 else 1)


if __name__ == "__main__":
    main()
