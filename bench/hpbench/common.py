"""What every part of the bench shares: the repository's paths, Failed, the machine, statistics,
running commands, HTTP, and the run's context.

The run's context is `common.CTX`: None until `bench.py run` sets it (runner.cmd_run). Every
module reads it as `common.CTX`, never `from .common import CTX`, which would copy the None.
"""
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from http.client import HTTPConnection
from urllib.parse import urlsplit

# bench/hpbench/common.py: the repository is three levels up.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(REPO, ".build", "release")
PY = os.path.join(REPO, ".venv", "bin", "python")
RESULTS = os.path.join(REPO, "bench", "results")
DOC = os.path.join(REPO, "docs", "BENCHMARKS.md")
LUA = os.path.join(REPO, "bench", "distinct-devices.lua")
PACED = os.path.join(REPO, "bench", "paced.lua")
BUNDLE = os.path.join(REPO, "patches", "demo", "2.3", "main.js")
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


# The run's context (a Ctx): set by runner.cmd_run, read everywhere as common.CTX.
CTX = None


def pinned(cpu):
    """The command prefix that runs a process on CPU `cpu` alone (none: where the kernel likes)."""
    return [] if cpu is None else ["taskset", "-c", str(cpu)]
