"""Release semantics a tired release engineer cannot get wrong (issue 42), through the built
binaries: a revoke that would empty a channel asks on a terminal, and over --server the
server's rule decides what a rollback undoes."""
import json
import os
import pty
import select
import subprocess
import time

from hotpatch_testing import Workspace, clean_env
from patchd_support import remote, token_file


def run_on_terminal(ws, args, answer, timeout=30):
    """patchctl ARGS with a pseudo-terminal as stdin, stdout and stderr; types `answer` once
    it asks. Returns (exit code, everything it wrote)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([str(ws.exe), *args, *ws.registry_args, "--keys", str(ws.keys)], cwd=ws.root, env=clean_env(),
                            stdin=follower, stdout=follower, stderr=follower, close_fds=True)
    os.close(follower)
    out, answered, deadline = b"", False, time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
            if not answered and b"Type yes to go ahead:" in out:
                os.write(leader, answer.encode() + b"\n")
                answered = True
            if proc.poll() is not None and not ready:
                break
        return proc.wait(timeout=5), out.decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(leader)


def test_a_revoke_that_would_empty_a_channel_asks_on_a_terminal_and_only_yes_goes_ahead(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.create_app("demo")
    ws.publish("demo", "2.3", "only(1)")
    args = ["revoke", "--app", "demo", "--app-version", "2.3", "--patch", "1"]
    code, text = run_on_terminal(ws, args, "no")
    assert code == 2 and "would leave production serving no patch" in text and "then get none → 100 %" in text, text
    assert "not confirmed: nothing was changed" in text
    assert [p["state"] for p in ws.json("list", "--app", "demo")] == ["active"]
    code, text = run_on_terminal(ws, args, "yes")
    assert code == 0 and "revoked demo 2.3 patch 1 (production)" in text and "now serves: none → 100 %" in text, text
    assert [p["state"] for p in ws.json("list", "--app", "demo")] == ["revoked"]


def test_over_the_server_halt_then_rollback_undoes_the_halted_patch_and_a_retry_is_refused(tmp_path, start):
    ws = Workspace(tmp_path / "ws")
    ws.create_app("demo")
    for n in (1, 2, 3):
        ws.publish("demo", "2.3", f"good({n})")
    ws.publish("demo", "2.3", "bad()", rollout="50")
    server = start(ws)
    token = token_file(ws, ws.token("--app", "demo", "--name", "oncall"), "oncall.token")

    def over(*args):
        return remote(ws, server, token, *args)

    halted = over("halt", "--app", "demo", "--app-version", "2.3", "--patch", "4", "--json")
    assert halted.rc == 0 and json.loads(halted.stdout)["rollout"] == 0, halted.stderr
    undone = over("rollback", "--app", "demo", "--app-version", "2.3", "--expect-patch", "4", "--json")
    assert undone.rc == 0, undone.stderr
    assert json.loads(undone.stdout)["revoked"]["patch"] == 4
    states = {p["patch"]: p["state"] for p in ws.json("list", "--app", "demo")}
    assert states == {1: "active", 2: "active", 3: "active", 4: "revoked"}, "the halted patch, not a good one"
    again = over("rollback", "--app", "demo", "--app-version", "2.3", "--expect-patch", "4")
    assert again.rc == 2 and "is patch 3, not patch 4" in again.stderr, again.stderr
    assert {p["patch"]: p["state"] for p in ws.json("list", "--app", "demo")} == states, "the retry changed nothing"
    events = [e["action"] for e in ws.json("audit", "--app", "demo")["events"]]
    assert events[-2:] == ["patch.halt", "patch.revoke"]
