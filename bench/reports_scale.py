"""Registry size, patchd's RSS and the figures' read times with the report state of many
devices, and the guard's decision time once the threshold is crossed.

    PATCHCTL=… PATCHD=… python bench/reports_scale.py [DEVICES]   (default 1000000)

The registry is made with patchctl (one app, one patch, a guard at 2 % over 50 devices);
the report state of DEVICES devices that installed and confirmed the patch is then written
straight into its report tables with the rows patchd's ingest writes (Registry+Reports.swift:
128 bits of SHA-256 per device, a 128-bit key per (device, event id), the per-device rows and their
counts), since posting a million reports one by one would take hours. Then patchd starts on
it and this measures: stats and /metrics read times, one report's time (its 202: counting
follows off the request path), RSS, the file size, and the time from the report that makes
the guard halt the patch to the first simple check that no longer offers it (the halt
committed, re-signed and served). The seeded rollbacks come from 5 blocks (the guard's
quorum), and every report carries its receipt (bench/receipts.py).
"""
import hashlib
import json
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Tests" / "interop"))
from hotpatch_testing import Workspace  # noqa: E402
from patchd_support import Patchd, request  # noqa: E402
from receipts import receipt, secret  # noqa: E402


def seed(db_path, devices, hour):
    db = sqlite3.connect(db_path)
    db.execute("PRAGMA synchronous=OFF")
    key = ("demo", "2.3", "production", 1)
    with db:
        for start in range(0, devices, 50_000):
            hashes = [hashlib.sha256(f"device-{i}".encode()).hexdigest()[:32] for i in range(start, min(start + 50_000, devices))]
            db.executemany("INSERT INTO report_events(app, event_key, received_hour) VALUES ('demo', ?, ?)",
                           [(hashlib.sha256(f"{h}\0{e}".encode()).hexdigest()[:32], hour) for h in hashes for e in ("i", "c")])
            db.executemany("INSERT INTO report_devices(app, app_version, channel, patch, event, reason, device) VALUES (?,?,?,?,?,'',?)",
                           [key + (event, h) for h in hashes for event in ("installed", "confirmed")])
        for event in ("installed", "confirmed"):
            db.execute("INSERT INTO report_counts VALUES (?,?,?,?,?,'',?)", key + (event, devices))
            db.execute("INSERT INTO report_hourly VALUES (?,?,?,?,?,?,?)", key + (hour, event, devices))
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


def wilson_lower(k, n, z=1.959963984540054):
    p = k / n
    return (p + z * z / (2 * n) - z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5)) / (1 + z * z / n)


def add_rollbacks(db_path, k):
    """k of the seeded devices also rolled back (the rows ingest writes for it)."""
    db = sqlite3.connect(db_path)
    with db:
        db.executemany("INSERT INTO report_devices VALUES ('demo','2.3','production',1,'rolledBack','',?)",
                       [(hashlib.sha256(f"device-{i}".encode()).hexdigest()[:32],) for i in range(k)])
        db.execute("INSERT INTO report_counts VALUES ('demo','2.3','production',1,'rolledBack','',?)", (k,))
        # They came from 5 blocks: the guard's quorum (ReportRules.minBlocks).
        db.executemany("INSERT INTO report_blocks VALUES ('demo','2.3','production',1,'rolledBack',?)",
                       [(f"10.{b}.0.0/16",) for b in range(5)])
    db.close()


def timed(fn, n=20):
    times = []
    for _ in range(n):
        started = time.monotonic()
        fn()
        times.append(time.monotonic() - started)
    return {"p50_ms": round(statistics.median(times) * 1000, 2), "max_ms": round(max(times) * 1000, 2)}


def rss_kb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return None


KEY = None
# Every simulated device here is 127.0.0.1: more than a network's 20 new devices an hour.
LIFTED = ["--report-devices-per-network", "1000", "--report-devices-per-block", "1000"]


def post(server, device, kinds):
    r = receipt(KEY, device)
    body = json.dumps({"events": [{"id": str(uuid.uuid4()), "type": k, "appVersion": "2.3", "patch": 1, "receipt": r} for k in kinds]}).encode()
    return request(server.url, "/v1/apps/demo/reports", method="POST", body=body, headers={"X-Device-ID": device})


def main():
    devices = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws")
        ws.create_app("demo")
        ws.ok("apps", "throttle", "demo", "--ip-rate", "off")
        ws.publish("demo", "2.3", "fix(1)", rollout="50")
        ws.ok("apps", "guard", "demo", "--max-rollback-rate", "2%", "--min-devices", "50")
        auditor = ws.token("--all", "--role", "auditor", "--name", "bench")
        started = time.monotonic()
        seed(str(ws.sqlite), devices, time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime()))
        seeded = time.monotonic() - started
        size = sum(f.stat().st_size for f in ws.data.iterdir())
        global KEY
        server = Patchd(ws, args=LIFTED)
        try:
            KEY = secret(str(ws.sqlite))
            auth = {"Authorization": f"Bearer {auditor}"}
            stats = timed(lambda: request(server.url, "/v1/apps/demo/stats", headers=auth))
            metrics = timed(lambda: request(server.url, "/metrics"))
            counter = iter(range(10**9))
            report = timed(lambda: post(server, f"new-{next(counter)}", ["installed", "confirmed"]))
            figures = json.loads(request(server.url, "/v1/apps/demo/stats", headers=auth).body)["patches"][0]["devices"]
            # Rollbacks seeded just under the threshold (the Wilson lower bound of k of n at
            # most 2 %), so the next device that installs and rolls back crosses it.
            time.sleep(1)  # the 20 timed reports are counted
            figures = json.loads(request(server.url, "/v1/apps/demo/stats", headers=auth).body)["patches"][0]["devices"]
            n, k = figures["installed"], 0
            while wilson_lower(k + 1, n + 1) <= 0.02:
                k += 1
            add_rollbacks(str(ws.sqlite), k)
            server.stop()
            server = Patchd(ws, args=LIFTED)
            below = timed(lambda: post(server, f"quiet-{next(counter)}", ["confirmed"]), n=5)
            started = time.monotonic()
            post(server, "the-one-that-crosses", ["installed", "rolledBack"])
            # New devices inside the 50 % rollout (PROTOCOL.md section 7), each asking once.
            probes = (d for d in (f"probe-{i}" for i in range(10**9))
                      if int.from_bytes(hashlib.sha256(f"demo|2.3|1|{d}".encode()).digest()[:4], "big") % 100 < 50)
            while request(server.url, "/v1/apps/demo/versions/2.3/patch", headers={"X-Device-ID": next(probes)}).status != 204:
                if time.monotonic() - started > 30:
                    raise SystemExit("the guard did not halt the patch within 30 s")
            decision = time.monotonic() - started
            served = 204
            answer = request(server.url, "/v1/apps/demo/stats", headers=auth)
            assert answer.status == 200, answer.body
            trip = json.loads(answer.body)["trips"][0]
            print(json.dumps({
                "devices": devices, "seed_s": round(seeded, 1), "registry_bytes": size,
                "bytes_per_device": round(size / devices, 1), "installed_seen": figures["installed"],
                "stats": stats, "metrics": metrics, "one_report": report, "patchd_rss_kb": rss_kb(server.proc.pid),
                "guard": {"installed": trip["installed"], "rolledBack": trip["rolledBack"], "lowerBoundPpm": trip["lowerBoundPpm"],
                          "crossing_report_ms": round(decision * 1000, 2), "report_below_threshold": below, "check_after": served},
            }, indent=1))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
