"""Helpers for test_patchd.py: the patchctl/patchd binaries, a registry workspace, a running
patchd (started on a free port, stopped with SIGTERM), raw HTTP and python-tuf clients.

    PATCHCTL=/path/to/patchctl PATCHD=/path/to/patchd python -m pytest Tests/interop/test_patchd.py
"""

import errno
import hashlib
import http.client
import itertools
import json
import os
import signal
import ssl
import subprocess
import time
import urllib.parse
from collections import namedtuple
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from tuf.ngclient import Updater

REPO_ROOT = Path(__file__).resolve().parents[2]

Result = namedtuple("Result", "rc stdout stderr")
Response = namedtuple("Response", "status headers body")


def binary(env_name, name) -> Path:
    """$ENV_NAME, or <repo>/.build/debug/NAME; raises if it is not an executable."""
    path = Path(os.environ.get(env_name) or REPO_ROOT / ".build" / "debug" / name)
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise FileNotFoundError(f"{name} not found at {path}: run `swift build` or set {env_name}")
    return path


def _clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("HOTPATCH_")}


def _spawn(fn):
    """Retries on ETXTBSY (a concurrent `swift build` relinking the binary)."""
    for attempt in range(50):
        try:
            return fn()
        except OSError as error:
            if error.errno != errno.ETXTBSY or attempt == 49:
                raise
            time.sleep(0.2)


class Workspace:
    """A registry (--data) and a key directory (--keys), driven with the local patchctl."""

    def __init__(self, root: Path):
        self.root = root
        self.patchctl = binary("PATCHCTL", "patchctl")
        self.data, self.keys, self.files = root / "data", root / "keys", root / "files"
        for d in (self.data, self.keys, self.files):
            d.mkdir(parents=True, exist_ok=True)
        self._files = itertools.count(1)

    @property
    def sqlite(self) -> Path:
        return self.data / "registry.sqlite"

    def run(self, *args, local=True, timeout=120) -> Result:
        extra = ["--data", self.data, "--keys", self.keys] if local else []
        argv = [str(self.patchctl), *map(str, args), *map(str, extra)]
        proc = _spawn(lambda: subprocess.run(argv, capture_output=True, cwd=self.root,
                                             env=_clean_env(), timeout=timeout))
        return Result(proc.returncode, proc.stdout.decode("utf-8", "replace"),
                      proc.stderr.decode("utf-8", "replace"))

    def ok(self, *args, **kw) -> str:
        result = self.run(*args, **kw)
        assert result.rc == 0, f"patchctl {' '.join(map(str, args))} -> {result.rc}\n{result.stderr}"
        return result.stdout

    def json(self, *args, **kw):
        return json.loads(self.ok(*args, "--json", **kw))

    def write_file(self, content) -> Path:
        path = self.files / f"bundle-{next(self._files)}.js"
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return path

    def publish(self, app, version, content, rollout=None):
        """Local publish; returns the published JSON."""
        extra = ["--rollout", rollout] if rollout is not None else []
        return self.json("publish", "--app", app, "--app-version", version, *extra, self.write_file(content))

    def token(self, *args) -> str:
        """`tokens create ARGS`: the token (the last stdout line)."""
        return self.ok("tokens", "create", *args).strip().splitlines()[-1].strip()

    def root_json(self, app) -> bytes:
        return self.ok("apps", "root", app).encode()

    def root_file(self, app) -> Path:
        path = self.root / f"{app}.1.root.json"
        if not path.exists():
            path.write_bytes(self.root_json(app))
        return path

    def content_key(self, app) -> bytes:
        return bytes.fromhex((self.keys / app / "content.key").read_text().strip())

    def listing(self):
        """What an auditor sees locally: `list --json` (parsed)."""
        return self.json("list")


class Patchd:
    """A patchd process on 127.0.0.1:0; `url` comes from its ready line."""

    def __init__(self, ws: Workspace, tls=None, timeout=20.0):
        self.ws = ws
        self.log_dir = ws.root / "logs"
        self.log_dir.mkdir(exist_ok=True)
        n = len(list(self.log_dir.iterdir())) // 2 + 1
        self.out_path, self.err_path = self.log_dir / f"patchd-{n}.out", self.log_dir / f"patchd-{n}.err"
        argv = [str(binary("PATCHD", "patchd")), "--data", str(ws.data), "--keys", str(ws.keys),
                "--listen", "127.0.0.1:0"]
        if tls:
            argv += ["--tls-cert", str(tls[0]), "--tls-key", str(tls[1])]
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = _spawn(lambda: subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                                        cwd=ws.root, env=_clean_env()))
        self.url = self._wait_ready(timeout)

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.out_path.read_text("utf-8", "replace")
            if text.endswith("\n"):
                line = text.splitlines()[0]
                prefix = "patchd listening on "
                assert line.startswith(prefix), f"unexpected ready line {line!r}"
                return line[len(prefix):].strip()
            if self.proc.poll() is not None:
                raise RuntimeError(f"patchd exited with {self.proc.returncode}: {self.stderr()}")
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"patchd printed no ready line in {timeout} s: {self.stderr()}")

    def stdout(self) -> str:
        return self.out_path.read_text("utf-8", "replace")

    def stderr(self) -> str:
        return self.err_path.read_text("utf-8", "replace")

    def stop(self, timeout=15.0):
        """SIGTERM, wait; SIGKILL if it hangs. Returns (exit code, hung?)."""
        if self.proc.poll() is not None:
            return self.proc.returncode, False
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(), True


# -- HTTP ------------------------------------------------------------------------------------

def connection(url, timeout=10.0, context=None):
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https":
        return http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout,
                                           context=context or ssl.create_default_context())
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)


def request(base, path, method="GET", headers=None, body=None, context=None) -> Response:
    """One request on a new connection; `path` is sent as is (no normalization)."""
    conn = connection(base, context=context)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return Response(resp.status, resp.headers, resp.read())
    finally:
        conn.close()


def error_json(resp: Response):
    """The {"error": {"code", "message"}} body of an error response."""
    assert resp.headers.get("Content-Type", "").startswith("application/json"), resp.headers
    err = json.loads(resp.body)["error"]
    assert isinstance(err["code"], str) and err["code"] and isinstance(err["message"], str) and err["message"]
    return err


# -- python-tuf ------------------------------------------------------------------------------

_clients = itertools.count(1)


def make_updater(url, app, metadata_dir: Path, bootstrap):
    """A python-tuf Updater on patchd's URLs; bootstrap=None reuses metadata_dir's root."""
    metadata_dir.mkdir(parents=True, exist_ok=True)
    target_dir = metadata_dir.parent / f"downloads-{next(_clients)}"
    target_dir.mkdir()
    return Updater(metadata_dir=str(metadata_dir), metadata_base_url=f"{url}/v1/apps/{app}/metadata/",
                   target_dir=str(target_dir), target_base_url=f"{url}/v1/apps/{app}/targets/",
                   bootstrap=bootstrap)


def fetch(updater, path):
    """(TargetFile, bytes) for `path`, or (None, None) when it is not listed."""
    info = updater.get_targetinfo(path)
    if info is None:
        return None, None
    return info, Path(updater.download_target(info)).read_bytes()


def decrypt(key: bytes, app, version, patch, bundle: bytes) -> bytes:
    aad = f"hotpatch/v1|{app}|{version}|{patch}".encode()
    return AESGCM(key).decrypt(bundle[:12], bundle[12:], aad)


def digests(data: bytes):
    return {"length": len(data), "sha256": hashlib.sha256(data).hexdigest(), "md5": hashlib.md5(data).hexdigest()}


def cached_version(metadata_dir: Path, role="root"):
    return json.loads((metadata_dir / f"{role}.json").read_bytes())["signed"]["version"]


def poll(fn, timeout=3.0, interval=0.1):
    """Calls fn until it returns a truthy value (returned) or timeout (last exception re-raised)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = fn()
            if value:
                return value
            last = AssertionError(f"{fn} returned {value!r}")
        except Exception as error:  # noqa: BLE001 - anything the client raises while stale
            last = error
        if time.monotonic() > deadline:
            raise last
        time.sleep(interval)
