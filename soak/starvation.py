"""Starvation against patchd (issue 19): FLOODERS connections (as many as patchd's --threads),
each from its own address, pipeline ~29 KB heads with 99 field lines to an unrouted path as
fast as their sockets take them while reading the answers as fast as they come (404, then
429 once the address's global bucket is spent); meanwhile a client asks for /healthz every
50 ms, from CLIENTS addresses in turn (127.0.8.1 on; one would spend its own 600/min bucket). Before the fix each such connection held its event loop: with as many as
--threads nothing else was served or even accepted. Prints one JSON line (its "row" a line
of the soak's table) with the probes' p50/p99/max; exit 1 if a probe failed or took 2 s or
more, or a flood stopped before the end.
Usage: starvation.py URL FLOODERS SECONDS [CLIENTS]"""
import json
import socket
import sys
import threading
import time
import urllib.parse

from support import healthz, percentile

FIELD = "a" * 290
HEAD = ("GET /no/such/path HTTP/1.1\r\nHost: x\r\n" + "".join(f"X-Flood-{i:02d}: {FIELD}\r\n" for i in range(98)) + "\r\n").encode()
LIMIT_S = 2.0


class Flooder:
    def __init__(self, host, port, source):
        self.sock = socket.create_connection((host, port), timeout=5, source_address=(source, 0))
        self.sent = self.received = self.answers = 0
        self.last_answer, self.error, self.halt = time.monotonic(), None, threading.Event()
        self.threads = [threading.Thread(target=f, daemon=True) for f in (self.write, self.read)]
        for t in self.threads:
            t.start()

    def write(self):
        block, off = memoryview(HEAD * 64), 0
        sock = self.sock.dup()
        sock.settimeout(0.5)
        while not self.halt.is_set():
            try:
                n = sock.send(block[off:])
            except socket.timeout:
                continue
            except OSError as e:
                if not self.halt.is_set():
                    self.error = self.error or repr(e)
                return
            self.sent += n
            off = (off + n) % len(block)

    def read(self):
        sock = self.sock.dup()
        sock.settimeout(0.5)
        while not self.halt.is_set():
            try:
                chunk = sock.recv(1 << 18)
            except socket.timeout:
                continue
            except OSError as e:
                if not self.halt.is_set():
                    self.error = self.error or repr(e)
                return
            if not chunk:
                if not self.halt.is_set():
                    self.error = self.error or "closed by the server"
                return
            self.received += len(chunk)
            n = chunk.count(b"HTTP/1.1 ")
            if n:
                self.answers += n
                self.last_answer = time.monotonic()

    def stop(self):
        self.halt.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        for t in self.threads:
            t.join(2)


def main():
    url, count, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    clients = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    parts = urllib.parse.urlsplit(url)
    flooders = []
    probes = []
    try:
        for i in range(count):
            flooders.append(Flooder(parts.hostname, parts.port, f"127.0.0.{11 + i}"))
            time.sleep(0.5)  # under way before the next connects, so it lands on another loop
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            probes.append(healthz(parts.hostname, parts.port, f"127.0.8.{1 + len(probes) % clients}", LIMIT_S))
            time.sleep(0.05)
        still = [f.error is None and time.monotonic() - f.last_answer < 2.0 for f in flooders]
    finally:
        for f in flooders:
            f.stop()
    latencies = [p[1] for p in probes]
    bad = [p for p in probes if p[0] != 200 or p[1] >= LIMIT_S]
    p50, p99, worst = (percentile(latencies, q) * 1000 for q in (50, 99, 100))
    ok = not bad and all(still)
    row = (f"| starvation: {count} flooding connections, one per loop, {seconds:.0f} s | /healthz p50 {p50:.0f} ms, "
           f"p99 {p99:.0f} ms, max {worst:.0f} ms ({len(probes)} probes, {len(bad)} failed); floods "
           f"{', '.join(f'{f.sent / 1e6:.0f} MB / {f.answers} answers' for f in flooders)} | every probe < {LIMIT_S:.0f} s, "
           f"floods still answered | {'ok' if ok else 'FAIL'} |")
    print(json.dumps({"flooders": count, "seconds": seconds, "healthz_from": f"127.0.8.1-{clients}", "probes": len(probes),
                      "failed": [list(p) for p in bad][:5], "p50_ms": round(p50, 1), "p99_ms": round(p99, 1),
                      "max_ms": round(worst, 1), "floods": [{"sent_bytes": f.sent, "answers": f.answers, "error": f.error}
                                                             for f in flooders], "row": row}))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
