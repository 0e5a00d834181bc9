"""`bench.py run` and `bench.py render`: measuring the rows in ORDER, one results file per run,
the document rendered from a full run.
"""
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import types

from . import common
from .common import BIN, Ctx, Failed, PY, REPO, RESULTS, first_line, loadavg, machine, say, source_rev
from .specs import ORDER, SPECS, row_key
from .render import evaluate_goals, ns, ratios_of, render, rendered_row, write_doc


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
    clients, cluster = common.CTX.cache.get("clients"), common.CTX.cache.get("pg")
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
    common.CTX.used = []
    try:
        h, r, c, notes = spec["fn"]()
    except (Failed, OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, subprocess.SubprocessError) as e:
        res.update(status="failed", reason=(str(e) if isinstance(e, Failed) else f"{type(e).__name__}: {e}").replace("\n", " ")[:500])
        say(f"row {rid}: failed: {res['reason']}")
        return res
    finally:
        used, common.CTX.used = common.CTX.used, None
    x = ratios_of(spec, ns(h), ns(r), ns(c))
    load = next((common.CTX.loads[u] for u in used if u in common.CTX.loads and not u.startswith(("servers:", "registry", "pg"))), None) \
        or next((common.CTX.loads[u] for u in used if u in common.CTX.loads), None)
    if load:
        load = dict(load, noisy=load["others_busy_cores"] > noisy_cores)
    res.update(figures=h, reference=r, context=c, ratio=getattr(x, "main", None),
               ratios={k: v for k, v in vars(x).items() if k != "aim"},
               goals=evaluate_goals(spec, ns(h), ns(r), ns(c), x), notes=notes, load=load,
               measurements=used, seconds=round(time.monotonic() - t, 1))
    say(f"row {rid}: " + " | ".join(rendered_row(rid, res)[1:]))
    return res


def cmd_run(args):
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
    common.CTX = Ctx(wrk_s, int(os.environ.get("BENCH_BUDGET", "480")))
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
                common.CTX.end_phase()
        doc["tools"] = tools()
    finally:
        common.CTX.cleanup()
    doc["load_end"] = loadavg()
    doc["seconds"] = round(common.CTX.elapsed(), 1)
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
