"""The throwaway PostgreSQL cluster `make test` runs everything against
(scripts/pg-test-cluster.sh, docs/POSTGRES.md): what the suites are given, and that it is gone
afterwards however the command ends."""

import os
import signal
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "pg-test-cluster.sh"
PSQL = "/usr/lib/postgresql/15/bin/psql"
DATABASE = os.environ.get("HOTPATCH_TEST_DATABASE")


def socket_dir(url):
    return urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["host"][0]


def psql(url, sql):
    return subprocess.run([PSQL, url, "-XAtc", sql], capture_output=True, text=True, check=True).stdout.strip()


def without_database():
    env = dict(os.environ)
    env.pop("HOTPATCH_TEST_DATABASE", None)
    return env


@pytest.mark.skipif(DATABASE is None, reason="HOTPATCH_TEST_DATABASE is unset: run `make test`")
def test_the_suites_get_a_utf8_c_locale_database_on_a_socket_run_by_an_unprivileged_user():
    assert psql(DATABASE, "SELECT current_database(), current_user") == "hotpatch_test|hotpatch"
    assert psql(DATABASE, "SHOW server_encoding") == "UTF8"
    assert psql(DATABASE, "SELECT datcollate FROM pg_database WHERE datname = current_database()") == "C"
    assert psql(DATABASE, "SHOW listen_addresses") == "", "no TCP port, only the socket"
    data = Path(psql(DATABASE, "SHOW data_directory"))
    assert data.parent == Path(socket_dir(DATABASE))
    assert data.stat().st_uid != 0, "the server does not run as root"


def test_run_passes_the_command_status_through_and_removes_the_cluster_when_it_fails():
    result = subprocess.run([str(SCRIPT), "run", "sh", "-c", 'echo "$HOTPATCH_TEST_DATABASE"; exit 3'],
                            env=without_database(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 3, result.stderr
    url = result.stdout.strip()
    assert url.startswith("postgresql://hotpatch@/hotpatch_test?host=/tmp/hotpatch-pg.")
    assert not Path(socket_dir(url)).exists()


def test_an_interrupted_run_stops_the_server_and_removes_the_cluster():
    process = subprocess.Popen([str(SCRIPT), "run", "sh", "-c", 'echo "$HOTPATCH_TEST_DATABASE"; exec sleep 60'],
                               env=without_database(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        url = process.stdout.readline().strip()
        directory = Path(socket_dir(url))
        pid = int((directory / "data" / "postmaster.pid").read_text().split()[0])
        # The whole group, as Ctrl-C in a terminal would (the server is in a session of its own).
        os.killpg(process.pid, signal.SIGTERM)
        assert process.wait(timeout=60) == 143
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert not directory.exists()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"postgres {pid} still runs")


def test_a_url_already_given_is_used_and_left_running():
    if DATABASE is None:
        pytest.skip("HOTPATCH_TEST_DATABASE is unset: run `make test`")
    result = subprocess.run([str(SCRIPT), "run", "sh", "-c", 'echo "$HOTPATCH_TEST_DATABASE"'],
                            capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == DATABASE
    assert psql(DATABASE, "SELECT 1") == "1"
