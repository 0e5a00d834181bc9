"""Signed delivery conditions (issue 11): `publish --devices/--devices-file/--min-os/--max-os`
locally and over --server (the IDs hashed by patchctl, never stored or sent raw), python-tuf
reading the conditional target, PatchClient (`patchctl fetch`) and the simple check applying
one rule; `--dry-run` over --server for publish, promote, revoke and rollout."""

import hashlib
import json

from hotpatch_testing import assert_cli_error, fetch, repo_updater
from patchd_support import remote, request, token_file


def hashed(salt_hex, device):
    return hashlib.sha256(bytes.fromhex(salt_hex) + device.encode()).hexdigest()


def test_local_publish_signs_salted_hashes_python_tuf_reads_them_and_fetch_applies_them(workspace, start, http_server, tmp_path):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "everyone();\n")
    devices = ws.write_file("# QA phones\nqa-iphone-13\n\nqa-iphone-15  \n", name="devices.txt")
    bundle = ws.write_file("qa();\n")
    published = ws.json("publish", "--app", "demo", "--app-version", "2.3", "--devices-file", devices, "--min-os", "16.0", bundle)
    assert published["targetPath"] == "2.3/2/main.conditional.js"
    assert published["conditions"] == {"devices": 2, "os": {"min": "16.0"}}
    text = ws.ok("list", "--app", "demo")
    assert "2 listed devices, OS ≥ 16.0" in ws.ok("status", "--app", "demo")
    assert "demo 2.3 patch 2 only for: 2 listed devices, OS ≥ 16.0" in text

    updater = repo_updater(http_server(ws.export("demo")), tmp_path / "tuf", ws.root_json("demo"))
    updater.refresh()
    info, served = fetch(updater, "2.3/2/main.conditional.js")
    assert served == b"qa();\n"
    listed = info.custom["conditions"]["devices"]
    assert sorted(listed["sha256"]) == sorted(hashed(listed["salt"], d) for d in ("qa-iphone-13", "qa-iphone-15"))
    assert info.custom["conditions"]["os"] == {"min": "16.0"}
    assert not ws.stores(b"qa-iphone"), "a raw device ID in the registry"
    export = ws.export("demo")
    assert all(b"qa-iphone" not in f.read_bytes() for f in export.rglob("*") if f.is_file()), "a raw device ID in the export"

    ws.ok("apps", "throttle", "demo", "--min-interval", "0")  # one device asks several times below
    server = start(ws)
    common = ["--server", server.url, "--app", "demo", "--app-version", "2.3", "--root", ws.root_file("demo"), "--json"]
    def device(name, os=None):
        extra = ["--os-version", os] if os else []
        return json.loads(ws.ok("fetch", *common, "--device-id", name, "--cache", tmp_path / f"c-{name}-{os}", *extra, registry=False))
    assert device("qa-iphone-15", "17.1")["patch"] == 2
    assert device("qa-iphone-15", "15.8")["patch"] == 1
    assert device("qa-iphone-15")["patch"] == 1, "a device that does not say its OS is outside every OS range"
    assert device("customer-7", "17.1")["patch"] == 1

    def check(name, os):
        headers = {"X-Device-ID": name, "X-OS-Version": os}
        return request(server.url, "/v1/apps/demo/versions/2.3/patch", headers=headers).headers.get("X-Patch-Number")
    assert check("qa-iphone-13", "16.0") == "2"
    assert check("qa-iphone-13", "15.9") == "1"
    assert check("customer-7", "18.0") == "1"
    assert ws.run("verify", "--repo", ws.export("demo"), "--root", ws.root_file("demo"), "--app", "demo", registry=False).rc == 0


def test_bad_conditions_are_usage_errors_and_change_nothing(workspace):
    ws = workspace
    ws.create_app("demo")
    bundle = ws.write_file("x();")
    before = ws.registry_state()
    assert_cli_error(ws.run("publish", "--app", "demo", "--app-version", "2.3", "--min-os", "17.x", bundle), 64, "invalid OS version")
    assert_cli_error(ws.run("publish", "--app", "demo", "--app-version", "2.3", "--min-os", "18", "--max-os", "17.4", bundle), 64, "above the maximum")
    assert_cli_error(ws.run("publish", "--app", "demo", "--app-version", "2.3", "--devices", " , ", bundle), 64, "names no device")
    many = ",".join(f"d{i}" for i in range(101))
    assert_cli_error(ws.run("publish", "--app", "demo", "--app-version", "2.3", "--devices", many, bundle), 64, "the limit is 100")
    assert ws.registry_state() == before


def test_over_the_server_ids_are_hashed_before_sending_and_dry_runs_change_nothing(workspace, start):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "live();\n")
    ws.ok("apps", "throttle", "demo", "--min-interval", "0")
    ws.ok("channels", "create", "staging", "--app", "demo")  # the dry promote's --to
    server = start(ws)
    token = token_file(ws, ws.token("--app", "demo"), "publisher")
    bundle = ws.write_file("qa-remote();\n")
    before = ws.registry_state()
    dry = remote(ws, server, token, "publish", "--app", "demo", "--app-version", "2.3", "--devices", "qa-a,qa-b", "--max-os", "17.4",
                 "--dry-run", "--json", bundle)
    assert dry.rc == 0, dry
    assert json.loads(dry.stdout)["dryRun"] is True and json.loads(dry.stdout)["conditions"] == {"devices": 2, "os": {"max": "17.4"}}
    for args in (["promote", "--from", "production", "--to", "staging"], ["revoke", "--patch", "1"], ["rollout", "--patch", "1", "--rollout", "5"]):
        result = remote(ws, server, token, *args[:1], "--app", "demo", "--app-version", "2.3", *args[1:], "--dry-run")
        assert result.rc == 0 and "dry run" in result.stdout and "nothing was changed" in result.stdout, (args, result)
    assert ws.registry_state() == before, "a dry run over --server changed the registry"
    real = remote(ws, server, token, "publish", "--app", "demo", "--app-version", "2.3", "--devices", "qa-a,qa-b", "--json", bundle)
    assert real.rc == 0, real
    assert json.loads(real.stdout)["targetPath"] == "2.3/2/main.conditional.js"
    assert not ws.stores(b"qa-a")
    assert request(server.url, "/v1/apps/demo/versions/2.3/patch", headers={"X-Device-ID": "qa-b"}).headers.get("X-Patch-Number") == "2"
    assert request(server.url, "/v1/apps/demo/versions/2.3/patch", headers={"X-Device-ID": "qa-c"}).headers.get("X-Patch-Number") == "1"
