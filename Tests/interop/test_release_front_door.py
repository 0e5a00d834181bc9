"""Issue 42, the CLI's front door against a running patchd: `export --expires` refused while a
patchd serves the registry (and not after it stopped or died), a 401 that says whether a token
was sent and how to pass one, and an unknown app over --server answered with the nearest app
the token may read."""

import signal
import time

from hotpatch_testing import assert_cli_error
from patchd_support import poll, request, token_file


def first_pass_done(server):
    """patchd's first upkeep pass has run: it reports each role's expiry in /metrics after it."""
    return b"hotpatch_metadata_expires_in_seconds" in request(server.url, "/metrics").body


def timestamp(ws):
    return ws.json("status", "--app", "demo")["apps"][0]["metadata"]["timestamp"]


def test_export_expires_is_refused_while_a_patchd_serves_the_registry(workspace, start):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "fix();")
    # A short lease, so that on PostgreSQL a killed holder's claim lapses within the test.
    server = start(ws, ["--upkeep-lease", "3"])
    poll(lambda: first_pass_done(server), timeout=10)
    before = timestamp(ws)
    site = ws.new_export_dir("demo")
    result = ws.run("export", "--app", "demo", "--out", site, "--expires", "30d")
    assert_cli_error(result, 2, "--expires re-signs this registry's own timestamp", "serves it", "30 days", "Nothing was changed")
    assert not site.exists() and timestamp(ws) == before
    # Without --expires the export goes ahead: only the served one-day timestamp is exported.
    assert ws.run("export", "--app", "demo", "--out", site).rc == 0
    assert server.stop() == (0, False)
    assert ws.run("export", "--app", "demo", "--out", site, "--expires", "30d").rc == 0
    assert timestamp(ws)["version"] > before["version"]


def test_a_killed_patchd_does_not_block_export_expires_for_ever(workspace, start):
    ws = workspace
    ws.create_app("demo")
    server = start(ws, ["--upkeep-lease", "3"])
    poll(lambda: first_pass_done(server), timeout=10)
    site = ws.new_export_dir("demo")
    assert ws.run("export", "--app", "demo", "--out", site, "--expires", "30d").rc == 2
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(timeout=10)
    # SQLite: the kernel dropped the dead process's lock at once; PostgreSQL: its lease
    # lapses 3 s after its last renewal.
    deadline = time.monotonic() + 15
    while (result := ws.run("export", "--app", "demo", "--out", site, "--expires", "30d")).rc != 0 and time.monotonic() < deadline:
        assert "serves it" in result.stderr, result.stderr
        time.sleep(0.5)
    assert result.rc == 0, result.stderr


def test_a_401_says_whether_a_token_was_sent_and_how_to_pass_one(workspace, start):
    ws = workspace
    ws.create_app("demo")
    server = start(ws)
    none = ws.run("list", "--app", "demo", "--server", server.url, registry=False)
    assert_cli_error(none, 2, "(401)", "no token was sent", "--token-file FILE", "$HOTPATCH_TOKEN")
    wrong = token_file(ws, "hp_" + "0" * 64, "wrong.token")
    from_file = ws.run("list", "--app", "demo", "--server", server.url, "--token-file", wrong, registry=False)
    assert_cli_error(from_file, 2, "(401)", f"the token from --token-file {wrong} was sent", "--token-file FILE", "$HOTPATCH_TOKEN")
    from_env = ws.run("list", "--app", "demo", "--server", server.url, registry=False, env={"HOTPATCH_TOKEN": "hp_" + "1" * 64})
    assert_cli_error(from_env, 2, "(401)", "the token from $HOTPATCH_TOKEN was sent")


def test_an_unknown_app_over_server_gets_the_nearest_app_the_token_may_read(workspace, start):
    ws = workspace
    ws.create_app("demo")
    ws.create_app("shop")
    token = token_file(ws, ws.token("--all"), "all.token")
    server = start(ws)
    bundle = ws.write_file("fix();")
    result = ws.run("publish", "--app", "dmeo", "--app-version", "2.3", bundle, "--server", server.url, "--token-file", token, registry=False)
    assert_cli_error(result, 2, 'unknown app "dmeo"', "did you mean `demo`?")
    assert "create" not in result.stderr
    far = ws.run("list", "--app", "zzzzzz", "--server", server.url, "--token-file", token, registry=False)
    assert_cli_error(far, 2, 'unknown app "zzzzzz"', "which holds demo, shop")
    assert ws.json("list", "--app", "demo") == []
