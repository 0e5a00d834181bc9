import Foundation
internal import CCrypto
import PatchCore

/// An RSA private key, for the one legacy format that needs RSA: JSPatch Loader packages
/// (docs/PROTOCOL.md, "JSPatch Loader compatibility"). It offers only what that format
/// uses — PKCS#1 v1.5 type-1 "private-key encryption" of a short string — and the public
/// key in the form an app embeds.
public struct RSAPrivateKey: Sendable {
    private let box: PKeyBox
    /// The modulus size, e.g. 2048.
    public let bitCount: Int

    /// A new key with public exponent 65537.
    public static func generate(bits: Int = 2048) throws(CryptoError) -> RSAPrivateKey {
        guard (1024...16384).contains(bits) else { throw .invalidInput("RSA key size must be 1024 to 16384 bits, got \(bits)") }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, "RSA", nil) else { throw CryptoError.fromOpenSSL("EVP_PKEY_CTX_new_from_name") }
        defer { EVP_PKEY_CTX_free(ctx) }
        var pkey: OpaquePointer?
        guard EVP_PKEY_keygen_init(ctx) == 1, EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, Int32(bits)) == 1,
              EVP_PKEY_keygen(ctx, &pkey) == 1, let pkey else {
            throw CryptoError.fromOpenSSL("RSA keygen")
        }
        return try RSAPrivateKey(PKeyBox(pkey))
    }

    /// An unencrypted PEM private key: PKCS#1 (`BEGIN RSA PRIVATE KEY`, what `openssl genrsa`
    /// 1.x and the JSPatch demo wrote) or PKCS#8 (`BEGIN PRIVATE KEY`).
    public init(pem: [UInt8]) throws(CryptoError) {
        let box = try PKeyBox(privatePEM: pem)
        guard box.baseID == EVP_PKEY_RSA else { throw .invalidKey("not an RSA key") }
        try self.init(box)
    }

    private init(_ box: PKeyBox) throws(CryptoError) {
        self.box = box
        bitCount = box.bits
        guard bitCount > 0 else { throw CryptoError.fromOpenSSL("EVP_PKEY_get_bits") }
    }

    /// The size of the output of `privateEncryptPKCS1`, in bytes.
    public var byteCount: Int { (bitCount + 7) / 8 }

    /// PKCS#8 PEM, unencrypted: the file is protected by its mode (0600), like ssh keys.
    public func pemRepresentation() throws(CryptoError) -> [UInt8] { try box.privateKeyPEM() }

    /// The public key as DER SubjectPublicKeyInfo.
    public func publicKeyDER() throws(CryptoError) -> [UInt8] { try box.publicKeyDER() }

    /// The public key as PEM SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`): what an app's
    /// `JPLoader.h` embeds and `openssl pkeyutl -pubin` reads.
    public func publicKeyPEM() throws(CryptoError) -> String { try box.publicKeyPEM() }

    /// RSA "private-key encryption" with PKCS#1 v1.5 type-1 padding and no DigestInfo:
    /// `00 01 FF…FF 00 ‖ data`, raised to the private exponent. The same bytes as
    /// `openssl pkeyutl -sign -pkeyopt rsa_padding_mode:pkcs1` and PHP's
    /// `openssl_private_encrypt`; the padding is deterministic, so the same key and data
    /// always give the same output. `data` is at most `byteCount - 11` bytes.
    public func privateEncryptPKCS1(_ data: [UInt8]) throws(CryptoError) -> [UInt8] {
        guard !data.isEmpty, data.count <= byteCount - 11 else {
            throw .invalidInput("PKCS#1 v1.5 with a \(bitCount)-bit key takes 1 to \(byteCount - 11) bytes, got \(data.count)")
        }
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, box.pointer, nil) else { throw CryptoError.fromOpenSSL("EVP_PKEY_CTX_new_from_pkey") }
        defer { EVP_PKEY_CTX_free(ctx) }
        // No signature digest is set, so the provider pads and exponentiates the raw bytes.
        guard EVP_PKEY_sign_init(ctx) == 1, EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) == 1 else {
            throw CryptoError.fromOpenSSL("RSA sign init")
        }
        var output = [UInt8](repeating: 0, count: byteCount)
        var length = output.count
        guard EVP_PKEY_sign(ctx, &output, &length, data, data.count) == 1, length == byteCount else {
            throw CryptoError.fromOpenSSL("EVP_PKEY_sign")
        }
        return output
    }
}
