import Foundation
import PatchCore

// The words as bytes, not `CommandLine.arguments`, which turns invalid UTF-8 into U+FFFD:
// `--message` or a token name would then be recorded as text nobody wrote. The variable
// that names the actor is read the same way; `ReadableText` holds both to one rule.
var words: [String] = []
do throws(ValidationError) {
    for i in 1..<Int(CommandLine.argc) {
        guard let argument = CommandLine.unsafeArgv[i] else { continue }
        let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(argument).assumingMemoryBound(to: UInt8.self), count: strlen(argument))
        let previous = words.last.flatMap { $0.hasPrefix("--") && !$0.contains("=") ? $0 : nil }
        words.append(try ReadableText.decode(bytes, field: previous.map { "value of \($0)" } ?? "argument \(i)"))
    }
    if let actor = getenv("HOTPATCH_ACTOR") {
        _ = try ReadableText.decode(UnsafeBufferPointer(start: UnsafeRawPointer(actor).assumingMemoryBound(to: UInt8.self), count: strlen(actor)),
                                    field: "$HOTPATCH_ACTOR")
    }
} catch {
    FileHandle.standardError.write(Data("patchctl: \(error.message)\n".utf8))
    exit(64)
}
exit(PatchCtl.main(words))
