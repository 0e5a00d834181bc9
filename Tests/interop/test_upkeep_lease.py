"""Who re-signs the timestamp when several patchd share a registry (issue 21, item 3).

Two real patchd on one registry, with a 20 s timestamp (HOTPATCH_TEST_TIMESTAMP_LIFETIME: it is
re-signed once less than 10 s are left) and a 3 s upkeep lease (passes every second). On
PostgreSQL one instance holds the lease; when it is SIGSTOPped (hung: its connection and, before,
its session lock stay) or lacks the timestamp key, the other must take over and re-sign before the
timestamp expires, or every device refuses the repository as frozen. On SQLite both instances run
the passes (docs/POSTGRES.md, "The upkeep lease"), so the same two checks hold with no lease.
Each test prints its figures (takeover time, seconds to spare)."""

import json
import os
import shutil
import signal
import sqlite3
import time
from datetime import datetime, timezone

from hotpatch_testing import ON_POSTGRES, TEST_DATABASE, psql, repo_updater
from patchd_support import Patchd, poll, request

LIFETIME = 20
LEASE = 3
ENV = {"HOTPATCH_TEST_TIMESTAMP_LIFETIME": str(LIFETIME)}


def start(ws, keys=None):
    args = ["--upkeep-lease", str(LEASE)] + (["--keys", str(keys)] if keys else [])
    # Its connections carry a name of their own (libpq's PGAPPNAME), so `writing` asks about
    # this patchd's transactions, not those of the other tests sharing the database.
    name = f"hotpatch-lease-{os.getpid()}-{time.monotonic_ns()}"
    server = Patchd(ws, args=args, env={**ENV, "PGAPPNAME": name})
    server.application_name = name
    return server


def metric(server, name):
    """The value of the unlabelled metric NAME (None before the first pass)."""
    for line in request(server.url, "/metrics").body.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def holds(server):
    return metric(server, "hotpatch_upkeep_lease_held") == 1


def timestamp(server):
    """(version, expiry as a Unix time) of the timestamp SERVER serves for demo."""
    signed = json.loads(request(server.url, "/v1/apps/demo/metadata/timestamp.json").body)["signed"]
    expires = datetime.strptime(signed["expires"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    return signed["version"], expires


def stop_outside_a_write(ws, server):
    """SIGSTOP, retried until the process is not inside a write transaction (it would hold the
    writer lock, and every write elsewhere would wait on it: not what this test is about)."""
    for _ in range(100):
        os.kill(server.proc.pid, signal.SIGSTOP)
        if not writing(ws, server):
            return
        os.kill(server.proc.pid, signal.SIGCONT)
        time.sleep(0.03)
    raise AssertionError("patchd was inside a write transaction at every stop")


def writing(ws, server):
    """Whether SERVER is inside a write transaction: on PostgreSQL one of its own connections
    (by application name: `make test` runs four tests at once on one database) has one open."""
    if ON_POSTGRES:
        time.sleep(0.05)  # a statement in flight when it stopped settles
        return psql(TEST_DATABASE, "SELECT count(*) FROM pg_stat_activity WHERE xact_start IS NOT NULL "
                                   f"AND datname = current_database() AND application_name = '{server.application_name}'").strip() != "0"
    db = sqlite3.connect(ws.sqlite, timeout=0)
    try:
        db.execute("BEGIN IMMEDIATE")
        db.rollback()
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        db.close()


def create_demo(ws):
    ws.json("apps", "create", "demo", env=ENV)


def wait_for_resign(ws, server, since):
    """Polls SERVER until it serves a timestamp newer than `since` (version, expiry); asserts
    that happened before `since` expired and that python-tuf accepts the repository."""
    version, expires = since
    fresh = poll(lambda: (lambda t: t if t[0] > version else None)(timestamp(server)), timeout=LIFETIME + 5, interval=0.2)
    spare = expires - time.time()
    assert fresh[1] > expires
    assert spare > 0, f"re-signed {-spare:.1f} s after the timestamp expired"
    updater = repo_updater(server.app_url("demo"), ws.root / f"client-{time.monotonic_ns()}", ws.root_json("demo"))
    updater.refresh()
    return spare


def test_a_hung_lease_holder_is_replaced_and_the_other_instance_re_signs_in_time(workspace):
    ws = workspace
    create_demo(ws)
    first = start(ws)
    try:
        poll(lambda: holds(first), timeout=10)
        second = start(ws)
        try:
            poll(lambda: metric(second, "hotpatch_upkeep_lease_held") is not None, timeout=10)
            assert holds(second) == (not ON_POSTGRES), "on PostgreSQL one instance holds the lease"
            stop_outside_a_write(ws, first)
            stopped = time.monotonic()
            try:
                before = timestamp(second)
                if ON_POSTGRES:
                    poll(lambda: holds(second), timeout=LEASE * 2 + 2, interval=0.1)
                takeover = time.monotonic() - stopped
                spare = wait_for_resign(ws, second, before)
                assert request(second.url, "/healthz").status == 200
                who = (f"PostgreSQL: the other instance holds the lease after {takeover:.1f} s (--upkeep-lease {LEASE}) and"
                       if ON_POSTGRES else "SQLite: every instance runs the passes; the other one")
                print(f"\nholder SIGSTOPped; {who} re-signed {spare:.1f} s before the timestamp ({LIFETIME} s) expired")
            finally:
                os.kill(first.proc.pid, signal.SIGCONT)
            if ON_POSTGRES:
                # Resumed, it finds the lease taken and leaves it.
                poll(lambda: not holds(first), timeout=5)
                assert holds(second)
        finally:
            assert second.stop() == (0, False)
    finally:
        assert first.stop() == (0, False)


def test_an_instance_without_the_timestamp_key_leaves_the_lease_to_one_with_it(workspace):
    ws = workspace
    create_demo(ws)
    partial = ws.root / "keys-partial"
    shutil.copytree(ws.keys, partial)
    removed = [p for p in (partial / "demo").iterdir() if p.name.startswith("timestamp.")]
    assert removed
    for p in removed:
        p.unlink()
    keyless = start(ws, keys=partial)
    try:
        poll(lambda: holds(keyless), timeout=10)  # alone, it holds the lease (guards, pruning)
        assert metric(keyless, "hotpatch_upkeep_apps_without_keys") == 1
        before = timestamp(keyless)
        started = time.monotonic()
        full = start(ws)
        try:
            poll(lambda: holds(full), timeout=10)
            if ON_POSTGRES:
                poll(lambda: not holds(keyless), timeout=5)
            taken = time.monotonic() - started
            spare = wait_for_resign(ws, full, before)
            assert "cannot re-sign the online roles of demo here" in keyless.stderr()
            if ON_POSTGRES:
                assert metric(keyless, "hotpatch_upkeep_lease_held") == 0
            who = f"held the lease {taken:.1f} s after it started and" if ON_POSTGRES else "(SQLite: no lease)"
            print(f"\ninstance without the timestamp key; the one with every key {who} re-signed {spare:.1f} s "
                  f"before the timestamp expired")
        finally:
            assert full.stop() == (0, False)
    finally:
        assert keyless.stop() == (0, False)
