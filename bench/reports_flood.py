"""What a flood of unauthenticated device reports costs patchd, and the publishes beside it.

    PATCHCTL=.build/release/patchctl PATCHD=.build/release/patchd python bench/reports_flood.py [SECONDS] [THREADS]

Starts a patchd on a fresh registry, then measures for SECONDS each: publishes over HTTP alone
(latency), reports alone (requests/s, 100 events each from a new device per request), and both
at once (publish latency under the flood). Prints one JSON object. The per-IP bucket is off
for the app (every simulated device is 127.0.0.1), so this is the cost once a flood got past it.
"""
import json
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Tests" / "interop"))
from hotpatch_testing import Workspace  # noqa: E402
from patchd_support import Patchd, connection, token_file  # noqa: E402


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else None


def report_body(device_index):
    return json.dumps({"events": [{"id": str(uuid.uuid4()), "type": "installed" if i % 2 else "confirmed",
                                   "appVersion": "2.3", "patch": 1} for i in range(100)]}).encode()


def flood(server, stop, counts, index):
    conn = connection(server.url)
    n = 0
    while not stop.is_set():
        conn.request("POST", "/v1/apps/demo/reports", body=report_body(n),
                     headers={"X-Device-ID": f"flood-{index}-{n}", "Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        if resp.status == 202:
            n += 1
    counts[index] = n
    conn.close()


def publishes(server, token, seconds):
    latencies = []
    deadline = time.monotonic() + seconds
    conn = connection(server.url, timeout=60)
    i = 0
    while time.monotonic() < deadline:
        i += 1
        started = time.monotonic()
        conn.request("POST", "/v1/apps/demo/patches?appVersion=2.4&rollout=10", body=f"fix({uuid.uuid4()})".encode(),
                     headers={"Authorization": f"Bearer {token[i % len(token)]}"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 201, resp.status
        latencies.append(time.monotonic() - started)
        time.sleep(0.2)
    conn.close()
    return latencies


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws")
        ws.create_app("demo")
        ws.ok("apps", "throttle", "demo", "--ip-rate", "off")
        ws.publish("demo", "2.3", "fix(1)")
        # Changes are limited per token (30/min): enough tokens to publish 5 times a second.
        token = [ws.token("--app", "demo", "--role", "publisher", "--name", f"bench-{i}") for i in range(12)]
        server = Patchd(ws)
        try:
            alone = publishes(server, token, seconds)

            def run_flood(with_publishes):
                stop, counts = threading.Event(), [0] * threads
                workers = [threading.Thread(target=flood, args=(server, stop, counts, i)) for i in range(threads)]
                started = time.monotonic()
                for w in workers:
                    w.start()
                latencies = publishes(server, token, seconds) if with_publishes else (time.sleep(seconds) or [])
                stop.set()
                for w in workers:
                    w.join()
                return sum(counts) / (time.monotonic() - started), latencies

            flood_rate, _ = run_flood(False)
            busy_rate, beside = run_flood(True)
            size = sum(f.stat().st_size for f in ws.data.iterdir())
            print(json.dumps({
                "threads": threads, "seconds": seconds,
                "reports_per_s_alone": round(flood_rate, 1), "events_per_s_alone": round(flood_rate * 100),
                "reports_per_s_with_publishes": round(busy_rate, 1),
                "publish_ms_alone": {"p50": round(statistics.median(alone) * 1000, 1), "p99": round(percentile(alone, 0.99) * 1000, 1), "n": len(alone)},
                "publish_ms_under_flood": {"p50": round(statistics.median(beside) * 1000, 1), "p99": round(percentile(beside, 0.99) * 1000, 1), "n": len(beside)},
                "registry_bytes": size,
            }, indent=1))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
