internal import CNetwork

/// Sends the answers an event loop held during a turn (`EventLoop.heldAnswers`) in one
/// system call, through io_uring. Written one sendmsg each, the first write woke a client
/// on the same cores, the client preempted the loop at that call's return, and the rest of
/// the turn's answers waited a scheduler slice behind it: measured with `perf record -e
/// sched:sched_switch`, 888 of 1,586 preemptions of patchd's loops in 2 s of the new-device
/// check were at sendmsg's return in `writeHeldAnswers` (docs/BENCHMARKS.md). One call
/// writes every answer before that return.
///
/// Each answer is copied whole into `staging` (one owner for the memory the kernel reads;
/// an answer's own arrays give no pointer that outlives a closure). Answers larger than
/// `largestStaged`, or past `stagingBytes` in one turn, or on TLS, go out the usual way.
final class SendRing {
    /// Sends per system call, at most (the most sockets one `epoll_wait` reports).
    static let entries = 256
    /// Bytes staged per call at most.
    static let stagingBytes = 256 * 1024
    /// An answer larger than this is written from its own bytes.
    static let largestStaged = 16 * 1024

    private var ring: UnsafeMutableRawPointer?
    private let staging: UnsafeMutableRawPointer
    private var used = 0
    private var fds: [Int32] = []
    private var offsets: [Int] = []
    private var lengths: [Int] = []

    /// nil when the kernel has no io_uring or refuses it (a sysctl, a seccomp profile).
    init?() {
        guard let ring = hp_ring_create(UInt32(SendRing.entries)) else { return nil }
        self.ring = ring
        staging = UnsafeMutableRawPointer.allocate(byteCount: SendRing.stagingBytes, alignment: 16)
        fds.reserveCapacity(SendRing.entries)
        offsets.reserveCapacity(SendRing.entries)
        lengths.reserveCapacity(SendRing.entries)
    }

    deinit {
        if let ring { hp_ring_destroy(ring) }
        staging.deallocate()
    }

    /// False once a call failed in a way that leaves the ring unusable; the loop then writes
    /// one sendmsg per answer.
    var usable: Bool { ring != nil }

    /// Answers staged for the next `send`.
    var count: Int { fds.count }

    /// Copies `head` then `body` as one answer for `fd`; its slot, or nil when it does not
    /// fit (too large, the staging full, the call's entries used up).
    func stage(fd: Int32, head: ArraySlice<UInt8>, body: ArraySlice<UInt8>) -> Int? {
        let length = head.count + body.count
        guard ring != nil, length <= SendRing.largestStaged, used + length <= SendRing.stagingBytes,
              fds.count < SendRing.entries else { return nil }
        head.withUnsafeBytes { (staging + used).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        body.withUnsafeBytes { bytes in
            if bytes.count > 0 { (staging + used + head.count).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
        }
        fds.append(fd)
        offsets.append(used)
        lengths.append(length)
        used += length
        return fds.count - 1
    }

    /// What happened to one staged answer.
    enum Outcome: Equatable {
        /// This many bytes went out (maybe not all: the rest is the usual write's).
        case sent(Int)
        /// Nothing went out: the socket had no room, or the kernel did not take the entry.
        case notSent
        /// The socket failed, or what was sent is unknown: the connection must close.
        case failed
    }

    /// Sends every staged answer in one system call and forgets them; the outcomes by slot.
    func send() -> [Outcome] {
        guard let ring, !fds.isEmpty else { discard(); return [] }
        var results = [Int32](repeating: 0, count: fds.count)
        let status = hp_ring_send_all(ring, Int32(fds.count), fds, staging.assumingMemoryBound(to: UInt8.self), offsets, lengths, &results)
        if status != 0 {
            hp_ring_destroy(ring)
            self.ring = nil
        }
        discard()
        return results.map { result in
            if result >= 0 { return .sent(Int(result)) }
            if result == Int32.min || result == -EAGAIN || result == -EWOULDBLOCK || result == -EINTR { return .notSent }
            return .failed
        }
    }

    /// Forgets what was staged.
    func discard() {
        fds.removeAll(keepingCapacity: true)
        offsets.removeAll(keepingCapacity: true)
        lengths.removeAll(keepingCapacity: true)
        used = 0
    }
}
