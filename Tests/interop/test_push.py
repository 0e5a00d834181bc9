"""Push-triggered checks (issue 15) end to end: devices register their APNs tokens with a
real patchd, `patchctl apps apns` keeps the .p8 key, and `publish`/`promote`/`revoke`/
`rollback --notify` and `patchctl notify` push to a local HTTP/2 stand-in for APNs
(apns_standin.py, through HOTPATCH_APNS_URL and HOTPATCH_APNS_CA, which are for tests only) that verifies the
ES256 token against the key's public half and every header, and answers as scripted.

    PATCHCTL=… PATCHD=… python -m pytest Tests/interop/test_push.py -q
"""
import json
import os
import sqlite3
import stat
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from apns_standin import APNsStandIn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from hotpatch_testing import Workspace, assert_cli_error, sqlite_only
from patchd_support import Patchd, poll, request

TEAM, KEY_ID, TOPIC = "TEAM123456", "KEY1234567", "com.example.demo"


def token(n):
    return f"{n:064x}"


@pytest.fixture
def apns(tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    p8 = tmp_path / f"AuthKey_{KEY_ID}.p8"
    p8.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    standin = APNsStandIn(key.public_key(), TEAM, KEY_ID, TOPIC)
    yield standin, p8
    standin.stop()


@pytest.fixture
def ws(tmp_path, apns):
    w = Workspace(tmp_path / "ws")
    w.create_app("demo")
    w.ok("apps", "throttle", "demo", "--ip-rate", "off")
    w.ok("apps", "apns", "demo", "--team-id", TEAM, "--key-id", KEY_ID, "--key", apns[1], "--topic", TOPIC)
    return w


def register_response(server, tok, version="2.3", channel="production", environment="production", device=None):
    """PatchClient.registerPushToken's request; each token its own device unless told."""
    body = json.dumps({"token": tok, "appVersion": version, "channel": channel, "environment": environment}).encode()
    headers = {"Content-Type": "application/json"}
    if device is not False:
        headers["X-Device-ID"] = device or f"device-{tok[-8:]}"
    return request(server.url, "/v1/apps/demo/devices", method="POST", body=body, headers=headers)


def register(server, tok, **kw):
    return register_response(server, tok, **kw).status


def pushing(ws, standin, *args):
    return ws.run(*args, env=standin.env, timeout=300)


def stored_tokens(ws):
    """The tokens the registry holds for demo, on either backend (read prefixed, so the psql
    adapter never takes an all-digit hex token for a number)."""
    with ws.sql() as db:
        return sorted(row[0][1:] for row in db.execute("SELECT 'x' || token FROM push_devices WHERE app = 'demo'").fetchall())


def test_apns_key_is_kept_private_and_checked(ws, apns, tmp_path):
    kept = ws.keys / "demo" / f"apns.{KEY_ID}.p8"
    assert kept.read_bytes() == apns[1].read_bytes()
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o600
    events = [e for e in ws.json("audit")["events"] if e["action"] == "app.apns"]
    assert events and events[-1]["details"]["keyId"] == KEY_ID and "BEGIN" not in json.dumps(events)
    rsa_like = ws.write_file("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "bad.p8")
    assert_cli_error(ws.run("apps", "apns", "demo", "--team-id", TEAM, "--key-id", "KEY7654321", "--key", rsa_like, "--topic", TOPIC), 2, "p8")
    assert_cli_error(ws.run("apps", "apns", "demo", "--team-id", "team", "--key-id", KEY_ID, "--key", apns[1], "--topic", TOPIC), 2, "team ID")
    assert not (ws.keys / "demo" / "apns.KEY7654321.p8").exists()


def test_publish_notify_pushes_the_version_and_channel_and_handles_every_answer(ws, apns, start):
    standin, _ = apns
    ws.publish("demo", "2.3", "fix(1)")
    ws.publish("demo", "2.4", "other(1)")
    ws.publish("demo", "2.3", "staged(1)", channel="staging")
    server = start(ws)
    for n in range(1, 7):
        assert register(server, token(n)) == 201
    assert register(server, token(7), version="2.4") == 201
    assert register(server, token(8), channel="staging") == 201
    assert register(server, token(9), environment="sandbox") == 201
    standin.script = {token(3): [(410, "Unregistered")], token(4): [(400, "BadDeviceToken")],
                      token(5): [(429, "TooManyRequests"), (503, "ServiceUnavailable")],
                      token(6): [(500, "InternalServerError")] * 4}
    result = pushing(ws, standin, "publish", "--app", "demo", "--app-version", "2.3", "--notify", "--json", ws.write_file("fix(2)"))
    assert result.rc == 0, result.stderr
    published = json.loads(result.stdout)
    # 1, 2, 5 (after a 429 and a 503) and 9 (sandbox) sent; 3 and 4 gone; 6 failed after 3 retries.
    reasons = {"Unregistered": 1, "BadDeviceToken": 1, "InternalServerError": 1}
    assert published["push"] == {"sent": 4, "failed": 1, "removed": 2, "reasons": reasons}
    assert "push: 1 not sent: InternalServerError" in result.stderr and "push: 1 not sent: Unregistered" in result.stderr
    assert "push: 9/" not in result.stderr and "push: 7/7" in result.stderr
    assert standin.problems == []
    assert sorted(t for t, _, _ in standin.accepted) == [token(1), token(2), token(5), token(9)]
    assert standin.attempts[token(5)] == 3 and standin.attempts[token(6)] == 4
    assert len(standin.jwts) == 1, "one provider token for the whole round"
    timestamp = json.loads(request(server.url, "/v1/apps/demo/metadata/timestamp.json").body)["signed"]["version"]
    for _, headers, payload in standin.accepted:
        assert payload == {"aps": {"content-available": 1},
                           "hotpatch": {"app": "demo", "version": "2.3", "channel": "production", "timestamp": timestamp}}
        assert headers["apns-collapse-id"] == "hotpatch:demo:2.3:production"
    assert token(3) not in stored_tokens(ws) and token(4) not in stored_tokens(ws) and token(6) in stored_tokens(ws)
    audit = [e for e in ws.json("audit")["events"] if e["action"] == "push.notify"]
    assert audit[-1]["details"] == {"sent": 4, "failed": 1, "removed": 2, "reasons": reasons, "appVersion": "2.3", "channel": "production",
                                    "timestampVersion": timestamp, "reason": "publish"}


def test_notify_revoke_rollback_promote(ws, apns, start):
    standin, _ = apns
    ws.publish("demo", "2.3", "fix(1)")
    ws.publish("demo", "2.3", "fix(2)", channel="staging")
    ws.publish("demo", "2.4", "other(1)")
    server = start(ws)
    assert register(server, token(1)) == 201
    assert register(server, token(2), channel="staging") == 201
    assert register(server, token(3), version="2.4") == 201
    result = pushing(ws, standin, "notify", "--app", "demo")
    assert result.rc == 0, result.stderr
    assert result.stdout.strip() == "push: 3 sent, 0 failed, 0 removed"
    result = pushing(ws, standin, "notify", "--app", "demo", "--app-version", "2.3", "--channel", "staging", "--json")
    assert json.loads(result.stdout) == {"sent": 1, "failed": 0, "removed": 0, "reasons": {}}
    result = pushing(ws, standin, "promote", "--app", "demo", "--app-version", "2.3", "--from", "staging", "--to", "production", "--notify", "--json")
    assert result.rc == 0, result.stderr
    assert json.loads(result.stdout)["push"] == {"sent": 1, "failed": 0, "removed": 0, "reasons": {}}
    result = pushing(ws, standin, "rollback", "--app", "demo", "--app-version", "2.3", "--notify")
    assert result.rc == 0, result.stderr
    assert "push: 1 sent, 0 failed, 0 removed" in result.stdout
    result = pushing(ws, standin, "revoke", "--app", "demo", "--app-version", "2.3", "--all", "--yes", "--notify")
    assert result.rc == 0, result.stderr
    assert "push: 1 sent, 0 failed, 0 removed" in result.stdout, "the channel revoked only (production), not staging's devices"
    assert standin.problems == []
    reasons = [e["details"]["reason"] for e in ws.json("audit")["events"] if e["action"] == "push.notify"]
    assert reasons == ["notify", "notify", "promote", "rollback", "revoke"]


def test_notify_refused_before_any_change_without_an_apns_key(tmp_path):
    w = Workspace(tmp_path / "bare")
    w.create_app("demo")
    result = w.run("publish", "--app", "demo", "--app-version", "2.3", "--notify", w.write_file("fix(1)"))
    assert_cli_error(result, 2, "no APNs key", "nothing was changed")
    assert w.json("list") == []
    token_path = w.write_file("x", "t.token")
    token_path.chmod(0o600)
    # Over --server the server is asked first, before the publish (its notify dry run).
    assert_cli_error(w.run("publish", "--app", "demo", "--app-version", "2.3", "--notify", "--server", "http://127.0.0.1:9",
                           "--token-file", token_path, w.write_file("fix(1)"), registry=False), 2, "cannot reach")


def test_a_guard_only_halts_and_is_not_pushed_and_the_rollback_it_names_is(ws, apns):
    """A halt takes nothing from the devices that run the patch (PROTOCOL.md section 5), so
    there is nothing to wake the fleet for. A guard only halts, even one set to revoke (issue
    43: reports are anonymous evidence); the rollback its trip names takes the patch away, and
    that is pushed with --notify."""
    standin, _ = apns
    ws.publish("demo", "2.3", "fix(1)")
    ws.publish("demo", "2.3", "fix(2)")
    ws.publish("demo", "2.4", "other(1)")
    ws.ok("apps", "guard", "demo", "--max-rollback-rate", "2%", "--min-devices", "5")
    # 127.0.0.1 is trusted as a proxy so each device reports from a /16 of its own: a guard
    # needs rollbacks from 5 blocks (ReportRules).
    server = Patchd(ws, env=standin.env, args=["--trusted-proxy", "127.0.0.1"])

    def roll_back(patch):
        sha = next(p["sha256"] for p in ws.json("list", "--app", "demo") if p["patch"] == patch)
        path = f"/v1/apps/demo/targets/2.3/{patch}/{sha}.main.js"
        poll(lambda: request(server.url, path).status == 200, timeout=10)  # served once patchd reloaded it
        for i in range(10):
            where = {"X-Device-ID": f"device-{i}", "X-Forwarded-For": f"10.{i}.0.1"}
            got = request(server.url, path, headers=where)
            events = [{"id": f"e{patch}-{i}-{kind}", "type": kind, "appVersion": "2.3", "channel": "production", "patch": patch,
                       "at": "2026-12-01T10:00:00Z", "receipt": got.headers["X-Patch-Receipt"]} for kind in ("installed", "rolledBack")]
            body = json.dumps({"events": events}).encode()
            assert request(server.url, "/v1/apps/demo/reports", method="POST", body=body,
                           headers={**where, "Content-Type": "application/json"}).status == 202

    try:
        assert register(server, token(1)) == 201
        assert register(server, token(2), version="2.4") == 201
        roll_back(2)
        assert poll(lambda: any(e["action"] == "guard.halt" for e in ws.json("audit")["events"]), timeout=10)
        time.sleep(1)
        assert standin.accepted == [], "a halt is not pushed"

        # A guard set to revoke halts too (issue 43: reports are anonymous evidence) and is not
        # pushed; the person's rollback it names takes the patch away, and --notify pushes that.
        ws.ok("apps", "guard", "demo", "--max-rollback-rate", "2%", "--min-devices", "5", "--action", "revoke")
        ws.publish("demo", "2.3", "fix(3)")
        roll_back(3)
        assert poll(lambda: [e["action"] for e in ws.json("audit")["events"] if e["action"] in ("guard.halt", "guard.revoke")] == ["guard.halt", "guard.halt"],
                    timeout=10)
        trip = [e for e in ws.json("audit")["events"] if e["action"] == "guard.halt"][-1]["details"]
        assert trip["configured"] == "revoke" and "patchctl rollback --app demo --app-version 2.3 --channel production --patch 3" in trip["reason"]
        time.sleep(1)
        assert standin.accepted == [], "a guard's halt is not pushed"
        rolled = ws.run("rollback", "--app", "demo", "--app-version", "2.3", "--patch", "3", "--notify", env=standin.env, timeout=300)
        assert rolled.rc == 0 and "push: 1 sent, 0 failed, 0 removed" in rolled.stdout, rolled.stderr
        _, _, payload = standin.accepted[0]
        assert payload["hotpatch"]["version"] == "2.3"
        assert standin.problems == []
        event = [e for e in ws.json("audit")["events"] if e["action"] == "push.notify"][-1]
        assert event["details"]["reason"] == "rollback" and event["details"]["sent"] == 1
    finally:
        server.stop()


def audit_reasons(ws):
    return [e["details"]["reasons"] for e in ws.json("audit")["events"] if e["action"] == "push.notify"]


def test_failure_reasons_on_stderr_in_json_and_audit(ws, apns, start):
    """Issue 20, item 7: each reason a token was not sent, counted, with what to check."""
    standin, _ = apns
    ws.publish("demo", "2.3", "fix(1)")
    server = start(ws)
    for n in range(1, 4):
        assert register(server, token(n)) == 201
    standin.script = {token(2): [(400, "BadEnvironmentKeyInToken")], token(3): [(400, "DeviceTokenNotForTopic")]}
    result = pushing(ws, standin, "notify", "--app", "demo", "--json")
    assert result.rc == 0, result.stderr  # one was sent
    assert json.loads(result.stdout) == {"sent": 1, "failed": 2, "removed": 0,
                                         "reasons": {"BadEnvironmentKeyInToken": 1, "DeviceTokenNotForTopic": 1}}
    assert "push: 1 not sent: BadEnvironmentKeyInToken (a sandbox (development build) token sent to production" in result.stderr
    assert "push: 1 not sent: DeviceTokenNotForTopic (the topic set with `patchctl apps apns --topic`" in result.stderr
    assert audit_reasons(ws)[-1] == {"BadEnvironmentKeyInToken": 1, "DeviceTokenNotForTopic": 1}


@pytest.mark.parametrize("cause", ["topic", "team", "unreachable"])
def test_nothing_sent_is_a_failure_with_its_reason(ws, apns, start, cause):
    """BadTopic (the wrong bundle ID), InvalidProviderToken (a team the key is not of), and
    an APNs host that does not answer: exit 2 after the output, the reason everywhere; the
    publish itself stays made."""
    standin, p8 = apns
    ws.publish("demo", "2.3", "fix(1)")
    server = start(ws)
    assert register(server, token(1)) == 201 and register(server, token(2)) == 201
    env = standin.env
    if cause == "topic":
        ws.ok("apps", "apns", "demo", "--team-id", TEAM, "--key-id", KEY_ID, "--key", p8, "--topic", "com.example.wrong")
        reason = "BadTopic"
    elif cause == "team":
        ws.ok("apps", "apns", "demo", "--team-id", "TEAM999999", "--key-id", KEY_ID, "--key", p8, "--topic", TOPIC)
        reason = "InvalidProviderToken"
    else:
        env = {**standin.env, "HOTPATCH_APNS_URL": "https://127.0.0.1:9"}
        reason = "unreachable"
    result = ws.run("notify", "--app", "demo", "--json", env=env, timeout=300)
    assert result.rc == 2, result.stderr
    assert json.loads(result.stdout) == {"sent": 0, "failed": 2, "removed": 0, "reasons": {reason: 2}}
    assert f"push: 2 not sent: {reason} (" in result.stderr
    assert f"patchctl: push: no device was reached (2 {reason})" in result.stderr
    result = ws.run("publish", "--app", "demo", "--app-version", "2.3", "--notify", ws.write_file("fix(2)"), env=env, timeout=300)
    assert result.rc == 2, result.stderr
    assert "published demo 2.3 patch 2" in result.stdout and "push: 0 sent, 2 failed, 0 removed" in result.stdout
    assert [p["patch"] for p in ws.json("list") if p["appVersion"] == "2.3"][-1] == 2
    assert audit_reasons(ws)[-2:] == [{reason: 2}, {reason: 2}]
    if cause == "topic":  # the other --notify commands end the same way
        ws.publish("demo", "2.3", "staged(1)", channel="staging")
        for args in (["promote", "--from", "staging", "--to", "production"], ["rollback"], ["revoke", "--all", "--yes", "--json"]):
            result = ws.run(*args, "--app", "demo", "--app-version", "2.3", "--notify", env=env, timeout=300)
            assert result.rc == 2 and "push: no device was reached (2 BadTopic)" in result.stderr, (args, result.stderr)
            assert "push: 2 not sent: BadTopic" in result.stderr
        states = {(p["channel"], p["state"]) for p in ws.json("list", "--app", "demo") if p["appVersion"] == "2.3"}
        assert ("production", "active") not in states, "each change was made"
        assert ("staging", "active") in states, "a revoke takes one channel's patches"
    assert standin.accepted == []


def test_notify_with_no_tokens_is_not_a_failure(ws, apns):
    standin, _ = apns
    ws.publish("demo", "2.3", "fix(1)")
    result = pushing(ws, standin, "notify", "--app", "demo")
    assert result.rc == 0, result.stderr
    assert result.stdout.strip() == "push: 0 sent, 0 failed, 0 removed"


def test_apps_apns_shows_the_configuration_and_tests_a_token(ws, apns):
    standin, p8 = apns
    ws.publish("demo", "2.3", "fix(1)")
    shown = ws.ok("apps", "apns", "demo")
    assert f"APNs key {KEY_ID} of team {TEAM} for {TOPIC}" in shown and "set by " in shown and ": present" in shown
    config = ws.json("apps", "apns", "demo")
    assert config["teamId"] == TEAM and config["keyId"] == KEY_ID and config["topic"] == TOPIC and config["keyFilePresent"] is True
    assert config["setBy"] and config["setAt"] and config["keyFile"].endswith(f"apns.{KEY_ID}.p8")
    assert "BEGIN" not in shown and "BEGIN" not in json.dumps(config)

    result = pushing(ws, standin, "apps", "apns", "demo", "--test", token(1))
    assert result.rc == 0, result.stderr
    assert "status 200, apns-id 00000000-0000-0000-0000-000000000000" in result.stdout
    assert [t for t, _, _ in standin.accepted] == [token(1)] and standin.problems == []
    assert stored_tokens(ws) == [], "a test push stores nothing"

    standin.script = {token(2): [(400, "BadEnvironmentKeyInToken")]}
    result = pushing(ws, standin, "apps", "apns", "demo", "--test", token(2), "--sandbox", "--json")
    assert result.rc == 2
    answer = json.loads(result.stdout)
    assert answer["status"] == 400 and answer["reason"] == "BadEnvironmentKeyInToken" and answer["environment"] == "sandbox"
    assert answer["apnsId"] == "00000000-0000-0000-0000-000000000000"
    assert "not delivered (BadEnvironmentKeyInToken)" in result.stderr
    result = ws.run("apps", "apns", "demo", "--test", token(3), env={**standin.env, "HOTPATCH_APNS_URL": "https://127.0.0.1:9"})
    assert result.rc == 2 and "no answer from https://127.0.0.1:9" in result.stdout, result.stdout + result.stderr
    assert_cli_error(ws.run("apps", "apns", "demo", "--test", "xyz"), 64, "hexadecimal")
    assert_cli_error(ws.run("apps", "apns", "demo", "--team-id", TEAM), 64, "--key-id")
    assert_cli_error(ws.run("apps", "apns", "demo", "--sandbox"), 64, "--test")

    (ws.keys / "demo" / f"apns.{KEY_ID}.p8").unlink()
    assert "MISSING" in ws.ok("apps", "apns", "demo")
    assert ws.json("apps", "apns", "demo")["keyFilePresent"] is False


def test_apps_apns_without_a_key_says_how_to_set_one(tmp_path):
    w = Workspace(tmp_path / "bare")
    w.create_app("demo")
    assert_cli_error(w.run("apps", "apns", "demo"), 2, "no APNs key", "--team-id")


def test_device_registration_guards_on_a_real_patchd(ws, start):
    """Issue 20, item 5, end to end: X-Device-ID is required and binds the token; a version
    without a patch is refused; new tokens per /24 an hour (`--push-new-per-network`) are
    capped with 429 and Retry-After, counted in /metrics."""
    ws.publish("demo", "2.3", "fix(1)")
    server = start(ws, args=["--push-new-per-network", "2"])
    anonymous = register_response(server, token(1), device=False)
    assert anonymous.status == 400 and b"X-Device-ID" in anonymous.body
    assert register(server, token(1), version="9.9") == 404
    assert register(server, token(1), channel="staging") == 404
    assert stored_tokens(ws) == []
    assert register(server, token(1), device="phone-a") == 201
    assert register(server, token(1), device="phone-b", environment="sandbox") == 409
    assert register(server, token(1), device="phone-a", environment="sandbox") == 200
    with ws.sql() as db:
        owners = db.execute("SELECT device FROM push_device_owners").fetchall()
    assert len(owners) == 1 and "phone-a" not in str(owners)
    assert register(server, token(2)) == 201
    refused = register_response(server, token(3))
    assert refused.status == 429 and int(refused.headers["Retry-After"]) >= 1
    assert json.loads(refused.body)["error"]["code"] == "throttled"
    assert stored_tokens(ws) == [token(1), token(2)]
    assert register(server, token(2), environment="sandbox") == 200, "a refresh is not a new token"
    metrics = request(server.url, "/metrics").body.decode()
    assert "hotpatch_push_quota_refusals_total 1\n" in metrics


@sqlite_only("holds the registry file's write lock from another process")
def test_registrations_waiting_on_the_registry_hold_up_neither_checks_nor_refreshes(ws, start):
    """Issue 43, item 5, end to end: a registration is written off the request threads and
    answered once written. While another process holds the registry's write lock, the check
    path and a refresh of a token this patchd wrote are answered at once; new tokens wait
    for the writer, and past `--push-queue` the next one is 503 with Retry-After, stored
    nothing; once the lock is free the waiting ones are 201."""
    ws.publish("demo", "2.3", "fix(1)")
    server = start(ws, args=["--push-queue", "1"])
    assert register(server, token(1)) == 201
    lock = sqlite3.connect(ws.sqlite, isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")  # patchd's writes now wait for it (its busy timeout is 10 s)
    locked_at = time.monotonic()
    try:
        with ThreadPoolExecutor(5) as pool:
            # One group taken by the writer, which waits for the file; one queued; the rest refused.
            futures = [pool.submit(register_response, server, token(n)) for n in range(2, 7)]
            poll(lambda: sum(f.done() for f in futures) >= 3, timeout=8)
            done = [f.result() for f in futures if f.done()]
            assert [r.status for r in done] == [503] * len(done)
            assert all(r.headers["Retry-After"] == "30" and json.loads(r.body)["error"]["code"] == "busy" for r in done)
            assert request(server.url, "/v1/apps/demo/metadata/timestamp.json").status == 200
            assert register(server, token(1)) == 200, "a refresh of a token written here needs no write"
            waiting = [f for f in futures if not f.done()]
            assert 1 <= len(waiting) <= 2
            lock.execute("ROLLBACK")
            held = time.monotonic() - locked_at
            statuses = [f.result(timeout=30).status for f in waiting]
            if held < 9:
                assert statuses == [201] * len(waiting), f"the lock was held {held:.1f} s"
            else:
                # A machine too loaded to get here within the writer's 10 s busy timeout: the
                # writer gave up, and what waited is 503 busy, never a 500 or a hang.
                assert set(statuses) <= {201, 503}, f"the lock was held {held:.1f} s: {statuses}"
    finally:
        lock.close()
    assert len(stored_tokens(ws)) == 1 + statuses.count(201)
    metrics = request(server.url, "/metrics").body.decode()
    assert f"hotpatch_push_registrations_refused_total {5 - len(waiting)}\n" in metrics
    assert "hotpatch_push_refreshes_from_memory_total 1\n" in metrics


def test_notify_over_server_is_the_local_round_sent_by_patchd(ws, apns, tmp_path):
    """`notify`, `notify --dry-run` and `publish --notify` over --server: patchd sends the round
    with its registry's APNs key and answers what the local command prints; `--notify` asks
    the server's dry run first, so an app without a key changes nothing."""
    from patchd_support import remote, token_file
    standin, _ = apns
    ws.publish("demo", "2.3", "fix(1)")
    ws.create_app("bare")
    server = Patchd(ws, env=standin.env)
    try:
        for n in (1, 2):
            assert register(server, token(n)) == 201
        ci = token_file(ws, ws.token("--all", "--name", "ci"), "ci.token")
        dry = remote(ws, server, ci, "notify", "--app", "demo", "--dry-run", "--json")
        assert dry.rc == 0, dry.stderr
        assert json.loads(dry.stdout) == {"dryRun": True, "devices": 2}
        assert standin.accepted == []
        result = remote(ws, server, ci, "notify", "--app", "demo", "--json")
        assert result.rc == 0, result.stderr
        assert json.loads(result.stdout) == {"sent": 2, "failed": 0, "removed": 0, "reasons": {}}
        published = remote(ws, server, ci, "publish", "--app", "demo", "--app-version", "2.3", "--notify", "--json", ws.write_file("fix(2)"))
        assert published.rc == 0, published.stderr
        assert json.loads(published.stdout)["push"] == {"sent": 2, "failed": 0, "removed": 0, "reasons": {}}
        reasons = [e["details"]["reason"] for e in ws.json("audit")["events"] if e["action"] == "push.notify"]
        assert reasons == ["notify", "publish"]
        actors = {e["actor"] for e in ws.json("audit")["events"] if e["action"] == "push.notify"}
        assert len(actors) == 1 and actors.pop().startswith("ci (token "), "recorded under the token"
        # An app without a key: refused by the dry run, before the publish.
        refused = poll(lambda: (lambda r: r if "404" not in r.stderr else None)(
            remote(ws, server, ci, "publish", "--app", "bare", "--app-version", "1.0", "--notify", ws.write_file("b()"))), timeout=10)
        assert_cli_error(refused, 2, "--notify", "no APNs key", "nothing was changed")
        assert ws.json("list", "--app", "bare") == []
        assert standin.problems == []
    finally:
        server.stop()
