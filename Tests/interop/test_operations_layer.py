"""One operations layer (issue 22): every remote-capable patchctl command is one Backend with a
local implementation (the registry) and a remote one (the operation table over HTTP), so the
same command prints the same JSON both ways; patchd and patchctl take one option grammar; the
commands that were local only (diff, apps throttle, export, notify, tokens create) work with
--server too.

    python -m pytest Tests/interop/test_operations_layer.py -q
"""
import filecmp
import json
import os
import subprocess

import pytest
from hotpatch_testing import Workspace, assert_cli_error, binary, clean_env
from patchd_support import poll, remote, token_file

# Fields that say when and by whom: a change made over --server is recorded under the token's
# name, and at another second.
VOLATILE = {"publishedAt", "checkedAt", "publishedBy", "revokedAt", "revokedBy", "at", "setAt", "setBy", "createdAt", "createdBy",
            "actor", "hash", "prev", "seq", "nextAt", "expires", "id", "token", "name", "lastCheck"}


def normalized(value):
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


@pytest.fixture
def pair(tmp_path, start):
    """Two registries given the same history, one driven locally and one over --server."""
    local = Workspace(tmp_path / "local")
    served = Workspace(tmp_path / "served")
    for w in (local, served):
        w.json("apps", "create", "demo")
    server = start(served)
    token = token_file(served, served.token("--all", "--name", "ci"), "ci.token")

    def both(*args):
        """`patchctl ARGS --json` on each side; returns (local, remote) results."""
        return local.run(*args, "--json"), remote(served, server, token, *args, "--json")

    return local, served, server, token, both


def test_every_remote_capable_command_prints_the_same_json_both_ways(pair):
    local, served, server, token, both = pair
    steps = [
        ("publish", "--app", "demo", "--app-version", "2.3", "--message", "first", local.write_file("fix(1)")),
        ("publish", "--app", "demo", "--app-version", "2.3", "--rollout", "25%", local.write_file("fix(2)")),
        ("publish", "--app", "demo", "--app-version", "2.3", "--channel", "staging", "--new-channel", local.write_file("fix(3)")),
        ("publish", "--app", "demo", "--app-version", "2.3", "--dry-run", local.write_file("fix(4)")),
        ("rollout", "--app", "demo", "--app-version", "2.3", "--patch", "2", "--rollout", "50", "--expect-patch", "2"),
        ("halt", "--app", "demo", "--app-version", "2.3", "--patch", "2", "--message", "crash on launch"),
        ("resume", "--app", "demo", "--app-version", "2.3", "--patch", "2", "--dry-run"),
        ("resume", "--app", "demo", "--app-version", "2.3", "--patch", "2"),
        ("promote", "--app", "demo", "--app-version", "2.3", "--from", "staging", "--to", "production", "--dry-run"),
        ("revoke", "--app", "demo", "--app-version", "2.3", "--channel", "staging", "--all", "--dry-run"),
        ("rollback", "--app", "demo", "--app-version", "2.3", "--dry-run"),
        ("rollback", "--app", "demo", "--app-version", "2.3", "--to", "1", "--dry-run"),
        ("apps", "guard", "demo", "--max-rollback-rate", "2%", "--min-devices", "10"),
        ("apps", "guard", "demo"),
        ("apps", "list"),
        ("list", "--app", "demo"),
        ("status", "--app", "demo"),
        ("diff", "--app", "demo", "--app-version", "2.3", "1", "2"),
        ("rollback", "--app", "demo", "--app-version", "2.3"),
        ("revoke", "--app", "demo", "--app-version", "2.3", "--channel", "staging", "--all", "--yes"),
        ("list", "--app", "demo"),
    ]
    for step in steps:
        mine, theirs = both(*step)
        assert (mine.rc, theirs.rc) == (0, 0), f"{step}: local {mine.rc} {mine.stderr}\nremote {theirs.rc} {theirs.stderr}"
        assert normalized(json.loads(mine.stdout)) == normalized(json.loads(theirs.stdout)), step
    # A refusal is the same refusal, with the same exit code.
    for step in [("rollout", "--app", "demo", "--app-version", "2.3", "--patch", "2", "--rollout", "60", "--expect-patch", "7"),
                 ("rollback", "--app", "demo", "--app-version", "2.3", "--channel", "staging")]:
        mine, theirs = both(*step)
        assert mine.rc == theirs.rc == 2, (step, mine.stderr, theirs.stderr)
        assert json.loads(mine.stdout)["error"]["exit"] == json.loads(theirs.stdout)["error"]["exit"] == 2
    # A usage error is the same usage error (exit 64), from the operation's own rules: before
    # anything is sent, and for a revoke that would empty a channel, from the server's answer.
    for w in (local, served):
        w.publish("demo", "2.5", "only(1)")
    for step in [("revoke", "--app", "demo", "--app-version", "2.3"),
                 ("rollback", "--app", "demo", "--app-version", "2.3", "--patch", "1", "--to", "1"),
                 ("revoke", "--app", "demo", "--app-version", "2.5", "--patch", "1")]:
        mine, theirs = both(*step)
        assert mine.rc == theirs.rc == 64, (step, mine.stderr, theirs.stderr)
        assert json.loads(mine.stdout)["error"] == json.loads(theirs.stdout)["error"], step
    # And the audit logs record the same actions in the same order.
    # (The served side also created the token the remote commands use.)
    actions = [[e["action"] for e in w.json("audit")["events"] if e["action"] != "token.create"] for w in (local, served)]
    assert actions[0] == actions[1]


def test_diff_over_server_is_the_local_diff_and_an_encrypted_app_is_refused(pair):
    local, served, server, token, both = pair
    for w in (local, served):
        w.publish("demo", "2.3", "fix(1)\n")
        w.publish("demo", "2.3", "fix(2)\n")
    mine, theirs = both("diff", "--app", "demo", "--app-version", "2.3", "1", "2")
    assert json.loads(mine.stdout) == json.loads(theirs.stdout)
    assert "-fix(1)\n+fix(2)" in json.loads(theirs.stdout)["diff"]
    served.create_app("secret", encrypt=True)
    served.publish("secret", "1.0", "a()")
    # patchd picks up the new app within a second.
    result = poll(lambda: (lambda r: r if "404" not in r.stderr else None)(
        remote(served, server, token, "diff", "--app", "secret", "--app-version", "1.0", "1", "1")), timeout=10)
    assert_cli_error(result, 2, "409", "encrypted")


def test_export_over_server_mirrors_what_the_local_export_writes_after_verifying_it(pair, tmp_path):
    local, served, server, token, both = pair
    served.publish("demo", "2.3", "fix(1)")
    served.publish("demo", "2.3", "fix(2)", rollout="30")
    served.publish("demo", "2.3", "only(staging)", channel="staging")
    served.ok("revoke", "--app", "demo", "--app-version", "2.3", "--patch", "1")
    here = tmp_path / "here"
    served.ok("export", "--app", "demo", "--out", here)
    mirror = tmp_path / "mirror"
    result = remote(served, server, token, "export", "--app", "demo", "--out", mirror, "--root", served.root_file("demo"), "--json")
    assert result.rc == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["targetFiles"] > 0 and summary["removedFiles"] == 0
    compared = filecmp.dircmp(here, mirror)

    def same(c):
        assert not c.left_only and not c.right_only and not c.diff_files and not c.funny_files, (c.left, c.left_only, c.right_only, c.diff_files)
        for sub in c.subdirs.values():
            same(sub)
    same(compared)
    # What the mirror holds verifies as a device reads it.
    assert served.run("verify", "--repo", mirror, "--app", "demo", "--root", served.root_file("demo"), registry=False).rc == 0
    # A revoke on the server, and the next mirror deletes the bundle no device may get now.
    served.ok("revoke", "--app", "demo", "--app-version", "2.3", "--patch", "2", "--yes")  # production's last patch
    # (patchd serves the revoke within a second.)
    poll(lambda: json.loads(remote(served, server, token, "export", "--app", "demo", "--out", mirror, "--json").stdout)["removedFiles"] > 0,
         timeout=10)


def test_export_over_server_writes_nothing_that_does_not_verify(pair, tmp_path):
    local, served, server, token, both = pair
    served.publish("demo", "2.3", "fix(1)")
    served.create_app("other")
    mirror = tmp_path / "mirror"
    # Another app's root is not demo's: refused before anything is written.
    result = remote(served, server, token, "export", "--app", "demo", "--out", mirror, "--root", served.root_file("other"))
    assert_cli_error(result, 1, "not the --root given", "nothing was written")
    assert not mirror.exists()
    # --expires signs, which only the registry's keys can do.
    result = remote(served, server, token, "export", "--app", "demo", "--out", mirror, "--expires", "30d")
    assert_cli_error(result, 64, "--expires", "where the registry is")
    assert not mirror.exists()


def test_patchd_and_patchctl_take_one_option_grammar(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.create_app("demo")
    patchd = str(binary("PATCHD", "patchd"))
    # --name=VALUE, as patchctl takes it.
    listing = ws.json("apps", "list", f"--data={ws.data}", registry=False)
    assert [a["app"] for a in listing] == ["demo"]

    def run(*args, env=None):
        return subprocess.run([patchd, *args], capture_output=True, text=True, timeout=30, cwd=ws.root,
                              env={**clean_env(), **(env or {})})
    # Both refuse a misspelt option with exit 64 and the same "did you mean".
    typo = run("--dta", str(ws.data))
    assert typo.returncode == 64 and "unknown option --dta for `patchd`; did you mean --data?" in typo.stderr
    mine = ws.run("apps", "list", "--dta", str(ws.data), registry=False)
    assert mine.rc == 64 and "unknown option --dta for `patchctl apps list`; did you mean --data?" in mine.stderr
    # A value is checked the same way, from the command line or its environment variable.
    assert "--threads must be an integer from 1 to 256, got 0" in run(f"--data={ws.data}", "--threads=0").stderr
    assert run(f"--data={ws.data}", env={"HOTPATCH_THREADS": "abc"}).returncode == 64
    assert run("--listen").returncode == 64
    # And --data=DIR starts patchd (a registry that is not there is exit 2, not a usage error).
    assert run(f"--data={tmp_path / 'nowhere'}", "--listen=127.0.0.1:0").returncode == 2
    help_text = run("--help").stdout
    assert "Usage: patchd [--data DIR]" in help_text and "(or $HOTPATCH_DATA)" in help_text


def test_status_groups_rows_by_channel_production_first(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.create_app("demo")
    ws.publish("demo", "2.3", "a()")
    ws.publish("demo", "2.3", "b()", channel="staging")
    ws.publish("demo", "2.4", "c()")
    rows = [line.split()[:2] for line in ws.ok("status").splitlines() if line[:1].isdigit()]
    assert rows == [["2.3", "production"], ["2.4", "production"], ["2.3", "staging"]]


def test_apps_throttle_over_server_shows_and_sets_the_same_rules(pair):
    local, served, server, token, both = pair
    for step in [("apps", "throttle", "demo"), ("apps", "throttle", "demo", "--min-interval", "600", "--ip-rate", "120/min"),
                 ("apps", "throttle", "demo", "--min-interval", "600"), ("apps", "throttle", "demo")]:
        mine, theirs = both(*step)
        assert (mine.rc, theirs.rc) == (0, 0), (step, mine.stderr, theirs.stderr)
        assert json.loads(mine.stdout) == json.loads(theirs.stdout), step
    assert json.loads(theirs.stdout) == {"minInterval": 600, "ipRatePerMinute": 120}
    auditor = token_file(served, served.token("--app", "demo", "--role", "auditor", "--name", "qa"), "qa.token")
    assert remote(served, server, auditor, "apps", "throttle", "demo", "--json").rc == 0
    assert_cli_error(remote(served, server, auditor, "apps", "throttle", "demo", "--min-interval", "60"), 2, "403")
    assert_cli_error(remote(served, server, token, "apps", "throttle", "demo", "--min-interval", "-1"), 64, "--min-interval")


def test_tokens_create_over_server_is_no_broader_than_its_issuer_and_dies_with_it(pair):
    local, served, server, token, both = pair
    mine, theirs = both("tokens", "create", "--app", "demo", "--role", "auditor", "--name", "dash")
    assert (mine.rc, theirs.rc) == (0, 0), (mine.stderr, theirs.stderr)
    issued = json.loads(theirs.stdout)
    assert normalized({k: v for k, v in issued.items() if k != "parent"}) == normalized(json.loads(mine.stdout))
    assert issued["token"].startswith("hp_") and issued["scope"] == "demo" and issued["role"] == "auditor"
    ci_id = next(t["id"] for t in served.json("tokens", "list") if t["name"] == "ci")
    assert issued["parent"] == ci_id
    # A token for one app issues only for that app; an auditor issues nothing.
    scoped_secret = json.loads(remote(served, server, token, "tokens", "create", "--app", "demo", "--name", "bot", "--json").stdout)["token"]
    scoped = token_file(served, scoped_secret, "bot.token")
    assert_cli_error(remote(served, server, scoped, "tokens", "create", "--all", "--name", "wider"), 2, "403")
    dash = token_file(served, issued["token"], "dash.token")
    assert_cli_error(remote(served, server, dash, "tokens", "create", "--app", "demo", "--name", "x"), 2, "403")
    grandchild = json.loads(remote(served, server, scoped, "tokens", "create", "--app", "demo", "--role", "auditor", "--name", "gc", "--json").stdout)
    gc = token_file(served, grandchild["token"], "gc.token")
    assert remote(served, server, gc, "apps", "list", "--json").rc == 0
    # Revoking ci revokes what it issued, and what those issued.
    served.ok("tokens", "revoke", ci_id)
    for path in (dash, scoped, gc):
        assert_cli_error(remote(served, server, path, "apps", "list"), 2, "401")


def test_tokens_revoke_over_server_revokes_no_broader_than_its_caller(pair):
    local, served, server, token, both = pair
    served.create_app("other")
    issued = {}
    for name, scope in (("a", "--app=demo"), ("b", "--app=other"), ("c", "--app=demo")):
        issued[name] = json.loads(remote(served, server, token, "tokens", "create", scope, "--name", name, "--json").stdout)
    demo_bot = token_file(served, issued["a"]["token"], "a.token")
    # A demo token may not revoke other's; it may revoke demo's.
    assert_cli_error(remote(served, server, demo_bot, "tokens", "revoke", issued["b"]["id"]), 2, "403")
    mine = remote(served, server, demo_bot, "tokens", "revoke", issued["c"]["id"], "--json")
    assert mine.rc == 0, mine.stderr
    assert json.loads(mine.stdout) == {"id": issued["c"]["id"], "scope": "demo", "role": "publisher", "name": "c", "revoked": True}
    local_token = local.token("--app", "demo", "--name", "c")
    local_id = next(t["id"] for t in local.json("tokens", "list") if t["name"] == "c")
    assert normalized(local.json("tokens", "revoke", local_id)) == normalized(json.loads(mine.stdout))
    assert local_token
    assert_cli_error(remote(served, server, demo_bot, "tokens", "revoke", issued["c"]["id"]), 2, "409", "already revoked")
    # A malformed id is the operation's own usage error, before anything is sent (the server would say 400).
    assert_cli_error(remote(served, server, demo_bot, "tokens", "revoke", "not-an-id"), 64, "12 lower-case hex digits")
