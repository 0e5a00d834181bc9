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
from hotpatch_testing import Workspace, assert_cli_error
from patchd_support import Patchd, error_json, poll, remote, request, token_file

Z95 = 1.959963984540054


def wilson_lower(k, n):
    """The lower bound of the 95 % Wilson score interval of k successes in n trials."""
    p = k / n
    centre = p + Z95 * Z95 / (2 * n)
    spread = Z95 * math.sqrt(p * (1 - p) / n + Z95 * Z95 / (4 * n * n))
    return max(0.0, (centre - spread) / (1 + Z95 * Z95 / n))


# Hundreds of simulated devices post from 127.0.0.1 in a second or two, each on a new
# connection: past patchd's new-connection rate per address (50 a second, bursting to 250),
# which exists to stop exactly that from one address. Tests of the guards' arithmetic lift it,
# and trust 127.0.0.1 as a proxy, so each simulated device can say (X-Forwarded-For) which
# network it reports from: reports count per /24 network and /16 block (ReportRules).
MANY_DEVICES = ["--max-new-conns-per-ip", "0", "--trusted-proxy", "127.0.0.1"]


def own_address(i):
    """A simulated device's address, in a /16 block of its own."""
    return f"{10 + i // 250}.{i % 250}.0.1"


def receipt(server, device, patch=1, version="2.3", address=None):
    """What a device gets with the bundle it downloads: X-Patch-Receipt for this device and
    patch, which its reports about the patch need to count (a download per forged device)."""
    path = TARGETS[(version, patch)]
    headers = {"X-Device-ID": delivered(device)}
    if address:
        headers["X-Forwarded-For"] = address
    resp = request(server.url, f"/v1/apps/demo/targets/{path}", headers=headers)
    assert resp.status == 200, resp.body
    value = resp.headers.get("X-Patch-Receipt")
    assert value and len(value) == 32
    return value


TARGETS = {}
ROLLOUTS = {}


def learn_targets(ws):
    """Served paths and rollouts of every patch of the demo app."""
    TARGETS.clear()
    ROLLOUTS.clear()
    for p in ws.json("list", "--app", "demo"):
        TARGETS[(p["appVersion"], p["patch"])] = f'{p["appVersion"]}/{p["patch"]}/{p["sha256"]}.main.js'
        ROLLOUTS[(p["appVersion"], p["patch"])] = p["rollout"]


def delivered(name):
    """The device ID a simulated device NAME uses: NAME, or the first NAME-N that the rollout of
    every patch of the app (PROTOCOL.md section 7) gives the patch to. patchd issues a receipt
    only to a device the rule delivers the patch to (issue 43), as a real device downloads a
    patch only then; one ID for every patch keeps a device's receipts and reports together."""
    def inside(device):
        for (version, patch), percent in ROLLOUTS.items():
            bucket = int.from_bytes(hashlib.sha256(f"demo|{version}|{patch}|{device}".encode()).digest()[:4], "big") % 100
            if percent > 0 and bucket >= percent:
                return False
        return True
    candidate, n = name, 0
    while not inside(candidate):
        n += 1
        candidate = f"{name}-{n}"
    return candidate


def post(server, device, events, app="demo", address=None):
    body = json.dumps({"events": events}).encode()
    headers = {"X-Device-ID": delivered(device), "Content-Type": "application/json"}
    if address:
        headers["X-Forwarded-For"] = address
    resp = request(server.url, f"/v1/apps/{app}/reports", method="POST", body=body, headers=headers)
    return resp.status, (json.loads(resp.body) if resp.body else None)


def ev(kind, patch=1, version="2.3", receipt=None, **extra):
    event = {"id": str(uuid.uuid4()), "type": kind, "appVersion": version, "channel": "production", "patch": patch,
             "at": "2026-12-01T10:00:00Z", **extra}
    if receipt:
        event["receipt"] = receipt
    return event


def device(server, name, kinds, patch=1, address=None, got=None):
    """One simulated device: downloads the patch (its receipt; `got`: it did so before), then
    reports `kinds` about it."""
    r = got or receipt(server, name, patch, address=address)
    status, body = post(server, name, [ev(k, patch, receipt=r) for k in kinds], address=address)
    assert status == 202 and body == {"queued": len(kinds)}, (status, body)


def counted(server, outcome="accepted", reason=None):
    """hotpatch_report_events_total for one outcome, from /metrics."""
    label = f'outcome="{outcome}"' + (f',reason="{reason}"' if reason else "")
    for line in request(server.url, "/metrics").body.decode().splitlines():
        if line.startswith("hotpatch_report_events_total{" + label + "}"):
            return int(line.rsplit(" ", 1)[1])
    return 0


def settled(server, accepted):
    """Waits until the report worker has counted `accepted` events (it counts off the request path)."""
    poll(lambda: counted(server) >= accepted, timeout=10)
    assert counted(server) == accepted


@pytest.fixture
def ws(tmp_path):
    w = Workspace(tmp_path / "ws")
    w.create_app("demo")
    w.ok("apps", "throttle", "demo", "--ip-rate", "off")  # every simulated device shares 127.0.0.1
    w.publish("demo", "2.3", "fix(1)", rollout="50")
    learn_targets(w)
    return w


def stats(ws, server, auditor):
    result = remote(ws, server, auditor, "status", "--app", "demo", "--json")
    assert result.rc == 0, result.stderr
    return json.loads(result.stdout)["apps"][0]["reports"]


def test_guard_halts_a_patch_fed_by_simulated_devices(ws, start):
    server = start(ws, MANY_DEVICES)
    publisher = token_file(ws, ws.token("--app", "demo", "--role", "publisher", "--name", "ci"), "ci.token")
    auditor = token_file(ws, ws.token("--all", "--role", "auditor", "--name", "ops"), "ops.token")
    set_guard = remote(ws, server, publisher, "apps", "guard", "demo", "--max-rollback-rate", "2%", "--min-devices", "50", "--json")
    assert set_guard.rc == 0, set_guard.stderr
    assert json.loads(set_guard.stdout)["guard"]["maxRollbackRatePpm"] == 20000

    # Devices install, each from its own /16; every fifth rolls back. Python decides from when
    # the guard may trip (the worker counts in groups, so it trips at a group's end).
    installed = rolled_back = 0
    first = None
    # Every device downloaded the patch before the first report (a halted patch is no longer served).
    got = [receipt(server, f"sim-device-{i}", address=own_address(i)) for i in range(121)]
    for i in range(120):
        kinds = ["downloaded", "installed"]
        installed += 1
        if i % 5 == 0:
            kinds.append("rolledBack")
            rolled_back += 1
        else:
            kinds.append("confirmed")
        device(server, f"sim-device-{i}", kinds, address=own_address(i), got=got[i])
        if first is None and installed >= 50 and wilson_lower(rolled_back, installed) > 0.02:
            first = installed
    assert first is not None
    settled(server, 360)

    reports = stats(ws, server, auditor)
    (trip,) = reports["trips"]
    assert trip["installed"] >= first and trip["lowerBoundPpm"] == round(wilson_lower(trip["rolledBack"], trip["installed"]) * 1e6)
    assert trip["action"] == "halt" and trip["thresholdPpm"] == 20000
    figures = next(p for p in reports["patches"] if p["patch"] == 1)
    assert figures["devices"]["installed"] == 120 and figures["devices"]["rolledBack"] == 24
    assert figures["devices"]["confirmed"] == 96 and figures["devices"]["downloaded"] == 120

    events = ws.json("audit", "--app", "demo")["events"]
    event = [e for e in events if e["action"] == "guard.halt"]
    assert len(event) == 1 and event[0]["actor"] == "patchd guard"
    # The guard halts as `patchctl halt` does: a patch.halt event (no longer a patch.rollout to 0).
    by_guard = [e["action"] for e in events if e["actor"] == "patchd guard"]
    assert by_guard == ["patch.halt", "guard.halt"], by_guard
    details = event[0]["details"]
    assert (details["installed"], details["rolledBack"], details["lowerBoundPpm"]) == (trip["installed"], trip["rolledBack"], trip["lowerBoundPpm"])
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
    device(server, "sim-device-120", ["installed", "rolledBack"], address=own_address(120), got=got[120])
    settled(server, 362)
    assert ws.json("list", "--app", "demo")[0]["rollout"] == 50


def test_counts_survive_a_restart(ws, start):
    server = start(ws)
    for i in range(7):
        r = receipt(server, f"d{i}")
        assert post(server, f"d{i}", [ev("installed", receipt=r), ev("refused", reason="hashMismatch")])[0] == 202
    settled(server, 14)
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
        # A resend after the restart is still a duplicate; the receipt from before the restart still holds.
        event = ev("installed", receipt=receipt(again, "d0"))
        assert post(again, "d0", [event])[1] == {"queued": 1}
        assert post(again, "d0", [event])[1] == {"queued": 1}
        poll(lambda: counted(again, "duplicate") == 1, timeout=10)
        assert counted(again) == 1
    finally:
        again.stop()


def test_forged_reports_from_few_networks_cannot_halt_and_a_real_spread_does(ws, start):
    """A default guard (2 %, 50 devices): 300 forged devices that each downloaded the patch
    (so their receipts are valid) and rolled it back, from one address, then from 100 addresses
    of one /16, do not halt it; 60 devices spread over 60 blocks, 12 rolling back, do. Forged
    confirmations never advance anything."""
    ws.publish("demo", "2.3", "fix(2)", rollout="5")
    learn_targets(ws)
    ws.ok("apps", "guard", "demo", "--max-rollback-rate", "2%", "--min-devices", "50")
    server = start(ws, MANY_DEVICES)
    before = ws.json("status", "--app", "demo")["apps"][0]["metadata"]
    for i in range(300):
        device(server, f"forged-{i}", ["downloaded", "installed", "launched", "confirmed"], patch=2, address="198.51.100.7")
    for i in range(300):
        device(server, f"forged-one-address-{i}", ["installed", "rolledBack"], patch=2, address="198.51.100.7")
    for i in range(300):
        device(server, f"forged-one-block-{i}", ["installed", "rolledBack"], patch=2, address=f"203.0.{i % 100}.9")
    poll(lambda: counted(server) + counted(server, "dropped", "devices") == 300 * 4 + 600 * 2, timeout=20)
    assert [p["rollout"] for p in ws.json("list", "--app", "demo")] == [50, 5]
    assert ws.json("status", "--app", "demo")["apps"][0]["metadata"] == before, "nothing was re-signed"
    assert not [e for e in ws.json("audit", "--app", "demo")["events"] if e["action"].startswith("guard.") and e["action"] != "guard.set"]
    figures = next(p for p in ws.json("status", "--app", "demo")["apps"][0]["reports"]["patches"] if p["patch"] == 2)
    assert figures["devices"]["installed"] == 20 + 200, "20 devices an hour from one network, 200 from one block"
    assert counted(server, "dropped", "devices") > 0

    # Real rollbacks from a spread of networks halt, and only the patch they name: a halt
    # offers the patch to no new device and takes it from none that runs it.
    phones = [receipt(server, f"phone-{i}", 2, address=own_address(i)) for i in range(60)]
    for i in range(60):
        device(server, f"phone-{i}", ["installed"] + (["rolledBack"] if i < 12 else ["confirmed"]), patch=2, address=own_address(i), got=phones[i])
    poll(lambda: [p["rollout"] for p in ws.json("list", "--app", "demo")] == [50, 0], timeout=20)
    (trip,) = ws.json("status", "--app", "demo")["apps"][0]["reports"]["trips"]
    assert trip["patch"] == 2 and trip["rolledBack"] >= 12


def test_the_reviews_forgery_takes_nothing_from_a_fix_mid_rollout(ws, start):
    """Issue 43, item 1, as the review ran it: patch 1 live at 100 %, the fix (patch 2) at 50 %,
    a guard set to revoke at 2 % over 50 devices. 40 genuine devices, each in a /16 of its own,
    installed the fix; then 100 invented device IDs, 20 from one address in each of five /16s
    (127.1.0.9 ... 127.5.0.9), download it (receipts only for IDs inside the 50 % bucket) and
    report installed + rolledBack. Five blocks are under the quorum of 45 install blocks (6): no
    trip. A sixth reaches it: the guard trips, and only halts: a device that runs the fix keeps it."""
    ws.ok("rollout", "--app", "demo", "--app-version", "2.3", "--patch", "1", "--percent", "100")
    ws.publish("demo", "2.3", "fix(2)", rollout="50")
    learn_targets(ws)
    ws.ok("apps", "guard", "demo", "--max-rollback-rate", "2%", "--min-devices", "50", "--action", "revoke")
    server = start(ws, MANY_DEVICES)
    genuine = [receipt(server, f"phone-{i}", 2, address=own_address(i)) for i in range(40)]
    for i in range(40):
        device(server, f"phone-{i}", ["installed"], patch=2, address=own_address(i), got=genuine[i])
    for i in range(100):
        device(server, f"forged-{i}", ["installed", "rolledBack"], patch=2, address=f"127.{1 + i % 5}.0.9")
    settled(server, 40 + 200)
    assert [p["rollout"] for p in ws.json("list", "--app", "demo")] == [100, 50]
    assert not [e for e in ws.json("audit", "--app", "demo")["events"] if e["action"] in ("guard.halt", "guard.revoke")]
    figures = next(p for p in ws.json("status", "--app", "demo")["apps"][0]["reports"]["patches"] if p["patch"] == 2)
    assert figures["devices"]["installed"] == 140 and figures["devices"]["rolledBack"] == 100

    # How far it goes: rollbacks from five blocks more reach the quorum, and the trip halts.
    # Downloaded first: the guard may trip at the first of them, and a halted patch gives no
    # new device a receipt.
    wider = [receipt(server, f"wider-{i}", 2, address=f"127.{6 + i}.0.9") for i in range(5)]
    for i in range(5):
        device(server, f"wider-{i}", ["installed", "rolledBack"], patch=2, address=f"127.{6 + i}.0.9", got=wider[i])
    poll(lambda: [p["rollout"] for p in ws.json("list", "--app", "demo")] == [100, 0], timeout=20)
    (event,) = [e for e in ws.json("audit", "--app", "demo")["events"] if e["action"] in ("guard.halt", "guard.revoke")]
    assert event["action"] == "guard.halt" and event["details"]["configured"] == "revoke"
    # The worker counts in groups: the trip comes at the first group whose blocks reach the
    # quorum of the install blocks then counted (45 + each wider block, one in eight of them).
    blocks, quorum = event["details"]["rolledBackBlocks"], event["details"]["blockQuorum"]
    assert 6 <= blocks <= 10 and quorum == max(5, -(-(40 + blocks) // 8)) and blocks >= quorum, (blocks, quorum)
    etag = '"%s"' % hashlib.sha256(b"fix(2)").hexdigest()
    kept = request(server.url, "/v1/apps/demo/versions/2.3/patch", headers={"X-Device-ID": "runs-the-fix", "If-None-Match": etag})
    assert kept.status == 304, "halted, not revoked: the fix stays on the devices that run it"


def test_a_guard_set_to_revoke_halts_a_versions_only_live_patch_and_says_so(ws, start):
    ws.ok("apps", "guard", "demo", "--max-rollback-rate", "2%", "--min-devices", "50", "--action", "revoke")
    server = start(ws, MANY_DEVICES)
    got = [receipt(server, f"sim-{i}", address=own_address(i)) for i in range(60)]
    for i in range(60):
        device(server, f"sim-{i}", ["installed"] + (["rolledBack"] if i % 5 == 0 else []), address=own_address(i), got=got[i])
    poll(lambda: ws.json("list", "--app", "demo")[0]["rollout"] == 0, timeout=10)
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
    r = receipt(server, "d1")
    status, body = post(server, "d1", [ev("installed", 9), ev("installed", version="9.9"), {"id": "x"}, ev("installed", receipt=r),
                                       ev("installed")])
    assert status == 202 and body == {"queued": 4}
    poll(lambda: counted(server) == 1 and counted(server, "dropped", "receipt") == 1 and counted(server, "dropped", "invalid") == 3, timeout=10)
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
    # A queue of 2 events: a report of 3 can never fit, and is refused with 503 + Retry-After.
    ws.ok("apps", "throttle", "demo", "--ip-rate", "off")
    small = Patchd(ws, args=["--report-queue", "2"])
    try:
        body = json.dumps({"events": [ev("launched"), ev("launched"), ev("launched")]}).encode()
        resp = request(small.url, "/v1/apps/demo/reports", method="POST", body=body, headers={"X-Device-ID": "d1"})
        assert resp.status == 503 and resp.headers["Retry-After"] == "30" and error_json(resp)["code"] == "busy"
        assert "hotpatch_reports_refused_total 1\n" in request(small.url, "/metrics").body.decode()
    finally:
        small.stop()


def test_apps_guard_locally(ws):
    assert "no guard on production" in ws.ok("apps", "guard", "demo")
    # A guard is set on a declared channel; a mistyped one is refused with the nearest.
    assert_cli_error(ws.run("apps", "guard", "demo", "--channel", "beta", "--max-rollback-rate", "1%"), 2, 'no channel "beta"')
    ws.ok("channels", "create", "beta", "--app", "demo")
    assert_cli_error(ws.run("apps", "guard", "demo", "--channel", "bta", "--max-rollback-rate", "1%"), 2, 'did you mean "beta"')
    out = ws.ok("apps", "guard", "demo", "--channel", "beta", "--max-rollback-rate", "0.5%", "--min-devices", "200", "--action", "revoke")
    assert "guard beta: revoke a patch once ≥ 200 devices installed it and the rollback rate's 95 % lower bound exceeds 0.5%" in out
    again = ws.json("apps", "guard", "demo", "--channel", "beta", "--max-rollback-rate", "0.5%", "--min-devices", "200", "--action", "revoke")
    assert again["changed"] is False and again["guard"]["maxRollbackRatePpm"] == 5000
    assert ws.json("apps", "guard", "demo", "--channel", "beta", "--off")["changed"] is True
    actions = [e["action"] for e in ws.json("audit", "--app", "demo")["events"]]
    assert actions[-2:] == ["guard.set", "guard.remove"]
    bad = ws.run("apps", "guard", "demo", "--max-rollback-rate", "2x")
    assert bad.rc == 64 and "--max-rollback-rate must look like 2%" in bad.stderr
    # One spelling for percentages: "2" is 2 %, as 25 and 25% are one rollout.
    assert ws.json("apps", "guard", "demo", "--max-rollback-rate", "2", "--min-devices", "3")["guard"]["maxRollbackRatePpm"] == 20000
    ws.ok("apps", "guard", "demo", "--off")
    assert ws.run("apps", "guard", "demo", "--off", "--min-devices", "3").rc == 64


def test_publish_advance_schedules_a_staged_rollout_that_forged_installs_cannot_hurry(ws, start):
    refused = ws.run("publish", "--app", "demo", "--app-version", "2.3", "--rollout", "5", "--advance", "25,50,100",
                     "--every", "1h", ws.write_file("var fix = 2;"))
    assert refused.rc == 2 and "--advance needs a guard on production" in refused.stderr
    assert len(ws.json("list", "--app", "demo")) == 1, "nothing was published"
    ws.ok("apps", "guard", "demo", "--max-rollback-rate", "2%", "--min-devices", "50")
    # A dry run with --advance says what would be scheduled, by the schedule's own rules.
    before = ws.registry_state()
    dry = ws.run("publish", "--app", "demo", "--app-version", "2.3", "--rollout", "5%", "--advance", "25%,50,100", "--every", "1h",
                 "--dry-run", ws.write_file("var fix = 2;"))
    assert dry.rc == 0 and "then 25 %, 50 %, 100 %, at most one step every 3600 s" in dry.stdout, dry
    assert_cli_error(ws.run("publish", "--app", "demo", "--app-version", "2.3", "--rollout", "50", "--advance", "25,100", "--every", "1h",
                            "--dry-run", ws.write_file("var fix = 2;")), 2, "must be above the rollout in force")
    assert ws.registry_state() == before, "a dry run changed the registry"
    server = start(ws, MANY_DEVICES)
    publisher = token_file(ws, ws.token("--app", "demo", "--role", "publisher", "--name", "ci"), "ci.token")
    out = remote(ws, server, publisher, "publish", "--app", "demo", "--app-version", "2.3", "--rollout", "5",
                 "--advance", "25,50,100", "--every", "1h", "--json", ws.write_file("var fix = 2;"))
    assert out.rc == 0, out.stderr
    schedule = json.loads(out.stdout)["schedule"]
    assert schedule["steps"] == [25, 50, 100] and schedule["everySeconds"] == 3600 and schedule["patch"] == 2
    # 300 clean installs are all the evidence a step needs, but its hour has not come.
    learn_targets(ws)
    for i in range(300):
        device(server, f"forged-{i}", ["installed", "confirmed"], patch=2, address=own_address(i))
    settled(server, 600)
    assert [p["rollout"] for p in ws.json("list", "--app", "demo")] == [50, 5]
    (still,) = ws.json("status", "--app", "demo")["apps"][0]["reports"]["schedules"]
    assert still["steps"] == [25, 50, 100]
    events = [e["action"] for e in ws.json("audit", "--app", "demo")["events"]]
    assert events[-1] == "rollout.schedule" and "patch.rollout" not in events
    # The human status says it too, locally and over --server alike.
    line = (f"staged rollout 2.3 production patch 2: next 25 % at {still['nextAt']} (then 50 %, 100 %), "
            "at most one step every 3600 s, each only while the guard sees it healthy")
    assert line in ws.ok("status", "--app", "demo")
    auditor = token_file(ws, ws.token("--app", "demo", "--role", "auditor", "--name", "auditor"), "auditor.token")
    assert line in remote(ws, server, auditor, "status", "--app", "demo").stdout


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
    # Counted off the request path, and only with the receipts PatchClient got with the bundle.
    settled(server, 4)
    figures = ws.json("status", "--app", "demo")["apps"][0]["reports"]["patches"][0]
    assert figures["devices"]["downloaded"] == 2 and figures["devices"]["installed"] == 2
    assert counted(server, "dropped", "receipt") == 0
