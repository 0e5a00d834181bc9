import Foundation
import PatchCore

// The words as bytes, not `CommandLine.arguments`, which turns invalid UTF-8 into U+FFFD:
// `--message` or a token name would then be recorded as text nobody wrote. The variable
// that names the actor is read the same way; `ReadableText` holds both to one rule.
func bytes(_ text: UnsafePointer<CChar>) -> [UInt8] {
    Array(UnsafeBufferPointer(start: UnsafeRawPointer(text).assumingMemoryBound(to: UInt8.self), count: strlen(text)))
}

var words: [String] = []
do throws(ValidationError) {
    // stride, not 1..<argc: a process may be started with no argv at all.
    for i in stride(from: 1, to: Int(CommandLine.argc), by: 1) {
        guard let argument = CommandLine.unsafeArgv[i] else { continue }
        let option = words.last.flatMap { $0.hasPrefix("--") && !$0.contains("=") ? $0 : nil }
        words.append(try ReadableText.decode(bytes(argument), field: option.map { "value of \($0)" } ?? "argument \(i)"))
    }
    if let actor = getenv("HOTPATCH_ACTOR") { _ = try ReadableText.decode(bytes(actor), field: "$HOTPATCH_ACTOR") }
} catch {
    FileHandle.standardError.write(Data("patchctl: \(error.message)\n".utf8))
    exit(64)
}
exit(PatchCtl.main(words))
