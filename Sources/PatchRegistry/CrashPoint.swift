import Foundation

/// Fault injection for the crash-safety tests: when `HOTPATCH_CRASH_AT` names a point, the
/// process kills itself there with SIGKILL, as a power cut or OOM kill would, with no
/// chance to clean up. Unset (always, outside tests) it costs one comparison.
enum CrashPoint {
    private static let target = ProcessInfo.processInfo.environment["HOTPATCH_CRASH_AT"]

    static func hit(_ name: String) {
        if let target, target == name { kill(getpid(), SIGKILL) }
    }
}
