"""Channels and promotion (issue 11): `promote` locally and over --server (python-tuf reads
the promoted target), release notes in list and audit, hotpatch.json's channel, a client
following one channel. python-tuf fetching every channel's patches is in test_tuf_interop.py."""

import hashlib
import json
import subprocess

from hotpatch_testing import Result, Workspace, assert_cli_error, binary, clean_env, decrypt, fetch, repo_updater, spawn


def run_in(ws, cwd, *args) -> Result:
    """patchctl ARGS as typed in `cwd` (an app repository), the registry named by $HOTPATCH_DATA
    (or $HOTPATCH_DATABASE) and $HOTPATCH_KEYS."""
    environment = {**clean_env(), **ws.registry_env()}
    proc = spawn(lambda: subprocess.run([str(ws.exe), *map(str, args)], capture_output=True, cwd=cwd, env=environment, timeout=120))
    return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def test_promote_ships_the_tested_plaintext_and_python_tuf_sees_where_it_came_from(workspace, http_server, tmp_path):
    ws = workspace
    ws.create_app("vault", encrypt=True)
    ws.publish("vault", "3.1", "old();\n")
    tested, body = ws.publish("vault", "3.1", "tested();\n", channel="staging")
    promoted = ws.json("promote", "--app", "vault", "--app-version", "3.1", "--from", "staging", "--to", "production",
                       "--rollout", "50", "--message", "QA passed: build 7")
    assert (promoted["patch"], promoted["channel"], promoted["rollout"]) == (3, "production", 50)
    assert promoted["sha256"] == tested["sha256"] == hashlib.sha256(body).hexdigest()
    assert promoted["served"]["sha256"] != tested["served"]["sha256"], "sealed again under patch 3's AAD"
    assert promoted["promotedFrom"] == {"channel": "staging", "patch": 2, "sha256": tested["sha256"]}
    updater = repo_updater(http_server(ws.export("vault")), tmp_path / "tuf" / "metadata", ws.root_json("vault"))
    updater.refresh()
    info, served = fetch(updater, "3.1/3/main.js")
    assert info.custom["promotedFrom"] == promoted["promotedFrom"] and info.custom["message"] == "QA passed: build 7"
    assert decrypt(ws.content_key("vault"), "vault", "3.1", 3, served) == body
    event = ws.json("audit", "--app", "vault")["events"][-1]
    assert event["action"] == "patch.promote" and event["details"]["from"] == promoted["promotedFrom"]
    assert_cli_error(ws.run("promote", "--app", "vault", "--app-version", "3.1", "--from", "staging", "--to", "production"),
                     2, "already live in production as patch 3")
    assert ws.run("verify", "--repo", ws.export("vault"), "--root", ws.root_file("vault"), "--app", "vault",
                  "--key", ws.keys / "vault" / "content.key", registry=False).rc == 0


def test_list_and_audit_show_channel_and_release_notes_and_a_bad_channel_is_a_usage_error(workspace):
    ws = workspace
    ws.create_app("demo")
    bundle = ws.write_file("noted();")
    ws.ok("publish", "--app", "demo", "--app-version", "2.3", "--channel", "beta", "--new-channel", "--message", "fixes the login crash", bundle)
    text = ws.ok("list", "--app", "demo")
    assert "CHANNEL" in text and "beta" in text and "demo 2.3 patch 1: fixes the login crash" in text
    assert "fixes the login crash" in ws.ok("audit", "--app", "demo")
    assert_cli_error(ws.run("publish", "--app", "demo", "--app-version", "2.3", "--channel", "Beta!", bundle), 64, "invalid channel name")
    assert_cli_error(ws.run("promote", "--app", "demo", "--app-version", "2.3", "--from", "beta"), 64, "--to is required")
    ws.ok("list")  # every later process finds the same closed, checkpointed files
    before = ws.stored()
    text = ws.ok("promote", "--app", "demo", "--app-version", "2.3", "--from", "beta", "--to", "production", "--dry-run")
    assert "dry run: would promote demo 2.3 patch 1 of beta as patch 2 of production" in text and "nothing was changed" in text
    assert ws.stored() == before


def test_project_channel_is_publishs_default_and_fetch_follows_one_channel(workspace, start, tmp_path):
    ws = workspace
    ws.create_app("demo")
    repo = ws.root / "repo"
    (repo / "patches" / "demo" / "2.3").mkdir(parents=True)
    (repo / "patches" / "demo" / "2.3" / "main.js").write_text("staged();\n")
    assert run_in(ws, repo, "init", "--app", "demo", "--channel", "staging").rc == 0
    assert json.loads((repo / "hotpatch.json").read_text())["channel"] == "staging"
    ws.ok("channels", "create", "staging", "--app", "demo")  # channels are declared before a publish
    result = run_in(ws, repo, "publish", "--app-version", "2.3")
    assert result.rc == 0 and "patch 1 to staging" in result.stdout, result.stderr
    (repo / "hotpatch.json").write_text('{"app":"demo","channel":7}')
    assert_cli_error(run_in(ws, repo, "publish", "--app-version", "2.3"), 2, '"channel" must be a string')
    server = start(ws)
    root = ws.root_file("demo")
    common = ["--server", server.url, "--app", "demo", "--app-version", "2.3", "--root", root, "--json"]
    production = json.loads(ws.ok("fetch", *common, "--device-id", "d1", "--cache", tmp_path / "p", registry=False))
    assert production == {"outcome": "unchanged"}, "a production device never gets a staging patch"
    staging = json.loads(ws.ok("fetch", *common, "--device-id", "d2", "--cache", tmp_path / "s", "--channel", "staging", registry=False))
    assert staging["outcome"] == "updated" and staging["patch"] == 1


def test_promote_over_the_server_needs_a_publisher_token_and_records_the_token(workspace, start):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "qa();", channel="staging")
    publisher, auditor = ws.root / "p", ws.root / "a"
    publisher.write_text(ws.token("--app", "demo") + "\n")
    auditor.write_text(ws.token("--all", "--role", "auditor") + "\n")
    for f in (publisher, auditor):
        f.chmod(0o600)
    ws.ok("channels", "create", "qa", "--app", "demo")  # promote's --to must be a declared channel
    server = start(ws)
    args = ["promote", "--app", "demo", "--app-version", "2.3", "--from", "staging", "--server", server.url]
    assert_cli_error(ws.run(*args, "--to", "production", "--token-file", auditor, registry=False), 2, "publisher")
    promoted = json.loads(ws.ok(*args, "--to", "production", "--token-file", publisher, "--message", "go", "--json", registry=False))
    assert promoted["patch"] == 2 and promoted["promotedFrom"]["patch"] == 1 and promoted["message"] == "go"
    assert "token" in promoted["publishedBy"]
    text = ws.ok(*args, "--token-file", publisher, "--patch", "1", "--to", "qa", registry=False)
    assert "promoted demo 2.3 patch 1 of staging as patch 3 of qa" in text


def test_status_and_rollback_keep_channels_apart(workspace):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "prod();\n", rollout=50)
    ws.publish("demo", "2.3", "qa();\n", channel="staging")
    ws.publish("demo", "2.3", "qa2();\n", channel="staging")
    status = ws.json("status", "--app", "demo")["apps"][0]["versions"]
    assert [(v["channel"], [(s["patch"], s["basisPoints"]) for s in v["served"]]) for v in status] == [
        ("production", [(1, 5000), (None, 5000)]), ("staging", [(3, 10000)])]
    rolled = ws.run("rollback", "--app", "demo", "--app-version", "2.3", "--channel", "staging")
    assert rolled.rc == 0, rolled
    assert "revoked demo 2.3 patch 3 (staging)" in rolled.stdout and "demo 2.3 (staging) now serves: patch 2 → 100 %" in rolled.stdout
    states = {p["patch"]: p["state"] for p in ws.json("list", "--app", "demo")}
    assert states == {1: "active", 2: "active", 3: "revoked"}, "rolling staging back leaves production alone"
    # Production's only patch: a rollback would leave it with none, so it is refused and names
    # the revoke that does that on purpose.
    before = ws.registry_state()
    assert_cli_error(ws.run("rollback", "--app", "demo", "--app-version", "2.3"), 2, "would leave production with no patch")
    assert ws.registry_state() == before
    production = ws.run("revoke", "--app", "demo", "--app-version", "2.3", "--patch", "1", "--yes").stdout
    assert "revoked demo 2.3 patch 1 (production)" in production and "demo 2.3 now serves: none → 100 %" in production


def test_promote_prints_what_the_target_channel_serves_and_rollback_dry_run_changes_nothing(workspace):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "old();\n")
    ws.publish("demo", "2.3", "qa();\n", channel="staging")
    promoted = ws.run("promote", "--app", "demo", "--app-version", "2.3", "--from", "staging", "--to", "production", "--rollout", "25")
    assert promoted.rc == 0, promoted
    assert "demo 2.3 now serves: patch 3 → 25 %, patch 1 → 75 %" in promoted.stdout
    before = ws.registry_state()
    dry = ws.run("rollback", "--app", "demo", "--app-version", "2.3", "--dry-run")
    assert dry.rc == 0, dry
    assert "would revoke demo 2.3 patch 3" in dry.stdout and "then: patch 1 → 100 %" in dry.stdout
    assert ws.registry_state() == before, "a dry run changed the registry"
    dry = ws.json("rollback", "--app", "demo", "--app-version", "2.3", "--dry-run")
    assert dry["dryRun"] is True and dry["revoked"]["patch"] == 3
    assert dry["now"]["served"] == [{"patch": 1, "basisPoints": 10000}], "a dry run answers what the rollback would: what devices get then"
    assert ws.registry_state() == before, "a dry run changed the registry"


def test_revoke_message_is_kept_with_the_patch_and_in_the_audit_locally_and_over_the_server(workspace):
    from patchd_support import Patchd, remote, token_file
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "one();\n")
    ws.publish("demo", "2.3", "two();\n")
    revoked = ws.json("revoke", "--app", "demo", "--app-version", "2.3", "--patch", "2", "--message", "crashes on iOS 17")
    assert revoked[0]["revokeMessage"] == "crashes on iOS 17"
    assert ws.json("audit", "--app", "demo")["events"][-1]["details"]["message"] == "crashes on iOS 17"
    assert "demo 2.3 patch 2 revoked: crashes on iOS 17" in ws.run("list", "--app", "demo").stdout
    # --yes: the refusal is the message's, not the missing confirmation of emptying production.
    bad = ws.run("revoke", "--app", "demo", "--app-version", "2.3", "--all", "--yes", "--message", "a\u0007bell")
    assert bad.rc != 0 and "U+0007" in bad.stderr, bad
    assert [p["state"] for p in ws.json("list", "--app", "demo")] == ["active", "revoked"], "a refused message changes nothing"
    server = Patchd(ws)
    try:
        token = token_file(ws, ws.token("--app", "demo", "--name", "ci"), "ci.token")
        over = remote(ws, server, token, "revoke", "--app", "demo", "--app-version", "2.3", "--patch", "1", "--message", "superseded by the store build", "--yes", "--json")
        assert over.rc == 0, over
        assert json.loads(over.stdout)[0]["revokeMessage"] == "superseded by the store build"
    finally:
        server.stop()


def test_revoke_acts_on_one_channel_and_says_which_locally_and_over_the_server(workspace):
    # Issue 22: `revoke --app-version 2.3` once revoked 2.3's patches in every channel, so
    # pulling a bad production patch also killed QA's staging build.
    from patchd_support import Patchd, remote, token_file
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "prod();\n")
    ws.publish("demo", "2.3", "qa();\n", channel="staging")
    ws.publish("demo", "2.3", "qa2();\n", channel="staging")

    def states():
        return {(p["patch"], p["channel"]): p["state"] for p in ws.json("list", "--app", "demo")}

    result = ws.run("revoke", "--app", "demo", "--app-version", "2.3", "--all", "--yes")
    assert result.rc == 0, result
    assert "revoked demo 2.3 patch 1 (production)" in result.stdout, result.stdout
    assert states() == {(1, "production"): "revoked", (2, "staging"): "active", (3, "staging"): "active"}
    event = ws.json("audit", "--app", "demo")["events"][-1]
    assert event["action"] == "patch.revoke" and event["details"]["channel"] == "production" and event["details"]["patches"] == [1]
    # A patch named by number and another channel: refused, nothing changed.
    before = ws.registry_state()
    assert_cli_error(ws.run("revoke", "--app", "demo", "--app-version", "2.3", "--patch", "2", "--channel", "production"),
                     2, "is a staging patch, not production")
    assert ws.registry_state() == before
    server = Patchd(ws)
    try:
        token = token_file(ws, ws.token("--app", "demo", "--name", "ci"), "ci.token")
        over = remote(ws, server, token, "revoke", "--app", "demo", "--app-version", "2.3", "--patch", "3", "--channel", "production")
        assert over.rc == 2 and "is a staging patch, not production" in over.stderr, over
        over = remote(ws, server, token, "revoke", "--app", "demo", "--app-version", "2.3", "--channel", "staging", "--all", "--yes", "--json")
        assert over.rc == 0, over
        assert sorted(p["patch"] for p in json.loads(over.stdout)) == [2, 3]
    finally:
        server.stop()
    assert states() == {(1, "production"): "revoked", (2, "staging"): "revoked", (3, "staging"): "revoked"}


def test_from_any_subdirectory_the_registry_is_found_the_way_the_app_is(tmp_path):
    # Issue 22: hotpatch.json may name the registry and key directories (relative to it), so
    # `patchctl publish --app-version 2.3` works from anywhere in the app's repository.
    repo = tmp_path / "app-repo"
    (repo / "src" / "deep").mkdir(parents=True)
    env = clean_env()

    def run(cwd, *args):
        proc = spawn(lambda: subprocess.run([str(binary("PATCHCTL", "patchctl")), *map(str, args)], capture_output=True, cwd=cwd, env=env, timeout=120))
        return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())

    # The registry first, outside the repository (issue 42: init refuses one that is not there).
    created = run(tmp_path, "apps", "create", "demo", "--data", "registry", "--keys", "keys")
    assert created.rc == 0, created
    init = run(repo, "init", "--app", "demo", "--data", "../registry", "--keys", "../keys")
    assert init.rc == 0, init
    assert json.loads((repo / "hotpatch.json").read_text())["data"] == "../registry"
    rotated = run(repo / "src", "keys", "rotate", "--role", "timestamp")
    assert rotated.rc == 0, rotated
    (repo / "patches" / "demo" / "2.3").mkdir(parents=True)
    (repo / "patches" / "demo" / "2.3" / "main.js").write_text("fix();\n")
    published = run(repo / "src" / "deep", "publish", "--app-version", "2.3")
    assert published.rc == 0, published
    assert "published demo 2.3 patch 1" in published.stdout
    assert not (repo / "src" / "deep" / "data").exists(), "no registry made where the command ran"


def test_apps_create_inside_a_git_work_tree_warns_that_the_root_key_would_be_committed(tmp_path):
    repo = tmp_path / "app-repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = clean_env()

    def create(name, *extra):
        proc = subprocess.run([str(binary("PATCHCTL", "patchctl")), "apps", "create", name, *extra], capture_output=True, cwd=repo, env=env, timeout=120)
        return Result(proc.returncode, proc.stdout.decode(), proc.stderr.decode())

    warned = create("demo")
    assert warned.rc == 0, warned
    assert "warning: the key directory" in warned.stderr and "would be committed" in warned.stderr and "--keys" in warned.stderr, warned.stderr
    (repo / ".gitignore").write_text("/keys/\n")
    quiet = create("other")
    assert quiet.rc == 0 and "would be committed" not in quiet.stderr, quiet.stderr
    outside = create("third", "--keys", str(tmp_path / "keys"))
    assert outside.rc == 0 and "would be committed" not in outside.stderr, outside.stderr
