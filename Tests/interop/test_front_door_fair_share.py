"""patchd's front door, issue 43 items 2 and 3, against the real binary on loopback, driven
past each bound as the outside review did, scaled down by flags so each test takes seconds.

Item 2, the body budget: bodies admitted on a token reserve from a pool (`--token-body-budget`,
half of `--body-budget`) that anonymous bodies cannot reach, one token's line of issue at most
`--token-body-share` of it; anonymous bodies share the rest, one address at most
`--ip-body-share`, one /24 (/48) at most `--network-body-share`, and each is due
`--anonymous-body-timeout` (5 s) after its head. Before: 1,024 heads from 8 addresses, each
declaring 64 KiB and never sending it, held the whole 64 MiB for 60 s, and publish, halt,
device reports and approve all got 503 `busy`.

Item 3, the connection cap: at `--max-conns` the connection that made progress longest ago
among the idle and the stalled (no step completed nor another KiB moved for `--stall-timeout`,
whatever its phase) is closed for a newcomer. Before: only idle ones, so 10,000 heads
declaring a body never sent (or trickled heads, or stalled bundle readers) kept every
newcomer out with 503.

-s prints the figures (what was held and refused, cut-off times, newcomers' answers).
"""

import json
import socket
import threading
import time
import uuid
from collections import Counter

from front_door_support import HEALTHZ, msg, ws  # noqa: F401 (ws: a fixture; start is in conftest.py)
from hotpatch_testing import binary
from raw_http import RawConn, json_error

REPORTS = "/v1/apps/demo/reports"
REPORT_SIZE = 64 << 10  # the report route's limit, what the review's heads declared


def report_head(length=REPORT_SIZE):
    return msg(f"POST {REPORTS} HTTP/1.1", "Host: x", "X-Device-ID: crowd", f"Content-Length: {length}")


def report(events=1):
    """A whole device report: its head and a JSON body of EVENTS launch events of demo 2.3."""
    body = json.dumps({"events": [{"id": str(uuid.uuid4()), "type": "launched", "appVersion": "2.3", "channel": "production",
                                   "patch": 1, "at": "2026-12-01T10:00:00Z"} for _ in range(events)]}).encode()
    return msg(f"POST {REPORTS} HTTP/1.1", "Host: x", "X-Device-ID: device-1", "Content-Type: application/json",
               f"Content-Length: {len(body)}", body=body)


def token_post(token, path, body, *extra):
    return msg(f"POST {path} HTTP/1.1", "Host: x", f"Authorization: Bearer {token}", f"Content-Length: {len(body)}", *extra, body=body)


def held_or_refused(conns, want_refused, timeout=5.0):
    """Waits until WANT_REFUSED of CONNS have an answer (or TIMEOUT); returns (held, {message: count})
    where held are the connections with no answer, still open."""
    deadline = time.monotonic() + timeout
    answers = {}
    while time.monotonic() < deadline:
        for i, conn in enumerate(conns):
            if i not in answers:
                resp = conn.response(0.005)
                if resp is not None:
                    answers[i] = resp
        if len(answers) >= want_refused:
            break
    refused = Counter()
    for resp in answers.values():
        err = json_error(resp, 503)
        assert err["code"] == "busy" and resp.header("retry-after") == "1", (err, resp.headers)
        refused[err["message"]] += 1
    return [c for i, c in enumerate(conns) if i not in answers], refused


def test_anonymous_heads_hold_only_their_shares_and_a_publish_halt_and_approve_still_get_in(ws, start):
    """--body-budget 4 MiB: the anonymous pool is 2 MiB, one address 128 KiB of it (2 reports
    of 64 KiB), one /24 512 KiB (8). The review's crowd, scaled: 128 heads of a 64 KiB report
    from 8 addresses of one /24 and 36 from 12 addresses of three more /24s, none sending its
    body: 32 are held (2 MiB, the pool full), every other is 503 `busy` at once. A report from
    a fifth /24 is 503 too (the pool), but a publish from a crowded address, a halt and an
    approval with a token are read and answered by their handlers. The crowd's reservations
    end at --anonymous-body-timeout (4 s here) with 408; then a report is accepted (202)."""
    s = start(ws, args=["--body-budget", str(4 << 20), "--anonymous-body-timeout", "4"])
    tok = ws.token("--app", "demo", "--name", "release")
    crowd, started = [], time.monotonic()
    try:
        for i in range(128):
            crowd.append(RawConn(s.url, source=f"127.0.5.{1 + i % 8}", timeout=5))
            crowd[-1].send(report_head())
        for network in (6, 7, 8):
            for i in range(12):
                crowd.append(RawConn(s.url, source=f"127.0.{network}.{1 + i % 4}", timeout=5))
                crowd[-1].send(report_head())
        held, refused = held_or_refused(crowd, len(crowd) - 32)
        filled = time.monotonic() - started
        pool = RawConn(s.url, source="127.0.9.1", timeout=5)
        pool.send(report_head(1000))
        pool_answer = json_error(pool.response(2.0), 503)["message"]

        t0 = time.monotonic()
        with RawConn(s.url, source="127.0.5.1", timeout=5) as c:
            c.send(token_post(tok, "/v1/apps/demo/patches?appVersion=7.1", b"fixed();\n" * 20_000))
            published = c.response(5.0)
        with RawConn(s.url, source="127.0.5.2", timeout=5) as c:
            c.send(msg("POST /v1/apps/demo/versions/7.1/patches/1/halt HTTP/1.1", "Host: x", f"Authorization: Bearer {tok}",
                       "Content-Length: 0"))
            halted = c.response(5.0)
        approval = json.dumps({"signatures": [{"keyid": "0" * 64, "sig": "00" * 64}]}).encode()
        with RawConn(s.url, source="127.0.5.3", timeout=5) as c:
            c.send(token_post(tok, "/v1/apps/demo/pending/999/approve", approval, "Content-Type: application/json"))
            approved = c.response(5.0)
        token_s = time.monotonic() - t0

        cut = [c.response(6.0) for c in held]
        cut_s = time.monotonic() - started
        with RawConn(s.url, source="127.0.9.1", timeout=5) as c:
            c.send(report())
            after = c.response(3.0)
    finally:
        for c in crowd:
            c.close()
    print(f"\n[body budget] {len(crowd)} anonymous heads of {REPORT_SIZE} B from 20 addresses in 4 /24s: {len(held)} held "
          f"({len(held) * REPORT_SIZE >> 10} KiB), refused {dict(refused)} within {filled:.2f} s; a fifth /24: {pool_answer!r}; "
          f"with a token meanwhile: publish {published.status}, halt {halted.status}, approve {approved.status} in {token_s:.2f} s; "
          f"held ones cut {Counter(r.status if r else None for r in cut)} by {cut_s:.1f} s; then a report {after.status}")
    assert len(held) == 32, f"{len(held)} held, not the pool's 32 reports"
    # The pool is looked at first: a head past both its share and the full pool names the pool.
    assert sum(refused.values()) == len(crowd) - 32 and set(refused) <= {
        "too many uploads in progress from this address or network; retry", "too many uploads in progress; retry"}, refused
    assert pool_answer == "too many uploads in progress; retry"
    assert published.status == 201, published.body[:300]
    assert halted.status == 200, halted.body[:300]
    assert approved.status == 404 and json_error(approved, 404)["code"] != "busy", approved.body[:300]
    assert all(r is not None and r.status == 408 for r in cut), cut
    assert after.status == 202, after.body[:300]


def test_one_token_holds_its_share_and_another_tokens_publish_gets_in(ws, start):
    """--body-budget 4 MiB, --token-body-share 1 MiB: one token's 6 publish heads declaring
    300 kB each, bodies never sent, hold 3 (its share); its 4th to 6th are 503 `busy` naming
    the credential; a token issued from it shares its share (503 too); another token's
    publish is read and answered 201 meanwhile."""
    s = start(ws, args=["--body-budget", str(4 << 20), "--token-body-share", str(1 << 20)])
    ci = ws.token("--app", "demo", "--name", "stalled-ci")
    other = ws.token("--app", "demo", "--name", "oncall")
    conns = []
    try:
        for i in range(6):
            conns.append(RawConn(s.url, source="127.0.0.60", timeout=5))
            conns[-1].send(msg(f"POST /v1/apps/demo/patches?appVersion=8.{i} HTTP/1.1", "Host: x", f"Authorization: Bearer {ci}",
                               "Content-Length: 300000"))
        held, refused = held_or_refused(conns, 3)
        with RawConn(s.url, source="127.0.0.61", timeout=5) as c:
            c.send(token_post(other, "/v1/apps/demo/patches?appVersion=8.9", b"ok();\n" * 10_000))
            published = c.response(5.0)
    finally:
        for c in conns:
            c.close()
    print(f"\n[token share] 6 heads of 300 kB with one token: {len(held)} held, refused {dict(refused)}; "
          f"another token's publish {published.status}")
    assert len(held) == 3 and refused == Counter({"too many uploads in progress with this credential; retry": 3}), (len(held), refused)
    assert published.status == 201, published.body[:300]


def test_anonymous_body_is_due_at_its_deadline_and_a_token_body_keeps_the_request_timeout(ws, start):
    """--anonymous-body-timeout 2 --request-timeout 30: a report whose body is trickled a byte
    every 0.3 s gets 408 about 2 s after its head (before: the 60 s request timeout); a
    publish whose body pauses 3 s half way is read whole and answered 201."""
    s = start(ws, args=["--anonymous-body-timeout", "2", "--request-timeout", "30"])
    tok = ws.token("--app", "demo", "--name", "slow-ci")
    with RawConn(s.url, source="127.0.0.70", timeout=5) as slow:
        slow.send(report_head(500))
        t0 = time.monotonic()
        cut = None
        while time.monotonic() - t0 < 8 and cut is None:
            if not slow.send(b"x"):
                cut = time.monotonic() - t0
            resp = slow.response(0.3)
            if resp is not None:
                cut = time.monotonic() - t0
                json_error(resp, 408)
    body = b"pause();\n" * 200
    with RawConn(s.url, source="127.0.0.71", timeout=10) as publish:
        publish.send(token_post(tok, "/v1/apps/demo/patches?appVersion=8.20", body)[:-len(body) // 2])
        time.sleep(3.0)
        publish.send(body[-(len(body) // 2):])
        published = publish.response(5.0)
    print(f"\n[anonymous deadline] a trickled report body cut after {cut} s; a publish paused 3 s: {published.status}")
    assert cut is not None and 1.5 <= cut <= 3.2, cut
    assert published.status == 201, published.body[:300]


def test_at_the_cap_stalled_heads_bodies_and_readers_are_shed_for_newcomers(ws, start):
    """--max-conns 31 --threads 1 --stall-timeout 1: a publish uploading 4 kB every 0.1 s for
    4 s (progress all along) opened first, then 30 connections from 3 addresses, in turn: a
    head trickled a byte every 0.4 s, the head of a device registration declaring 1,000 bytes
    never sent, a GET of the 300 kB bundle that never reads. After a second without progress
    30 newcomers from other addresses, each kept open, are all served 200 (before: 503 for
    every one; only idle connections were shed), each shedding one stalled connection, so every
    one of them, of every kind, goes; the publish, the oldest connection, is kept and answered
    201. (Which stalled one goes first depends on when each last made progress, which for a
    reader is when its answer was written; so the test asks for all of them.)"""
    published, _ = ws.publish("demo", "4.1", "b" * 300_000)
    bundle = f"/v1/apps/demo/targets/4.1/{published['patch']}/{published['served']['md5']}.main.js"
    tok = ws.token("--app", "demo", "--name", "steady-ci")
    stalled_n = 30
    s = start(ws, args=["--max-conns", str(stalled_n + 1), "--threads", "1", "--stall-timeout", "1", "--anonymous-body-timeout", "60"])
    kinds = ["head", "body", "reader"]
    steady_body = b"steady();\n" * 16_000
    steady = RawConn(s.url, source="127.0.0.80", timeout=10)
    halt = threading.Event()

    def feed():
        head = token_post(tok, "/v1/apps/demo/patches?appVersion=8.30", steady_body)
        steady.send(head[:len(head) - len(steady_body)])
        for off in range(0, len(steady_body), 4_000):
            if halt.is_set():
                return
            steady.send(steady_body[off:off + 4_000])
            time.sleep(0.1)

    def trickle(heads):
        while not halt.is_set():
            for c in heads:
                try:
                    c.sock.send(b"X")
                except OSError:
                    pass
            halt.wait(0.4)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    time.sleep(0.2)
    conns, newcomers, results = [], [], []
    try:
        for i in range(stalled_n):
            kind = kinds[i % 3]
            c = RawConn(s.url, source=f"127.0.{20 + i % 3}.1", timeout=5, rcvbuf=4096 if kind == "reader" else None)
            if kind == "head":
                c.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            elif kind == "body":
                c.send(msg("POST /v1/apps/demo/devices HTTP/1.1", "Host: x", "Content-Type: application/json", "Content-Length: 1000"))
            else:
                c.send(msg(f"GET {bundle} HTTP/1.1", "Host: x"))
            conns.append((kind, c))
        trickler = threading.Thread(target=trickle, args=([c for kind, c in conns if kind == "head"],), daemon=True)
        trickler.start()
        time.sleep(1.3)
        for k in range(stalled_n):
            t0 = time.monotonic()
            n = RawConn(s.url, source=f"127.0.30.{1 + k}", timeout=3)
            newcomers.append(n)
            n.send(HEALTHZ)
            resp = n.response(3.0)
            results.append((resp.status if resp else None, round(time.monotonic() - t0, 3)))
        time.sleep(0.3)
        shed = Counter(kind for kind, c in conns if closed(c))
        feeder.join(10)
        done = steady.response(10.0)
    finally:
        halt.set()
        for c in [c for _, c in conns] + newcomers + [steady]:
            c.close()
    print(f"\n[stalled at the cap] newcomers {Counter(r[0] for r in results)}, slowest {max(r[1] for r in results):.3f} s; "
          f"shed by kind {dict(shed)}; the steady publish {done.status if done else None}")
    assert [r[0] for r in results] == [200] * stalled_n, results
    assert shed == Counter({kind: stalled_n // 3 for kind in kinds}), shed
    assert done is not None and done.status == 201, f"the steady publish, shed or not answered: {done}"


def closed(conn):
    """Whether the server closed CONN: an end of stream, or a reset (a shed reader's answer is
    reset, not left to drain); what it sent, a bundle's first bytes, is read and dropped."""
    conn.sock.setblocking(False)
    try:
        while True:
            if not conn.sock.recv(1 << 16):
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def test_fair_share_flags_parse_and_contradictions_are_usage_errors(ws, start):
    """Each new flag starts patchd with a valid value; a token pool as large as the whole body
    budget, or a share larger than its pool, is a usage error (exit 64) naming the flags."""
    s = start(ws, args=["--token-body-budget", "1000000", "--token-body-share", "500000", "--ip-body-share", "100000",
                        "--network-body-share", "400000", "--anonymous-body-timeout", "4", "--stall-timeout", "3"])
    with RawConn(s.url, source="127.0.0.90") as c:
        c.send(report())
        assert c.response(3.0).status == 202
    import subprocess
    for args in (["--body-budget", "1000", "--token-body-budget", "1000"], ["--body-budget", "1000", "--ip-body-share", "600"]):
        bad = subprocess.run([str(binary("PATCHD", "patchd")), *args], capture_output=True, text=True, timeout=10)
        assert bad.returncode == 64 and "--body-budget" in bad.stderr, (args, bad.returncode, bad.stderr[:300])
