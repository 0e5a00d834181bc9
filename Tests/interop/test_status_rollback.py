"""`patchctl status`, `rollback`, `list`'s delivery and the "now serves" line, over --server
as locally (issue 11, "Seeing and undoing"): the same JSON from GET /v1/apps/{app}/status
as from the local registry, a rollback over the revoke route, the auditor/publisher rules.

    python -m pytest Tests/interop/test_status_rollback.py -q
"""
import json

import pytest
from hotpatch_testing import Workspace, assert_cli_error
from patchd_support import remote, token_file


@pytest.fixture
def ws(tmp_path):
    w = Workspace(tmp_path / "ws")
    w.create_app("demo")
    w.create_app("other")
    w.publish("demo", "2.3", "fix(1)")
    w.publish("demo", "2.3", "fix(2)")
    w.publish("demo", "2.3", "fix(3)", rollout="25")
    w.publish("demo", "2.4", "fix(4)", rollout="0")
    return w


def test_status_over_server_is_the_local_status(ws, start):
    local = ws.json("status")
    demo = next(a for a in local["apps"] if a["app"] == "demo")
    v23 = next(v for v in demo["versions"] if v["appVersion"] == "2.3")
    assert v23["served"] == [{"patch": 3, "basisPoints": 2500}, {"patch": 2, "basisPoints": 7500}]
    assert [(p["patch"], p["delivery"]) for p in v23["patches"]] == [(3, "live"), (2, "live"), (1, "superseded")]
    v24 = next(v for v in demo["versions"] if v["appVersion"] == "2.4")
    assert v24["served"] == [{"patch": None, "basisPoints": 10000}]
    assert v24["patches"] == [{"patch": 1, "rollout": 0, "delivery": "halted"}]
    assert set(demo["metadata"]) == {"root", "targets", "snapshot", "timestamp"}

    server = start(ws)
    auditor = token_file(ws, ws.token("--all", "--role", "auditor", "--name", "ops"), "ops.token")
    over = remote(ws, server, auditor, "status", "--json")
    assert over.rc == 0, over.stderr
    assert json.loads(over.stdout) == local
    scoped = token_file(ws, ws.token("--app", "other", "--role", "auditor", "--name", "qa"), "qa.token")
    only = json.loads(remote(ws, server, scoped, "status", "--json").stdout)
    assert [a["app"] for a in only["apps"]] == ["other"]
    assert_cli_error(remote(ws, server, scoped, "status", "--app", "demo"), 2, "403")
    text = remote(ws, server, auditor, "status", "--app", "demo").stdout
    assert "2.3      production  patch 3 → 25 %, patch 2 → 75 %" in text and "none → 100 %" in text

    # list's delivery column is the same over --server.
    listed = json.loads(remote(ws, server, auditor, "list", "--app", "demo", "--json").stdout)
    assert [(p["appVersion"], p["patch"], p["delivery"]) for p in listed] == \
        [(p["appVersion"], p["patch"], p["delivery"]) for p in ws.json("list", "--app", "demo")]


def test_rollback_over_server_revokes_the_newest_release_and_says_what_devices_get(ws, start):
    server = start(ws)
    auditor = token_file(ws, ws.token("--app", "demo", "--role", "auditor", "--name", "qa"), "qa.token")
    assert_cli_error(remote(ws, server, auditor, "rollback", "--app", "demo", "--app-version", "2.3"), 2, "403")
    publisher = token_file(ws, ws.token("--app", "demo", "--role", "publisher", "--name", "ci"), "ci.token")
    result = remote(ws, server, publisher, "rollback", "--app", "demo", "--app-version", "2.3")
    assert result.rc == 0, result.stderr
    assert result.stdout.splitlines() == ["revoked demo 2.3 patch 3 (production)", "demo 2.3 now serves: patch 2 → 100 %"]
    result = json.loads(remote(ws, server, publisher, "rollback", "--app", "demo", "--app-version", "2.3", "--json").stdout)
    assert result["revoked"]["patch"] == 2 and result["revoked"]["state"] == "revoked"
    assert result["now"]["served"] == [{"patch": 1, "basisPoints": 10000}]
    # The server's registry changed, and the audit log says who.
    assert [p["state"] for p in ws.json("list", "--app", "demo") if p["appVersion"] == "2.3"] == ["active", "revoked", "revoked"]
    # revoke and rollout over --server print the same line.
    rollout = remote(ws, server, publisher, "rollout", "--app", "demo", "--app-version", "2.4", "--patch", "1", "--rollout", "40")
    assert rollout.stdout.splitlines()[-1] == "demo 2.4 now serves: patch 1 → 40 %, none → 60 %"
    # Patch 1 is 2.3's last patch: revoking it needs --yes without a terminal.
    refused = remote(ws, server, publisher, "revoke", "--app", "demo", "--app-version", "2.3", "--patch", "1")
    assert_cli_error(refused, 64, "would leave production", "--yes")
    assert [p["state"] for p in ws.json("list", "--app", "demo") if p["appVersion"] == "2.3"] == ["active", "revoked", "revoked"]
    revoke = remote(ws, server, publisher, "revoke", "--app", "demo", "--app-version", "2.3", "--patch", "1", "--yes")
    assert revoke.stdout.splitlines()[-1] == "demo 2.3 now serves: none → 100 %"
    # No release left to undo (every patch revoked): exit 2, nothing changed.
    before = ws.registry_state()
    assert_cli_error(remote(ws, server, publisher, "rollback", "--app", "demo", "--app-version", "2.3"), 2,
                     "has no release on production to roll back")
    assert ws.registry_state() == before


def test_rollback_to_republishes_an_earlier_patch_locally_and_over_the_server_and_python_tuf_reads_where_from(ws, start, tmp_path):
    # Issue 22: a retried `rollback` once revoked 3, then 1, leaving "none → 100 %"; nothing
    # could be un-revoked. `--to N` goes back by moving forward, as CodePush and EAS do.
    from hotpatch_testing import fetch, repo_updater
    server = start(ws)
    publisher = token_file(ws, ws.token("--app", "demo", "--role", "publisher", "--name", "ci"), "ci.token")
    local = ws.run("rollback", "--app", "demo", "--app-version", "2.3", "--to", "1")
    assert local.rc == 0, local.stderr
    assert local.stdout.splitlines()[0] == "rolled demo 2.3 (production) back to patch 1: its bytes published again as patch 4 (signed rolledBackTo 1)"
    assert local.stdout.splitlines()[-1] == "demo 2.3 now serves: patch 4 → 100 %"
    patches = {p["patch"]: p for p in ws.json("list", "--app", "demo") if p["appVersion"] == "2.3"}
    assert patches[4]["sha256"] == patches[1]["sha256"] and patches[4]["rolledBackTo"] == {"channel": "production", "patch": 1, "sha256": patches[1]["sha256"]}
    # A retried job: refused, nothing changed.
    before = ws.registry_state()
    assert_cli_error(ws.run("rollback", "--app", "demo", "--app-version", "2.3", "--to", "1"), 2, "already serves patch 1's bytes as patch 4")
    assert ws.registry_state() == before
    # Over the server, to a patch patch 4 superseded.
    over = remote(ws, server, publisher, "rollback", "--app", "demo", "--app-version", "2.3", "--to", "3", "--json")
    assert over.rc == 0, over.stderr
    result = json.loads(over.stdout)
    assert result["published"]["patch"] == 5 and result["published"]["rolledBackTo"]["patch"] == 3
    assert result["now"]["served"] == [{"patch": 5, "basisPoints": 10000}]
    event = ws.json("audit", "--app", "demo")["events"][-1]
    assert event["action"] == "patch.rollback" and event["details"]["to"]["patch"] == 3
    updater = repo_updater(server.app_url("demo"), tmp_path / "tuf", ws.root_json("demo"))
    updater.refresh()
    info, body = fetch(updater, "2.3/5/main.js")
    assert info.custom["rolledBackTo"] == {"channel": "production", "patch": 3, "sha256": patches[3]["sha256"]}
    assert body == b"fix(3)"


def test_expect_patch_refuses_a_change_made_against_a_state_that_moved_on_locally_and_over_the_server(ws, start):
    # Issue 22: a retried CI job, or two engineers at once, must not act on a state that moved.
    server = start(ws)
    publisher = token_file(ws, ws.token("--app", "demo", "--role", "publisher", "--name", "ci"), "ci.token")
    before = ws.registry_state()
    # rollback's --expect-patch is the release it undoes; the others' is the patch served now.
    for args, says in ((["rollback", "--app", "demo", "--app-version", "2.3", "--expect-patch", "2"], "a rollback undoes is patch 3, not patch 2"),
                       (["revoke", "--app", "demo", "--app-version", "2.3", "--patch", "3", "--expect-patch", "2"], "serves patch 3 now, not"),
                       (["rollout", "--app", "demo", "--app-version", "2.3", "--patch", "3", "--rollout", "50%", "--expect-patch", "0"], "serves patch 3 now, not"),
                       (["publish", "--app", "demo", "--app-version", "2.3", "--expect-patch", "1", ws.write_file(b"fix(5)")], "serves patch 3 now, not")):
        assert_cli_error(ws.run(*args), 2, says)
        refused = remote(ws, server, publisher, *args)
        assert refused.rc == 2 and says in refused.stderr, (args, refused)
    assert ws.registry_state() == before, "a refused --expect-patch changed the registry"
    # 2.4's only patch is halted: none is live, so `--expect-patch 0` publishes once; the same
    # command again (a retried job) is refused, as patch 2 lives now.
    assert ws.run("publish", "--app", "demo", "--app-version", "2.4", "--expect-patch", "0", ws.write_file(b"x()")).rc == 0
    assert_cli_error(ws.run("publish", "--app", "demo", "--app-version", "2.4", "--expect-patch", "0", "--allow-same", ws.write_file(b"x()")),
                     2, "serves patch 2 now, not none")
    assert remote(ws, server, publisher, "rollback", "--app", "demo", "--app-version", "2.3", "--expect-patch", "3").rc == 0
