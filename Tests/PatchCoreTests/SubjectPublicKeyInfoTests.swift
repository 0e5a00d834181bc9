import Foundation
import Testing
@testable import PatchCore

/// SubjectPublicKeyInfo is read in Swift on every platform; on Linux, what it accepts is
/// compared with what OpenSSL reads from the same bytes.
@Suite("SubjectPublicKeyInfo: strict DER, one encoding per key")
struct SubjectPublicKeyInfoTests {
    @Test("each seam.json key reads with its type and size, and its DER is what OpenSSL writes back for it",
          arguments: try SeamVectors.load().signatures)
    func readsLikeOpenSSL(_ vector: SeamVectors.Signature) throws {
        let der = try bytes(hex: vector.spki)
        let info = try SubjectPublicKeyInfo(der: der)
        #expect(info.der == der)
        switch (info.algorithm, vector.algorithm) {
        case (.ed25519, "ed25519"): #expect(info.publicKeyBytes.count == 32)
        case (.ec(let curve), let name) where name.hasPrefix("ecdsa"): #expect(info.publicKeyBytes.count == 1 + 2 * curve.coordinateByteCount)
        case (.rsa, let name) where name.hasPrefix("rsa"): #expect(info.bitCount >= 2048)
        default: Issue.record("\(info.algorithm) for \(vector.algorithm)")
        }
        #if canImport(CCrypto)
        let box = try PKeyBox(spki: der)
        #expect(try box.publicKeyDER() == der)
        #expect(box.bits == info.bitCount)
        if case .ec(let curve) = info.algorithm { #expect(box.groupName == curve.rawValue) }
        #endif
    }

    @Test("a PEM block reads as its DER; an Ed25519 raw key gets the RFC 8410 prefix")
    func pemAndRaw() throws {
        let p256 = try #require(try SeamVectors.load().signatures.first { $0.algorithm == "ecdsa-sha256" })
        let der = try bytes(hex: p256.spki)
        let pem = "preamble\n-----BEGIN PUBLIC KEY-----\n\(Data(der).base64EncodedString(options: .lineLength64Characters))\n-----END PUBLIC KEY-----\n"
        #expect(try SubjectPublicKeyInfo(pem: Array(pem.utf8)).der == der)
        let raw = [UInt8](repeating: 7, count: 32)
        #expect(try SubjectPublicKeyInfo(ed25519: raw).der == (try bytes(hex: "302a300506032b6570032100")) + raw)
        #expect(throws: CryptoError.self) { try SubjectPublicKeyInfo(ed25519: Array(raw.prefix(31))) }
        #expect(throws: CryptoError.self) { try SubjectPublicKeyInfo(pem: Array("-----BEGIN PUBLIC KEY-----\n!!\n-----END PUBLIC KEY-----\n".utf8)) }
    }

    @Test("refused: trailing bytes, a non-minimal length, a compressed point, another curve or algorithm, RSA without NULL")
    func refusesOtherForms() throws {
        let p256 = try bytes(hex: "3059301306072a8648ce3d020106082a8648ce3d03010703420004471c3e758c4904285bba7e53118ed0f524adeb0757d25bd2f8e7b0d76dfa714cdd520f7aca8a8b917acc37f51de8f0c9bbe3ad858382e702dc25a12d09f7a858")
        var longLength = p256
        longLength.replaceSubrange(0..<2, with: [0x30, 0x81, 0x59])
        var compressed = try bytes(hex: "3039301306072a8648ce3d020106082a8648ce3d03010703220002")
        compressed += p256[27..<59]
        var secp256k1 = p256
        secp256k1.replaceSubrange(15..<25, with: try bytes(hex: "06052b8104000a"))
        secp256k1[1] -= 3
        secp256k1[3] -= 3
        let dsaOID = try bytes(hex: "06072a8648ce380401")
        var dsa = p256
        dsa.replaceSubrange(4..<13, with: dsaOID)
        let rsa = try #require(try SeamVectors.load().signatures.first { $0.algorithm.hasPrefix("rsa") })
        var rsaNoNull = try bytes(hex: rsa.spki)
        // 30 82 LL LL 30 0d 06 09 <oid> 05 00 03 ...: drop the NULL and shorten both lengths.
        rsaNoNull.removeSubrange(17..<19)
        rsaNoNull[5] -= 2
        let total = (Int(rsaNoNull[2]) << 8 | Int(rsaNoNull[3])) - 2
        rsaNoNull[2] = UInt8(total >> 8)
        rsaNoNull[3] = UInt8(total & 0xFF)
        for (name, der) in [("trailing byte", p256 + [0]), ("long-form length", longLength), ("compressed point", compressed),
                            ("secp256k1", secp256k1), ("DSA", dsa), ("RSA without NULL", rsaNoNull), ("truncated", Array(p256.dropLast()))] {
            #expect(throws: CryptoError.self, "\(name)") { try SubjectPublicKeyInfo(der: der) }
        }
        #expect(try SubjectPublicKeyInfo(der: bytes(hex: rsa.spki)).algorithm == .rsa)
    }
}
