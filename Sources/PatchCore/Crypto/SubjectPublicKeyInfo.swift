import Foundation

/// A public key as X.509 SubjectPublicKeyInfo (RFC 5280 4.1.2.7), read in Swift so both
/// crypto backends receive a key whose type is already known: CryptoKit needs to be told the
/// curve before it can parse a key, Security.framework wants the PKCS#1 `RSAPublicKey` inside.
///
/// Only the forms securesystemslib and OpenSSL write are accepted, in strict DER: Ed25519
/// (RFC 8410), EC keys on a named curve with an uncompressed point (RFC 5480), RSA with NULL
/// parameters (RFC 3279). Strictness makes `der` canonical — one key has one encoding —
/// which is what a threshold counts.
public struct SubjectPublicKeyInfo: Sendable, Equatable {
    public enum Curve: String, Sendable, CaseIterable {
        // OpenSSL's names, the ones KeyScheme and error messages use.
        case p256 = "prime256v1"
        case p384 = "secp384r1"
        case p521 = "secp521r1"

        /// Bytes of one coordinate.
        public var coordinateByteCount: Int {
            switch self {
            case .p256: return 32
            case .p384: return 48
            case .p521: return 66
            }
        }

        public var bitCount: Int {
            switch self {
            case .p256: return 256
            case .p384: return 384
            case .p521: return 521
            }
        }

        fileprivate var oid: [UInt8] {
            switch self {
            case .p256: return [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
            case .p384: return [0x2B, 0x81, 0x04, 0x00, 0x22]
            case .p521: return [0x2B, 0x81, 0x04, 0x00, 0x23]
            }
        }
    }

    public enum Algorithm: Sendable, Equatable {
        case ed25519
        case ec(Curve)
        case rsa
    }

    /// The whole SubjectPublicKeyInfo, DER.
    public let der: [UInt8]
    public let algorithm: Algorithm
    /// The BIT STRING's contents: the 32 raw bytes of an Ed25519 key, the uncompressed point
    /// `04 ‖ X ‖ Y` of an EC key, the DER `RSAPublicKey { n, e }` (PKCS#1) of an RSA key.
    public let publicKeyBytes: [UInt8]
    /// The modulus size of an RSA key, the field size of an EC key, 256 for Ed25519 (as OpenSSL counts).
    public let bitCount: Int

    private static let ed25519OID: [UInt8] = [0x2B, 0x65, 0x70]
    private static let ecPublicKeyOID: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]
    private static let rsaEncryptionOID: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]

    /// The SubjectPublicKeyInfo of the 32 raw bytes of an RFC 8032 Ed25519 public key.
    public init(ed25519 raw: [UInt8]) throws(CryptoError) {
        guard raw.count == 32 else { throw .invalidKey("an Ed25519 public key is 32 bytes, got \(raw.count)") }
        try self.init(der: [0x30, 0x2A, 0x30, 0x05, 0x06, 0x03] + Self.ed25519OID + [0x03, 0x21, 0x00] + raw)
    }

    /// A PEM `BEGIN PUBLIC KEY` block (text around it is ignored, as OpenSSL ignores it).
    public init(pem: [UInt8]) throws(CryptoError) {
        let text = String(decoding: pem, as: UTF8.self)
        guard let begin = text.range(of: "-----BEGIN PUBLIC KEY-----"),
            let end = text.range(of: "-----END PUBLIC KEY-----", range: begin.upperBound..<text.endIndex) else {
            throw .invalidKey("not a PEM public key (expected BEGIN PUBLIC KEY)")
        }
        let body = text[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        guard let der = Data(base64Encoded: String(body)) else { throw .invalidKey("the PEM public key is not base64") }
        try self.init(der: Array(der))
    }

    public init(der: [UInt8]) throws(CryptoError) {
        var outer = DERReader(der)
        var info = try outer.element(0x30).reader
        try outer.expectEnd()
        var identifier = try info.element(0x30).reader
        let oid = try identifier.element(0x06).content
        let bits = try info.element(0x03).content
        try info.expectEnd()
        // A BIT STRING of a key has no unused bits.
        guard bits.first == 0 else { throw .invalidKey("the public key BIT STRING has unused bits") }
        let key = Array(bits.dropFirst())

        switch Array(oid) {
        case Self.ed25519OID:
            try identifier.expectEnd()
            guard key.count == 32 else { throw .invalidKey("an Ed25519 public key is 32 bytes, got \(key.count)") }
            algorithm = .ed25519
            bitCount = 256
        case Self.ecPublicKeyOID:
            let curveOID = try identifier.element(0x06).content
            try identifier.expectEnd()
            guard let curve = Curve.allCases.first(where: { $0.oid == Array(curveOID) }) else {
                throw .invalidKey("an EC key must be on P-256, P-384 or P-521")
            }
            guard key.count == 1 + 2 * curve.coordinateByteCount, key.first == 0x04 else {
                throw .invalidKey("an EC public key must be an uncompressed point on \(curve.rawValue)")
            }
            algorithm = .ec(curve)
            bitCount = curve.bitCount
        case Self.rsaEncryptionOID:
            guard try identifier.element(0x05).content.isEmpty else { throw .invalidKey("RSA parameters must be NULL") }
            try identifier.expectEnd()
            var rsa = DERReader(key)
            var numbers = try rsa.element(0x30).reader
            try rsa.expectEnd()
            let modulus = try numbers.positiveInteger()
            _ = try numbers.positiveInteger()
            try numbers.expectEnd()
            algorithm = .rsa
            bitCount = (modulus.count - 1) * 8 + (8 - modulus[modulus.startIndex].leadingZeroBitCount)
        default:
            throw .invalidKey("not an Ed25519, EC or RSA public key")
        }
        self.der = der
        self.publicKeyBytes = key
    }
}

/// Strict DER: definite minimal lengths, nothing after the last element.
private struct DERReader {
    private let bytes: ArraySlice<UInt8>
    private var index: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        index = bytes.startIndex
    }

    init(_ bytes: [UInt8]) { self.init(bytes[...]) }

    struct Element {
        let content: ArraySlice<UInt8>
        var reader: DERReader { DERReader(content) }
    }

    mutating func element(_ tag: UInt8) throws(CryptoError) -> Element {
        guard index + 2 <= bytes.endIndex, bytes[index] == tag else { throw .invalidKey("malformed DER: expected tag \(tag)") }
        var length = Int(bytes[index + 1])
        index += 2
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard (1...3).contains(count), index + count <= bytes.endIndex, bytes[index] != 0 else { throw .invalidKey("malformed DER length") }
            length = bytes[index..<(index + count)].reduce(0) { $0 << 8 | Int($1) }
            guard length >= 0x80 else { throw .invalidKey("malformed DER: non-minimal length") }
            index += count
        }
        guard length <= bytes.endIndex - index else { throw .invalidKey("malformed DER: truncated") }
        defer { index += length }
        return Element(content: bytes[index..<(index + length)])
    }

    /// A positive INTEGER in minimal form, without its sign byte.
    mutating func positiveInteger() throws(CryptoError) -> ArraySlice<UInt8> {
        var value = try element(0x02).content
        guard let first = value.first, first & 0x80 == 0 else { throw .invalidKey("malformed DER: not a positive INTEGER") }
        if first == 0 {
            guard value.count > 1, value[value.startIndex + 1] & 0x80 != 0 else { throw .invalidKey("malformed DER: non-minimal INTEGER") }
            value = value.dropFirst()
        }
        return value
    }

    func expectEnd() throws(CryptoError) {
        guard index == bytes.endIndex else { throw .invalidKey("malformed DER: trailing bytes") }
    }
}
