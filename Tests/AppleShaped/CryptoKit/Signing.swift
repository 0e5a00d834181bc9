import Foundation
internal import CCrypto

/// https://developer.apple.com/documentation/cryptokit/curve25519
public enum Curve25519 {
    /// https://developer.apple.com/documentation/cryptokit/curve25519/signing
    public enum Signing {
        /// https://developer.apple.com/documentation/cryptokit/curve25519/signing/publickey
        public struct PublicKey: Sendable {
            let key: EVPKey

            /// `init<D>(rawRepresentation: D) throws where D : ContiguousBytes`
            /// https://developer.apple.com/documentation/cryptokit/curve25519/signing/publickey/init(rawrepresentation:)
            public init<D: ContiguousBytes>(rawRepresentation: D) throws {
                key = try EVPKey.ed25519(raw: rawRepresentation.withUnsafeBytes { Array($0) })
            }

            /// `func isValidSignature<S, D>(_ signature: S, for data: D) -> Bool where S : DataProtocol, D : DataProtocol`
            /// https://developer.apple.com/documentation/cryptokit/curve25519/signing/publickey/isvalidsignature(_:for:)
            public func isValidSignature<S: DataProtocol, D: DataProtocol>(_ signature: S, for data: D) -> Bool {
                key.isValid(Array(signature), for: Array(data), digest: nil)
            }
        }
    }
}

/// https://developer.apple.com/documentation/cryptokit/p256 (and p384, p521): the same members
/// on each curve, with the SHA-2 it pairs with. Apple declares a struct per curve; here one
/// generic struct per role, named per curve by typealiases, so a P-384 signature still cannot
/// be handed to a P-256 key.
public enum P256 {
    public enum Signing {
        /// https://developer.apple.com/documentation/cryptokit/p256/signing/publickey
        public typealias PublicKey = ECDSAPublicKey<P256Curve>
        /// https://developer.apple.com/documentation/cryptokit/p256/signing/ecdsasignature
        public typealias ECDSASignature = ECDSASignatureValue<P256Curve>
    }
}

/// https://developer.apple.com/documentation/cryptokit/p384
public enum P384 {
    public enum Signing {
        /// https://developer.apple.com/documentation/cryptokit/p384/signing/publickey
        public typealias PublicKey = ECDSAPublicKey<P384Curve>
        /// https://developer.apple.com/documentation/cryptokit/p384/signing/ecdsasignature
        public typealias ECDSASignature = ECDSASignatureValue<P384Curve>
    }
}

/// https://developer.apple.com/documentation/cryptokit/p521
public enum P521 {
    public enum Signing {
        /// https://developer.apple.com/documentation/cryptokit/p521/signing/publickey
        public typealias PublicKey = ECDSAPublicKey<P521Curve>
        /// https://developer.apple.com/documentation/cryptokit/p521/signing/ecdsasignature
        public typealias ECDSASignature = ECDSASignatureValue<P521Curve>
    }
}

/// A NIST curve as OpenSSL names it, with the digest CryptoKit pairs it with.
public protocol ECDSACurve: Sendable {
    static var openSSLName: String { get }
    static var digest: String { get }
}

public enum P256Curve: ECDSACurve {
    public static let openSSLName = "prime256v1", digest = "SHA256"
}

public enum P384Curve: ECDSACurve {
    public static let openSSLName = "secp384r1", digest = "SHA384"
}

public enum P521Curve: ECDSACurve {
    public static let openSSLName = "secp521r1", digest = "SHA512"
}

public struct ECDSAPublicKey<Curve: ECDSACurve>: Sendable {
    let key: EVPKey

    /// `init<Bytes>(derRepresentation: Bytes) throws where Bytes : RandomAccessCollection, Bytes.Element == UInt8`
    /// https://developer.apple.com/documentation/cryptokit/p256/signing/publickey/init(derrepresentation:)
    public init<Bytes: RandomAccessCollection>(derRepresentation: Bytes) throws where Bytes.Element == UInt8 {
        key = try EVPKey.ec(spki: derRepresentation, curve: Curve.openSSLName)
    }

    /// `func isValidSignature<D>(_ signature: P256.Signing.ECDSASignature, for data: D) -> Bool where D : DataProtocol`
    /// https://developer.apple.com/documentation/cryptokit/p384/signing/publickey/isvalidsignature(_:for:)
    public func isValidSignature<D: DataProtocol>(_ signature: ECDSASignatureValue<Curve>, for data: D) -> Bool {
        key.isValid(signature.der, for: Array(data), digest: Curve.digest)
    }
}

public struct ECDSASignatureValue<Curve: ECDSACurve>: Sendable {
    let der: [UInt8]

    /// `init<D>(derRepresentation: D) throws where D : DataProtocol`
    /// https://developer.apple.com/documentation/cryptokit/p521/signing/ecdsasignature/init(derrepresentation:)
    public init<D: DataProtocol>(derRepresentation: D) throws { der = try ECDSADER.check(Array(derRepresentation)) }
}

/// What an `ECDSASignature(derRepresentation:)` accepts here: one DER `SEQUENCE { r, s }`
/// OpenSSL reads whole. (Whether CryptoKit accepts exactly these forms is not knowable here;
/// docs/IOS.md.)
enum ECDSADER {
    static func check(_ der: [UInt8]) throws(CryptoKitError) -> [UInt8] {
        let consumed = der.withUnsafeBufferPointer { buffer -> Int? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &cursor, buffer.count) else { return nil }
            ECDSA_SIG_free(signature)
            return cursor.map { $0 - buffer.baseAddress! }
        }
        guard consumed == der.count, !der.isEmpty else { throw .failure() }
        return der
    }
}
