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

    @Test("parsed metadata is remembered by its exact bytes only: the same bytes give the same value, a byte changed is parsed (and refused) afresh, and a verifier still checks the remembered value")
    func parsedByExactBytes() throws {
        let repo = try TestRepository()
        let bytes = try repo.targets(version: 3)
        ParsedMetadata.shared.removeAll()
        let first = try SignedTargets(bytes: bytes)
        let again = try SignedTargets(bytes: bytes)
        #expect(first == again && again.body.version == 3)
        #expect(again.message == again.signedJSON.canonicalBytes)
        // The same file with one byte of the version changed: another value, and its signature fails.
        let text = String(decoding: bytes, as: UTF8.self)
        let changed = Array(text.replacingOccurrences(of: "\"version\":3", with: "\"version\":4").utf8)
        #expect(changed != bytes)
        let other = try SignedTargets(bytes: changed)
        #expect(other.body.version == 4)
        #expect(other.validSignatureCount(keys: repo.keys(.targets).map { TUFKey($0.publicKey) }) == 0)
        #expect(again.validSignatureCount(keys: repo.keys(.targets).map { TUFKey($0.publicKey) }) == 1)
        // Malformed bytes are refused every time, never remembered.
        let broken = Array(bytes.dropLast())
        #expect(throws: TUFError.self) { try SignedTargets(bytes: broken) }
        #expect(throws: TUFError.self) { try SignedTargets(bytes: broken) }
        // A limit below the file's length still refuses it, remembered or not.
        #expect(throws: TUFError.self) { try SignedTargets(bytes: bytes, maxLength: bytes.count - 1) }
    }
}
