"""Row 10d: a withhold lands on an app under the two-person rule (issue 44, part 1).

    PATCHCTL=… PATCHD=… python bench/withhold_landing.py [DEVICES] [WORKERS]

An app whose targets need 2 of alice's and bob's keys (neither on the server), patches 1 and 2
of 2.3 at 100 %, a withhold role whose key patchd holds (`keys withhold`, signed by both). A
real patchd serves it; DEVICES PatchClients (hotpatch-bench revoke-landing: each its own cache,
WORKERS syncing at a time) install patch 2, which starts their one-hour interval. Then one
on-call engineer's `patchctl revoke --server` runs with a publisher token and no release key:
it lands through the withhold role (exit 0, no second person), and every device syncs with
force (as a push would make it). A figure is from just before patchctl starts to the device's
sync returning without patch 2. Prints one JSON object; asserts nothing.
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "Tests" / "interop"))
from hotpatch_testing import Workspace  # noqa: E402
from patchd_support import Patchd, token_file  # noqa: E402
from test_two_person import APP, two_person_app  # noqa: E402


def main(devices, workers):
    bench = Path(os.environ["PATCHCTL"]).parent / "hotpatch-bench"
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws")
        alice, bob = two_person_app(ws)
        # Every simulated device shares 127.0.0.1: the per-address rate is lifted (not the interval).
        ws.ok("apps", "throttle", APP, "--ip-rate", "off")
        ws.ok("publish", "--app", APP, "--app-version", "2.3", ws.write_file(b"production(2);\n"), "--key-file", alice.pem, "--key-file", bob.pem)
        ws.ok("keys", "withhold", "--app", APP, "--key-file", alice.pem, "--key-file", bob.pem)
        token = token_file(ws, ws.token("--app", APP, "--role", "publisher", "--name", "oncall"), "oncall.token")
        server = Patchd(ws, args=["--max-conns-per-ip", "5000", "--max-new-conns-per-ip", "0"])
        try:
            out = subprocess.run([str(bench), "revoke-landing", "--server", server.url, "--app", APP, "--app-version", "2.3",
                                  "--root", str(ws.root_file(APP)), "--devices", str(devices), "--workers", str(workers),
                                  "--patchctl", os.environ["PATCHCTL"], "--token-file", str(token), "--patch", "2", "--device-prefix", "oncall"],
                                 capture_output=True, text=True, timeout=900)
        finally:
            server.stop()
        if out.returncode != 0:
            raise SystemExit(f"hotpatch-bench revoke-landing: {out.stderr}")
        result = json.loads(out.stdout)
        withheld = [e for e in ws.json("audit", "--app", APP)["events"] if e["action"] == "patch.withhold.rollback"]
        result["through_withhold"] = len(withheld) == 1 and not ws.json("pending", "--app", APP)
        print(json.dumps(result))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000, int(sys.argv[2]) if len(sys.argv) > 2 else 64)
