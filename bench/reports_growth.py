"""The most a forger can add to the registry in an hour through device reports (issue 20).

    PATCHCTL=… PATCHD=… python bench/reports_growth.py [DEVICES]   (default 25000)

patchd's default report rules; 127.0.0.1 a trusted proxy; DEVICES forged devices, each from
an address of its own /16 (so no network or block budget binds before the app's), each
sending one report of the five events that each make a row of their own (downloaded,
installed, launched, confirmed, rolledBack) with valid receipts (computed from the registry's
secret, bench/receipts.py). The app's hourly budgets (20,000 new devices, 100,000 events) are
what stops it. Prints the events counted and dropped and the registry's growth per counted
event, from which docs/SECURITY.md states the worst-case growth per day.
"""
import json
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Tests" / "interop"))
from hotpatch_testing import Workspace  # noqa: E402
from patchd_support import Patchd, connection  # noqa: E402
from receipts import address, receipt, secret  # noqa: E402

KINDS = ("downloaded", "installed", "launched", "confirmed", "rolledBack")


def size(ws):
    db = sqlite3.connect(ws.sqlite)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages, page = db.execute("PRAGMA page_count").fetchone()[0], db.execute("PRAGMA page_size").fetchone()[0]
        return pages * page
    finally:
        db.close()


def main():
    devices = int(sys.argv[1]) if len(sys.argv) > 1 else 25_000
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws")
        ws.create_app("demo")
        ws.ok("apps", "throttle", "demo", "--ip-rate", "off")
        ws.publish("demo", "2.3", "fix(1)")
        server = Patchd(ws, args=["--trusted-proxy", "127.0.0.1", "--max-new-conns-per-ip", "0"])
        try:
            key = secret(str(ws.sqlite))
            before = size(ws)
            conn = connection(server.url)
            for i in range(devices):
                device = f"forged-{i}"
                r = receipt(key, device)
                body = json.dumps({"events": [{"id": str(uuid.uuid4()), "type": k, "appVersion": "2.3", "patch": 1, "receipt": r}
                                              for k in KINDS]}).encode()
                while True:  # a full queue (503) is waited out, as a device does
                    conn.request("POST", "/v1/apps/demo/reports", body=body,
                                 headers={"X-Device-ID": device, "Content-Type": "application/json", "X-Forwarded-For": address(i)})
                    resp = conn.getresponse()
                    resp.read()
                    if resp.status != 503:
                        break
                    time.sleep(0.05)
                assert resp.status == 202, resp.status
            conn.close()
        finally:
            server.stop()  # counts the queue before it exits
        metrics = {}
        again = Patchd(ws)
        try:
            conn = connection(again.url)
            conn.request("GET", "/metrics")
            for line in conn.getresponse().read().decode().splitlines():
                if line.startswith("hotpatch_patch_devices{") and 'event="installed"' in line:
                    metrics["installed_devices"] = int(line.rsplit(" ", 1)[1])
            conn.close()
        finally:
            again.stop()
        db = sqlite3.connect(ws.sqlite)
        rows = {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                for t in ("report_events", "report_devices", "report_senders", "report_blocks", "report_budget")}
        db.close()
        grown = size(ws) - before
        counted = rows["report_events"]
        print(json.dumps({
            "devices_sent": devices, "events_sent": devices * len(KINDS), "events_counted": counted, "rows": rows,
            "installed_devices": metrics.get("installed_devices"), "registry_growth_bytes": grown,
            "bytes_per_counted_event": round(grown / counted, 1) if counted else None,
        }, indent=1))


if __name__ == "__main__":
    main()
