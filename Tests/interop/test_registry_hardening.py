"""The registry under concurrent writers and its files on disk (issue 10, items 14-17):
publishes racing key rotations leave a repository python-tuf and `patchctl verify` accept;
registry files are private while patchd runs; the token for --server comes from a file or
$HOTPATCH_TOKEN, and publishing with --token-file against a live patchd works.

    PATCHCTL=... PATCHD=... python -m pytest Tests/interop/test_registry_hardening.py
"""

import os
import stat
import subprocess
import time

import pytest
from hotpatch_testing import Workspace, assert_cli_error, cached_version, clean_env, fetch, repo_updater, sqlite_only, spawn

ROLES = ("root", "targets", "snapshot", "timestamp")


@pytest.fixture
def ws(tmp_path):
    w = Workspace(tmp_path / "ws")
    w.json("apps", "create", "demo")
    return w




def popen(ws, *args, env=None):
    """patchctl ARGS with the workspace's registry and --keys, started and not waited for."""
    argv = [str(ws.exe), *map(str, args), *map(str, ws.registry_args), "--keys", str(ws.keys)]
    environment = dict(clean_env(), **(env or {}))
    return spawn(lambda: subprocess.Popen(argv, cwd=ws.root, env=environment,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE))


def finish(proc):
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out.decode(), err.decode()


def wait_for(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def accepted_everywhere(ws, http_server, tmp_path):
    """Exports demo; `patchctl verify` and a fresh python-tuf client both accept it, and
    python-tuf downloads every listed patch."""
    out = ws.export("demo")
    metadata = tmp_path / f"client-{time.monotonic_ns()}" / "metadata"
    updater = repo_updater(http_server(out), metadata, ws.root_json("demo"))
    updater.refresh()
    listed = [p for p in ws.listing() if p["state"] == "active"]
    for patch in listed:
        info, body = fetch(updater, patch["targetPath"])
        if info is not None:
            assert len(body) == patch["length"]
    verify = ws.run("verify", "--repo", out, "--root", ws.root_file("demo"), registry=False)
    assert verify.rc == 0, verify.stdout + verify.stderr
    return metadata


@pytest.mark.parametrize("role", ["targets", "snapshot", "timestamp"])
def test_rotation_committed_while_a_publish_waits_to_sign(ws, http_server, tmp_path, role):
    """The publish is held right after it read the root that names the signing keys; the
    rotation is held after its commit, before it deletes the replaced key. Reading the root
    before BEGIN, the publish signed with the replaced key and every client refused the
    repository; read inside the transaction, the rotation waits for the publish."""
    ws.publish("demo", "2.3", "one()")
    pauses = tmp_path / "pauses"
    pauses.mkdir()
    publish = popen(ws, "publish", "--app", "demo", "--app-version", "2.3", ws.write_file("two()"),
                    env={"HOTPATCH_PAUSE_AT": "signing-root.read", "HOTPATCH_PAUSE_DIR": str(pauses)})
    assert wait_for(lambda: (pauses / "signing-root.read.paused").exists() or publish.poll() is not None, 30)
    rotate = popen(ws, "keys", "rotate", "--app", "demo", "--role", role,
                   env={"HOTPATCH_PAUSE_AT": "rotate.after-commit", "HOTPATCH_PAUSE_DIR": str(pauses)})
    rotated_inside_window = wait_for(lambda: (pauses / "rotate.after-commit.paused").exists() or rotate.poll() is not None, 3)
    (pauses / "signing-root.read.resume").touch()
    published = finish(publish)
    (pauses / "rotate.after-commit.resume").touch()
    rotated = finish(rotate)
    assert published[0] == 0, published[2]
    assert rotated[0] == 0, rotated[2]
    accepted_everywhere(ws, http_server, tmp_path)
    assert not rotated_inside_window, "the rotation committed between the publish's root read and its signing"


def test_publishes_racing_rotations_of_every_role(ws, http_server, tmp_path):
    """Rounds of 4 publishes and a rotation of each role, all at once: every command
    succeeds (two rotations no longer both write root N+1), and the repository verifies."""
    for round_ in range(3):
        procs = [("publish", popen(ws, "publish", "--app", "demo", "--app-version", "2.3",
                                   ws.write_file(f"patch({round_}, {n})"))) for n in range(4)]
        procs += [(f"rotate {role}", popen(ws, "keys", "rotate", "--app", "demo", "--role", role)) for role in ROLES]
        for what, proc in procs:
            rc, _out, err = finish(proc)
            assert rc == 0, f"round {round_}, {what}: {err}"
    assert len(ws.listing()) == 12
    assert sum(e["action"] == "key.rotate" for e in ws.json("audit")["events"]) == 12
    metadata = accepted_everywhere(ws, http_server, tmp_path)
    assert cached_version(metadata, "root") == 13  # python-tuf walked all 12 rotations


# -- file permissions while patchd runs ------------------------------------------------------

def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@sqlite_only("the modes of registry.sqlite and its data directory; PostgreSQL keeps its files itself")
def test_registry_files_are_private_while_patchd_runs_and_an_open_directory_is_reported(ws, start):
    server = start(ws)
    assert server.url
    for name in ("registry.sqlite", "registry.sqlite-wal", "registry.sqlite-shm"):
        assert mode(ws.data / name) == 0o600, name
    assert mode(ws.data) == 0o700
    assert "warning" not in server.stderr()
    server.stop()

    os.chmod(ws.data, 0o755)
    opened = start(ws)
    assert opened.url
    warnings = [line for line in opened.stderr().splitlines() if "warning: the data directory" in line]
    assert len(warnings) == 1, opened.stderr()
    assert warnings[0].startswith("patchd: warning:") and "chmod 700" in warnings[0]
    listed = ws.run("list")
    assert listed.rc == 0 and listed.stderr.startswith("patchctl: warning: the data directory")


# -- the token for --server ------------------------------------------------------------------

def token_file(ws, token, name="token", perms=0o600):
    path = ws.root / name
    path.write_text(token + "\n")
    os.chmod(path, perms)
    return path


def test_publish_with_token_file_and_env_against_live_patchd(ws, start, tmp_path):
    server = start(ws)
    token = ws.token("--app", "demo", "--name", "ci@example.com")
    path = token_file(ws, token)
    result = ws.run("publish", "--server", server.url, "--token-file", path, "--app", "demo",
                    "--app-version", "2.3", "--json", ws.write_file(b"var fix = 1;"), registry=False)
    assert result.rc == 0, result.stderr
    assert result.stderr == ""
    assert '"patch":1' in result.stdout

    env = dict(clean_env(), HOTPATCH_TOKEN=token, HOTPATCH_SERVER=server.url)
    proc = subprocess.run([str(ws.exe), "publish", "--app", "demo", "--app-version", "2.3", str(ws.write_file(b"var fix = 2;"))],
                          capture_output=True, env=env, cwd=ws.root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b""

    inline = ws.run("revoke", "--server", server.url, "--token", token, "--app", "demo", "--app-version", "2.3",
                    "--patch", "2", registry=False)
    assert inline.rc == 0 and "warning: --token is visible to other users" in inline.stderr

    updater = repo_updater(server.app_url("demo"), tmp_path / "client" / "metadata", ws.root_json("demo"))
    info, body = fetch(updater, "2.3/1/main.js")
    assert body == b"var fix = 1;"
    assert updater.get_targetinfo("2.3/2/main.js") is None


def test_bad_token_files_are_clear_errors_and_send_nothing(ws, start):
    server = start(ws)
    token = ws.token("--app", "demo")
    bundle = ws.write_file(b"nope()")
    publish = ("publish", "--server", server.url, "--app", "demo", "--app-version", "2.3", bundle)
    assert_cli_error(ws.run(*publish, "--token-file", ws.root / "absent", registry=False), 2, "cannot read the token file")
    assert_cli_error(ws.run(*publish, "--token-file", token_file(ws, "", "empty"), registry=False), 2, "is empty")
    assert_cli_error(ws.run(*publish, "--token-file", ws.root, registry=False), 2, "is a directory")
    assert_cli_error(ws.run(*publish, "--token-file", token_file(ws, "hp_" + "0" * 64, "wrong"), registry=False), 2, "401")
    assert_cli_error(ws.run(*publish, "--token", token, "--token-file", token_file(ws, token), registry=False), 64, "not both")
    shared = ws.run(*publish, "--token-file", token_file(ws, token, "shared", 0o644), registry=False)
    assert shared.rc == 0 and "readable by group or others" in shared.stderr
    assert [p["patch"] for p in ws.listing()] == [1]
