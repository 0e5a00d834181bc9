#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer harnesses with -sanitize=fuzzer,address and runs each
# for FUZZ_SECONDS (default 60) from the committed seed corpus. A crash (an invariant broken,
# a trap, an ASan report, a timeout) is copied to fuzz/crashes/<Target>/ and fuzzing resumes
# for the rest of that target's time. Then schemathesis fuzzes the HTTP API for as long with a
# random seed. Exit status 1 if anything crashed or schemathesis found a failure.
#   FUZZ_SECONDS=300 make fuzz                  longer
#   FUZZ_TARGETS="FuzzJSON FuzzTUF" make fuzz   some targets
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-60}
[ "$seconds" -gt 0 ] || { echo "fuzz: FUZZ_SECONDS must be a positive number of seconds" >&2; exit 64; }
targets=${FUZZ_TARGETS:-FuzzJSON FuzzTUF FuzzIdentifiers FuzzRouter FuzzBundle FuzzHTTPHead}
scratch=.build/fuzz
# -enable-testing: FuzzRouter and FuzzHTTPHead use internals with @testable import.
flags=(--scratch-path "$scratch" -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing)

for target in $targets; do
  echo "== building $target"
  build_log=$scratch-build-$target.log
  if ! HOTPATCH_FUZZ=1 swift build "${flags[@]}" --product "$target" >"$build_log" 2>&1; then
    # gold warns once per exported local symbol of ASan's instrumentation: noise, dropped.
    grep -v "Cannot export local symbol" "$build_log" >&2
    echo "fuzz: building $target failed" >&2
    exit 2
  fi
  tail -n 1 "$build_log"
done
bin=$(HOTPATCH_FUZZ=1 swift build "${flags[@]}" --show-bin-path)

dict() {
  case $1 in
    FuzzJSON | FuzzTUF) echo "-dict=fuzz/dict/json.dict" ;;
    FuzzRouter) echo "-dict=fuzz/dict/router.dict" ;;
  esac
}

# libFuzzer's own handler must see a trap, not Swift's backtracer (which would take seconds
# per crash); leaks are not crashes here (the router fixture lives for the whole process).
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
# FuzzRouter's registry lives in a temporary directory; a crash leaves it behind, so it
# goes under .build and is removed at the end.
export TMPDIR=$PWD/$scratch/tmp
mkdir -p "$TMPDIR"
trap 'rm -rf "$TMPDIR"' EXIT
summary=$scratch/summary.txt
: >"$summary"
failed=0
for target in $targets; do
  corpus=$scratch/corpus/$target
  artifacts=$scratch/artifacts/$target
  mkdir -p "$corpus" "$artifacts"
  rm -f "$artifacts"/*
  deadline=$((SECONDS + seconds))
  runs=0 crashes=0 attempts=0 cov= ft= corp= counters=
  while left=$((deadline - SECONDS)); [ "$left" -gt 0 ] && [ "$attempts" -lt 5 ]; do
    attempts=$((attempts + 1))
    log=$scratch/$target.log
    echo "== fuzzing $target for ${left}s"
    # New inputs go to the first corpus directory (under .build); the committed seeds in
    # fuzz/corpus and the fixed crashes in fuzz/crashes-fixed (replayed first) are only read.
    seeds=("fuzz/corpus/$target")
    [ -d "fuzz/crashes-fixed/$target" ] && seeds+=("fuzz/crashes-fixed/$target")
    status=0
    "$bin/$target" -max_total_time="$left" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" $(dict "$target") "$corpus" "${seeds[@]}" >"$log" 2>&1 || status=$?
    grep -E "^#[0-9]+.*(INITED|DONE)|invariant broken|ERROR|SUMMARY|Test unit written" "$log" || true
    executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    runs=$((runs + ${executed:-0}))
    last=$(grep -E "^#[0-9]+" "$log" | tail -n 1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
    counters=$(sed -n 's/^INFO: Loaded 1 modules *(\([0-9]*\) inline 8-bit counters.*/\1/p' "$log" | head -n 1)
    [ "$status" = 0 ] && break
    crashes=$((crashes + 1))
  done
  rate=$((runs / seconds))
  for found in "$artifacts"/*; do
    [ -e "$found" ] || continue
    mkdir -p "fuzz/crashes/$target"
    cp "$found" "fuzz/crashes/$target/"
    echo "   saved fuzz/crashes/$target/$(basename "$found")"
  done
  [ "$crashes" = 0 ] || failed=1
  printf '%-16s %9s execs %7s/s  cov %5s of %5s counters  ft %6s  corpus %5s  crashes %s\n' \
    "$target" "$runs" "$rate" "${cov:--}" "${counters:--}" "${ft:--}" "${corp:--}" "$crashes" | tee -a "$summary"
done

# The HTTP surface: schemathesis from docs/openapi.yaml against a live debug patchd, with a
# random seed (make test pins one); its report names the seed to replay a finding.
echo "== schemathesis for ${seconds}s, random seed"
swift build --product patchctl >/dev/null && swift build --product patchd >/dev/null
status=0
PATCHCTL=$PWD/.build/debug/patchctl PATCHD=$PWD/.build/debug/patchd SCHEMATHESIS_SEED=random \
  SCHEMATHESIS_SECONDS=$seconds .venv/bin/python -m pytest -q Tests/interop/test_schemathesis.py \
  >"$scratch/schemathesis.log" 2>&1 || status=$?
tail -n 1 "$scratch/schemathesis.log"
if [ "$status" = 0 ]; then
  echo "schemathesis      passed (${seconds}s)" >>"$summary"
else
  failed=1
  echo "schemathesis      FAILED: see $scratch/schemathesis.log" >>"$summary"
fi

echo
echo "== fuzz summary (${seconds}s per target; $(date -u +%Y-%m-%dT%H:%MZ))"
cat "$summary"
exit $failed
