"""Publish and crypto: rows 5 (publish), 6 (hotpatch-bench crypto vs openssl speed) and 14
(publish on PostgreSQL vs SQLite).
"""
from . import common
from .common import BIN, pooled, run, run_json, say
from .fixtures import pg


def m_publish():
    def make():
        say("row 5: publish a 100 KB bundle, 200 plain and 200 encrypted")
        cmd = [f"{BIN}/hotpatch-bench", "publish", "--data", common.CTX.path("publish"), "--keys", common.CTX.path("publish-keys"), "--count", "200", "--size", "102400"]
        return {"plain": run_json(cmd, "hotpatch-bench publish"), "encrypted": run_json(cmd + ["--encrypted"], "hotpatch-bench publish --encrypted")}
    return common.CTX.once("publish", make)


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
    return common.CTX.once("crypto", make)


def m_pg_publish():
    """Row 14: publish into a fresh registry on each backend, alternating which goes first."""
    def make():
        url = pg().schema("publish")
        say("row 14: publish a 100 KB bundle, PostgreSQL vs SQLite, 4 alternating rounds of 25")
        out = {"pg": [], "sqlite": []}
        for r in range(1, 5):
            for side in (("pg", "sqlite") if r % 2 else ("sqlite", "pg")):
                where = ["--database", url, "--keys", common.CTX.path("pub-pg-keys")] if side == "pg" else ["--data", common.CTX.path("pub-sqlite"), "--keys", common.CTX.path("pub-sqlite-keys")]
                out[side].append(run_json([f"{BIN}/hotpatch-bench", "publish", *where, "--count", "25", "--size", "102400"], f"hotpatch-bench publish ({side})"))
            say(f"  publish round {r}: PostgreSQL median {out['pg'][-1]['median_us']} µs, SQLite {out['sqlite'][-1]['median_us']} µs")
        return {k: {"median": pooled("median", v), "p95": pooled("p95", v)} for k, v in out.items()}
    return common.CTX.once("pg-publish", make)
