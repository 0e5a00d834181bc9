"""What it costs an anonymous forger to halt a guarded patch (issue 20), measured on a real patchd.

    PATCHCTL=… PATCHD=… python bench/guard_attack.py [DEVICES]   (default 2000)

One app, one patch at 100 %, the default guard (`--max-rollback-rate 2% --min-devices 50`) and
patchd's default report rules; 127.0.0.1 is a trusted proxy so each forged device can claim an
address (X-Forwarded-For). Each forged device does what a forger must: download the bundle under
its device ID (its receipt), then report `installed` and `rolledBack`. Three attacks, each on a
fresh registry, DEVICES devices at most: from one address; from 100 addresses of one /16; from
one address in each of 5 /16 blocks. Prints one JSON object: per attack the devices sent, the
time, whether and after how many devices and seconds the patch was halted (a new device's
simple check, every 5 devices, answers 204), and what the figures counted.
"""
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Tests" / "interop"))
from hotpatch_testing import Workspace  # noqa: E402
from patchd_support import Patchd, connection  # noqa: E402

ARGS = ["--trusted-proxy", "127.0.0.1", "--max-new-conns-per-ip", "0"]


def call(conn, method, path, headers, body=None):
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    return resp.status, resp.getheader("X-Patch-Receipt"), resp.read()


def attack(address_of, devices):
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws")
        ws.create_app("demo")
        ws.ok("apps", "throttle", "demo", "--ip-rate", "off")
        ws.publish("demo", "2.3", "fix(1)")
        ws.ok("apps", "guard", "demo", "--max-rollback-rate", "2%", "--min-devices", "50")
        sha = ws.json("list", "--app", "demo")[0]["sha256"]
        server = Patchd(ws, args=ARGS)
        conn = connection(server.url)
        try:
            started = time.monotonic()
            halted_after = None
            for i in range(devices):
                where = {"X-Device-ID": f"forged-{i}", "X-Forwarded-For": address_of(i)}
                if i % 5 == 0:  # a new device's simple check: 204 once the patch is halted
                    status, _, _ = call(conn, "GET", "/v1/apps/demo/versions/2.3/patch", {"X-Device-ID": f"probe-{i}"})
                    if status == 204:
                        halted_after = (i, time.monotonic() - started)
                        break
                status, receipt, _ = call(conn, "GET", f"/v1/apps/demo/targets/2.3/1/{sha}.main.js", where)
                events = [{"id": str(uuid.uuid4()), "type": kind, "appVersion": "2.3", "patch": 1, "receipt": receipt}
                          for kind in ("installed", "rolledBack")]
                call(conn, "POST", "/v1/apps/demo/reports", {**where, "Content-Type": "application/json"},
                     json.dumps({"events": events}).encode())
            elapsed = time.monotonic() - started
            server.stop()  # counts what is queued before it exits
            rollout = ws.json("list", "--app", "demo")[0]["rollout"]
            figures = ws.json("status", "--app", "demo")["apps"][0]["reports"]["patches"]
            counted = figures[0]["devices"] if figures else {}
            return {"devices_sent": halted_after[0] if halted_after else devices, "seconds": round(elapsed, 2),
                    "halted": rollout == 0, "halted_after_devices": halted_after[0] if halted_after else None,
                    "halted_after_s": round(halted_after[1], 2) if halted_after else None,
                    "installed_counted": counted.get("installed", 0), "rolled_back_counted": counted.get("rolledBack", 0)}
        finally:
            conn.close()
            server.stop()


def main():
    devices = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    print(json.dumps({
        "devices": devices,
        "one_address": attack(lambda i: "198.51.100.7", devices),
        "one_slash16_100_addresses": attack(lambda i: f"203.0.{i % 100}.9", devices),
        "five_slash16_blocks": attack(lambda i: f"{100 + i % 5}.64.0.9", devices),
    }, indent=1))


if __name__ == "__main__":
    main()
