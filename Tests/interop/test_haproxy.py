"""Two patchd behind a real haproxy on deploy/haproxy.cfg as shipped (issue 13).

Both patchd serve one registry: in the PostgreSQL pass (HOTPATCH_TEST_REGISTRY=postgres) one
schema that both connect to, as instances on several hosts would; in the SQLite pass one file on
one host, which patchd already shares with another process. What this checks is the front and
the sharing: device affinity on X-Device-ID (one 200, then 429s, whichever instance answers),
python-tuf and PatchClient syncing through it, a publish through one instance served by the
other (how long that takes is printed, not asserted), and `kill -9` of one instance while
devices sync and a publisher publishes through the proxy: the failed syncs are counted against
those in flight at the kill, no acknowledged publish is lost, and `verify` and `audit --verify`
pass after. And the proxy's own per-source limits (issue 19): patchd exempts the proxy from its
per-address limits, so the shipped config enforces them per source address at the front; one
address holding connections and flooding requests cannot keep another address from being
served."""

import hashlib
import http.client
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections import namedtuple

import pytest

from hotpatch_testing import ON_POSTGRES, REPO_ROOT, fetch, repo_updater
from patchd_support import Patchd, poll, remote, request, token_file
from raw_http import RawConn, json_error

HAPROXY = shutil.which("haproxy")
BACKEND = "PostgreSQL" if ON_POSTGRES else "SQLite"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The shipped per-source limits, read from deploy/haproxy.cfg's presetenv lines (each a default
# the environment overrides).
CONFIG = REPO_ROOT / "deploy" / "haproxy.cfg"
LIMITS = {name: int(value) for name, value in
          re.findall(r"^\s*presetenv (HOTPATCH_HAPROXY_\w+) (\d+)\s*$", CONFIG.read_text(), re.M)}
assert set(LIMITS) == {"HOTPATCH_HAPROXY_CONN_PER_SRC", "HOTPATCH_HAPROXY_CONN_RATE_PER_SRC",
                       "HOTPATCH_HAPROXY_REQ_RATE_PER_SRC", "HOTPATCH_HAPROXY_IPV6_PREFIX",
                       "HOTPATCH_HAPROXY_CONN_PER_IPV6_56", "HOTPATCH_HAPROXY_CONN_PER_IPV6_48"}, LIMITS
# For a test that is a load test from one address (127.0.0.1, thousands of requests in a few
# seconds): the per-source limits out of the way. Everything else runs on the shipped ones.
UNLIMITED = {name: "100000000" for name in LIMITS if name != "HOTPATCH_HAPROXY_IPV6_PREFIX"}


class Haproxy:
    """haproxy on deploy/haproxy.cfg as shipped, plus a second file that only adds a stats
    socket (in a short directory of its own: a socket path is at most 107 bytes), which the
    tests read the stick table through."""

    def __init__(self, tmp, backends, limits=None):
        self.port = free_port()
        env = {**{k: v for k, v in os.environ.items() if k not in LIMITS}, **(limits or {}),
               "HOTPATCH_PROXY_LISTEN": f"127.0.0.1:{self.port}",
               "PATCHD1": backends[0].url.split("//")[1], "PATCHD2": backends[1].url.split("//")[1]}
        self.log = open(tmp / "haproxy.log", "wb")
        assert HAPROXY, "haproxy must be installed: make test installs it"
        self.stats_dir = tempfile.mkdtemp(prefix="hx-")
        self.stats = os.path.join(self.stats_dir, "stats.sock")
        stats_cfg = tmp / "haproxy-stats.cfg"
        stats_cfg.write_text(f"global\n    stats socket {self.stats} mode 600 level operator\n")
        self.proc = subprocess.Popen([HAPROXY, "-db", "-f", str(CONFIG), "-f", str(stats_cfg)], env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{self.port}"
        poll(lambda: self._up(), timeout=10)

    def command(self, line):
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(self.stats)
            s.sendall(line.encode() + b"\n")
            return b"".join(iter(lambda: s.recv(65536), b"")).decode()

    def table_entry(self, address):
        """The frontend's stick-table counters for one source: {"conn_cur": 0, "conn_rate": 8100, ...}."""
        key = address if ":" in address else f"::ffff:{address}"
        out = self.command(f"show table hotpatch key {key}")
        return {name: int(value) for name, value in re.findall(r"(\w+)\(?\d*\)?=(\d+)", out.split(" key=", 1)[-1])
                if name in ("conn_cur", "conn_rate", "http_req_rate")}

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
        shutil.rmtree(self.stats_dir, ignore_errors=True)


def start_cluster(ws, tmp_path, limits=None):
    ws.create_app("demo")
    ws.publish("demo", "2.3", "first();\n")
    args = ["--trusted-proxy", "127.0.0.1"]
    servers = [Patchd(ws, args=args), Patchd(ws, args=args)]
    try:
        return servers, Haproxy(tmp_path, servers, limits)
    except BaseException:
        for s in servers:
            s.stop()
        raise


@pytest.fixture
def cluster(workspace, tmp_path):
    """The workspace's registry with demo 2.3 patch 1, two patchd on it and haproxy in front
    (on the shipped per-source limits)."""
    servers, proxy = start_cluster(workspace, tmp_path)
    yield workspace, servers, proxy
    proxy.stop()
    for s in servers:
        s.stop()


@pytest.fixture
def loaded_cluster(workspace, tmp_path):
    """The same, for a load test from the one address 127.0.0.1: the per-source limits off."""
    servers, proxy = start_cluster(workspace, tmp_path, UNLIMITED)
    yield workspace, servers, proxy
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

# What a PatchClient sync fails with when, after the kill, its timestamp request moves to the
# instance left and that one serves an older timestamp than the dead one did: it has not yet
# reloaded a publish the other took (within its one-second poll on SQLite; on PostgreSQL the
# change feed makes that milliseconds). The client refuses the rollback, as it must. A 404 for a
# snapshot, targets file or target that metadata from the other instance named is no longer
# among these: the instance catches up before such a 404 (it once answered one at once when
# another miss had caught up less than 50 ms before, and this test failed on it).
LAGGING_INSTANCE = re.compile(r"timestamp metadata version \d+ is older than the trusted version")


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


def test_kill_9_of_one_instance_under_load_fails_only_what_was_in_flight_and_loses_no_publish(loaded_cluster, tmp_path):
    # Every client here is 127.0.0.1, a few thousand requests in 4.5 s: past the shipped
    # per-source request rate, so haproxy runs with those limits off (loaded_cluster).
    ws, servers, proxy = loaded_cluster
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
    # Not the kill: a device whose timestamp request moved to the instance left, which has not
    # loaded the newest publish yet, gets an older timestamp than the one it trusts
    # (LAGGING_INSTANCE). Counted apart, and reported. A PatchClient sync sends X-Device-ID on
    # its timestamp request only, so haproxy spreads its other requests over both instances: a
    # 404 there for what the other instance's metadata named would be a failure (the instance
    # catches up before answering it).
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


# What PatchClient waits for a byte before it gives up on a request (ClientConfiguration.requestTimeout).
DEVICE_TIMEOUT = 20


def timed_check(url, device):
    """A check with the device's own timeout: (status or the error, seconds)."""
    start = time.monotonic()
    conn = http.client.HTTPConnection(url.split("//")[1].split(":")[0], int(url.rsplit(":", 1)[1]), timeout=DEVICE_TIMEOUT)
    try:
        conn.request("GET", "/v1/apps/demo/versions/2.3/patch", headers={"X-Device-ID": device})
        resp = conn.getresponse()
        resp.read()
        outcome = resp.status
    except OSError as error:
        outcome = repr(error)
    finally:
        conn.close()
    return outcome, time.monotonic() - start


def test_a_stopped_instance_costs_devices_seconds_not_their_request(cluster, tmp_path):
    # A hung instance (SIGSTOP: its sockets still accept, nothing answers) is worse than a dead
    # one, which refuses at once: every request haproxy sends it waits for `timeout server`.
    # The shipped timeouts must let haproxy retry such a request on the other instance before
    # the device's own 20 s timeout ends it (with `timeout server 30s` every one of them failed).
    ws, servers, proxy = cluster
    ws.ok("apps", "throttle", "demo", "--min-interval", "0")
    for server in servers:
        poll(lambda: check(server.url, "warm").status == 200 and check(server.url, "warm").status == 200, timeout=5)
    hung = servers[1]
    hung.proc.send_signal(signal.SIGSTOP)
    try:
        stopped_at = time.monotonic()
        results, lock = [], threading.Lock()

        def device(n):
            outcome = timed_check(proxy.url, f"stopped-{n}")
            with lock:
                results.append(("check", *outcome))

        def patchclient(n):
            start = time.monotonic()
            result = ws.run("fetch", "--server", proxy.url, "--app", "demo", "--app-version", "2.3", "--device-id", f"pc-stopped-{n}",
                            "--root", ws.root_file("demo"), "--cache", tmp_path / f"pc-{n}", "--force", "--json",
                            "--timeout", str(DEVICE_TIMEOUT), registry=False)
            with lock:
                results.append(("patchclient", result.rc == 0 and json.loads(result.stdout)["outcome"] == "updated" and 200 or result.stderr,
                                time.monotonic() - start))

        threads = [threading.Thread(target=device, args=(n,)) for n in range(24)]
        threads += [threading.Thread(target=patchclient, args=(n,)) for n in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        # Once the health checks have taken it out, nothing is sent to it: answers are immediate.
        out_at = poll(lambda: "DOWN" in proxy.command("show stat").split("patchd2,")[1].split("\n")[0] and time.monotonic(),
                      timeout=15, interval=0.2)
        after = [timed_check(proxy.url, f"after-{n}") for n in range(10)]
    finally:
        hung.proc.send_signal(signal.SIGCONT)
    slow = sorted(seconds for _kind, _outcome, seconds in results)
    print(f"\n[{BACKEND}] patchd 2 stopped: {len(results)} device requests, slowest {slow[-1]:.2f} s, "
          f"{sum(s > 1 for s in slow)} over 1 s (retried on patchd 1); out of rotation {out_at - stopped_at:.1f} s after "
          f"the stop; then {max(s for _o, s in after) * 1000:.0f} ms at most")
    failed = [r for r in results if r[1] != 200]
    assert not failed, failed
    assert slow[-1] < DEVICE_TIMEOUT, slow
    assert any(s > 1 for s in slow), "no request reached the stopped instance: the test proves nothing"
    assert all(o == 200 for o, _s in after) and max(s for _o, s in after) < 1, after


# -- the proxy's per-source limits (issue 19) -------------------------------------------------

CHECK = "/v1/apps/demo/versions/2.3/patch"
HALF = b"GET /healthz HTTP/1.1\r\nHost: x\r\n"  # a head never finished (the proxy waits for it)


def get(path, device=None):
    lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1"] + ([f"X-Device-ID: {device}"] if device else [])
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def state(conn):
    """'open', or 'closed' if the proxy closed (or reset) it; nothing is read off an open one."""
    conn.sock.setblocking(False)  # a socket with a timeout would wait for something to read
    try:
        data = conn.sock.recv(1, socket.MSG_PEEK)
        return "closed" if data == b"" else "open"
    except BlockingIOError:
        return "open"
    except (ConnectionResetError, BrokenPipeError):
        return "closed"


def closed_unread(url, source):
    """Whether a new connection from SOURCE is closed by the proxy without an answer (the reset
    can arrive before connect() returns)."""
    try:
        conn = RawConn(url, source=source, timeout=5)
    except ConnectionResetError:
        return True
    with conn:
        conn.send(get("/healthz"))
        return conn.response(2) is None and conn.closed


class Prober:
    """Another address's devices while the flood runs: one probe every 50 ms, /healthz and a
    device check in turn, each on a new connection, answered within `timeout` or failed."""

    def __init__(self, url, source, timeout=5.0):
        self.url, self.source, self.timeout = url, source, timeout
        self.results, self.stop = [], threading.Event()  # (what, status or error, seconds)
        self.thread = threading.Thread(target=self.run, name="prober")

    def run(self):
        n = 0
        while not self.stop.is_set():
            what, data = ("healthz", get("/healthz")) if n % 2 == 0 else ("check", get(CHECK, f"probe-{n}"))
            started = time.monotonic()
            try:
                with RawConn(self.url, source=self.source, timeout=self.timeout) as conn:
                    conn.send(data)
                    resp = conn.response(self.timeout - (time.monotonic() - started))
                    outcome = resp.status if resp else "no answer"
            except OSError as error:
                outcome = repr(error)
            self.results.append((what, outcome, time.monotonic() - started))
            n += 1
            self.stop.wait(0.05)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=30)


def p99(seconds):
    ordered = sorted(seconds)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def test_one_address_cannot_shut_others_out_through_the_proxy(cluster):
    """The issue's attack through haproxy: 8,100 connections from one address (more than the
    proxy's maxconn of 8000), each sending half a head and holding on, then a flood of checks
    on a keep-alive connection from another. patchd cannot refuse either (the proxy is exempt
    from its per-address limits and its per-IP bucket is off here), so whatever refuses them is
    the proxy. Meanwhile a third address's devices must all be answered."""
    ws, servers, proxy = cluster
    conn_limit, rate_limit = LIMITS["HOTPATCH_HAPROXY_CONN_PER_SRC"], LIMITS["HOTPATCH_HAPROXY_REQ_RATE_PER_SRC"]
    ws.ok("apps", "throttle", "demo", "--min-interval", "0", "--ip-rate", "off")
    for server in servers:  # both instances serve the new throttle before the flood starts
        poll(lambda: check(server.url, "warm").status == 200 and check(server.url, "warm").status == 200, timeout=5)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4096:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))

    held, batch, attempts, refused_at_connect, connect_errors = [], [], 0, 0, {}
    flood_statuses, throttled = [], None
    try:
        with Prober(proxy.url, "127.0.0.3") as prober:
            time.sleep(0.3)  # a few probes before the flood
            # 1. Connections: 8,100 attempts from 127.0.0.2 in batches of 300; after each batch
            # the ones the proxy closed are dropped (so this process holds at most the limit
            # plus a batch), the open ones kept.
            started = time.monotonic()
            while attempts < 8100 and time.monotonic() - started < 30:
                batch = []
                for _ in range(min(300, 8100 - attempts)):
                    attempts += 1
                    try:
                        conn = RawConn(proxy.url, source="127.0.0.2", timeout=3)
                    except OSError as error:  # reset by the proxy before connect() returned
                        refused_at_connect += 1
                        connect_errors[type(error).__name__] = connect_errors.get(type(error).__name__, 0) + 1
                        continue
                    batch.append(conn)
                    conn.send(HALF)
                time.sleep(0.05)
                for conn in batch:
                    if state(conn) == "open":
                        held.append(conn)
                    else:
                        conn.close()
                batch = []
            opening_s = time.monotonic() - started
            time.sleep(0.3)  # any connection the proxy had not yet looked at has been by now
            still_open = [conn for conn in held if state(conn) == "open"]
            holding = proxy.table_entry("127.0.0.2")

            # 2. Requests: device checks from 127.0.0.4 on one keep-alive connection, as fast as
            # the proxy answers, until 200 in a row were refused (at most 5 s, 5,000 requests).
            flood_started = time.monotonic()
            with RawConn(proxy.url, source="127.0.0.4", timeout=5) as conn:
                refused_in_a_row = 0
                while refused_in_a_row < 200 and len(flood_statuses) < 5000 and time.monotonic() - flood_started < 5:
                    if not conn.send(get(CHECK, f"flood-{len(flood_statuses)}")):
                        break
                    resp = conn.response(5)
                    if resp is None:
                        break
                    flood_statuses.append(resp.status)
                    if resp.status == 429:
                        throttled = throttled or resp
                        refused_in_a_row += 1
                    else:
                        refused_in_a_row = 0
            flood_s = time.monotonic() - flood_started
            flooding = proxy.table_entry("127.0.0.4")
            time.sleep(0.3)  # a few probes after the flood
    finally:
        for conn in held + batch:
            conn.close()

    probes = prober.results
    answered = [r for r in probes if r[1] == 200]
    failed = [r for r in probes if r[1] != 200]
    latencies = [r[2] for r in answered]
    passed = flood_statuses.index(429) if 429 in flood_statuses else len(flood_statuses)
    print(f"\n[{BACKEND}] one address through haproxy: {attempts} connection attempts from 127.0.0.2 in "
          f"{opening_s:.2f} s, {len(still_open)} held open (limit {conn_limit}), "
          f"the other {attempts - len(still_open)} closed by the proxy at once ({refused_at_connect} of them already during "
          f"connect: {connect_errors}); "
          f"{len(flood_statuses)} checks from 127.0.0.4 in {flood_s:.2f} s: {passed} answered before the first 429 "
          f"(limit {rate_limit} per 10 s), {flood_statuses.count(429)} refused 429, "
          f"statuses {sorted(set(flood_statuses))}; proxy's table: 127.0.0.2 {holding}, 127.0.0.4 {flooding}")
    if latencies:
        print(f"[{BACKEND}] probes from 127.0.0.3 meanwhile: {len(answered)} of {len(probes)} answered, "
              f"p50 {1000 * sorted(latencies)[len(latencies) // 2]:.1f} ms, p99 {1000 * p99(latencies):.1f} ms, "
              f"worst {1000 * max(latencies):.1f} ms; failed: {failed}")

    # The other address was served throughout: every probe answered 200.
    assert len(probes) >= 18 and not failed, failed
    assert {r[0] for r in answered} == {"healthz", "check"}
    # One address holds the per-source limit, never more: the rest closed unread.
    assert len(still_open) == conn_limit, (len(still_open), conn_limit)
    assert attempts == 8100 and holding["conn_cur"] == conn_limit, holding
    # The flood: the first `rate_limit` answered, then patchd's own 429, from the proxy.
    assert passed >= rate_limit and all(status == 200 for status in flood_statuses[:passed]), flood_statuses[:passed + 5]
    # haproxy's rate is a sliding 10 s window: within a few seconds of a fresh start at most
    # the limit plus its share of those seconds get through.
    assert flood_statuses.count(200) <= rate_limit * (1 + flood_s / 10) + 1, flood_statuses.count(200)
    assert throttled is not None and json_error(throttled, 429)["code"] == "throttled"
    assert throttled.header("retry-after") == "10" and throttled.header("cache-control") == "no-store", throttled.headers
    assert "proxy limit" in json_error(throttled, 429)["message"]
    assert flooding["http_req_rate"] >= len(flood_statuses), flooding
    # 127.0.0.2 has let go of every connection, but it tried 8,100 in a few seconds: past the
    # new-connection rate, so its next one is still closed unread, while a new address is served.
    assert opening_s < 8, f"8,100 attempts took {opening_s:.1f} s: the 10 s rate window no longer holds them all"
    poll(lambda: proxy.table_entry("127.0.0.2")["conn_cur"] == 0, timeout=3)
    assert proxy.table_entry("127.0.0.2")["conn_rate"] > LIMITS["HOTPATCH_HAPROXY_CONN_RATE_PER_SRC"]
    assert closed_unread(proxy.url, "127.0.0.2")
    with RawConn(proxy.url, source="127.0.0.5", timeout=5) as other:
        other.send(get("/healthz"))
        resp = other.response(5)
        assert resp is not None and resp.status == 200, resp
