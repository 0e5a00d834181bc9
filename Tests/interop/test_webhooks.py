"""Webhooks (issue 47) seen from outside: a real receiver (an HTTP server this test starts on
127.0.0.1, on a port it picks) gets every kind of event patchd sends, each signed as
docs/PROTOCOL.md ("Webhooks") says, checked here in Python against the documented test
vector; a receiver that fails N times gets the same event N+1 times and then the next, in
order; a patchd killed with SIGKILL mid-delivery loses nothing and repeats only with the same
id; two patchd on one PostgreSQL database deliver each event once; private destinations are
refused when added and when delivered.

    PATCHCTL=… PATCHD=… python -m pytest Tests/interop/test_webhooks.py -q
"""

import hashlib
import hmac
import http.server
import json
import os
import re
import signal
import threading
import time
import uuid

import pytest
from hotpatch_testing import REPO_ROOT, Workspace, postgres_only
from patchd_support import Patchd, poll, request, token_file, remote
from test_two_person import Person, waits

SECRET = "whsec_4f9c2a7e1b6d3f8a0c5e9b2d7f1a4c6e"
# Deliveries every second, retries after 1-2 s, short deadlines: nothing here waits on the
# production pace (1 s passes, 10 s base, 24 h window). The upkeep passes run every second.
FAST = ["--webhook-interval", "1", "--webhook-retry-base", "1", "--webhook-retry-cap", "2", "--webhook-timeout", "3",
        "--webhook-connect-timeout", "1", "--upkeep-lease", "3"]


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """X-Hotpatch-Signature as PROTOCOL.md defines it, written here from the text, not the code."""
    return "v1=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


class Receiver:
    """A webhook receiver on 127.0.0.1: records every POST (headers, body, the status it
    answered). The first `fail` requests get 503; `status` answers the rest; `hold` seconds
    before answering, with `entered` set while a request is held."""

    def __init__(self, fail=0, status=200, hold=0.0, location=None):
        self.fail, self.status, self.hold, self.location = fail, status, hold, location
        self.requests = []
        self.lock = threading.Lock()
        self.entered = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with outer.lock:
                    status = 503 if len(outer.requests) < outer.fail else outer.status
                    outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body, "status": status})
                if outer.hold:
                    outer.entered.set()
                    time.sleep(outer.hold)
                self.send_response(status)
                if outer.location:
                    self.send_header("Location", outer.location)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def delivered(self):
        """The events answered 2xx, parsed, in the order they came."""
        with self.lock:
            return [json.loads(r["body"]) for r in self.requests if 200 <= r["status"] < 300]

    def all(self):
        with self.lock:
            return list(self.requests)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receivers():
    made = []

    def make(**kw):
        made.append(Receiver(**kw))
        return made[-1]

    yield make
    for r in made:
        r.stop()


@pytest.fixture
def servers():
    made = []

    def make(ws, args=(), env=None):
        made.append(Patchd(ws, args=list(args), env=env))
        return made[-1]

    yield make
    for s in made:
        s.stop()


def secret_file(ws):
    path = ws.root / "webhook.secret"
    path.write_text(SECRET + "\n")
    os.chmod(path, 0o600)
    return path


def subscribe(ws, app, url, *extra):
    return ws.json("apps", "webhook", "add", app, "--url", url, "--secret-file", secret_file(ws), *extra)


def check_signed(request_record):
    """Every delivery carries the documented headers and a signature that verifies."""
    headers, body = request_record["headers"], request_record["body"]
    event = json.loads(body)
    assert headers["Content-Type"] == "application/json" and headers["User-Agent"] == "hotpatch-webhooks/1"
    assert headers["X-Hotpatch-Event"] == event["type"] and headers["X-Hotpatch-Event-Id"] == event["id"]
    assert re.fullmatch(r"[0-9]+", headers["X-Hotpatch-Timestamp"]) and abs(int(headers["X-Hotpatch-Timestamp"]) - time.time()) < 120
    assert hmac.compare_digest(headers["X-Hotpatch-Signature"], sign(SECRET, headers["X-Hotpatch-Timestamp"], body))
    # Canonical JSON: what was signed is the stored event, byte for byte.
    assert body == json.dumps(event, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert re.fullmatch(r"[0-9a-f]{32}", event["id"]) and event["text"].startswith(f"[{event['app']}] ")
    return event


def metric(server, name, **labels):
    want = name + ("{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}" if labels else "")
    for line in request(server.url, "/metrics").body.decode().splitlines():
        if line.startswith(want + " "):
            return float(line.split()[1])
    return None


def test_the_documented_signature_vector_is_what_python_computes():
    text = (REPO_ROOT / "docs" / "PROTOCOL.md").read_text()
    block = text[text.index("secret     whsec_"):]
    fields = dict(line.split(None, 1) for line in block.split("```")[0].strip().splitlines())
    assert fields["signed"] == f"{fields['timestamp']}.{fields['body']}"
    assert sign(fields["secret"], fields["timestamp"], fields["body"].encode()) == fields["signature"]


def test_every_kind_of_event_reaches_a_real_receiver_signed(tmp_path, receivers, servers):
    """Release changes, a guard's trip (from real device reports), a staged rollout's hold and
    step with their figures, pending changes (two-person rule: created, approved, rejected),
    expiry warnings, a re-sign failure and health turning degraded, and a test event."""
    ws = Workspace(tmp_path / "ws")
    env = {"HOTPATCH_TEST_TIMESTAMP_LIFETIME": "20"}
    ws.json("apps", "create", "demo", env=env)
    ws.json("apps", "create", "pair", env=env)
    receiver = receivers()
    hook = subscribe(ws, "demo", receiver.url)
    subscribe(ws, "pair", receiver.url, "--events", "change.*")
    assert "secret" not in hook, "a secret given is never answered"
    # Root and targets expire within a year: inside a warning window of 366 days.
    server = servers(ws, FAST + ["--trusted-proxy", "127.0.0.1", "--expiry-warning", str(366 * 86_400)], env=env)

    ws.publish("demo", "2.3", "fix(1)")
    ws.ok("channels", "create", "--app", "demo", "staging")
    ws.publish("demo", "2.3", "fix(2)", channel="staging")
    ws.ok("promote", "--app", "demo", "--app-version", "2.3", "--from", "staging", "--to", "production", "--rollout", "20")
    ws.ok("rollout", "--app", "demo", "--app-version", "2.3", "--patch", "3", "--rollout", "30")
    ws.ok("halt", "--app", "demo", "--app-version", "2.3", "--patch", "3")
    ws.ok("resume", "--app", "demo", "--app-version", "2.3", "--patch", "3", "--rollout", "40")
    ws.ok("rollback", "--app", "demo", "--app-version", "2.3", "--patch", "3")
    ws.publish("demo", "2.5", "old(1)")
    ws.publish("demo", "2.5", "newer(2)")
    ws.ok("rollback", "--app", "demo", "--app-version", "2.5", "--to", "1")
    ws.ok("apps", "guard", "demo", "--max-rollback-rate", "2%", "--min-devices", "5")
    # A staged rollout (`--every` is a minute at least), its first step made due now behind
    # patchctl's back, so the test does not wait the minute.
    # Published with the test's 20 s timestamp lifetime, which patchd (started with it) keeps.
    ws.json("publish", "--app", "demo", "--app-version", "2.4", "--rollout", "50", "--advance", "100", "--every", "1m", ws.write_file("staged(1)"), env=env)
    with ws.sql() as db:
        db.execute("UPDATE rollout_schedules SET next_at = '2000-01-01T00:00:00Z'")
    publisher = token_file(ws, ws.token("--app", "demo", "--name", "ci"), "ci.token")
    poll(lambda: "rollout.schedule.hold" in [e["type"] for e in receiver.delivered()], timeout=20)

    def report(version, patch, kinds, count):
        """`count` devices the rollout gives the patch to (only those get a receipt), each from
        a /16 of its own (127.0.0.1 is a trusted proxy), download it, then all report `kinds`:
        every receipt is taken before the first report, since a guard that trips on them stops
        the patch being given to anyone more."""
        sha = next(p["sha256"] for p in ws.json("list", "--app", "demo") if p["patch"] == patch and p["appVersion"] == version)
        target = f"/v1/apps/demo/targets/{version}/{patch}/{sha}.main.js"
        poll(lambda: request(server.url, target).status == 200, timeout=10)
        given = []
        for i in range(4 * count + 100):
            where = {"X-Device-ID": f"device-{version}-{i}", "X-Forwarded-For": f"10.{len(given)}.0.1"}
            receipt = request(server.url, target, headers=where).headers["X-Patch-Receipt"]
            if receipt is not None:
                given.append((where, receipt))
            if len(given) == count:
                break
        assert len(given) == count, f"fewer than {count} devices were given {version} patch {patch}"
        for where, receipt in given:
            events = [{"id": uuid.uuid4().hex, "type": kind, "appVersion": version, "channel": "production", "patch": patch,
                       "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "receipt": receipt} for kind in kinds]
            assert request(server.url, "/v1/apps/demo/reports", method="POST", body=json.dumps({"events": events}).encode(),
                           headers={**where, "Content-Type": "application/json"}).status == 202

    # Clean installs from 200 blocks (the 95 % upper bound of 0 in 200 is 1.9 %, under 2 %): the
    # step is taken, with its figures.
    report("2.4", 1, ["installed"], 200)
    poll(lambda: "rollout.schedule.step" in [e["type"] for e in receiver.delivered()], timeout=20)
    # Every device of 2.3's patch 1 rolls it back: the guard trips.
    report("2.3", 1, ["installed", "rolledBack"], 10)
    poll(lambda: "guard.halt" in [e["type"] for e in receiver.delivered()], timeout=20)

    # The two-person rule on "pair": a change waits, one key signs, it is rejected.
    alice, bob = Person(ws, "alice"), Person(ws, "bob")
    waits(ws, "keys", "set", "--app", "pair", "--role", "targets", "--key", alice.pub, "--key", bob.pub)
    waits(ws, "approve", "--app", "pair", "1", "--key-file", alice.pem)
    ws.ok("reject", "--app", "pair", "1", "--message", "wrong keys")

    # A test event, over --server.
    assert remote(ws, server, publisher, "apps", "webhook", "test", "demo", hook["id"]).rc == 0
    # The timestamp key gone: the next re-sign fails, and the timestamp runs into the margin.
    for key in (ws.keys / "demo").glob("timestamp.*"):
        key.rename(tmp_path / key.name)

    wanted = {"patch.publish", "channel.create", "patch.promote", "patch.rollout", "patch.halt", "patch.resume", "patch.revoke", "patch.rollback",
              "guard.set", "rollout.schedule", "rollout.schedule.hold", "rollout.schedule.step", "guard.halt",
              "change.propose", "change.approve", "change.reject", "webhook.test", "metadata.expiring",
              "metadata.resign.failed", "health.degraded"}
    poll(lambda: wanted <= {e["type"] for e in receiver.delivered()}, timeout=40, interval=0.5)
    events = [check_signed(r) for r in receiver.all()]

    audit = {e["seq"]: e for e in ws.json("audit")["events"]}
    for event in events:
        if event["seq"] is not None:
            entry = audit[event["seq"]]
            assert (entry["action"], entry["app"], entry["actor"], entry["details"]) == (event["type"], event["app"], event["actor"], event["details"])
    by_type = {e["type"]: e for e in events}
    hold, step = by_type["rollout.schedule.hold"]["details"], by_type["rollout.schedule.step"]["details"]
    assert hold["step"] == 100 and hold["installed"] == 0 and "installed devices needed" in hold["why"]
    # The step is taken by the first pass whose counts suffice (reports are counted as they come).
    assert step["to"] == 100 and step["rolledBack"] == 0 and step["upperPpm"] < step["thresholdPpm"]
    assert step["minDevices"] <= step["installed"] <= 200 and step["installedBlocks"] >= step["minBlocks"]
    trip = by_type["guard.halt"]
    # The guard trips on the first pass whose figures suffice: consistent figures, not a count.
    figures = trip["details"]
    assert trip["actor"] == "patchd guard" and "GUARD TRIPPED" in trip["text"]
    assert figures["minDevices"] <= figures["installed"] <= 10 and 0 < figures["rolledBack"] <= figures["installed"]
    assert figures["lowerBoundPpm"] > figures["thresholdPpm"]
    propose = by_type["change.propose"]["details"]
    assert propose["signedBy"] == [] and sorted(propose["mayStillSign"]) == sorted([alice.keyid, bob.keyid])
    assert by_type["change.approve"]["details"]["mayStillSign"] == [bob.keyid]
    assert by_type["metadata.resign.failed"]["seq"] is None and by_type["metadata.resign.failed"]["actor"] is None
    assert by_type["health.degraded"]["details"]["role"] == "timestamp"
    assert {e["details"]["role"] for e in events if e["type"] == "metadata.expiring"} >= {"root", "targets"}
    # "pair" subscribed to change.* only.
    assert {e["type"] for e in events if e["app"] == "pair"} == {"change.propose", "change.approve", "change.reject"}
    # Once per state: the upkeep's events are not repeated pass after pass.
    time.sleep(3)
    counts = [e["type"] for e in receiver.delivered()]
    for once in ("metadata.resign.failed", "health.degraded", "rollout.schedule.hold"):
        assert counts.count(once) == 1, (once, counts)

    # The secret never leaves the registry: not in listings (local and --server), the audit
    # log or patchd's log; the URL's path is not shown either.
    listed = ws.ok("apps", "webhook", "list", "demo", "--json") + remote(ws, server, publisher, "apps", "webhook", "list", "demo", "--json").stdout
    for text in (listed, json.dumps(ws.json("audit")), server.out_path.read_text(), server.err_path.read_text()):
        assert SECRET not in text
        assert "/hook" not in text
    row = ws.json("apps", "webhook", "list", "demo")[0]
    assert row["delivered"] >= len(by_type) - 3 and row["lastDeliveryAt"] and row["failed"] == 0
    # /metrics says what the registry says, as of its last pass.
    poll(lambda: metric(server, "hotpatch_webhook_events_total", app="demo", result="delivered")
         == ws.json("apps", "webhook", "list", "demo")[0]["delivered"], timeout=10)


def test_a_receiver_that_fails_three_times_gets_the_same_event_four_times_then_the_rest_in_order(tmp_path, receivers, servers):
    ws = Workspace(tmp_path / "ws")
    ws.create_app("demo")
    receiver = receivers(fail=3)
    hook = subscribe(ws, "demo", receiver.url, "--events", "patch.publish")
    for i in range(3):
        ws.publish("demo", "2.3", f"fix({i})")
    server = servers(ws, FAST)
    poll(lambda: len(receiver.delivered()) == 3, timeout=30, interval=0.2)
    got = receiver.all()
    assert [r["status"] for r in got] == [503, 503, 503, 200, 200, 200]
    ids = [json.loads(r["body"])["id"] for r in got]
    assert len(set(ids[:4])) == 1, "every retry is the same event"
    assert [e["details"]["patch"] for e in receiver.delivered()] == [1, 2, 3], "in the order written, none overtaking the one retried"
    for r in got:
        check_signed(r)
    # Backoff: each retry waited at least half of its doubling delay (1 s base: 0.5, 1, 1 s).
    times = [int(r["headers"]["X-Hotpatch-Timestamp"]) for r in got[:4]]
    assert times[3] - times[0] >= 2
    row = ws.json("apps", "webhook", "list", "demo")[0]
    assert (row["id"], row["delivered"], row["failed"], row["pending"]) == (hook["id"], 3, 0, 0)
    assert row["lastError"] == "HTTP 503" and row["lastDeliveryAt"]
    poll(lambda: metric(server, "hotpatch_webhook_events_total", app="demo", result="delivered") == 3, timeout=5)
    assert metric(server, "hotpatch_webhook_pending", app="demo") == 0


def test_a_burst_goes_out_back_to_back_not_one_event_a_pass(tmp_path, receivers, servers):
    """After a delivery the subscription's next event is sent in the same pass: 25 events
    written while no patchd ran arrive within a few passes, in order (one a pass took 25 s,
    and made the every-event test wait past its deadline once)."""
    ws = Workspace(tmp_path / "ws")
    ws.create_app("demo")
    receiver = receivers()
    subscribe(ws, "demo", receiver.url, "--events", "patch.publish")
    for i in range(25):
        ws.publish("demo", "2.3", f"fix({i})")
    started = time.monotonic()
    servers(ws, FAST)
    poll(lambda: len(receiver.delivered()) == 25, timeout=60, interval=0.2)
    took = time.monotonic() - started
    assert [e["details"]["patch"] for e in receiver.delivered()] == list(range(1, 26))
    assert took < 12.5, f"25 events took {took:.1f} s: about one a pass"


def test_redirects_are_not_followed_and_a_4xx_is_not_retried(tmp_path, receivers, servers):
    ws = Workspace(tmp_path / "ws")
    ws.create_app("demo")
    elsewhere = receivers()
    redirecting = receivers(status=302, location=elsewhere.url)
    refusing = receivers(status=410)
    subscribe(ws, "demo", redirecting.url, "--events", "patch.publish")
    subscribe(ws, "demo", refusing.url, "--events", "patch.publish")
    ws.publish("demo", "2.3", "fix(1)")
    servers(ws, FAST)
    rows = poll(lambda: [r for r in ws.json("apps", "webhook", "list", "demo") if r["failed"] == 1] if
                all(r["failed"] == 1 for r in ws.json("apps", "webhook", "list", "demo")) else None, timeout=15)
    errors = sorted(r["lastError"] for r in rows)
    assert errors[0] == "HTTP 302: a redirect, which is never followed (subscribe the URL it names)" and errors[1] == "HTTP 410"
    time.sleep(3)
    assert len(redirecting.all()) == 1 and len(refusing.all()) == 1, "no retry"
    assert elsewhere.all() == [], "the redirect was not followed"


def test_kill_9_mid_delivery_loses_nothing_and_repeats_only_with_the_same_id(tmp_path, receivers, servers):
    ws = Workspace(tmp_path / "ws")
    ws.create_app("demo")
    receiver = receivers(hold=1.0)
    subscribe(ws, "demo", receiver.url, "--events", "patch.publish")
    for i in range(4):
        ws.publish("demo", "2.3", f"fix({i})")
    first = servers(ws, FAST)
    # A request is in the receiver's hands: patchd sent it and has not heard back.
    assert receiver.entered.wait(15)
    os.kill(first.proc.pid, signal.SIGKILL)
    first.proc.wait()
    for i in range(4, 6):
        ws.publish("demo", "2.3", f"fix({i})")  # written while no patchd runs
    servers(ws, FAST)
    poll(lambda: {e["details"]["patch"] for e in receiver.delivered()} == set(range(1, 7)), timeout=60, interval=0.5)
    delivered = receiver.delivered()
    audit = {e["seq"]: e for e in ws.json("audit")["events"] if e["action"] == "patch.publish"}
    assert {e["seq"] for e in delivered} == set(audit), "every publish delivered, nothing invented"
    by_id = {}
    for e in delivered:
        by_id.setdefault(e["id"], []).append(e)
    for copies in by_id.values():
        assert all(c == copies[0] for c in copies), "a duplicate is the same event, byte for byte"
    assert len(by_id) == 6
    firsts = []
    for e in delivered:
        if e["id"] not in firsts:
            firsts.append(e["id"])
    assert [by_id[i][0]["details"]["patch"] for i in firsts] == [1, 2, 3, 4, 5, 6], "in order"


@postgres_only
def test_two_patchd_on_postgresql_deliver_each_event_once(tmp_path, receivers, servers):
    ws = Workspace(tmp_path / "ws")
    ws.create_app("demo")
    receiver = receivers()
    subscribe(ws, "demo", receiver.url, "--events", "patch.publish")
    a, b = servers(ws, FAST), servers(ws, FAST)
    for i in range(12):
        ws.publish("demo", "2.3", f"fix({i})")
    poll(lambda: len(receiver.delivered()) >= 12, timeout=40, interval=0.5)
    time.sleep(3)  # anything sent twice would have come by now
    ids = [e["id"] for e in receiver.delivered()]
    assert len(ids) == 12 and len(set(ids)) == 12, "each event once"
    assert [e["details"]["patch"] for e in receiver.delivered()] == list(range(1, 13))
    for server in (a, b):  # each reads the registry's counts on its next pass
        poll(lambda: metric(server, "hotpatch_webhook_events_total", app="demo", result="delivered") == 12, timeout=10)


def test_private_destinations_are_refused_when_added_and_when_delivered(tmp_path, receivers, servers):
    ws = Workspace(tmp_path / "ws")
    ws.create_app("demo")
    receiver = receivers()
    # Plain HTTP beyond loopback needs --insecure-http, which is recorded.
    refused = ws.run("apps", "webhook", "add", "demo", "--url", "http://hooks.example.com/x")
    assert refused.rc == 64 and "http:// is refused" in refused.stderr
    added = ws.json("apps", "webhook", "add", "demo", "--url", "http://hooks.example.com/x", "--insecure-http")
    assert added["insecureHttp"] is True
    assert ws.json("audit")["events"][-1]["details"]["insecureHttp"] is True
    ws.ok("apps", "webhook", "remove", "demo", added["id"])
    # A subscription to this machine, added where the registry is (no patchd to ask).
    local = subscribe(ws, "demo", receiver.url)

    # Listening on every address: private destinations are refused by default.
    server = servers(ws, FAST + ["--listen", "0.0.0.0:0"])
    token = token_file(ws, ws.token("--app", "demo", "--name", "ci"), "ci.token")
    before = ws.json("audit")["events"][-1]["seq"]
    for url, kind in [("http://127.0.0.1:9/x", "loopback"), ("https://localhost/x", "loopback"), ("https://[::1]/x", "loopback"),
                      ("https://10.0.0.1/x", "private"), ("https://172.16.5.4/x", "private"), ("https://192.168.1.1/x", "private"),
                      ("https://[fd00::1]/x", "private"), ("https://100.64.0.1/x", "private"),
                      ("https://169.254.169.254/latest/meta-data", "link-local"), ("https://[fe80::1]/x", "link-local"),
                      ("https://[::ffff:10.0.0.1]/x", "private"), ("https://0.0.0.0/x", "unspecified")]:
        result = remote(ws, server, token, "apps", "webhook", "add", "demo", "--url", url, "--json")
        assert result.rc == 2 and f"a {kind} address" in result.stdout + result.stderr, (url, result.stdout, result.stderr)
    assert ws.json("audit")["events"][-1]["seq"] == before, "nothing recorded"
    assert [r["id"] for r in ws.json("apps", "webhook", "list", "demo")] == [local["id"]]

    # And when delivered: the loopback receiver added locally is never reached.
    assert remote(ws, server, token, "apps", "webhook", "test", "demo", local["id"]).rc == 0
    # Every event it had (the token's creation, the test) fails without a connection.
    row = poll(lambda: next((r for r in ws.json("apps", "webhook", "list", "demo") if r["failed"] >= 2 and r["pending"] == 0), None), timeout=15)
    assert "a loopback address" in row["lastError"] and row["delivered"] == 0
    assert receiver.all() == []
