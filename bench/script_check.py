"""Row 20: what the script check costs on a 100 KB JSPatch script (issue 45).

    PATCHCTL=… python bench/script_check.py [RUNS]

A 100 KB script in JSPatch's style (require, then defineClass of app classes, each with a
table of methods whose bodies call Objective-C, as a large main.js has) is checked RUNS times by
the worker beside patchctl (patchcheck: a process per check, JavaScriptCore, the recording
runtime), and against the demo's native manifest. Per run: JavaScriptCore's JSCheckScriptSyntax
alone (the reference, timed by the worker around that one call), the evaluation of the top
level against the recording runtime (the check's own addition), the worker's whole run as its
caller sees it (spawn, engine start, both, the answer), and `patchctl check --manifest`'s
(reading the manifest, the rules). Prints one JSON object of medians in microseconds; asserts
nothing.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def script(size=100 * 1024):
    """Classes of the demo's shape until `size` bytes: each a few overrides and helpers."""
    head = "require('UITableViewCell, NSIndexPath, HPLogger, UIColor, UIView');\n\n"
    parts, n = [head], 0
    while sum(map(len, parts)) < size:
        n += 1
        parts.append(f"""defineClass('Screen{n}ViewController : UIViewController <UITableViewDataSource>', {{
  viewDidLoad: function() {{
    self.super().viewDidLoad();
    self.view().setBackgroundColor(UIColor.whiteColor());
    HPLogger.log('screen {n} loaded');
  }},
  tableView_numberOfRowsInSection: function(tableView, section) {{
    return self.items().count();
  }},
  tableView_cellForRowAtIndexPath: function(tableView, indexPath) {{
    var cell = tableView.dequeueReusableCellWithIdentifier('Cell{n}');
    if (!cell) {{ cell = UITableViewCell.alloc().initWithStyle_reuseIdentifier(0, 'Cell{n}'); }}
    cell.textLabel().setText('row ' + indexPath.row());
    return cell;
  }},
  items: function() {{ return self.valueForKey('items{n}'); }},
}});

""")
    return "".join(parts).encode()


def main(runs):
    bin_dir = Path(os.environ["PATCHCTL"]).parent
    worker, patchctl = bin_dir / "patchcheck", bin_dir / "patchctl"
    body = script()
    manifest = REPO / "patches" / "demo" / "2.3" / "manifest.json"
    syntax, evaluation, worker_runs, command_runs = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "main.js"
        path.write_bytes(body)
        for _ in range(runs):
            started = time.perf_counter()
            out = subprocess.run([str(worker), "--max-bytes", str(len(body) + 1)], input=body, capture_output=True, check=True)
            worker_runs.append((time.perf_counter() - started) * 1e6)
            answer = json.loads(out.stdout)
            if "syntaxError" in answer or "exception" in answer:
                raise SystemExit(f"the benchmark script does not check cleanly: {out.stdout[:300]!r}")
            syntax.append(answer["timing"]["syntaxMicros"])
            evaluation.append(answer["timing"]["evaluationMicros"])
            started = time.perf_counter()
            done = subprocess.run([str(patchctl), "check", "--manifest", str(manifest), "--json", str(path)], capture_output=True)
            command_runs.append((time.perf_counter() - started) * 1e6)
            if done.returncode not in (0, 1):
                raise SystemExit(f"patchctl check failed: {done.stderr.decode()[:300]}")
    med = lambda xs: int(statistics.median(xs))
    print(json.dumps({"runs": runs, "bytes": len(body), "syntax_us": med(syntax), "evaluation_us": med(evaluation),
                      "added_us": med(evaluation), "worker_us": med(worker_runs), "command_us": med(command_runs)}))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
