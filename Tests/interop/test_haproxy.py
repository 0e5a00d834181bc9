"""Two patchd behind a real haproxy on deploy/haproxy.cfg as shipped (issue 13).

Both patchd serve one registry: in the PostgreSQL pass (HOTPATCH_TEST_REGISTRY=postgres) one
schema that both connect to, as instances on several hosts would; in the SQLite pass one file on
one host, which patchd already shares with another process. What this checks is the front and
the sharing: device affinity on X-Device-ID (one 200, then 429s, whichever instance answers),
python-tuf and PatchClient syncing through it, a publish through one instance served by the
other (how long that takes is printed, not asserted), and `kill -9` of one instance while
devices sync and a publisher publishes through the proxy: the failed syncs are counted against
those in flight at the kill, no acknowledged publish is lost, and `verify` and `audit --verify`
pass after."""

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections import namedtuple

import pytest

from hotpatch_testing import ON_POSTGRES, REPO_ROOT, fetch, repo_updater
from patchd_support import Patchd, poll, remote, request, token_file

HAPROXY = shutil.which("haproxy")
BACKEND = "PostgreSQL" if ON_POSTGRES else "SQLite"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Haproxy:
    def __init__(self, tmp, backends):
        self.port = free_port()
        env = {**os.environ, "HOTPATCH_LISTEN": f"127.0.0.1:{self.port}",
               "PATCHD1": backends[0].url.split("//")[1], "PATCHD2": backends[1].url.split("//")[1]}
        self.log = open(tmp / "haproxy.log", "wb")
        assert HAPROXY, "haproxy must be installed: make test installs it"
        self.proc = subprocess.Popen([HAPROXY, "-db", "-f", str(REPO_ROOT / "deploy" / "haproxy.cfg")], env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{self.port}"
        poll(lambda: self._up(), timeout=10)

    def _up(self):
        try:
            return request(self.url, "/healthz").status == 200
        except OSError:
            return False

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture
def cluster(workspace, tmp_path):
    """The workspace's registry with demo 2.3 patch 1, two patchd on it and haproxy in front."""
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "first();\n")
    args = ["--trusted-proxy", "127.0.0.1"]
    servers = [Patchd(ws, args=args), Patchd(ws, args=args)]
    proxy = Haproxy(tmp_path, servers)
    yield ws, servers, proxy
    proxy.stop()
    for s in servers:
        s.stop()


def check(url, device):
    return request(url, "/v1/apps/demo/versions/2.3/patch", headers={"X-Device-ID": device})


def checks_answered(server):
    """How many checks this instance answered 200 (its /metrics)."""
    for line in request(server.url, "/metrics").body.decode().splitlines():
        if line.startswith('hotpatch_requests_total{route="check",status="200"}'):
            return int(line.split()[-1])
    return 0


def patchclient_fetch(ws, url, device, cache, root):
    """`patchctl fetch` (the Swift PatchClient) against `url`: (exit code, parsed JSON or stderr)."""
    result = ws.run("fetch", "--server", url, "--app", "demo", "--app-version", "2.3", "--device-id", device,
                    "--root", root, "--cache", cache, "--force", "--json", "--timeout", "10", registry=False)
    try:
        return result.rc, json.loads(result.stdout)
    except ValueError:
        return result.rc, result.stderr


def test_a_device_gets_one_200_then_429s_whichever_instance_answers(cluster):
    ws, servers, proxy = cluster
    for n in range(40):
        device = f"phone-{n}"
        assert check(proxy.url, device).status == 200
        again = check(proxy.url, device)
        assert again.status == 429 and again.headers.get("X-Throttle-Scope") == "device", (device, again.status)
    # Both instances took devices: the hash spread them, and each kept its own devices' intervals.
    answered = [checks_answered(s) for s in servers]
    print(f"\n[{BACKEND}] 40 devices through haproxy: {answered[0]} first checks answered by patchd 1, {answered[1]} by patchd 2")
    assert all(answered) and sum(answered) == 40, answered
    # Without the proxy's affinity the interval would be per instance: proof that it matters.
    assert check(servers[0].url, "direct").status == 200 and check(servers[1].url, "direct").status == 200


def test_python_tuf_and_patchclient_sync_through_it(cluster, tmp_path):
    ws, _servers, proxy = cluster
    updater = repo_updater(f"{proxy.url}/v1/apps/demo", tmp_path / "tuf", ws.root_json("demo"))
    updater.refresh()
    assert fetch(updater, "2.3/1/main.js")[1] == b"first();\n"
    rc, fetched = patchclient_fetch(ws, proxy.url, "pc-1", tmp_path / "c", ws.root_file("demo"))
    assert rc == 0 and fetched["outcome"] == "updated" and fetched["patch"] == 1, fetched


def test_a_publish_through_one_instance_is_served_by_the_other(cluster, tmp_path):
    ws, (a, b), _proxy = cluster
    token = token_file(ws, ws.token("--app", "demo"), "publisher")
    result = remote(ws, a, token, "publish", "--app", "demo", "--app-version", "2.3", "--json", ws.write_file("second();\n"))
    acknowledged = time.monotonic()
    assert result.rc == 0, result
    assert json.loads(result.stdout)["patch"] == 2
    # B never saw the request: it learns of the commit from the database (NOTIFY, or its
    # one-second reload until that lands). Each probe is a new device, so none is throttled.
    probes = iter(range(1_000_000))
    served = poll(lambda: check(b.url, f"probe-{next(probes)}").headers.get("X-Patch-Number") == "2" and time.monotonic(),
                  timeout=5, interval=0.005)
    print(f"\n[{BACKEND}] patch 2 published through patchd A: served by patchd B {1000 * (served - acknowledged):.0f} ms "
          f"after A acknowledged it ({next(probes)} probes)")
    # And both clients get it from B directly.
    rc, fetched = patchclient_fetch(ws, b.url, "pc-b", tmp_path / "c", ws.root_file("demo"))
    assert rc == 0 and fetched["outcome"] == "updated" and fetched["patch"] == 2, fetched
    updater = repo_updater(b.app_url("demo"), tmp_path / "tuf", ws.root_json("demo"))
    updater.refresh()
    assert fetch(updater, "2.3/2/main.js")[1] == b"second();\n"


Sync = namedtuple("Sync", "kind start end ok detail")

# What a PatchClient sync fails with when its requests reach an instance that is behind the one
# that answered its timestamp (see the kill test).
LAGGING_INSTANCE = re.compile(r"HTTP 404 for \d+\.(?:snapshot|targets)\.json|/targets/\S+ exceeds \d+ bytes"
                              r"|HTTP 404 for \S+/targets/\S+\.main\.js"  # a target's 404, as PatchClient words it since ee05e1d
                              r"|timestamp metadata version \d+ is older than the trusted version")


class Load:
    """Clients syncing through the proxy in a loop until stopped: every sync is recorded with
    its start and end, so the failures can be set against what was in flight at the kill."""

    def __init__(self):
        self.syncs, self.lock, self.stop = [], threading.Lock(), threading.Event()
        self.threads = []

    def loop(self, kind, sync):
        def run():
            n = 0
            while not self.stop.is_set():
                start = time.monotonic()
                try:
                    ok, detail = sync(n)
                except OSError as error:  # the proxy closed the connection on us
                    ok, detail = False, repr(error)
                with self.lock:
                    self.syncs.append(Sync(kind, start, time.monotonic(), ok, detail))
                n += 1
        self.threads.append(threading.Thread(target=run, name=kind))

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)


def test_kill_9_of_one_instance_under_load_fails_only_what_was_in_flight_and_loses_no_publish(cluster, tmp_path):
    ws, servers, proxy = cluster
    ws.ok("apps", "throttle", "demo", "--min-interval", "0", "--ip-rate", "off")
    for server in servers:  # both instances have the new throttle: a device may check again at once
        poll(lambda: check(server.url, "warm").status == 200 and check(server.url, "warm").status == 200, timeout=5)
    root = ws.root_file("demo")
    token = ws.token("--app", "demo", "--name", "publisher")
    load = Load()

    def device_check(index):
        # A device's check: the bundle (or 204) from whichever instance its ID hashes to.
        def sync(n):
            resp = check(proxy.url, f"load-{index}-{n % 50}")
            return resp.status == 200 and resp.headers.get("X-Patch-Number") is not None, resp.status
        return sync

    def patchclient(index):
        # The Swift PatchClient's full sync (timestamp, snapshot, targets, bundle) in its own cache.
        def sync(n):
            rc, out = patchclient_fetch(ws, proxy.url, f"pc-{index}", tmp_path / f"pc-{index}", root)
            return rc == 0 and out.get("outcome") in ("updated", "unchanged"), out
        return sync

    acknowledged, refused = {}, []

    def publish(n):
        # One publish a ~0.25 s through the proxy (under the per-token limit of 30 a minute).
        body = f"load.publish({n});\n".encode()
        time.sleep(0.25)
        resp = request(proxy.url, "/v1/apps/demo/patches?appVersion=2.3", "POST",
                       headers={"Authorization": f"Bearer {token}"}, body=body)
        if 200 <= resp.status < 300:
            acknowledged[hashlib.sha256(body).hexdigest()] = json.loads(resp.body)["patch"]
        else:
            refused.append(resp.status)
        return 200 <= resp.status < 300, resp.status

    for i in range(4):
        load.loop("check", device_check(i))
    for i in range(2):
        load.loop("patchclient", patchclient(i))
    load.loop("publish", publish)
    load.start()
    time.sleep(1.5)
    before_kill = time.monotonic()
    servers[1].proc.send_signal(signal.SIGKILL)
    after_kill = time.monotonic()
    time.sleep(3)
    load.finish()

    syncs = [s for s in load.syncs if s.kind != "publish"]
    in_flight = [s for s in syncs if s.start < after_kill and s.end > before_kill]
    failed = [s for s in syncs if not s.ok]
    # Not the kill: a PatchClient sync sends X-Device-ID on its timestamp request only, so
    # haproxy spreads its other requests over both instances, and one that has not yet loaded
    # the latest publish answers 404 for the N.snapshot.json or target the other's timestamp
    # named (PatchClient reports a target's 404 as "server answered HTTP 404 for URL", or
    # once did as "exceeds N bytes"), or serves an
    # older timestamp than the one the client trusts. Counted apart, and reported.
    behind = [s for s in failed if s.kind == "patchclient" and LAGGING_INSTANCE.search(str(s.detail))]
    by_kill = [s for s in failed if s not in behind]
    by_kill_later = [s for s in by_kill if s not in in_flight]
    publishes = [s for s in load.syncs if s.kind == "publish"]
    for kind in ("check", "patchclient"):
        of_kind = [s for s in syncs if s.kind == kind]
        print(f"\n[{BACKEND}] kill -9 under load, {kind} syncs: {len(of_kind)} made, "
              f"{sum(not s.ok for s in of_kind)} failed, {sum(s in in_flight for s in of_kind)} in flight at the kill", end="")
    print(f"\n[{BACKEND}] failed syncs: {len(failed)}: {len(by_kill)} by the kill (of {len(in_flight)} in flight at it; "
          f"{len(by_kill_later)} not in flight), {len(behind)} by a sync reaching an instance behind the other; "
          f"publishes: {len(acknowledged)} acknowledged, {len(refused)} refused {refused}, "
          f"{len(publishes) - len(acknowledged) - len(refused)} cut off")
    for s in failed:
        print(f"  failed {s.kind} sync {s.start - before_kill:+.3f}..{s.end - before_kill:+.3f} s from the kill: {s.detail}")
    assert sum(s.kind == "check" for s in syncs) > 50 and sum(s.kind == "patchclient" for s in syncs) > 2
    # haproxy retries a failed GET on the other instance (retry-on, redispatch): only a sync
    # caught mid-answer by the kill may fail, never one that started after it.
    assert len(by_kill) <= len(in_flight), by_kill
    assert not by_kill_later, by_kill_later
    assert acknowledged, "no publish was acknowledged"

    # Every publish that got its 2xx is in the registry under the number it was given.
    stored = {p["sha256"]: p["patch"] for p in ws.json("list", "--app", "demo")}
    lost = {sha: n for sha, n in acknowledged.items() if stored.get(sha) != n}
    assert not lost, f"acknowledged publishes missing after the kill: {lost}"
    print(f"[{BACKEND}] all {len(acknowledged)} acknowledged publishes listed after the kill ({len(stored)} patches in all)")
    numbers = sorted(stored.values())
    assert numbers == list(range(1, len(numbers) + 1)), "patch numbers have a gap or a duplicate"
    audit = ws.run("audit", "--verify")
    assert audit.rc == 0, audit.stdout + audit.stderr
    verify = ws.run("verify", "--server", servers[0].url, "--app", "demo", "--root", root, registry=False)
    assert verify.rc == 0, verify.stdout + verify.stderr
    export = ws.export("demo")
    assert ws.run("verify", "--repo", export, "--root", root, "--app", "demo", registry=False).rc == 0
