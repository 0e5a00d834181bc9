"""The two-person rule (issue 24 item 4) seen from outside: repositories whose top-level
targets need 2 of 2 release engineers' keys, and a staging channel delegated to a role that
needs 2 of 2 QA keys, downloaded by python-tuf (the reference client) from an export and
from a live patchd; the --server flow in which the server holds no targets key and only
signatures go over the wire; and what python-tuf and our client refuse when a compromised
server with the online keys (snapshot, timestamp) serves metadata the rule did not let
through.

    PATCHCTL=… PATCHD=… python -m pytest Tests/interop/test_two_person.py -q
"""

import base64
import hashlib
import http.server
import json
import shutil
import threading
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hotpatch_testing import Workspace, assert_cli_error, fetch, repo_updater
from patchd_support import request, token_file
from securesystemslib.formats import encode_canonical
from securesystemslib.signer import CryptoSigner, Signature, SSlibKey
from test_tuf_delegations import forge_role, newest, repin, signer_of
from tuf.api.exceptions import BadVersionNumberError, RepositoryError, UnsignedMetadataError
from tuf.api.metadata import Metadata, Targets
from tuf.api.serialization import DeserializationError

APP = "demo"
PROD_1, PROD_2, STAGING_OLD, STAGING_1 = b"production(1);\n", b"production(2);\n", b"staging(0);\n", b"staging(1);\n"
WAITING = b"waiting(forBob);\n"


# -- helpers ---------------------------------------------------------------------------------

class Person:
    """A key pair made by `patchctl keys generate` on the person's machine."""

    def __init__(self, ws: Workspace, name: str):
        self.name = name
        self.pem = ws.files / f"{name}.pem"
        made = json.loads(ws.ok("keys", "generate", "--out", self.pem, "--json", registry=False))
        self.pub = Path(made["publicKey"])
        self.keyid = made["keyid"]
        assert self.pub == Path(f"{self.pem}.pub.json") and (self.pem.stat().st_mode & 0o777) == 0o600
        self.signer = signer_of(self.pem)
        assert self.signer.public_key.keyid == self.keyid, "patchctl's keyid is TUF's"

    def secrets(self):
        """Every form the private key could travel in: PEM text, its base64 body, the raw
        32-byte seed as bytes, hex and base64."""
        text = self.pem.read_bytes()
        body = b"".join(line for line in text.splitlines() if not line.startswith(b"-----"))
        key = serialization.load_pem_private_key(text, password=None)
        raw = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
        return [text, body, raw, raw.hex().encode(), base64.b64encode(raw), base64.b64encode(raw).rstrip(b"=")]


def canonical(signed) -> bytes:
    return encode_canonical(signed).encode()


def waits(ws, *args):
    """A command that must wait for another signature: exit 3, the pending change on stdout
    (--json); returns it."""
    result = ws.run(*args, "--json")
    assert result.rc == 3, f"patchctl {' '.join(map(str, args))} -> {result.rc}\n{result.stdout}{result.stderr}"
    return json.loads(result.stdout)["pending"]


def target_path(version, patch, channel=None):
    return f"{channel + '/' if channel else ''}{version}/{patch}/main.js"


def two_person_app(ws):
    """APP with the two-person rule landed (alice + bob, threshold 2) and one production
    patch published by both at once. Returns (alice, bob)."""
    alice, bob = Person(ws, "alice"), Person(ws, "bob")
    made = ws.run("apps", "create", APP, "--targets-key", alice.pub, "--targets-key", bob.pub)
    assert made.rc == 0, made.stdout + made.stderr
    assert "pending: change 1 of demo (targets signed by 2 of 2 keys) has 0 of 2" in made.stdout, made.stdout
    done = ws.json("approve", "--app", APP, "1", "--key-file", alice.pem, "--key-file", bob.pem)
    assert done["state"] == "approved" and sorted(done["signedBy"]) == sorted([alice.keyid, bob.keyid])
    assert not list((ws.keys / APP).glob("targets.*")), "the registry keeps no targets key once the rule landed"
    ws.ok("publish", "--app", APP, "--app-version", "2.3", ws.write_file(PROD_1), "--key-file", alice.pem, "--key-file", bob.pem)
    return alice, bob


def assert_signed_by(doc: dict, people):
    """doc's signatures are exactly one valid signature by each of `people`."""
    data = canonical(doc["signed"])
    assert sorted(s["keyid"] for s in doc["signatures"]) == sorted(p.keyid for p in people)
    by_id = {p.keyid: p for p in people}
    for sig in doc["signatures"]:
        key = by_id[sig["keyid"]].signer.public_key
        key.verify_signature(Signature(sig["keyid"], sig["sig"]), data)


# -- the shared repository: built once per worker, only read (exported, served) by the tests --

@pytest.fixture(scope="module")
def repo(tmp_path_factory, patchctl_path):
    """APP under the two-person rule, every change after it through pending + approve (a
    new patch of the same version and channel supersedes the older one in the metadata, so
    the patches served are one per version and channel):
      2.3/1          production, signed with the registry's targets key
      staging        delegated to role qa, threshold 2 of qa1 + qa2 (their keys never in KEYS)
      staging 2.3/2  qa1 and qa2 at once (qa.json version 2, and its export, kept for the rollback)
      change 1       keys set --role targets --key alice --key bob: alice approves (exit 3), bob lands it
      change 2       production 2.4/1: alice proposes (exit 3), bob approves
      change 3       staging 2.3/3: qa1 proposes (exit 3), qa2 approves (qa.json version 3)
      change 4       production 2.3/4 by alice, left waiting: nothing of it may be served.
    (The delegation comes before the rule: see test_a_channel_is_delegated_after_the_rule_landed.)"""
    ws = Workspace(tmp_path_factory.mktemp("two-person"), patchctl_path)
    ws.create_app(APP)
    ws.publish(APP, "2.3", PROD_1)
    alice, bob, qa1, qa2 = (Person(ws, name) for name in ("alice", "bob", "qa1", "qa2"))
    ws.ok("channels", "create", "staging", "--app", APP)
    delegated = ws.json("keys", "delegate", "--app", APP, "--channel", "staging", "--name", "qa", "--key", qa1.pub, "--key", qa2.pub,
                        "--threshold", "2", "--key-file", qa1.pem, "--key-file", qa2.pem)
    assert delegated["threshold"] == 2 and sorted(delegated["keyids"]) == sorted([qa1.keyid, qa2.keyid])
    assert not list((ws.keys / APP).glob("delegated.*")), "the registry keeps no qa key"
    ws.ok("publish", "--app", APP, "--app-version", "2.3", "--channel", "staging", ws.write_file(STAGING_OLD),
          "--key-file", qa1.pem, "--key-file", qa2.pem)
    old_export = ws.export(APP)
    old_qa = newest(old_export / "metadata", "qa")
    assert old_qa.signed.version == 2 and list(old_qa.signed.targets) == [target_path("2.3", 2, "staging")]

    rule = waits(ws, "keys", "set", "--app", APP, "--role", "targets", "--key", alice.pub, "--key", bob.pub)
    assert (rule["id"], rule["summary"], rule["signedBy"]) == (1, "targets signed by 2 of 2 keys", [])
    assert waits(ws, "approve", "--app", APP, "1", "--key-file", alice.pem)["missing"] == 1
    assert ws.json("approve", "--app", APP, "1", "--key-file", bob.pem)["state"] == "approved"
    assert not list((ws.keys / APP).glob("targets.*")), "the registry keeps no targets key once the rule landed"

    proposed = waits(ws, "publish", "--app", APP, "--app-version", "2.4", ws.write_file(PROD_2), "--key-file", alice.pem)
    assert (proposed["id"], proposed["signedBy"], proposed["missing"]) == (2, [alice.keyid], 1)
    assert ws.json("approve", "--app", APP, "2", "--key-file", bob.pem)["result"]["patch"] == 1

    staged = waits(ws, "publish", "--app", APP, "--app-version", "2.3", "--channel", "staging", ws.write_file(STAGING_1),
                    "--key-file", qa1.pem)
    assert (staged["id"], staged["role"], staged["signedBy"], staged["missing"]) == (3, "qa", [qa1.keyid], 1)
    assert ws.json("approve", "--app", APP, "3", "--key-file", qa2.pem)["result"]["patch"] == 3

    waiting = waits(ws, "publish", "--app", APP, "--app-version", "2.3", ws.write_file(WAITING), "--key-file", alice.pem)
    assert waiting["id"] == 4 and target_path("2.3", 4) in waiting["signed"]["targets"]
    return {"ws": ws, "alice": alice, "bob": bob, "qa1": qa1, "qa2": qa2, "waiting": waiting, "old_qa": old_qa, "old_export": old_export,
            "root": ws.root_json(APP), "root_file": ws.root_file(APP)}


SERVED = {target_path("2.3", 1): PROD_1, target_path("2.4", 1): PROD_2, target_path("2.3", 3, "staging"): STAGING_1}


def check_repository(repo, base_url, metadata_dir):
    """python-tuf on base_url: every patch listed (top-level targets and qa) downloads with its
    bytes, both roles are signed by exactly their two keys, and change 4 (waiting) is not listed."""
    updater = repo_updater(base_url, metadata_dir, repo["root"])
    updater.refresh()
    for path, body in SERVED.items():
        info, data = fetch(updater, path)
        assert data == body, path
    assert updater.get_targetinfo(target_path("2.3", 4)) is None, "a pending patch is never served"
    root = updater._trusted_set.root
    assert root.roles["targets"].threshold == 2
    assert sorted(root.roles["targets"].keyids) == sorted([repo["alice"].keyid, repo["bob"].keyid])
    targets = updater._trusted_set["targets"]
    qa = targets.delegations.roles["qa"]
    assert qa.threshold == 2 and sorted(qa.keyids) == sorted([repo["qa1"].keyid, repo["qa2"].keyid])
    listed = set(targets.targets) | set(updater._trusted_set["qa"].targets)
    assert listed == set(SERVED), "every patch the repository lists was downloaded"
    for role, people in (("targets", ("alice", "bob")), ("qa", ("qa1", "qa2"))):
        cached = json.loads((metadata_dir / f"{role}.json").read_bytes())
        assert_signed_by(cached, [repo[p] for p in people])
    return updater


# -- 1. python-tuf downloads every patch of a threshold-2 repository ------------------------

def test_python_tuf_downloads_every_patch_of_a_threshold_2_export(repo, http_server, tmp_path, patchctl):
    export = repo["ws"].export(APP)
    check_repository(repo, http_server(export), tmp_path / "device")
    report = patchctl("verify", "--repo", export, "--root", repo["root_file"], "--json")
    assert report.rc == 0, report.stdout + report.stderr
    assert sorted(t["path"] for t in json.loads(report.stdout)["targets"]) == sorted(SERVED)


def test_python_tuf_downloads_every_patch_of_a_threshold_2_patchd(repo, start, tmp_path, patchctl):
    server = start(repo["ws"])
    check_repository(repo, server.app_url(APP), tmp_path / "device")
    report = patchctl("verify", "--server", server.url, "--app", APP, "--root", repo["root_file"], "--json")
    assert report.rc == 0, report.stdout + report.stderr
    assert sorted(t["path"] for t in json.loads(report.stdout)["targets"]) == sorted(SERVED)
    assert server.stop() == (0, False)


# -- 2. --server: the server holds no targets key, only signatures travel --------------------

class RecordingProxy:
    """A loopback HTTP proxy in front of `upstream` that records every exchange (method,
    path, request body, answer status): what patchctl sent over the wire."""

    def __init__(self, upstream):
        self.requests = []
        seen = self.requests

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "connection", "content-length", "expect", "transfer-encoding")}
                answer = request(upstream, self.path, method=self.command, headers=headers, body=body if length else None)
                seen.append((self.command, self.path, body, answer.status))
                self.send_response(answer.status)
                for k, v in answer.headers.items():
                    if k.lower() not in ("connection", "content-length", "transfer-encoding", "keep-alive"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = forward

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


@pytest.fixture
def proxy():
    made = []
    yield lambda upstream: made.append(RecordingProxy(upstream)) or made[-1]
    for p in made:
        p.stop()


def test_publish_over_server_waits_for_the_second_key_and_only_signatures_travel(workspace, start, proxy, tmp_path):
    ws = workspace
    alice, bob = two_person_app(ws)
    server = start(ws)
    wire = proxy(server.url)
    token = token_file(ws, ws.token("--app", APP, "--name", "release"), "release.token")

    def over(*args):
        return ws.run(*args, "--server", wire.url, "--token-file", token, registry=False)

    root = ws.root_file(APP)
    device = tmp_path / "device"
    updater = repo_updater(server.app_url(APP), device, root.read_bytes())
    updater.refresh()
    assert fetch(updater, target_path("2.3", 1))[1] == PROD_1
    before = json.loads(ws.run("verify", "--server", server.url, "--app", APP, "--root", root, "--json", registry=False).stdout)

    bundle = ws.write_file(PROD_2)
    published = over("publish", "--app", APP, "--app-version", "2.4", bundle, "--key-file", alice.pem)
    assert published.rc == 3, published.stdout + published.stderr
    assert published.stdout.startswith(f"pending: change 2 of {APP} (publish a {len(PROD_2)}-byte bundle to 2.4 production at 100 %) "
                                        "has 1 of 2 signatures of the targets keys"), published.stdout
    assert "`patchctl approve --app demo 2 --key-file THEIR-KEY.pem`" in published.stdout

    # Nothing new is served: python-tuf and verify --server see the same repository.
    updater = repo_updater(server.app_url(APP), device, None)
    updater.refresh()
    assert updater.get_targetinfo(target_path("2.4", 1)) is None
    after = ws.run("verify", "--server", server.url, "--app", APP, "--root", root, "--json", registry=False)
    assert after.rc == 0, after.stderr
    after = json.loads(after.stdout)
    assert (after["targetsVersion"], after["snapshotVersion"], after["timestampVersion"], len(after["targets"])) == \
           (before["targetsVersion"], before["snapshotVersion"], before["timestampVersion"], 1)

    listed = over("pending", "--app", APP)
    assert listed.rc == 0, listed.stderr
    assert f"change 2 [pending] publish a {len(PROD_2)}-byte bundle to 2.4 production at 100 % by" in listed.stdout
    assert f"targets version {before['targetsVersion'] + 1}: 1 of 2 signatures ({alice.keyid[:12]}…)" in listed.stdout
    assert f"bundle sha256 {hashlib.sha256(PROD_2).hexdigest()}" in listed.stdout
    pending = json.loads(over("pending", "--app", APP, "--json").stdout)
    assert [(c["id"], c["signedBy"], c["missing"]) for c in pending] == [(2, [alice.keyid], 1)]
    signed = pending[0]["signed"]
    assert target_path("2.4", 1) in signed["targets"]

    approved = over("approve", "--app", APP, "2", "--key-file", bob.pem)
    assert approved.rc == 0, approved.stdout + approved.stderr
    assert "approved change 2 of demo" in approved.stdout and "it has landed" in approved.stdout
    assert json.loads(over("pending", "--app", APP, "--json").stdout) == []

    updater = repo_updater(server.app_url(APP), device, None)
    updater.refresh()
    assert fetch(updater, target_path("2.4", 1))[1] == PROD_2
    assert_signed_by(json.loads((device / "targets.json").read_bytes()), [alice, bob])
    assert json.loads((device / "targets.json").read_bytes())["signed"] == signed, "what landed is what both signed"
    final = ws.run("verify", "--server", server.url, "--app", APP, "--root", root, "--json", registry=False)
    assert final.rc == 0 and len(json.loads(final.stdout)["targets"]) == 2, final.stdout + final.stderr

    # The wire: each approval is {"signatures": [{"keyid", "sig"}]} by one key over exactly the
    # pending metadata; no request carries any form of either private key.
    posts = [(path.split("?")[0], status) for method, path, _, status in wire.requests if method == "POST"]
    assert posts == [(f"/v1/apps/{APP}/patches", 202), (f"/v1/apps/{APP}/pending/2/approve", 202),
                     (f"/v1/apps/{APP}/pending/2/approve", 200)], wire.requests
    approvals = [json.loads(body) for method, path, body, _ in wire.requests if method == "POST" and path.endswith("/approve")]
    for body, person in zip(approvals, (alice, bob)):
        assert list(body) == ["signatures"] and len(body["signatures"]) == 1
        sig = body["signatures"][0]
        assert sorted(sig) == ["keyid", "sig"] and sig["keyid"] == person.keyid
        SSlibKey.from_dict(person.keyid, json.loads(person.pub.read_bytes())).verify_signature(
            Signature(sig["keyid"], sig["sig"]), canonical(signed))
    # The audit log, read over --server: the proposal and both approvals, by keyid.
    events = [e for e in json.loads(over("audit", "--app", APP, "--json").stdout)["events"] if e["action"].startswith("change.")]
    assert [(e["action"], e["details"]["id"], e["details"]["signedBy"]) for e in events][-3:] == [
        ("change.propose", 2, []), ("change.approve", 2, [alice.keyid]), ("change.approve", 2, [alice.keyid, bob.keyid])]
    for person in (alice, bob):
        for secret in person.secrets():
            assert not any(secret in body for _, _, body, _ in wire.requests), f"{person.name}'s private key went over the wire"
            assert not ws.stores(secret), f"the registry stores {person.name}'s private key"
    assert server.stop() == (0, False)


# -- 3. refused: what a compromised server with the online keys cannot make devices take ---

def copy_export(repo, tmp_path) -> Path:
    """A fresh export of the shared repository, to tamper with."""
    export = repo["ws"].export(APP)
    own = tmp_path / "export"
    shutil.copytree(export.parents[2], own)
    return own / "v1" / "apps" / APP


def stranger():
    return CryptoSigner(Ed25519PrivateKey.generate())


@pytest.mark.parametrize("signatures", ["alice", "alice twice", "alice and a stranger"])
def test_targets_signed_by_one_release_engineer_are_refused(repo, http_server, tmp_path, patchctl, signatures):
    """Change 4 is waiting for bob. A server that serves its metadata anyway, with alice's
    signature (all a rogue release engineer can give), pinned by a snapshot and timestamp
    re-signed with the online keys of KEYS/demo, is refused by python-tuf and `verify`."""
    export = copy_export(repo, tmp_path)
    md = export / "metadata"
    keys = repo["ws"].keys / APP
    forged = Metadata(Targets.from_dict(json.loads(json.dumps(repo["waiting"]["signed"]))))
    assert forged.signed.version == newest(md, "targets").signed.version + 1
    forged.sign(repo["alice"].signer)
    doc = json.loads(forged.to_bytes())
    if signatures == "alice twice":
        doc["signatures"].append(dict(doc["signatures"][0]))
    elif signatures == "alice and a stranger":
        other = stranger()
        doc["signatures"].append({"keyid": other.public_key.keyid, "sig": other.sign(canonical(doc["signed"])).signature})
    (md / f"{forged.signed.version}.targets.json").write_text(json.dumps(doc))
    repin(md, keys, {"targets.json": forged.signed.version})

    updater = repo_updater(http_server(export), tmp_path / "device", repo["root"])
    with pytest.raises(RepositoryError) as refused:
        updater.refresh()
    if signatures == "alice twice":  # python-tuf refuses two signatures by one keyid outright
        assert isinstance(refused.value, DeserializationError)
    else:
        assert isinstance(refused.value, UnsignedMetadataError) and "targets was signed by 1/2 keys" in str(refused.value)
    why = "duplicate keyid in signatures" if signatures == "alice twice" else "targets metadata has 1 valid signature(s), needs 2"
    assert_cli_error(patchctl("verify", "--repo", export, "--root", repo["root_file"]), 1, why)
    # The device library too: a phone on 2.3 is not offered the waiting patch.
    device = patchctl("fetch", "--server", http_server(export.parents[2]), "--app", APP, "--app-version", "2.3",
                      "--device-id", "phone", "--root", repo["root_file"], "--cache", tmp_path / "cache", "--json")
    assert json.loads(device.stdout)["outcome"] == "failed"
    assert_cli_error(device, 1, why)


def test_qa_role_signed_by_one_qa_key_or_outside_staging_is_refused(repo, http_server, tmp_path, patchctl):
    """The delegated counterpart: qa.json re-signed by qa1 alone (qa2 never approved), and
    qa.json signed by both QA keys but listing a production path (outside staging/*/*/main.js,
    what the role may sign; test_tuf_delegations checks the same for a python-tuf-built role)."""
    keys = repo["ws"].keys / APP
    lone = copy_export(repo, tmp_path / "lone")
    forged = forge_role(lone, keys, repo["qa1"].signer)
    updater = repo_updater(http_server(lone), tmp_path / "lone-device", repo["root"])
    updater.refresh()
    with pytest.raises(UnsignedMetadataError, match="qa was signed by 1/2 keys"):
        updater.get_targetinfo(forged)
    assert_cli_error(patchctl("verify", "--repo", lone, "--root", repo["root_file"]), 1, "qa metadata has 1 valid signature(s), needs 2")

    outside = copy_export(repo, tmp_path / "outside")
    stray = forge_role(outside, keys, [repo["qa1"].signer, repo["qa2"].signer], path=target_path("2.3", 9))
    updater = repo_updater(http_server(outside), tmp_path / "outside-device", repo["root"])
    updater.refresh()
    assert updater.get_targetinfo(stray) is None, "python-tuf never asks qa about a production path"
    assert fetch(updater, target_path("2.3", 3, "staging"))[1] == STAGING_1
    report = patchctl("verify", "--repo", outside, "--root", repo["root_file"], "--json")
    assert report.rc == 1, report.stdout + report.stderr
    bad = [t for t in json.loads(report.stdout)["targets"] if not t["ok"]]
    assert [(t["path"], t["role"]) for t in bad] == [(stray, "qa")] and "does not reach" in bad[0]["problem"]


def test_qa_role_rolled_back_to_an_older_version_is_refused(repo, http_server, tmp_path, patchctl):
    """A device that has seen qa.json version 3 (staging 2.3/3) is served a snapshot,
    re-signed with the online snapshot key, pinning qa.json version 2: validly signed by
    both QA keys when it was current, and listing the older staging 2.3/2. python-tuf and
    our client (`patchctl fetch`, whose cache keeps the trusted snapshot) refuse it as a
    rollback."""
    export = copy_export(repo, tmp_path)
    md = export / "metadata"
    base = http_server(export.parents[2])
    assert newest(md, "qa").signed.version == 3
    device, cache = tmp_path / "device", tmp_path / "cache"
    app_base = f"{base}/v1/apps/{APP}"
    updater = repo_updater(app_base, device, repo["root"])
    updater.refresh()
    assert fetch(updater, target_path("2.3", 3, "staging"))[1] == STAGING_1

    def ours():
        return patchctl("fetch", "--server", base, "--app", APP, "--app-version", "2.3", "--device-id", "qa-phone",
                        "--channel", "staging", "--root", repo["root_file"], "--cache", cache, "--force", "--json")

    synced = ours()
    assert synced.rc == 0, synced.stdout + synced.stderr
    assert json.loads(synced.stdout)["patch"] == 3, synced.stdout
    # Both clients keep the delegated role they verified as qa.json beside the top-level
    # roles (ours: issue 44, part 3), the bytes as served.
    kept = cache / APP / "metadata"
    qa_kept = kept / "qa.json"
    names = {p.name for p in kept.iterdir()}
    assert {"timestamp.json", "snapshot.json", "targets.json", "qa.json"} <= names, names
    assert all(n.split(".", 1)[0].isdigit() and n.endswith(".root.json") for n in names - {"timestamp.json", "snapshot.json", "targets.json", "qa.json"}), names
    assert qa_kept.read_bytes() == (md / "3.qa.json").read_bytes()
    assert (device / "qa.json").read_bytes() == qa_kept.read_bytes(), "python-tuf keeps the same file under the same name"
    # Nothing changed: the next sync reads qa.json from the cache, no download rewrites it.
    inode = qa_kept.stat().st_ino
    again = ours()
    assert json.loads(again.stdout)["outcome"] == "unchanged", again.stdout + again.stderr
    assert qa_kept.stat().st_ino == inode, "qa.json was downloaded and written again"

    # The attacker kept what was served then: qa.json version 2 and the bundle it lists.
    (md / "2.qa.json").write_bytes(repo["old_qa"].to_bytes())
    shutil.copytree(repo["old_export"] / "targets", export / "targets", dirs_exist_ok=True)
    repin(md, repo["ws"].keys / APP, {"qa.json": 2})
    # Control: the old role verifies on its own (a device that never saw version 3 takes it).
    fresh = repo_updater(app_base, tmp_path / "fresh-device", repo["root"])
    fresh.refresh()
    assert fetch(fresh, target_path("2.3", 2, "staging"))[1] == STAGING_OLD

    updater = repo_updater(app_base, device, None)
    with pytest.raises(BadVersionNumberError, match="qa.json"):
        updater.refresh()
    refused = ours()
    assert json.loads(refused.stdout)["outcome"] == "failed"
    assert_cli_error(refused, 1, "qa.json metadata version 2 is older than the trusted version 3 (rollback)")
    assert qa_kept.read_bytes() == (md / "3.qa.json").read_bytes(), "the trusted role stays cached"


def test_a_channel_is_delegated_after_the_rule_landed(workspace):
    ws = workspace
    alice, bob = two_person_app(ws)
    qa1, qa2 = Person(ws, "qa1"), Person(ws, "qa2")
    ws.ok("channels", "create", "staging", "--app", APP)  # a declaration signs nothing: no change waits for it
    args = ("keys", "delegate", "--app", APP, "--channel", "staging", "--name", "qa", "--key", qa1.pub, "--key", qa2.pub,
            "--threshold", "2", "--key-file", qa1.pem, "--key-file", qa2.pem)
    alone = ws.run(*args, "--key-file", alice.pem)
    assert alone.rc == 3, alone.stdout + alone.stderr  # waits for bob: the delegation is a change to top-level targets
    assert ws.ok("approve", "--app", APP, "2", "--key-file", bob.pem)
