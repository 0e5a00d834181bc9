@testable import PatchCore
import Foundation
import Testing

/// The memo key of issue 23 and the small-file read the client's cache goes through.
@Suite("Exact bytes and file contents")
struct ExactBytesTests {
    @Test("equal only when every byte is equal; equal keys hash alike, whatever the length")
    func exactBytes() {
        for length in [0, 1, 255, 256, 257, 511, 512, 513, 5000] {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            #expect(ExactBytes(bytes) == ExactBytes(Array(bytes)))
            #expect(ExactBytes(bytes).hashValue == ExactBytes(Array(bytes)).hashValue)
            #expect(ExactBytes(bytes) != ExactBytes(bytes + [0]))
            for index in Set([0, length / 2, length - 1]) where index >= 0 && index < length {
                var other = bytes
                other[index] ^= 0x01
                #expect(ExactBytes(bytes) != ExactBytes(other), "byte \(index) of \(length)")
                #expect(Set([ExactBytes(bytes), ExactBytes(other)]).count == 2)
            }
        }
    }

    @Test("a file's bytes, nil when missing, a directory or over the limit; an empty file is empty")
    func fileContents() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("file-contents-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.path + "/f"
        let bytes = (0..<40_000).map { UInt8(truncatingIfNeeded: $0) }
        try DurableFile.replace(atPath: path, with: bytes)
        #expect(FileContents.read(atPath: path) == bytes)
        #expect(FileContents.read(atPath: path, limit: bytes.count) == bytes)
        #expect(FileContents.read(atPath: path, limit: bytes.count - 1) == nil)
        #expect(FileContents.read(atPath: directory.path + "/missing") == nil)
        #expect(FileContents.read(atPath: directory.path) == nil)
        try DurableFile.replace(atPath: path, with: [])
        #expect(FileContents.read(atPath: path) == [])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["f"], "no temporary file left")
    }

    @Test("replace makes a missing directory only when asked, and never clobbers a file that holds a temporary name")
    func replaceMakingDirectory() throws {
        let top = FileManager.default.temporaryDirectory.appendingPathComponent("replace-dirs-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: top) }
        #expect(throws: DurableFile.Failure.self) { try DurableFile.replace(atPath: top + "/a/b/f", with: [1]) }
        #expect(!FileManager.default.fileExists(atPath: top), "nothing made when not asked")
        try DurableFile.replace(atPath: top + "/a/b/f", with: [1, 2], makingDirectory: true)
        #expect(FileContents.read(atPath: top + "/a/b/f") == [1, 2])
        // The next temporary names are taken (a crash left them, or a forked child writes):
        // each is skipped, untouched, and the write still lands.
        let next = DurableFile.temporaryCountForTests()
        let taken = (1...20).map { DurableFile.temporaryPath(directory: top + "/a/b", name: "f", count: next + UInt64($0)) }
        for path in taken { try DurableFile.replace(atPath: path, with: [9]) }
        try DurableFile.replace(atPath: top + "/a/b/f", with: [3], makingDirectory: true)
        #expect(FileContents.read(atPath: top + "/a/b/f") == [3])
        for path in taken { #expect(FileContents.read(atPath: path) == [9], "\(path) untouched") }
        // Many writers at once get names of their own.
        DispatchQueue.concurrentPerform(iterations: 64) { i in
            #expect((try? DurableFile.replace(atPath: top + "/many/\(i % 4)", with: [UInt8(i)], sync: false, makingDirectory: true)) != nil)
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: top + "/many").sorted() == ["0", "1", "2", "3"], "no temporary file left")
    }

    @Test("makeDirectories creates the missing parents, accepts what is there, and names the path it cannot create")
    func makeDirectories() throws {
        let top = FileManager.default.temporaryDirectory.appendingPathComponent("make-dirs-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: top) }
        try DurableFile.makeDirectories(atPath: top + "/a/b/c/")
        var isDirectory: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: top + "/a/b/c", isDirectory: &isDirectory) && isDirectory.boolValue)
        try DurableFile.makeDirectories(atPath: top + "/a/b/c")
        try DurableFile.makeDirectories(atPath: top + "/a")
        try DurableFile.replace(atPath: top + "/file", with: [1])
        #expect(throws: DurableFile.Failure.self) { try DurableFile.makeDirectories(atPath: top + "/file/x/y") }
        do { try DurableFile.makeDirectories(atPath: top + "/file/x/y") } catch { #expect(error.message.contains(top + "/file/x")) }
    }
}
