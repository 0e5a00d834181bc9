"""Pipelining against patchd (issue 19): what one connection may make the server hold.
`one`: MB megabytes of `GET /healthz` with a 16 KB header in 256 KiB writes over one
connection while a thread reads the answers (before the fix RSS grew 1:1 with the bytes
sent: +1.36 GB in 6 s). `nonreading`: CONNECTIONS connections, each from its own 127.0.x.y,
pipeline as fast as their sockets take it and never read, for SECONDS: half the same
/healthz requests (the input side), half GETs of TARGET_PATH, a bundle (the output side:
patchd holds one answer and 48 KiB of input per connection, and reads no more while the
answer waits), while CLIENT_ADDRESS asks for /healthz. Sending stops once RSS growth passes
4x the limit. Prints one JSON line (its "row" a line of the soak's table); exit 1 if RSS grew
LIMIT_MIB or more, a request of `one` went unanswered, or /healthz failed (`one`: or took
2 s; `nonreading`: 10 s, as a debug build is CPU-bound there; its max is printed).
Usage: pipelining.py URL PID one MB LIMIT_MIB
       pipelining.py URL PID nonreading CONNECTIONS SECONDS LIMIT_MIB TARGET_PATH [CLIENT_ADDRESS]"""
import json
import re
import resource
import socket
import sys
import threading
import time
import urllib.parse

from support import healthz

REQUEST = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 16000 + b"\r\n\r\n"
HEAD = re.compile(rb"HTTP/1\.[01] (\d{3})[^\r\n]*\r\n(.*?)\r\n\r\n", re.S)
LENGTH = re.compile(rb"(?im)^content-length:\s*(\d+)")
ANSWERED_S = 10.0


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))


class Peak(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.before = pid, rss_kb(pid)
        self.peak, self.halt = self.before, threading.Event()
        self.start()

    def run(self):
        while not self.halt.wait(0.05):
            self.peak = max(self.peak, rss_kb(self.pid))

    @property
    def growth_mib(self):
        return (self.peak - self.before) / 1024

    def stop(self):
        self.halt.set()
        self.join(1)
        self.peak = max(self.peak, rss_kb(self.pid))


def one(host, port, pid, megabytes, limit):
    n = -(-megabytes * 1000 * 1000 // len(REQUEST))
    total, write = n * len(REQUEST), 256 * 1024
    sock = socket.create_connection((host, port), timeout=10, source_address=("127.0.0.3", 0))
    statuses, answered, closed = {}, [0], [False]

    def read():
        buf, pos = b"", 0
        while answered[0] < n:
            try:
                chunk = sock.recv(1 << 18)
            except OSError:
                chunk = b""
            if not chunk:
                closed[0] = True
                return
            buf, pos = buf[pos:] + chunk, 0
            while True:
                m = HEAD.match(buf, pos)
                if not m:
                    break
                length = LENGTH.search(m.group(2))
                end = m.end() + (int(length.group(1)) if length else 0)
                if end > len(buf):
                    break
                statuses[m.group(1).decode()] = statuses.get(m.group(1).decode(), 0) + 1
                answered[0] += 1
                pos = end

    peak = Peak(pid)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    big = REQUEST * (write // len(REQUEST) + 2)
    sent, error, started = 0, None, time.monotonic()
    try:
        while sent < total:
            off = sent % len(REQUEST)
            piece = big[off:off + min(write, total - sent)]
            sock.sendall(piece)
            sent += len(piece)
            if peak.growth_mib > 4 * limit:
                error = "stopped early: RSS growth past 4x the limit"
                break
    except OSError as e:
        error = repr(e)
    seconds = time.monotonic() - started
    reader.join(20)
    sock.close()
    peak.stop()
    ok = error is None and answered[0] == n and set(statuses) <= {"200", "429"} and peak.growth_mib < limit
    row = (f"| {megabytes} MB pipelined over one connection (16 KB heads, 256 KiB writes) | "
           f"RSS +{peak.growth_mib:.1f} MiB; {answered[0]}/{n} answered {statuses} in {seconds:.1f} s | "
           f"< {limit:.0f} MiB, every request answered | {'ok' if ok else 'FAIL'} |")
    return ok, {"mode": "one", "bytes_sent": sent, "requests": n, "answered": answered[0], "statuses": statuses,
                "server_closed": closed[0], "seconds": round(seconds, 1), "rss_before_kb": peak.before,
                "rss_peak_kb": peak.peak, "rss_growth_mib": round(peak.growth_mib, 1), "error": error, "row": row}


def nonreading(host, port, pid, count, seconds, limit, target, client):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, count + 256)), hard))
    chunk = 64 * 1024
    streams = [REQUEST, f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode()]
    bigs = [r * (chunk // len(r) + 2) for r in streams]
    conns, offsets, sent, closed = [], [0] * count, [0] * count, set()
    for i in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 256 * 1024)  # this host's kernel memory, not patchd's
        s.bind((f"127.0.{2 + i // 250}.{1 + i % 250}", 0))
        s.settimeout(5)
        s.connect((host, port))
        s.setblocking(False)
        conns.append(s)
    # Warm-up: the first GET of the app builds its catalog (every bundle of the app read into
    # memory once); that is not what the connections hold.
    with socket.create_connection((host, port), timeout=10, source_address=("127.0.0.249", 0)) as w:
        w.sendall(streams[1].replace(b"HTTP/1.1\r\n", b"HTTP/1.1\r\nConnection: close\r\n", 1))
        while w.recv(1 << 16):
            pass
    peak = Peak(pid)
    probes, error, last_probe = [], None, 0.0
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        progress = 0
        for i, s in enumerate(conns):
            if i in closed:
                continue
            try:
                n = s.send(bigs[i % 2][offsets[i]:offsets[i] + chunk])
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                closed.add(i)
                continue
            offsets[i] = (offsets[i] + n) % len(streams[i % 2])
            sent[i] += n
            progress += n
        if peak.growth_mib > 4 * limit:
            error = "stopped early: RSS growth past 4x the limit"
            break
        if time.monotonic() - last_probe > 0.5:
            last_probe = time.monotonic()
            probes.append(healthz(host, port, client, ANSWERED_S))
        if not progress:
            time.sleep(0.02)
    time.sleep(0.5)
    probes.append(healthz(host, port, client, ANSWERED_S))
    for s in conns:
        s.close()
    peak.stop()
    bad = [p for p in probes if p[0] != 200]
    worst = max(p[1] for p in probes)
    ok = error is None and not bad and peak.growth_mib < limit and not closed
    row = (f"| {count} connections pipelining, never reading, {seconds:.0f} s (half 16 KB heads, half bundle GETs) | "
           f"RSS +{peak.growth_mib:.1f} MiB ({sum(sent[0::2]) / 1e6:.0f} + {sum(sent[1::2]) / 1e6:.0f} MB pushed, {len(closed)} closed); "
           f"/healthz {len(probes) - len(bad)}/{len(probes)} answered, max {worst * 1000:.0f} ms | "
           f"< {limit:.0f} MiB, /healthz answered | {'ok' if ok else 'FAIL'} |")
    return ok, {"mode": "nonreading", "connections": count, "seconds": seconds, "bytes_sent": sum(sent),
                "bytes_sent_healthz_half": sum(sent[0::2]), "bytes_sent_bundle_half": sum(sent[1::2]), "closed_by_server": len(closed),
                "rss_before_kb": peak.before, "rss_peak_kb": peak.peak, "rss_growth_mib": round(peak.growth_mib, 1),
                "healthz_from": client, "healthz_probes": len(probes), "healthz_failed": [list(p) for p in bad][:5],
                "worst_healthz_ms": round(worst * 1000, 1), "error": error, "row": row}


def main():
    url, pid, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    parts = urllib.parse.urlsplit(url)
    if mode == "one":
        ok, report = one(parts.hostname, parts.port, pid, int(sys.argv[4]), float(sys.argv[5]))
    elif mode == "nonreading":
        client = sys.argv[8] if len(sys.argv) > 8 else "127.0.0.250"
        ok, report = nonreading(parts.hostname, parts.port, pid, int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]),
                                sys.argv[7], client)
    else:
        sys.exit(__doc__)
    print(json.dumps(report))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
