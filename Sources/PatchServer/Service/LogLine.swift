import Foundation
import HTTPTransport

/// Writes one line to a file descriptor with write(2), dropping it if it cannot be written.
/// Not `FileHandle.write(_:)`: on Linux that traps when the write fails, so a log line on a
/// full disk (the very moment a publish fails with 507) killed patchd.
public func writeLine(_ text: String, to descriptor: Int32 = STDERR_FILENO) {
    var bytes = Array((text + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeMutableBytes { write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
        if n > 0 { offset += n } else if n < 0, errno == EINTR { continue } else { return }
    }
}
