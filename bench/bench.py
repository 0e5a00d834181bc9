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

This file is the command line; the bench itself is the package bench/hpbench/ (its
__init__.py lists the modules): the rows as data in specs.py, their functions in rows.py.
"""
import argparse
import os
import sys

from hpbench.common import DOC
from hpbench.specs import ORDER, SPECS
from hpbench.runner import cmd_render, cmd_run
from hpbench.selftest import cmd_selftest


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
