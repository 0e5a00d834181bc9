"""The versions meant, and only those (issue 44, part 2), through the built binaries and a
real patchd: which versions devices check for (`apps versions`), a publish to a list or range
of them as one change (`--dry-run`, `--yes`, refused without a terminal, asked on one), the
warning for a version no device asks for and `--strict-version`, and python-tuf reading what
patchd serves afterwards."""
import http.client
import json
import urllib.parse

import pytest
from hotpatch_testing import Workspace, fetch, repo_updater
from patchd_support import poll, remote, request, token_file
from test_release_semantics import run_on_terminal

# The upkeep pass (and with it the flush of counted versions) every second: min(60, lease/3).
FAST_UPKEEP = ["--upkeep-lease", "3"]


def checks(server, app, version, times, device=None):
    """`times` simple checks of APP VERSION, on one keep-alive connection."""
    parts = urllib.parse.urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        for i in range(times):
            headers = {"X-Device-ID": f"{device}-{i}"} if device else {}
            conn.request("GET", f"/v1/apps/{app}/versions/{version}/patch", headers=headers)
            response = conn.getresponse()
            response.read()
            assert response.status in (200, 204), (version, response.status)
    finally:
        conn.close()


def asked(ws, app="demo"):
    """`apps versions --json` of the local registry: {version: checks}."""
    return {v["appVersion"]: v["checks"] for v in ws.json("apps", "versions", "--app", app)["versions"]}


def fleet(tmp_path, start):
    """demo with a patch for 2.2, a running patchd, and devices that asked for 2.3 (5 times),
    2.3.1 (3) and 2.3.2 (on timestamp.json, once), all added to the registry."""
    ws = Workspace(tmp_path / "ws")
    ws.create_app("demo")
    ws.publish("demo", "2.2", "old()")
    ws.ok("apps", "throttle", "demo", "--ip-rate", "off", "--min-interval", "0")
    server = start(ws, FAST_UPKEEP)
    checks(server, "demo", "2.3", 5, device="phone")
    checks(server, "demo", "2.3.1", 3)
    answer = request(server.url, "/v1/apps/demo/metadata/timestamp.json", headers={"X-App-Version": "2.3.2", "X-Device-ID": "tuf-1"})
    assert answer.status == 200
    poll(lambda: asked(ws) == {"2.3": 5, "2.3.1": 3, "2.3.2": 1}, timeout=15)
    return ws, server


def test_checks_are_counted_and_listed_by_apps_versions_locally_and_over_the_server(tmp_path, start):
    ws, server = fleet(tmp_path, start)
    local = ws.json("apps", "versions", "--app", "demo")
    assert local["days"] == 30 and [v["appVersion"] for v in local["versions"]] == ["2.3", "2.3.1", "2.3.2"]
    auditor = token_file(ws, ws.token("--app", "demo", "--role", "auditor", "--name", "dashboard"), "auditor.token")
    over = remote(ws, server, auditor, "apps", "versions", "--app", "demo", "--json")
    assert over.rc == 0 and json.loads(over.stdout) == local, over.stderr
    text = remote(ws, server, auditor, "apps", "versions", "--app", "demo")
    assert text.rc == 0 and text.stdout.splitlines()[0].split() == ["VERSION", "CHECKS", "LAST", "ASKED"], text.stdout
    assert text.stdout.splitlines()[1].split()[:2] == ["2.3", "5"]


def test_a_range_dry_run_shows_the_expansion_and_changes_nothing(tmp_path, start):
    ws, _ = fleet(tmp_path, start)
    before = ws.json("list", "--app", "demo")
    bundle = ws.write_file("fix()")
    dry = ws.run("publish", "--app", "demo", "--app-version", "2.3.*", "--dry-run", bundle)
    assert dry.rc == 0, dry.stderr
    assert dry.stdout.splitlines()[0] == "dry run: would publish to 3 versions of demo (2.3.*) in one change: 2.3, 2.3.1, 2.3.2"
    assert "nothing was changed" in dry.stdout
    as_json = json.loads(ws.ok("publish", "--app", "demo", "--app-version", ">=2.2 <2.3.1", "--dry-run", "--json", bundle))
    assert as_json["dryRun"] is True and as_json["appVersions"] == ["2.2", "2.3"]
    assert ws.json("list", "--app", "demo") == before


@pytest.mark.parametrize("over_the_server", [False, True])
def test_several_versions_without_a_terminal_need_yes_then_land_as_one_change(tmp_path, start, over_the_server):
    ws, server = fleet(tmp_path, start)
    publisher = token_file(ws, ws.token("--app", "demo", "--name", "ci"), "ci.token")
    bundle = ws.write_file("fix()")

    def publish(*extra):
        args = ["publish", "--app", "demo", "--app-version", "2.3.*", *extra, bundle]
        return remote(ws, server, publisher, *args) if over_the_server else ws.run(*args)

    before = ws.json("list", "--app", "demo")
    refused = publish()
    assert refused.rc == 64, refused.stderr
    assert "publishing to 3 versions of demo (2.3, 2.3.1 and 2.3.2: what 2.3.* names now)" in refused.stderr
    assert "Give --yes to go ahead" in refused.stderr or "give --yes to go ahead" in refused.stderr
    assert ws.json("list", "--app", "demo") == before
    done = publish("--yes")
    assert done.rc == 0, done.stderr
    assert done.stdout.splitlines()[0] == "published to 3 versions of demo (2.3.*) in one change: 2.3, 2.3.1, 2.3.2"
    assert {(p["appVersion"], p["patch"]) for p in ws.json("list", "--app", "demo")} == {("2.2", 1), ("2.3", 1), ("2.3.1", 1), ("2.3.2", 1)}
    publishes = [e for e in ws.json("audit", "--app", "demo")["events"] if e["action"] == "patch.publish"]
    assert len(publishes) == 2 and publishes[-1]["details"]["appVersions"] == ["2.3", "2.3.1", "2.3.2"]
    status = ws.ok("status", "--app", "demo")
    seq = publishes[-1]["seq"]
    assert f"published together (one change, audit seq {seq}): 2.3 patch 1, 2.3.1 patch 1, 2.3.2 patch 1 (production)" in status, status


def test_on_a_terminal_the_expansion_is_asked_about_and_only_yes_publishes(tmp_path, start):
    ws, _ = fleet(tmp_path, start)
    bundle = ws.write_file("fix()")
    args = ["publish", "--app", "demo", "--app-version", "2.3,2.3.1", str(bundle)]
    code, text = run_on_terminal(ws, args, "no")
    assert code == 2 and "publishing to 2 versions of demo (2.3 and 2.3.1: as listed)" in text and "not confirmed" in text, text
    assert {p["appVersion"] for p in ws.json("list", "--app", "demo")} == {"2.2"}
    code, text = run_on_terminal(ws, args, "yes")
    assert code == 0 and "published to 2 versions of demo (2.3,2.3.1) in one change: 2.3, 2.3.1" in text, text


@pytest.mark.parametrize("over_the_server", [False, True])
def test_a_version_no_device_asks_for_warns_and_strict_version_refuses_it(tmp_path, start, over_the_server):
    ws, server = fleet(tmp_path, start)
    publisher = token_file(ws, ws.token("--app", "demo", "--name", "ci"), "ci.token")

    def publish(version, *extra):
        args = ["publish", "--app", "demo", "--app-version", version, *extra, ws.write_file(f"var fix = '{version}';")]
        return remote(ws, server, publisher, *args) if over_the_server else ws.run(*args)

    before = ws.json("list", "--app", "demo")
    strict = publish("2.3.0", "--strict-version")
    assert strict.rc == 2 and "devices ask for 2.3, 2.3.1 and 2.3.2, none for 2.3.0" in strict.stderr, strict.stderr
    assert "nothing was published (--strict-version)" in strict.stderr
    assert ws.json("list", "--app", "demo") == before
    warned = publish("2.3.0")
    assert warned.rc == 0 and warned.stdout.startswith("published demo 2.3.0 patch 1"), warned.stderr
    assert "warning: devices ask for 2.3, 2.3.1 and 2.3.2, none for 2.3.0 (2.3 and 2.3.0 are different versions: apps send what they send)" in warned.stderr
    as_json = publish("2.3.3", "--json")
    assert as_json.rc == 0 and json.loads(as_json.stdout)["versionWarning"].endswith("none for 2.3.3"), as_json.stderr
    asked_for = publish("2.3.1", "--strict-version")
    assert asked_for.rc == 0 and "warning" not in asked_for.stderr, asked_for.stderr


def test_one_version_publishes_as_it_always_did(tmp_path):
    """`publish --app-version 2.3` where no device has checked yet: no warning, no question, the
    same lines and the same JSON as before selectors."""
    ws = Workspace(tmp_path / "ws")
    ws.create_app("demo")
    result = ws.run("publish", "--app", "demo", "--app-version", "2.3", ws.write_file("var a = 1;"))
    assert result.rc == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "published demo 2.3 patch 1 to production (rollout 100%)" and lines[1].startswith("sha256 ") and lines[3].startswith("target 2.3/1/main.js")
    published = ws.json("publish", "--app", "demo", "--app-version", "2.3", ws.write_file("var b = 2;"))
    assert published["patch"] == 2 and "appVersions" not in published and "versionWarning" not in published


def test_malformed_and_empty_selectors_are_refused_and_change_nothing(tmp_path, start):
    ws, _ = fleet(tmp_path, start)
    bundle = ws.write_file("fix()")
    before = ws.registry_state()
    for selector, rc, words in [("~2.3", 64, 'invalid app version selector "~2.3"'), ("2.3,", 64, "an empty item"),
                                ("*", 64, "`*` alone would match every version"), (">=2.3-beta", 64, "ranges compare release versions"),
                                (">=9", 2, ">=9 matches no version of demo: it knows of 2.2, 2.3, 2.3.1 and 2.3.2. Nothing was published")]:
        result = ws.run("publish", "--app", "demo", "--app-version", selector, "--yes", bundle)
        assert result.rc == rc and words in result.stderr, (selector, result.rc, result.stderr)
    several = ws.run("publish", "--app", "demo", "--app-version", "2.3.*", "--yes")
    assert several.rc == 64 and "give FILE" in several.stderr, several.stderr
    assert ws.registry_state() == before


def test_python_tuf_reads_what_patchd_serves_after_a_publish_to_several_versions(tmp_path, start):
    ws, server = fleet(tmp_path, start)
    bundle = b"defineClass('Fix', {});\n"
    ws.ok("publish", "--app", "demo", "--app-version", "2.3.*", "--yes", ws.write_file(bundle))
    # patchd picks up the change patchctl committed within its next reload (every second).
    poll(lambda: request(server.url, "/v1/apps/demo/versions/2.3.2/patch").status == 200, timeout=10)
    updater = repo_updater(server.app_url("demo"), tmp_path / "client" / "metadata", ws.root_json("demo"))
    updater.refresh()
    for version in ("2.3", "2.3.1", "2.3.2"):
        info, body = fetch(updater, f"{version}/1/main.js")
        assert info is not None and body == bundle, version
        assert info.custom["patch"] == 1 and info.custom["rollout"] == 100
    assert updater.get_targetinfo("2.3.0/1/main.js") is None


def test_a_flood_of_made_up_versions_from_one_address_does_not_push_out_the_fleets(tmp_path, start):
    """3,000 checks for 3,000 versions nobody ships, from one address with the per-IP limit off
    (the worst case): the versions on record are still counted check for check, and what the
    registry keeps of the flood is bounded."""
    ws, server = fleet(tmp_path, start)
    parts = urllib.parse.urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        for i in range(3000):
            conn.request("GET", f"/v1/apps/demo/versions/7.{i}.{i % 97}/patch")
            response = conn.getresponse()
            response.read()
            assert response.status == 204
            if i % 100 == 0:
                conn.request("GET", "/v1/apps/demo/versions/2.3.1/patch")
                response = conn.getresponse()
                response.read()
    finally:
        conn.close()
    poll(lambda: asked(ws).get("2.3.1") == 3 + 30, timeout=15)
    counts = asked(ws)
    assert counts["2.3"] == 5 and counts["2.3.2"] == 1
    made_up = {v: n for v, n in counts.items() if v.startswith("7.")}
    assert made_up and all(n == 1 for n in made_up.values())
    assert len(counts) <= 512
