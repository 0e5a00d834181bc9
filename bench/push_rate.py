"""Pushes per second from `patchctl notify` to TOKENS device tokens (default 10000), against
the loopback APNs stand-in of the tests (Tests/interop/apns_standin.py: HTTP/2 over TLS,
every ES256 token verified), so the figure is bounded by that Python server as much as by
patchctl; APNs itself cannot be reached from these machines.

    PATCHCTL=… python bench/push_rate.py [TOKENS]

The tokens are written straight into push_devices (the rows `POST /v1/apps/{app}/devices`
stores), since registering 10,000 over HTTP would measure that route instead. Prints the
round's wall time, pushes per second and what the stand-in saw; asserts nothing.
"""
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


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
