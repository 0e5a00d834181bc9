"""The registry file and the registry's existence tell the truth (issue 21, items 1 and 2):
a registry.sqlite deleted or replaced under a running patchd takes it out of rotation and
refuses publishes, instead of acknowledging them into an unlinked file; an emptied file, an
empty data directory or an empty PostgreSQL schema is no registry to patchctl or patchd.

    PATCHCTL=... PATCHD=... python -m pytest Tests/interop/test_registry_file.py
"""

import json
import os
import subprocess
import time

from hotpatch_testing import Result, Workspace, assert_cli_error, binary, clean_env, psql, spawn, sqlite_only
from patchd_support import Patchd, error_json, request


def healthz_503_within(server, seconds):
    """The /healthz answer once it is 503, and how long that took; fails after `seconds`."""
    started = time.monotonic()
    while True:
        resp = request(server.url, "/healthz")
        waited = time.monotonic() - started
        if resp.status == 503:
            return resp, waited
        assert waited < seconds, f"/healthz still {resp.status} {resp.body!r} after {waited:.1f} s"
        time.sleep(0.05)


def publish(server, token, text):
    return request(server.url, "/v1/apps/demo/patches?appVersion=2.3", "POST",
                   headers={"Authorization": f"Bearer {token}"}, body=text.encode())


def assert_refused_as_replaced(server, token):
    health, waited = healthz_503_within(server, 3.0)  # the reload runs every second
    err = error_json(health)
    assert err["code"] == "unavailable" and "deleted or replaced" in err["message"], err
    assert health.headers.get("Retry-After") == "5"
    resp = publish(server, token, "lost();\n")
    assert resp.status == 503, (resp.status, resp.body)
    err = error_json(resp)
    assert err == {"code": "unavailable", "message": "the registry file was deleted or replaced under this server; nothing was changed"}
    return waited


def patchd_run(ws, timeout=10):
    """patchd on the workspace's registry, run to its exit (it is expected to refuse to start)."""
    argv = [str(binary("PATCHD", "patchd")), *map(str, ws.registry_args), "--keys", str(ws.keys), "--listen", "127.0.0.1:0"]
    try:
        proc = spawn(lambda: subprocess.run(argv, capture_output=True, stdin=subprocess.DEVNULL, cwd=ws.root, env=clean_env(), timeout=timeout))
    except subprocess.TimeoutExpired as running:
        raise AssertionError(f"patchd started and served on no registry: {running.stdout!r}") from None
    return Result(proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))


def assert_patchd_refuses(ws, *needles):
    result = patchd_run(ws)
    assert result.rc != 0, f"patchd started on no registry: {result}"
    assert "listening" not in result.stdout
    line = result.stderr.strip()
    assert line.startswith("patchd: cannot open the registry: no registry at "), result.stderr
    for needle in ("patchctl apps create NAME", *needles):
        assert needle in line, (needle, line)
    assert "Fatal error" not in result.stderr


def schema_tables(ws):
    return psql(ws.database, f"SELECT tablename FROM pg_tables WHERE schemaname = '{ws.schema}'").split()


@sqlite_only("deletes registry.sqlite under patchd; a PostgreSQL registry has no file")
def test_registry_file_deleted_under_patchd_is_503_and_a_publish_is_refused_not_acknowledged(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.json("apps", "create", "demo")
    token = ws.token("--app", "demo", "--name", "ci")
    server = Patchd(ws)
    try:
        assert publish(server, token, "kept();\n").status == 201
        assert json.loads(request(server.url, "/healthz").body) == {"status": "ok", "apps": 1}
        for name in ("registry.sqlite", "registry.sqlite-wal", "registry.sqlite-shm"):  # rm registry.sqlite*
            if (ws.data / name).exists():
                (ws.data / name).unlink()
        waited = assert_refused_as_replaced(server, token)
        assert waited < 3.0
        assert request(server.url, "/v1/apps/demo/metadata/timestamp.json").status == 200, "what is prepared is still served"
    finally:
        code, hung = server.stop()
    assert code == 0 and not hung
    assert "deleted or replaced" in server.stderr()
    assert not ws.sqlite.exists(), "patchd made no new file at the path"
    assert_cli_error(ws.run("audit", "--verify"), 2, f"no registry at {ws.data}", "apps create")


@sqlite_only("deletes registry.sqlite under a publishing patchctl")
def test_patchctl_refuses_to_commit_into_a_registry_file_deleted_while_it_publishes(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.json("apps", "create", "demo")
    pauses = tmp_path / "pauses"
    pauses.mkdir()
    bundle = ws.write_file("lost();")
    argv = [str(ws.exe), "publish", "--app", "demo", "--app-version", "2.3", str(bundle), *map(str, ws.registry_args), "--keys", str(ws.keys)]
    env = {**clean_env(), "HOTPATCH_PAUSE_AT": "publish.before-commit", "HOTPATCH_PAUSE_DIR": str(pauses)}
    proc = spawn(lambda: subprocess.Popen(argv, cwd=ws.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    deadline = time.monotonic() + 30
    while not (pauses / "publish.before-commit.paused").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "patchctl never reached its commit"
        time.sleep(0.01)
    for name in ("registry.sqlite", "registry.sqlite-wal", "registry.sqlite-shm"):
        if (ws.data / name).exists():
            (ws.data / name).unlink()
    (pauses / "publish.before-commit.resume").touch()
    out, err = proc.communicate(timeout=60)
    assert_cli_error(Result(proc.returncode, out.decode(), err.decode()), 2, "the registry file was deleted or replaced while open",
                     "nothing was changed", str(ws.sqlite))
    assert b"published" not in out.lower() and not ws.sqlite.exists()


@sqlite_only("moves another registry.sqlite over the path under patchd")
def test_registry_file_replaced_under_patchd_is_503_and_a_publish_is_refused(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.json("apps", "create", "demo")
    token = ws.token("--app", "demo", "--name", "ci")
    other = Workspace(tmp_path / "other")
    other.json("apps", "create", "other")
    server = Patchd(ws)
    try:
        assert request(server.url, "/healthz").status == 200
        os.replace(other.sqlite, ws.sqlite)  # a restore or a mistaken mv over the live file
        assert_refused_as_replaced(server, token)
    finally:
        server.stop()
    # The file now at the path was not written by the refused publish.
    assert [a["app"] for a in ws.json("apps", "list")] == ["other"]
    assert ws.json("list") == []


@sqlite_only("empties registry.sqlite; the PostgreSQL twin is the empty-schema test")
def test_an_emptied_registry_file_is_no_registry_to_patchctl_or_patchd_and_stays_empty(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.json("apps", "create", "demo")
    with open(ws.sqlite, "wb"):  # : > registry.sqlite
        pass
    for command in (["audit", "--verify"], ["list"], ["apps", "list"], ["status"]):
        assert_cli_error(ws.run(*command), 2, f"no registry at {ws.data} (its registry.sqlite is empty)", "patchctl apps create NAME")
    assert_patchd_refuses(ws, "(its registry.sqlite is empty)")
    assert ws.sqlite.stat().st_size == 0, "a refused command wrote into the empty file"
    assert sorted(os.listdir(ws.data)) == ["registry.sqlite"]
    ws.json("apps", "create", "again")  # the one command that makes a registry still does
    assert ws.run("audit", "--verify").rc == 0


def test_patchd_and_patchctl_refuse_an_empty_data_directory_or_database_and_create_nothing(tmp_path):
    ws = Workspace(tmp_path / "ws")  # an empty data directory, or an empty schema on PostgreSQL
    assert_cli_error(ws.run("audit", "--verify"), 2, f"no registry at {ws.registry_location}", "patchctl apps create NAME")
    if ws.database:
        assert_patchd_refuses(ws, "has no registry tables")
        assert schema_tables(ws) == [], "patchd or patchctl created tables in the empty schema"
    else:
        assert_patchd_refuses(ws)
        assert os.listdir(ws.data) == [], "patchd or patchctl created a file in the empty directory"
    ws.json("apps", "create", "demo")
    server = Patchd(ws)  # and once `apps create` made one, patchd starts on it
    try:
        assert json.loads(request(server.url, "/healthz").body) == {"status": "ok", "apps": 1}
    finally:
        server.stop()
