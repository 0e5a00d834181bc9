"""The rows: one function each, returning hotpatch's figures, the reference's, context and notes
(what SPECS calls as its "fn"). The measurements they read are in load, client, publish and
scale; a measurement shared by rows runs once (Ctx.once).
"""
import os
import statistics

from . import common
from .common import BUNDLE, Failed, GOAL_P99_US, GOAL_US, best
from .fixtures import pg
from .load import cmp_figures, m_haproxy, m_nginx, m_pg_serve, m_reference
from .client import CLIENT_CPUS, m_clients
from .publish import BIG_BYTES, m_crypto, m_pg_publish, m_publish
from .scale import m_helper, m_memory, m_revoke, m_scale


def r1(): h, r, n = cmp_figures(m_nginx("ts"), "1"); return h, r, {"wrk_s": common.CTX.wrk_s}, n
def r2(): h, r, n = cmp_figures(m_nginx("nm"), "2"); return h, r, {}, n
def r18(): h, r, n = cmp_figures(m_nginx("paced2"), "18"); return h, r, {}, n
def r18b(): h, r, n = cmp_figures(m_nginx("paced1"), "18b"); return h, r, {}, n
def r3():
    h, r, n = cmp_figures(m_nginx("dd"), "3")
    return h, r, {"bundle_bytes": os.path.getsize(BUNDLE)}, n
def r4(): h, r, n = cmp_figures(m_nginx("dl"), "4"); return h, r, {}, n
def r19a(): h, r, n = cmp_figures(m_nginx("ts", own_core=True), "19a"); return h, r, {"wrk_s": common.CTX.wrk_s}, n
def r19b(): h, r, n = cmp_figures(m_nginx("nm", own_core=True), "19b"); return h, r, {}, n
def r19c(): h, r, n = cmp_figures(m_nginx("dd", own_core=True), "19c"); return h, r, {"bundle_bytes": os.path.getsize(BUNDLE)}, n
def r17a(): h, r, n = cmp_figures(m_reference("ts"), "17a"); return h, r, {"wrk_s": common.CTX.wrk_s}, n
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
    c = {"scale": scale, "reduced": s["stopped"], "apps": s["apps"], "patches": s["patches"], "wrk_s": common.CTX.wrk_s}
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
