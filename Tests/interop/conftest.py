"""Shared fixtures for the interop suite: the patchctl binary, a throw-away workspace
(registry + key directories), and a loopback HTTP server for exported repositories.

    python -m pytest Tests/interop -q        (PATCHCTL=/path/to/patchctl to override)
"""

import errno
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import namedtuple
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

Result = namedtuple("Result", "rc stdout stderr")


@pytest.fixture(scope="session")
def patchctl_path():
    """The patchctl executable: $PATCHCTL, or <repo>/.build/debug/patchctl."""
    path = Path(os.environ.get("PATCHCTL") or REPO_ROOT / ".build" / "debug" / "patchctl")
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"patchctl not found at {path}: run `swift build` or set PATCHCTL")
    return path


def run_patchctl(exe, *args, stdin=None, cwd=None, timeout=120):
    """Runs patchctl with `args`; returns Result(rc, stdout, stderr) as text.

    HOTPATCH_* is removed from the environment so only explicit options count."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOTPATCH_")}
    for attempt in range(50):
        try:
            proc = subprocess.run([str(exe), *[str(a) for a in args]], input=stdin, capture_output=True,
                                  cwd=cwd, env=env, timeout=timeout)
            break
        except OSError as error:  # ETXTBSY: a concurrent `swift build` is relinking the binary
            if error.errno != errno.ETXTBSY or attempt == 49:
                raise
            time.sleep(0.2)
    return Result(proc.returncode, proc.stdout.decode("utf-8", "replace"),
                  proc.stderr.decode("utf-8", "replace"))


@pytest.fixture
def patchctl(patchctl_path):
    """`patchctl(*args)` -> Result(rc, stdout, stderr), with no --data/--keys added."""
    return lambda *args, **kw: run_patchctl(patchctl_path, *args, **kw)


class Workspace:
    """A registry (--data) and key directory (--keys) under a pytest tmp dir."""

    def __init__(self, root: Path, exe: Path):
        self.root = root
        self.exe = exe
        self.data = root / "data"
        self.keys = root / "keys"
        self.files = root / "files"
        for d in (self.data, self.keys, self.files):
            d.mkdir()
        self._exports = 0

    # -- running -------------------------------------------------------------------------
    def run(self, *args, registry=True, **kw) -> Result:
        """patchctl ARGS [--data DATA --keys KEYS]; returns Result(rc, stdout, stderr)."""
        extra = ["--data", self.data, "--keys", self.keys] if registry else []
        return run_patchctl(self.exe, *args, *extra, cwd=self.root, **kw)

    def ok(self, *args, **kw) -> str:
        result = self.run(*args, **kw)
        assert result.rc == 0, f"patchctl {' '.join(map(str, args))} -> {result.rc}\n{result.stderr}"
        return result.stdout

    def json(self, *args, **kw):
        return json.loads(self.ok(*args, "--json", **kw))

    # -- common steps --------------------------------------------------------------------
    def create_app(self, name, encrypt=False):
        return self.json("apps", "create", *(["--encrypt"] if encrypt else []), name)

    def write_file(self, name, content) -> Path:
        path = self.files / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return path

    def publish(self, app, app_version, content, rollout=None):
        """Publishes `content` (str or bytes); returns (published JSON, plaintext bytes)."""
        data = content.encode() if isinstance(content, str) else content
        path = self.write_file(f"{app}-{app_version}-{len(list(self.files.iterdir()))}.js", data)
        extra = ["--rollout", str(rollout)] if rollout is not None else []
        return self.json("publish", "--app", app, "--app-version", app_version, *extra, path), data

    def root_json(self, app) -> bytes:
        """The bytes `patchctl apps root APP` prints (the 1.root.json an app embeds)."""
        result = self.run("apps", "root", app)
        assert result.rc == 0, result.stderr
        return result.stdout.encode()

    def root_file(self, app) -> Path:
        path = self.root / f"{app}.1.root.json"
        path.write_bytes(self.root_json(app))
        return path

    def export(self, app) -> Path:
        """Exports APP into a new directory and returns it."""
        self._exports += 1
        out = self.root / f"export-{app}-{self._exports}"
        self.ok("export", "--app", app, "--out", out)
        return out

    def content_key(self, app) -> bytes:
        text = (self.keys / app / "content.key").read_text()
        assert text.endswith("\n") and len(text) == 65, "content.key is 64 hex chars + newline"
        return bytes.fromhex(text.strip())

    def role_key_pem(self, app, role) -> Path:
        """The (single, current) private key file of ROLE; fails if rotation left several."""
        files = sorted((self.keys / app).glob(f"{role}.*.pem"))
        assert len(files) == 1, f"expected one {role} key, found {files}"
        return files[0]

    def registry_state(self):
        """What an auditor sees: `list --json` and `audit --json` (parsed)."""
        return self.json("list"), self.json("audit")


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


# -- assertions shared by the CLI tests ------------------------------------------------------

def assert_cli_error(result: Result, rc: int, *needles: str):
    """Exit code `rc`, and stderr is a clear patchctl message: its first line starts with
    "patchctl:" and mentions every needle (case-insensitive); any further line (the usage
    hint) is also prefixed; no crash output."""
    assert result.rc == rc, f"expected exit {rc}, got {result.rc}\nstderr: {result.stderr}"
    lines = result.stderr.strip("\n").split("\n")
    assert lines and lines[0].startswith("patchctl: "), f"stderr: {result.stderr!r}"
    assert len(lines[0]) > len("patchctl: ") + 5
    for line in lines:
        assert line.startswith("patchctl:"), f"unprefixed stderr line {line!r}"
    for needle in needles:
        assert needle.lower() in lines[0].lower(), f"{needle!r} not in {lines[0]!r}"
    assert "Fatal error" not in result.stderr and "Traceback" not in result.stderr
