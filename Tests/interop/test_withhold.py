"""The withhold role (issue 44, part 1) seen from outside: on an app under the two-person rule
(alice + bob sign targets), `keys withhold` set up by both, after which one on-call engineer's
`halt` and `revoke` land at once (exit 0) through the withhold key the registry holds, a real
patchd serves the result, our client (`patchctl fetch`) obeys it, and python-tuf, which does
not know the role, keeps accepting the repository as it is.

    PATCHCTL=… PATCHD=… python -m pytest Tests/interop/test_withhold.py -q
"""

import hashlib
import json

from hotpatch_testing import fetch, repo_updater
from patchd_support import request, token_file
from test_two_person import APP, PROD_1, two_person_app

PROD_2 = b"production(2);\n"


def served_sha(ws, patch):
    return next(p["sha256"] for p in ws.json("list", "--app", APP) if p["patch"] == patch)


def test_one_person_halts_and_revokes_under_the_two_person_rule_and_devices_obey(workspace, start, tmp_path):
    ws = workspace
    alice, bob = two_person_app(ws)
    ws.ok("apps", "throttle", APP, "--min-interval", "0", "--ip-rate", "off")  # one device checks several times below
    ws.ok("publish", "--app", APP, "--app-version", "2.3", ws.write_file(PROD_2), "--key-file", alice.pem, "--key-file", bob.pem)
    # Without a withhold role a halt waits for the second person (exit 3), as before.
    assert ws.run("halt", "--app", APP, "--app-version", "2.3", "--patch", "2").rc == 3
    ws.ok("reject", "--app", APP, "2")
    # Set up by both release keys; the role's key is made and kept with the registry.
    role = ws.json("keys", "withhold", "--app", APP, "--key-file", alice.pem, "--key-file", bob.pem)
    assert role["threshold"] == 1 and len(role["keyids"]) == 1 and role["keyFile"].endswith(".pem")
    server = start(ws)
    oncall = ["--server", server.url, "--token-file", token_file(ws, ws.token("--app", APP, "--role", "publisher", "--name", "oncall"), "oncall.token")]
    root = ws.root_file(APP)
    fetch_args = ["fetch", "--server", server.url, "--app", APP, "--app-version", "2.3", "--root", root, "--json", "--force"]
    runs = json.loads(ws.ok(*fetch_args, "--device-id", "runs-2", "--cache", tmp_path / "a", registry=False))
    assert runs["outcome"] == "updated" and runs["patch"] == 2

    # One person, no release key: the halt lands at once.
    halted = ws.run("halt", "--app", APP, "--app-version", "2.3", "--patch", "2", "--message", "checkout crash", "--json", *oncall, registry=False)
    assert halted.rc == 0, halted.stdout + halted.stderr
    assert json.loads(halted.stdout)["withheld"]["rollBack"] is False
    kept = json.loads(ws.ok(*fetch_args, "--device-id", "runs-2", "--cache", tmp_path / "a", registry=False))
    assert kept["outcome"] == "unchanged", "a halt keeps the patch where it runs"
    fresh = json.loads(ws.ok(*fetch_args, "--device-id", "new-device", "--cache", tmp_path / "b", registry=False))
    assert fresh["outcome"] == "updated" and fresh["patch"] == 1, "and offers it to no new device"
    etag = '"%s"' % hashlib.sha256(PROD_2).hexdigest()
    assert request(server.url, f"/v1/apps/{APP}/versions/2.3/patch", headers={"X-Device-ID": "x", "If-None-Match": etag}).status == 304
    assert request(server.url, f"/v1/apps/{APP}/versions/2.3/patch", headers={"X-Device-ID": "y"}).headers["X-Patch-Number"] == "1"

    text = ws.run("halt", "--app", APP, "--app-version", "2.3", "--patch", "2", *oncall, registry=False)
    assert text.rc == 0 and "was already withheld" in text.stdout and "no second person needed" in text.stdout, text.stdout

    # python-tuf does not know the role: it refreshes and finds both patches as signed.
    updater = repo_updater(f"{server.url}/v1/apps/{APP}", tmp_path / "py", root.read_bytes())
    updater.refresh()
    assert fetch(updater, "2.3/2/main.js")[1] == PROD_2

    # One person revokes: devices that run patch 2 drop it for patch 1, at once.
    revoked = ws.run("revoke", "--app", APP, "--app-version", "2.3", "--patch", "2", "--json", *oncall, registry=False)
    assert revoked.rc == 0, revoked.stdout + revoked.stderr
    assert json.loads(revoked.stdout)[0]["withheld"]["rollBack"] is True
    again = ws.run("revoke", "--app", APP, "--app-version", "2.3", "--patch", "2", *oncall, registry=False)
    assert again.rc == 0 and "withheld demo 2.3 patch 2 (production) to roll back" in again.stdout, again.stdout + again.stderr
    dropped = json.loads(ws.ok(*fetch_args, "--device-id", "runs-2", "--cache", tmp_path / "a", registry=False))
    assert dropped["outcome"] == "updated" and dropped["patch"] == 1
    assert (tmp_path / "a" / APP / "2.3" / "main.js").read_bytes() == PROD_1
    assert request(server.url, f"/v1/apps/{APP}/versions/2.3/patch", headers={"X-Device-ID": "x", "If-None-Match": etag}).headers["X-Patch-Number"] == "1"
    assert request(server.url, f"/v1/apps/{APP}/targets/2.3/2/{served_sha(ws, 2)}.main.js").status == 404, "nobody can fetch it"
    updater = repo_updater(f"{server.url}/v1/apps/{APP}", tmp_path / "py2", root.read_bytes())
    updater.refresh()
    assert updater.get_targetinfo("2.3/1/main.js") is not None

    # Giving it back needs what publishing needs: it waits for the second key.
    assert ws.run("resume", "--app", APP, "--app-version", "2.3", "--patch", "2", *oncall, registry=False).rc == 3
    actions = [e["action"] for e in ws.json("audit", "--app", APP)["events"]]
    assert "keys.withhold" in actions and "patch.withhold" in actions and "patch.withhold.rollback" in actions
