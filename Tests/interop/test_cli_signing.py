"""patchctl's signatures checked by securesystemslib/cryptography, a python-tuf-signed
repository checked by `patchctl verify`, refusals through the CLI, and the audit chain."""

import contextlib
import hashlib
import json
import os
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from hotpatch_testing import SQL_ERRORS, assert_cli_error, digests, encrypt, repo_updater
from securesystemslib.formats import encode_canonical
from securesystemslib.signer import CryptoSigner, Signature, SSlibKey
from tuf.api.metadata import Metadata, Root, Snapshot, Targets, TargetFile, Timestamp

TOP_LEVEL = ("root", "timestamp", "snapshot", "targets")


def canonical(signed) -> bytes:
    return encode_canonical(signed).encode("utf-8")


def keyid_of(key: dict) -> str:
    return hashlib.sha256(canonical(key)).hexdigest()


def valid_signers(doc, keys: dict) -> set:
    """keyids in `keys` whose Ed25519 signature over canonical(signed) verifies; asserts
    that every signature present is by a known key and verifies."""
    data, good = canonical(doc["signed"]), set()
    seen = [s["keyid"] for s in doc["signatures"]]
    assert len(seen) == len(set(seen)), "duplicate keyids in signatures"
    for sig in doc["signatures"]:
        key = keys.get(sig["keyid"])
        assert key is not None, f"signature by unknown key {sig['keyid']}"
        raw = bytes.fromhex(sig["sig"])
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(key["keyval"]["public"])).verify(raw, data)
        # and securesystemslib's own verifier agrees
        SSlibKey.from_dict(sig["keyid"], json.loads(json.dumps(key))).verify_signature(
            Signature(sig["keyid"], sig["sig"]), data)
        good.add(sig["keyid"])
    return good


def assert_role_signed(doc, root_signed, role):
    role_def = root_signed["roles"][role]
    keys = {k: root_signed["keys"][k] for k in role_def["keyids"]}
    signers = valid_signers({"signed": doc["signed"],
                             "signatures": [s for s in doc["signatures"] if s["keyid"] in keys]}, keys)
    assert len(signers) >= role_def["threshold"], f"{role}: threshold not met"


def load(path: Path):
    return json.loads(path.read_bytes())


# -- 5a. our signatures, checked by the Python stack -------------------------------------------

def test_exported_metadata_signatures_verify_with_securesystemslib_and_cryptography(workspace):
    ws = workspace
    ws.create_app("demo", encrypt=True)
    ws.publish("demo", "2.3", "console.log('caf\u00e9 \u4e2d');\n")
    ws.publish("demo", "2.3", "console.log(2);\n", rollout=30)
    for role in ("root", "root", "timestamp", "targets", "snapshot"):
        ws.json("keys", "rotate", "--app", "demo", "--role", role)
    ws.publish("demo", "3.0", "console.log(3);\n")
    meta = ws.export("demo") / "metadata"

    roots = [load(meta / f"{n}.root.json") for n in range(1, 7)]
    assert not (meta / "7.root.json").exists()
    all_keys = {}
    for n, root in enumerate(roots, start=1):
        signed = root["signed"]
        assert signed["_type"] == "root" and signed["version"] == n and signed["consistent_snapshot"]
        assert set(signed["roles"]) == set(TOP_LEVEL)
        for keyid, key in signed["keys"].items():
            assert key["keytype"] == "ed25519" and key["scheme"] == "ed25519"
            assert keyid == keyid_of(key), "keyid is not sha256 of the canonical key object"
            all_keys[keyid] = key
        valid_signers(root, all_keys)
        assert_role_signed(root, signed, "root")                      # its own root keys
        if n > 1:
            assert_role_signed(root, roots[n - 2]["signed"], "root")  # and the previous root's

    latest = roots[-1]["signed"]
    timestamp = load(meta / "timestamp.json")
    snapshot = load(meta / f"{timestamp['signed']['meta']['snapshot.json']['version']}.snapshot.json")
    targets = load(meta / f"{snapshot['signed']['meta']['targets.json']['version']}.targets.json")
    for role, doc in (("timestamp", timestamp), ("snapshot", snapshot), ("targets", targets)):
        assert doc["signed"]["_type"] == role
        valid_signers(doc, all_keys)
        assert_role_signed(doc, latest, role)
        # signed only by the current key of the role: the rotated-out key is gone
        assert {s["keyid"] for s in doc["signatures"]} == set(latest["roles"][role]["keyids"])
    assert set(targets["signed"]["targets"]) == {"2.3/1/main.js", "2.3/2/main.js", "3.0/1/main.js"}


# -- 5b. a repository made by python-tuf, checked by patchctl ---------------------------------

def build_python_repo(out: Path, payload: bytes, *, app="pyapp", content_key=None):
    """A consistent-snapshot repository signed by tuf.api.metadata with keys from
    cryptography; one target 2.3/1/main.js. Returns the path of 1.root.json."""
    expires = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=30)
    signers = {role: CryptoSigner(Ed25519PrivateKey.generate()) for role in TOP_LEVEL}
    root = Root(expires=expires, consistent_snapshot=True)
    for role, signer in signers.items():
        root.add_key(signer.public_key, role)
    custom = {"patch": 1, "rollout": 100, "published": "2026-01-02T03:04:05Z", "plaintext": digests(payload)}
    served = payload
    if content_key is not None:
        served = encrypt(content_key, app, "2.3", 1, payload)
        custom["encryption"] = {"alg": "A256GCM", "keyid": hashlib.sha256(content_key).hexdigest()}
    target = TargetFile.from_data("2.3/1/main.js", served, ["md5", "sha256"])
    target.unrecognized_fields["custom"] = custom
    targets = Targets(expires=expires, targets={target.path: target})
    (out / "metadata").mkdir(parents=True)
    for role, signed, name in (("root", root, "1.root.json"), ("targets", targets, "1.targets.json"),
                               ("snapshot", Snapshot(expires=expires), "1.snapshot.json"),
                               ("timestamp", Timestamp(expires=expires), "timestamp.json")):
        md = Metadata(signed)
        md.sign(signers[role])
        md.to_file(str(out / "metadata" / name))
    for digest in target.hashes.values():
        path = out / "targets" / "2.3" / "1" / f"{digest}.main.js"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(served)
    return out / "metadata" / "1.root.json"


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
def test_patchctl_verify_accepts_a_repository_signed_by_python_tuf(patchctl, tmp_path, http_server, encrypted):
    key = os.urandom(32) if encrypted else None
    repo = tmp_path / "pyrepo"
    root = build_python_repo(repo, b"defineClass('FromPython', {});\n", content_key=key)
    # Control: the reference client accepts the hand-assembled repository too.
    base = http_server(repo)
    updater = repo_updater(base, tmp_path / "md", root.read_bytes())
    updater.refresh()
    assert updater.get_targetinfo("2.3/1/main.js").custom["patch"] == 1
    args = ["verify", "--repo", repo, "--root", root, "--json"]
    if encrypted:
        (tmp_path / "content.key").write_text(key.hex() + "\n")
        args += ["--app", "pyapp", "--key", tmp_path / "content.key"]
    result = patchctl(*args)
    assert result.rc == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True and report["rootVersion"] == 1
    assert [(t["path"], t["patch"], t["ok"], t["encrypted"], t["plaintextChecked"]) for t in report["targets"]] == \
        [("2.3/1/main.js", 1, True, encrypted, True)]


def test_patchctl_verify_rejects_python_repository_with_tampered_target(patchctl, tmp_path):
    repo = tmp_path / "pyrepo"
    root = build_python_repo(repo, b"defineClass('FromPython', {});\n")
    for path in (repo / "targets" / "2.3" / "1").iterdir():
        path.write_bytes(b"defineClass('Evil!!!!!', {});\n")  # same length, other bytes
    assert_cli_error(patchctl("verify", "--repo", repo, "--root", root), 1, "verification failed")


# -- 6. refusals through the CLI --------------------------------------------------------------

@pytest.fixture
def demo(workspace):
    """Apps demo and other; demo 2.3 has patch 1 (100%) and 2 (30%); demo is exported."""
    ws = workspace
    ws.create_app("demo")
    ws.create_app("other")
    ws.publish("demo", "2.3", "console.log(1);\n")
    ws.publish("demo", "2.3", "console.log(2);\n", rollout=30)
    ws.export_dir = ws.export("demo")
    ws.demo_root = ws.root_file("demo")
    assert ws.run("verify", "--repo", ws.export_dir, "--root", ws.demo_root, registry=False).rc == 0
    return ws


@contextlib.contextmanager
def registry_unchanged(ws):
    before = ws.registry_state()
    yield
    assert ws.registry_state() == before, "a refused command changed the registry"


def copy_export(ws, name):
    dest = ws.root / name
    shutil.copytree(ws.export_dir, dest)
    return dest


def verify(ws, repo, root=None):
    return ws.run("verify", "--repo", repo, "--root", root or ws.demo_root, registry=False)


def test_verify_fails_on_tampered_target_file(demo):
    repo = copy_export(demo, "tampered-target")
    victim = next((repo / "targets" / "2.3" / "1").glob("*.main.js"))
    victim.write_bytes(b"console.log(666)\n"[: victim.stat().st_size])
    with registry_unchanged(demo):
        assert_cli_error(verify(demo, repo), 1, "verification failed")


def test_verify_fails_on_tampered_timestamp_signature(demo):
    repo = copy_export(demo, "tampered-sig")
    path = repo / "metadata" / "timestamp.json"
    doc = load(path)
    sig = doc["signatures"][0]["sig"]
    doc["signatures"][0]["sig"] = ("1" if sig[0] == "0" else "0") + sig[1:]
    path.write_text(json.dumps(doc))
    with registry_unchanged(demo):
        assert_cli_error(verify(demo, repo), 1, "verification failed", "timestamp")


def resign_timestamp(ws, repo, mutate):
    """Re-signs repo's timestamp.json with the app's real timestamp key after mutate(signed)."""
    pem = ws.role_key_pem("demo", "timestamp")
    private = serialization.load_pem_private_key(pem.read_bytes(), password=None)
    public = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    keyid = keyid_of({"keytype": "ed25519", "scheme": "ed25519", "keyval": {"public": public.hex()}})
    assert pem.name == f"timestamp.{keyid}.pem"
    path = repo / "metadata" / "timestamp.json"
    doc = load(path)
    mutate(doc["signed"])
    doc["signatures"] = [{"keyid": keyid, "sig": private.sign(canonical(doc["signed"])).hex()}]
    path.write_text(json.dumps(doc))


def test_verify_fails_on_expired_timestamp_signed_with_the_real_key(demo):
    control = copy_export(demo, "resigned")
    resign_timestamp(demo, control, lambda s: s.update(version=s["version"] + 1))
    assert verify(demo, control).rc == 0, "re-signing by hand must itself be valid"
    repo = copy_export(demo, "expired")
    resign_timestamp(demo, repo, lambda s: s.update(version=s["version"] + 1, expires="2020-01-01T00:00:00Z"))
    with registry_unchanged(demo):
        assert_cli_error(verify(demo, repo), 1, "verification failed", "expired")


def test_verify_fails_with_another_apps_root(demo):
    with registry_unchanged(demo):
        assert_cli_error(verify(demo, demo.export_dir, demo.root_file("other")), 1, "verification failed")


@pytest.mark.parametrize("version", ["2.03", "../x", "2.3/1", ""])
def test_publish_refuses_bad_app_version(demo, version):
    bundle = demo.write_file("console.log(1);\n", name="ok.js")
    with registry_unchanged(demo):
        result = demo.run("publish", "--app", "demo", "--app-version", version, bundle)
        assert_cli_error(result, 64, "app-version" if version == "" else "invalid app version")


@pytest.mark.parametrize("name", ["../etc", "Demo", "a/b", ".x"])
def test_bad_app_name_is_a_usage_error(demo, name):
    bundle = demo.write_file("console.log(1);\n", name="ok.js")
    tree_before = sorted(p.relative_to(demo.root) for p in demo.root.rglob("*"))
    with registry_unchanged(demo):
        assert_cli_error(demo.run("apps", "create", name), 64, "invalid app name")
        assert_cli_error(demo.run("publish", "--app", name, "--app-version", "2.3", bundle), 64, "invalid app name")
        assert_cli_error(demo.run("list", "--app", name), 64, "invalid app name")
    assert sorted(p.relative_to(demo.root) for p in demo.root.rglob("*")) == tree_before
    assert not (demo.root / "etc").exists()  # ../etc relative to --keys or --data


@pytest.mark.parametrize("kind", ["empty", "over-10-MiB", "not-utf8"])
def test_publish_refuses_unacceptable_bundle(demo, kind):
    content = {"empty": b"", "over-10-MiB": b"a" * (10 * 1024 * 1024 + 1),
               "not-utf8": b"console.log('\xff\xfe');\n"}[kind]
    bundle = demo.write_file(content, name=f"{kind}.js")
    needle = {"empty": "empty", "over-10-MiB": "limit", "not-utf8": "UTF-8"}[kind]
    with registry_unchanged(demo):
        assert_cli_error(demo.run("publish", "--app", "demo", "--app-version", "2.3", bundle), 2, needle)
    assert [p["patch"] for p in demo.json("list", "--app", "demo")] == [1, 2]


def test_publish_to_unknown_app_is_refused(demo):
    bundle = demo.write_file("console.log(1);\n", name="ok.js")
    with registry_unchanged(demo):
        assert_cli_error(demo.run("publish", "--app", "nope", "--app-version", "2.3", bundle), 2, "unknown app")


def test_verify_with_missing_repo_directory_could_not_run(demo):
    with registry_unchanged(demo):
        assert_cli_error(verify(demo, demo.root / "no-such-dir"), 2, "not a directory")
        assert_cli_error(verify(demo, demo.export_dir, demo.root / "no-root.json"), 2, "trusted root")


# -- 7. audit hash chain ----------------------------------------------------------------------

def test_audit_verify_passes_on_untouched_log(demo):
    result = demo.run("audit", "--verify")
    assert result.rc == 0, result.stderr
    report = demo.json("audit", "--verify")
    assert report["chain"]["intact"] is True
    assert [e["seq"] for e in report["events"]] == list(range(1, len(report["events"]) + 1))


def test_audit_log_is_append_only_in_the_database(demo):
    statements = ["UPDATE audit SET details = '{}' WHERE seq = 1", "DELETE FROM audit WHERE seq = 1"]
    if demo.database:
        statements.append("TRUNCATE audit")  # PostgreSQL has it, and a row trigger does not see it
    with demo.sql() as db:
        for statement in statements:
            with pytest.raises(SQL_ERRORS, match="append-only"):
                db.execute(statement)
    assert demo.run("audit", "--verify").rc == 0


@pytest.mark.parametrize("attack", ["edit-details", "delete-event"])
def test_audit_verify_reports_the_broken_seq_after_database_tampering(demo, attack):
    demo.publish("demo", "2.4", "console.log('a later event');\n")
    events = demo.json("audit")["events"]
    victim = next(e for e in events if e["action"] == "patch.publish" and e["details"]["rollout"] == 30)
    seq = victim["seq"]
    db = demo.sql()
    try:
        # Whoever can write the database can drop the append-only triggers: the hash chain is
        # what catches the edit. (One trigger on PostgreSQL, one per statement on SQLite.)
        if attack == "edit-details":
            db.execute("DROP TRIGGER audit_append_only ON audit" if demo.database else "DROP TRIGGER audit_append_only_update")
            cur = db.execute("UPDATE audit SET details = replace(details, '\"rollout\":30', '\"rollout\":100') "
                             "WHERE seq = ?", (seq,))
            broken = seq
        else:
            db.execute("DROP TRIGGER audit_append_only ON audit" if demo.database else "DROP TRIGGER audit_append_only_delete")
            cur = db.execute("DELETE FROM audit WHERE seq = ?", (seq,))
            broken = seq + 1  # the event after the gap no longer links to its predecessor
        assert cur.rowcount == 1
        db.commit()
    finally:
        db.close()
    assert broken <= len(events)

    result = demo.run("audit", "--verify")
    assert_cli_error(result, 1, f"event {broken}")
    report = json.loads(demo.run("audit", "--verify", "--json").stdout)
    assert report["chain"]["intact"] is False and report["chain"]["seq"] == broken
