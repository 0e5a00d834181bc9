"""TUF delegations (spec 5.6.7): a repository whose top-level targets delegate, built and
signed by python-tuf's `tuf.api.metadata`, checked by the reference client and by
`patchctl verify` (PatchCore's Updater, the device's targets search)."""

import hashlib
import time
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hotpatch_testing import assert_cli_error, digests, fetch, repo_updater
from patchd_support import remote, token_file
from securesystemslib.signer import CryptoSigner
from tuf.api.exceptions import RepositoryError
from tuf.api.metadata import (DelegatedRole, Delegations, MetaFile, Metadata, Root, Snapshot, TargetFile,
                              Targets, Timestamp)

TOP_LEVEL = ("root", "timestamp", "snapshot", "targets")
ROLE = "app-2.3"


def hotpatch_target(path: str, payload: bytes, patch: int) -> TargetFile:
    """A target entry with hotpatch's signed `custom` fields (docs/PROTOCOL.md), as
    `patchctl export` writes them, so verify reads it as a patch."""
    target = TargetFile.from_data(path, payload, ["md5", "sha256"])
    target.unrecognized_fields["custom"] = {"patch": patch, "rollout": 100, "published": "2026-01-02T03:04:05Z",
                                            "plaintext": digests(payload)}
    return target


def build_delegated_repo(out: Path, *, expires=None, stray=False, role_signer=None, seed: bytes = None) -> Path:
    """A consistent-snapshot repository: top-level targets list 2.4/1/main.js and delegate
    `2.3/*/main.js` to role app-2.3, which lists 2.3/1/main.js (and, with `stray`,
    2.4/9/main.js, outside its paths). `role_signer` signs app-2.3 in place of its
    delegated key. With `seed`, every key (so every file) is derived from it: the vectors
    in Tests/PatchCoreTests/Fixtures/delegation (gen_vectors.py). Returns the path of 1.root.json."""
    expires = expires or datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=30)
    def key(role):
        if seed is None:
            return Ed25519PrivateKey.generate()
        return Ed25519PrivateKey.from_private_bytes(hashlib.sha256(seed + role.encode()).digest())
    signers = {role: CryptoSigner(key(role)) for role in (*TOP_LEVEL, ROLE)}
    root = Root(expires=expires, consistent_snapshot=True)
    for role in TOP_LEVEL:
        root.add_key(signers[role].public_key, role)

    payloads = {"2.4/1/main.js": b"console.log('top-level 2.4');\n",
                "2.3/1/main.js": b"defineClass('Delegated', {});\n",
                "2.4/9/main.js": b"console.log('outside the delegation');\n"}
    top = hotpatch_target("2.4/1/main.js", payloads["2.4/1/main.js"], 1)
    delegated = [hotpatch_target("2.3/1/main.js", payloads["2.3/1/main.js"], 1)]
    if stray:
        delegated.append(hotpatch_target("2.4/9/main.js", payloads["2.4/9/main.js"], 9))

    role_key = signers[ROLE].public_key
    targets = Targets(expires=expires, targets={top.path: top},
                      delegations=Delegations(keys={role_key.keyid: role_key}, roles={
                          ROLE: DelegatedRole(name=ROLE, keyids=[role_key.keyid], threshold=1, terminating=True,
                                              paths=["2.3/*/main.js"])}))
    role = Targets(expires=expires, targets={t.path: t for t in delegated})
    snapshot = Snapshot(expires=expires)
    snapshot.meta[f"{ROLE}.json"] = MetaFile(version=1)
    (out / "metadata").mkdir(parents=True, exist_ok=True)
    for signer, signed, name in ((signers["root"], root, "1.root.json"), (signers["targets"], targets, "1.targets.json"),
                                 (role_signer or signers[ROLE], role, f"1.{ROLE}.json"),
                                 (signers["snapshot"], snapshot, "1.snapshot.json"),
                                 (signers["timestamp"], Timestamp(expires=expires), "timestamp.json")):
        md = Metadata(signed)
        md.sign(signer)
        md.to_file(str(out / "metadata" / name))
    for target in [top, *delegated]:
        for digest in target.hashes.values():
            directory, name = target.path.rsplit("/", 1)
            path = out / "targets" / directory / f"{digest}.{name}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(payloads[target.path])
    return out / "metadata" / "1.root.json"


def test_verify_finds_and_checks_targets_of_a_delegated_role(patchctl, tmp_path, http_server):
    repo = tmp_path / "repo"
    root = build_delegated_repo(repo)
    # Control: the reference client finds the delegated target, and nothing outside the paths.
    updater = repo_updater(http_server(repo), tmp_path / "md", root.read_bytes())
    updater.refresh()
    assert updater.get_targetinfo("2.3/1/main.js").custom["patch"] == 1
    assert updater.get_targetinfo("2.4/1/main.js").custom["patch"] == 1

    result = patchctl("verify", "--repo", repo, "--root", root, "--json")
    assert result.rc == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert [(t["path"], t.get("role", "targets"), t["patch"], t["ok"], t["plaintextChecked"]) for t in report["targets"]] == [
        ("2.3/1/main.js", ROLE, 1, True, True), ("2.4/1/main.js", "targets", 1, True, True)]

    text = patchctl("verify", "--repo", repo, "--root", root)
    assert text.rc == 0, text.stdout + text.stderr
    assert f"ok    2.3/1/main.js" in text.stdout and f"(delegated role {ROLE})" in text.stdout
    assert "verified 2 active patch(es)" in text.stdout


def test_verify_fails_when_a_delegated_role_signs_outside_its_paths(patchctl, tmp_path, http_server):
    repo = tmp_path / "repo"
    root = build_delegated_repo(repo, stray=True)
    updater = repo_updater(http_server(repo), tmp_path / "md", root.read_bytes())
    updater.refresh()
    assert updater.get_targetinfo("2.4/9/main.js") is None  # python-tuf does not trust it either

    result = patchctl("verify", "--repo", repo, "--root", root, "--json")
    assert result.rc == 1, result.stdout + result.stderr
    report = json.loads(result.stdout)
    stray = [t for t in report["targets"] if t["path"] == "2.4/9/main.js"]
    assert len(stray) == 1 and stray[0]["ok"] is False and stray[0]["role"] == ROLE
    assert "does not reach" in stray[0]["problem"]
    assert_cli_error(patchctl("verify", "--repo", repo, "--root", root), 1, "verification failed")


def test_verify_refuses_a_delegated_role_signed_by_a_key_its_delegator_did_not_list(patchctl, tmp_path):
    repo = tmp_path / "repo"
    root = build_delegated_repo(repo, role_signer=CryptoSigner(Ed25519PrivateKey.generate()))
    assert_cli_error(patchctl("verify", "--repo", repo, "--root", root), 1,
                     f"{ROLE} metadata has 0 valid signature(s), needs 1")


# -- hotpatch's own delegated channel over its life (issue 24 item 2) -----------------------

def signer_of(pem: Path) -> CryptoSigner:
    """A securesystemslib signer of a PKCS#8 PEM private key (a key in KEYS/APP, or `keys generate`'s)."""
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    return CryptoSigner(load_pem_private_key(pem.read_bytes(), password=None))


def repin(metadata: Path, keys: Path, meta: dict):
    """What a server holding the online keys can always do: a snapshot that lists the same
    files as the newest one but with `meta` ({"qa.json": 1, ...}: name -> version), and a
    timestamp that pins it, re-signed with the snapshot and timestamp keys in `keys`
    (KEYS/APP) and written over the repository's `metadata` directory."""
    timestamp = Metadata.from_bytes((metadata / "timestamp.json").read_bytes())
    snapshot = Metadata.from_bytes((metadata / f"{timestamp.signed.snapshot_meta.version}.snapshot.json").read_bytes())
    for name, version in meta.items():
        snapshot.signed.meta[name] = MetaFile(version=version)
    snapshot.signed.version += 1
    snapshot.signatures.clear()
    snapshot.sign(signer_of(next(keys.glob("snapshot.*.pem"))))
    (metadata / f"{snapshot.signed.version}.snapshot.json").write_bytes(snapshot.to_bytes())
    timestamp.signed.snapshot_meta = MetaFile(version=snapshot.signed.version)
    timestamp.signed.version += 1
    timestamp.signatures.clear()
    timestamp.sign(signer_of(next(keys.glob("timestamp.*.pem"))))
    (metadata / "timestamp.json").write_bytes(timestamp.to_bytes())


def newest(metadata: Path, role: str) -> Metadata:
    """ROLE's metadata as the repository's newest snapshot pins it."""
    timestamp = Metadata.from_bytes((metadata / "timestamp.json").read_bytes())
    snapshot = Metadata.from_bytes((metadata / f"{timestamp.signed.snapshot_meta.version}.snapshot.json").read_bytes())
    return Metadata.from_bytes((metadata / f"{snapshot.signed.meta[f'{role}.json'].version}.{role}.json").read_bytes())


def forge_role(export: Path, keys: Path, role_signers, path=None, role="qa") -> str:
    """What whoever kept a replaced staging key can do with the online snapshot and timestamp
    keys: the next ROLE.json listing one more path (`path`, default one more staging path),
    signed by `role_signers` (a signer or a list), and a snapshot and timestamp that pin it,
    written over the export. Returns the forged path."""
    md = export / "metadata"
    signers = role_signers if isinstance(role_signers, (list, tuple)) else [role_signers]
    forged_role = newest(md, role)
    existing, entry = sorted(forged_role.signed.targets.items())[0]
    forged = path or existing.rsplit("/", 2)[0] + "/9/main.js"
    forged_role.signed.targets[forged] = TargetFile(entry.length, entry.hashes, forged, entry.unrecognized_fields)
    forged_role.signed.version += 1
    forged_role.signatures.clear()
    for signer in signers:
        forged_role.sign(signer, append=True)
    (md / f"{forged_role.signed.version}.{role}.json").write_bytes(forged_role.to_bytes())
    repin(md, keys, {f"{role}.json": forged_role.signed.version})
    return forged


def test_python_tuf_follows_rotation_and_undelegation_of_a_staging_role_over_the_server(workspace, start, http_server, tmp_path):
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "production();\n")
    server = start(ws)
    token = token_file(ws, ws.token("--all", "--name", "ci"), "ci.token")
    declared = remote(ws, server, token, "channels", "create", "staging", "--app", "demo")  # a role is delegated a declared channel
    assert declared.rc == 0, declared.stderr
    made = remote(ws, server, token, "keys", "delegate", "--app", "demo", "--channel", "staging", "--name", "qa", "--json")
    assert made.rc == 0, made.stderr
    assert json.loads(made.stdout)["serverKey"] is True
    old_key = signer_of(next((ws.keys / "demo").glob("delegated.qa.*.pem")))
    published = remote(ws, server, token, "publish", "--app", "demo", "--app-version", "2.3", "--channel", "staging",
                       ws.write_file(b"staging();\n"), "--json")
    assert published.rc == 0, published.stderr
    device = tmp_path / "device"  # one device's metadata, kept across every change below
    base = f"{server.url}/v1/apps/demo"

    def sync(path="staging/2.3/2/main.js"):
        updater = repo_updater(base, device, ws.root_json("demo"))
        updater.refresh()
        return updater, fetch(updater, path)

    updater, (info, body) = sync()
    assert body == b"staging();\n" and "qa" in updater._trusted_set

    rotated = remote(ws, server, token, "keys", "delegate", "--app", "demo", "--channel", "staging", "--name", "qa", "--replace", "--json")
    assert rotated.rc == 0, rotated.stderr
    assert json.loads(rotated.stdout)["replacedKeyIDs"] == [old_key.public_key.keyid]
    updater, (info, body) = sync()
    assert body == b"staging();\n", "the device follows the rotated role"
    # The replaced key signs the role's next version: python-tuf refuses it.
    export = ws.export("demo")
    forged = forge_role(export, ws.keys / "demo", old_key)
    attacked = repo_updater(http_server(export), tmp_path / "attacked", ws.root_json("demo"))
    attacked.refresh()
    with pytest.raises(RepositoryError, match="qa was signed by 0/1 keys"):
        attacked.get_targetinfo(forged)

    ended = remote(ws, server, token, "keys", "undelegate", "--app", "demo", "--channel", "staging")
    assert ended.rc == 0, ended.stderr
    updater, (info, body) = sync()
    assert body == b"staging();\n" and info is not None, "the staging target comes from top-level targets now"
    assert "qa" not in updater._trusted_set


def test_a_role_key_that_never_leaves_the_machine_delegates_over_the_server(workspace, start, tmp_path):
    from cryptography.hazmat.primitives import serialization
    ws = workspace
    ws.create_app("demo")
    ws.publish("demo", "2.3", "production();\n")
    server = start(ws)
    token = token_file(ws, ws.token("--all", "--name", "ci"), "ci.token")
    private = Ed25519PrivateKey.generate()
    pem = ws.write_file(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()), "beta.pem")
    raw = private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    pub = ws.write_file(json.dumps({"keytype": "ed25519", "scheme": "ed25519", "keyval": {"public": raw.hex()}}).encode(), "beta.pub")
    declared = remote(ws, server, token, "channels", "create", "beta", "--app", "demo")
    assert declared.rc == 0, declared.stderr
    made = remote(ws, server, token, "keys", "delegate", "--app", "demo", "--channel", "beta", "--name", "beta",
                  "--key", pub, "--key-file", pem, "--json")
    assert made.rc == 0, made.stderr
    assert "serverKey" not in json.loads(made.stdout)
    assert not list((ws.keys / "demo").glob("delegated.*")), "the server keeps no copy of the role's key"
    # A CI job on the shared registry publishes with the key; devices get it through the role.
    ws.ok("publish", "--app", "demo", "--app-version", "2.3", "--channel", "beta", "--key-file", pem, ws.write_file(b"beta();\n"))
    updater = repo_updater(f"{server.url}/v1/apps/demo", tmp_path / "device", ws.root_json("demo"))
    deadline = time.time() + 10
    while True:  # patchd picks the change up from the registry
        updater.refresh()
        info, body = fetch(updater, "beta/2.3/2/main.js")
        if body or time.time() > deadline:
            break
        time.sleep(0.2)
        updater = repo_updater(f"{server.url}/v1/apps/demo", tmp_path / "device", ws.root_json("demo"))
    assert body == b"beta();\n" and "beta" in updater._trusted_set
