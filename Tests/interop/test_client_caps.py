"""Endless data against the built binaries (issue 10, item 12): the size caps hold whatever
length a holder of an online key signs, and `patchctl verify --server` meets a server with
the client's limits and follows no redirect. Each run's peak RSS is read from /proc, so
"bounded memory" is a measured figure, not a hope."""
import hashlib
import json
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from hotpatch_testing import Workspace, clean_env, spawn
from securesystemslib.formats import encode_canonical

HUGE = 10 ** 12
STREAM_CAP = 256 << 20   # the most one endless answer sends before the server gives up
RSS_LIMIT_KB = 100 << 10  # patchctl starts at about 33 MB; reading the stream to the cap takes it past 256 MB


class HostileServer:
    """Loopback HTTP: `files` (URL path -> bytes) as 200, `redirects` (path -> URL) as 302,
    root versions not listed as 404, and every other path a chunked body without end, until
    the client hangs up or STREAM_CAP bytes went out (counted in `streamed`)."""

    def __init__(self, files=None, redirects=None):
        self.files, self.redirects = dict(files or {}), dict(redirects or {})
        self.requests, self.streamed, self.lock = [], 0, threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                with owner.lock:
                    owner.requests.append(self.path)
                if self.path in owner.files:
                    body = owner.files[self.path]
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                elif self.path in owner.redirects:
                    self.send_response(302)
                    self.send_header("Location", owner.redirects[self.path])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif self.path.endswith(".root.json"):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    self.stream()

            def stream(self):
                self.send_response(200)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                chunk = b"A" * (64 << 10)
                framed = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
                sent = 0
                try:
                    while sent < STREAM_CAP:
                        self.wfile.write(framed)
                        sent += len(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client hung up: what the caps are for
                finally:
                    with owner.lock:
                        owner.streamed += sent
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def run_measured(ws, *args, timeout=120):
    """patchctl ARGS -> (rc, stdout, stderr, peak RSS in kB of patchctl alone). The peak is
    VmHWM polled from /proc while it runs: wait4's ru_maxrss would count the Python process
    it was forked from (Linux keeps the pre-exec high-water mark)."""
    proc = spawn(lambda: subprocess.Popen([str(ws.exe), *map(str, args)], stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, cwd=ws.root, env=clean_env()))
    peak, done = [0], threading.Event()

    def watch():
        while not done.is_set():
            try:
                status = Path(f"/proc/{proc.pid}/status").read_text()
            except OSError:
                return
            for line in status.splitlines():
                if line.startswith("VmHWM:"):
                    peak[0] = max(peak[0], int(line.split()[1]))
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    done.set()
    watcher.join()
    return proc.returncode, out.decode(), err.decode(), peak[0]


def canonical(signed) -> bytes:
    return encode_canonical(signed).encode("utf-8")


def resigned_timestamp(ws, export, mutate) -> bytes:
    """The export's timestamp.json after mutate(signed), signed with the app's real timestamp key."""
    private = serialization.load_pem_private_key(ws.role_key_pem("demo", "timestamp").read_bytes(), password=None)
    public = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    keyid = hashlib.sha256(canonical({"keytype": "ed25519", "scheme": "ed25519", "keyval": {"public": public.hex()}})).hexdigest()
    doc = json.loads((export / "metadata" / "timestamp.json").read_bytes())
    mutate(doc["signed"])
    doc["signatures"] = [{"keyid": keyid, "sig": private.sign(canonical(doc["signed"])).hex()}]
    return json.dumps(doc).encode()


@pytest.fixture
def demo(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.create_app("demo")
    ws.publish("demo", "2.3", "console.log('patch 1');\n")
    return ws


@pytest.fixture
def hostile():
    servers = []

    def start(**kw):
        servers.append(HostileServer(**kw))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def test_fetch_cuts_an_endless_snapshot_at_the_cap_whatever_the_timestamp_signs(demo, hostile, tmp_path):
    export = demo.export("demo")
    version = json.loads((export / "metadata" / "timestamp.json").read_bytes())["signed"]["meta"]["snapshot.json"]["version"] + 1

    def pin_huge(signed):
        signed["version"] += 1
        signed["meta"]["snapshot.json"] = {"version": version, "length": HUGE}

    server = hostile(files={"/v1/apps/demo/metadata/timestamp.json": resigned_timestamp(demo, export, pin_huge)})
    rc, out, err, rss = run_measured(demo, "fetch", "--server", server.url, "--app", "demo", "--app-version", "2.3",
                                     "--device-id", "d1", "--root", demo.root_file("demo"), "--cache", tmp_path / "cache", "--force")
    print(f"patchctl fetch, endless {version}.snapshot.json pinned at 10^12 bytes: rc {rc}, peak RSS {rss} kB, "
          f"{server.streamed} bytes streamed; {err.strip()}")
    assert rc == 2, out + err
    assert f"{version}.snapshot.json exceeds 2000000 bytes" in err
    assert server.streamed < 16 << 20, f"{server.streamed} bytes were streamed before the client hung up"
    assert rss < RSS_LIMIT_KB, f"peak RSS {rss} kB"


def test_verify_server_cuts_an_endless_timestamp_at_16384_bytes(demo, hostile):
    server = hostile()
    rc, out, err, rss = run_measured(demo, "verify", "--server", server.url, "--app", "demo", "--root", demo.root_file("demo"))
    print(f"patchctl verify --server, endless timestamp.json: rc {rc}, peak RSS {rss} kB, {server.streamed} bytes streamed; {err.strip()}")
    assert rc == 1, out + err
    assert "timestamp.json exceeds 16384 bytes" in err
    assert server.streamed < 16 << 20, f"{server.streamed} bytes were streamed before the client hung up"
    assert rss < RSS_LIMIT_KB, f"peak RSS {rss} kB"


def test_verify_server_follows_no_redirect(demo, hostile):
    export = demo.export("demo")
    elsewhere = hostile(files={"/v1/apps/demo/metadata/timestamp.json": (export / "metadata" / "timestamp.json").read_bytes()})
    server = hostile(redirects={"/v1/apps/demo/metadata/timestamp.json": elsewhere.url + "/v1/apps/demo/metadata/timestamp.json"})
    rc, out, err, _ = run_measured(demo, "verify", "--server", server.url, "--app", "demo", "--root", demo.root_file("demo"))
    assert rc == 2, out + err
    assert "timestamp.json answered HTTP 302" in err
    assert elsewhere.requests == [], "the redirect was followed"
