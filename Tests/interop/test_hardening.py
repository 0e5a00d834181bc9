"""Crash safety and a full disk (issue 6): kill -9 patchd while clients publish over HTTP,
and publish onto a disk that fills up. Each leaves a registry that verifies."""
import base64
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid

import pytest
from hotpatch_testing import TEST_DATABASE, Workspace, assert_cli_error, postgres_only, psql, sqlite_only
from patchd_support import Patchd, error_json, request

CLIENTS = 8


def registry_consistent(ws, app):
    """Every patch row has its publish event, the audit chain verifies, and the exported
    repository verifies from the app's first root."""
    patches = [p for p in ws.json("list") if p["app"] == app]
    events = ws.json("audit", "--app", app)["events"]
    published = {(e["details"]["appVersion"], e["details"]["patch"]) for e in events if e["action"] == "patch.publish"}
    assert published == {(p["appVersion"], p["patch"]) for p in patches}, "a patch without its audit event, or the reverse"
    assert ws.run("audit", "--verify").rc == 0
    verify = ws.run("verify", "--repo", ws.export(app), "--root", ws.root_file(app), registry=False)
    assert verify.rc == 0, verify.stdout + verify.stderr
    return patches


def test_kill_9_while_eight_clients_publish_loses_no_acknowledged_publish(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.json("apps", "create", "demo")
    ws.ok("apps", "throttle", "demo", "--ip-rate", "off")
    tokens = [ws.token("--app", "demo", "--name", f"client-{i}") for i in range(CLIENTS)]
    server = Patchd(ws)
    acknowledged, lock, stop = {}, threading.Lock(), threading.Event()

    def client(i):
        n = 0
        while not stop.is_set() and n < 25:  # under the per-token limit of 30 a minute
            body = f"client{i}.publish({n});\n".encode()
            try:
                resp = request(server.url, "/v1/apps/demo/patches?appVersion=2.3", "POST",
                               headers={"Authorization": f"Bearer {tokens[i]}"}, body=body)
            except OSError:
                return  # the server is gone
            if 200 <= resp.status < 300:
                with lock:
                    acknowledged[hashlib.sha256(body).hexdigest()] = json.loads(resp.body)["patch"]
            n += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while len(acknowledged) < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    server.proc.kill()  # SIGKILL: no drain, no cleanup, mid-request for most clients
    server.proc.wait()
    stop.set()
    for t in threads:
        t.join(timeout=30)
    assert acknowledged, "no publish was acknowledged before the kill"

    patches = registry_consistent(ws, "demo")
    stored = {p["sha256"]: p["patch"] for p in patches}
    for sha, number in acknowledged.items():
        assert stored.get(sha) == number, f"acknowledged patch {number} is missing after the crash"
    numbers = sorted(p["patch"] for p in patches)
    assert numbers == list(range(1, len(numbers) + 1)), "patch numbers have a gap or a duplicate"

    restarted = Patchd(ws)  # the server comes back on the same registry and serves it
    try:
        verify = ws.run("verify", "--server", restarted.url, "--app", "demo", "--root", ws.root_file("demo"), registry=False)
        assert verify.rc == 0, verify.stdout + verify.stderr
    finally:
        restarted.stop()


@pytest.fixture
def small_disk(tmp_path):
    """A 3 MiB tmpfs (root can mount one); the test is about ENOSPC, which only a real
    full file system produces."""
    mount = tmp_path / "disk"
    mount.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True)
    if result.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs for the full-disk test: {result.stderr.decode()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


@sqlite_only("ENOSPC under the data directory; the PostgreSQL twin puts the tables on a full tmpfs")
def test_publish_onto_a_full_disk_fails_clearly_and_corrupts_nothing(tmp_path, small_disk):
    ws = Workspace(small_disk / "ws")
    ws.json("apps", "create", "demo")
    ws.publish("demo", "2.3", "first();\n")
    before = ws.registry_state()
    # A bundle that fits as a file beside the registry but not again in it, sized from the space
    # left (the registry grows with its schema: a fixed 2.6 MiB left too little for SQLite's
    # shared-memory file to grow its 32 KiB once the webhook tables came, a "disk I/O error"
    # instead of a full disk): 256 KiB stay free, far less than the bundle the WAL must hold.
    disk = os.statvfs(small_disk)
    big = ws.write_file(("x" * 1023 + "\n") * ((disk.f_bavail * disk.f_frsize - 256 * 1024) // 1024), name="big.js")
    result = ws.run("publish", "--app", "demo", "--app-version", "2.3", big)
    assert_cli_error(result, 2, "disk is full")
    os.unlink(big)
    assert ws.registry_state() == before, "a failed publish changed the registry"
    integrity = subprocess.run(["python3", "-c", "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA integrity_check').fetchone()[0])",
                                str(ws.sqlite)], capture_output=True, text=True)
    assert integrity.stdout.strip() == "ok"
    registry_consistent(ws, "demo")
    ws.publish("demo", "2.3", "second();\n")  # with room again, publishing works
    assert [p["patch"] for p in ws.json("list")] == [1, 2]


@sqlite_only("ENOSPC under the data directory; the PostgreSQL twin puts the tables on a full tmpfs")
def test_publish_over_http_onto_a_full_disk_is_507_json_and_changes_nothing(tmp_path, small_disk):
    ws = Workspace(small_disk / "ws")
    ws.json("apps", "create", "demo")
    ws.publish("demo", "2.3", "first();\n")
    token = ws.token("--app", "demo", "--name", "ci")
    server = Patchd(ws)
    try:
        before = ws.registry_state()
        big = (("x" * 1023 + "\n") * 2900).encode()  # ~2.8 MiB: more than the tmpfs has left
        # Before: patchd died here (SIGILL): its log line about the failure, written with
        # FileHandle.write to stderr on the same full disk, trapped.
        resp = request(server.url, "/v1/apps/demo/patches?appVersion=2.3", method="POST", body=big,
                       headers={"Authorization": f"Bearer {token}"})
        assert resp.status == 507, (resp, server.stderr())
        assert error_json(resp)["code"] == "insufficient_storage"
        assert ws.registry_state() == before, "a failed publish changed the registry"
        assert request(server.url, "/healthz").status == 200
    finally:
        server.stop()


def healthz_until(server, status, timeout=6.0):
    """/healthz until it answers `status`: it reports patchd's once-a-second reload of the
    registry (under 3 s old), so a change under the server shows within a few seconds."""
    deadline = time.monotonic() + timeout
    while True:
        resp = request(server.url, "/healthz")
        if resp.status == status or time.monotonic() > deadline:
            return resp
        time.sleep(0.1)


@sqlite_only("overwrites registry.sqlite; the PostgreSQL twin is below")
def test_healthz_is_503_when_the_registry_cannot_be_read(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.json("apps", "create", "demo")
    server = Patchd(ws)
    try:
        ok = request(server.url, "/healthz")
        assert ok.status == 200 and json.loads(ok.body) == {"status": "ok", "apps": 1}
        # What a failed disk or a botched restore does: the file under the server is garbage.
        with open(ws.sqlite, "r+b") as f:
            f.write(os.urandom(64 * 1024))
        for sidecar in ("-wal", "-shm"):
            path = str(ws.sqlite) + sidecar
            if os.path.exists(path):
                with open(path, "r+b") as f:
                    f.write(os.urandom(4096))
        resp = healthz_until(server, 503)
        assert resp.status == 503, resp
        assert error_json(resp)["code"] == "unavailable"
        assert resp.headers.get("Retry-After") == "5"
    finally:
        server.stop()


@postgres_only
def test_healthz_is_503_when_the_postgresql_registry_cannot_be_read(tmp_path):
    """The twin of the corrupt-file test: a botched restore left the schema without its tables
    (renamed here, so the server's connection stays up and only the registry is gone)."""
    ws = Workspace(tmp_path / "ws")
    ws.json("apps", "create", "demo")
    server = Patchd(ws)
    try:
        ok = request(server.url, "/healthz")
        assert ok.status == 200 and json.loads(ok.body) == {"status": "ok", "apps": 1}
        with ws.sql() as db:
            db.execute("ALTER TABLE apps RENAME TO apps_lost")
        resp = healthz_until(server, 503)
        assert resp.status == 503, resp
        assert error_json(resp)["code"] == "unavailable"
        assert resp.headers.get("Retry-After") == "5"
        with ws.sql() as db:
            db.execute("ALTER TABLE apps_lost RENAME TO apps")
        assert healthz_until(server, 200).status == 200, "healthy again once the registry is back"
    finally:
        server.stop()


@pytest.fixture
def small_tablespace():
    """A tablespace on a 3 MiB tmpfs in the test cluster, for one workspace's tables: the
    server's ENOSPC (53100 disk_full) is what the SQLite tests get from their own tmpfs. Under
    /tmp, not tmp_path: the server's user must reach it."""
    parent = tempfile.mkdtemp(prefix="hotpatch-pgdisk.", dir="/tmp")
    os.chmod(parent, 0o755)
    mount = os.path.join(parent, "disk")
    os.mkdir(mount)
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", mount], capture_output=True)
    if result.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs for the full-disk test: {result.stderr.decode()}")
    # Owned by whoever runs the server (the data directory's owner).
    data = os.stat(psql(TEST_DATABASE, "SHOW data_directory").strip())
    os.chown(mount, data.st_uid, data.st_gid)
    name = f"small_{uuid.uuid4().hex[:12]}"
    psql(TEST_DATABASE, f"CREATE TABLESPACE {name} LOCATION '{mount}'")
    yield name
    for schema in psql(TEST_DATABASE, f"SELECT DISTINCT schemaname FROM pg_tables WHERE tablespace = '{name}'").split():
        psql(TEST_DATABASE, f"DROP SCHEMA {schema} CASCADE")
    psql(TEST_DATABASE, f"DROP TABLESPACE {name}")
    subprocess.run(["umount", "-l", mount], check=False)
    shutil.rmtree(parent, ignore_errors=True)


@postgres_only
def test_publish_onto_a_full_database_disk_fails_clearly_locally_and_over_http_and_changes_nothing(tmp_path, small_tablespace):
    """The twin of the two full-disk tests: the registry's tables in a tablespace on a full
    tmpfs. Random base64, so PostgreSQL's compression cannot squeeze the bundle into the room left."""
    ws = Workspace(tmp_path / "ws")
    ws.database += f"%20-cdefault_tablespace%3D{small_tablespace}"  # before the tables exist
    ws.json("apps", "create", "demo")
    ws.publish("demo", "2.3", "first();\n")
    assert psql(ws.database, "SELECT tablespace FROM pg_tables WHERE tablename = 'blobs' AND schemaname = current_schema()").strip() == small_tablespace
    # Before the disk fills: the space a failed transaction took stays with the table until a
    # VACUUM, so nothing else can be written after.
    token = ws.token("--app", "demo", "--name", "ci")
    before = ws.registry_state()
    # 3.2 MB, more than the tmpfs holds, of a script the check passes (a comment): the disk, not
    # the script check, is what refuses it.
    big = ws.write_file(b"// " + base64.b64encode(os.urandom(2_400_000)), name="big.js")
    assert_cli_error(ws.run("publish", "--app", "demo", "--app-version", "2.3", big), 2, "disk is full")
    assert ws.registry_state() == before, "a failed publish changed the registry"
    server = Patchd(ws)
    try:
        resp = request(server.url, "/v1/apps/demo/patches?appVersion=2.3", method="POST", body=big.read_bytes(),
                       headers={"Authorization": f"Bearer {token}"})
        assert resp.status == 507, (resp, server.stderr())
        assert error_json(resp)["code"] == "insufficient_storage"
        assert ws.registry_state() == before, "a failed publish changed the registry"
        assert request(server.url, "/healthz").status == 200
    finally:
        server.stop()
    registry_consistent(ws, "demo")
