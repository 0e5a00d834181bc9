"""schemathesis generates requests from docs/openapi.yaml against a running patchd: no 5xx,
every response conforms to the documented status codes, headers and schemas (issue 6).

`make test` runs it with a fixed seed, so a red run is reproducible and a green one does not
turn red by chance; `make fuzz` runs it again with a random seed for longer
(SCHEMATHESIS_SEED=random), which is where new findings come from."""
import os
import subprocess
import sys
from pathlib import Path

from hotpatch_testing import REPO_ROOT, Workspace
from patchd_support import Patchd


def test_schemathesis_finds_no_server_error_and_no_schema_violation(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.json("apps", "create", "demo")
    ws.publish("demo", "2.3", "defineClass('Demo', {});\n")
    ws.ok("apps", "throttle", "demo", "--ip-rate", "off", "--min-interval", "0")
    token = ws.token("--all", "--name", "schemathesis")
    server = Patchd(ws)
    try:
        # The "coverage" phase is left out: in this schemathesis release it fails with an
        # internal error (a KeyError inside its own schema walker) before sending anything.
        cli = Path(sys.executable).with_name("schemathesis")
        seed = os.environ.get("SCHEMATHESIS_SEED", "20261130")
        seeding = [] if seed == "random" else ["--seed", seed]
        result = subprocess.run(
            [str(cli), "--config-file", str(Path(__file__).with_name("schemathesis.toml")), "run", str(REPO_ROOT / "docs" / "openapi.yaml"), "--url", server.url,
             "--header", f"Authorization: Bearer {token}", "--checks", "all", "--workers", "2",
             "--phases", "examples,fuzzing,stateful", "--max-time", os.environ.get("SCHEMATHESIS_SECONDS", "30"), *seeding],
            capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    finally:
        code, hung = server.stop()
        assert code == 0 and not hung
