"""patchd over real HTTP: python-tuf's Updater against the live server (plain, encrypted,
publish/revoke over HTTP, key rotation picked up without a restart), `verify --server`
against a tampered registry, the simple check, tokens, TLS, SIGTERM, keep-alive, bad input."""

import json
import socket
import ssl
import subprocess

import pytest
from tuf.api.exceptions import DownloadError, RepositoryError
from hotpatch_testing import Workspace, binary, cached_version, decrypt, digests, fetch, repo_updater
from patchd_support import Patchd, connection, error_json, poll, request

JS = {
    ("demo", "2.3", 1): "defineClass('A', {});\n",
    ("demo", "2.3", 2): "defineClass('A', {fix: function() { return 2; }});\n",
    ("demo", "2.4", 1): "console.log('2.4 \u00e9t\u00e9 \U0001F600');\n",
    ("sec", "2.3", 1): "require('secret').run(1);\n",
    ("sec", "2.3", 2): "require('secret').run(2);\n",
    ("sec", "10.0.0-beta.2", 1): "// beta\n" * 100,
}


@pytest.fixture
def ws(tmp_path):
    """demo (plain) and sec (encrypted), with the patches of JS published locally; the
    per-IP limit is off so polling clients are never cut off."""
    w = Workspace(tmp_path / "ws")
    w.json("apps", "create", "demo")
    w.json("apps", "create", "--encrypt", "sec")
    for app in ("demo", "sec"):
        w.ok("apps", "throttle", app, "--ip-rate", "off")
    for (app, version, _n), text in JS.items():
        w.publish(app, version, text, rollout=30 if (app, version, _n) == ("demo", "2.3", 2) else None)
    return w


@pytest.fixture
def start():
    """start(ws, tls=None) -> Patchd; every server is stopped at teardown."""
    servers = []

    def _start(w, tls=None, args=()):
        servers.append(Patchd(w, tls=tls, args=args))
        return servers[-1]

    yield _start
    for s in servers:
        s.stop()


@pytest.fixture
def server(ws, start):
    return start(ws)


def active(ws, app):
    return [p for p in ws.listing() if p["app"] == app and p["state"] == "active"]


def listed(patches):
    """PROTOCOL.md section 5: per version, from the newest active patch down, list each (a
    paused or halted one at rollout 0 too), stop after the first at 100 %. Returns (listed, superseded)."""
    shown, hidden = [], []
    for version in {p["appVersion"] for p in patches}:
        done = False
        for p in sorted((p for p in patches if p["appVersion"] == version), key=lambda p: -p["patch"]):
            (hidden if done else shown).append(p)
            done = done or p["rollout"] == 100
    return shown, hidden


# -- 1. python-tuf fetches every active patch --------------------------------------------------

def test_updater_fetches_every_active_patch_plain_and_encrypted(ws, server, tmp_path):
    for app in ("demo", "sec"):
        updater = repo_updater(server.app_url(app), tmp_path / app / "metadata", ws.root_json(app))
        updater.refresh()
        patches, superseded = listed(active(ws, app))
        assert len(patches) + len(superseded) == sum(1 for k in JS if k[0] == app)
        for p in superseded:
            assert updater.get_targetinfo(p["targetPath"]) is None
        for p in patches:
            plain = JS[(app, p["appVersion"], p["patch"])].encode()
            info, body = fetch(updater, p["targetPath"])
            assert info is not None, f"{app} {p['targetPath']} not listed by patchd"
            assert info.custom["patch"] == p["patch"] and info.custom["rollout"] == p["rollout"]
            assert info.custom["plaintext"] == digests(plain)
            assert info.length == len(body) == p["served"]["length"]
            if app == "demo":
                assert body == plain and "encryption" not in info.custom
            else:
                assert "encryption" in info.custom and body != plain
                assert len(body) == len(plain) + 28
                clear = decrypt(ws.content_key(app), app, p["appVersion"], p["patch"], body)
                assert clear == plain and digests(clear) == info.custom["plaintext"]


# -- 2. live changes: publish/revoke over HTTP, rotation run locally -------------------------

def test_live_publish_revoke_and_key_rotation_without_restart(ws, server, tmp_path):
    root1 = ws.root_json("demo")
    demo = server.app_url("demo")
    shared = tmp_path / "shared" / "metadata"
    first = repo_updater(demo, shared, root1)
    first.refresh()
    assert first.get_targetinfo("2.3/3/main.js") is None
    targets_before = cached_version(shared, "targets")

    token = ws.token("--app", "demo", "--name", "ci@example.com")
    new = b"defineClass('A', {fix: function() { return 3; }});\n"
    out = ws.json("publish", "--server", server.url, "--token", token, "--app", "demo",
                  "--app-version", "2.3", ws.write_file(new), registry=False)
    assert out["patch"] == 3 and out["targetPath"] == "2.3/3/main.js"

    info, body = fetch(repo_updater(demo, tmp_path / "fresh1" / "metadata", root1), "2.3/3/main.js")
    assert body == new and info.custom["plaintext"] == digests(new)
    again = repo_updater(demo, shared, None)  # same metadata_dir, cached root
    info, body = fetch(again, "2.3/3/main.js")
    assert body == new and cached_version(shared, "targets") > targets_before

    ws.ok("revoke", "--server", server.url, "--token", token, "--app", "demo", "--app-version", "2.3",
          "--patch", "3", registry=False)
    assert repo_updater(demo, shared, None).get_targetinfo("2.3/3/main.js") is None
    assert repo_updater(demo, tmp_path / "fresh2" / "metadata", root1).get_targetinfo("2.3/3/main.js") is None
    assert request(server.url, f"/v1/apps/demo/targets/2.3/3/{out['served']['md5']}.main.js").status == 404

    n = 0
    for role in ("root", "timestamp"):
        ws.json("keys", "rotate", "--app", "demo", "--role", role)

        def downloads_with_new_root(role=role):
            nonlocal n
            n += 1
            md = tmp_path / f"rot-{role}-{n}" / "metadata"
            updater = repo_updater(demo, md, root1)
            _, b = fetch(updater, "2.3/1/main.js")
            assert b == JS[("demo", "2.3", 1)].encode()
            return (md, cached_version(md)) if cached_version(md) == (2 if role == "root" else 3) else None

        md, version = poll(downloads_with_new_root, timeout=3.0)
        root = json.loads((md / "root.json").read_bytes())["signed"]
        if role == "root":
            assert root["roles"]["root"]["keyids"] != json.loads(root1)["signed"]["roles"]["root"]["keyids"]
        else:
            ts = json.loads((md / "timestamp.json").read_bytes())
            assert [s["keyid"] for s in ts["signatures"]] == root["roles"]["timestamp"]["keyids"]
        # A client that trusted the old root follows the chain too.
        assert fetch(repo_updater(demo, shared, None), "2.4/1/main.js")[0] is not None
        assert cached_version(shared) == version


# -- 3. verify --server, then a tampered registry -----------------------------------------------

def _tamper_blob(db, ws):
    p = next(p for p in active(ws, "demo") if p["targetPath"] == "2.3/1/main.js")
    evil = b"alert('pwned');\n".ljust(p["served"]["length"], b" ")
    assert db.execute("UPDATE blobs SET bytes = ? WHERE sha256 = ?", (evil, p["served"]["sha256"])).rowcount == 1


def _tamper_metadata(db, ws):
    version, raw = db.execute("SELECT version, bytes FROM metadata WHERE app='demo' AND role='targets' "
                              "ORDER BY version DESC LIMIT 1").fetchone()
    doc = json.loads(bytes(raw))
    # The plaintext digest an app checks after decrypting; same length, so only the
    # snapshot's hash of targets and the targets signature can catch it.
    plain = doc["signed"]["targets"]["2.3/1/main.js"]["custom"]["plaintext"]
    plain["sha256"] = ("0" if plain["sha256"][0] != "0" else "1") + plain["sha256"][1:]
    bad = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    assert len(bad) == len(bytes(raw)) and bad != bytes(raw)
    assert db.execute("UPDATE metadata SET bytes = ? WHERE app='demo' AND role='targets' AND version = ?",
                      (bad, version)).rowcount == 1


def _tamper_timestamp_signature(db, ws):
    version, raw = db.execute("SELECT version, bytes FROM metadata WHERE app='demo' AND role='timestamp' "
                              "ORDER BY version DESC LIMIT 1").fetchone()
    doc = json.loads(bytes(raw))
    sig = doc["signatures"][0]["sig"]
    doc["signatures"][0]["sig"] = sig[:10] + ("0" if sig[10] != "0" else "1") + sig[11:]
    assert db.execute("UPDATE metadata SET bytes = ? WHERE app='demo' AND role='timestamp' AND version = ?",
                      (json.dumps(doc, separators=(",", ":")).encode(), version)).rowcount == 1


@pytest.mark.parametrize("tamper", [_tamper_blob, _tamper_metadata, _tamper_timestamp_signature],
                         ids=["blob", "targets-metadata", "timestamp-signature"])
def test_verify_server_passes_then_fails_on_tampered_registry(ws, start, tamper, tmp_path):
    root = ws.root_file("demo")
    server = start(ws)
    good = ws.run("verify", "--server", server.url, "--app", "demo", "--root", root, registry=False)
    assert good.rc == 0, good.stderr
    rc, hung = server.stop()
    assert (rc, hung) == (0, False)

    db = ws.sql()  # the SQLite file, or the PostgreSQL schema, behind patchd's back
    with db:
        tamper(db, ws)
    db.close()

    server = start(ws)
    bad = ws.run("verify", "--server", server.url, "--app", "demo", "--root", root, registry=False)
    assert bad.rc == 1, f"verify of a tampered server -> {bad.rc}\n{bad.stdout}\n{bad.stderr}"
    # The reference client refuses it too.
    updater = repo_updater(server.app_url("demo"), tmp_path / "tuf" / "metadata", ws.root_json("demo"))
    with pytest.raises((RepositoryError, DownloadError)):
        fetch(updater, "2.3/1/main.js")


# -- 4. the simple check ---------------------------------------------------------------------

def test_simple_check(ws, server):
    path = "/v1/apps/demo/versions/2.4/patch"
    plain = JS[("demo", "2.4", 1)].encode()
    r = request(server.url, path, headers={"X-Device-ID": "device-a"})
    assert r.status == 200 and r.body == plain
    assert r.headers["X-Patch-Number"] == "1"
    assert r.headers["X-Patch-SHA256"] == digests(plain)["sha256"]
    assert r.headers["X-Patch-MD5"] == digests(plain)["md5"]
    etag = r.headers["ETag"]
    assert etag

    again = request(server.url, path, headers={"X-Device-ID": "device-a"})
    assert again.status == 429 and int(again.headers["Retry-After"]) > 0
    error_json(again)
    assert request(server.url, path, headers={"X-Device-ID": "device-b"}).status == 200

    ws.ok("apps", "throttle", "demo", "--min-interval", "0")
    poll(lambda: request(server.url, path, headers={"X-Device-ID": "device-a"}).status == 200)
    cached = request(server.url, path, headers={"X-Device-ID": "device-a", "If-None-Match": etag})
    assert cached.status == 304 and cached.body == b""

    token = ws.token("--app", "demo")
    ws.ok("revoke", "--server", server.url, "--token", token, "--app", "demo", "--app-version", "2.4", "--all", "--yes",
          registry=False)
    gone = request(server.url, path, headers={"X-Device-ID": "device-a", "If-None-Match": etag})
    assert gone.status == 204 and gone.body == b""

    unknown = request(server.url, "/v1/apps/nosuchapp/versions/2.3/patch", headers={"X-Device-ID": "d"})
    assert unknown.status == 404
    error_json(unknown)
    bad = request(server.url, "/v1/apps/demo/versions/2.03/patch", headers={"X-Device-ID": "d"})
    assert bad.status == 400
    error_json(bad)


# -- 5. tokens ---------------------------------------------------------------------------------

def test_publish_authorization_and_tokens_never_stored(ws, server):
    before = ws.listing()
    publish = "/v1/apps/demo/patches?appVersion=2.3"
    body = b"console.log('unauthorized');\n"
    none = request(server.url, publish, "POST", body=body)
    assert none.status == 401
    error_json(none)
    cli = ws.run("publish", "--server", server.url, "--app", "demo", "--app-version", "2.3",
                 ws.write_file(body), registry=False)
    assert cli.rc != 0

    auditor = ws.token("--app", "demo", "--role", "auditor")
    other = ws.token("--app", "sec")
    everything = ws.token("--all", "--name", "admin")
    for token in (auditor, other):
        r = request(server.url, publish, "POST", headers={"Authorization": f"Bearer {token}"}, body=body)
        assert r.status == 403, (token, r)
        error_json(r)
    wrong = request(server.url, publish, "POST", headers={"Authorization": "Bearer hp_" + "0" * 64}, body=body)
    assert wrong.status == 401
    assert ws.listing() == before
    assert request(server.url, "/v1/apps/demo/patches", headers={"Authorization": f"Bearer {auditor}"}).status == 200

    ok = request(server.url, publish, "POST", headers={"Authorization": f"Bearer {everything}"}, body=body)
    assert ok.status == 201, ok
    assert json.loads(ok.body)["patch"] == 3

    for token in (auditor, other, everything):
        secret = token.split("_", 1)[-1]
        assert not ws.stores(token.encode()) and not ws.stores(secret.encode())


# -- 6. TLS ------------------------------------------------------------------------------------

def test_audit_over_http_pages_and_matches_the_local_log(ws, server):
    """`patchctl audit --server` reads every page (here 3 events a request) and lists the
    same events as the registry on disk; `--after` starts after a seq, locally and remotely."""
    auditor = ws.token("--all", "--role", "auditor")
    local = ws.json("audit", "--verify")
    assert len(local["events"]) > 6 and local["chain"]["intact"]
    remote = ws.json("audit", "--verify", "--server", server.url, "--token", auditor, "--page-size", "3", registry=False)
    assert remote["events"] == local["events"]
    assert remote["chain"] == local["chain"]
    middle = local["events"][4]["seq"]
    tail = [e for e in local["events"] if e["seq"] > middle]
    assert ws.json("audit", "--after", str(middle))["events"] == tail
    assert ws.json("audit", "--after", str(middle), "--server", server.url, "--token", auditor,
                   "--page-size", "2", registry=False)["events"] == tail
    # One raw page: `next` names the last seq returned while more follow.
    page = json.loads(request(server.url, "/v1/audit?limit=2", headers={"Authorization": f"Bearer {auditor}"}).body)
    assert [e["seq"] for e in page["events"]] == [e["seq"] for e in local["events"][:2]]
    assert page["next"] == local["events"][1]["seq"]
    assert ws.run("audit", "--page-size", "3").rc == 64, "--page-size is only for --server"


def test_trusted_proxy_x_forwarded_for(ws, start):
    """Behind a load balancer (here: every loopback client is the balancer) the per-IP
    bucket is the forwarded client's; the same header from an untrusted peer is ignored."""
    ws.ok("apps", "throttle", "demo", "--ip-rate", "2")
    path = "/v1/apps/demo/metadata/1.root.json"
    behind = start(ws, args=["--trusted-proxy", "127.0.0.0/8,::1"])
    assert [request(behind.url, path, headers={"X-Forwarded-For": "203.0.113.1"}).status for _ in range(3)] == [200, 200, 429]
    assert request(behind.url, path, headers={"X-Forwarded-For": "203.0.113.2"}).status == 200
    direct = start(ws)  # no trusted proxy: the header names nobody
    assert [request(direct.url, path, headers={"X-Forwarded-For": f"203.0.113.{n}"}).status for n in range(3)] == [200, 200, 429]
    bad = subprocess.run([str(binary("PATCHD", "patchd")), "--trusted-proxy", "10.0.0.0/33"], capture_output=True, text=True, timeout=10)
    assert bad.returncode == 64 and "prefix length" in bad.stderr


def test_ipv6_listen(ws, start):
    """`--listen [::1]:0` serves on IPv6 loopback and prints a bracketed URL; `[::]` is dual
    stack (IPv4 clients too); the per-IP limit counts an IPv6 client like any other."""
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("this machine has no IPv6 loopback")
    ws.ok("apps", "throttle", "demo", "--ip-rate", "2")
    v6 = start(ws, args=["--listen", "[::1]:0"])
    assert v6.url.startswith("http://[::1]:")
    path = "/v1/apps/demo/metadata/1.root.json"
    assert [request(v6.url, path).status for _ in range(3)] == [200, 200, 429]
    both = start(ws, args=["--listen", "[::]:0"])
    port = both.url.rsplit(":", 1)[1]
    assert request(f"http://127.0.0.1:{port}", "/healthz").status == 200
    assert request(f"http://[::1]:{port}", "/healthz").status == 200


def test_tls(ws, start, tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    server = start(ws, tls=(cert, key))
    assert server.url.startswith("https://127.0.0.1:")
    assert server.stdout() == f"patchd listening on {server.url}\n"
    r = request(server.url, "/healthz", context=ssl.create_default_context(cafile=str(cert)))
    assert r.status == 200


# -- 7. SIGTERM --------------------------------------------------------------------------------

def test_sigterm_drains_and_exits_zero(ws, start):
    server = start(ws)
    assert request(server.url, "/healthz").status == 200
    rc, hung = server.stop(timeout=15)
    assert not hung and rc == 0
    assert "stopped" in server.stderr()


def test_sigterm_during_the_startup_resigning_pass_exits_zero(tmp_path):
    """patchd re-signs every app in the background right after start-up. A SIGTERM while
    that pass was inside OpenSSL used to crash at exit (SIGSEGV in a freed OpenSSL lock:
    exit's clean-up ran under the pass). With 40 apps the pass is still running when the
    signal lands; before the fix about half of such stops crashed on this machine. A later
    fault: about one stop in 60 hung, the signal lost on a thread where it was ignored; the
    signals are now blocked in every thread and taken by sigwait (30 stops here)."""
    w = Workspace(tmp_path / "many")
    for i in range(40):
        w.ok("apps", "create", f"app{i}")
    for _ in range(30):
        server = Patchd(w)
        rc, hung = server.stop(timeout=15)
        assert not hung and rc == 0, server.stderr()
        assert "stopped" in server.stderr()


# -- 8. keep-alive -----------------------------------------------------------------------------

def test_keep_alive(server):
    conn = connection(server.url)
    try:
        for _ in range(3):
            conn.request("GET", "/healthz")
            resp = conn.getresponse()
            assert resp.status == 200 and json.loads(resp.read())["status"] == "ok"
            assert "close" not in (resp.headers.get("Connection") or "").lower()
            assert not resp.will_close
    finally:
        conn.close()


# -- 9. bad input ------------------------------------------------------------------------------

def test_bad_input_is_refused_and_changes_nothing(ws, server):
    before = ws.listing()
    token = ws.token("--app", "demo")
    auth = {"Authorization": f"Bearer {token}"}

    conn = connection(server.url)
    try:  # declare a 12 MiB body, send none of it: the answer must come from the header alone
        conn.putrequest("POST", "/v1/apps/demo/patches?appVersion=2.3")
        conn.putheader("Authorization", auth["Authorization"])
        conn.putheader("Content-Length", str(12 << 20))
        conn.endheaders()
        resp = conn.getresponse()
        assert resp.status == 413
        assert json.loads(resp.read())["error"]["code"]
    finally:
        conn.close()

    for body in (b'{"percent": ', b"not json", b'{"percent": "50"}', b"[]"):
        r = request(server.url, "/v1/apps/demo/versions/2.3/patches/1/rollout", "POST", headers=auth, body=body)
        assert r.status == 400, (body, r)
        error_json(r)

    for path in ("/v1/apps/../metadata/timestamp.json",
                 "/v1/apps/demo/targets/..%2f..%2fetc/1/x.main.js",
                 "/v1/apps/demo/targets/../../../etc/passwd",
                 "/v1/apps/demo%00/metadata/timestamp.json",
                 "/v1/apps/demo/metadata/..%2f..%2fregistry.sqlite"):
        r = request(server.url, path)
        assert 400 <= r.status < 500, (path, r.status, r.body)
    for path in ("/v1/apps/demo/versions/..%2f2.3/revoke", "/v1/apps/demo%00/versions/2.3/revoke"):
        r = request(server.url, path, "POST", headers=auth)
        assert 400 <= r.status < 500, (path, r.status, r.body)
    assert ws.listing() == before
    assert request(server.url, "/healthz").status == 200


def test_nul_byte_in_path_or_query_is_refused(ws, server):
    """A %00 must not truncate the decoded path or a query value (before 765a417 it did:
    /metadata/1.root.json%00 served 1.root.json, ?appVersion=2.3%00evil published to 2.3)."""
    before = ws.listing()
    auth = {"Authorization": f"Bearer {ws.token('--app', 'demo')}"}
    statuses = {}
    for path in ("/v1/apps/demo/metadata/1.root.json%00", "/v1/apps/demo/metadata/timestamp.json%00/../x",
                 "/healthz%00xyz"):
        statuses[path] = request(server.url, path).status
    publish = "/v1/apps/demo/patches?appVersion=2.3%00evil"
    statuses[publish] = request(server.url, publish, "POST", headers=auth, body=b"x();\n").status
    assert all(400 <= s < 500 for s in statuses.values()), statuses
    assert ws.listing() == before
