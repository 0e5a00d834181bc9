"""python-tuf's Updater doing in process what `hotpatch-bench client` measures for PatchClient
(bench/bench.py, row 7). One canonical JSON line on stdout:
    {"cold_median_us": N, "nochange_median_us": N, "runs": N}

cold:      a fresh metadata directory bootstrapped from the trusted root, refresh(),
           get_targetinfo(TARGET) and download_target() into a fresh directory.
no-change: an Updater on a warm metadata directory (a previous sync's), refresh().
Each figure is the median of --runs runs (the upper middle one, as hotpatch-bench takes it); the Updater's construction is inside the timing
(it loads and checks the trusted root, which PatchClient.sync does inside its timing too).

usage: python_client.py --server URL --app APP --target PATH --root FILE [--runs N]
"""

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tuf.ngclient import Updater


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True, help="patchd base URL, e.g. http://127.0.0.1:8080")
    parser.add_argument("--app", required=True)
    parser.add_argument("--target", required=True, help="target path, e.g. 2.3/1/main.js")
    parser.add_argument("--root", required=True, help="the app's trusted root (1.root.json)")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()

    base = f"{args.server.rstrip('/')}/v1/apps/{args.app}"
    metadata_url, targets_url = f"{base}/metadata/", f"{base}/targets/"
    root = Path(args.root).read_bytes()
    scratch = Path(tempfile.mkdtemp(prefix="hotpatch-bench-python-"))

    def updater(name: str, bootstrap):
        metadata_dir, target_dir = scratch / name / "metadata", scratch / name / "targets"
        metadata_dir.mkdir(parents=True, exist_ok=True)
        target_dir.mkdir(parents=True, exist_ok=True)
        return Updater(metadata_dir=str(metadata_dir), metadata_base_url=metadata_url,
                       target_dir=str(target_dir), target_base_url=targets_url, bootstrap=bootstrap)

    def full_sync(name: str) -> None:
        u = updater(name, root)
        u.refresh()
        info = u.get_targetinfo(args.target)
        if info is None:
            raise SystemExit(f"python_client: {args.target} is not listed by {base}")
        u.download_target(info)

    try:
        cold = []
        for i in range(args.runs):
            started = time.perf_counter()
            full_sync(f"cold-{i}")
            cold.append(time.perf_counter() - started)

        full_sync("warm")  # the warm directory: one complete sync before the measured runs
        unchanged = []
        for _ in range(args.runs):
            started = time.perf_counter()
            updater("warm", None).refresh()
            unchanged.append(time.perf_counter() - started)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    def micros(values):
        # The same median as hotpatch-bench: the upper middle value of the sorted runs.
        return round(sorted(values)[len(values) // 2] * 1e6)

    print(json.dumps({"cold_median_us": micros(cold), "nochange_median_us": micros(unchanged), "runs": args.runs},
                     sort_keys=True, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
