"""wrk: running and parsing it, alternating two servers (compare), and the measurements made
that way: patchd vs nginx (rows 1-4, 18, 19), vs the reference server (17), PostgreSQL vs
SQLite (15), and behind haproxy (16).
"""
import re
import statistics
import subprocess
from urllib.parse import urlsplit

from . import common
from .common import BUNDLE, Failed, LUA, PACED, REPO, body, etag, first_line, http, same_body, say, stop
from .servers import raw_response, start_haproxy, start_nginx, start_patchd, start_refserver, tracked_devices
from .fixtures import main_servers, pg_registry, registry


# -- wrk -------------------------------------------------------------------------------------------

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
    with open(common.CTX.path(f"wrk-{name}.txt"), "w") as f:
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
            w = run_wrk(args(words, f"-d{common.CTX.wrk_s}s", f"{label}-{side}-{r}"), f"{label}-{side}-{r}", wrk)
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


# -- the measurements -------------------------------------------------------------------------------

PACED_ROWS = {"2": "18", "1": "18b"}  # pause (ms) → row


def m_nginx(label, own_core=False):
    """Rows 1-4 and 18: patchd vs nginx on the same bytes; own_core: rows 1-3 as row 19
    runs them (the servers on CPU 0, wrk on CPU 1)."""
    def make():
        s, g, d = main_servers(own_core), registry(), "@D@"
        P, N = s.P, s.N
        wrk, row = (WRK_OWN_CORE, {"ts": "19a", "nm": "19b", "dd": "19c"}) if own_core else (WRK_SHARED, {"ts": "1", "nm": "2", "dd": "3"})
        tag = "own-" if own_core else ""
        if label == "ts":
            say(f"row {row['ts']}: timestamp.json, 3 alternating rounds of {' '.join(wrk)} -c64 -d{common.CTX.wrk_s}s each")
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
    return common.CTX.once(f"nginx:{'own-core:' if own_core else ''}{label}", make)


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
    return common.CTX.once(f"reference:{label}", make)


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
    return common.CTX.once("pg-serve", make)


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
    return common.CTX.once("haproxy", make)
