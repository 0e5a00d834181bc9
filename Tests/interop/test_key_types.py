"""Key types, keyids and hashes across implementations (issue 10, items 8-10):
repositories python-tuf signs with ECDSA and RSA keys, key objects carrying members other
tools add, sha512 hashes, all checked by `patchctl verify`; and an app whose root key is an
imported ECDSA P-256 key, checked by python-tuf."""

import hashlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hotpatch_testing import assert_cli_error, digests, fetch, repo_updater
from securesystemslib.formats import encode_canonical
from securesystemslib.signer import CryptoSigner, Signature, SSlibKey
from tuf.api.serialization import DeserializationError
from tuf.api.metadata import Metadata, MetaFile, Root, Snapshot, Targets, TargetFile, Timestamp

TOP_LEVEL = ("root", "timestamp", "snapshot", "targets")
PAYLOAD = b"defineClass('SignedElsewhere', {});\n"


def canonical(signed) -> bytes:
    return encode_canonical(signed).encode("utf-8")


def signer(kind, extra=None):
    """A securesystemslib CryptoSigner of `kind`; `extra` members are added to its key
    object (and so to its keyid, as securesystemslib computes it)."""
    private, scheme = {
        "ed25519": lambda: (Ed25519PrivateKey.generate(), None),
        "ecdsa-p256": lambda: (ec.generate_private_key(ec.SECP256R1()), None),
        "ecdsa-p384": lambda: (ec.generate_private_key(ec.SECP384R1()), None),
        "rsa-pss": lambda: (rsa.generate_private_key(65537, 2048), None),
        "rsa-pkcs1v15": lambda: (rsa.generate_private_key(65537, 2048), "rsa-pkcs1v15-sha256"),
    }[kind]()
    public = SSlibKey.from_crypto(private.public_key(), scheme=scheme)
    if extra:
        key_dict = {**public.to_dict(), **extra}
        public = SSlibKey.from_dict(hashlib.sha256(canonical(key_dict)).hexdigest(), dict(key_dict))
    return CryptoSigner(private, public)


LEGACY = {"keyid_hash_algorithms": ["sha256", "sha512"]}
OWNER = {"x-owner": "release team"}

# role -> signers; root's threshold is the number of root signers.
LAYOUTS = {
    "ed25519": lambda: {role: [signer("ed25519")] for role in TOP_LEVEL},
    "ecdsa": lambda: {role: [signer("ecdsa-p256")] for role in TOP_LEVEL},
    "ed25519-extra-key-members": lambda: {
        "root": [signer("ed25519", LEGACY), signer("ed25519", OWNER)],
        "timestamp": [signer("ed25519", LEGACY)], "snapshot": [signer("ed25519", OWNER)], "targets": [signer("ed25519", LEGACY)],
    },
    "rsa": lambda: {role: [signer("rsa-pss")] for role in TOP_LEVEL},
    "mixed-with-extra-key-members": lambda: {
        "root": [signer("ed25519", LEGACY), signer("ecdsa-p256", OWNER), signer("rsa-pss", OWNER)],
        "timestamp": [signer("rsa-pkcs1v15")],
        "snapshot": [signer("ecdsa-p384")],
        "targets": [signer("ed25519", {**LEGACY, **OWNER})],
    },
}


def build_repo(out: Path, signers, *, hash_algorithms=("sha256", "sha512"), edit_root=None):
    """A consistent-snapshot repository written by python-tuf (files as `Metadata.to_file`
    writes them) with one target 2.3/1/main.js; snapshot and timestamp pin length and
    `hash_algorithms`. edit_root(doc) may change root's JSON before it is signed. Returns
    the path of 1.root.json."""
    expires = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=30)
    root = Root(expires=expires, consistent_snapshot=True)
    for role, role_signers in signers.items():
        for s in role_signers:
            root.add_key(s.public_key, role)
    root.roles["root"].threshold = len(signers["root"])
    target = TargetFile.from_data("2.3/1/main.js", PAYLOAD, list(hash_algorithms))
    target.unrecognized_fields["custom"] = {"patch": 1, "rollout": 100, "published": "2026-01-02T03:04:05Z",
                                            "plaintext": digests(PAYLOAD)}
    meta = out / "metadata"
    meta.mkdir(parents=True)

    def write(signed, role, name):
        md = Metadata(signed)
        for s in signers[role]:
            md.sign(s, append=True)
        md.to_file(str(meta / name))
        return (meta / name).read_bytes()

    def pin(data, version=1):
        return MetaFile(version=version, length=len(data),
                        hashes={a: hashlib.new(a, data).hexdigest() for a in hash_algorithms})

    if edit_root is None:
        write(root, "root", "1.root.json")
    else:
        doc = json.loads(Metadata(root).to_bytes())
        edit_root(doc["signed"])
        doc["signatures"] = [{"keyid": s.public_key.keyid, "sig": s.sign(canonical(doc["signed"])).signature}
                             for s in signers["root"]]
        (meta / "1.root.json").write_text(json.dumps(doc, indent=1))
    targets = write(Targets(expires=expires, targets={target.path: target}), "targets", "1.targets.json")
    snapshot = write(Snapshot(expires=expires, meta={"targets.json": pin(targets)}), "snapshot", "1.snapshot.json")
    write(Timestamp(expires=expires, snapshot_meta=pin(snapshot)), "timestamp", "timestamp.json")
    for digest in target.hashes.values():
        path = out / "targets" / "2.3" / "1" / f"{digest}.main.js"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(PAYLOAD)
    return meta / "1.root.json"


def verify(patchctl, repo, root):
    return patchctl("verify", "--repo", repo, "--root", root, "--json")


def assert_verifies(patchctl, repo, root):
    result = verify(patchctl, repo, root)
    assert result.rc == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True and [(t["path"], t["ok"]) for t in report["targets"]] == [("2.3/1/main.js", True)]


def flip_signature(path: Path, index=0):
    doc = json.loads(path.read_bytes())
    sig = doc["signatures"][index]["sig"]
    doc["signatures"][index]["sig"] = sig[:-8] + ("0" if sig[-8] != "0" else "1") + sig[-7:]
    path.write_text(json.dumps(doc))


# -- python-tuf repositories with ECDSA, RSA and extended key objects -------------------------

@pytest.mark.parametrize("layout", sorted(set(LAYOUTS) - {"ed25519"}))
def test_patchctl_verify_accepts_python_tuf_repository_of_each_key_type(patchctl, tmp_path, http_server, layout):
    repo = tmp_path / "repo"
    root = build_repo(repo, LAYOUTS[layout]())
    # Control: python-tuf itself accepts the repository.
    updater = repo_updater(http_server(repo), tmp_path / "md", root.read_bytes())
    updater.refresh()
    assert fetch(updater, "2.3/1/main.js")[1] == PAYLOAD
    assert_verifies(patchctl, repo, root)


@pytest.mark.parametrize("layout", ["ecdsa", "rsa"])
@pytest.mark.parametrize("role", ["root", "timestamp", "snapshot", "targets"])
def test_patchctl_verify_refuses_a_tampered_ecdsa_or_rsa_signature(patchctl, tmp_path, layout, role):
    repo = tmp_path / "repo"
    root = build_repo(repo, LAYOUTS[layout]())
    if role == "root":  # the app's trusted copy of root is what is tampered with
        trusted = tmp_path / "trusted.json"
        trusted.write_bytes(root.read_bytes())
        flip_signature(trusted)
    else:
        trusted = root
        flip_signature(repo / "metadata" / ("timestamp.json" if role == "timestamp" else f"1.{role}.json"))
    if role == "root":
        assert_cli_error(verify(patchctl, repo, trusted), 2, "trusted root")
    else:
        assert_cli_error(verify(patchctl, repo, trusted), 1, "verification failed", role)


def test_a_key_of_unknown_type_counts_for_nothing(patchctl, tmp_path):
    """Decision (docs/PROTOCOL.md section 3): a key whose keytype/scheme hotpatch does not
    know is kept and makes no valid signature; the root stands if the other keys meet the
    threshold. python-tuf refuses such a root outright (its Key.from_dict has no class for
    the type)."""
    unknown = {"keytype": "x-future-pq", "scheme": "x-future-pq-1", "keyval": {"public": "00ff"}}
    unknown_id = hashlib.sha256(canonical(unknown)).hexdigest()

    def add_unknown(signed):
        signed["keys"][unknown_id] = unknown
        signed["roles"]["root"]["keyids"].append(unknown_id)

    repo = tmp_path / "repo"
    root = build_repo(repo, LAYOUTS["ecdsa"](), edit_root=add_unknown)
    with pytest.raises(DeserializationError):
        Metadata.from_bytes(root.read_bytes())
    assert_verifies(patchctl, repo, root)

    # Needed for the threshold, it fails the root.
    def needs_unknown(signed):
        add_unknown(signed)
        signed["roles"]["root"]["threshold"] = 2

    repo2 = tmp_path / "repo2"
    root2 = build_repo(repo2, LAYOUTS["ecdsa"](), edit_root=needs_unknown)
    assert_cli_error(verify(patchctl, repo2, root2), 2, "trusted root")


# -- hashes ---------------------------------------------------------------------------------

def test_sha512_only_hashes_are_checked(patchctl, tmp_path):
    repo = tmp_path / "repo"
    root = build_repo(repo, LAYOUTS["ed25519"](), hash_algorithms=("sha512",))
    assert_verifies(patchctl, repo, root)
    (victim,) = (repo / "targets" / "2.3" / "1").iterdir()
    victim.write_bytes(PAYLOAD.replace(b"Elsewhere", b"Evilwhere"))  # same length
    assert_cli_error(verify(patchctl, repo, root), 1, "verification failed")


def test_an_md5_only_target_is_refused(patchctl, tmp_path):
    repo = tmp_path / "repo"
    root = build_repo(repo, LAYOUTS["ed25519"](), hash_algorithms=("md5",))
    assert_cli_error(verify(patchctl, repo, root), 1, "verification failed")


# -- an imported ECDSA P-256 root key ----------------------------------------------------------

@pytest.mark.parametrize("form", ["pkcs8", "sec1"])
def test_apps_create_with_an_imported_p256_root_key_is_accepted_by_python_tuf(workspace, http_server, tmp_path, form):
    ws = workspace
    private = ec.generate_private_key(ec.SECP256R1())
    fmt = {"pkcs8": serialization.PrivateFormat.PKCS8, "sec1": serialization.PrivateFormat.TraditionalOpenSSL}[form]
    pem = ws.write_file(private.private_bytes(serialization.Encoding.PEM, fmt, serialization.NoEncryption()), name="token.pem")
    expected = SSlibKey.from_crypto(private.public_key())

    created = ws.json("apps", "create", "demo", "--root-key", pem)
    assert created["rootKey"] == {"keyid": expected.keyid, "scheme": "ecdsa-sha2-nistp256"}
    ws.publish("demo", "2.3", PAYLOAD)

    root1 = json.loads(ws.root_json("demo"))
    assert root1["signed"]["roles"]["root"]["keyids"] == [expected.keyid]
    assert root1["signed"]["keys"][expected.keyid] == expected.to_dict()
    (sig,) = root1["signatures"]
    expected.verify_signature(Signature(sig["keyid"], sig["sig"]), canonical(root1["signed"]))

    export = ws.export("demo")
    updater = repo_updater(http_server(export), tmp_path / "md1", ws.root_json("demo"))
    updater.refresh()
    assert fetch(updater, "2.3/1/main.js")[1] == PAYLOAD
    assert ws.run("verify", "--repo", export, "--root", ws.root_file("demo"), registry=False).rc == 0

    # Rotating the root key away from the token: root 2 is signed by the ECDSA key and the new one.
    rotation = ws.json("keys", "rotate", "--app", "demo", "--role", "root")
    ws.json("keys", "rotate", "--app", "demo", "--role", "timestamp")
    ws.publish("demo", "2.3", PAYLOAD + b"// 2\n")
    export2 = ws.export("demo")
    root2 = json.loads((export2 / "metadata" / "2.root.json").read_bytes())
    assert {s["keyid"] for s in root2["signatures"]} == {expected.keyid, rotation["newKeyID"]}
    updater = repo_updater(http_server(export2), tmp_path / "md2", ws.root_json("demo"))
    updater.refresh()
    assert fetch(updater, "2.3/2/main.js")[1] == PAYLOAD + b"// 2\n"
    assert ws.run("verify", "--repo", export2, "--root", ws.root_file("demo"), registry=False).rc == 0


def test_apps_create_refuses_a_root_key_it_cannot_use(workspace):
    ws = workspace
    cases = {
        "p384.pem": ec.generate_private_key(ec.SECP384R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
        "encrypted.pem": ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"pw")),
        "public.pem": ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
    }
    needles = {"p384.pem": "P-256", "encrypted.pem": "encrypted", "public.pem": "public key"}
    for name, pem in cases.items():
        result = ws.run("apps", "create", "demo", "--root-key", ws.write_file(pem, name=name))
        assert_cli_error(result, 2, needles[name])
        assert not (ws.keys / "demo").exists() or not any((ws.keys / "demo").iterdir())
    assert ws.run("apps", "root", "demo").rc != 0, "no app was created"


# -- the Swift client (`patchctl fetch`) on the same repositories ------------------------------

def fetch_with_client(patchctl, tmp_path, base, root):
    result = patchctl("fetch", "--server", base, "--app", "pyapp", "--app-version", "2.3", "--device-id", "phone-1",
                      "--root", root, "--cache", tmp_path / "cache", "--json")
    return result, json.loads(result.stdout) if result.stdout.strip() else None


@pytest.mark.parametrize("layout", ["ecdsa", "rsa", "mixed-with-extra-key-members"])
def test_patchclient_installs_from_a_python_tuf_repository_of_each_key_type(patchctl, tmp_path, http_server, layout):
    site = tmp_path / "site"
    root = build_repo(site / "v1" / "apps" / "pyapp", LAYOUTS[layout](), hash_algorithms=("sha512", "sha256"))
    result, outcome = fetch_with_client(patchctl, tmp_path, http_server(site), root)
    assert result.rc == 0, result.stdout + result.stderr
    assert outcome["outcome"] == "updated" and outcome["patch"] == 1
    assert (tmp_path / "cache" / "pyapp" / "2.3" / "main.js").read_bytes() == PAYLOAD


@pytest.mark.parametrize("layout", ["ecdsa", "rsa"])
def test_patchclient_refuses_a_tampered_ecdsa_or_rsa_timestamp_signature(patchctl, tmp_path, http_server, layout):
    # timestamp.json is pinned by nothing else, so only its signature is wrong.
    site = tmp_path / "site"
    repo = site / "v1" / "apps" / "pyapp"
    root = build_repo(repo, LAYOUTS[layout]())
    flip_signature(repo / "metadata" / "timestamp.json")
    result, outcome = fetch_with_client(patchctl, tmp_path, http_server(site), root)
    assert result.rc == 1 and outcome["outcome"] == "failed", result.stdout + result.stderr
    assert "timestamp" in result.stdout + result.stderr
    assert not (tmp_path / "cache" / "pyapp" / "2.3" / "main.js").exists()
