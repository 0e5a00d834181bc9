@testable import PatchCore
import PatchSigning
import Testing

/// What issue 23 changed in signature checking: passed checks are remembered by their exact
/// inputs only (the Ed25519 SubjectPublicKeyInfo built without OpenSSL's encoder is
/// SubjectPublicKeyInfoTests').
@Suite("Verification memo")
struct VerificationMemoTests {
    @Test("a remembered check passes only the same key, signature and message; any other byte is checked afresh")
    func onlyExactInputs() throws {
        let signer = try Ed25519PrivateKey.generate()
        let other = try Ed25519PrivateKey.generate()
        let key = TUFKey(signer.publicKey)
        let message = Array("{\"signed\":1}".utf8)
        let signature = try signer.signature(for: message)
        #expect(key.isValidSignature(signature, for: message))
        #expect(key.isValidSignature(signature, for: message), "the remembered answer")
        var tampered = message
        tampered[tampered.count - 2] = UInt8(ascii: "2")
        #expect(!key.isValidSignature(signature, for: tampered))
        var flipped = signature
        flipped[0] ^= 1
        #expect(!key.isValidSignature(flipped, for: message))
        #expect(!TUFKey(other.publicKey).isValidSignature(signature, for: message), "another key with the same signature and message")
        // Failures are never remembered: the same wrong input stays wrong, the right one right.
        #expect(!key.isValidSignature(flipped, for: message))
        VerifiedSignatures.shared.removeAll()
        #expect(key.isValidSignature(signature, for: message))
    }

    @Test("the memo is bounded: more distinct checks than its capacity still all verify")
    func bounded() throws {
        let signer = try Ed25519PrivateKey.generate()
        let key = TUFKey(signer.publicKey)
        for i in 0..<(VerifiedSignatures.capacity * 2 + 3) {
            let message = Array("message \(i)".utf8)
            #expect(key.isValidSignature(try signer.signature(for: message), for: message))
        }
    }
}
