#!/usr/bin/env bash
# `make run`: the demo app, its patch for 2.3, and patchd serving it. Safe to run again:
# the app is created once, and the patch is published only if it is not already live.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-data} KEYS=${2:-keys} LISTEN=${3:-127.0.0.1:8080}
# The release build `make run` makes; $HOTPATCH_BIN points the tests at another build.
BIN=${HOTPATCH_BIN:-.build/release}
PATCH=patches/demo/2.3/main.js
ctl() { "$BIN/patchctl" "$@" --data "$DATA" --keys "$KEYS"; }

if ! ctl list --app demo >/dev/null 2>&1; then
  ctl apps create demo
fi
# What the demo app's binary has (PatchClientObjC's HPNativeManifest writes this from a debug
# build): every publish to 2.3 is checked against it (docs/PROTOCOL.md section 13).
ctl apps manifest --app demo --app-version 2.3 patches/demo/2.3/manifest.json
sha=$(sha256sum "$PATCH" | cut -d' ' -f1)
if ctl list --app demo --active | grep -q " 2.3 .*$sha"; then
  echo "demo 2.3 already serves $PATCH ($sha)"
else
  ctl publish --app demo --app-version 2.3 "$PATCH"
fi
ctl apps root demo > "$DATA/demo.root.json"

url="http://$LISTEN"
cat <<MSG

Fetch the patch a device gets (X-Device-ID picks its rollout bucket; a second check from
the same device within the app's interval, 3600 s by default, answers 429):
  curl -i -H 'X-Device-ID: my-phone' $url/v1/apps/demo/versions/2.3/patch

Verify every active patch the server serves, from the root the app embeds (what CI runs);
--check also runs the script check on each against the app's native manifest:
  $BIN/patchctl verify --server $url --app demo --root $DATA/demo.root.json --check --manifest patches/demo/2.3/manifest.json

Check a script as publish would, without publishing it (a typo'd selector is refused with the
selector it meant; exit 0 clean, 1 findings):
  $BIN/patchctl check --app demo --app-version 2.3 --data $DATA --keys $KEYS FILE

Publish over HTTP: create a token into a file only you can read, then
  (umask 077; $BIN/patchctl tokens create --app demo --data $DATA --keys $KEYS | tail -1 > demo.token)
  $BIN/patchctl publish --server $url --token-file demo.token --app demo --app-version 2.3 FILE

The web console is at $url/console/ ; sign in with a token (an auditor looks, a publisher
can also halt, resume, revoke, roll back and promote):
  (umask 077; $BIN/patchctl tokens create --app demo --role auditor --name console --data $DATA --keys $KEYS | tail -1 > console.token)

Starting patchd (Ctrl-C stops it cleanly):
MSG
exec "$BIN/patchd" --data "$DATA" --keys "$KEYS" --listen "$LISTEN"
