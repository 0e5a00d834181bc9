import Foundation
internal import CZip

/// One file to put in a zip archive.
struct ZipEntry {
    let name: String
    let bytes: [UInt8]
    /// Deflate (level 9) or store.
    let deflate: Bool
}

/// A libzip failure, with libzip's own reason.
struct ZipError: Error, CustomStringConvertible {
    let operation: String
    let reason: String
    var description: String { "libzip \(operation) failed: \(reason)" }
}

/// Zip archives written in memory with libzip, reproducibly: entries in the order given,
/// each dated 1980-01-01 00:00 (the zip epoch, written as a DOS date so the time zone
/// plays no part) with Unix mode 0644 and no extra fields, so the same entries give the
/// same bytes on every run (with the same zlib).
enum ZipArchive {
    /// DOS date 1980-01-01: (year − 1980) << 9 | month << 5 | day.
    static let dosDate: UInt16 = 1 << 5 | 1
    static let dosTime: UInt16 = 0

    static func archive(_ entries: [ZipEntry]) throws(ZipError) -> [UInt8] {
        guard !entries.isEmpty else { throw ZipError(operation: "archive", reason: "an archive needs at least one entry") }
        var error = zip_error_t()
        zip_error_init(&error)
        defer { zip_error_fini(&error) }
        guard let raw = zip_source_buffer_create(nil, 0, 0, &error) else {
            throw ZipError(operation: "zip_source_buffer_create", reason: String(cString: zip_error_strerror(&error)))
        }
        let buffer = ZipBuffer(raw)
        // The archive takes a reference of its own; ours keeps the bytes readable after zip_close.
        zip_source_keep(raw)
        guard let archive = zip_open_from_source(raw, ZIP_TRUNCATE, &error) else {
            zip_source_free(raw)
            throw ZipError(operation: "zip_open_from_source", reason: String(cString: zip_error_strerror(&error)))
        }
        let writer = ZipWriter(archive)
        for entry in entries { try writer.add(entry) }
        try writer.close()
        return try buffer.contents()
    }
}

/// Owns one reference to a libzip in-memory source: where the archive is written.
private final class ZipBuffer {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { zip_source_free(pointer) }

    func contents() throws(ZipError) -> [UInt8] {
        guard zip_source_open(pointer) == 0 else { throw failure("zip_source_open") }
        defer { zip_source_close(pointer) }
        guard zip_source_seek(pointer, 0, SEEK_END) == 0 else { throw failure("zip_source_seek") }
        let size = zip_source_tell(pointer)
        guard size > 0, zip_source_seek(pointer, 0, SEEK_SET) == 0 else { throw failure("zip_source_tell") }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        var offset = 0
        while offset < bytes.count {
            let read = bytes.withUnsafeMutableBytes { raw in
                zip_source_read(pointer, raw.baseAddress! + offset, zip_uint64_t(raw.count - offset))
            }
            guard read > 0 else { throw failure("zip_source_read") }
            offset += Int(read)
        }
        return bytes
    }

    private func failure(_ operation: String) -> ZipError {
        ZipError(operation: operation, reason: String(cString: zip_error_strerror(zip_source_error(pointer))))
    }
}

/// Owns one open `zip_t*` being written; discarded in `deinit` unless closed.
private final class ZipWriter {
    let pointer: OpaquePointer
    private var closed = false

    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { if !closed { zip_discard(pointer) } }

    func add(_ entry: ZipEntry) throws(ZipError) {
        // libzip reads the data only in zip_close, so it gets a malloc'd copy to own and free.
        guard let copy = malloc(max(entry.bytes.count, 1)) else { throw ZipError(operation: "malloc", reason: "out of memory") }
        entry.bytes.withUnsafeBytes { raw in
            if let base = raw.baseAddress { copy.copyMemory(from: base, byteCount: raw.count) }
        }
        guard let source = zip_source_buffer(pointer, copy, zip_uint64_t(entry.bytes.count), 1) else {
            free(copy)
            throw failure("zip_source_buffer")
        }
        let added = zip_file_add(pointer, entry.name, source, ZIP_FL_ENC_UTF_8)
        guard added >= 0 else {
            zip_source_free(source)
            throw failure("zip_file_add")
        }
        let index = zip_uint64_t(added)
        guard zip_set_file_compression(pointer, index, entry.deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, entry.deflate ? 9 : 0) == 0,
              zip_file_set_dostime(pointer, index, ZipArchive.dosTime, ZipArchive.dosDate, 0) == 0,
              zip_file_set_external_attributes(pointer, index, 0, zip_uint8_t(ZIP_OPSYS_UNIX), 0o100644 << 16) == 0 else {
            throw failure("setting the attributes of \(entry.name)")
        }
    }

    func close() throws(ZipError) {
        guard zip_close(pointer) == 0 else { throw failure("zip_close") }
        closed = true
    }

    private func failure(_ operation: String) -> ZipError {
        ZipError(operation: operation, reason: String(cString: zip_strerror(pointer)))
    }
}
