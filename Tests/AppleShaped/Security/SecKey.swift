// A stand-in for Apple's Security framework, compiled only in the Linux "apple-shaped" test
// build (Package.swift, HOTPATCH_APPLE_SHAPED=1): exactly the names
// Sources/PatchCore/Crypto/Apple/SecKeyVerifier.swift uses, with the signatures Apple documents
// (cited next to each), over OpenSSL through the CryptoKit stand-in's key owner.
import Foundation
import CryptoKit

// Core Foundation's types, which Security's Swift API takes. On Apple platforms `Data as
// CFData` and `[CFString: Any] as CFDictionary` are toll-free bridges; here the Swift types
// stand for them, so the same `as` casts compile and mean "the same bytes, the same entries".
public typealias CFData = Data
public typealias CFString = String
public typealias CFDictionary = [CFString: Any]

/// https://developer.apple.com/documentation/corefoundation/cferror — a class, as
/// `Unmanaged<CFError>` requires.
public final class CFError: CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// https://developer.apple.com/documentation/security/seckey — an immutable key.
public final class SecKey: @unchecked Sendable {
    // @unchecked: immutable; EVPKey allows concurrent verifies.
    let key: EVPKey
    init(_ key: EVPKey) { self.key = key }
}

/// `let kSecAttrKeyType: CFString` and the others, each a documented `CFString` constant:
/// https://developer.apple.com/documentation/security/ksecattrkeytype,
/// https://developer.apple.com/documentation/security/ksecattrkeytypersa,
/// https://developer.apple.com/documentation/security/ksecattrkeyclass,
/// https://developer.apple.com/documentation/security/ksecattrkeyclasspublic
public let kSecAttrKeyType: CFString = "type"
public let kSecAttrKeyTypeRSA: CFString = "rsa"
public let kSecAttrKeyClass: CFString = "class"
public let kSecAttrKeyClassPublic: CFString = "public"

/// `func SecKeyCreateWithData(_ keyData: CFData, _ attributes: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey?`
/// https://developer.apple.com/documentation/security/seckeycreatewithdata(_:_:_:) — only an
/// RSA public key (PKCS #1 `RSAPublicKey`, the form SecKeyCopyExternalRepresentation gives).
public func SecKeyCreateWithData(_ keyData: CFData, _ attributes: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? {
    func fail(_ reason: String) -> SecKey? {
        error?.pointee = Unmanaged.passRetained(CFError(reason))
        return nil
    }
    guard attributes[kSecAttrKeyType] as? CFString == kSecAttrKeyTypeRSA, attributes[kSecAttrKeyClass] as? CFString == kSecAttrKeyClassPublic else {
        return fail("this stand-in imports RSA public keys only")
    }
    guard let key = EVPKey.rsa(pkcs1: Array(keyData)) else { return fail("not a DER RSAPublicKey") }
    return SecKey(key)
}

/// https://developer.apple.com/documentation/security/seckeyalgorithm — the six RSA signature
/// algorithms over a whole message.
public struct SecKeyAlgorithm: Hashable, RawRepresentable, Sendable {
    public let rawValue: CFString
    public init(rawValue: CFString) { self.rawValue = rawValue }

    /// https://developer.apple.com/documentation/security/seckeyalgorithm/rsasignaturemessagepsssha256
    /// (and …384, …512): SecKey.h gives MGF1 over the same digest and a salt as long as it.
    public static let rsaSignatureMessagePSSSHA256 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PSS:SHA256")
    public static let rsaSignatureMessagePSSSHA384 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PSS:SHA384")
    public static let rsaSignatureMessagePSSSHA512 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PSS:SHA512")
    /// https://developer.apple.com/documentation/security/seckeyalgorithm/rsasignaturemessagepkcs1v15sha256
    public static let rsaSignatureMessagePKCS1v15SHA256 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PKCS1v15:SHA256")
    public static let rsaSignatureMessagePKCS1v15SHA384 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PKCS1v15:SHA384")
    public static let rsaSignatureMessagePKCS1v15SHA512 = SecKeyAlgorithm(rawValue: "algid:sign:RSA:message-PKCS1v15:SHA512")

    /// The digest OpenSSL names and the padding, read back from the name.
    var openSSL: (digest: String, padding: EVPKey.RSAPadding) {
        let digest = String(rawValue.split(separator: ":").last ?? "")
        return (digest, rawValue.contains("PSS") ? .pssSaltIsDigestLength : .pkcs1v15)
    }
}

/// `func SecKeyVerifySignature(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ signedData: CFData, _ signature: CFData, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> Bool`
/// https://developer.apple.com/documentation/security/seckeyverifysignature(_:_:_:_:_:)
public func SecKeyVerifySignature(_ key: SecKey, _ algorithm: SecKeyAlgorithm, _ signedData: CFData, _ signature: CFData,
                                  _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> Bool {
    let (digest, padding) = algorithm.openSSL
    if key.key.isValid(Array(signature), for: Array(signedData), digest: digest, rsa: padding) { return true }
    error?.pointee = Unmanaged.passRetained(CFError("the signature does not verify"))
    return false
}
