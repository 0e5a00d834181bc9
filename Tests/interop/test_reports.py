"""Device reports on a real patchd (issue 12): simulated devices post to
POST /v1/apps/{app}/reports, the figures come back from GET /v1/apps/{app}/stats, `patchctl
list`/`status` and /metrics, a guard halts a patch once the 95 % Wilson lower bound of its
rollback rate passes the threshold (computed here in plain python), the counts survive a
restart, and forged reports cannot advance a rollout.

    PATCHCTL=… PATCHD=… python -m pytest Tests/interop/test_reports.py -q
"""
import hashlib
import json
import math
import uuid

import pytest
from hotpatch_testing import Workspace
from patchd_support import Patchd, remote, request, token_file

Z95 = 1.959963984540054


def wilson_lower(k, n):
    """The lower bound of the 95 % Wilson score interval of k successes in n trials."""
    p = k / n
    centre = p + Z95 * Z95 / (2 * n)
    spread = Z95 * math.sqrt(p * (1 - p) / n + Z95 * Z95 / (4 * n * n))
    return max(0.0, (centre - spread) / (1 + Z95 * Z95 / n))


# Hundreds of simulated devices post from 127.0.0.1 in a second or two, each on a new
# connection: past patchd's new-connection rate per address (50 a second, bursting to 250),
# which exists to stop exactly that from one address. Tests of the guards' arithmetic lift it.
MANY_DEVICES = ["--max-new-conns-per-ip", "0"]


def post(server, device, events, app="demo"):
    body = json.dumps({"events": events}).encode()
    resp = request(server.url, f"/v1/apps/{app}/reports", method="POST", body=body,
                   headers={"X-Device-ID": device, "Content-Type": "application/json"})
    return resp.status, (json.loads(resp.body) if resp.body else None)


def ev(kind, patch=1, version="2.3", **extra):
    return {"id": str(uuid.uuid4()), "type": kind, "appVersion": version, "channel": "production", "patch": patch,
            "at": "2026-12-01T10:00:00Z", **extra}


@pytest.fixture
def ws(tmp_path):
    w = Workspace(tmp_path / "ws")
    w.create_app("demo")
    w.ok("apps", "throttle", "demo", "--ip-rate", "off")  # every simulated device shares 127.0.0.1
    w.publish("demo", "2.3", "fix(1)", rollout="50")
    return w


def stats(ws, server, auditor):
    result = remote(ws, server, auditor, "status", "--app", "demo", "--json")
    assert result.rc == 0, result.stderr
    return json.loads(result.stdout)["apps"][0]["reports"]


def test_guard_halts_a_patch_fed_by_simulated_devices(ws, start):
    server = start(ws)
    publisher = token_file(ws, ws.token("--app", "demo", "--role", "publisher", "--name", "ci"), "ci.token")
    auditor = token_file(ws, ws.token("--all", "--role", "auditor", "--name", "ops"), "ops.token")
    set_guard = remote(ws, server, publisher, "apps", "guard", "demo", "--max-rollback-rate", "2%", "--min-devices", "50", "--json")
    assert set_guard.rc == 0, set_guard.stderr
    assert json.loads(set_guard.stdout)["guard"]["maxRollbackRatePpm"] == 20000

    # Devices install; every fifth rolls back. Python decides when the guard must trip.
    installed = rolled_back = 0
    expected = None
    for i in range(120):
        events = [ev("downloaded"), ev("installed")]
        installed += 1
        if i % 5 == 0:
            events.append(ev("rolledBack"))
            rolled_back += 1
        else:
            events.append(ev("confirmed"))
        status, body = post(server, f"sim-device-{i}", events)
        assert status == 202 and body == {"accepted": 3, "duplicates": 0, "dropped": 0}
        if expected is None and installed >= 50 and wilson_lower(rolled_back, installed) > 0.02:
            expected = (installed, rolled_back, round(wilson_lower(rolled_back, installed) * 1e6))
    assert expected is not None

    reports = stats(ws, server, auditor)
    (trip,) = reports["trips"]
    assert (trip["installed"], trip["rolledBack"], trip["lowerBoundPpm"]) == expected
    assert trip["action"] == "halt" and trip["thresholdPpm"] == 20000
    figures = next(p for p in reports["patches"] if p["patch"] == 1)
    assert figures["devices"]["installed"] == 120 and figures["devices"]["rolledBack"] == 24
    assert figures["devices"]["confirmed"] == 96 and figures["devices"]["downloaded"] == 120

    event = [e for e in ws.json("audit", "--app", "demo")["events"] if e["action"] == "guard.halt"]
    assert len(event) == 1 and event[0]["actor"] == "patchd guard"
    details = event[0]["details"]
    assert (details["installed"], details["rolledBack"], details["lowerBoundPpm"]) == expected
    assert details["thresholdPpm"] == 20000

    # Halted everywhere: the listing, the check, status.
    listing = remote(ws, server, auditor, "list", "--app", "demo", "--json")
    (patch,) = json.loads(listing.stdout)
    assert patch["rollout"] == 0 and patch["delivery"] == "halted" and patch["devices"]["rolledBack"] == 24
    table = remote(ws, server, auditor, "list", "--app", "demo").stdout
    assert "INSTALLED" in table and "ROLLED BACK" in table and "halted" in table
    assert request(server.url, "/v1/apps/demo/versions/2.3/patch", headers={"X-Device-ID": "a-new-device"}).status == 204
    # ... but not taken from a device that runs it: halted, not revoked (PROTOCOL.md section 5).
    etag = '"%s"' % hashlib.sha256(b"fix(1)").hexdigest()
    kept = request(server.url, "/v1/apps/demo/versions/2.3/patch", headers={"X-Device-ID": "runs-it", "If-None-Match": etag})
    assert kept.status == 304
    text = remote(ws, server, auditor, "status", "--app", "demo").stdout
    assert "guard production: halt" in text and "guard halted 2.3 production patch 1" in text
    metrics = request(server.url, "/metrics").body.decode()
    assert 'hotpatch_patch_devices{app="demo",version="2.3",channel="production",patch="1",event="installed"} 120' in metrics

    # Resumed by hand, it stays resumed: the guard acted once.
    assert remote(ws, server, publisher, "rollout", "--app", "demo", "--app-version", "2.3", "--patch", "1", "--percent", "50").rc == 0
    assert post(server, "sim-device-late", [ev("installed"), ev("rolledBack")])[0] == 202
    assert ws.json("list", "--app", "demo")[0]["rollout"] == 50


def test_counts_survive_a_restart(ws, start):
    server = start(ws)
    for i in range(7):
        assert post(server, f"d{i}", [ev("installed"), ev("refused", reason="hashMismatch")])[0] == 202
    before = ws.json("status", "--app", "demo")["apps"][0]["reports"]
    code, hung = server.stop()
    assert code == 0 and not hung
    again = Patchd(ws)
    try:
        auditor = token_file(ws, ws.token("--all", "--role", "auditor", "--name", "ops"), "ops.token")
        after = stats(ws, again, auditor)
        assert after == before
        figures = after["patches"][0]
        assert figures["devices"]["installed"] == 7 and figures["reasons"]["refused"] == {"hashMismatch": 7}
        # A resend after the restart is still a duplicate.
        event = ev("installed")
        assert post(again, "d0", [event])[1]["accepted"] == 1
        assert post(again, "d0", [event])[1] == {"accepted": 0, "duplicates": 1, "dropped": 0}
    finally:
        again.stop()


def test_forged_reports_can_halt_but_never_advance(ws, start):
    """A flood of fake confirmations from many device IDs changes nothing; the rollout only
    ever moves down, and only through a guard someone set."""
    ws.publish("demo", "2.3", "fix(2)", rollout="5")
    ws.ok("apps", "guard", "demo", "--max-rollback-rate", "2%", "--min-devices", "50")
    server = start(ws, MANY_DEVICES)
    before = ws.json("status", "--app", "demo")["apps"][0]["metadata"]
    for i in range(300):
        status, body = post(server, f"forged-{i}", [ev("downloaded", 2), ev("installed", 2), ev("launched", 2), ev("confirmed", 2)])
        assert status == 202 and body["accepted"] == 4
    assert [p["rollout"] for p in ws.json("list", "--app", "demo")] == [50, 5]
    assert ws.json("status", "--app", "demo")["apps"][0]["metadata"] == before, "nothing was re-signed"
    assert not [e for e in ws.json("audit", "--app", "demo")["events"] if e["action"].startswith("guard.") and e["action"] != "guard.set"]
    # Fake rollbacks can halt, and only the patch they name: a halt offers the patch to no new
    # device and takes it from none that runs it, so evidence alone never pulls a fix.
    for i in range(60):
        post(server, f"forged-{i}", [ev("rolledBack", 2)])
    assert [p["rollout"] for p in ws.json("list", "--app", "demo")] == [50, 0]


def test_a_guard_set_to_revoke_halts_a_versions_only_live_patch_and_says_so(ws, start):
    ws.ok("apps", "guard", "demo", "--max-rollback-rate", "2%", "--min-devices", "50", "--action", "revoke")
    server = start(ws, MANY_DEVICES)
    for i in range(60):
        post(server, f"sim-{i}", [ev("installed")] + ([ev("rolledBack")] if i % 5 == 0 else []))
    reason = "revoke would leave 2.3 production with no patch"
    (patch,) = ws.json("list", "--app", "demo")
    assert patch["state"] == "active" and patch["rollout"] == 0
    (event,) = [e for e in ws.json("audit", "--app", "demo")["events"] if e["action"] in ("guard.halt", "guard.revoke")]
    assert event["action"] == "guard.halt" and event["details"]["configured"] == "revoke"
    assert event["details"]["reason"].endswith("; " + reason)
    (trip,) = ws.json("status", "--app", "demo")["apps"][0]["reports"]["trips"]
    assert (trip["action"], trip["configured"], trip["overrideReason"]) == ("halt", "revoke", reason)
    text = ws.ok("status", "--app", "demo")
    assert "guard halted 2.3 production patch 1" in text and "; configured: revoke — " + reason in text


def test_the_endpoint_is_bounded_like_the_check_path(ws, start):
    server = start(ws)
    status, body = post(server, "d1", [ev("installed", 9), ev("installed", version="9.9"), {"id": "x"}, ev("installed")])
    assert status == 202 and body == {"accepted": 1, "duplicates": 0, "dropped": 3}
    too_big = json.dumps({"events": [ev("installed")], "pad": "x" * (64 << 10)}).encode()
    resp = request(server.url, "/v1/apps/demo/reports", method="POST", body=too_big, headers={"X-Device-ID": "d1"})
    assert resp.status == 413
    assert request(server.url, "/v1/apps/demo/reports", method="POST", body=b'{"events": []}', headers={"X-Device-ID": "d1"}).status == 400
    assert request(server.url, "/v1/apps/demo/reports", method="POST", body=b'{"events": [1]}').status == 400
    assert request(server.url, "/v1/apps/nope/reports", method="POST", body=b'{"events": [1]}', headers={"X-Device-ID": "d1"}).status == 404
    ws.ok("apps", "throttle", "demo", "--ip-rate", "3/min")
    limited = Patchd(ws)
    try:
        codes = [post(limited, f"d{i}", [ev("installed")])[0] for i in range(4)]
        assert codes == [202, 202, 202, 429]
    finally:
        limited.stop()


def test_apps_guard_locally(ws):
    assert "no guard on production" in ws.ok("apps", "guard", "demo")
    out = ws.ok("apps", "guard", "demo", "--channel", "beta", "--max-rollback-rate", "0.5%", "--min-devices", "200", "--action", "revoke")
    assert "guard beta: revoke a patch once ≥ 200 devices installed it and the rollback rate's 95 % lower bound exceeds 0.5%" in out
    again = ws.json("apps", "guard", "demo", "--channel", "beta", "--max-rollback-rate", "0.5%", "--min-devices", "200", "--action", "revoke")
    assert again["changed"] is False and again["guard"]["maxRollbackRatePpm"] == 5000
    assert ws.json("apps", "guard", "demo", "--channel", "beta", "--off")["changed"] is True
    actions = [e["action"] for e in ws.json("audit", "--app", "demo")["events"]]
    assert actions[-2:] == ["guard.set", "guard.remove"]
    bad = ws.run("apps", "guard", "demo", "--max-rollback-rate", "2")
    assert bad.rc == 64 and "--max-rollback-rate must look like 2%" in bad.stderr
    assert ws.run("apps", "guard", "demo", "--off", "--min-devices", "3").rc == 64


def test_publish_advance_schedules_a_staged_rollout_that_forged_installs_cannot_hurry(ws, start):
    refused = ws.run("publish", "--app", "demo", "--app-version", "2.3", "--rollout", "5", "--advance", "25,50,100",
                     "--every", "1h", ws.write_file("fix(2)"))
    assert refused.rc == 2 and "--advance needs a guard on production" in refused.stderr
    assert len(ws.json("list", "--app", "demo")) == 1, "nothing was published"
    ws.ok("apps", "guard", "demo", "--max-rollback-rate", "2%", "--min-devices", "50")
    server = start(ws, MANY_DEVICES)
    publisher = token_file(ws, ws.token("--app", "demo", "--role", "publisher", "--name", "ci"), "ci.token")
    out = remote(ws, server, publisher, "publish", "--app", "demo", "--app-version", "2.3", "--rollout", "5",
                 "--advance", "25,50,100", "--every", "1h", "--json", ws.write_file("fix(2)"))
    assert out.rc == 0, out.stderr
    schedule = json.loads(out.stdout)["schedule"]
    assert schedule["steps"] == [25, 50, 100] and schedule["everySeconds"] == 3600 and schedule["patch"] == 2
    # 300 clean installs are all the evidence a step needs, but its hour has not come.
    for i in range(300):
        assert post(server, f"forged-{i}", [ev("installed", 2), ev("confirmed", 2)])[0] == 202
    assert [p["rollout"] for p in ws.json("list", "--app", "demo")] == [50, 5]
    (still,) = ws.json("status", "--app", "demo")["apps"][0]["reports"]["schedules"]
    assert still["steps"] == [25, 50, 100]
    events = [e["action"] for e in ws.json("audit", "--app", "demo")["events"]]
    assert events[-1] == "rollout.schedule" and "patch.rollout" not in events


def test_the_swift_client_reports_to_patchd_and_the_figures_count_it_once(ws, start):
    """PatchClient (through `patchctl fetch`) against the real server: its report of the
    sync is accepted and counted, and a second device makes two."""
    server = start(ws)
    root = ws.root_file("demo")
    for device in ("phone-a", "phone-b"):
        out = ws.run("fetch", "--server", server.url, "--app", "demo", "--app-version", "2.3", "--device-id", device,
                     "--root", root, "--cache", ws.root / f"cache-{device}", "--json", registry=False)
        assert out.rc == 0 and json.loads(out.stdout)["outcome"] == "updated", out.stderr
        assert json.loads((ws.root / f"cache-{device}" / "demo" / "reports.json").read_text())["events"] == [], "the queue was sent"
    figures = ws.json("status", "--app", "demo")["apps"][0]["reports"]["patches"][0]
    assert figures["devices"]["downloaded"] == 2 and figures["devices"]["installed"] == 2
