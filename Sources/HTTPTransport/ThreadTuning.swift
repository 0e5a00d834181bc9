internal import CNetwork

/// What patchd's own threads set on themselves at start: a name (`top -H`, `perf`, a core
/// dump's thread list) and, for background writers, a lower priority with a short slice so
/// they never delay an event loop. Here because the transport owns the C shim; PatchServer's
/// write queue uses it too.
package enum ThreadTuning {
    /// Names the calling thread (at most 15 bytes are kept, Linux's limit).
    package static func name(_ name: String) { hp_name_thread(name) }

    /// Lowers the calling thread's priority by `nice` and asks for a slice of `sliceNanoseconds`
    /// (SCHED_OTHER's sched_setattr); the syscall's result, 0 when it took.
    @discardableResult
    package static func lowerPriority(nice: Int32, sliceNanoseconds: UInt64) -> Int32 {
        hp_lower_thread_priority(nice, sliceNanoseconds)
    }
}
