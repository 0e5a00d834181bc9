"""patchctl against a server: the listings over --server (apps, tokens, patches of every app),
what a 403 says, what `audit --verify --server` prints for a token scoped to one app, and
the bounded retry of 429/503 honouring Retry-After (issue 11, "Remote parity").

    python -m pytest Tests/interop/test_cli_remote.py -q
"""
import http.server
import json
import threading
import time

import pytest
from hotpatch_testing import Workspace, assert_cli_error
from patchd_support import remote, token_file


@pytest.fixture
def ws(tmp_path):
    w = Workspace(tmp_path / "ws")
    w.json("apps", "create", "demo")
    w.json("apps", "create", "other")
    w.publish("demo", "2.3", "fix(1)")
    w.publish("other", "1.0", "fix(2)")
    return w


def test_listings_over_server_show_what_the_token_may_read_and_never_a_secret(ws, start):
    server = start(ws)
    scoped = ws.token("--app", "demo", "--role", "auditor", "--name", "qa")
    everything = ws.token("--all", "--role", "auditor", "--name", "ops")
    scoped_file, all_file = token_file(ws, scoped, "qa.token"), token_file(ws, everything, "ops.token")

    apps = json.loads(remote(ws, server, scoped_file, "apps", "list", "--json").stdout)
    assert [a["app"] for a in apps] == ["demo"]
    apps = json.loads(remote(ws, server, all_file, "apps", "list", "--json").stdout)
    assert [a["app"] for a in apps] == ["demo", "other"]
    # The local listing is the same data.
    assert [a["app"] for a in ws.json("apps", "list")] == ["demo", "other"]

    tokens = remote(ws, server, scoped_file, "tokens", "list", "--json")
    assert tokens.rc == 0, tokens.stderr
    assert [t["name"] for t in json.loads(tokens.stdout)] == ["qa"]
    listed = remote(ws, server, all_file, "tokens", "list", "--json").stdout
    assert sorted(t["name"] for t in json.loads(listed)) == ["ops", "qa"]
    assert scoped not in listed and everything not in listed and "hp_" not in listed
    assert json.loads(listed) == ws.json("tokens", "list")

    # `list` over --server without --app: every app the token may read.
    patches = json.loads(remote(ws, server, all_file, "list", "--json").stdout)
    assert sorted((p["app"], p["patch"]) for p in patches) == [("demo", 1), ("other", 1)]
    patches = json.loads(remote(ws, server, scoped_file, "list", "--json").stdout)
    assert [(p["app"], p["patch"]) for p in patches] == [("demo", 1)]


def test_a_refusal_names_the_scope_that_is_missing(ws, start):
    server = start(ws)
    auditor = token_file(ws, ws.token("--app", "demo", "--role", "auditor", "--name", "qa"), "qa.token")
    result = remote(ws, server, auditor, "publish", "--app", "demo", "--app-version", "2.3", ws.write_file("fix(3)"))
    assert_cli_error(result, 2, "403", "this token is an auditor token for app demo",
                     "publishing needs a publisher token for demo or for every app")


def test_audit_verify_with_a_scoped_token_says_what_it_could_check(ws, start):
    server = start(ws)
    scoped = token_file(ws, ws.token("--app", "demo", "--role", "auditor", "--name", "qa"), "qa.token")
    result = remote(ws, server, scoped, "audit", "--verify")
    assert result.rc == 0, result.stderr
    verdict = result.stdout.strip().splitlines()[-1]
    assert verdict.startswith("audit chain intact") and "head \n" not in result.stdout + "\n"
    assert "token for every app" in verdict
    everything = token_file(ws, ws.token("--all", "--role", "auditor", "--name", "ops"), "ops.token")
    full = remote(ws, server, everything, "audit", "--verify").stdout.strip().splitlines()[-1]
    assert full.startswith("audit chain intact: ") and " events, head " in full


class Scripted(http.server.BaseHTTPRequestHandler):
    """Answers each request with the next (status, headers, body) of `script`, the last forever."""
    script = []
    seen = []

    def do_GET(self):
        type(self).seen.append((time.monotonic(), self.path))
        status, headers, body = self.script[min(len(self.seen) - 1, len(self.script) - 1)]
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def scripted():
    servers = []

    def serve(script):
        handler = type("Handler", (Scripted,), {"script": script, "seen": []})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}", handler

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


BUSY = (503, {"Retry-After": "1", "Content-Type": "application/json"}, b'{"error":{"code":"busy","message":"the registry is busy; retry"}}')
LISTING = (200, {"Content-Type": "application/json"}, b"[]")


def against(ws, url, *args):
    return ws.run(*args, "--server", url, "--token-file", token_file(ws, "hp_" + "0" * 64, "fake.token"), registry=False)


def last_error(result):
    """The final stderr line: the error, after any retry notes."""
    lines = result.stderr.strip("\n").split("\n")
    assert all(line.startswith("patchctl: ") for line in lines), result.stderr
    return lines[-1]


def test_remote_commands_retry_503_after_retry_after_then_succeed(tmp_path, scripted):
    url, handler = scripted([BUSY, LISTING])
    ws = Workspace(tmp_path / "ws")
    result = against(ws, url, "list", "--app", "demo")
    assert result.rc == 0, result.stderr
    assert result.stdout.strip() == "no patches"
    assert len(handler.seen) == 2
    assert handler.seen[1][0] - handler.seen[0][0] >= 0.9, "the retry did not wait for Retry-After"
    assert "the server answered 503; trying again in 1 s (try 2 of 3)" in result.stderr


def test_remote_retries_are_bounded_in_tries_and_in_time(tmp_path, scripted):
    ws = Workspace(tmp_path / "ws")
    url, handler = scripted([BUSY])
    result = against(ws, url, "list", "--app", "demo")
    assert result.rc == 2 and "server refused (503): the registry is busy" in last_error(result)
    assert result.stderr.count("trying again") == 2
    assert len(handler.seen) == 3
    # A Retry-After past the 30 s budget is not waited for: one try, then the error.
    slow = (429, {"Retry-After": "120", "Content-Type": "application/json"}, b'{"error":{"code":"throttled","message":"slow down"}}')
    url, handler = scripted([slow, LISTING])
    started = time.monotonic()
    result = against(ws, url, "apps", "list")
    assert_cli_error(result, 2, "429", "slow down")
    assert len(handler.seen) == 1 and time.monotonic() - started < 10



def test_remote_reads_retry_after_as_patchclient_does_an_http_date_too(tmp_path, scripted):
    # Issue 22: patchctl read only delay-seconds (an HTTP-date meant "do not retry") while
    # PatchClient read both; one grammar now (PatchCore's RetryAfter).
    from email.utils import formatdate
    ws = Workspace(tmp_path / "ws")
    dated = (503, {"Retry-After": formatdate(time.time() + 2, usegmt=True), "Content-Type": "application/json"},
             b'{"error":{"code":"busy","message":"the registry is busy; retry"}}')
    url, handler = scripted([dated, LISTING])
    result = against(ws, url, "list", "--app", "demo")
    assert result.rc == 0, result.stderr
    assert len(handler.seen) == 2 and handler.seen[1][0] - handler.seen[0][0] >= 0.9, "the retry did not wait for the date"
    garbage = (503, {"Retry-After": "soon", "Content-Type": "application/json"}, b'{"error":{"code":"busy","message":"busy"}}')
    url, handler = scripted([garbage, LISTING])
    assert_cli_error(against(ws, url, "list", "--app", "demo"), 2, "503")
    assert len(handler.seen) == 1, "an unreadable Retry-After is not retried"
