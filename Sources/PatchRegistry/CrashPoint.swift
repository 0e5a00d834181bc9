import Foundation

/// Fault injection for the crash-safety and race tests. Unset (always, outside tests) each
/// point costs one comparison.
/// - `HOTPATCH_CRASH_AT=point`: the process kills itself there with SIGKILL, as a power cut
///   or OOM kill would, with no chance to clean up.
/// - `HOTPATCH_PAUSE_AT=point` with `HOTPATCH_PAUSE_DIR=dir`: the process creates
///   `dir/point.paused` there and waits until `dir/point.resume` exists (at most 60 s), so a
///   test can run another process inside a window that is otherwise microseconds wide.
enum CrashPoint {
    private static let environment = ProcessInfo.processInfo.environment
    private static let crashAt = environment["HOTPATCH_CRASH_AT"]
    private static let pauseAt = environment["HOTPATCH_PAUSE_AT"]
    private static let pauseDirectory = environment["HOTPATCH_PAUSE_DIR"]

    static func hit(_ name: String) {
        if let crashAt, crashAt == name { kill(getpid(), SIGKILL) }
        if let pauseAt, pauseAt == name, let pauseDirectory { pause(name, in: pauseDirectory) }
    }

    private static func pause(_ name: String, in directory: String) {
        let base = URL(fileURLWithPath: directory).appendingPathComponent(name)
        _ = FileManager.default.createFile(atPath: base.path + ".paused", contents: nil)
        let deadline = Date().addingTimeInterval(60)
        while !FileManager.default.fileExists(atPath: base.path + ".resume"), Date() < deadline { usleep(5_000) }
    }
}
