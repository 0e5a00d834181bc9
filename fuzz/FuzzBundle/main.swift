import FuzzSupport
import PatchCore
import PatchSigning

/// AES-256-GCM and the bundle layer over it. Records (0xFF-separated):
/// content key file, app, app version, patch number, encrypted bundle.
/// Invariants: nothing crashes; a key file that parses is 32 bytes written as 64 hex
/// characters; `open` returns plaintext only for the exact bytes `seal` makes from that
/// plaintext, key, AAD and nonce (GCM is deterministic given the nonce), so any plaintext
/// returned for a forged or altered box is caught; a sealed box opens to its plaintext
/// and stops opening after any one-bit change or truncation.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let records = input.records
    func record(_ i: Int) -> [UInt8] { i < records.count ? records[i] : [] }

    let keyFile = record(0)
    let key: [UInt8]
    if let parsed = try? BundleCipher.parseKeyFile(keyFile) {
        let text = String(decoding: keyFile, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        invariant(parsed.count == AESGCM.keyByteCount, "key file \(keyFile.debugDescriptionForFuzzing) gave \(parsed.count) bytes")
        invariant(Hex.encode(parsed) == text.lowercased(), "key file \(keyFile.debugDescriptionForFuzzing) decoded to another key")
        key = parsed
    } else {
        // The raw bytes as a key: wrong lengths must be refused, not crash.
        key = keyFile
    }
    let app = input.text(1)
    let appVersion = input.text(2)
    let patch = Int(input.text(3)) ?? 0
    let box = record(4)

    let aad = BundleCipher.associatedData(app: app, appVersion: appVersion, patch: patch)
    do {
        let plaintext = try BundleCipher.open(box, key: key, app: app, appVersion: appVersion, patch: patch)
        trace("bundle opened: \(plaintext.count) bytes")
        checkAuthentic(plaintext, box: box, key: key, aad: aad)
    } catch {
        trace("bundle refused: \(error)")
    }
    if let plaintext = try? AESGCM.open(box, key: key, aad: record(1)) {
        checkAuthentic(plaintext, box: box, key: key, aad: record(1))
    }

    // Seal the box's bytes as a plaintext under a 32-byte key, then tamper with the result.
    let sealKey = key.count == AESGCM.keyByteCount ? key : Digest.sha256(key)
    let nonce = Array(Digest.sha256(input.bytes).prefix(AESGCM.nonceByteCount))
    guard let sealed = try? AESGCM.seal(box, key: sealKey, aad: aad, nonce: nonce) else {
        invariant(false, "sealing \(box.count) bytes failed")
        return 0
    }
    invariant(sealed.count == box.count + AESGCM.overhead, "sealed box has \(sealed.count) bytes for \(box.count)")
    invariant((try? AESGCM.open(sealed, key: sealKey, aad: aad)) == box, "a sealed box does not open to its plaintext")
    let position = Int(nonce[0]) << 8 | Int(nonce[1])
    var flipped = sealed
    flipped[position % sealed.count] ^= 1 << (nonce[2] & 7)
    expectRefused(flipped, key: sealKey, aad: aad, "a box with bit \(nonce[2] & 7) of byte \(position % sealed.count) flipped")
    expectRefused(Array(sealed.dropLast()), key: sealKey, aad: aad, "a box one byte short")
    expectRefused(sealed, key: sealKey, aad: aad + [0], "a box under a longer AAD")
    return 0
}

/// `plaintext` came out of `open(box)`: only the box `seal` makes from it is authentic.
func checkAuthentic(_ plaintext: [UInt8], box: [UInt8], key: [UInt8], aad: [UInt8]) {
    let nonce = Array(box.prefix(AESGCM.nonceByteCount))
    let resealed = try? AESGCM.seal(plaintext, key: key, aad: aad, nonce: nonce)
    invariant(resealed == box, "open returned \(plaintext.count) bytes for a box that is not their sealed form")
}

func expectRefused(_ box: [UInt8], key: [UInt8], aad: [UInt8], _ what: String) {
    do throws(CryptoError) {
        let plaintext = try AESGCM.open(box, key: key, aad: aad)
        invariant(false, "\(what) opened to \(plaintext.count) bytes")
    } catch .authenticationFailed where box.count >= AESGCM.overhead {
    } catch .invalidInput where box.count < AESGCM.overhead {
    } catch {
        invariant(false, "\(what) refused with \(error)")
    }
}

runLibFuzzer(fuzz)
