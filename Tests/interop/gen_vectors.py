#!/usr/bin/env python3
"""Writes the PatchCore interop fixtures, computed by the reference Python stack.

    python Tests/interop/gen_vectors.py Tests/PatchCoreTests/Fixtures

Needs securesystemslib (canonical JSON, as python-tuf signs it), python-tuf and
cryptography. Every input is fixed, so running it again gives the same files: a diff
after a re-run means the reference behaviour changed, not the vectors. The exception is
keys.json: ECDSA signatures (random nonce) and RSA-PSS signatures (random salt) change on
every run, its keys do not; the tests verify those signatures instead of comparing them.
"""

import hashlib
import json
import os
import sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from securesystemslib.formats import encode_canonical

from key_vectors import key_vectors
import seam_vectors


def write(outdir, name, document):
    path = os.path.join(outdir, name)
    with open(path, "w", encoding="utf-8") as f:
        # ensure_ascii keeps control characters and astral code points visible as escapes
        # in the committed file; the decoded strings are what the tests compare.
        json.dump(document, f, indent=2, ensure_ascii=True)
        f.write("\n")
    print(f"wrote {path}")


def canonical(value):
    return encode_canonical(value)


# --- canonical JSON -------------------------------------------------------------------

CANONICAL_INPUTS = [
    # Key order is by code point: upper case before lower case, then Latin-1, then
    # astral. Swift's String `<` would order some of these differently.
    '{"z": 1, "\\u00e9": 2, "Z": 3, "a": 4, "\\u00ff": 5, "\\ud83d\\ude00": 6, "\\u4e2d": 7, "_": 8, "": 9}',
    '{"b": {"y": [3, 2, 1], "x": {"d": null, "c": true}}, "a": false}',
    # U+FFFF sorts before an astral key although UTF-16 order would put it after.
    '{"\\uffff": 1, "\\ud800\\udc00": 2, "\\ufb01": 3}',
    # A precomposed and a decomposed key, in separate objects (Swift would merge them).
    '[{"\\u00e9": 1}, {"e\\u0301": 2}]',
    # Swift's String `<` compares canonically equivalent forms, so it would put "\u00e9a"
    # first; by code point "e" + U+0301 comes first.
    '{"\\u00e9a": 1, "e\\u0301x": 2}',
    # Only quote and backslash are escaped; control characters are written raw.
    '"quote \\" backslash \\\\ slash \\/ newline \\n tab \\t cr \\r nul \\u0000 soh \\u0001 us \\u001f del \\u007f"',
    '{"key with \\"quote\\"": "value with \\\\ backslash"}',
    '"\\b\\f"',
    # Unicode, escaped and raw, including the astral plane (surrogate pairs in the input).
    '"caf\\u00e9 \\u4e2d\\u6587 \\ud83d\\ude80 \\ud834\\udd1e"',
    '"café 中文 🚀 𝄞"',
    '["\\u2028\\u2029", "\\ufeff"]',
    # Numbers: integers only, up to the int64 limits.
    '[0, -0, 1, -1, 42, -42, 1000000, 9223372036854775807, -9223372036854775808]',
    '{"version": 1, "length": 1048576, "negative": -17}',
    'true',
    'false',
    'null',
    '0',
    '""',
    '{}',
    '[]',
    '[[], {}, [[]], {"a": {}}]',
    '  { "spaced" :  [ 1 , 2 ] , "out" : { } }  ',
    # A TUF-shaped document.
    '{"signed": {"_type": "timestamp", "spec_version": "1.0.31", "version": 7, '
    '"expires": "2030-01-01T00:00:00Z", "meta": {"snapshot.json": {"version": 3, '
    '"length": 512, "hashes": {"sha256": "ab", "md5": "cd"}}}}, "signatures": []}',
]

# Floats are refused by encode_canonical; our parser refuses them at parse time.
REFUSED_INPUTS = [
    "1.5",
    "1e3",
    "1E3",
    "-0.0",
    "2.0",
    "1e-3",
    "[1, 2.5]",
    '{"version": 1.0}',
]


def canonical_vectors():
    vectors = []
    for text in CANONICAL_INPUTS:
        vectors.append({"input": text, "canonical": canonical(json.loads(text))})
    for text in REFUSED_INPUTS:
        try:
            canonical(json.loads(text))
        except Exception:  # securesystemslib raises FormatError
            continue
        raise SystemExit(f"encode_canonical accepted {text!r}; expected a refusal")
    return {"vectors": vectors, "refused": REFUSED_INPUTS}


# --- Ed25519 ---------------------------------------------------------------------------


def keyid(public_hex):
    key = {"keytype": "ed25519", "scheme": "ed25519", "keyval": {"public": public_hex}}
    return hashlib.sha256(canonical(key).encode("utf-8")).hexdigest()


RFC8032_TEST1_PUBLIC = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"


def ed25519_vectors():
    seeds = [
        # RFC 8032 section 7.1, test 1: anchors the file to a published vector.
        bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"),
        bytes(range(32)),
        hashlib.sha256(b"hotpatch test key: root").digest(),
        hashlib.sha256(b"hotpatch test key: timestamp").digest(),
    ]
    signed_objects = [
        {
            "_type": "timestamp",
            "spec_version": "1.0.31",
            "version": 1,
            "expires": "2030-01-01T00:00:00Z",
            "meta": {"snapshot.json": {"version": 1}},
        },
        {
            "_type": "targets",
            "spec_version": "1.0.31",
            "version": 2,
            "expires": "2030-06-30T12:00:00Z",
            "targets": {
                "2.3/1/main.js": {
                    "length": 24,
                    "hashes": {"sha256": "00" * 32, "md5": "11" * 16},
                    "custom": {"rollout": 30, "note": "café ✓"},
                }
            },
        },
    ]
    vectors = []
    for index, seed in enumerate(seeds):
        private = Ed25519PrivateKey.from_private_bytes(seed)
        public = private.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        pem = private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode("ascii")
        if index == 0:
            assert public.hex() == RFC8032_TEST1_PUBLIC, "RFC 8032 test 1 public key differs"
        signed = signed_objects[index % len(signed_objects)]
        message = canonical(signed).encode("utf-8")
        signature = private.sign(message)
        private.public_key().verify(signature, message)
        vectors.append(
            {
                "seed": seed.hex(),
                "public": public.hex(),
                "keyid": keyid(public.hex()),
                "pem": pem,
                # Spaced-out text: the tests parse it and must produce exactly "message".
                "signedText": json.dumps(signed, indent=1, ensure_ascii=False),
                "message": message.hex(),
                "signature": signature.hex(),
            }
        )
    # A valid PEM private key that is not Ed25519 (P-256 from a fixed scalar): must be refused.
    other = ec.derive_private_key(0x1234567890ABCDEF, ec.SECP256R1())
    other_pem = other.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode("ascii")
    return {"vectors": vectors, "p256PEM": other_pem}


# --- AES-256-GCM -----------------------------------------------------------------------


def aesgcm_vectors():
    cases = [
        ("demo", "2.3", 1, b"console.log('patched');\n"),
        ("demo", "2.3", 2, b""),
        ("shop-app", "10.0.0-beta.2", 17, ("é中🚀" * 100).encode("utf-8")),
    ]
    vectors = []
    for index, (app, version, patch, plaintext) in enumerate(cases):
        key = hashlib.sha256(f"hotpatch content key {index}".encode()).digest()
        nonce = hashlib.sha256(f"hotpatch nonce {index}".encode()).digest()[:12]
        aad = f"hotpatch/v1|{app}|{version}|{patch}".encode("utf-8")
        combined = nonce + AESGCM(key).encrypt(nonce, plaintext, aad)
        vectors.append(
            {
                "app": app,
                "appVersion": version,
                "patch": patch,
                "key": key.hex(),
                "nonce": nonce.hex(),
                "aad": aad.decode("utf-8"),
                "plaintext": plaintext.hex(),
                "combined": combined.hex(),
            }
        )
    return {"vectors": vectors}


# --- rollout buckets -------------------------------------------------------------------


def rollout_vectors():
    app, version = "demo", "2.3"
    devices = [
        "device-0001",
        "device-0002",
        "device-0003",
        "device-0042",
        "device-1000",
        "0b3f2a9c-6c1e-4d7a-9f0e-2b1c3d4e5f60",
        "E621E1F8-C36C-495A-93FC-0C247A3E6E5F",
        "00000000-0000-0000-0000-000000000000",
        "ffffffff-ffff-ffff-ffff-ffffffffffff",
        "a",
        "",
        "iPhone 15 Pro",
        "android:7f3c9e2d",
        "pixel|8",
        "appareil-é",
        "设备-42",
        "device-🚀",
        "  padded  ",
        "x" * 200,
        "12345",
    ]
    vectors = []
    for patch in (1, 2, 3):
        for device in devices:
            digest = hashlib.sha256(f"{app}|{version}|{patch}|{device}".encode("utf-8")).digest()
            bucket = int.from_bytes(digest[:4], "big") % 100
            vectors.append({"patch": patch, "deviceID": device, "bucket": bucket})
    return {"app": app, "appVersion": version, "vectors": vectors}


# --- digests ---------------------------------------------------------------------------


def digest_vectors():
    # "text" repeated "repeat" times is the input; 1 MiB of 'a' is not stored literally.
    cases = [("", 1), ("abc", 1), ("a", 1 << 20), ("café 🚀", 3)]
    vectors = []
    for text, repeat in cases:
        data = text.encode("utf-8") * repeat
        vectors.append(
            {
                "text": text,
                "repeat": repeat,
                "md5": hashlib.md5(data).hexdigest(),
                "sha256": hashlib.sha256(data).hexdigest(),
                "sha384": hashlib.sha384(data).hexdigest(),
                "sha512": hashlib.sha512(data).hexdigest(),
            }
        )
    return {"vectors": vectors}


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: gen_vectors.py OUTDIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    write(outdir, "canonical.json", canonical_vectors())
    write(outdir, "ed25519.json", ed25519_vectors())
    write(outdir, "aesgcm.json", aesgcm_vectors())
    write(outdir, "rollout.json", rollout_vectors())
    write(outdir, "digests.json", digest_vectors())
    write(outdir, "keys.json", key_vectors())
    seam_vectors.write(outdir)
    delegation_vectors(outdir)


def delegation_vectors(outdir):
    """A repository with one delegation (test_tuf_delegations.build_delegated_repo), keys
    from a fixed seed, expiring 2036, as directory `delegation/` (DelegationFixtureTests)."""
    import shutil
    from datetime import datetime, timezone
    from pathlib import Path

    from test_tuf_delegations import build_delegated_repo
    out = Path(outdir) / "delegation"
    shutil.rmtree(out, ignore_errors=True)
    build_delegated_repo(out, expires=datetime(2036, 1, 1, tzinfo=timezone.utc), seed=b"hotpatch delegation vectors")


if __name__ == "__main__":
    main()
