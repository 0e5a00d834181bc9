"""Helpers for test_patchd.py: a running patchd (started on a free port, stopped with
SIGTERM), raw HTTP, polling. The workspace, python-tuf clients and binaries are in
hotpatch_testing.py.

    PATCHCTL=/path/to/patchctl PATCHD=/path/to/patchd python -m pytest Tests/interop/test_patchd.py
"""

import http.client
import os
import json
import signal
import ssl
import subprocess
import time
import urllib.parse
from collections import namedtuple

from hotpatch_testing import Workspace, binary, clean_env, spawn

Response = namedtuple("Response", "status headers body")


class Patchd:
    """A patchd process on 127.0.0.1:0; `url` comes from its ready line."""

    def __init__(self, ws: Workspace, tls=None, timeout=20.0, args=(), env=None):
        self.ws = ws
        self.log_dir = ws.root / "logs"
        self.log_dir.mkdir(exist_ok=True)
        n = len(list(self.log_dir.iterdir())) // 2 + 1
        self.out_path, self.err_path = self.log_dir / f"patchd-{n}.out", self.log_dir / f"patchd-{n}.err"
        # The workspace's registry as a flag: clean_env() strips $HOTPATCH_DATABASE.
        # An option in `args` replaces the default here (patchd refuses one given twice).
        given = {str(a).split("=")[0] for a in args if str(a).startswith("--")}
        defaults = [*map(str, ws.registry_args), "--keys", str(ws.keys), "--listen", "127.0.0.1:0"]
        if tls:
            defaults += ["--tls-cert", str(tls[0]), "--tls-key", str(tls[1])]
        argv = [str(binary("PATCHD", "patchd"))]
        for name, value in zip(defaults[::2], defaults[1::2]):
            if name not in given:
                argv += [name, value]
        argv += list(map(str, args))
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = spawn(lambda: subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                                       cwd=ws.root, env={**clean_env(), **(env or {})}))
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

    def app_url(self, app) -> str:
        """The base of APP's repository (metadata/ and targets/ below it)."""
        return f"{self.url}/v1/apps/{app}"

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


# -- polling ---------------------------------------------------------------------------------

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


def token_file(ws, token, name):
    """The token written to a file only its owner can read (what --token-file takes)."""
    path = ws.root / name
    path.write_text(token + "\n")
    os.chmod(path, 0o600)
    return path


def remote(ws, server, token_path, *args):
    """patchctl ARGS against a running patchd with the token from `token_path`."""
    return ws.run(*args, "--server", server.url, "--token-file", token_path, registry=False)
