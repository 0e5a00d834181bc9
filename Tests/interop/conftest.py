"""Shared fixtures for the interop suite: the patchctl binary, a throw-away workspace
(registry + key directories), and a loopback HTTP server for exported repositories.
The helpers behind them are in hotpatch_testing.py.

    python -m pytest Tests/interop -q        (PATCHCTL=/path/to/patchctl to override)
"""

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from hotpatch_testing import Workspace, binary, run_patchctl


@pytest.fixture(scope="session")
def patchctl_path():
    """The patchctl executable: $PATCHCTL, or <repo>/.build/debug/patchctl."""
    try:
        return binary("PATCHCTL", "patchctl")
    except FileNotFoundError as error:
        message = str(error)
    pytest.fail(message)


@pytest.fixture
def patchctl(patchctl_path):
    """`patchctl(*args)` -> Result(rc, stdout, stderr), with no --data/--keys added."""
    return lambda *args, **kw: run_patchctl(patchctl_path, *args, **kw)


@pytest.fixture
def workspace(tmp_path, patchctl_path):
    root = tmp_path / "ws"
    root.mkdir()
    return Workspace(root, patchctl_path)


# -- loopback HTTP ---------------------------------------------------------------------------

def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until_serving(url, proc, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                response.read()
                return True
        except urllib.error.HTTPError:
            return True  # it answered
        except (urllib.error.URLError, ConnectionError, socket.timeout):
            time.sleep(0.05)
    return False


@pytest.fixture
def http_server():
    """`serve(directory) -> base URL` (no trailing slash) via `python -m http.server`
    bound to 127.0.0.1 on a free port; every server is killed at teardown."""
    procs = []

    def serve(directory):
        for _attempt in range(5):
            port = _free_port()
            proc = subprocess.Popen(
                [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                 "--directory", str(directory)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(proc)
            base = f"http://127.0.0.1:{port}"
            if _wait_until_serving(base + "/", proc):
                return base
            proc.kill()
            proc.wait()
        pytest.fail(f"could not start http.server for {directory}")

    yield serve
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def start():
    """start(ws, args) -> a Patchd on the workspace with extra options; stopped at teardown."""
    from patchd_support import Patchd
    servers = []

    def _start(w, args=()):
        servers.append(Patchd(w, args=args))
        return servers[-1]

    yield _start
    for s in servers:
        s.stop()
