"""bench/bench.py's parts (`make bench`; bench.py is the command line). Each module imports only
the ones above it:

    common    paths, Failed, the machine, statistics, running commands, HTTP, the run's
              context (common.CTX, set by runner.cmd_run)
    servers   patchd, nginx, haproxy, the reference server
    fixtures  the bench registry and the servers on it, PostgreSQL, device caches
    load      wrk, compare(); rows 1-4 and 15-19's measurements
    client    row 7's measurement
    publish   rows 5, 6 and 14's measurements
    scale     rows 8-10's measurements and the bench/*.py helper scripts (10c-13, 20)
    rows      one function per row: figures, reference, context, notes
    specs     the rows as data (SPECS: prose, cells, goals) and ORDER
    render    the generated section of docs/BENCHMARKS.md
    runner    `bench.py run` and `bench.py render`
    selftest  `bench.py selftest`
"""
