import Foundation
internal import CCrypto
import PatchCore

/// PEM in and out of a key: what key import and key files need, never a device.
extension PKeyBox {
    /// A PEM SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`).
    package convenience init(publicPEM pem: [UInt8]) throws(CryptoError) {
        try self.init(spki: SubjectPublicKeyInfo(pem: pem).der)
    }

    /// An unencrypted PEM private key: PKCS#8 (`BEGIN PRIVATE KEY`) or a traditional form
    /// (`BEGIN EC PRIVATE KEY`, `BEGIN RSA PRIVATE KEY`).
    package convenience init(privatePEM pem: [UInt8]) throws(CryptoError) {
        let text = String(decoding: pem.prefix(64 << 10), as: UTF8.self)
        if text.contains("BEGIN ENCRYPTED PRIVATE KEY") || text.contains("Proc-Type: 4,ENCRYPTED") {
            throw .invalidKey("the PEM key is encrypted; decrypt it first (openssl pkey -in KEY -out PLAIN.pem) and keep PLAIN.pem private")
        }
        if text.contains("PUBLIC KEY"), !text.contains("PRIVATE KEY") {
            throw .invalidKey("this is a public key; import the private key that belongs to it")
        }
        let bio = try MemoryBIO(reading: pem)
        // A callback that supplies no passphrase: OpenSSL's default would prompt on the terminal.
        guard let pkey = PEM_read_bio_PrivateKey(bio.pointer, nil, { _, _, _, _ in 0 }, nil) else {
            ERR_clear_error()
            throw .invalidKey("not a PEM private key")
        }
        self.init(pkey)
    }

    /// The public key as PEM SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`, 64-column base64,
    /// a final newline): byte for byte what python's `cryptography` writes.
    package func publicKeyPEM() throws(CryptoError) -> String {
        let bio = try MemoryBIO()
        guard PEM_write_bio_PUBKEY(bio.pointer, pointer) == 1 else { throw CryptoError.fromOpenSSL("PEM_write_bio_PUBKEY") }
        return String(decoding: try bio.bytes(), as: UTF8.self)
    }

    /// PKCS#8 PEM, unencrypted: key files are protected by their mode (0600), like ssh keys.
    package func privateKeyPEM() throws(CryptoError) -> [UInt8] {
        let bio = try MemoryBIO()
        guard PEM_write_bio_PKCS8PrivateKey(bio.pointer, pointer, nil, nil, 0, nil, nil) == 1 else {
            throw CryptoError.fromOpenSSL("PEM_write_bio_PKCS8PrivateKey")
        }
        return try bio.bytes()
    }
}
