#!/usr/bin/env bash
# Writes the committed seed corpus, fuzz/corpus/<Target>/: a real repository exported by
# patchctl (metadata, an encrypted bundle and its content key) plus hand-written valid and
# invalid inputs. Run it again after a format change and commit the result; fuzz/run.sh
# never writes here (new inputs go to .build/fuzz/corpus/).
# Records inside one seed are separated by the byte 0xFF (see fuzz/FuzzSupport).
set -euo pipefail
cd "$(dirname "$0")/.."

swift build --product patchctl >/dev/null
PATCHCTL=$PWD/.build/debug/patchctl
OUT=fuzz/corpus
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# seed TARGET NAME RECORD... : the records joined by 0xFF.
seed() {
  local target=$1 name=$2 first=1
  shift 2
  {
    for record in "$@"; do
      [ $first = 1 ] || printf '\xff'
      first=0
      printf '%s' "$record"
    done
  } >"$OUT/$target/$name"
}
# seedfile TARGET NAME PREFIX FILE... : like seed, each record a prefix and a file's bytes.
seedfile() {
  local target=$1 name=$2 first=1
  shift 2
  {
    while [ $# -gt 0 ]; do
      [ $first = 1 ] || printf '\xff'
      first=0
      printf '%s' "$1"
      [ -n "${2:-}" ] && cat "$2"
      shift 2
    done
  } >"$OUT/$target/$name"
}

# lines TARGET: each line of stdin, escapes (\xHH, \n, \\) decoded, is one seed file hand-NN.
lines() {
  local i=0 line
  while IFS= read -r line; do
    i=$((i + 1))
    printf '%b' "$line" >"$OUT/$1/$(printf 'hand-%02d' $i)"
  done
}

rm -rf "$OUT"
mkdir -p "$OUT"/{FuzzJSON,FuzzTUF,FuzzIdentifiers,FuzzRouter,FuzzBundle,FuzzHTTPHead}

# A real repository: one encrypted app with a published patch, exported as static files.
ctl() { "$PATCHCTL" "$@" --data "$work/data" --keys "$work/keys" >/dev/null; }
ctl apps create demo --encrypt
printf 'console.log("patched")\n' >"$work/main.js"
ctl publish --app demo --app-version 2.3 "$work/main.js"
ctl export --app demo --out "$work/export"
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
meta=$work/export/metadata
bundle=$(find "$work/export/targets" -name '*.main.js' | head -n 1)
key=$work/keys/demo/content.key

# --- FuzzJSON: real metadata, then valid and invalid JSON by hand.
for f in "$meta"/*.json; do cp "$f" "$OUT/FuzzJSON/export-$(basename "$f")"; done
lines FuzzJSON <<'JSON'
{}
[]
null
true
-0
9223372036854775807
-9223372036854775808
9223372036854775808
1.5
1e3
01
{"a":[1,2,{"b":null,"c":false}],"":""}
{"a":1,"a":2}
{"\\u00e9":1,"e\\u0301":2}
"\\ud83d\\ude00 \\u00e9 \\/ \\" \\\\ \\b\\f\\n\\r\\t \\u0000"
"\\ud800"
"\\udc00\\ud800"
"raw \\x01 control"
"bad utf8 \\xc3\\x28 \\xed\\xa0\\x80 \\xf4\\x90\\x80\\x80"
 \\t\\r\\n{ "spaced" : [ 1 , 2 ] }\\n
{"trailing":1} x
\\xef\\xbb\\xbf{"bom":1}
[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
{"unterminated
JSON

# --- FuzzTUF: the exported files (raw), then bodies the harness signs with its own keys
# ($K1…$K5 key ids, $P1…$P5 public keys; the byte after the op is the key mask).
seedfile FuzzTUF export-walk W"$now" "" P "$meta/1.root.json" T "$meta/timestamp.json" \
  S "$(ls "$meta"/*.snapshot.json | head -n 1)" G "$(ls "$meta"/*.targets.json | head -n 1)" C ""
seedfile FuzzTUF export-root-as-update R "$meta/1.root.json"
seedfile FuzzTUF export-timestamp-alone T "$meta/timestamp.json"
seedfile FuzzTUF export-snapshot-unpinned S "$(ls "$meta"/*.snapshot.json | head -n 1)"
seedfile FuzzTUF export-targets-unpinned G "$(ls "$meta"/*.targets.json | head -n 1)"

common='"spec_version":"1.0.31","expires":"2031-01-01T00:00:00Z"'
keys='"keys":{"$K1":{"keytype":"ed25519","scheme":"ed25519","keyval":{"public":"$P1"}},"$K2":{"keytype":"ed25519","scheme":"ed25519","keyval":{"public":"$P2"}},"$K3":{"keytype":"ed25519","scheme":"ed25519","keyval":{"public":"$P3"}},"$K4":{"keytype":"ed25519","scheme":"ed25519","keyval":{"public":"$P4"}},"$K5":{"keytype":"ed25519","scheme":"ed25519","keyval":{"public":"$P5"}}}'
root() { # VERSION TIMESTAMP_KEY
  printf '{"_type":"root",%s,"version":%s,"consistent_snapshot":true,%s,"roles":{"root":{"keyids":["$K1"],"threshold":1},"timestamp":{"keyids":["%s"],"threshold":1},"snapshot":{"keyids":["$K3"],"threshold":1},"targets":{"keyids":["$K4"],"threshold":1}}}' \
    "$common" "$1" "$keys" "$2"
}
timestamp() { printf '{"_type":"timestamp",%s,"version":%s,"meta":{"snapshot.json":{"version":%s}}}' "$common" "$1" "$2"; }
snapshot() { printf '{"_type":"snapshot",%s,"version":%s,"meta":{"targets.json":{"version":%s}}}' "$common" "$1" "$2"; }
targets() {
  printf '{"_type":"targets",%s,"version":%s,"targets":{"2.3/1/main.js":{"length":23,"hashes":{"sha256":"%s","md5":"%s"},"custom":{"patch":1,"rollout":100}}}}' \
    "$common" "$1" "$(sha256sum "$work/main.js" | cut -d' ' -f1)" "$(md5sum "$work/main.js" | cut -d' ' -f1)"
}
all=$'\x1f'
seed FuzzTUF signed-walk "t$all$(timestamp 1 1)" "s$all$(snapshot 1 1)" "g$all$(targets 1)" C
seed FuzzTUF signed-rotate-then-walk "r$all$(root 2 '$K5')" "t$all$(timestamp 1 1)" "s$all$(snapshot 1 1)" "g$all$(targets 1)" C
seed FuzzTUF signed-timestamp-rollback "t$all$(timestamp 3 3)" "t$all$(timestamp 2 2)" "t$all$(timestamp 3 3)" C
seed FuzzTUF signed-snapshot-version-mismatch "t$all$(timestamp 1 2)" "s$all$(snapshot 1 1)" "s$all$(snapshot 2 1)" "g$all$(targets 2)" C
seed FuzzTUF signed-wrong-key "t"$'\x08'"$(timestamp 1 1)" "s"$'\x01'"$(snapshot 1 1)"
seed FuzzTUF signed-skipped-root "r$all$(root 3 '$K2')" "r$all$(root 2 '$K2')"
seed FuzzTUF signed-root-versions-at-the-limit "p$all$(root 9223372036854775806 '$K2')" "r$all$(root 9223372036854775807 '$K2')" "r$all$(root 1 '$K2')"
seed FuzzTUF signed-pin-then-expire "p$all$(root 1 '$K2')" "W2032-01-01T00:00:00Z" "t$all$(timestamp 1 1)"
seed FuzzTUF signed-wrong-type "t$all$(snapshot 1 1)" "s$all$(timestamp 1 1)"
seed FuzzTUF signed-bad-fields "t$all"'{"_type":"timestamp","spec_version":"2.0","version":0,"expires":"2031-02-30T00:00:00Z","meta":{}}'

# --- FuzzIdentifiers: names and versions, valid and not, in pairs and triples.
lines FuzzIdentifiers <<'IDS'
demo\xffcom.example.app\xffa-b_c.d
2.3\xff2.3.0\xff2.3.0.0
10.0.0-beta.2\xff10.0.0-beta.10\xff10.0.0
1.0.0-alpha\xff1.0.0-alpha.1\xff1.0.0-alpha.beta
1.0.0-beta.11\xff1.0.0-rc.1\xff1.0.0-1
999999999.0\xff1000000000\xff4294967295
2.03\xff02.3\xff2..3
..\xff.\xff.hidden
a/b\xff%2e%2e\xffa\\b
demo\x00\xff2.3\x00\xff\x00
Demo\xff-app\xff_app
aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
1-\xff1-a..b\xff1.2.3.4.5
e\xcc\x81\xff1.\xcc\x812\xff1-\xc3\xa9
IDS

# --- FuzzRouter: one request per file ($PUB, $AUD, $OTHER tokens; $TARGET a live target).
lines FuzzRouter <<'HTTP'
GET /healthz
GET /metrics
HEAD /v1/apps/demo/metadata/timestamp.json\nX-Device-ID: phone-1
GET /v1/apps/demo/metadata/1.root.json
GET /v1/apps/demo/metadata/2.root.json
GET /v1/apps/demo/metadata/../../../etc/passwd
GET /v1/apps/demo/metadata/%2e%2e%2fregistry.sqlite
GET /v1/apps/demo/metadata/1.root.json%00.txt
GET /v1/apps/..%2f..%2fkeys/metadata/1.root.json
GET $TARGET
GET $TARGET\nIf-None-Match: "x"
GET /v1/apps/demo/targets/2.3/1/00.main.js
GET /v1/apps/demo/targets/2.3/0/abc.main.js
GET /v1/apps/demo/targets/02.3/1/abc.main.js
GET /v1/apps/demo/versions/2.3/patch\nX-Device-ID: device-42
GET /v1/apps/demo/versions/2.3/patch\nX-Device-ID: device-42\nIf-None-Match: "abc", *
GET /v1/apps/demo/versions/10.0.0-beta.2/patch
GET /v1/apps/demo/versions/2.3/patch\nX-Device-ID: 
GET /v1/apps/secret/versions/1.0/patch\nX-Device-ID: d
GET /v1/apps/nope/versions/1.0/patch
POST /v1/apps/demo/patches\nAuthorization: Bearer $PUB\n?appVersion=2.3\n?rollout=25\n\nconsole.log('fuzz')
POST /v1/apps/demo/patches\nAuthorization: Bearer $PUB\n?appVersion=2.3\n?rollout=101\n\nx
POST /v1/apps/demo/patches\nAuthorization: Bearer $PUB\n?appVersion=..\n\nx
POST /v1/apps/demo/patches\nAuthorization: Bearer $PUB\n?appVersion=2.3\n\n
POST /v1/apps/demo/patches\nAuthorization: Bearer $OTHER\n?appVersion=2.3\n\nx
POST /v1/apps/demo/patches\nAuthorization: Bearer wrong\n?appVersion=2.3\n\nx
POST /v1/apps/demo/patches\nAuthorization: bearer  $PUB  \n?appVersion=2.3\n\n\xff\xfe
POST /v1/apps/demo/versions/2.3/revoke\nAuthorization: Bearer $PUB
POST /v1/apps/demo/versions/2.3/patches/1/revoke\nAuthorization: Bearer $PUB
POST /v1/apps/demo/versions/2.3/patches/2/rollout\nAuthorization: Bearer $PUB\n\n{"percent": 75}
POST /v1/apps/demo/versions/2.3/patches/2/rollout\nAuthorization: Bearer $PUB\n\n{"percent": 1e2}
POST /v1/apps/demo/versions/2.3/patches/99999999999999999999/rollout\nAuthorization: Bearer $PUB\n\n{"percent": 5}
GET /v1/apps/demo/patches\nAuthorization: Bearer $AUD\n?active=true
GET /v1/apps/demo/patches\nAuthorization: Bearer $AUD\n?active=yes
GET /v1/audit\nAuthorization: Bearer $AUD\n?verify=true
GET /v1/audit\nAuthorization: Bearer $PUB\n?app=other
GET /v1/audit\n?app=../demo
GET /jspatch/js/2.3/latest\nX-Device-ID: d1
GET /jspatch/js/2.3/v1.zip
GET /jspatch/js/2.3/v0.zip
GET /jspatch/demo/2.3/latest
DELETE /v1/apps/demo/patches
PUT /healthz
OPTIONS *
GET //v1//apps
GET
GET /v1/apps/demo/metadata/timestamp.json\n@::1\nX-Device-ID: \x00
GET /
GET /console
GET /console/
GET /console/main.js\nIf-None-Match: "x"
GET /console/..%2fPackage.swift
GET /console/%2e%2e
GET /v1/whoami\nAuthorization: Bearer $AUD
GET /v1/apps/demo/versions/2.3/patches/1/script\nAuthorization: Bearer $AUD
HTTP

# --- FuzzHTTPHead: raw bytes of a connection, each seed "NAME TEXT" with \r\n escapes (the
# harness caps a head at 16 field lines, 2 KiB).
while read -r name text; do
  printf '%b' "$text" >"$OUT/FuzzHTTPHead/$name"
done <<'HEADS'
get GET /v1/apps/demo/metadata/timestamp.json HTTP/1.1\r\nHost: x\r\nX-Device-ID: a\r\n\r\n
chunked POST /v1/apps/demo/patches?appVersion=2.3 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n5;a=b\r\nhello\r\n0\r\nX: y\r\n\r\n
pipelined \r\nGET /a%00b?x=1+2&y HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.1\r\n
smuggle POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding : chunked\r\n X-Fold: y\r\n\r\n
escaped-unreserved GET /%6detrics HTTP/1.1\r\nHost: x\r\n\r\n
escaped-separator GET /v1%2Fapps/demo%5cmetadata/%2e%2e HTTP/1.1\r\nHost: x\r\n\r\n
escaped-allowed GET /a%20b%25%3F%C3%A9%zz?q=%6d%2F&%5C HTTP/1.1\r\nHost: x\r\n\r\n
absolute-form GET http://127.0.0.1:8080/healthz?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n
absolute-form-ipv6 GET HTTPS://[::1]?x HTTP/1.1\r\nHost: [0:0::1]:443\r\n\r\n
absolute-form-mismatch GET http://user@a/ HTTP/1.1\r\nHost: b\r\n\r\n
host-forms GET / HTTP/1.1\r\nHost: 127.1:99999\r\n\r\nGET / HTTP/1.1\r\nHost: Example.COM.:\r\n\r\n
many-fields GET / HTTP/1.1\r\na:1\r\nb:2\r\nc:3\r\nd:4\r\ne:5\r\nf:6\r\ng:7\r\nh:8\r\ni:9\r\nj:10\r\nk:11\r\nl:12\r\nm:13\r\nn:14\r\no:15\r\nHost: x\r\nq:17\r\n\r\n
chunk-leading-zeros POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n000000000000000000005\r\nhello\r\n0000000000000000000000\r\n\r\n
HEADS

# --- FuzzBundle: key file, app, version, patch number, encrypted bundle.
seedfile FuzzBundle export-bundle "" "$key" demo "" 2.3 "" 1 "" "" "$bundle"
seedfile FuzzBundle export-bundle-other-patch "" "$key" demo "" 2.3 "" 2 "" "" "$bundle"
seedfile FuzzBundle export-bundle-other-app "" "$key" other "" 2.3 "" 1 "" "" "$bundle"
keyhex=$(tr -d '\n' <"$key")
seed FuzzBundle key-uppercase-crlf "$(printf '%s' "$keyhex" | tr a-f A-F)"$'\r\n' demo 2.3 1 "0123456789ab0123456789abcdef"
seed FuzzBundle key-short "${keyhex:0:62}" demo 2.3 1 ""
seed FuzzBundle key-not-hex "${keyhex:0:63}g" demo 2.3 1 "0123456789ab"
seed FuzzBundle key-raw-bytes "0123456789abcdef0123456789abcdef" demo 2.3 -1 "0123456789ab0123456789abcdef0123"
seed FuzzBundle empty "" "" "" "" ""

echo "corpus: $(find "$OUT" -type f | wc -l) files in $OUT"
