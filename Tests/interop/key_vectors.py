"""keys.json for gen_vectors.py: key objects, signatures and roots made by securesystemslib
and python-tuf with every key type they sign with (docs/PROTOCOL.md section 3). Keys are
derived from fixed labels, so they do not change between runs; ECDSA and RSA-PSS signatures
are randomised and do."""

import datetime
import hashlib
import itertools
import json

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from securesystemslib.formats import encode_canonical
from securesystemslib.signer import CryptoSigner, SSlibKey
from tuf.api.metadata import Metadata, Root
from tuf.api.serialization.json import JSONSerializer


def canonical(value):
    return encode_canonical(value)


def _stream(label):
    """An endless deterministic byte stream: sha256(label || counter)."""
    for counter in itertools.count():
        yield from hashlib.sha256(f"{label}|{counter}".encode()).digest()


def _is_probable_prime(n):
    if n < 2:
        return False
    small = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97]
    for p in small:
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in small:  # 25 fixed Miller-Rabin bases: error below 4^-25, enough for a fixture
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _prime(bits, stream, e):
    while True:
        n = int.from_bytes(bytes(next(stream) for _ in range(bits // 8)), "big")
        n |= (3 << (bits - 2)) | 1  # top two bits set: p*q has exactly 2*bits bits
        if _is_probable_prime(n) and (n - 1) % e != 0:
            return n


def deterministic_rsa(bits, label):
    """An RSA key derived from `label`, so the fixture's keys do not change between runs."""
    e, stream = 65537, _stream(label)
    p = _prime(bits // 2, stream, e)
    q = _prime(bits // 2, stream, e)
    while q == p:
        q = _prime(bits // 2, stream, e)
    n, phi = p * q, (p - 1) * (q - 1)
    d = pow(e, -1, phi)
    numbers = rsa.RSAPrivateNumbers(p, q, d, d % (p - 1), d % (q - 1), pow(q, -1, p), rsa.RSAPublicNumbers(e, n))
    return numbers.private_key()


def deterministic_ec(curve, label):
    order = {"secp256r1": 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551,
             "secp384r1": int("ffffffffffffffffffffffffffffffffffffffffffffffffc7634d81f4372ddf581a0db248b0a77aecec196accc52973", 16),
             "secp521r1": int("01fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffa51868783bf2f966b7fcc0148f709a5d03bb5c9b8899c47aebb6fb71e91386409", 16)}[curve.name]
    scalar = int.from_bytes(hashlib.sha512(label.encode()).digest() * 2, "big") % (order - 1) + 1
    return ec.derive_private_key(scalar, curve)


def pem_private(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode("ascii")


def signer_for(private, scheme=None, extra=None):
    """A securesystemslib CryptoSigner; `extra` members are added to its key object."""
    public = SSlibKey.from_crypto(private.public_key(), scheme=scheme)
    if extra:
        key_dict = {**public.to_dict(), **extra}
        keyid = hashlib.sha256(canonical(key_dict).encode("utf-8")).hexdigest()
        public = SSlibKey.from_dict(keyid, dict(key_dict))
        assert public.to_dict() == key_dict, "securesystemslib must keep unknown key members"
    return CryptoSigner(private, public)


KEY_MESSAGE = {"_type": "timestamp", "spec_version": "1.0.31", "version": 1, "expires": "2030-01-01T00:00:00Z",
               "meta": {"snapshot.json": {"version": 1}}}


def key_cases():
    ed = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"hotpatch test key: legacy").digest())
    return [
        ("ecdsa-p256", signer_for(deterministic_ec(ec.SECP256R1(), "hotpatch p256"))),
        ("ecdsa-p384", signer_for(deterministic_ec(ec.SECP384R1(), "hotpatch p384"))),
        ("ecdsa-p521", signer_for(deterministic_ec(ec.SECP521R1(), "hotpatch p521"))),
        ("rsa-pss-sha256", signer_for(deterministic_rsa(2048, "hotpatch rsa 2048"))),
        ("rsa-pss-sha512", signer_for(deterministic_rsa(3072, "hotpatch rsa 3072"), scheme="rsassa-pss-sha512")),
        ("rsa-pkcs1v15-sha256", signer_for(deterministic_rsa(2048, "hotpatch rsa 2048"), scheme="rsa-pkcs1v15-sha256")),
        # The legacy securesystemslib key object (keyid_hash_algorithms) and a tool's own member:
        # both are part of what the keyid hashes.
        ("ed25519-legacy-fields", signer_for(ed, extra={"keyid_hash_algorithms": ["sha256", "sha512"]})),
        ("ecdsa-p256-owner", signer_for(deterministic_ec(ec.SECP256R1(), "hotpatch p256 owner"),
                                        extra={"x-owner": "release team", "x-token": {"serial": 12345}})),
    ]


def key_vectors():
    message = canonical(KEY_MESSAGE).encode("utf-8")
    vectors = []
    signers = key_cases()
    for name, signer in signers:
        key = signer.public_key
        signature = signer.sign(message)
        key.verify_signature(signature, message)  # securesystemslib's own verifier agrees
        assert key.keyid == hashlib.sha256(canonical(key.to_dict()).encode("utf-8")).hexdigest()
        # Key objects are given as JSON text: the tests parse them with hotpatch's parser.
        vectors.append({"name": name, "keyid": key.keyid, "keyObject": json.dumps(key.to_dict()),
                        "message": message.hex(), "signature": signature.signature})

    # A root as python-tuf writes it, with keys of every kind and a threshold of 3 for root.
    expires = "2030-01-01T00:00:00Z"
    by_name = dict(signers)
    root = Root(expires=datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc), consistent_snapshot=True)
    root_signers = [by_name["ed25519-legacy-fields"], by_name["ecdsa-p256-owner"], by_name["rsa-pss-sha256"]]
    for s in root_signers:
        root.add_key(s.public_key, "root")
    root.roles["root"].threshold = 3
    for role, name in (("timestamp", "ecdsa-p256"), ("snapshot", "rsa-pkcs1v15-sha256"), ("targets", "ecdsa-p384")):
        root.add_key(by_name[name].public_key, role)
    md = Metadata(root)
    for s in root_signers:
        md.sign(s, append=True)
    # Served as python-tuf writes files (JSON, "\n" escaped inside the PEM keys): canonical
    # JSON itself would hold raw newlines, which no JSON parser accepts.
    root_bytes = md.to_bytes(JSONSerializer(compact=True))
    parsed = Metadata.from_bytes(root_bytes)
    parsed.verify_delegate("root", parsed)
    assert expires in root_bytes.decode()

    # The same root with a key of a type no tool here knows, listed for root: python-tuf
    # refuses the whole file; hotpatch counts the key for nothing (docs/PROTOCOL.md, section 3).
    doc = json.loads(root_bytes)
    unknown = {"keytype": "x-future-pq", "scheme": "x-future-pq-1", "keyval": {"public": "00ff"}}
    unknown_id = hashlib.sha256(canonical(unknown).encode("utf-8")).hexdigest()
    doc["signed"]["keys"][unknown_id] = unknown
    doc["signed"]["roles"]["root"]["keyids"].append(unknown_id)
    payload = canonical(doc["signed"]).encode("utf-8")
    doc["signatures"] = [{"keyid": s.public_key.keyid, "sig": s.sign(payload).signature} for s in root_signers]
    unknown_bytes = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode("utf-8")
    try:
        Metadata.from_bytes(unknown_bytes)
        python_tuf_refuses = False
    except Exception:  # tuf.api.exceptions.DeserializationError
        python_tuf_refuses = True
    assert python_tuf_refuses, "python-tuf now accepts roots with unknown key types: revisit PROTOCOL section 3"

    p256 = deterministic_ec(ec.SECP256R1(), "hotpatch imported root key")
    return {
        "vectors": vectors,
        "root": root_bytes.decode("utf-8"),
        # What the signatures cover: the canonical JSON of `signed`, raw newlines and all.
        "rootSignedCanonicalHex": canonical(json.loads(root_bytes)["signed"]).encode("utf-8").hex(),
        "rootWithUnknownKey": unknown_bytes.decode("utf-8"),
        "unknownKeyID": unknown_id,
        # An ECDSA P-256 private key in both PEM forms `apps create --root-key` takes, and
        # the keyid securesystemslib gives its public key.
        "p256PKCS8": pem_private(p256),
        "p256SEC1": p256.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                       serialization.NoEncryption()).decode("ascii"),
        "p256KeyID": SSlibKey.from_crypto(p256.public_key()).keyid,
        "p256KeyObject": json.dumps(SSlibKey.from_crypto(p256.public_key()).to_dict()),
        # A 1024-bit RSA key: verifiable, but refused (hotpatch requires 2048 bits).
        "rsa1024KeyObject": json.dumps(SSlibKey.from_crypto(deterministic_rsa(1024, "hotpatch rsa 1024").public_key()).to_dict()),
    }
