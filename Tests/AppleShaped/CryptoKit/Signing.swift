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

/// https://developer.apple.com/documentation/cryptokit/p256 — and P384, P521: the same
/// members, each with its curve and the SHA-2 it pairs with.
public enum P256 {
    public enum Signing {
        /// https://developer.apple.com/documentation/cryptokit/p256/signing/publickey
        public struct PublicKey: Sendable {
            let key: EVPKey

            /// `init<Bytes>(derRepresentation: Bytes) throws where Bytes : RandomAccessCollection, Bytes.Element == UInt8`
            /// https://developer.apple.com/documentation/cryptokit/p256/signing/publickey/init(derrepresentation:)
            public init<Bytes: RandomAccessCollection>(derRepresentation: Bytes) throws where Bytes.Element == UInt8 {
                key = try EVPKey.ec(spki: derRepresentation, curve: "prime256v1")
            }

            /// `func isValidSignature<D>(_ signature: P256.Signing.ECDSASignature, for data: D) -> Bool where D : DataProtocol`
            /// https://developer.apple.com/documentation/cryptokit/p256/signing/publickey/isvalidsignature(_:for:)-(_,D)
            public func isValidSignature<D: DataProtocol>(_ signature: ECDSASignature, for data: D) -> Bool {
                key.isValid(signature.der, for: Array(data), digest: "SHA256")
            }
        }

        /// https://developer.apple.com/documentation/cryptokit/p256/signing/ecdsasignature
        public struct ECDSASignature: Sendable {
            let der: [UInt8]

            /// `init<D>(derRepresentation: D) throws where D : DataProtocol`
            /// https://developer.apple.com/documentation/cryptokit/p256/signing/ecdsasignature/init(derrepresentation:)
            public init<D: DataProtocol>(derRepresentation: D) throws { der = try ECDSADER.check(Array(derRepresentation)) }
        }
    }
}

/// https://developer.apple.com/documentation/cryptokit/p384
public enum P384 {
    public enum Signing {
        /// https://developer.apple.com/documentation/cryptokit/p384/signing/publickey
        public struct PublicKey: Sendable {
            let key: EVPKey

            /// https://developer.apple.com/documentation/cryptokit/p384/signing/publickey/init(derrepresentation:)
            public init<Bytes: RandomAccessCollection>(derRepresentation: Bytes) throws where Bytes.Element == UInt8 {
                key = try EVPKey.ec(spki: derRepresentation, curve: "secp384r1")
            }

            /// https://developer.apple.com/documentation/cryptokit/p384/signing/publickey/isvalidsignature(_:for:)
            public func isValidSignature<D: DataProtocol>(_ signature: ECDSASignature, for data: D) -> Bool {
                key.isValid(signature.der, for: Array(data), digest: "SHA384")
            }
        }

        /// https://developer.apple.com/documentation/cryptokit/p384/signing/ecdsasignature/init(derrepresentation:)
        public struct ECDSASignature: Sendable {
            let der: [UInt8]
            public init<D: DataProtocol>(derRepresentation: D) throws { der = try ECDSADER.check(Array(derRepresentation)) }
        }
    }
}

/// https://developer.apple.com/documentation/cryptokit/p521
public enum P521 {
    public enum Signing {
        /// https://developer.apple.com/documentation/cryptokit/p521/signing/publickey
        public struct PublicKey: Sendable {
            let key: EVPKey

            /// https://developer.apple.com/documentation/cryptokit/p521/signing/publickey/init(derrepresentation:)
            public init<Bytes: RandomAccessCollection>(derRepresentation: Bytes) throws where Bytes.Element == UInt8 {
                key = try EVPKey.ec(spki: derRepresentation, curve: "secp521r1")
            }

            /// https://developer.apple.com/documentation/cryptokit/p521/signing/publickey/isvalidsignature(_:for:)
            public func isValidSignature<D: DataProtocol>(_ signature: ECDSASignature, for data: D) -> Bool {
                key.isValid(signature.der, for: Array(data), digest: "SHA512")
            }
        }

        /// https://developer.apple.com/documentation/cryptokit/p521/signing/ecdsasignature/init(derrepresentation:)
        public struct ECDSASignature: Sendable {
            let der: [UInt8]
            public init<D: DataProtocol>(derRepresentation: D) throws { der = try ECDSADER.check(Array(derRepresentation)) }
        }
    }
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
