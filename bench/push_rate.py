"""Pushes per second from `patchctl notify` to TOKENS device tokens (default 10000), against
the loopback APNs stand-in of the tests (Tests/interop/apns_standin.py: HTTP/2 over TLS,
every ES256 token verified), so the figure is bounded by that Python server as much as by
patchctl; APNs itself cannot be reached from these machines.

    PATCHCTL=… python bench/push_rate.py [TOKENS]

The tokens are written straight into push_devices (the rows `POST /v1/apps/{app}/devices`
stores), since registering 10,000 over HTTP would measure that route instead. Prints the
round's wall time, pushes per second and what the stand-in saw; asserts nothing.

    PATCHCTL=… PATCHD=… python bench/push_rate.py refreshes [SECONDS] [PROCESSES]

What a flood of device-token refreshes costs the check path and publishes (issue 43,
item 5: 100 tokens re-registered 9 times a second from 300 addresses took timestamp.json's
p99 from 1.5 to 215 ms). 100 tokens are registered, then PROCESSES senders refresh them
round and round at 900 a second in all, each from one of 300 addresses (127.0.0.1 is a
trusted proxy): first the same values (`same`: nothing to write), then alternating the
version between 2.3 and 2.4 (`changing`: every refresh a write). Measured for SECONDS each,
as bench/reports_flood.py measures a report flood (patchd on CPU 0, the load on CPU 1):
timestamp.json from a new device per request at 500 a second alone and during each flood,
publishes alone and during the changing flood. Prints one JSON object.
"""
import json
import multiprocessing
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Tests" / "interop"))
from apns_standin import APNsStandIn  # noqa: E402
from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from hotpatch_testing import Workspace  # noqa: E402

TEAM, KEY_ID, TOPIC = "TEAM123456", "KEY1234567", "com.example.demo"


def main(tokens):
    with tempfile.TemporaryDirectory() as tmp:
        key = ec.generate_private_key(ec.SECP256R1())
        p8 = Path(tmp) / "AuthKey.p8"
        p8.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        ws = Workspace(Path(tmp) / "ws")
        ws.create_app("demo")
        ws.ok("apps", "apns", "demo", "--team-id", TEAM, "--key-id", KEY_ID, "--key", p8, "--topic", TOPIC)
        ws.publish("demo", "2.3", "fix(1)")
        # Refreshed now: a token 60 days silent is never pushed to.
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with sqlite3.connect(ws.sqlite) as db:
            db.executemany("INSERT INTO push_devices(app, token, environment, app_version, channel, registered_at) VALUES (?,?,?,?,?,?)",
                           [("demo", f"{n:064x}", "production", "2.3", "production", now) for n in range(tokens)])
        standin = APNsStandIn(key.public_key(), TEAM, KEY_ID, TOPIC)
        try:
            started = time.monotonic()
            result = ws.run("notify", "--app", "demo", env=standin.env, timeout=3600)
            seconds = time.monotonic() - started
        finally:
            standin.stop()
        print(result.stdout.strip() or result.stderr.strip())
        print(f"{tokens} tokens in {seconds:.2f} s: {tokens / seconds:.0f} pushes/s "
              f"(stand-in accepted {len(standin.accepted)}, problems {len(standin.problems)}, provider tokens {len(standin.jwts)})")


REFRESHES_PER_SECOND = 900
TOKENS = 100
ADDRESSES = 300


def device_token(n):
    return f"{n:064x}"


def refresh_flood(url, index, processes, changing, start, stop, sent):
    """Refreshes of the 100 tokens, this sender's share of 900 a second, each from its own
    address of 300; `changing` alternates the version, so each refresh is a write."""
    from patchd_support import connection
    from reports_flood import background
    background()
    conn = connection(url, timeout=60)
    rate = REFRESHES_PER_SECOND / processes
    start.wait()
    began = time.monotonic()
    n = 0
    while not stop.is_set():
        due = began + n / rate
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        k = n * processes + index
        t = k % TOKENS
        version = ("2.3", "2.4")[(k // TOKENS) % 2] if changing else "2.3"
        body = json.dumps({"token": device_token(t), "appVersion": version}).encode()
        a = k % ADDRESSES
        conn.request("POST", "/v1/apps/demo/devices", body=body,
                     headers={"X-Device-ID": f"device-{t}", "Content-Type": "application/json", "X-Forwarded-For": f"10.{a // 250}.{a % 250}.1"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status in (200, 201, 503), (resp.status, resp.headers)
        n += 1
    sent.value = n
    conn.close()


def refreshes(seconds, processes):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from patchd_support import Patchd, request
    from reports_flood import measure_checks, ms, pin, publishes
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws")
        ws.create_app("demo")
        ws.ok("apps", "throttle", "demo", "--ip-rate", "off")
        ws.publish("demo", "2.3", "fix(1)")
        ws.publish("demo", "2.4", "fix(2)")
        token = [ws.token("--app", "demo", "--role", "publisher", "--name", f"bench-{i}") for i in range(12)]
        server = Patchd(ws, args=["--trusted-proxy", "127.0.0.1", "--max-new-conns-per-ip", "0"])
        split = os.cpu_count() >= 2
        if split:
            pin(server.proc.pid, 0)
            os.sched_setaffinity(0, {1})
        try:
            for t in range(TOKENS):
                body = json.dumps({"token": device_token(t), "appVersion": "2.3"}).encode()
                r = request(server.url, "/v1/apps/demo/devices", method="POST", body=body,
                            headers={"X-Device-ID": f"device-{t}", "Content-Type": "application/json", "X-Forwarded-For": f"10.9.{t}.1"})
                assert r.status == 201, r.status
            checks_alone = measure_checks(server.url, seconds, "alone")
            publish_alone = publishes(server, token, seconds)

            def flood(changing, beside):
                start, stop = multiprocessing.Event(), multiprocessing.Event()
                sent = [multiprocessing.Value("i", 0) for _ in range(processes)]
                workers = [multiprocessing.Process(target=refresh_flood, args=(server.url, i, processes, changing, start, stop, sent[i]))
                           for i in range(processes)]
                for w in workers:
                    w.start()
                time.sleep(0.5)
                began = time.monotonic()
                start.set()
                result = beside()
                stop.set()
                for w in workers:
                    w.join()
                return round(sum(s.value for s in sent) / (time.monotonic() - began)), result

            same_rate, checks_same = flood(False, lambda: measure_checks(server.url, seconds, "same"))
            changing_rate, checks_changing = flood(True, lambda: measure_checks(server.url, seconds, "changing"))
            publish_rate, publish_changing = flood(True, lambda: publishes(server, token, seconds))
            metrics = [line for line in request(server.url, "/metrics").body.decode().splitlines()
                       if line.startswith("hotpatch_push") or line.startswith('hotpatch_requests_total{route="devices"')]
            print(json.dumps({
                "seconds": seconds, "processes": processes, "cpus_split": split, "refreshes_per_s_asked": REFRESHES_PER_SECOND,
                "check_ms_alone": ms(checks_alone),
                "check_ms_same_refreshes": ms(checks_same), "same_refreshes_per_s": same_rate,
                "check_ms_changing_refreshes": ms(checks_changing), "changing_refreshes_per_s": changing_rate,
                "publish_ms_alone": ms(publish_alone), "publish_ms_changing_refreshes": ms(publish_changing),
                "changing_refreshes_per_s_with_publishes": publish_rate, "metrics": metrics,
            }, indent=1))
        finally:
            server.stop()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "refreshes":
        refreshes(float(sys.argv[2]) if len(sys.argv) > 2 else 10, int(sys.argv[3]) if len(sys.argv) > 3 else 4)
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
