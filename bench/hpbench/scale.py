"""Memory and scale: rows 8 (patchd RSS), 9 (a large registry vs one app), 10 and 10b (revoke
landing), and the bench/*.py helper scripts of rows 10c-13 and 20 (m_helper).
"""
import json
import os
import sqlite3
import statistics
import subprocess
import time

from . import common
from .common import BIN, Failed, LUA, PY, REPO, body, helper, pooled, run, run_json, say, stop
from .servers import rss_mb, start_patchd, tracked_devices
from .fixtures import client_tmp, ctl, registry
from .load import compare


def m_memory():
    """Row 8: patchd RSS idle, then after driving distinct devices to 1,000,000 tracked."""
    def make():
        g = registry()
        say("row 8: patchd RSS idle, then driving distinct devices to 1,000,000 tracked (at most 90 s)")
        s = start_patchd("memory", g.reg, g.keys)
        time.sleep(1)
        idle = rss_mb(s.pid)
        before = tracked_devices(s.port)
        w = common.CTX.spawn(["wrk", "-t2", "-c64", "-d90s", "-s", LUA, f"{s.url}/v1/apps/fleet/versions/2.3/patch", "--", "memory"],
                             stdout=open(common.CTX.path("wrk-memory.txt"), "w"), stderr=subprocess.STDOUT)
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
    return common.CTX.once("memory", make)


def m_scale():
    """Row 9: a large registry vs a one-app registry, both seeded by hotpatch-bench seed."""
    def make():
        large, lkeys, small, skeys = common.CTX.path("large"), common.CTX.path("large-keys"), common.CTX.path("small"), common.CTX.path("small-keys")
        run([f"{BIN}/hotpatch-bench", "seed", "--data", small, "--keys", skeys, "--apps", "1", "--versions", "20", "--patches", "5"], "hotpatch-bench seed (small)")
        # Seeding gets what is left of the budget after the rest of row 9 (about 60 s); a seed
        # still running then is stopped (SIGTERM: SQLite's WAL keeps the registry consistent).
        budget = max(20, int(common.CTX.budget - common.CTX.elapsed() - 60))
        say(f"row 9: seeding 1000 apps × 20 versions × 5 patches (at most {budget} s)")
        t = time.monotonic()
        seed_out = open(common.CTX.path("seed-large.json"), "w")
        p = common.CTX.spawn([f"{BIN}/hotpatch-bench", "seed", "--data", large, "--keys", lkeys, "--apps", "1000", "--versions", "20", "--patches", "5"],
                             stdout=seed_out, stderr=open(common.CTX.path("seed-large.err"), "w"))
        stopped = False
        while p.poll() is None:
            if time.monotonic() - t >= budget:
                stopped = True
                stop(p)
                break
            time.sleep(0.5)
        if not stopped and p.returncode:
            raise Failed(f"hotpatch-bench seed failed: {open(common.CTX.path('seed-large.err')).read()[-2000:]}")
        seed_s = round(time.monotonic() - t)
        db = sqlite3.connect(f"{large}/registry.sqlite")
        apps = db.execute("SELECT count(*) FROM apps").fetchone()[0]
        full = db.execute("SELECT count(*) FROM (SELECT app FROM patches GROUP BY app HAVING count(*) = 100)").fetchone()[0]
        patches = db.execute("SELECT count(*) FROM patches").fetchone()[0]
        db.close()
        seed_own_s = None
        if not stopped:
            with open(common.CTX.path("seed-large.json")) as f:
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
    return common.CTX.once("scale", make)


def m_revoke():
    """Rows 10 and 10b, on one patchd."""
    def make():
        g = registry()
        say("row 10: 1,000 devices install kill 2.3 patch 2, then patchctl revoke and a forced sync each")
        # Every simulated device keeps its own connection open (as each phone would), all from
        # 127.0.0.1, so the per-address connection cap and new-connection rate are lifted for
        # this patchd only (1,000 devices connect within a second or two).
        s = start_patchd("kill", g.reg, g.keys, "--max-conns-per-ip", "5000", "--max-new-conns-per-ip", "0")
        token = common.CTX.path("kill.token")
        http_ = run_json([PY, f"{REPO}/bench/revoke_landing_http.py", s.url, "kill", "2.3", f"{BIN}/patchctl", token, "3", "1000", "64"],
                         "bench/revoke_landing_http.py")
        def landing(version, patch, prefix, tmp):
            return run_json([f"{BIN}/hotpatch-bench", "revoke-landing", "--server", s.url, "--app", "kill", "--app-version", version,
                             "--root", common.CTX.path("kill.root.json"), "--devices", "1000", "--workers", "64", "--patchctl", f"{BIN}/patchctl",
                             "--token-file", token, "--patch", patch, "--device-prefix", prefix], "hotpatch-bench revoke-landing", env={"TMPDIR": tmp})
        tmp = client_tmp()
        fleet = landing("2.3", "2", "kill", tmp)
        # The same with the 1,000 caches on this machine's disk (a note): other device IDs, 2.4.
        disk = landing("2.4", "2", "disk", common.CTX.work) if tmp != common.CTX.work else None
        stop(s.proc)
        return {"http": http_, "fleet": fleet, "disk": disk, "tmp": tmp}
    return common.CTX.once("revoke", make)


def m_helper(name, script, *args, what=""):
    def make():
        say(what)
        return helper(script, *args)
    return common.CTX.once(name, make)
