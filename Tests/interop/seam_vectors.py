"""seam.json: the vectors both backends of the verification seam are written against
(Sources/PatchCore/Crypto/VerificationCrypto.swift; CryptoSeamTests runs them through the
OpenSSL backend on Linux and through CryptoKit/Security.framework on Apple platforms).

Assembled from the other fixtures, with the standard library only: keys.json (signatures
securesystemslib made with every key type), ed25519.json, aesgcm.json, digests.json, plus
RFC 8032 section 7.1 test 2. Keys are given as DER SubjectPublicKeyInfo, the form the seam takes.

    python3 Tests/interop/seam_vectors.py Tests/PatchCoreTests/Fixtures
"""
import base64
import json
import os
import sys

SCHEMES = {
    "ed25519": "ed25519",
    "ecdsa-sha2-nistp256": "ecdsa-sha256",
    "ecdsa-sha2-nistp384": "ecdsa-sha384",
    "ecdsa-sha2-nistp521": "ecdsa-sha512",
    "rsassa-pss-sha256": "rsa-pss-sha256",
    "rsassa-pss-sha384": "rsa-pss-sha384",
    "rsassa-pss-sha512": "rsa-pss-sha512",
    "rsa-pkcs1v15-sha256": "rsa-pkcs1v15-sha256",
    "rsa-pkcs1v15-sha384": "rsa-pkcs1v15-sha384",
    "rsa-pkcs1v15-sha512": "rsa-pkcs1v15-sha512",
}
ED25519_SPKI_PREFIX = "302a300506032b6570032100"


def spki_hex(key_object):
    public = key_object["keyval"]["public"]
    if key_object["scheme"] == "ed25519":
        return ED25519_SPKI_PREFIX + public
    body = "".join(line for line in public.splitlines() if not line.startswith("-----"))
    return base64.b64decode(body).hex()


def seam_vectors(fixtures):
    def load(name):
        with open(os.path.join(fixtures, name)) as f:
            return json.load(f)

    signatures = [
        {
            "name": "rfc8032-test2",
            "algorithm": "ed25519",
            "spki": ED25519_SPKI_PREFIX + "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
            "message": "72",
            "signature": "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
            "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
        },
        {
            # python cryptography, ECDSA P-256 over SHA-256 of "hotpatch verification seam".
            "name": "p256-seam",
            "algorithm": "ecdsa-sha256",
            "spki": "3059301306072a8648ce3d020106082a8648ce3d03010703420004471c3e758c4904285bba7e53118ed0f5"
            "24adeb0757d25bd2f8e7b0d76dfa714cdd520f7aca8a8b917acc37f51de8f0c9bbe3ad858382e702dc25a12d09f7a858",
            "message": b"hotpatch verification seam".hex(),
            "signature": "3045022068b50a1eb7ed652de338792ab3858f61b3e2648f62791c1d878cfc76f930270902210096947350"
            "467cb45922adbcf07dc5bf79de61e95005b1d14e7f6497e93f98dda2",
        },
    ]
    for vector in load("ed25519.json")["vectors"]:
        signatures.append({"name": "ed25519-" + vector["keyid"][:8], "algorithm": "ed25519",
                           "spki": ED25519_SPKI_PREFIX + vector["public"],
                           "message": vector["message"], "signature": vector["signature"]})
    for vector in load("keys.json")["vectors"]:
        key = json.loads(vector["keyObject"])
        signatures.append({"name": vector["name"], "algorithm": SCHEMES[key["scheme"]], "spki": spki_hex(key),
                           "message": vector["message"], "signature": vector["signature"]})

    aesgcm = [{
        # python cryptography: AESGCM(bytes(range(32))).encrypt(bytes(range(100, 112)), message, aad)
        "key": bytes(range(32)).hex(), "nonce": bytes(range(100, 112)).hex(),
        "ciphertext": "2074aa16189d35f61e143a9ab303039e23b66f65e54c8017c6bc", "tag": "a68b7a5d15734acb1230c272dab30ddf",
        "aad": (b"hotpatch-bundle-v1\0demo").hex(), "plaintext": b"hotpatch verification seam".hex(),
    }]
    for vector in load("aesgcm.json")["vectors"]:
        combined = bytes.fromhex(vector["combined"])
        aesgcm.append({"key": vector["key"], "nonce": combined[:12].hex(), "ciphertext": combined[12:-16].hex(),
                       "tag": combined[-16:].hex(), "aad": vector["aad"].encode().hex(), "plaintext": vector["plaintext"]})

    digests = []
    for vector in load("digests.json")["vectors"]:
        digests.append({"text": vector["text"], "repeat": vector["repeat"],
                        **{name: vector[name] for name in ("md5", "sha256", "sha384", "sha512")}})
    return {"signatures": signatures, "aesgcm": aesgcm, "digests": digests}


def write(fixtures):
    with open(os.path.join(fixtures, "seam.json"), "w") as f:
        json.dump(seam_vectors(fixtures), f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: seam_vectors.py FIXTURES_DIR")
    write(sys.argv[1])
