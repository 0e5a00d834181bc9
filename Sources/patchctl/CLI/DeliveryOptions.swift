import Foundation
import HotpatchCLI
import PatchCore
import PatchSigning

/// `--devices`, `--devices-file`, `--min-os`, `--max-os`: a patch's signed delivery
/// conditions as publish takes them. Device IDs are hashed here, under a fresh salt, before
/// anything is stored or sent: with `--server` the raw IDs never leave this machine.
enum DeliveryOptions {
    static let options: [Option] = [
        .value("--devices", "IDS", "deliver only to these test devices (comma-separated device IDs; stored and signed as salted hashes)"),
        .value("--devices-file", "FILE", "as --devices, one device ID per line ('#' starts a comment)"),
        .value("--min-os", "V", "deliver only to devices on this OS version or later, e.g. 15.0"),
        .value("--max-os", "V", "deliver only to devices on this OS version or earlier; 17.4 includes 17.4.x"),
    ]

    /// The conditions the options give, nil when none is given.
    static func conditions(_ arguments: Arguments) throws(CLIError) -> DeliveryConditions? {
        var ids: [String] = []
        if let list = arguments.value("--devices") {
            ids += list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            if ids.isEmpty { throw .usage("--devices names no device") }
        }
        if let path = arguments.value("--devices-file") {
            let text = String(decoding: try Output.readFile(path, what: "device list", limit: 64 * 1024), as: UTF8.self)
            let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            let named = lines.filter { !$0.isEmpty && !$0.hasPrefix("#") }
            if named.isEmpty { throw .usage("\(path) names no device") }
            ids += named
        }
        do throws(ValidationError) {
            let devices = ids.isEmpty ? nil : try DeliveryConditions.Devices.hashing(ids)
            let min = try arguments.value("--min-os").map { raw throws(ValidationError) in try OSVersion(raw) }
            let max = try arguments.value("--max-os").map { raw throws(ValidationError) in try OSVersion(raw) }
            let os = min == nil && max == nil ? nil : try DeliveryConditions.OSRange(min: min, max: max)
            guard devices != nil || os != nil else { return nil }
            return try DeliveryConditions(devices: devices, os: os)
        } catch {
            throw .usage(error.message)
        }
    }
}
