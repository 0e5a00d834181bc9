"""Revoke → patch dropped on DEVICES simulated devices, woken by push (issue 15's bench row).

A real patchd serves a registry with demo 2.3 patches 1 and 2 live; DEVICES devices (default
1000) check once (each is then inside its one-hour interval) and register a push token. Then
`patchctl revoke --patch 2 --notify` runs on the registry (pushes go from where the .p8 key is)
against the loopback APNs stand-in of the tests (Tests/interop/apns_standin.py: HTTP/2 over TLS,
every ES256 provider token verified). Each push the stand-in accepts wakes its device: it asks
for timestamp.json with `X-Push-Timestamp: N` (what PatchClient.handlePush sends), retried while
patchd answers the older version (patchd picks up a patchctl commit on SQLite within its
one-second reload). A device's figure is from just before patchctl starts to the moment it holds
the timestamp whose targets drop patch 2. Prints one JSON object; asserts nothing.

    PATCHCTL=… PATCHD=… python bench/revoke_push.py [DEVICES] [THREADS]
"""
import json
import queue
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Tests" / "interop"))
from apns_standin import APNsStandIn  # noqa: E402
from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from hotpatch_testing import Workspace  # noqa: E402
from patchd_support import Patchd, request  # noqa: E402

TEAM, KEY_ID, TOPIC = "TEAM123456", "KEY1234567", "com.example.demo"


class WakingStandIn(APNsStandIn):
    """The tests' stand-in, handing every accepted push to the device it names."""

    def __init__(self, *args, woken):
        super().__init__(*args)
        self.woken = woken

    def _answer(self, headers, body):
        status, reason = super()._answer(headers, body)
        if status == 200:
            token = headers.get(":path", "")[len("/3/device/"):]
            self.woken.put((token, json.loads(body)["hotpatch"]["timestamp"]))
        return status, reason


def timestamp_version(url, device, announced=None):
    headers = {"X-Device-ID": device, "X-App-Version": "2.3"}
    if announced is not None:
        headers["X-Push-Timestamp"] = str(announced)
    resp = request(url, "/v1/apps/demo/metadata/timestamp.json", headers=headers)
    return resp.status, (json.loads(resp.body)["signed"]["version"] if resp.status == 200 else None)


def main(devices, threads):
    with tempfile.TemporaryDirectory() as tmp:
        key = ec.generate_private_key(ec.SECP256R1())
        p8 = Path(tmp) / "AuthKey.p8"
        p8.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        ws = Workspace(Path(tmp) / "ws")
        ws.create_app("demo")
        ws.ok("apps", "throttle", "demo", "--ip-rate", "off")  # 1,000 devices share 127.0.0.1
        ws.ok("apps", "apns", "demo", "--team-id", TEAM, "--key-id", KEY_ID, "--key", p8, "--topic", TOPIC)
        ws.publish("demo", "2.3", "fix(1)")
        ws.publish("demo", "2.3", "fix(2)")
        woken = queue.Queue()
        standin = WakingStandIn(key.public_key(), TEAM, KEY_ID, TOPIC, woken=woken)
        # 1,000 new tokens, and 2,000 new connections, from one address
        server = Patchd(ws, args=["--push-new-per-network", "0", "--max-new-conns-per-ip", "0"])
        try:
            before = {}
            for n in range(devices):
                device, token = f"push-{n}", f"{n:064x}"
                status, version = timestamp_version(server.url, device)
                assert status == 200, status
                before[token] = (device, version)
                body = json.dumps({"token": token, "appVersion": "2.3", "channel": "production", "environment": "production"}).encode()
                assert request(server.url, "/v1/apps/demo/devices", method="POST", body=body,
                               headers={"Content-Type": "application/json", "X-Device-ID": device}).status in (200, 201, 202, 204)
            landed, throttled, lock = {}, [0], threading.Lock()

            def device_worker():
                while True:
                    item = woken.get()
                    if item is None:
                        return
                    token, announced = item
                    device, old = before[token]
                    while True:
                        status, version = timestamp_version(server.url, device, announced)
                        if status == 200 and version >= announced:
                            with lock:
                                landed.setdefault(token, time.monotonic() - started)
                            break
                        if status == 429:
                            with lock:
                                throttled[0] += 1
                            break
                        time.sleep(0.02)  # patchd has not reloaded the revoke yet

            workers = [threading.Thread(target=device_worker, daemon=True) for _ in range(threads)]
            for w in workers:
                w.start()
            started = time.monotonic()
            result = ws.run("revoke", "--app", "demo", "--app-version", "2.3", "--patch", "2", "--notify", env=standin.env, timeout=600)
            revoke_seconds = time.monotonic() - started
            deadline = time.monotonic() + 120
            while len(landed) + throttled[0] < devices and time.monotonic() < deadline:
                time.sleep(0.05)
            for _ in workers:
                woken.put(None)
            for w in workers:
                w.join(10)
        finally:
            server.stop()
            standin.stop()
        figures = sorted(landed.values())

        def pct(p):
            return round(figures[min(len(figures) - 1, int(p * len(figures)))] * 1000, 1) if figures else None

        print(json.dumps({
            "devices": devices, "landed": len(figures), "throttled": throttled[0], "revoke_rc": result.rc,
            "revoke_ms": round(revoke_seconds * 1000, 1), "pushes_accepted": len(standin.accepted),
            "problems": len(standin.problems), "p50_ms": pct(0.50), "p99_ms": pct(0.99),
            "max_ms": round(figures[-1] * 1000, 1) if figures else None,
            "mean_ms": round(statistics.mean(figures) * 1000, 1) if figures else None,
        }))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000, int(sys.argv[2]) if len(sys.argv) > 2 else 32)
