#!/usr/bin/env bash
# make soak: load, memory and slow-connection soak of patchd on loopback (issue 6), bounded:
#   1. wrk 60 s at 256 connections on the check path (timestamp.json and the simple check
#      with a new X-Device-ID per request) and on a bundle download, alternating:
#      zero 5xx, zero socket errors, no status other than 200/304/429;
#   2. RSS sampled every 2 s, after a warm-up, during steady load (downloads and timestamp.json, which track no
#      state): no growth trend;
#   3. 2,000 slowloris connections from 127.0.0.1 while /healthz keeps answering for 127.0.0.2
#      (patchd keeps --max-conns-per-ip of them and cuts those at the header deadline);
#   4. 200 uploads declaring 11 MB each, unauthenticated then authenticated: RSS growth
#      bounded by the body budget, /healthz answering throughout;
#   5. SIGTERM: drained and exit 0.
# SOAK_SECONDS (default 60) sets each load phase.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_PHASE=${SOAK_SECONDS:-60}
BIN=.build/release
PY=${PY:-.venv/bin/python}
work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "soak: FAIL: $*" >&2; exit 1; }

ctl() { "$BIN/patchctl" "$@" --data "$work/data" --keys "$work/keys"; }
ctl apps create demo >/dev/null
ctl apps throttle demo --ip-rate off --min-interval 3600 >/dev/null
head -c 200000 /dev/urandom | base64 -w 76 > "$work/bundle.js"
published=$(ctl publish --app demo --app-version 2.3 "$work/bundle.js" --json)
sha=$(printf '%s' "$published" | sed -E 's/.*"served":\{[^}]*"sha256":"([0-9a-f]{64})".*/\1/')

token=$(ctl tokens create --app demo --name soak | tail -n 1)
# wrk's 256 connections come from one address: the per-address limit is set above them
# (and below the slowloris phase's 2,000); the header deadline is shortened so the
# slowloris phase sees it act.
"$BIN/patchd" --data "$work/data" --keys "$work/keys" --listen 127.0.0.1:0 --max-conns-per-ip 300 --header-timeout 5 \
  > "$work/patchd.out" 2> "$work/patchd.err" &
pid=$!
for _ in $(seq 1 100); do grep -q listening "$work/patchd.out" 2>/dev/null && break; sleep 0.1; done
url=$(awk '{print $4}' "$work/patchd.out")
[ -n "$url" ] || fail "patchd did not start: $(cat "$work/patchd.err")"
rss() { awk '/VmRSS/ {print $2}' "/proc/$pid/status"; }

# One wrk run; fails on socket errors or any status other than 2xx/3xx/429.
load() {
  local name=$1; shift
  local out
  out=$(wrk -t2 -c256 -d"$SECONDS_PER_PHASE"s --timeout 10s "$@" 2>&1)
  echo "$out" > "$work/wrk-$name.txt"
  local rps errors non2xx
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  errors=$(echo "$out" | sed -n 's/.*Socket errors: \(.*\)/\1/p')
  non2xx=$(echo "$out" | awk '/Non-2xx or 3xx/ {print $NF}')
  echo "| $name | $rps | ${errors:-none} | ${non2xx:-0} |"
  [ -z "$errors" ] || fail "$name: socket errors: $errors"
  if [ -n "$non2xx" ] && [ "$name" != "simple check, same device (429s expected)" ]; then fail "$name: $non2xx responses were not 2xx/3xx"; fi
}

echo "## patchd soak, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, ${SECONDS_PER_PHASE}s per phase"
echo
echo "| load | requests/s | socket errors | non-2xx/3xx |"
echo "|---|---|---|---|"
# Warm-up (not measured): connection pools, malloc arenas and the prepared responses
# reach their working size before memory is sampled.
wrk -t2 -c256 -d5s "$url/v1/apps/demo/targets/2.3/1/$sha.main.js" > /dev/null
wrk -t2 -c256 -d5s "$url/v1/apps/demo/metadata/timestamp.json" > /dev/null
( while kill -0 "$pid" 2>/dev/null; do rss >> "$work/rss.txt"; sleep 2; done ) &
sampler=$!
load "bundle download (200 KB)" "$url/v1/apps/demo/targets/2.3/1/$sha.main.js"
load "timestamp.json" "$url/v1/apps/demo/metadata/timestamp.json"
steady_end=$(wc -l < "$work/rss.txt")
load "simple check, new device each request" -s bench/distinct-devices.lua "$url/v1/apps/demo/versions/2.3/patch" -- soak
load "simple check, same device (429s expected)" -H "X-Device-ID: one-device" "$url/v1/apps/demo/versions/2.3/patch"
kill "$sampler" 2>/dev/null || true
curl -s "$url/metrics" > "$work/metrics.txt"
grep -q 'status="5' "$work/metrics.txt" && fail "patchd answered 5xx: $(grep 'status="5' "$work/metrics.txt")"
devices=$(awk '/^hotpatch_tracked_devices / {print $2}' "$work/metrics.txt")

# Memory: compare the first and last third of the steady phases (no per-request state).
mapfile -t steady < <(head -n "$steady_end" "$work/rss.txt")
n=${#steady[@]}
third=$(( n / 3 > 0 ? n / 3 : 1 ))
first=$(printf '%s\n' "${steady[@]:0:$third}" | awk '{s+=$1} END {print int(s/NR)}')
last=$(printf '%s\n' "${steady[@]: -$third}" | awk '{s+=$1} END {print int(s/NR)}')
echo
echo "RSS during steady load: first third ${first} kB, last third ${last} kB ($n samples); after the device phases $(rss) kB with ${devices} tracked devices"
[ "$last" -le $(( first + first / 5 + 2048 )) ] || fail "RSS grew from ${first} kB to ${last} kB under steady load"

slow=$("$PY" soak/slowloris.py "$url" 2000 20 127.0.0.1 127.0.0.2) || fail "slowloris: $slow"
echo "slowloris: $slow"
grep -q 'status="5' <(curl -s "$url/metrics") && fail "5xx after slowloris"
uploads=$("$PY" soak/uploads.py "$url" "$pid" "$token" 200 150) || fail "uploads: $uploads"
echo "uploads: $uploads"

kill -TERM "$pid"
for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then fail "patchd did not exit within 15 s of SIGTERM"; fi
code=0
wait "$pid" || code=$?
pid=""
[ "$code" = 0 ] || fail "patchd exited $code after SIGTERM"
echo "SIGTERM: drained and exited 0"
echo
echo "soak: PASS"
