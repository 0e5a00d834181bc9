"""`bench.py selftest` (part of `make test`): the renderer on a sample run, no server.
"""
import json
import os
import tempfile

from .specs import SPECS
from .render import BEGIN, END, evaluate_goals, ns, ratios_of, render, write_doc


SAMPLE = {
    "schema": 1, "run": "20000101-000000", "started": "2000-01-01 00:00 UTC", "command": "make bench", "source": "abc1234",
    "machine": {"nproc": 2, "cpu": "Test CPU", "kernel": "6.0", "mem_gb": 4}, "load_start": [0.1, 0.2, 0.3], "load_end": [1.0, 1.1, 1.2],
    "wrk_seconds": 5, "noisy_cores": 0.5, "seconds": 12.0, "file": "bench/results/sample.json", "tools": {},
    "rows": [
        {"id": "1", "status": "ok", "figures": {"rps": 61684.0, "p50": 0.70, "p99": 6.64}, "reference": {"rps": 33893.0, "p50": 1.57, "p99": 16.99},
         "context": {"wrk_s": 5}, "notes": [], "load": {"before": [0.5, 0.4, 0.3], "after": [1.9, 0.8, 0.4], "others_busy_cores": 0.9, "noisy": True}},
        {"id": "5a", "status": "ok", "figures": {"median_us": 6080, "p90_us": 7530}, "reference": {"goal_us": 20000}, "context": {}, "notes": ["a note"],
         "load": {"before": [1.0, 1.0, 1.0], "after": [1.2, 1.0, 1.0], "others_busy_cores": 0.1, "noisy": False}},
        {"id": "11d", "status": "ok", "figures": {"one_address": {"halted": False, "rolled_back_counted": 20},
                                                  "one_slash16": {"halted": False, "rolled_back_counted": 200}},
         "reference": {"five_blocks": {"halted": True, "halted_after_s": 0.06}}, "context": {}, "notes": []},
        {"id": "16a", "status": "skipped", "reason": "missing: haproxy (make bench installs them)"},
    ]}


def cmd_selftest(_args):
    """The renderer turns a sample run into the table (no server, well under a second)."""
    for spec in SPECS.values():
        for key in ("fn", "what", "hotpatch", "reference", "ratio"):
            assert key in spec, (spec, key)
    sample = json.loads(json.dumps(SAMPLE))
    for row in sample["rows"]:
        if row["status"] == "ok":
            spec = SPECS[row["id"]]
            h, r, c = ns(row["figures"]), ns(row["reference"]), ns(row["context"])
            row["goals"] = evaluate_goals(spec, h, r, c, ratios_of(spec, h, r, c))
    section = render([sample])
    expected = [
        "| what | hotpatch | reference | ratio | load |",
        "| 1. Check path: `timestamp.json`, wrk -t2 -c64 -d5s, median of 3 alternating rounds | 61684 req/s (p50 0.70 / p99 6.64 ms) | nginx: 33893 req/s (p50 1.57 / p99 16.99 ms) | 1.82× req/s; p99 0.39× | 0.50 → 1.90 **noisy** |",
        "| 5a. Publish 100 KB, plain: median of 200 (hash, sign, SQLite commit; lower is better) | 6.08 ms (p90 7.53 ms) | 20 ms (goal) | 0.30× | 1.00 → 1.20 |",
        "| 11d. Forged rollbacks against the default guard (2 %, 50 devices), 2,000 forged devices that each downloaded the bundle: halted? | one address: false (20 counted); 100 addresses of one /16: false (200 counted) | one address in each of 5 /16 blocks: true after 0.06 s | — | — |",
        "| 16a. **skipped**: missing: haproxy (make bench installs them) | — | — | — | — |",
        "- **Met**: check path ≥ 1.0× nginx's requests/s at equal or better p99, `timestamp.json` — 1.82× req/s, p99 6.64 ms vs nginx 16.99 ms (row 1).",
        "- **Met**: aim: ≥ 1.3× nginx, `timestamp.json` — 1.82×, 140% of the aim.",
        "- **Met**: publish of 100 KB ≤ 20 ms median, plain — 6.08 ms, 0.30× of the limit (row 5a).",
        "- a note",
    ]
    lines = section.splitlines()
    for line in expected:
        assert line in lines, f"selftest: missing from the rendered section:\n{line}\n--- got:\n{section}"
    assert [l for l in lines if l.startswith("| ")][1:] == [e for e in expected if e.startswith("| ")][1:], section
    # The document keeps what is outside the markers.
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "B.md")
        with open(p, "w") as f:
            f.write(f"{BEGIN}\nold\n{END}\n\n## Notes\n\nhand-written\n")
        write_doc(section, p)
        write_doc(section, p)
        text = open(p).read()
        assert text.count(BEGIN) == 1 and "old" not in text and text.endswith("## Notes\n\nhand-written\n") and section in text, text
    print("bench.py selftest: ok")
    return 0
