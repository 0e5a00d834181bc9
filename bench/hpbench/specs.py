"""The rows as data: each row's prose, cells, ratios, goals, the tools it needs and its phase
(SPECS), and the order rows are measured in (ORDER).
"""
import re

from .rows import (
    r1, r2, r3, r4, r5a, r5b, r6a, r6b, r6c, r7a, r7b, r7c, r8a, r8b, r9a, r9b, r9c, r10, r10b,
    r10c, r10d, r11, r11b, r11c, r11d, r11e, r12, r13, r14, r15a, r15b, r16a, r16b, r17a, r17b,
    r17c, r18, r18b, r19a, r19b, r19c, r20)


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
