"""A revoke that lands in seconds (issue 12): a device inside its hour that syncs with force
after a revoke gets the new state at once; the server lifted its interval once."""

import json

from patchd_support import remote, request, token_file


def test_forced_fetch_after_a_revoke_drops_the_patch_inside_the_hour(workspace, start, tmp_path):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "one();\n")
    ws.publish("demo", "2.3", "two();\n")
    server = start(ws)  # the default one-hour interval per device
    token = token_file(ws, ws.token("--app", "demo"), "publisher")
    common = ["fetch", "--server", server.url, "--app", "demo", "--app-version", "2.3", "--device-id", "phone-7",
              "--root", ws.root_file("demo"), "--cache", tmp_path / "cache", "--json"]
    assert json.loads(ws.ok(*common, registry=False))["patch"] == 2
    assert json.loads(ws.ok(*common, "--force", registry=False))["outcome"] == "throttled", "inside the hour"
    # python-tuf style: a timestamp fetch without X-App-Version, from another device.
    assert request(server.url, "/v1/apps/demo/metadata/timestamp.json", headers={"X-Device-ID": "tuf-1"}).status == 200
    assert request(server.url, "/v1/apps/demo/metadata/timestamp.json", headers={"X-Device-ID": "tuf-1"}).status == 429
    result = remote(ws, server, token, "revoke", "--app", "demo", "--app-version", "2.3", "--patch", "2")
    assert result.rc == 0, result
    landed = json.loads(ws.ok(*common, "--force", registry=False))
    assert landed["outcome"] == "updated" and landed["patch"] == 1, landed
    assert request(server.url, "/v1/apps/demo/metadata/timestamp.json", headers={"X-Device-ID": "tuf-1"}).status == 200
    assert json.loads(ws.ok(*common, "--force", registry=False))["outcome"] == "throttled", "one lifted check per change"
    bad = request(server.url, "/v1/apps/demo/metadata/timestamp.json", headers={"X-Device-ID": "x", "X-App-Version": "2.03"})
    assert bad.status == 400
