"""The release engineer's path (issue 11): `patchctl publish --app-version 2.3` in an app's
repository, the traps found on the way (a mistyped --data, HOTPATCH_SERVER with a local-only
command, verify of an unknown app), the exported tree a device can use, publishing the same
bytes twice, --dry-run and diff."""

import json
import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hotpatch_testing import Result, assert_cli_error, clean_env, fetch, repo_updater, spawn


def run_in(ws, cwd, *args, env=None) -> Result:
    """patchctl ARGS exactly as typed in `cwd`, the registry named only by $HOTPATCH_DATA (or
    $HOTPATCH_DATABASE) and $HOTPATCH_KEYS."""
    environment = {**clean_env(), **ws.registry_env(), **(env or {})}
    proc = spawn(lambda: subprocess.run([str(ws.exe), *map(str, args)], capture_output=True, cwd=cwd, env=environment, timeout=120))
    return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.fixture
def app_repo(workspace):
    """A registry with apps demo and other, and an app repository holding patches/demo/2.3/main.js
    with a hotpatch.json written by `patchctl init --app demo`."""
    ws = workspace
    ws.create_app("demo")
    ws.create_app("other")
    repo = ws.root / "app-repo"
    (repo / "patches" / "demo" / "2.3").mkdir(parents=True)
    (repo / "src" / "ios").mkdir(parents=True)
    (repo / "patches" / "demo" / "2.3" / "main.js").write_text("fix('2.3');\n")
    result = run_in(ws, repo, "init", "--app", "demo")
    assert result.rc == 0, result.stderr
    return ws, repo


def test_publish_app_version_works_as_written_in_the_app_repository_and_below(app_repo):
    ws, repo = app_repo
    assert json.loads((repo / "hotpatch.json").read_text()) == {"app": "demo", "patchesDirectory": "patches"}
    result = run_in(ws, repo, "publish", "--app-version", "2.3")
    assert result.rc == 0, result.stderr
    assert "published demo 2.3 patch 1" in result.stdout
    (repo / "patches" / "demo" / "2.3" / "main.js").write_text("fix('2.3', 2);\n")
    result = run_in(ws, repo / "src" / "ios", "publish", "--app-version", "2.3")
    assert result.rc == 0, result.stderr
    patches = ws.json("list", "--app", "demo")
    assert [(p["patch"], p["length"]) for p in patches] == [(1, 12), (2, 15)]
    assert ws.json("list", "--app", "other") == []
    # The project file names the app for revoke and rollout too.
    assert run_in(ws, repo / "src", "rollout", "--app-version", "2.3", "--patch", "2", "--percent", "40").rc == 0
    assert ws.json("list", "--app", "demo")[1]["rollout"] == 40


def test_missing_default_bundle_names_the_path_it_looked_for(app_repo):
    ws, repo = app_repo
    result = run_in(ws, repo / "src", "publish", "--app-version", "2.4")
    assert_cli_error(result, 2, str(repo / "patches" / "demo" / "2.4" / "main.js"), "does not exist")


def test_app_may_be_omitted_only_when_one_app_or_a_project_file_says_which(workspace):
    ws = workspace
    ws.create_app("solo")
    bundle = ws.write_file("solo();")
    assert run_in(ws, ws.root, "publish", "--app-version", "1.0", bundle).rc == 0
    ws.create_app("second")
    result = run_in(ws, ws.root, "publish", "--app-version", "1.0", ws.write_file("again();"))
    assert_cli_error(result, 64, "--app is required", "second, solo", "patchctl init")


def test_init_refuses_to_replace_a_project_file_without_force(app_repo):
    ws, repo = app_repo
    assert_cli_error(run_in(ws, repo, "init", "--app", "other"), 2, "already exists", "--force")
    assert run_in(ws, repo, "init", "--app", "other", "--patches", "js", "--server", "https://p.example", "--force").rc == 0
    assert json.loads((repo / "hotpatch.json").read_text()) == {"app": "other", "patchesDirectory": "js", "server": "https://p.example"}


@pytest.mark.parametrize("command", [
    ["audit", "--verify"], ["list"], ["publish", "--app", "demo", "--app-version", "1.0", "x.js"],
    ["revoke", "--app", "demo", "--app-version", "1.0", "--all", "--yes"], ["rollout", "--app", "demo", "--app-version", "1.0", "--patch", "1", "--percent", "5"],
    ["export", "--app", "demo", "--out", "out"], ["keys", "rotate", "--app", "demo", "--role", "timestamp"],
    ["tokens", "create", "--all"], ["apps", "root", "demo"], ["diff", "--app", "demo", "--app-version", "1.0", "1", "2"],
])
def test_a_mistyped_data_directory_is_no_registry_and_is_not_created(workspace, command):
    ws = workspace
    ws.create_app("demo")
    (ws.root / "x.js").write_text("x();")
    typo = ws.root / "dta"
    result = ws.run(*command, "--data", typo, "--keys", ws.keys, registry=False)
    assert_cli_error(result, 2, f"no registry at {typo}")
    assert not typo.exists()


def test_hotpatch_server_set_says_a_local_only_command_acts_on_the_local_registry(workspace):
    ws = workspace
    ws.create_app("demo")
    result = run_in(ws, ws.root, "keys", "rotate", "--app", "demo", "--role", "timestamp", env={"HOTPATCH_SERVER": "http://127.0.0.1:9"})
    assert result.rc == 0, result.stderr
    assert f"acts on the registry at {ws.registry_location}" in result.stderr
    assert "http://127.0.0.1:9" in result.stderr


def test_verify_of_an_unknown_app_is_exit_2_not_a_verification_failure(workspace, start):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "ok();")
    root = ws.root_file("demo")
    server = start(ws)
    result = ws.run("verify", "--server", server.url, "--app", "nope", "--root", root, registry=False)
    assert_cli_error(result, 2, 'unknown app "nope"')
    assert ws.run("verify", "--server", server.url, "--app", "demo", "--root", root, registry=False).rc == 0
    out = ws.new_export_dir("demo")
    ws.ok("export", "--app", "demo", "--out", out)
    assert_cli_error(ws.run("verify", "--repo", out, "--app", "nope", "--root", root, registry=False), 2, 'unknown app "nope"')
    assert ws.run("verify", "--repo", out, "--root", root, registry=False).rc == 0


def test_exported_directory_served_as_is_is_what_patch_client_and_python_tuf_read(workspace, http_server, tmp_path):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "static();")
    root = ws.root_file("demo")
    out = ws.new_export_dir("demo")
    printed = ws.ok("export", "--app", "demo", "--out", out)
    assert "{server}/v1/apps/demo/metadata/" in printed
    base = http_server(out)
    result = ws.run("fetch", "--server", base, "--app", "demo", "--app-version", "2.3", "--device-id", "d1", "--root", root,
                    "--cache", tmp_path / "cache", "--json", registry=False)
    assert result.rc == 0, result.stderr
    assert json.loads(result.stdout)["outcome"] == "updated"
    _, body = fetch(repo_updater(f"{base}/v1/apps/demo", tmp_path / "tuf" / "metadata", root.read_bytes()), "2.3/1/main.js")
    assert body == b"static();"


def test_export_over_an_older_export_deletes_revoked_bundles(workspace):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "one();")
    ws.publish("demo", "2.3", "two();")
    out = ws.new_export_dir("demo")
    ws.ok("export", "--app", "demo", "--out", out)
    targets = out / "v1" / "apps" / "demo" / "targets" / "2.3"
    assert len(list((targets / "2").iterdir())) == 2
    ws.ok("revoke", "--app", "demo", "--app-version", "2.3", "--patch", "2")
    summary = ws.json("export", "--app", "demo", "--out", out)
    assert summary["removedFiles"] == 2
    assert not (targets / "2").exists()
    assert len(list((targets / "1").iterdir())) == 2
    assert ws.run("verify", "--repo", out, "--root", ws.root_file("demo"), registry=False).rc == 0


def test_export_expires_signs_a_longer_timestamp_and_says_when_it_runs_out(workspace):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "cdn();")
    out = ws.new_export_dir("demo")
    text = ws.ok("export", "--app", "demo", "--out", out, "--expires", "30d")
    signed = json.loads((out / "v1/apps/demo/metadata/timestamp.json").read_bytes())["signed"]
    expires = datetime.strptime(signed["expires"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert timedelta(days=29, hours=23) < expires - datetime.now(timezone.utc) <= timedelta(days=30)
    assert f"timestamp expires {signed['expires']}" in text
    assert ws.run("verify", "--repo", out, "--root", ws.root_file("demo"), registry=False).rc == 0
    assert_cli_error(ws.run("export", "--app", "demo", "--out", out, "--expires", "91d"), 64, "at most 90d")
    assert_cli_error(ws.run("export", "--app", "demo", "--out", out, "--expires", "soon"), 64, "--expires")


def test_flat_layout_keeps_the_old_tree(workspace):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "flat();")
    out = ws.new_export_dir("demo")
    ws.ok("export", "--app", "demo", "--out", out, "--layout", "flat")
    assert (out / "metadata" / "timestamp.json").is_file() and not (out / "v1").exists()
    assert ws.run("verify", "--repo", out, "--root", ws.root_file("demo"), registry=False).rc == 0


def test_publishing_the_live_bytes_again_is_refused_unless_allow_same(workspace):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "same();")
    before = ws.stored()
    again = ws.write_file("same();")
    result = ws.run("publish", "--app", "demo", "--app-version", "2.3", again)
    assert_cli_error(result, 2, "identical to demo 2.3 patch 1", "--allow-same")
    assert ws.stored() == before
    assert ws.json("publish", "--app", "demo", "--app-version", "2.3", "--allow-same", again)["patch"] == 2
    # Another version, or after the live patch is revoked, the same bytes are a new patch.
    assert ws.json("publish", "--app", "demo", "--app-version", "2.4", again)["patch"] == 1


def test_allow_same_over_the_server(workspace, start):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "remote();")
    token = ws.root / "t"
    token.write_text(ws.token("--app", "demo") + "\n")
    token.chmod(0o600)
    server = start(ws)
    bundle = ws.write_file("remote();")
    remote = ["--server", server.url, "--token-file", token]
    assert_cli_error(ws.run("publish", "--app", "demo", "--app-version", "2.3", bundle, *remote, registry=False), 2, "identical to demo 2.3 patch 1")
    assert ws.run("publish", "--app", "demo", "--app-version", "2.3", bundle, "--allow-same", *remote, registry=False).rc == 0


def test_dry_run_says_what_would_change_and_changes_nothing(workspace):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "live();")
    ws.ok("list")  # every later process finds the same closed, checkpointed files
    before = ws.stored()
    published = ws.json("publish", "--app", "demo", "--app-version", "2.3", "--dry-run", ws.write_file("next();"))
    assert published["dryRun"] is True and published["patch"] == 2
    text = ws.ok("revoke", "--app", "demo", "--app-version", "2.3", "--all", "--dry-run")
    assert "would revoke demo 2.3 patch 1" in text and "nothing was changed" in text
    text = ws.ok("rollout", "--app", "demo", "--app-version", "2.3", "--patch", "1", "--percent", "10", "--dry-run")
    assert "would roll out to 10%" in text and "now 100%" in text
    assert ws.stored() == before
    assert [p["rollout"] for p in ws.json("list")] == [100]
    # A dry run is checked like the real thing.
    assert_cli_error(ws.run("rollout", "--app", "demo", "--app-version", "2.3", "--patch", "7", "--percent", "10", "--dry-run"), 2, "no patch 7")


def test_diff_shows_the_decrypted_scripts_of_an_encrypted_app(workspace):
    ws = workspace
    ws.create_app("vault", encrypt=True)
    ws.publish("vault", "1.0", "a();\nb();\n")
    ws.publish("vault", "1.0", "a();\nc();\n")
    text = ws.ok("diff", "--app", "vault", "--app-version", "1.0", "1", "2")
    assert text.splitlines() == ["--- vault 1.0 patch 1", "+++ vault 1.0 patch 2", "@@ -1,2 +1,2 @@", " a();", "-b();", "+c();"]
    file = ws.write_file("a();\nc();\n")
    assert json.loads(ws.ok("diff", "--app", "vault", "--app-version", "1.0", "2", file, "--json")) == {"identical": True, "diff": ""}
    assert_cli_error(ws.run("diff", "--app", "vault", "--app-version", "1.0", "1", "9"), 2, "no patch 9")


def test_run_demo_script_serves_the_demo_patch_and_is_safe_to_run_again(tmp_path, patchctl_path):
    """scripts/run-demo.sh (`make run`) against this build, on a free port: it creates the app
    once, publishes patches/demo/2.3/main.js once, and patchd serves it."""
    import socket
    import time
    import urllib.request
    from hotpatch_testing import REPO_ROOT, binary
    binary("PATCHD", "patchd")  # the script runs patchd beside patchctl
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data, keys = tmp_path / "data", tmp_path / "keys"
    env = {**clean_env(), "HOTPATCH_BIN": str(patchctl_path.parent)}
    for attempt in (1, 2):
        log = tmp_path / f"demo-{attempt}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(["bash", str(REPO_ROOT / "scripts" / "run-demo.sh"), str(data), str(keys), f"127.0.0.1:{port}"],
                                    stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + 30
            while "patchd listening on" not in log.read_text() and time.monotonic() < deadline:
                assert proc.poll() is None, log.read_text()
                time.sleep(0.05)
            text = log.read_text()
            assert ("published demo 2.3 patch 1" if attempt == 1 else "demo 2.3 already serves") in text, text
            # Checked against the demo's native manifest, stored once (the second run changes nothing).
            assert ("stored the native manifest of demo 2.3" if attempt == 1 else "has this native manifest already") in text, text
            request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/apps/demo/versions/2.3/patch", headers={"X-Device-ID": "my-phone"})
            with urllib.request.urlopen(request, timeout=10) as response:
                assert response.read() == (REPO_ROOT / "patches" / "demo" / "2.3" / "main.js").read_bytes()
            # The web console comes with it (compiled into patchd), and the script says where.
            assert f"http://127.0.0.1:{port}/console/" in text
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/console/", timeout=10) as response:
                assert response.headers["Content-Type"] == "text/html; charset=utf-8" and b"hotpatch console" in response.read()
        finally:
            proc.terminate()
            proc.wait(timeout=15)


def test_project_server_makes_the_same_command_publish_over_http(app_repo, start):
    """hotpatch.json's `server` is the default --server: the command is the same, the token
    comes from $HOTPATCH_TOKEN, and `list` there needs no --app either."""
    ws, repo = app_repo
    token = ws.token("--app", "demo")
    server = start(ws)
    assert run_in(ws, repo, "init", "--app", "demo", "--server", server.url, "--force").rc == 0
    env = {"HOTPATCH_TOKEN": token}
    result = run_in(ws, repo / "src", "publish", "--app-version", "2.3", env=env)
    assert result.rc == 0, result.stderr
    assert "published demo 2.3 patch 1" in result.stdout
    listed = run_in(ws, repo, "list", "--json", env=env)
    assert listed.rc == 0, listed.stderr
    patches = json.loads(listed.stdout)
    assert [(p["app"], p["patch"]) for p in patches] == [("demo", 1)]
    assert "token" in patches[0]["publishedBy"], "published over HTTP, by the token's actor"
    # A local-only command in that repository says where it acts.
    rotated = run_in(ws, repo, "keys", "rotate", "--role", "timestamp")
    assert rotated.rc == 0 and f"acts on the registry at {ws.registry_location}, not on {server.url}" in rotated.stderr


def test_export_keeps_an_older_flat_export_in_the_same_directory_current_and_pruned(workspace):
    """site/ exported before the server layout was the default: the next export writes the new
    tree and also brings the old one up to date, revoked bundles gone."""
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "one();")
    ws.publish("demo", "2.3", "two();")
    site = ws.new_export_dir("demo")
    ws.ok("export", "--app", "demo", "--out", site, "--layout", "flat")
    ws.ok("revoke", "--app", "demo", "--app-version", "2.3", "--patch", "2")
    summary = ws.json("export", "--app", "demo", "--out", site)
    assert summary["flatExportUpdated"] is True
    assert not (site / "targets" / "2.3" / "2").exists()
    assert (site / "v1/apps/demo/targets/2.3/1").is_dir()
    revoke_dry = ws.json("revoke", "--app", "demo", "--app-version", "2.3", "--all", "--dry-run")
    assert [(p["patch"], p["state"], p["dryRun"]) for p in revoke_dry] == [(1, "revoked", True)]
    for repo in (site, site / "v1/apps/demo"):
        assert ws.run("verify", "--repo", repo, "--root", ws.root_file("demo"), registry=False).rc == 0
    # Another app's flat export in that directory is not touched.
    ws.create_app("other")
    assert ws.json("export", "--app", "other", "--out", site)["flatExportUpdated"] is False


def test_a_broken_project_file_is_a_clear_error_naming_it(app_repo):
    ws, repo = app_repo
    (repo / "hotpatch.json").write_text('{"app": "Not A Name"}')
    result = run_in(ws, repo / "src", "publish", "--app-version", "2.3")
    assert_cli_error(result, 2, str(repo / "hotpatch.json"), "invalid app name")
    (repo / "hotpatch.json").write_text('{"app": "demo", "server": "ftp://x"}')
    assert_cli_error(run_in(ws, repo, "list"), 2, "hotpatch.json", '"server" must be an http')
    # An explicit --app and --server do not need the project file.
    assert run_in(ws, repo, "list", "--app", "demo").rc == 2
    assert_cli_error(run_in(ws, repo, "init", "--app", "Bad"), 64, "invalid app name")


def test_make_run_installs_what_serving_needs_and_make_test_everything():
    """`make -n` (nothing is run): `make run` installs the build and serving packages only,
    no venv; `make test` still installs the test stack too (its venv step shows only while
    .venv is not ready, so it is not asserted)."""
    from hotpatch_testing import REPO_ROOT

    def plan(target):
        return subprocess.run(["make", "-n", "-C", str(REPO_ROOT), target], capture_output=True, text=True, check=True).stdout

    run, test = plan("run"), plan("test")
    for package in ("libssl-dev", "libsqlite3-dev", "libzip-dev", "libcurl4-openssl-dev", "pkg-config", "openssl"):
        assert package in run and package in test
    for package in ("python3-venv", "zip unzip", "curl "):
        assert package not in run and package in test
    assert "venv" not in run
    assert "chromium chromium-driver" in test and "chromium" not in run, "the browser test's packages come with `make test` only"
    assert "scripts/run-demo.sh" in run
