import Foundation
import HotpatchCLI
import PatchSigning

/// `--key-file PEM`, once per key: private keys that sign this one command, on this machine,
/// and are never stored: a release engineer's targets key (the two-person rule: a change
/// that still needs another key holder's signature waits as pending), or a delegated
/// channel's role key. Over `--server` the signature is made here and only it is sent.
enum SigningKeys {
    static let option = Option.value("--key-file", "PEM", "sign with this Ed25519 or ECDSA P-256 private key (PKCS#8 PEM), here; repeat for several keys. Over --server only the signature is sent").repeatable

    static func read(_ arguments: Arguments) throws(CLIError) -> [SigningKey] {
        var keys: [SigningKey] = []
        for path in arguments.all("--key-file") {
            let pem = try Output.readFile(path, what: "the private key", limit: 64 << 10)
            do { keys.append(try SigningKey(pem: pem)) } catch { throw .failed("\(path.pathSanitized): \(error)") }
        }
        return keys
    }
}
