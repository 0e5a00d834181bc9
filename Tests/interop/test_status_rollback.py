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
    assert "2.3      patch 3 → 25 %, patch 2 → 75 %" in text and "none → 100 %" in text

    # list's delivery column is the same over --server.
    listed = json.loads(remote(ws, server, auditor, "list", "--app", "demo", "--json").stdout)
    assert [(p["appVersion"], p["patch"], p["delivery"]) for p in listed] == \
        [(p["appVersion"], p["patch"], p["delivery"]) for p in ws.json("list", "--app", "demo")]


def test_rollback_over_server_revokes_the_newest_live_patch_and_says_what_devices_get(ws, start):
    server = start(ws)
    auditor = token_file(ws, ws.token("--app", "demo", "--role", "auditor", "--name", "qa"), "qa.token")
    assert_cli_error(remote(ws, server, auditor, "rollback", "--app", "demo", "--app-version", "2.3"), 2, "403")
    publisher = token_file(ws, ws.token("--app", "demo", "--role", "publisher", "--name", "ci"), "ci.token")
    result = remote(ws, server, publisher, "rollback", "--app", "demo", "--app-version", "2.3")
    assert result.rc == 0, result.stderr
    assert result.stdout.splitlines() == ["revoked demo 2.3 patch 3", "demo 2.3 now serves: patch 2 → 100 %"]
    result = json.loads(remote(ws, server, publisher, "rollback", "--app", "demo", "--app-version", "2.3", "--json").stdout)
    assert result["revoked"]["patch"] == 2 and result["revoked"]["state"] == "revoked"
    assert result["now"]["served"] == [{"patch": 1, "basisPoints": 10000}]
    # The server's registry changed, and the audit log says who.
    assert [p["state"] for p in ws.json("list", "--app", "demo") if p["appVersion"] == "2.3"] == ["active", "revoked", "revoked"]
    # revoke and rollout over --server print the same line.
    rollout = remote(ws, server, publisher, "rollout", "--app", "demo", "--app-version", "2.4", "--patch", "1", "--rollout", "40")
    assert rollout.stdout.splitlines()[-1] == "demo 2.4 now serves: patch 1 → 40 %, none → 60 %"
    revoke = remote(ws, server, publisher, "revoke", "--app", "demo", "--app-version", "2.3", "--patch", "1")
    assert revoke.stdout.splitlines()[-1] == "demo 2.3 now serves: none → 100 %"
    # Nothing live: exit 2, nothing changed.
    assert_cli_error(remote(ws, server, publisher, "rollback", "--app", "demo", "--app-version", "2.3"), 2, "no live patch")
