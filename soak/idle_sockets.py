"""Idle and half-open sockets against patchd (issue 19).
`silent`: COUNT sockets, PER from each 127.0.x.y, that never send a byte: each must be closed
at --header-timeout (HEADER_TIMEOUT) from its accept, give or take 2 s (before the fix they
were kept for the 30 s idle timeout), while CLIENT_ADDRESS gets /healthz.
`cap`: COUNT (patchd's --max-conns) keep-alive connections, PER from each address, each
served one /healthz and then idle, fill the cap (the issue: 80 addresses x 127 idle sockets
and everyone else got 503); then NEWCOMERS connections from other addresses, each kept open,
must each be served 200 within 2 s (patchd sheds its oldest idle connection for each).
Prints one JSON line (its "row" a line of the soak's table); exit 1 on a broken bound.
Usage: idle_sockets.py URL silent COUNT PER HEADER_TIMEOUT [CLIENT_ADDRESS]
       idle_sockets.py URL cap COUNT PER NEWCOMERS"""
import json
import re
import resource
import select
import socket
import sys
import time
import urllib.parse

from support import HEALTHZ, healthz, percentile

LENGTH = re.compile(rb"(?im)^content-length:\s*(\d+)")


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < n:
        sys.exit(f"RLIMIT_NOFILE hard limit {hard} is below the {n} descriptors this phase needs")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, n), hard))


def address(i, per, base=10):
    k = i // per
    return f"127.0.{base + k // 250}.{1 + k % 250}"


def silent(host, port, count, per, header_timeout, client):
    raise_nofile(count + 256)
    socks, opened = {}, {}
    for i in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((address(i, per, base=40), 0))  # not the cap phase's addresses: their new-connection buckets stay full
        s.settimeout(5)
        s.connect((host, port))
        s.setblocking(False)
        socks[s.fileno()] = s
        opened[s.fileno()] = time.monotonic()
    poller = select.poll()
    for fd in socks:
        poller.register(fd, select.POLLIN)
    cuts, probes = {}, []
    deadline = time.monotonic() + header_timeout + 4
    last_probe = 0.0
    while len(cuts) < count and time.monotonic() < deadline:
        for fd, _ in poller.poll(100):
            try:
                if socks[fd].recv(4096):
                    continue  # a 408 before the close: read on
            except BlockingIOError:
                continue
            except OSError:
                pass
            cuts[fd] = time.monotonic() - opened[fd]
            poller.unregister(fd)
        if time.monotonic() - last_probe > 0.5:
            last_probe = time.monotonic()
            probes.append(healthz(host, port, client))
    for s in socks.values():
        s.close()
    times = list(cuts.values())
    bad = [p for p in probes if p[0] != 200 or p[1] >= 2.0]
    early = [t for t in times if t < header_timeout - 0.5]
    ok = len(cuts) == count and max(times) <= header_timeout + 2 and not early and not bad
    row = (f"| {count} sockets that never send a byte ({count // per} addresses) | cut after p50 {percentile(times, 50):.2f} s, "
           f"max {max(times, default=float('nan')):.2f} s; {count - len(cuts)} still open; /healthz {len(probes) - len(bad)}/{len(probes)} ok | "
           f"all cut {header_timeout - 0.5:.1f} to {header_timeout + 2:.0f} s after connect | {'ok' if ok else 'FAIL'} |")
    return ok, {"mode": "silent", "sockets": count, "addresses": count // per, "header_timeout": header_timeout,
                "closed_by_server": len(cuts), "cut_p50_s": round(percentile(times, 50), 2),
                "cut_max_s": round(max(times, default=float("nan")), 2), "cut_min_s": round(min(times, default=float("nan")), 2),
                "healthz_from": client, "healthz_probes": len(probes), "healthz_failed": [list(p) for p in bad][:5], "row": row}


def read_answers(socks, timeout):
    """Reads one whole response on each socket; returns {fd: status or None}."""
    poller, bufs, status = select.poll(), {}, {}
    for s in socks:
        poller.register(s.fileno(), select.POLLIN)
        bufs[s.fileno()] = b""
    by_fd = {s.fileno(): s for s in socks}
    deadline = time.monotonic() + timeout
    while len(status) < len(socks) and time.monotonic() < deadline:
        for fd, _ in poller.poll(100):
            try:
                chunk = by_fd[fd].recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                status[fd] = "closed"
                poller.unregister(fd)
                continue
            bufs[fd] += chunk
            head, sep, body = bufs[fd].partition(b"\r\n\r\n")
            length = LENGTH.search(head)
            if sep and len(body) >= (int(length.group(1)) if length else 0):
                status[fd] = int(head.split(b" ")[1])
                poller.unregister(fd)
    return {s.fileno(): status.get(s.fileno()) for s in socks}


def cap(host, port, count, per, newcomers):
    raise_nofile(count + 512)
    conns, statuses = [], {}
    started = time.monotonic()
    for first in range(0, count, 500):
        batch = []
        for i in range(first, min(count, first + 500)):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((address(i, per), 0))
            s.settimeout(5)
            s.connect((host, port))
            s.sendall(HEALTHZ)
            s.setblocking(False)
            batch.append(s)
        for v in read_answers(batch, 10).values():
            statuses[v] = statuses.get(v, 0) + 1
        conns += batch
    filled = time.monotonic() - started
    # Newcomers stay open (keep-alive), so each one needs a slot of its own.
    results, kept = [], []
    for k in range(newcomers):
        t0 = time.monotonic()
        try:
            s = socket.create_connection((host, port), timeout=2, source_address=(f"127.0.9.{1 + k % 250}", 0))
            kept.append(s)
            s.sendall(HEALTHZ)
            data = s.recv(4096)
            results.append((int(data.split(b" ")[1]) if data.startswith(b"HTTP/1.") else "no answer", time.monotonic() - t0))
        except OSError as e:
            results.append((type(e).__name__, time.monotonic() - t0))
    for s in kept:
        s.close()
    poller = select.poll()
    for s in conns:
        poller.register(s.fileno(), select.POLLIN)
    shed = len(poller.poll(0))
    for s in conns:
        s.close()
    latencies = [r[1] for r in results]
    bad = [r for r in results if r[0] != 200 or r[1] >= 2.0]
    ok = statuses.get(200) == count and not bad
    row = (f"| {count} idle keep-alive connections fill --max-conns ({count // per} addresses), then {newcomers} newcomers | "
           f"filled in {filled:.1f} s ({statuses}); newcomers {newcomers - len(bad)}/{newcomers} served, p50 "
           f"{percentile(latencies, 50) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms; {shed} idle shed | "
           f"every newcomer 200 < 2 s | {'ok' if ok else 'FAIL'} |")
    return ok, {"mode": "cap", "connections": count, "addresses": count // per, "fill_seconds": round(filled, 1),
                "fill_statuses": {str(k): v for k, v in statuses.items()}, "newcomers": newcomers,
                "newcomers_failed": [list(r) for r in bad][:5], "newcomer_p50_ms": round(percentile(latencies, 50) * 1000, 1),
                "newcomer_max_ms": round(max(latencies) * 1000, 1), "idle_shed": shed, "row": row}


def main():
    url, mode = sys.argv[1], sys.argv[2]
    parts = urllib.parse.urlsplit(url)
    if mode == "silent":
        client = sys.argv[6] if len(sys.argv) > 6 else "127.0.0.250"
        ok, report = silent(parts.hostname, parts.port, int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), client)
    elif mode == "cap":
        ok, report = cap(parts.hostname, parts.port, int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    else:
        sys.exit(__doc__)
    print(json.dumps(report))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
