"""Row 7's measurement: PatchClient (hotpatch-bench client) against python-tuf
(bench/python_client.py) on the same patchd, and `patchctl fetch` under hyperfine.
"""
import json
import shutil
import statistics

from . import common
from .common import BIN, PY, REPO, pinned, run, run_json, say
from .fixtures import client_tmp, main_servers, registry


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
        root = common.CTX.path("demo.root.json")
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
        disk = run_json(hp_cmd, "hotpatch-bench client (disk)", env={"TMPDIR": common.CTX.work})
        out = {"tmp": tmp, "hp": hp, "py": py, "first_hp": first_hp, "first_py": first_py, "disk": disk, "fetch_ms": None,
               "tuf": run([PY, "-c", "import tuf; print(tuf.__version__)"]).strip()}
        if shutil.which("hyperfine"):
            # The CLI as a user runs it (process start included): a cold `patchctl fetch`.
            cache = common.CTX.path("fetch-cache")
            run(["hyperfine", "-N", "--runs", "10", "--warmup", "1", "--export-json", common.CTX.path("fetch.json"), "--prepare", f"rm -rf {cache}",
                 f"{BIN}/patchctl fetch --server {s.P} --app demo --app-version 2.3 --device-id bench-cli --root {root} --cache {cache} --force --min-interval 0"],
                "hyperfine patchctl fetch")
            with open(common.CTX.path("fetch.json")) as f:
                out["fetch_ms"] = json.load(f)["results"][0]["median"] * 1000
        return out
    return common.CTX.once("clients", make)
