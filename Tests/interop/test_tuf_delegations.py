"""TUF delegations (spec 5.6.7): a repository whose top-level targets delegate, built and
signed by python-tuf's `tuf.api.metadata`, checked by the reference client and by
`patchctl verify` (PatchCore's Updater, the device's targets search)."""

import hashlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hotpatch_testing import assert_cli_error, digests, repo_updater
from securesystemslib.signer import CryptoSigner
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
