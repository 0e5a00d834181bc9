#!/usr/bin/env python3
"""`make bench` (issue 5): hotpatch against nginx, OpenSSL and python-tuf, measured in one run.

    python3 bench/bench.py run [--rows 7a,10] [--command TEXT] [--doc PATH | --no-doc]
    python3 bench/bench.py render [--doc PATH] RESULTS.json [MORE.json ...]
    python3 bench/bench.py list | selftest

`run` measures every row (or only --rows) and writes bench/results/YYYYMMDD-HHMMSS.json: per
row its figures, its reference measured in the same run, the ratios, the goals with whether
they were met, the notes the run added, and the machine's load around the measurement. A
full run also renders docs/BENCHMARKS.md (the generated section only; the hand-written
sections after it stay) and copies the JSON to bench/results/published.json, which the
document names. The table goes to stdout, progress to stderr.

`render` turns results into the markdown section (later files win for a row measured in
both). Timing goals are reported, never asserted: the exit status is non-zero only when a
row failed to run (a crash or a helper that failed); a row whose tool is missing is recorded
as skipped with the reason and the run still renders.

Stdlib only. Expects what `make bench` provides: .build/release/{patchd,patchctl,hotpatch-bench},
.venv with python-tuf (`make venv`, for bench/python_client.py and the other helpers), wrk,
nginx, haproxy, openssl on PATH, hyperfine (optional: a note of row 7), and PostgreSQL 15
(rows 14-16 start their own cluster with scripts/pg-test-cluster.sh).

Environment: BENCH_BUDGET (seconds for the whole run, 480: the large registry of row 9 is
seeded for what is left of it), BENCH_WRK_SECONDS (5), BENCH_NOISY_CORES (0.5).
"""
import argparse
import datetime
import json
import os
import queue
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import string
import subprocess
import sys
import tempfile
import threading
import time
import types
from http.client import HTTPConnection
from urllib.parse import urlsplit

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(REPO, ".build", "release")
PY = os.path.join(REPO, ".venv", "bin", "python")
RESULTS = os.path.join(REPO, "bench", "results")
DOC = os.path.join(REPO, "docs", "BENCHMARKS.md")
LUA = os.path.join(REPO, "bench", "distinct-devices.lua")
PACED = os.path.join(REPO, "bench", "paced.lua")
BUNDLE = os.path.join(REPO, "patches", "demo", "2.3", "main.js")
BEGIN = "<!-- bench.py render: begin (generated from bench/results/*.json; edit bench/bench.py, not this section) -->"
END = "<!-- bench.py render: end -->"
GOAL_US = 20000          # the publish goal: 20 ms median
GOAL_P99_US = 2000000    # the revoke goal: p99 2 s


class Failed(Exception):
    """A row could not be measured (a helper failed, a server did not start)."""


# -- the machine -------------------------------------------------------------------------------

def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def busy_cores(seconds=1.0):
    """CPU cores busy over SECONDS (from /proc/stat). Sampled before a measurement, while
    nothing of ours is running (our servers idle): this is the rest of the machine's load."""
    def read():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        return v[3] + v[4], sum(v)
    i0, t0 = read()
    time.sleep(seconds)
    i1, t1 = read()
    return round((1 - (i1 - i0) / max(1, t1 - t0)) * os.cpu_count(), 2)


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = int(next(l for l in f if l.startswith("MemTotal:")).split()[1])
    return {"nproc": os.cpu_count(), "cpu": cpu, "kernel": os.uname().release, "mem_gb": round(mem_kb / 1048576)}


def source_rev():
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        return (rev or "unknown") + (" plus uncommitted changes in the working tree" if dirty else "")
    except OSError:
        return "unknown"


def first_line(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
        return ((p.stdout or "") + (p.stderr or "")).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return None


# -- statistics and parsing -----------------------------------------------------------------------

def ratio(a, b):
    return None if a is None or b is None or float(b) == 0 else float(a) / float(b)


def pooled(kind, outputs):
    """median or p95 of every times_us of hotpatch-bench publish outputs (p95: nearest rank)."""
    t = sorted(x for o in outputs for x in o["times_us"])
    return round(statistics.median(t)) if kind == "median" else t[min(len(t) - 1, int(len(t) * 0.95))]


def best(fn, field, objects):
    values = [o.get(field) for o in objects if o.get(field) is not None]
    return fn(values) if values else None


def to_ms(x):
    v = float(re.match(r"[0-9.]+", x).group(0))
    if x.endswith("us"):
        return v / 1000
    if x.endswith("ms"):
        return v
    if x.endswith("s"):
        return v * 1000
    return v


def parse_wrk(text):
    """wrk --latency output: req/s, p50/p99 ms, MB/s (2^20 B; wrk's units are binary), non-2xx/3xx."""
    def field(pattern):
        m = re.search(pattern, text, re.M)
        return m.group(1) if m else None
    mb = field(r"^Transfer/sec:\s+(\S+)")
    v = float(re.match(r"[0-9.]+", mb).group(0))
    if mb.endswith("GB"):
        v *= 1024
    elif mb.endswith("KB"):
        v /= 1024
    elif not mb.endswith("MB"):
        v /= 1048576
    bad = field(r"Non-2xx or 3xx responses:\s+(\d+)")
    return {"rps": float(field(r"^Requests/sec:\s+(\S+)")), "p50": to_ms(field(r"^\s+50%\s+(\S+)")),
            "p99": to_ms(field(r"^\s+99%\s+(\S+)")), "mbps": float(f"{v:.1f}"), "bad": int(bad or 0)}


# -- processes -----------------------------------------------------------------------------------

def say(text):
    print(f"bench [{int(time.monotonic() - CTX.t0):3d}s]: {text}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(cmd, what=None, env=None, timeout=None, text=True):
    """Runs CMD to the end; its stdout, or Failed with its stderr."""
    p = subprocess.run(cmd, capture_output=True, text=text, cwd=REPO, timeout=timeout,
                       env=None if env is None else {**os.environ, **env})
    if p.returncode != 0:
        raise Failed(f"{what or os.path.basename(cmd[0])} failed (exit {p.returncode}): {(p.stderr or p.stdout)[-2000:]}")
    return p.stdout


def run_json(cmd, what=None, env=None):
    return json.loads(run(cmd, what, env))


def helper(script, *args):
    """A bench/*.py helper with the release binaries, in the venv; its one JSON object."""
    return run_json([PY, os.path.join(REPO, "bench", script), *map(str, args)], f"bench/{script}",
                    env={"PATCHCTL": f"{BIN}/patchctl", "PATCHD": f"{BIN}/patchd"})


def http(url, headers=None, method="GET"):
    """(status, headers, body); no exception for any status."""
    u = urlsplit(url)
    c = HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        c.request(method, u.path + (f"?{u.query}" if u.query else ""), headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def body(url, headers=None):
    status, _, data = http(url, headers)
    if status >= 400:
        raise Failed(f"{url} answered {status}")
    return data


def etag(url, headers=None, method="GET"):
    status, h, _ = http(url, headers, method)
    if status >= 400 or not h.get("etag"):
        raise Failed(f"no ETag from {url} ({status})")
    return h["etag"]


def same_body(a, b, headers=None):
    if body(a, headers) != body(b):
        raise Failed(f"patchd ({a}) and nginx ({b}) answer different bytes")


def stop(proc):
    """SIGTERM, up to 5 s to exit, then SIGKILL."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class Ctx:
    """One run: its directory, what it started, the measurements rows share."""

    def __init__(self, wrk_s, budget):
        self.t0 = time.monotonic()
        self.wrk_s, self.budget = wrk_s, budget
        self.work = tempfile.mkdtemp(prefix="hotpatch-bench.")
        os.chmod(self.work, 0o755)                # nginx workers read the exported site
        self.procs = []                           # everything started here, stopped at the end
        self.scoped = []                          # servers of the current phase
        self.cache = {}                           # measurement name -> result or Failed
        self.loads = {}                           # measurement name -> its load record
        self.used = None                          # the measurements the running row used
        self.pg_dir = None
        self.client_tmp = None

    def elapsed(self):
        return time.monotonic() - self.t0

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def once(self, name, fn):
        """A measurement shared by rows (7a and 7b come from the same rounds): run once, with
        the load sampled around it; a failure is remembered for every row that needs it."""
        if self.used is not None:
            self.used.append(name)
        if name not in self.cache:
            before, busy = loadavg(), busy_cores()
            t = time.monotonic()
            try:
                self.cache[name] = fn()
            except Failed as e:
                self.cache[name] = e
            except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, subprocess.SubprocessError) as e:
                self.cache[name] = Failed(f"{type(e).__name__}: {e}")   # an unexpected answer: this row fails, the run goes on
            self.loads[name] = {"before": before, "after": loadavg(), "others_busy_cores": busy,
                                "seconds": round(time.monotonic() - t, 1)}
        value = self.cache[name]
        if isinstance(value, Failed):
            raise Failed(str(value))
        return value

    def spawn(self, cmd, scoped=True, **kw):
        p = subprocess.Popen(cmd, cwd=REPO, **kw)
        self.procs.append(p)
        if scoped:
            self.scoped.append(p)
        return p

    def end_phase(self):
        """Stops the servers the finished phase started; the fixtures they backed are gone."""
        for p in reversed(self.scoped):
            stop(p)
        self.scoped = []
        for name in [n for n in self.cache if n.startswith("servers:")]:
            del self.cache[name]

    def cleanup(self):
        for p in reversed(self.procs):
            stop(p)
        # After every patchd: their connections are gone before the cluster stops.
        if self.pg_dir:
            subprocess.run(["bash", f"{REPO}/scripts/pg-test-cluster.sh", "stop", self.pg_dir], capture_output=True)
        shutil.rmtree(self.work, ignore_errors=True)
        if self.client_tmp:
            shutil.rmtree(self.client_tmp, ignore_errors=True)


CTX = None


class Server(types.SimpleNamespace):
    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"


def pinned(cpu):
    """The command prefix that runs a process on CPU `cpu` alone (none: where the kernel likes)."""
    return [] if cpu is None else ["taskset", "-c", str(cpu)]


def start_patchd(label, data, keys, *extra, cpu=None):
    """patchd on a free port; started_ms is spawn to its "patchd listening on" line. DATA is
    a data directory (SQLite) or a postgres:// URL (--database)."""
    where = ["--database", data] if data.startswith(("postgres://", "postgresql://")) else ["--data", data]
    port = free_port()
    err = open(CTX.path(f"{label}.err"), "ab")
    t0 = time.perf_counter()
    p = CTX.spawn([*pinned(cpu), f"{BIN}/patchd", *where, "--keys", keys, "--listen", f"127.0.0.1:{port}", *extra],
                  stdout=subprocess.PIPE, stderr=err)
    lines = queue.Queue()

    def drain():                                 # reads patchd's stdout to its end
        listening = False
        for line in p.stdout:
            if not listening and line.startswith(b"patchd listening on "):
                listening = True
                lines.put(time.perf_counter())
        lines.put(None)
    threading.Thread(target=drain, daemon=True).start()
    try:
        t1 = lines.get(timeout=120)
    except queue.Empty:
        t1 = None
    if t1 is None:
        stop(p)
        with open(CTX.path(f"{label}.err")) as f:
            raise Failed(f"patchd ({label}) did not start: {f.read()[-2000:]}")
    return Server(proc=p, pid=p.pid, port=port, started_ms=round((t1 - t0) * 1000, 1))


def start_nginx(site, name="nginx", workers=2, cpu=None):
    """Configured like a tuned static server: 2 workers (one per core, as patchd's 2 threads),
    no access log, sendfile, keep-alive connections never closed for a request count; /healthz
    answers 200 as patchd's does, for haproxy's checks (row 16). Row 19: 1 worker on `cpu`."""
    d = CTX.path(name)
    os.makedirs(f"{d}/tmp", exist_ok=True)
    port = free_port()
    user = ""
    if os.getuid() == 0:
        import grp
        import pwd
        user = f"user {pwd.getpwuid(0).pw_name} {grp.getgrgid(0).gr_name};"
    conf = f"""worker_processes {workers};
{user}
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    keepalive_requests 100000000;
    keepalive_timeout 120s;
    client_body_temp_path {d}/tmp/client;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {site};
        location = /healthz {{ return 200; }}
    }}
}}
"""
    with open(f"{d}/nginx.conf", "w") as f:
        f.write(conf)
    base = ["nginx", "-p", f"{d}/", "-c", f"{d}/nginx.conf", "-e", f"{d}/error.log"]
    run(base[:1] + ["-q", "-t"] + base[1:], f"nginx -t ({d}/nginx.conf)")
    p = CTX.spawn(pinned(cpu) + base + ["-g", "daemon off;"])
    s = Server(proc=p, pid=p.pid, port=port)
    for _ in range(100):
        try:
            http(s.url + "/")
            return s
        except OSError:
            if p.poll() is not None:
                break
            time.sleep(0.05)
    raise Failed(f"nginx did not start: {open(f'{d}/error.log').read()[-2000:]}")


# wrk is a load test from one address (127.0.0.1, thousands of requests a second): the
# config's per-source limits (600 requests per 10 s, ...) would answer most of it 429, so
# this haproxy runs with them raised out of the way. The shipped defaults stay protective.
HAPROXY_BENCH_LIMITS = {"HOTPATCH_HAPROXY_CONN_PER_SRC": "100000000", "HOTPATCH_HAPROXY_CONN_RATE_PER_SRC": "100000000",
                        "HOTPATCH_HAPROXY_REQ_RATE_PER_SRC": "100000000"}


def start_haproxy(name, server1, server2):
    """deploy/haproxy.cfg as shipped (its addresses come from the environment) in front of two
    HOST:PORT. Returns once /healthz answered 200 through it four times in a row: without
    X-Device-ID haproxy round-robins, so both servers answered."""
    port = free_port()
    env = {**os.environ, **HAPROXY_BENCH_LIMITS, "HOTPATCH_PROXY_LISTEN": f"127.0.0.1:{port}", "PATCHD1": server1, "PATCHD2": server2}
    cfg = f"{REPO}/deploy/haproxy.cfg"
    check = subprocess.run(["haproxy", "-c", "-q", "-f", cfg], env=env, capture_output=True, text=True)
    if check.returncode:
        raise Failed(f"haproxy rejected deploy/haproxy.cfg: {check.stdout}{check.stderr}")
    log = open(CTX.path(f"haproxy-{name}.log"), "ab")
    p = CTX.spawn(["haproxy", "-db", "-f", cfg], env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    s = Server(proc=p, pid=p.pid, port=port)
    up = 0
    for _ in range(100):
        try:
            up = up + 1 if http(s.url + "/healthz")[0] == 200 else 0
        except OSError:
            up = 0
        if up >= 4:
            return s
        if p.poll() is not None:
            break
        time.sleep(0.05)
    raise Failed(f"haproxy ({name}) did not come up")


def rss_mb(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        kb = int(next(l for l in f if l.startswith(field + ":")).split()[1])
    return float(f"{kb / 1024:.1f}")


def tracked_devices(port):
    try:
        for line in body(f"http://127.0.0.1:{port}/metrics").decode().splitlines():
            w = line.split()
            if len(w) >= 2 and w[0] == "hotpatch_tracked_devices":
                return int(float(w[1]))
    except (OSError, Failed):
        pass
    return None


# -- wrk -------------------------------------------------------------------------------------------

# How wrk runs: 2 threads on both cores, beside the server (rows 1-3, 17, 18); row 19 gives it
# one thread on CPU 1 alone, the server being on CPU 0.
WRK_SHARED = ["wrk", "-t2"]
WRK_OWN_CORE = ["taskset", "-c", "1", "wrk", "-t1"]


def run_wrk(args, name, wrk=WRK_SHARED):
    """wrk (WRK_SHARED unless told), 64 connections, --latency, ARGS (which carry -d). Socket
    errors fail the measurement; unexpected statuses are kept for the row to report."""
    try:
        p = subprocess.run(["timeout", "-k", "5", "150", *wrk, "-c64", "--latency", *args],
                           capture_output=True, text=True, cwd=REPO)
    except OSError as e:
        raise Failed(f"wrk: {e}")
    out = p.stdout + p.stderr
    with open(CTX.path(f"wrk-{name}.txt"), "w") as f:
        f.write(out)
    if p.returncode:
        raise Failed(f"wrk failed: {out[-2000:]}")
    if "Requests/sec:" not in out:
        raise Failed(f"wrk printed no result: {out[-2000:]}")
    if "Socket errors" in out:
        raise Failed(f"wrk saw socket errors: {out[-2000:]}")
    return parse_wrk(out)


def compare(label, rounds, hp_args, ng_args, wrk=WRK_SHARED):
    """Alternates the two sides (hotpatch first) after one discarded 1 s warm-up run against
    each; per figure the median over the rounds (bad: the sum). ARGS are word lists in which
    @D@ is the duration and @ROUND@ a name for the run (bench/distinct-devices.lua's prefix)."""
    def args(words, d, rnd):
        return [w.replace("@D@", d).replace("@ROUND@", rnd) for w in words]
    run_wrk(args(hp_args, "-d1s", f"{label}-warmup-hp"), f"{label}-warmup-hp", wrk)
    run_wrk(args(ng_args, "-d1s", f"{label}-warmup-ng"), f"{label}-warmup-ng", wrk)
    runs = {"hp": [], "ng": []}
    for r in range(1, rounds + 1):
        for side, words in (("hp", hp_args), ("ng", ng_args)):
            w = run_wrk(args(words, f"-d{CTX.wrk_s}s", f"{label}-{side}-{r}"), f"{label}-{side}-{r}", wrk)
            runs[side].append(w)
            say(f"  {label} round {r} {side}: {w['rps']} req/s, p50 {w['p50']:.3f} ms, p99 {w['p99']:.3f} ms, {w['mbps']} MB/s")
    out = {}
    for side, ws in runs.items():
        out[side] = {k: statistics.median(w[k] for w in ws) for k in ("rps", "p50", "p99", "mbps")}
        out[side]["bad"] = sum(w["bad"] for w in ws)
        out[side]["rounds"] = ws
    return out


def cmp_figures(c, label):
    """hotpatch, reference, and the notes of a compare() result."""
    notes = [f"**Unexpected statuses**: {label}/{s} had {c[s]['bad']} responses that were neither 2xx nor 3xx (wrk)."
             for s in ("hp", "ng") if c[s]["bad"]]
    return c["hp"], c["ng"], notes


# -- fixtures: the registry everything is served from, the servers of each phase ----------------------

def ctl(*args, data=None, keys=None, database=None, what="patchctl"):
    where = ["--database", database] if database else ["--data", data or CTX.path("registry")]
    return run([f"{BIN}/patchctl", *args, *where, "--keys", keys or CTX.path("keys")], f"patchctl {args[0]} {args[1] if len(args) > 1 else ''}")


def registry():
    def make():
        say(f"setting up the registry in {CTX.work}")
        big = CTX.path("big-main.js")             # the 200 KB target of row 4
        line = b"defineClass('Bench', { f: function(a, b) { return a + b + 42; } }); // padding\n"
        with open(big, "wb") as f:
            f.write((line * (204800 // len(line) + 1))[:204800])
        # demo: min-interval 0 (the same device may check again at once: 304s, client syncs);
        # fleet: min-interval 3600 (every new device is tracked); big: the 200 KB bundle. No IP limit.
        for app in ("demo", "fleet", "big"):
            ctl("apps", "create", app)
        ctl("apps", "throttle", "demo", "--min-interval", "0", "--ip-rate", "off")
        ctl("apps", "throttle", "fleet", "--min-interval", "3600", "--ip-rate", "off")
        ctl("apps", "throttle", "big", "--min-interval", "0", "--ip-rate", "off")
        pub = {app: json.loads(ctl("publish", "--app", app, "--app-version", "2.3", BUNDLE if app != "big" else big, "--json"))
               for app in ("demo", "fleet", "big")}
        with open(CTX.path("demo.root.json"), "w") as f:
            f.write(ctl("apps", "root", "demo"))
        # kill (row 10): the default one-hour interval, three patches of 2.3; row 10b revokes
        # patch 3, then row 10 patch 2.
        ctl("apps", "create", "kill")
        ctl("apps", "throttle", "kill", "--ip-rate", "off")
        ctl("publish", "--app", "kill", "--app-version", "2.3", BUNDLE)
        ctl("publish", "--app", "kill", "--app-version", "2.3", big)
        with open(CTX.path("kill3.js"), "w") as f:
            f.write('defineClass("Kill", {});\n')
        ctl("publish", "--app", "kill", "--app-version", "2.3", CTX.path("kill3.js"))
        # Row 10's second fleet (caches on disk) revokes 2.4 patch 2.
        ctl("publish", "--app", "kill", "--app-version", "2.4", BUNDLE)
        ctl("publish", "--app", "kill", "--app-version", "2.4", big)
        with open(CTX.path("kill.root.json"), "w") as f:
            f.write(ctl("apps", "root", "kill"))
        token = json.loads(ctl("tokens", "create", "--app", "kill", "--name", "bench-kill", "--json"))["token"]
        with open(CTX.path("kill.token"), "w") as f:
            f.write(token + "\n")
        os.chmod(CTX.path("kill.token"), 0o600)
        # The server layout: SITE/v1/apps/APP/{metadata,targets}, the URLs patchd serves.
        for app in ("demo", "fleet", "big"):
            ctl("export", "--app", app, "--out", CTX.path("site"))
        run(["chmod", "-R", "a+rX", CTX.path("site")])
        target = lambda p: f"targets/2.3/{p['patch']}/{p['served']['sha256']}.main.js"
        return types.SimpleNamespace(reg=CTX.path("registry"), keys=CTX.path("keys"), site=CTX.path("site"),
                                     bundle_target=target(pub["fleet"]), big_target=target(pub["big"]),
                                     demo_target_path=pub["demo"]["targetPath"])
    return CTX.once("registry", make)


def main_servers(own_core=False):
    """patchd and nginx on the bench registry, both answering the same bytes (rows 1-4, 7).
    own_core (row 19): a second pair, patchd with one event loop and nginx with one worker,
    both on CPU 0, so that wrk (WRK_OWN_CORE) has CPU 1 to itself."""
    def make():
        g = registry()
        if own_core:
            if (os.cpu_count() or 1) < 2:
                raise Failed("row 19 needs 2 CPUs: the servers on one, wrk on the other")
            hp = start_patchd("own-core", g.reg, g.keys, "--threads", "1", cpu=0)
            ng = start_nginx(g.site, "nginx-own-core", workers=1, cpu=0)
        else:
            hp = start_patchd("main", g.reg, g.keys)
            ng = start_nginx(g.site)
        say(f"patchd on {hp.url} (pid {hp.pid}), nginx on {ng.url} (pid {ng.pid}){', both on CPU 0' if own_core else ''}")
        P, N = hp.url, ng.url
        same_body(f"{P}/v1/apps/demo/metadata/timestamp.json", f"{N}/v1/apps/demo/metadata/timestamp.json")
        same_body(f"{P}/v1/apps/big/{g.big_target}", f"{N}/v1/apps/big/{g.big_target}")
        same_body(f"{P}/v1/apps/demo/versions/2.3/patch", f"{N}/v1/apps/fleet/{g.bundle_target}", {"X-Device-ID": "bench-probe"})
        hp_etag = etag(f"{P}/v1/apps/demo/versions/2.3/patch", {"X-Device-ID": "bench-304"})
        ng_etag = etag(f"{N}/v1/apps/fleet/{g.bundle_target}", method="HEAD")
        if http(f"{P}/v1/apps/demo/versions/2.3/patch", {"X-Device-ID": "bench-304", "If-None-Match": hp_etag})[0] != 304:
            raise Failed(f"patchd does not answer 304 to If-None-Match {hp_etag}")
        if http(f"{N}/v1/apps/fleet/{g.bundle_target}", {"If-None-Match": ng_etag})[0] != 304:
            raise Failed(f"nginx does not answer 304 to If-None-Match {ng_etag}")
        return types.SimpleNamespace(P=P, N=N, hp_etag=hp_etag, ng_etag=ng_etag)
    return CTX.once("servers:own-core" if own_core else "servers:main", make)


def pg():
    """A PostgreSQL cluster of our own (the one `make test` uses, scripts/pg-test-cluster.sh:
    Unix socket only, default durability), removed at the end. Each registry lives in its own
    schema of its one database."""
    def make():
        say("rows 14-16: starting a PostgreSQL cluster (scripts/pg-test-cluster.sh start)")
        CTX.pg_dir = run(["bash", f"{REPO}/scripts/pg-test-cluster.sh", "start"], "scripts/pg-test-cluster.sh start").strip()
        url = run(["bash", "-c", f'eval "$(bash {REPO}/scripts/pg-test-cluster.sh env {CTX.pg_dir})"; echo "$HOTPATCH_TEST_DATABASE"']).strip()
        pg_bin = os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin")
        run([f"{pg_bin}/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", url, "-c", "CREATE SCHEMA serve; CREATE SCHEMA publish"], "creating the schemas")
        say(f"  PostgreSQL in {CTX.pg_dir}")
        return types.SimpleNamespace(url=url, schema=lambda s: f"{url}&options=-csearch_path%3D{s}",
                                     version=first_line([f"{pg_bin}/postgres", "--version"]))
    return CTX.once("pg", make)


def pg_registry():
    """The registry rows 15-16 serve: apps demo and fleet as in the SQLite registry, the same
    bundle, its own keys (so metadata bytes differ from SQLite's, sizes do not)."""
    def make():
        url, keys, site = pg().schema("serve"), CTX.path("pg-keys"), CTX.path("pg-site")
        for app in ("demo", "fleet"):
            ctl("apps", "create", app, database=url, keys=keys)
        ctl("apps", "throttle", "demo", "--min-interval", "0", "--ip-rate", "off", database=url, keys=keys)
        ctl("apps", "throttle", "fleet", "--min-interval", "3600", "--ip-rate", "off", database=url, keys=keys)
        ctl("publish", "--app", "demo", "--app-version", "2.3", BUNDLE, "--json", database=url, keys=keys)
        fleet = json.loads(ctl("publish", "--app", "fleet", "--app-version", "2.3", BUNDLE, "--json", database=url, keys=keys))
        for app in ("demo", "fleet"):
            ctl("export", "--app", app, "--out", site, database=url, keys=keys)
        run(["chmod", "-R", "a+rX", site])
        return types.SimpleNamespace(url=url, keys=keys, site=site,
                                     bundle_target=f"targets/2.3/{fleet['patch']}/{fleet['served']['sha256']}.main.js")
    return CTX.once("pg-registry", make)


# -- the measurements -------------------------------------------------------------------------------

def m_nginx(label, own_core=False):
    """Rows 1-4 and 18: patchd vs nginx on the same bytes; own_core: rows 1-3 as row 19
    runs them (the servers on CPU 0, wrk on CPU 1)."""
    def make():
        s, g, d = main_servers(own_core), registry(), "@D@"
        P, N = s.P, s.N
        wrk, row = (WRK_OWN_CORE, {"ts": "19a", "nm": "19b", "dd": "19c"}) if own_core else (WRK_SHARED, {"ts": "1", "nm": "2", "dd": "3"})
        tag = "own-" if own_core else ""
        if label == "ts":
            say(f"row {row['ts']}: timestamp.json, 3 alternating rounds of {' '.join(wrk)} -c64 -d{CTX.wrk_s}s each")
            return compare(f"{tag}ts", 3, [d, f"{P}/v1/apps/demo/metadata/timestamp.json"], [d, f"{N}/v1/apps/demo/metadata/timestamp.json"], wrk)
        if label == "nm":
            say(f"row {row['nm']}: simple check answered 304 vs nginx 304")
            return compare(f"{tag}nm", 3, [d, "-H", "X-Device-ID:bench-304", "-H", f"If-None-Match:{s.hp_etag}", f"{P}/v1/apps/demo/versions/2.3/patch"],
                           [d, "-H", f"If-None-Match:{s.ng_etag}", f"{N}/v1/apps/fleet/{g.bundle_target}"], wrk)
        if label.startswith("paced"):
            pause = label.removeprefix("paced")  # whole milliseconds between requests, per connection
            say(f"row {PACED_ROWS[pause]}: timestamp.json at the same offered load (64 connections, each waiting {pause} ms before each request), 3 alternating rounds")
            return compare(label, 3, [d, "-s", PACED, f"{P}/v1/apps/demo/metadata/timestamp.json", "--", pause],
                           [d, "-s", PACED, f"{N}/v1/apps/demo/metadata/timestamp.json", "--", pause])
        if label == "dd":
            say(f"row {row['dd']}: simple check with a new X-Device-ID per request vs nginx 200, 5 alternating rounds")
            return compare(f"{tag}dd", 5, [d, "-s", LUA, f"{P}/v1/apps/fleet/versions/2.3/patch", "--", "@ROUND@"],
                           [d, "-s", LUA, f"{N}/v1/apps/fleet/{g.bundle_target}", "--", "@ROUND@"], wrk)
        say("row 4: 200 KB target download")
        return compare("dl", 3, [d, f"{P}/v1/apps/big/{g.big_target}"], [d, f"{N}/v1/apps/big/{g.big_target}"])
    return CTX.once(f"nginx:{'own-core:' if own_core else ''}{label}", make)


REFSERVER = os.path.join(REPO, ".build", "refserver")


def raw_response(url, headers):
    """patchd's whole answer (head and body, as sent) to one GET of URL: what the reference
    server repeats. Read to the end of its Content-Length."""
    u = urlsplit(url)
    with socket.create_connection((u.hostname, u.port), timeout=30) as sock:
        lines = [f"GET {u.path} HTTP/1.1", f"Host: {u.hostname}:{u.port}"] + [f"{k}: {v}" for k, v in headers.items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                raise Failed(f"patchd closed the connection before answering {url}")
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        length = next((int(l.split(b":", 1)[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")), 0)
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        return head + b"\r\n\r\n" + rest[:length]


def start_refserver(label, response):
    """bench/refserver.c on a free port, answering every request with RESPONSE, as many
    threads as patchd has I/O threads (its default: one per core, at least 2)."""
    if not os.path.exists(REFSERVER):
        raise Failed(f"{REFSERVER} is missing (make bench builds it from bench/refserver.c)")
    path = CTX.path(f"ref-{label}.http")
    with open(path, "wb") as f:
        f.write(response)
    p = CTX.spawn([REFSERVER, path, str(max(2, os.cpu_count() or 2))], stdout=subprocess.PIPE)
    line = p.stdout.readline().decode()
    if not line.startswith("listening on "):
        stop(p)
        raise Failed(f"refserver ({label}) did not start: {line!r}")
    port = int(line.split()[-1])
    return Server(proc=p, pid=p.pid, port=port, url=f"http://127.0.0.1:{port}")


def m_reference(label):
    """Rows 17a-c: patchd against a server that parses nothing and writes patchd's own bytes
    (bench/refserver.c), on the requests of rows 1-3, alternating like the nginx rows."""
    def make():
        s, d = main_servers(), "@D@"
        P = s.P
        if label == "ts":
            url, headers, extra = f"{P}/v1/apps/demo/metadata/timestamp.json", {}, []
        elif label == "nm":
            url, headers = f"{P}/v1/apps/demo/versions/2.3/patch", {"X-Device-ID": "bench-304", "If-None-Match": s.hp_etag}
            extra = ["-H", "X-Device-ID:bench-304", "-H", f"If-None-Match:{s.hp_etag}"]
        else:
            url, headers, extra = f"{P}/v1/apps/fleet/versions/2.3/patch", {"X-Device-ID": "bench-ref-probe"}, ["-s", LUA]
        ref = start_refserver(label, raw_response(url, headers))
        path = urlsplit(url).path
        tail = ["--", "@ROUND@"] if label == "dd" else []
        say(f"row 17 ({label}): patchd vs the reference server (bench/refserver.c) on {path}, {3 if label != 'dd' else 5} alternating rounds")
        out = compare(f"ref-{label}", 3 if label != "dd" else 5, [d, *extra, url, *tail], [d, *extra, f"{ref.url}{path}", *tail])
        stop(ref.proc)
        return out
    return CTX.once(f"reference:{label}", make)


def client_tmp():
    """Where simulated devices keep their caches: tmpfs when the machine has /dev/shm (rows 7
    and 10). PatchClient fsyncs what it installs and removes (crash safety); on one disk the
    fsyncs of 1,000 devices queue in its journal, where every phone has its own flash."""
    def make():
        if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
            return tempfile.mkdtemp(prefix="hotpatch-bench.", dir="/dev/shm")
        return CTX.work
    CTX.client_tmp = CTX.once("client-tmp", make)
    return CTX.client_tmp


# Row 7's placements: the client on the server's core (CPU 0), then on the other one. On this
# VM a wakeup across cores costs the waker an interprocessor interrupt, and each sync wakes
# the server once per request: unpinned, a client process's median came out in one of two
# groups depending on where the scheduler had put it (issue 23).
CLIENT_CPUS = (0, 1)
FIRST_SYNCS = 20  # row 7c: processes per client, alternating over CLIENT_CPUS


def m_clients():
    """Row 7: PatchClient vs python-tuf against the same patchd (row 19's: one loop, on CPU 0),
    each client pinned to one core per round, both placements twice, alternating."""
    def make():
        s, g = main_servers(own_core=True), registry()
        # Both clients keep their caches in memory (tmpfs) for the comparison: PatchClient
        # fsyncs what it installs (crash safety) and python-tuf's Updater does not, so on disk
        # the row would time the disk's flushes, not the clients. PatchClient on disk: a note.
        tmp = client_tmp()
        say(f"row 7: client syncs (hotpatch-bench client, bench/python_client.py), 20 runs each, 4 alternating rounds on CPUs {CLIENT_CPUS * 2}, caches in {tmp}")
        root = CTX.path("demo.root.json")
        hp_base = [f"{BIN}/hotpatch-bench", "client", "--server", s.P, "--app", "demo", "--app-version", "2.3", "--root", root]
        py_base = [PY, f"{REPO}/bench/python_client.py", "--server", s.P, "--app", "demo", "--target", g.demo_target_path, "--root", root]
        hp_cmd, py_cmd = hp_base + ["--runs", "20"], py_base + ["--runs", "20"]
        hp, py = [], []
        for r, cpu in enumerate(CLIENT_CPUS * 2, 1):
            hp.append({**run_json(pinned(cpu) + hp_cmd, "hotpatch-bench client", env={"TMPDIR": tmp}), "cpu": cpu})
            py.append({**run_json(pinned(cpu) + py_cmd, "bench/python_client.py", env={"TMPDIR": tmp}), "cpu": cpu})
            say(f"  client round {r} (CPU {cpu}): PatchClient {hp[-1]}, python-tuf {py[-1]}")
        # Row 7c: the first sync of a process (an app launch), each in a process of its own;
        # only the sync is timed, inside the process (not its start, nor python's imports).
        first_hp, first_py = [], []
        for i in range(FIRST_SYNCS):
            cpu = CLIENT_CPUS[i % len(CLIENT_CPUS)]
            first_hp.append(run_json(pinned(cpu) + hp_base + ["--runs", "1", "--only", "cold"], "hotpatch-bench client (first sync)", env={"TMPDIR": tmp}))
            first_py.append(run_json(pinned(cpu) + py_base + ["--runs", "1"], "bench/python_client.py (first sync)", env={"TMPDIR": tmp}))
        say(f"  first syncs of {FIRST_SYNCS} processes each: PatchClient median {statistics.median(r['cold_median_us'] for r in first_hp)} us, "
            f"python-tuf {statistics.median(r['cold_median_us'] for r in first_py)} us")
        disk = run_json(hp_cmd, "hotpatch-bench client (disk)", env={"TMPDIR": CTX.work})
        out = {"tmp": tmp, "hp": hp, "py": py, "first_hp": first_hp, "first_py": first_py, "disk": disk, "fetch_ms": None,
               "tuf": run([PY, "-c", "import tuf; print(tuf.__version__)"]).strip()}
        if shutil.which("hyperfine"):
            # The CLI as a user runs it (process start included): a cold `patchctl fetch`.
            cache = CTX.path("fetch-cache")
            run(["hyperfine", "-N", "--runs", "10", "--warmup", "1", "--export-json", CTX.path("fetch.json"), "--prepare", f"rm -rf {cache}",
                 f"{BIN}/patchctl fetch --server {s.P} --app demo --app-version 2.3 --device-id bench-cli --root {root} --cache {cache} --force --min-interval 0"],
                "hyperfine patchctl fetch")
            with open(CTX.path("fetch.json")) as f:
                out["fetch_ms"] = json.load(f)["results"][0]["median"] * 1000
        return out
    return CTX.once("clients", make)


def m_publish():
    def make():
        say("row 5: publish a 100 KB bundle, 200 plain and 200 encrypted")
        cmd = [f"{BIN}/hotpatch-bench", "publish", "--data", CTX.path("publish"), "--keys", CTX.path("publish-keys"), "--count", "200", "--size", "102400"]
        return {"plain": run_json(cmd, "hotpatch-bench publish"), "encrypted": run_json(cmd + ["--encrypted"], "hotpatch-bench publish --encrypted")}
    return CTX.once("publish", make)


BIG_BYTES = 67108864


def m_crypto():
    """Row 6: openssl speed at two sizes: the same 64 MB buffer hotpatch-bench uses (like for
    like: both stream it from memory; the ratio and the goal use this), and its usual 16 KB
    blocks, which stay in cache, against hotpatch doing the 64 MB in 16 KB calls."""
    def openssl(alg, n):
        out = run(["openssl", "speed", "-evp", alg, "-bytes", str(n), "-seconds", "2"], f"openssl speed -evp {alg} -bytes {n}")
        # its last line: the algorithm and its rate in 1000s of bytes per second ("1403812.41k")
        v = out.strip().splitlines()[-1].split()[-1].rstrip("k")
        return float(f"{float(v) * 1000 / 1048576:.1f}")

    def make():
        say("row 6: crypto throughput (hotpatch-bench crypto --mb 64, openssl speed at 64 MB and 16 KB), 4 alternating rounds")
        hp, ossl = [], {}
        for r in range(1, 5):
            hp.append(run_json([f"{BIN}/hotpatch-bench", "crypto", "--mb", "64"], "hotpatch-bench crypto"))
            line = ""
            for alg in ("sha256", "md5", "aes-256-gcm"):
                for n in (BIG_BYTES, 16384):
                    v = openssl(alg, n)
                    ossl.setdefault(f"{alg}-{n}", []).append(v)
                    line += f" {alg}/{n} {v}"
            say(f"  crypto round {r}: hotpatch {hp[-1]}; openssl MB/s:{line}")
        return {"hp": hp, "openssl": ossl}
    return CTX.once("crypto", make)


def m_memory():
    """Row 8: patchd RSS idle, then after driving distinct devices to 1,000,000 tracked."""
    def make():
        g = registry()
        say("row 8: patchd RSS idle, then driving distinct devices to 1,000,000 tracked (at most 90 s)")
        s = start_patchd("memory", g.reg, g.keys)
        time.sleep(1)
        idle = rss_mb(s.pid)
        before = tracked_devices(s.port)
        w = CTX.spawn(["wrk", "-t2", "-c64", "-d90s", "-s", LUA, f"{s.url}/v1/apps/fleet/versions/2.3/patch", "--", "memory"],
                      stdout=open(CTX.path("wrk-memory.txt"), "w"), stderr=subprocess.STDOUT)
        t, tracked = time.monotonic(), 0
        for _ in range(90):
            time.sleep(1)
            tracked = tracked_devices(s.port) or 0
            if tracked >= 1000000 or w.poll() is not None:
                break
        drive_s = round(time.monotonic() - t)
        stop(w)
        time.sleep(0.5)
        tracked = tracked_devices(s.port) or 0
        out = {"idle_mb": idle, "tracked_before": before or 0, "tracked": tracked, "drive_s": drive_s,
               "rss_mb": rss_mb(s.pid), "hwm_mb": rss_mb(s.pid, "VmHWM")}
        stop(s.proc)
        return out
    return CTX.once("memory", make)


def m_scale():
    """Row 9: a large registry vs a one-app registry, both seeded by hotpatch-bench seed."""
    def make():
        large, lkeys, small, skeys = CTX.path("large"), CTX.path("large-keys"), CTX.path("small"), CTX.path("small-keys")
        run([f"{BIN}/hotpatch-bench", "seed", "--data", small, "--keys", skeys, "--apps", "1", "--versions", "20", "--patches", "5"], "hotpatch-bench seed (small)")
        # Seeding gets what is left of the budget after the rest of row 9 (about 60 s); a seed
        # still running then is stopped (SIGTERM: SQLite's WAL keeps the registry consistent).
        budget = max(20, int(CTX.budget - CTX.elapsed() - 60))
        say(f"row 9: seeding 1000 apps × 20 versions × 5 patches (at most {budget} s)")
        t = time.monotonic()
        seed_out = open(CTX.path("seed-large.json"), "w")
        p = CTX.spawn([f"{BIN}/hotpatch-bench", "seed", "--data", large, "--keys", lkeys, "--apps", "1000", "--versions", "20", "--patches", "5"],
                      stdout=seed_out, stderr=open(CTX.path("seed-large.err"), "w"))
        stopped = False
        while p.poll() is None:
            if time.monotonic() - t >= budget:
                stopped = True
                stop(p)
                break
            time.sleep(0.5)
        if not stopped and p.returncode:
            raise Failed(f"hotpatch-bench seed failed: {open(CTX.path('seed-large.err')).read()[-2000:]}")
        seed_s = round(time.monotonic() - t)
        db = sqlite3.connect(f"{large}/registry.sqlite")
        apps = db.execute("SELECT count(*) FROM apps").fetchone()[0]
        full = db.execute("SELECT count(*) FROM (SELECT app FROM patches GROUP BY app HAVING count(*) = 100)").fetchone()[0]
        patches = db.execute("SELECT count(*) FROM patches").fetchone()[0]
        db.close()
        seed_own_s = None
        if not stopped:
            with open(CTX.path("seed-large.json")) as f:
                seed_own_s = json.load(f).get("seconds")
        say(f"seeded {apps} apps, {patches} patches in {seed_s} s (stopped early: {int(stopped)})")
        for d, k in ((large, lkeys), (small, skeys)):
            ctl("apps", "throttle", "app0000", "--min-interval", "0", "--ip-rate", "off", data=d, keys=k)
        # Let the kernel write the seeding back now, not during a measurement of one side only.
        os.sync()
        say("row 9: start-up times (7 alternating rounds; one start varies by a third), timestamp.json (2 alternating rounds), publish (5 alternating rounds of 10)")
        st_large, st_small = [], []
        for r in range(1, 8):
            sm = start_patchd("small", small, skeys)
            st_small.append(sm.started_ms)
            if r < 7:
                stop(sm.proc)
            lg = start_patchd("large", large, lkeys)
            st_large.append(lg.started_ms)
            if r < 7:
                stop(lg.proc)
        rss_large, rss_small = rss_mb(lg.pid), rss_mb(sm.pid)
        ts = "v1/apps/app0000/metadata/timestamp.json"
        body(f"{lg.url}/{ts}")
        sc = compare("sc", 2, ["@D@", f"{lg.url}/{ts}"], ["@D@", f"{sm.url}/{ts}"])
        stop(lg.proc)
        stop(sm.proc)
        # Publish alternates too: 5 rounds of 10 into each registry, which goes first swapping
        # each round, after a sync so the seeding's dirty pages are not flushed during one
        # side's fsyncs. (Run back to back, the large registry, seeded just before, went first
        # and paid for that.)
        os.sync()
        pubs = {"large": [], "small": []}
        for r in range(1, 6):
            for side in (("large", "small") if r % 2 else ("small", "large")):
                d, k = (large, lkeys) if side == "large" else (small, skeys)
                pubs[side].append(run_json([f"{BIN}/hotpatch-bench", "publish", "--data", d, "--keys", k, "--count", "10", "--size", "102400"],
                                           f"hotpatch-bench publish ({side})"))
        return {"stopped": stopped, "budget": budget, "seed_s": seed_s, "seed_own_s": seed_own_s, "apps": apps, "full": full,
                "patches": patches, "st_large": statistics.median(st_large), "st_small": statistics.median(st_small),
                "rss_large": rss_large, "rss_small": rss_small, "sc": sc,
                "pub_large": pooled("median", pubs["large"]), "pub_small": pooled("median", pubs["small"])}
    return CTX.once("scale", make)


def m_revoke():
    """Rows 10 and 10b, on one patchd."""
    def make():
        g = registry()
        say("row 10: 1,000 devices install kill 2.3 patch 2, then patchctl revoke and a forced sync each")
        # Every simulated device keeps its own connection open (as each phone would), all from
        # 127.0.0.1, so the per-address connection cap and new-connection rate are lifted for
        # this patchd only (1,000 devices connect within a second or two).
        s = start_patchd("kill", g.reg, g.keys, "--max-conns-per-ip", "5000", "--max-new-conns-per-ip", "0")
        token = CTX.path("kill.token")
        http_ = run_json([PY, f"{REPO}/bench/revoke_landing_http.py", s.url, "kill", "2.3", f"{BIN}/patchctl", token, "3", "1000", "64"],
                         "bench/revoke_landing_http.py")
        def landing(version, patch, prefix, tmp):
            return run_json([f"{BIN}/hotpatch-bench", "revoke-landing", "--server", s.url, "--app", "kill", "--app-version", version,
                             "--root", CTX.path("kill.root.json"), "--devices", "1000", "--workers", "64", "--patchctl", f"{BIN}/patchctl",
                             "--token-file", token, "--patch", patch, "--device-prefix", prefix], "hotpatch-bench revoke-landing", env={"TMPDIR": tmp})
        tmp = client_tmp()
        fleet = landing("2.3", "2", "kill", tmp)
        # The same with the 1,000 caches on this machine's disk (a note): other device IDs, 2.4.
        disk = landing("2.4", "2", "disk", CTX.work) if tmp != CTX.work else None
        stop(s.proc)
        return {"http": http_, "fleet": fleet, "disk": disk, "tmp": tmp}
    return CTX.once("revoke", make)


def m_helper(name, script, *args, what=""):
    def make():
        say(what)
        return helper(script, *args)
    return CTX.once(name, make)


def m_pg_publish():
    """Row 14: publish into a fresh registry on each backend, alternating which goes first."""
    def make():
        url = pg().schema("publish")
        say("row 14: publish a 100 KB bundle, PostgreSQL vs SQLite, 4 alternating rounds of 25")
        out = {"pg": [], "sqlite": []}
        for r in range(1, 5):
            for side in (("pg", "sqlite") if r % 2 else ("sqlite", "pg")):
                where = ["--database", url, "--keys", CTX.path("pub-pg-keys")] if side == "pg" else ["--data", CTX.path("pub-sqlite"), "--keys", CTX.path("pub-sqlite-keys")]
                out[side].append(run_json([f"{BIN}/hotpatch-bench", "publish", *where, "--count", "25", "--size", "102400"], f"hotpatch-bench publish ({side})"))
            say(f"  publish round {r}: PostgreSQL median {out['pg'][-1]['median_us']} µs, SQLite {out['sqlite'][-1]['median_us']} µs")
        return {k: {"median": pooled("median", v), "p95": pooled("p95", v)} for k, v in out.items()}
    return CTX.once("pg-publish", make)


def m_pg_serve():
    """Row 15: one fresh patchd on each backend, the loads of rows 1 and 2. 5 rounds, as row 3:
    the goal is 5 %, and one round differs from the next by more than that here."""
    def make():
        p, g = pg_registry(), registry()
        a = start_patchd("pg", p.url, p.keys)
        b = start_patchd("sqlite", g.reg, g.keys)
        with open(BUNDLE, "rb") as f:
            bundle = f.read()
        for name, s in (("PostgreSQL", a), ("SQLite", b)):
            if body(f"{s.url}/v1/apps/demo/versions/2.3/patch", {"X-Device-ID": "bench-probe"}) != bundle:
                raise Failed(f"patchd on {name} does not answer the bundle")
        ts_bytes = [len(body(f"{s.url}/v1/apps/demo/metadata/timestamp.json")) for s in (a, b)]
        tags = [etag(f"{s.url}/v1/apps/demo/versions/2.3/patch", {"X-Device-ID": "bench-304"}) for s in (a, b)]
        for s, t in zip((a, b), tags):
            if http(f"{s.url}/v1/apps/demo/versions/2.3/patch", {"X-Device-ID": "bench-304", "If-None-Match": t})[0] != 304:
                raise Failed(f"patchd ({s.url}) does not answer 304 to If-None-Match {t}")
        say(f"row 15: patchd on PostgreSQL ({a.url}) vs on SQLite ({b.url}): timestamp.json and the 304 check, 5 alternating rounds each")
        ts = compare("pgts", 5, ["@D@", f"{a.url}/v1/apps/demo/metadata/timestamp.json"], ["@D@", f"{b.url}/v1/apps/demo/metadata/timestamp.json"])
        nm = compare("pgnm", 5, ["@D@", "-H", "X-Device-ID:bench-304", "-H", f"If-None-Match:{tags[0]}", f"{a.url}/v1/apps/demo/versions/2.3/patch"],
                     ["@D@", "-H", "X-Device-ID:bench-304", "-H", f"If-None-Match:{tags[1]}", f"{b.url}/v1/apps/demo/versions/2.3/patch"])
        stop(a.proc)
        stop(b.proc)
        return {"ts": ts, "nm": nm, "ts_bytes": ts_bytes}
    return CTX.once("pg-serve", make)


def m_haproxy():
    """Row 16: two patchd on the one PostgreSQL registry behind haproxy, and two nginx serving
    its export behind a second haproxy on the same deploy/haproxy.cfg; one side loaded at a time."""
    def make():
        p = pg_registry()
        pg1 = start_patchd("pg1", p.url, p.keys, "--trusted-proxy", "127.0.0.1")
        pg2 = start_patchd("pg2", p.url, p.keys, "--trusted-proxy", "127.0.0.1")
        ng1, ng2 = start_nginx(p.site, "nginx-pg1"), start_nginx(p.site, "nginx-pg2")
        hxp = start_haproxy("patchd", f"127.0.0.1:{pg1.port}", f"127.0.0.1:{pg2.port}")
        hxn = start_haproxy("nginx", f"127.0.0.1:{ng1.port}", f"127.0.0.1:{ng2.port}")
        same_body(f"{hxp.url}/v1/apps/demo/metadata/timestamp.json", f"{hxn.url}/v1/apps/demo/metadata/timestamp.json")
        same_body(f"{hxp.url}/v1/apps/fleet/versions/2.3/patch", f"{hxn.url}/v1/apps/fleet/{p.bundle_target}", {"X-Device-ID": "bench-probe"})
        say(f"row 16: two patchd on PostgreSQL behind haproxy ({hxp.url}) vs two nginx behind haproxy ({hxn.url}), 2 alternating rounds each")
        ts = compare("hxts", 2, ["@D@", f"{hxp.url}/v1/apps/demo/metadata/timestamp.json"], ["@D@", f"{hxn.url}/v1/apps/demo/metadata/timestamp.json"])
        dd = compare("hxdd", 2, ["@D@", "-s", LUA, f"{hxp.url}/v1/apps/fleet/versions/2.3/patch", "--", "@ROUND@"],
                     ["@D@", "-s", LUA, f"{hxn.url}/v1/apps/fleet/{p.bundle_target}", "--", "@ROUND@"])
        # Both instances took part: each counts the devices haproxy sent it.
        devices = [tracked_devices(pg1.port), tracked_devices(pg2.port)]
        for s in (hxp, hxn, pg1, pg2, ng1, ng2):
            stop(s.proc)
        return {"ts": ts, "dd": dd, "devices": devices, "haproxy": first_line(["haproxy", "-v"])}
    return CTX.once("haproxy", make)


# -- the rows: one function each, returning hotpatch's figures, the reference's, context and notes --

def r1(): h, r, n = cmp_figures(m_nginx("ts"), "1"); return h, r, {"wrk_s": CTX.wrk_s}, n
def r2(): h, r, n = cmp_figures(m_nginx("nm"), "2"); return h, r, {}, n
PACED_ROWS = {"2": "18", "1": "18b"}  # pause (ms) → row
def r18(): h, r, n = cmp_figures(m_nginx("paced2"), "18"); return h, r, {}, n
def r18b(): h, r, n = cmp_figures(m_nginx("paced1"), "18b"); return h, r, {}, n
def r3():
    h, r, n = cmp_figures(m_nginx("dd"), "3")
    return h, r, {"bundle_bytes": os.path.getsize(BUNDLE)}, n
def r4(): h, r, n = cmp_figures(m_nginx("dl"), "4"); return h, r, {}, n
def r19a(): h, r, n = cmp_figures(m_nginx("ts", own_core=True), "19a"); return h, r, {"wrk_s": CTX.wrk_s}, n
def r19b(): h, r, n = cmp_figures(m_nginx("nm", own_core=True), "19b"); return h, r, {}, n
def r19c(): h, r, n = cmp_figures(m_nginx("dd", own_core=True), "19c"); return h, r, {"bundle_bytes": os.path.getsize(BUNDLE)}, n
def r17a(): h, r, n = cmp_figures(m_reference("ts"), "17a"); return h, r, {"wrk_s": CTX.wrk_s}, n
def r17b(): h, r, n = cmp_figures(m_reference("nm"), "17b"); return h, r, {}, n
def r17c(): h, r, n = cmp_figures(m_reference("dd"), "17c"); return h, r, {}, n


def r5a(): o = m_publish()["plain"]; return {"median_us": o["median_us"], "p90_us": o["p90_us"]}, {"goal_us": GOAL_US}, {}, []
def r5b(): o = m_publish()["encrypted"]; return {"median_us": o["median_us"], "p90_us": o["p90_us"]}, {"goal_us": GOAL_US}, {}, []


def crypto_row(alg, field):
    c = m_crypto()
    h = {"mbps": best(max, field, c["hp"]), "mbps_16k": best(max, field.replace("_MBps", "_16k_MBps"), c["hp"])}
    r = {"mbps": max(c["openssl"][f"{alg}-{BIG_BYTES}"]), "mbps_16k": max(c["openssl"][f"{alg}-16384"])}
    return h, r, {"alg": alg}, []


def r6a(): return crypto_row("sha256", "sha256_MBps")
def r6b(): return crypto_row("md5", "md5_MBps")
def r6c(): return crypto_row("aes-256-gcm", "aes256gcm_MBps")


def client_row(field, row):
    # Per placement, the better round of each (noise from other work on the machine only ever
    # adds time); the row's figures are those of the placement where PatchClient's ratio is
    # the worse, the other placement is a note.
    c = m_clients()
    notes = [f"Row 7 ran both clients with their caches in {c['tmp']} (tmpfs where the machine has /dev/shm); with the cache on "
             f"this machine's disk PatchClient took {c['disk']['cold_median_us'] / 1000:.2f} ms cold and "
             f"{c['disk']['nochange_median_us'] / 1000:.2f} ms no-change (median of 20)."]
    if c["fetch_ms"] is not None:
        notes.append(f"`patchctl fetch` as a process (cold cache, process start included; hyperfine, median of 10): {c['fetch_ms']:.1f} ms.")
    cpu_field = field.replace("_median_us", "_cpu_us")

    def placed(cpu):
        hp, py = [r for r in c["hp"] if r.get("cpu") == cpu], [r for r in c["py"] if r.get("cpu") == cpu]
        return ({"us": best(min, field, hp), "cpu_us": best(min, cpu_field, hp), "cpu": cpu}, {"us": best(min, field, py), "cpu": cpu})
    placements = [placed(cpu) for cpu in CLIENT_CPUS]
    h, r = max(placements, key=lambda p: p[0]["us"] / p[1]["us"])
    where = lambda cpu: "on the server's core" if cpu == 0 else "on the other core"
    for ph, pr in placements:
        if ph is not h:
            notes.append(f"Row {row} with the clients {where(ph['cpu'])}: PatchClient {ph['us'] / 1000:.2f} ms "
                         f"(CPU {ph['cpu_us'] / 1000:.2f} ms), python-tuf {pr['us'] / 1000:.2f} ms, {ph['us'] / pr['us']:.2f}×.")
    return h, r, {"python_tuf": c["tuf"], "where": where(h["cpu"])}, notes if row == "7a" else notes[-1:]


def r7c():
    c = m_clients()
    med = lambda rows, field: statistics.median(r[field] for r in rows)
    return ({"us": med(c["first_hp"], "cold_median_us"), "cpu_us": med(c["first_hp"], "cold_cpu_us")},
            {"us": med(c["first_py"], "cold_median_us")}, {"n": len(c["first_hp"])}, [])


def r7a(): return client_row("cold_median_us", "7a")
def r7b(): return client_row("nochange_median_us", "7b")


def r8a():
    m = m_memory()
    return {"mb": m["idle_mb"]}, {"mb": 200}, {}, []


def r8b():
    m = m_memory()
    notes = [f"The memory run started with {m['tracked_before']} devices already tracked."] if m["tracked_before"] else []
    return {"mb": m["rss_mb"], "hwm_mb": m["hwm_mb"], "tracked": m["tracked"], "drive_s": m["drive_s"]}, {"mb": 200}, {}, notes


def scale_row(which):
    s = m_scale()
    if s["stopped"]:
        scale = (f"**reduced: {s['full']} complete apps (of 1,000) × 20 × 5, {s['patches']} patches in {s['apps']} apps — "
                 f"seeding was stopped after {s['seed_s']} s to keep the run under 10 minutes**")
    else:
        scale = f"1,000 apps × 20 × 5 = {s['patches']} patches"
    c = {"scale": scale, "reduced": s["stopped"], "apps": s["apps"], "patches": s["patches"], "wrk_s": CTX.wrk_s}
    notes = []
    if which == "a":
        if s["stopped"]:
            notes.append(f"**Row 9 is reduced**: `hotpatch-bench seed --apps 1000 --versions 20 --patches 5` did not finish within the "
                         f"{s['budget']} s left for it; it was stopped after {s['seed_s']} s with {s['apps']} apps ({s['full']} complete) "
                         f"and {s['patches']} patches, and row 9 compares that registry with the one-app registry.")
        else:
            notes.append(f"Row 9's registry: `hotpatch-bench seed --apps 1000 --versions 20 --patches 5` (bulk-load durability) took "
                         f"{s['seed_s']} s ({s['seed_own_s']} s by its own clock) for {s['patches']} patches.")
        notes.append(f"patchd RSS with every app of the large registry loaded: {s['rss_large']} MB (one-app registry: {s['rss_small']} MB).")
        return {"ms": s["st_large"]}, {"ms": s["st_small"]}, c, notes
    if which == "b":
        h, r, n = cmp_figures(s["sc"], "9b")
        return h, r, c, n
    return {"us": s["pub_large"]}, {"us": s["pub_small"]}, c, []


def r9a(): return scale_row("a")
def r9b(): return scale_row("b")
def r9c(): return scale_row("c")


def r10():
    m = m_revoke()
    f, d = m["fleet"], m["disk"]
    notes = [f"Row 10's 1,000 PatchClients kept their caches in {m['tmp']} (tmpfs where the machine has /dev/shm)."]
    if d:
        notes.append(f"The same fleet with its caches on this machine's disk (1,000 devices' fsyncs in one journal; another 1,000 device IDs, app version 2.4): "
                     f"p50 {d['p50_us'] / 1000:.0f} ms, p99 {d['p99_us'] / 1000:.0f} ms ({d['landed']} of 1000 landed).")
    return {"p50_us": f["p50_us"], "p99_us": f["p99_us"], "landed": f["landed"], "revoke_us": f["revoke_us"]}, {"p99_us": GOAL_P99_US}, {}, notes


def r10b():
    f = m_revoke()["http"]
    return {"p50_us": f["p50_us"], "p99_us": f["p99_us"], "landed": f["landed"]}, {"p99_us": GOAL_P99_US}, {}, []


def r10c():
    p = m_helper("push", "revoke_push.py", 1000, 32, what="row 10c: 1,000 devices woken by push after patchctl revoke --notify (bench/revoke_push.py)")
    return {k: p[k] for k in ("p50_ms", "p99_ms", "landed", "throttled", "revoke_ms")}, {"p99_ms": GOAL_P99_US / 1000}, {}, []


def r10d():
    w = m_helper("withhold", "withhold_landing.py", 1000, 64,
                 what="row 10d: 1,000 devices drop a patch one on-call engineer withheld on a two-person app (bench/withhold_landing.py)")
    if not w.get("through_withhold"):
        raise Failed("row 10d: the revoke did not land through the withhold role")
    return {"p50_us": w["p50_us"], "p99_us": w["p99_us"], "landed": w["landed"], "revoke_us": w["revoke_us"]}, {"p99_us": GOAL_P99_US}, {}, []


def r20():
    c = m_helper("scriptcheck", "script_check.py", 30, what="row 20: the script check of a 100 KB JSPatch script, 30 runs (bench/script_check.py)")
    notes = [f"Row 20: the evaluation includes JavaScriptCore parsing the script a second time (JSEvaluateScript), about what the "
             f"reference costs; the worker's whole run ({c['worker_us'] / 1000:.1f} ms) adds starting a process and the engine, and "
             f"`patchctl check --manifest` ({c['command_us'] / 1000:.1f} ms) patchctl's own start and the rules against the demo's manifest."]
    return ({"check_us": c["syntax_us"] + c["evaluation_us"], "evaluation_us": c["evaluation_us"], "worker_us": c["worker_us"], "command_us": c["command_us"]},
            {"syntax_us": c["syntax_us"]}, {"bytes": c["bytes"]}, notes)


def flood():
    return m_helper("flood", "reports_flood.py", 10, 4, what="row 11: report ingest beside publishes (bench/reports_flood.py, 2 × 10 s)")


def r11():
    f = flood()
    ts = m_nginx("ts")          # row 1's check path, the reference
    return {"reports_per_s": f["reports_per_s_alone"], "events_per_s": f["events_per_s_alone"]}, {"rps": ts["hp"]["rps"]}, {}, []


def r11b():
    f = flood()
    return dict(f["publish_ms_under_flood"]), dict(f["publish_ms_alone"]), {}, []


def r11c():
    f = flood()
    return {**f["check_ms_under_flood"], "reports_per_s": f["reports_per_s_with_checks"]}, dict(f["check_ms_alone"]), {}, []


def r11d():
    a = m_helper("attack", "guard_attack.py", 2000, what="row 11d: what a forger must spend to halt a guarded patch (bench/guard_attack.py)")
    return ({"one_address": a["one_address"], "one_slash16": a["one_slash16_100_addresses"]},
            {"five_blocks": a["five_slash16_blocks"]}, {}, [])


def r11e():
    g = m_helper("growth", "reports_growth.py", 25000, what="row 11e: the most a forger adds to the registry in an hour (bench/reports_growth.py)")
    return ({"events_counted": g["events_counted"], "growth_mb": round(g["registry_growth_bytes"] / 1048576, 1),
             "bytes_per_event": g["bytes_per_counted_event"]}, {"bytes_per_event": 145}, {"events_sent": g["events_sent"]}, [])


def scale_reports():
    return m_helper("reports-scale", "reports_scale.py", 1000000, what="rows 12-13: the report state of 1,000,000 devices (bench/reports_scale.py)")


def r12():
    s = scale_reports()
    return ({"registry_mb": round(s["registry_bytes"] / 1048576), "bytes_per_device": s["bytes_per_device"],
             "rss_mb": round(s["patchd_rss_kb"] / 1024, 1), "stats_p50_ms": s["stats"]["p50_ms"]}, {"rss_mb": 200}, {"devices": s["devices"]}, [])


def r13():
    s = scale_reports()
    return ({"ms": s["guard"]["crossing_report_ms"]}, {"ms": s["guard"]["report_below_threshold"]["p50_ms"]},
            {"installed": s["guard"]["installed"], "check_after": s["guard"]["check_after"]},
            [f"Row 13: the next simple check after the crossing report was {s['guard']['check_after']}."])


def r14():
    p = m_pg_publish()
    return dict(p["pg"]), dict(p["sqlite"]), {"goal_us": GOAL_US, "postgres": pg().version}, []


def r15a():
    m = m_pg_serve()
    h, r, n = cmp_figures(m["ts"], "15a")
    return h, r, {"pg_bytes": m["ts_bytes"][0], "sq_bytes": m["ts_bytes"][1]}, n


def r15b(): h, r, n = cmp_figures(m_pg_serve()["nm"], "15b"); return h, r, {}, n
def r16a():
    m = m_haproxy()
    h, r, n = cmp_figures(m["ts"], "16a")
    return h, r, {"haproxy": m["haproxy"]}, n


def r16b():
    m = m_haproxy()
    h, r, n = cmp_figures(m["dd"], "16b")
    return h, r, {"devices": m["devices"]}, n + [f"In row 16b the two patchd instances tracked {m['devices'][0]} and {m['devices'][1]} devices."]


# -- the rows as data: prose, cells, ratios, goals --------------------------------------------------
# Cells are format strings over h (hotpatch's figures), r (the reference's), c (context) and x
# (the ratios): {x.main:x} is a ratio as "1.23×" ("n/a" without one), {h.us:ms} microseconds
# as milliseconds. A goal is (text, condition over h, r, c, x); its condition None: no goal set.

CMP_CELL = "{s.rps:.0f} req/s (p50 {s.p50:.2f} / p99 {s.p99:.2f} ms)"
CMP = {"hotpatch": CMP_CELL.replace("s.", "h."), "reference": "nginx: " + CMP_CELL.replace("s.", "r."),
       "ratios": {"main": ("h.rps", "r.rps"), "p99": ("h.p99", "r.p99")}, "ratio": "{x.main:x} req/s; p99 {x.p99:x}",
       "needs": ["wrk", "nginx"], "phase": "main"}


def check_goals(row, text):
    return [(f"check path ≥ 1.0× nginx's requests/s at equal or better p99, {text} — {{x.main:x}} req/s, p99 {{h.p99:.2f}} ms vs nginx {{r.p99:.2f}} ms (row {row}).",
             lambda h, r, c, x: x.main >= 1.0 and r.p99 >= h.p99),
            (f"aim: ≥ 1.3× nginx, {text} — {{x.main:x}}, {{x.aim:.0f}}% of the aim.", lambda h, r, c, x: x.main >= 1.3)]


def own_core_goals(row, text):
    """Row 19: the p99 goal of rows 1-3 where the load generator does not take the servers' CPU."""
    return [(f"p99 no worse than nginx's at saturation with wrk on a core of its own, {text} — {{x.main:x}} req/s, p99 {{h.p99:.2f}} ms vs nginx {{r.p99:.2f}} ms (row {row}).",
             lambda h, r, c, x: x.main >= 1.0 and h.p99 <= r.p99),
            (f"aim: ≥ 1.3× nginx on one core, {text} — {{x.main:x}}.", lambda h, r, c, x: x.main >= 1.3)]


def crypto_spec(label, name):
    return {"fn": None, "what": f"{label}: one 64 MB buffer vs `openssl speed -evp {{c.alg}} -bytes 67108864`; in 16 KB calls vs `-bytes 16384`",
            "hotpatch": "{h.mbps} MB/s (16 KB calls: {h.mbps_16k} MB/s)", "reference": "openssl: {r.mbps:.0f} MB/s (16 KB: {r.mbps_16k:.0f} MB/s)",
            "ratios": {"main": ("h.mbps", "r.mbps"), "small": ("h.mbps_16k", "r.mbps_16k")}, "ratio": "{x.main:x} (16 KB: {x.small:x})",
            "goals": [(f"{name} ≥ 0.9× `openssl speed` — {{x.main:x}} on the same 64 MB buffer (row 6, which also shows 16 KB calls against openssl's cache-resident 16 KB blocks).",
                       lambda h, r, c, x: x.main >= 0.9)],
            "needs": ["openssl"], "phase": "solo"}


def LIMIT_GOAL(text):
    return (text, lambda h, r, c, x: x.main <= 1.0)

SPECS = {
    "1": {**CMP, "fn": r1, "what": "1. Check path: `timestamp.json`, wrk -t2 -c64 -d{c.wrk_s}s, median of 3 alternating rounds",
          "goals": check_goals(1, "`timestamp.json`")},
    "2": {**CMP, "fn": r2, "what": "2. Simple check `versions/2.3/patch` answered 304 (same device, If-None-Match), vs nginx 304 on the static bundle",
          "goals": check_goals(2, "simple check answered 304")},
    "3": {**CMP, "fn": r3, "what": "3. Simple check, a new X-Device-ID per request (200 with the {c.bundle_bytes} B bundle; throttle table growing), vs nginx 200 on the same bytes, median of 5 alternating rounds",
          "goals": check_goals(3, "simple check from a new device per request")},
    "18": {**CMP, "fn": r18,
           "what": "18. Row 1's `timestamp.json` at the same offered load for both (bench/paced.lua: each of the 64 connections waits 2 ms before each request: at most 32k req/s offered, about 24k served by either, below nginx's most), median of 3 alternating rounds",
           "goals": [("p99 no worse than nginx's at the same offered load, `timestamp.json` — p99 {h.p99:.2f} ms vs nginx {r.p99:.2f} ms (row 18).",
                      lambda h, r, c, x: h.p99 <= r.p99)]},
    "18b": {**CMP, "fn": r18b,
            "what": "18b. Row 18 at a higher load: each connection waits 1 ms (at most 64k req/s offered; 34k–39k served, about two thirds of the most nginx serves here), median of 3 alternating rounds",
            "goals": [("p99 no worse than nginx's at the same offered load near nginx's most, `timestamp.json` — p99 {h.p99:.2f} ms vs nginx {r.p99:.2f} ms (row 18b).",
                       lambda h, r, c, x: h.p99 <= r.p99)]},
    "19a": {**CMP, "fn": r19a, "needs": ["wrk", "nginx", "taskset"],
            "what": "19a. Row 1 with the load generator on a core of its own: patchd (`--threads 1`) and nginx (1 worker) on CPU 0, `wrk -t1 -c64 -d{c.wrk_s}s` on CPU 1 (taskset), median of 3 alternating rounds",
            "goals": own_core_goals("19a", "`timestamp.json`")},
    "19b": {**CMP, "fn": r19b, "needs": ["wrk", "nginx", "taskset"],
            "what": "19b. Row 2's simple check answered 304, the servers on CPU 0 and wrk on CPU 1 as in row 19a, median of 3 alternating rounds",
            "goals": own_core_goals("19b", "simple check answered 304")},
    "19c": {**CMP, "fn": r19c, "needs": ["wrk", "nginx", "taskset"],
            "what": "19c. Row 3's simple check from a new X-Device-ID per request ({c.bundle_bytes} B bundle), the servers on CPU 0 and wrk on CPU 1 as in row 19a, median of 5 alternating rounds",
            "goals": own_core_goals("19c", "simple check from a new device per request")},
    "17a": {**CMP, "fn": r17a, "reference": "refserver: " + CMP_CELL.replace("s.", "r."), "needs": ["wrk"],
            "what": "17a. Row 1's `timestamp.json` vs the reference server (bench/refserver.c: one epoll loop per core, no parsing, patchd's own response bytes for every request), wrk -t2 -c64 -d{c.wrk_s}s, median of 3 alternating rounds",
            "goals": [("check path ≥ 0.8× the reference server, `timestamp.json` — {x.main:x} req/s; p99 {h.p99:.2f} ms (row 17a; row 1 compares p99 with nginx).", lambda h, r, c, x: x.main >= 0.8)]},
    "17b": {**CMP, "fn": r17b, "reference": "refserver: " + CMP_CELL.replace("s.", "r."), "needs": ["wrk"],
            "what": "17b. Row 2's simple check answered 304 vs the reference server answering patchd's 304, median of 3 alternating rounds",
            "goals": [("check path ≥ 0.8× the reference server, simple check answered 304 — {x.main:x} req/s (row 17b).", lambda h, r, c, x: x.main >= 0.8)]},
    "17c": {**CMP, "fn": r17c, "reference": "refserver: " + CMP_CELL.replace("s.", "r."), "needs": ["wrk"],
            "what": "17c. Row 3's simple check from a new X-Device-ID per request vs the reference server answering patchd's 200 (it reads the headers and ignores them), median of 5 alternating rounds",
            "goals": [("check path ≥ 0.8× the reference server, a new device per request — {x.main:x} req/s (row 17c).", lambda h, r, c, x: x.main >= 0.8)]},
    "4": {**CMP, "fn": r4, "what": "4. Bundle download, 200 KB target (204800 B), wrk Transfer/sec",
          "hotpatch": "{h.mbps:.1f} MB/s ({h.rps:.0f} req/s)", "reference": "nginx: {r.mbps:.1f} MB/s ({r.rps:.0f} req/s)",
          "ratios": {"main": ("h.mbps", "r.mbps")}, "ratio": "{x.main:x}",
          "goals": [("bundle download ≥ 0.8× nginx — {x.main:x} (row 4).", lambda h, r, c, x: x.main >= 0.8)]},
    "5a": {"fn": r5a, "what": "5a. Publish 100 KB, plain: median of 200 (hash, sign, SQLite commit; lower is better)",
           "hotpatch": "{h.median_us:ms} ms (p90 {h.p90_us:ms} ms)", "reference": "20 ms (goal)", "ratios": {"main": ("h.median_us", "r.goal_us")},
           "ratio": "{x.main:x}", "goals": [LIMIT_GOAL("publish of 100 KB ≤ 20 ms median, plain — {h.median_us:ms} ms, {x.main:x} of the limit (row 5a)."),
                     ("publish of 100 KB ≤ 3 ms median on SQLite (issue 23) — {h.median_us:ms} ms (row 5a).", lambda h, r, c, x: h.median_us <= 3000)]},
    "5b": {"fn": r5b, "what": "5b. Publish 100 KB, encrypted (AES-256-GCM): median of 200 (lower is better)",
           "hotpatch": "{h.median_us:ms} ms (p90 {h.p90_us:ms} ms)", "reference": "20 ms (goal)", "ratios": {"main": ("h.median_us", "r.goal_us")},
           "ratio": "{x.main:x}", "goals": [LIMIT_GOAL("publish of 100 KB ≤ 20 ms median, encrypted — {h.median_us:ms} ms, {x.main:x} of the limit (row 5b).")]},
    "6a": {**crypto_spec("6a. SHA-256 throughput", "SHA-256"), "fn": r6a},
    "6b": {**crypto_spec("6b. MD5 throughput", "MD5"), "fn": r6b},
    "6c": {**crypto_spec("6c. AES-256-GCM encryption throughput", "AES-256-GCM"), "fn": r6c},
    "7a": {"fn": r7a, "what": "7a. Client full sync, cold cache (on tmpfs), the clients {c.where} (row 19's patchd, one loop on CPU 0; the placement with the worse ratio, the other is a note): median of 20, the better of 2 rounds (lower is better)",
           "hotpatch": "PatchClient: {h.us:ms} ms (CPU {h.cpu_us:ms} ms)", "reference": "python-tuf Updater: {r.us:ms} ms", "ratios": {"main": ("h.us", "r.us")}, "ratio": "{x.main:x}",
           "goals": [("the client ≤ 0.25× python-tuf's time, full sync from a cold cache — {x.main:x} (row 7a; issue 23).", lambda h, r, c, x: x.main <= 0.25)],
           "needs": ["nginx", "taskset"], "phase": "main"},
    "7c": {"fn": r7c, "what": "7c. Client first sync of a process (an app launch), cold cache (on tmpfs): each run in a process of its own, only the sync timed, {c.n} processes per client over both placements of row 7, median (lower is better)",
           "hotpatch": "PatchClient: {h.us:ms} ms (CPU {h.cpu_us:ms} ms)", "reference": "python-tuf Updater: {r.us:ms} ms", "ratios": {"main": ("h.us", "r.us")}, "ratio": "{x.main:x}",
           "needs": ["nginx", "taskset"], "phase": "main"},
    "7b": {"fn": r7b, "what": "7b. Client no-change sync, warm cache (on tmpfs), the clients {c.where} (as 7a): median of 20, the better of 2 rounds (lower is better)",
           "hotpatch": "PatchClient: {h.us:ms} ms (CPU {h.cpu_us:ms} ms)", "reference": "python-tuf Updater: {r.us:ms} ms", "ratios": {"main": ("h.us", "r.us")}, "ratio": "{x.main:x}",
           "goals": [("the client ≤ 0.25× python-tuf's time, no-change sync — {x.main:x} (row 7b; issue 23).", lambda h, r, c, x: x.main <= 0.25)],
           "needs": ["nginx", "taskset"], "phase": "main"},
    "8a": {"fn": r8a, "what": "8a. patchd RSS, idle (just started, registry of 3 apps)", "hotpatch": "{h.mb} MB", "reference": "200 MB (goal for 1M devices)",
           "ratios": {"main": ("h.mb", "r.mb")}, "ratio": "{x.main:x}", "needs": ["wrk"]},
    "8b": {"fn": r8b, "what": lambda h, r, c: (f"8b. patchd RSS after 1,000,000 distinct devices checked ({h.tracked} tracked, reached in {h.drive_s} s)" if h.tracked >= 1000000
                                               else f"8b. patchd RSS after distinct devices checked: **only {h.tracked} of 1,000,000 reached in the 90 s cap**"),
           "hotpatch": "{h.mb} MB (peak {h.hwm_mb} MB)", "reference": lambda h, r, c: "200 MB (goal)" if h.tracked >= 1000000 else "200 MB (goal, for 1M)",
           "ratios": {"main": ("h.mb", "r.mb")}, "ratio": "{x.main:x}", "needs": ["wrk"],
           "goals": [("one million tracked devices ≤ 200 MB RSS — {h.mb} MB, {x.main:x} of the limit (row 8b).",
                      lambda h, r, c, x: x.main <= 1.0 if h.tracked >= 1000000 else "Not measured")],
           "goal_not_measured": "one million tracked devices ≤ 200 MB RSS — only {h.tracked} devices were reached in 90 s ({h.mb} MB then; row 8b)."},
    "9a": {"fn": r9a, "what": "9a. Scale ({c.scale}) vs one app: patchd start-up, spawn to \"listening\", median of 7 alternating (lower is better)",
           "hotpatch": "{h.ms:.1f} ms", "reference": "one app: {r.ms:.1f} ms", "ratios": {"main": ("h.ms", "r.ms")}, "ratio": "{x.main:x}",
           "goals": [("large registry within 1.2× of one app: start-up — {x.main:x} (row 9a).", lambda h, r, c, x: x.main <= 1.2)], "needs": ["wrk"]},
    "9b": {**CMP, "fn": r9b, "what": "9b. Scale: `timestamp.json` of app0000, wrk -t2 -c64 -d{c.wrk_s}s, median of 2 alternating rounds",
           "reference": "one app: " + CMP_CELL.replace("s.", "r."), "needs": ["wrk"], "phase": "solo",
           "goals": [("large registry within 1.2× of one app: timestamp.json requests/s — {x.main:x} (row 9b; within 1.2× means ≥ 0.83×).",
                      lambda h, r, c, x: x.main * 1.2 >= 1.0)]},
    "9c": {"fn": r9c, "what": "9c. Scale: publish 100 KB, median of 50 (5 alternating rounds of 10; lower is better)", "hotpatch": "{h.us:ms} ms",
           "reference": "one app: {r.us:ms} ms", "ratios": {"main": ("h.us", "r.us")}, "ratio": "{x.main:x}", "needs": ["wrk"],
           "goals": [("large registry within 1.2× of one app: publish — {x.main:x} (row 9c).", lambda h, r, c, x: x.main <= 1.2)]},
    "10": {"fn": r10, "what": "10. Revoke lands: from `patchctl revoke --server` starting to a forced sync without the patch, 1,000 devices inside their one-hour interval (each its own PatchClient, caches on tmpfs, 64 syncing at a time; lower is better)",
           "hotpatch": "p50 {h.p50_us:ms} ms / p99 {h.p99_us:ms} ms ({h.landed} of 1000 landed; the revoke itself {h.revoke_us:ms} ms)", "reference": "2000 ms p99 (goal)",
           "ratios": {"main": ("h.p99_us", "r.p99_us")}, "ratio": "{x.main:x}",
           "goals": [("a revoke reaches 1,000 devices inside their interval, p99 ≤ 2 s, measured to each simulated PatchClient's finished sync — {h.p99_us:ms} ms, {x.main:x} of the limit (row 10).",
                      lambda h, r, c, x: x.main <= 1.0)]},
    "10b": {"fn": r10b, "what": "10b. Revoke lands, the server's part: from `patchctl revoke --server` starting to a 200 with the new timestamp, for 1,000 devices inside their interval (plain HTTP `timestamp.json` with X-Device-ID and X-App-Version, 64 kept-alive connections; lower is better)",
            "hotpatch": "p50 {h.p50_us:ms} ms / p99 {h.p99_us:ms} ms ({h.landed} of 1000 answered)", "reference": "2000 ms p99 (goal)",
            "ratios": {"main": ("h.p99_us", "r.p99_us")}, "ratio": "{x.main:x}",
            "goals": [("the same, measured to each device's answer from patchd (the server's part, without the simulated fleet's TUF work on the same cores) — {h.p99_us:ms} ms, {x.main:x} of the limit (row 10b).",
                       lambda h, r, c, x: x.main <= 1.0)]},
    "10c": {"fn": r10c, "what": "10c. Revoke lands by push: from `patchctl revoke --notify` starting to each woken device holding the new timestamp (its one pass through the interval), 1,000 devices inside their one-hour interval (lower is better)",
            "hotpatch": "p50 {h.p50_ms} ms / p99 {h.p99_ms} ms ({h.landed} of 1000 landed, {h.throttled} throttled; the revoke with its 1,000 pushes {h.revoke_ms} ms)",
            "reference": "2000 ms p99 (row 10's goal)", "ratios": {"main": ("h.p99_ms", "r.p99_ms")}, "ratio": "{x.main:x}"},
    "10d": {"fn": r10d, "what": "10d. A withhold lands under the two-person rule: from one on-call engineer's `patchctl revoke --server` (no release key; it lands through the withhold role patchd holds) starting to a forced sync without the patch, 1,000 devices inside their one-hour interval (each its own PatchClient, 64 syncing at a time; lower is better)",
            "hotpatch": "p50 {h.p50_us:ms} ms / p99 {h.p99_us:ms} ms ({h.landed} of 1000 landed; the revoke itself {h.revoke_us:ms} ms)", "reference": "2000 ms p99 (row 10's goal)",
            "ratios": {"main": ("h.p99_us", "r.p99_us")}, "ratio": "{x.main:x}",
            "goals": [("one person's withhold reaches 1,000 devices of a two-person app inside their interval, p99 ≤ 2 s — {h.p99_us:ms} ms, {x.main:x} of the limit (row 10d).",
                       lambda h, r, c, x: x.main <= 1.0)]},
    "11": {"fn": r11, "what": "11. Report ingest: `POST …/reports` of 100 events from a new device each, 4 clients (no per-IP limit), vs row 1's check path",
           "hotpatch": "{h.reports_per_s} reports/s ({h.events_per_s} events/s)", "reference": "timestamp.json: {r.rps:.0f} req/s (row 1)",
           "ratios": {"main": ("h.events_per_s", "r.rps")}, "ratio": "{x.main:x} (events ÷ checks: each event is a durable write, each check a prepared answer)",
           "needs": ["wrk", "nginx"]},
    "11b": {"fn": r11b, "what": "11b. Publish latency beside that flood (lower is better)", "hotpatch": "p50 {h.p50} / p99 {h.p99} ms",
            "reference": "alone: p50 {r.p50} / p99 {r.p99} ms", "ratios": {"main": ("h.p99", "r.p99")}, "ratio": "{x.main:x} (p99)"},
    "11c": {"fn": r11c, "what": "11c. Check path (`timestamp.json`, a new device per request, 500/s) during that flood (lower is better)",
            "hotpatch": "p50 {h.p50} / p99 {h.p99} ms ({h.reports_per_s} reports/s beside it)", "reference": "no flood: p50 {r.p50} / p99 {r.p99} ms",
            "ratios": {"main": ("h.p99", "r.p99")}, "ratio": "{x.main:x} (p99)",
            "goals": [("check-path p99 during a report flood ≤ 1.5× without — {x.main:x} (row 11c).", lambda h, r, c, x: x.main <= 1.5)]},
    "11d": {"fn": r11d, "what": "11d. Forged rollbacks against the default guard (2 %, 50 devices), 2,000 forged devices that each downloaded the bundle: halted?",
            "hotpatch": "one address: {h.one_address[halted]:b} ({h.one_address[rolled_back_counted]} counted); 100 addresses of one /16: {h.one_slash16[halted]:b} ({h.one_slash16[rolled_back_counted]} counted)",
            "reference": "one address in each of 5 /16 blocks: {r.five_blocks[halted]:b} after {r.five_blocks[halted_after_s]} s", "ratio": "—"},
    "11e": {"fn": r11e, "what": "11e. Registry growth from {c.events_sent} forged events with valid receipts in one hour, each device its own /16 (lower is better)",
            "hotpatch": "{h.events_counted} counted (the app's hourly budget), {h.growth_mb:.1f} MB, {h.bytes_per_event} B/event",
            "reference": "before issue 20: every event stored, ~145 B each", "ratio": "—"},
    "12": {"fn": r12, "what": "12. Report state of {c.devices} devices (installed + confirmed one patch): registry size, patchd RSS, stats read (lower is better)",
           "hotpatch": "{h.registry_mb} MB ({h.bytes_per_device} B/device), RSS {h.rss_mb} MB, stats p50 {h.stats_p50_ms} ms",
           "reference": "RSS 200 MB (row 8's goal for 1M tracked devices)", "ratios": {"main": ("h.rss_mb", "r.rss_mb")}, "ratio": "{x.main:x}"},
    "13": {"fn": r13, "what": "13. Guard decision: from the report that crosses 2 % (Wilson lower bound, {c.installed} installed) to the first simple check that no longer offers the patch (lower is better)",
           "hotpatch": "{h.ms} ms", "reference": "a report's 202 below the threshold: p50 {r.ms} ms", "ratios": {"main": ("h.ms", "r.ms")}, "ratio": "{x.main:x}"},
    "14": {"fn": r14, "what": "14. Publish 100 KB (hash, sign, commit), PostgreSQL vs SQLite: median and p95 of 100 each (4 alternating rounds of 25; lower is better)",
           "hotpatch": "PostgreSQL: {h.median:ms} ms (p95 {h.p95:ms} ms)", "reference": "SQLite: {r.median:ms} ms (p95 {r.p95:ms} ms)",
           "ratios": {"main": ("h.median", "r.median"), "p95": ("h.p95", "r.p95"), "goal_pg": ("h.median", "c.goal_us"), "goal_sq": ("r.median", "c.goal_us")},
           "ratio": "{x.main:x} (p95 {x.p95:x}); goal 20 ms: {x.goal_pg:x} / {x.goal_sq:x}", "needs": ["postgres"], "phase": "pg",
           "goals": [("publish of 100 KB ≤ 20 ms median on PostgreSQL — {h.median:ms} ms (p95 {h.p95:ms} ms), {x.goal_pg:x} of the limit (row 14).", lambda h, r, c, x: x.goal_pg <= 1.0),
                     ("publish of 100 KB ≤ 20 ms median on SQLite, measured beside it — {r.median:ms} ms (p95 {r.p95:ms} ms), {x.goal_sq:x} of the limit (row 14).", lambda h, r, c, x: x.goal_sq <= 1.0),
                     ("publish of 100 KB ≤ 20 ms p95 on PostgreSQL (issue 23) — {h.p95:ms} ms (row 14).", lambda h, r, c, x: h.p95 <= c.goal_us)]},
    "15a": {**CMP, "fn": r15a, "what": "15a. Check path on PostgreSQL vs SQLite: `timestamp.json` ({c.pg_bytes} B vs {c.sq_bytes} B), row 1's load, median of 5 alternating rounds",
            "hotpatch": "PostgreSQL: " + CMP_CELL.replace("s.", "h."), "reference": "SQLite: " + CMP_CELL.replace("s.", "r."), "needs": ["wrk", "postgres"], "phase": "pg",
            "goals": [("the check path on PostgreSQL within 5 % of SQLite (≥ 0.95× its requests/s), `timestamp.json` — {x.main:x} (row 15a).", lambda h, r, c, x: x.main >= 0.95)]},
    "15b": {**CMP, "fn": r15b, "what": "15b. Check path on PostgreSQL vs SQLite: simple check `versions/2.3/patch` answered 304, row 2's load, median of 5 alternating rounds",
            "hotpatch": "PostgreSQL: " + CMP_CELL.replace("s.", "h."), "reference": "SQLite: " + CMP_CELL.replace("s.", "r."), "needs": ["wrk", "postgres"], "phase": "pg",
            "goals": [("the check path on PostgreSQL within 5 % of SQLite (≥ 0.95× its requests/s), simple check answered 304 — {x.main:x} (row 15b).", lambda h, r, c, x: x.main >= 0.95)]},
    "16a": {**CMP, "fn": r16a, "what": "16a. Two patchd on one PostgreSQL behind haproxy (deploy/haproxy.cfg) vs two nginx serving the export behind the same haproxy configuration: `timestamp.json` (no X-Device-ID: haproxy round-robins), median of 2 alternating rounds",
            "reference": "haproxy + nginx: " + CMP_CELL.replace("s.", "r."), "needs": ["wrk", "nginx", "haproxy", "postgres"], "phase": "pg",
            "goals": [("two patchd on one PostgreSQL behind haproxy vs two nginx behind the same haproxy — {x.main:x} req/s for `timestamp.json` (row 16a).", None)]},
    "16b": {**CMP, "fn": r16b, "what": "16b. The same pair: simple check, a new X-Device-ID per request (haproxy hashes it over both instances), vs nginx 200 on the same bytes, median of 2 alternating rounds",
            "reference": "haproxy + nginx: " + CMP_CELL.replace("s.", "r."), "needs": ["wrk", "nginx", "haproxy", "postgres"], "phase": "pg",
            "goals": [("the same pair — {x.main:x} req/s for the simple check from a new device per request (row 16b).", None)]},
    "20": {"fn": r20, "what": "20. Script check of a 100 KB JSPatch script ({c.bytes} B, ~200 classes): JavaScriptCore's syntax check, then the top level against the recording runtime, in the worker; median of 30 (lower is better)",
           "hotpatch": "syntax + evaluation {h.check_us:ms} ms (the evaluation {h.evaluation_us:ms} ms); the worker's whole run {h.worker_us:ms} ms; `patchctl check` {h.command_us:ms} ms",
           "reference": "JSCheckScriptSyntax alone: {r.syntax_us:ms} ms", "ratios": {"main": ("h.check_us", "r.syntax_us")}, "ratio": "{x.main:x}",
           "goals": [("the evaluation adds at most a few milliseconds to JSCheckScriptSyntax alone on a 100 KB script (≤ 5 ms) — +{h.evaluation_us:ms} ms (row 20).",
                      lambda h, r, c, x: h.evaluation_us <= 5000)]},
}
# The order rows are measured in (the table is in row order): the nginx rows and row 7 share a
# patchd and an nginx; rows 14-16 share a PostgreSQL cluster and run before row 9, whose seeding
# gets the time these leave.
ORDER = ["1", "2", "3", "18", "18b", "19a", "19b", "19c", "17a", "17b", "17c", "4", "7a", "7b", "7c", "14", "15a", "15b", "16a", "16b", "5a", "5b", "6a", "6b", "6c", "8a", "8b",
         "9a", "9b", "9c", "10b", "10", "10c", "10d", "11", "11b", "11c", "11d", "11e", "12", "13", "20"]
assert sorted(ORDER) == sorted(SPECS)


def row_key(rid):
    m = re.match(r"(\d+)(\w*)", rid)
    return int(m.group(1)), m.group(2)


# -- rendering -------------------------------------------------------------------------------------

class Fmt(string.Formatter):
    def format_field(self, value, spec):
        if spec == "x":
            return "n/a" if value is None else f"{value:.2f}×"
        if value is None:
            return "?"
        if spec == "ms":
            return f"{value / 1000:.2f}"
        if spec == "b":
            return str(value).lower() if isinstance(value, bool) else str(value)
        return super().format_field(value, spec)


class Figures(types.SimpleNamespace):
    """A row's figures: one a run predates (a field added to the row since) renders as "?"."""
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return None


def ns(d):
    return Figures(**(d or {}))


def ratios_of(spec, h, r, c):
    def get(path):
        side, key = path.split(".")
        return getattr({"h": h, "r": r, "c": c}[side], key, None)
    x = {name: ratio(get(a), get(b)) for name, (a, b) in spec.get("ratios", {}).items()}
    if "main" in x and x["main"] is not None:
        x["aim"] = x["main"] / 1.3 * 100
    return types.SimpleNamespace(**x)


def cell(template, h, r, c, x):
    if callable(template):
        return template(h, r, c)
    return Fmt().format(template, h=h, r=r, c=c, x=x)


def evaluate_goals(spec, h, r, c, x):
    """[{text, met}]: met true/false, "Not measured", or null (no goal set)."""
    out = []
    for text, cond in spec.get("goals", []):
        met = None
        if cond is not None:
            try:
                met = cond(h, r, c, x)
            except TypeError:            # a figure is missing
                met = "Not measured"
        if met == "Not measured" and spec.get("goal_not_measured"):
            text = spec["goal_not_measured"]
        out.append({"text": cell(text, h, r, c, x), "met": met})
    return out


def rendered_row(rid, res):
    spec = SPECS[rid]
    h, r, c = ns(res.get("figures")), ns(res.get("reference")), ns(res.get("context"))
    x = ratios_of(spec, h, r, c)
    return [cell(spec["what"], h, r, c, x), cell(spec["hotpatch"], h, r, c, x), cell(spec["reference"], h, r, c, x), cell(spec["ratio"], h, r, c, x)]


def load_cell(load):
    if not load:
        return "—"
    text = f"{load['before'][0]:.2f} → {load['after'][0]:.2f}"
    return text + (" **noisy**" if load.get("noisy") else "")


def render(results):
    """The generated section of docs/BENCHMARKS.md from one or more runs' results."""
    rows, runs = {}, []
    for res in results:
        runs.append(res)
        for row in res["rows"]:
            rows[row["id"]] = dict(row, run=res["run"])
    last = runs[-1]
    m = last["machine"]
    out = ["# Benchmarks", "",
           f"Written by {' and '.join(f'`{r}`' for r in dict.fromkeys(res['command'] for res in runs))} (bench/bench.py); every figure below comes from the run{'s' if len(runs) > 1 else ''} described here, "
           "each row's reference measured in the same run as the row. Regenerate this section with "
           f"`python3 bench/bench.py render --doc docs/BENCHMARKS.md {' '.join(r.get('file', 'RESULTS.json') for r in runs)}`.", ""]
    for res in runs:
        prefix = f"- Run {res['run']}: " if len(runs) > 1 else "- "
        out.append(f"{prefix}Date: {res['started']}; command `{res['command']}`; source: commit {res['source']}; "
                   f"{res['seconds']:.0f} s; load average (1/5/15 min) {' '.join(map(str, res['load_start']))} at the start, "
                   f"{' '.join(map(str, res['load_end']))} at the end; results `{res.get('file', '?')}`")
    out += [f"- Machine: {m['nproc']} CPUs (`nproc`), {m['cpu']}, kernel {m['kernel']}, {m['mem_gb']} GB RAM",
            "- Other work on the machine shows up as noise in both columns alike, which is why every figure is a ratio against a "
            "reference measured in the same run. The load column is the 1-minute load average before → after the row's measurement; **noisy** marks a row "
            f"before which the rest of the machine kept more than {last.get('noisy_cores', 0.5)} of the {m['nproc']} cores busy "
            "(sampled for 1 s with nothing of ours running; the load average also counts our previous row for a minute).", "",
           "| what | hotpatch | reference | ratio | load |", "|---|---|---|---|---|"]
    goals, notes = [], []
    for rid in sorted(rows, key=row_key):
        res = rows[rid]
        if rid not in SPECS:
            continue
        if res["status"] != "ok":
            out.append(f"| {rid}. **{res['status']}**: {res.get('reason', '')} | — | — | — | — |")
            continue
        out.append("| " + " | ".join(rendered_row(rid, res) + [load_cell(res.get("load"))]) + " |")
        for g in res.get("goals", []):
            label = g["met"] if isinstance(g["met"], str) else {True: "Met", False: "Not met", None: "No goal set"}[g["met"]]
            goals.append(f"- **{label}**: {g['text']}")
        notes += [f"- {n}" for n in res.get("notes", [])]
    c9 = next((rows[r]["context"] for r in ("9a", "9b", "9c") if r in rows and rows[r].get("context")), {})
    if c9.get("reduced"):
        goals.append(f"- The three scale goals above were measured with a **reduced** registry ({c9['apps']} apps, {c9['patches']} patches), "
                     "not 1,000 apps × 20 × 5: see row 9 and the run notes.")
    if last.get("wrk_seconds", 5) != 5:
        notes.append(f"- **wrk ran {last['wrk_seconds']} s per run (BENCH_WRK_SECONDS), not the 5 s of `make bench`.**")
    tools = {}
    for res in runs:
        tools.update({k: v for k, v in res.get("tools", {}).items() if v})
    if tools:
        notes.append("- Tools: " + "; ".join(f"{k} {v}" for k, v in sorted(tools.items()) if v) + ".")
    out += ["", "## Goals", "", "From issues 5 and 13, each judged on the ratio measured above (reported, not asserted).", ""] + (goals or ["- (no row with a goal was measured)"])
    out += ["", "## Run notes", "", "What this run measured beside the table (the method of every row is in the Notes below).", ""] + (notes or ["- (none)"])
    return "\n".join(out) + "\n"


def write_doc(section, path):
    with open(path) as f:
        text = f.read()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
    else:
        head, tail = "", "\n" + text
    with open(path + ".tmp", "w") as f:
        f.write(f"{head}{BEGIN}\n{section}{END}{tail}")
    os.replace(path + ".tmp", path)


def markdown_table(section):
    return "\n".join(l for l in section.splitlines() if l.startswith("|")) + "\n"


# -- running ----------------------------------------------------------------------------------------

def missing_tools(spec):
    need = {"wrk": "wrk", "nginx": "nginx", "haproxy": "haproxy", "openssl": "openssl", "taskset": "taskset"}
    gone = [t for t in spec.get("needs", []) if t in need and not shutil.which(need[t])]
    if "postgres" in spec.get("needs", []) and not os.path.exists(os.path.join(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"), "postgres")):
        gone.append("PostgreSQL 15")
    gone += [f".build/release/{e}" for e in ("patchd", "patchctl", "hotpatch-bench") if not os.access(f"{BIN}/{e}", os.X_OK)]
    if not os.access(PY, os.X_OK):
        gone.append(".venv (make venv)")
    return gone


def tools():
    """The versions of the references, for the run notes."""
    def version(cmd, pattern):
        line = first_line(cmd) if shutil.which(cmd[0]) else None
        m = re.search(pattern, line or "")
        return m.group(1) if m else None
    clients, cluster = CTX.cache.get("clients"), CTX.cache.get("pg")
    return {"nginx": version(["nginx", "-v"], r"nginx/(\S+)"), "wrk": version(["wrk", "-v"], r"wrk (\S+)"),
            "openssl": version(["openssl", "version"], r"OpenSSL (\S+)"), "haproxy": version(["haproxy", "-v"], r"version (\S+)"),
            "python-tuf": clients.get("tuf") if isinstance(clients, dict) else None,
            "postgres": re.sub(r"^postgres \(PostgreSQL\) ", "", cluster.version or "") or None if isinstance(cluster, types.SimpleNamespace) else None}


def run_row(rid, noisy_cores):
    spec = SPECS[rid]
    t = time.monotonic()
    res = {"id": rid, "status": "ok"}
    gone = missing_tools(spec)
    if gone:
        res.update(status="skipped", reason=f"missing: {', '.join(gone)} (make bench installs them)")
        say(f"row {rid}: skipped, {res['reason']}")
        return res
    CTX.used = []
    try:
        h, r, c, notes = spec["fn"]()
    except (Failed, OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, subprocess.SubprocessError) as e:
        res.update(status="failed", reason=(str(e) if isinstance(e, Failed) else f"{type(e).__name__}: {e}").replace("\n", " ")[:500])
        say(f"row {rid}: failed: {res['reason']}")
        return res
    finally:
        used, CTX.used = CTX.used, None
    x = ratios_of(spec, ns(h), ns(r), ns(c))
    load = next((CTX.loads[u] for u in used if u in CTX.loads and not u.startswith(("servers:", "registry", "pg"))), None) \
        or next((CTX.loads[u] for u in used if u in CTX.loads), None)
    if load:
        load = dict(load, noisy=load["others_busy_cores"] > noisy_cores)
    res.update(figures=h, reference=r, context=c, ratio=getattr(x, "main", None),
               ratios={k: v for k, v in vars(x).items() if k != "aim"},
               goals=evaluate_goals(spec, ns(h), ns(r), ns(c), x), notes=notes, load=load,
               measurements=used, seconds=round(time.monotonic() - t, 1))
    say(f"row {rid}: " + " | ".join(rendered_row(rid, res)[1:]))
    return res


def cmd_run(args):
    global CTX
    wanted = ORDER
    if args.rows:
        asked = [r.strip() for r in args.rows.split(",") if r.strip()]
        unknown = [r for r in asked if r not in SPECS]
        if unknown:
            sys.exit(f"bench: unknown rows {', '.join(unknown)} (rows: {', '.join(sorted(SPECS, key=row_key))})")
        wanted = [r for r in ORDER if r in asked]
    full = wanted == ORDER
    wrk_s = int(os.environ.get("BENCH_WRK_SECONDS", "5"))
    noisy = float(os.environ.get("BENCH_NOISY_CORES", "0.5"))
    CTX = Ctx(wrk_s, int(os.environ.get("BENCH_BUDGET", "480")))
    started = datetime.datetime.now(datetime.timezone.utc)
    doc = {"schema": 1, "run": started.strftime("%Y%m%d-%H%M%S"), "started": started.strftime("%Y-%m-%d %H:%M UTC"),
           "command": args.command, "source": source_rev(), "machine": machine(), "load_start": loadavg(),
           "wrk_seconds": wrk_s, "noisy_cores": noisy, "rows_requested": wanted, "rows": []}

    def interrupted(signum, _):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupted)
    try:
        for i, rid in enumerate(wanted):
            doc["rows"].append(run_row(rid, noisy))
            nxt = wanted[i + 1] if i + 1 < len(wanted) else None
            if nxt is None or SPECS[nxt].get("phase", "solo") != SPECS[rid].get("phase", "solo"):
                CTX.end_phase()
        doc["tools"] = tools()
    finally:
        CTX.cleanup()
    doc["load_end"] = loadavg()
    doc["seconds"] = round(CTX.elapsed(), 1)
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, f"{doc['run']}.json")
    doc["file"] = os.path.relpath(path, REPO)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
    section = render([doc])
    if full and not args.no_doc:
        published = os.path.join(RESULTS, "published.json")
        shutil.copyfile(path, published)
        with open(published) as f:
            pub = json.load(f)
        pub["file"] = os.path.relpath(published, REPO)
        write_doc(render([pub]), args.doc)
        say(f"wrote {os.path.relpath(args.doc, REPO)} and bench/results/published.json")
    sys.stdout.write(section)
    say(f"done in {doc['seconds']:.0f} s; results in {doc['file']}")
    failed = [r["id"] for r in doc["rows"] if r["status"] == "failed"]
    if failed:
        say(f"rows that failed to run: {', '.join(failed)}")
    return 1 if failed else 0


def cmd_render(args):
    results = []
    for p in args.results:
        with open(p) as f:
            res = json.load(f)
        res["file"] = os.path.relpath(os.path.abspath(p), REPO)   # the file it is rendered from
        results.append(res)
    section = render(results)
    if args.doc:
        write_doc(section, args.doc)
    else:
        sys.stdout.write(section)
    return 0


SAMPLE = {
    "schema": 1, "run": "20000101-000000", "started": "2000-01-01 00:00 UTC", "command": "make bench", "source": "abc1234",
    "machine": {"nproc": 2, "cpu": "Test CPU", "kernel": "6.0", "mem_gb": 4}, "load_start": [0.1, 0.2, 0.3], "load_end": [1.0, 1.1, 1.2],
    "wrk_seconds": 5, "noisy_cores": 0.5, "seconds": 12.0, "file": "bench/results/sample.json", "tools": {},
    "rows": [
        {"id": "1", "status": "ok", "figures": {"rps": 61684.0, "p50": 0.70, "p99": 6.64}, "reference": {"rps": 33893.0, "p50": 1.57, "p99": 16.99},
         "context": {"wrk_s": 5}, "notes": [], "load": {"before": [0.5, 0.4, 0.3], "after": [1.9, 0.8, 0.4], "others_busy_cores": 0.9, "noisy": True}},
        {"id": "5a", "status": "ok", "figures": {"median_us": 6080, "p90_us": 7530}, "reference": {"goal_us": 20000}, "context": {}, "notes": ["a note"],
         "load": {"before": [1.0, 1.0, 1.0], "after": [1.2, 1.0, 1.0], "others_busy_cores": 0.1, "noisy": False}},
        {"id": "11d", "status": "ok", "figures": {"one_address": {"halted": False, "rolled_back_counted": 20},
                                                  "one_slash16": {"halted": False, "rolled_back_counted": 200}},
         "reference": {"five_blocks": {"halted": True, "halted_after_s": 0.06}}, "context": {}, "notes": []},
        {"id": "16a", "status": "skipped", "reason": "missing: haproxy (make bench installs them)"},
    ]}


def cmd_selftest(_args):
    """The renderer turns a sample run into the table (no server, well under a second)."""
    for spec in SPECS.values():
        for key in ("fn", "what", "hotpatch", "reference", "ratio"):
            assert key in spec, (spec, key)
    sample = json.loads(json.dumps(SAMPLE))
    for row in sample["rows"]:
        if row["status"] == "ok":
            spec = SPECS[row["id"]]
            h, r, c = ns(row["figures"]), ns(row["reference"]), ns(row["context"])
            row["goals"] = evaluate_goals(spec, h, r, c, ratios_of(spec, h, r, c))
    section = render([sample])
    expected = [
        "| what | hotpatch | reference | ratio | load |",
        "| 1. Check path: `timestamp.json`, wrk -t2 -c64 -d5s, median of 3 alternating rounds | 61684 req/s (p50 0.70 / p99 6.64 ms) | nginx: 33893 req/s (p50 1.57 / p99 16.99 ms) | 1.82× req/s; p99 0.39× | 0.50 → 1.90 **noisy** |",
        "| 5a. Publish 100 KB, plain: median of 200 (hash, sign, SQLite commit; lower is better) | 6.08 ms (p90 7.53 ms) | 20 ms (goal) | 0.30× | 1.00 → 1.20 |",
        "| 11d. Forged rollbacks against the default guard (2 %, 50 devices), 2,000 forged devices that each downloaded the bundle: halted? | one address: false (20 counted); 100 addresses of one /16: false (200 counted) | one address in each of 5 /16 blocks: true after 0.06 s | — | — |",
        "| 16a. **skipped**: missing: haproxy (make bench installs them) | — | — | — | — |",
        "- **Met**: check path ≥ 1.0× nginx's requests/s at equal or better p99, `timestamp.json` — 1.82× req/s, p99 6.64 ms vs nginx 16.99 ms (row 1).",
        "- **Met**: aim: ≥ 1.3× nginx, `timestamp.json` — 1.82×, 140% of the aim.",
        "- **Met**: publish of 100 KB ≤ 20 ms median, plain — 6.08 ms, 0.30× of the limit (row 5a).",
        "- a note",
    ]
    lines = section.splitlines()
    for line in expected:
        assert line in lines, f"selftest: missing from the rendered section:\n{line}\n--- got:\n{section}"
    assert [l for l in lines if l.startswith("| ")][1:] == [e for e in expected if e.startswith("| ")][1:], section
    # The document keeps what is outside the markers.
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "B.md")
        with open(p, "w") as f:
            f.write(f"{BEGIN}\nold\n{END}\n\n## Notes\n\nhand-written\n")
        write_doc(section, p)
        write_doc(section, p)
        text = open(p).read()
        assert text.count(BEGIN) == 1 and "old" not in text and text.endswith("## Notes\n\nhand-written\n") and section in text, text
    print("bench.py selftest: ok")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run", help="measure the rows, write bench/results/RUN.json")
    p.add_argument("--rows", default=os.environ.get("ROWS", ""), help="comma-separated row ids, e.g. 7a,10 (default: all)")
    p.add_argument("--command", default="python3 bench/bench.py run", help="the command line the document names")
    p.add_argument("--doc", default=DOC, help="the document a full run renders into")
    p.add_argument("--no-doc", action="store_true", help="a full run leaves the document alone")
    p = sub.add_parser("render", help="the markdown section from results JSON")
    p.add_argument("--doc", help="replace the generated section of this document (else: stdout)")
    p.add_argument("results", nargs="+")
    sub.add_parser("list", help="the rows, in the order they are measured")
    sub.add_parser("selftest", help="render a sample run and check the table")
    args = ap.parse_args()
    if args.cmd == "list":
        for rid in ORDER:
            what = SPECS[rid]["what"]
            print(rid, what if isinstance(what, str) else "(text depends on the run)")
        return 0
    return {"run": cmd_run, "render": cmd_render, "selftest": cmd_selftest}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
