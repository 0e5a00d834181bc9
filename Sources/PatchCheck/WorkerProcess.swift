import Foundation
import CProcess

/// One run of the worker (`patchcheck`): started (`start`), then the script written to its stdin
/// and its stdout and stderr read back (`exchange`), within a wall-clock deadline after which it
/// is killed. Pipes are non-blocking and served by one poll loop, so a worker that stops
/// reading or writes without end cannot stall the caller; stdout and stderr are bounded.
struct WorkerProcess {
    /// How a run ended.
    struct Ended {
        var stdout: [UInt8]
        var stderr: [UInt8]
        /// The exit status, or nil when a signal ended it.
        var status: Int32?
        var signal: Int32?
        var timedOut: Bool
        var outputOverLimit: Bool
    }

    static let maxOutput = 8 << 20
    static let maxErrorOutput = 16 << 10

    let executable: String
    let arguments: [String]

    /// A worker that exits before reading the whole script makes the next write fail with
    /// EPIPE; without this it would raise SIGPIPE and end patchctl. patchd ignores it already.
    private static let ignoreSIGPIPE: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    /// A worker started and waiting for its script on stdin: its process and the parent's
    /// ends of its pipes, which `exchange` closes.
    struct Started: Sendable {
        let pid: pid_t
        let stdin: Int32
        let stdout: Int32
        let stderr: Int32

        /// Whether it is still waiting (not ended, killed or reaped).
        var isAlive: Bool { kill(pid, 0) == 0 && waitpid(pid, nil, WNOHANG) == 0 }

        /// Ends a spare nobody will use: its stdin closed, it exits with nothing to do.
        func discard() {
            for fd in [stdin, stdout, stderr] { Glibc.close(fd) }
            kill(-pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        }
    }

    /// Starts the worker: its engine comes up and its limits are set while nothing waits on it.
    func start() throws(ScriptCheckError) -> Started {
        Self.ignoreSIGPIPE
        var stdinPipe: [Int32] = [-1, -1], stdoutPipe: [Int32] = [-1, -1], stderrPipe: [Int32] = [-1, -1]
        guard hp_pipe_cloexec(&stdinPipe) == 0 else { throw .couldNotRun("cannot make a pipe: \(Self.errorText())") }
        guard hp_pipe_cloexec(&stdoutPipe) == 0 else {
            Self.close(stdinPipe)
            throw .couldNotRun("cannot make a pipe: \(Self.errorText())")
        }
        guard hp_pipe_cloexec(&stderrPipe) == 0 else {
            Self.close(stdinPipe + stdoutPipe)
            throw .couldNotRun("cannot make a pipe: \(Self.errorText())")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, stdinPipe[0], 0)
        posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, stderrPipe[1], 2)
        // Nothing else of the caller's reaches the child: patchd's sockets and the registry
        // file may lack O_CLOEXEC.
        hp_spawn_closefrom(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Default signal handling in the child (patchd ignores SIGPIPE), and its own process
        // group, so a kill reaches whatever it may start.
        var defaults = sigset_t()
        sigfillset(&defaults)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP))

        let argv = [executable] + arguments
        // An empty environment: the script's limits are the worker's arguments, nothing else.
        var pid: pid_t = 0
        let spawned = Self.withCStrings(argv) { argvPointer in
            Self.withCStrings([]) { envp in posix_spawn(&pid, executable, &actions, &attributes, argvPointer, envp) }
        }
        Self.close([stdinPipe[0], stdoutPipe[1], stderrPipe[1]])
        guard spawned == 0 else {
            Self.close([stdinPipe[1], stdoutPipe[0], stderrPipe[0]])
            throw .couldNotRun("cannot start \(executable): \(String(cString: strerror(spawned)))")
        }
        return Started(pid: pid, stdin: stdinPipe[1], stdout: stdoutPipe[0], stderr: stderrPipe[0])
    }

    /// Gives a started worker its script and reads its answer, within `deadline` seconds of now.
    static func exchange(_ started: Started, input: [UInt8], deadline: TimeInterval) -> Ended {
        let (pid, stdin, stdout, stderr) = (started.pid, started.stdin, started.stdout, started.stderr)
        for fd in [stdin, stdout, stderr] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        var stdinOpen = stdin, written = 0
        if input.isEmpty { Glibc.close(stdinOpen); stdinOpen = -1 }
        var out: [UInt8] = [], err: [UInt8] = [], outOpen = true, errOpen = true, overLimit = false, timedOut = false
        let end = Date().addingTimeInterval(deadline)
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while outOpen || errOpen {
            let left = end.timeIntervalSinceNow
            if left <= 0 { timedOut = true; break }
            var fds: [pollfd] = []
            if stdinOpen >= 0 { fds.append(pollfd(fd: stdinOpen, events: Int16(POLLOUT), revents: 0)) }
            if outOpen { fds.append(pollfd(fd: stdout, events: Int16(POLLIN), revents: 0)) }
            if errOpen { fds.append(pollfd(fd: stderr, events: Int16(POLLIN), revents: 0)) }
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(left * 1000 + 1, 1000)))
            if ready < 0, errno != EINTR { break }
            for entry in fds where entry.revents != 0 {
                if entry.fd == stdinOpen {
                    let count = input[written...].withUnsafeBytes { Glibc.write(stdinOpen, $0.baseAddress, $0.count) }
                    if count > 0 { written += count }
                    // Written, or the worker is gone (EPIPE: SIGPIPE is ignored, `ignoreSIGPIPE`).
                    if written == input.count || (count < 0 && errno != EAGAIN && errno != EINTR) {
                        Glibc.close(stdinOpen)
                        stdinOpen = -1
                    }
                    continue
                }
                let count = buffer.withUnsafeMutableBytes { read(entry.fd, $0.baseAddress, $0.count) }
                if count < 0, errno == EAGAIN || errno == EINTR { continue }
                if count <= 0 {
                    if entry.fd == stdout { outOpen = false } else { errOpen = false }
                    continue
                }
                if entry.fd == stdout {
                    out += buffer[0..<count]
                    if out.count > maxOutput { overLimit = true; outOpen = false }
                } else if err.count < maxErrorOutput {
                    err += buffer[0..<min(count, maxErrorOutput - err.count)]
                }
            }
            if overLimit { break }
        }
        if stdinOpen >= 0 { Glibc.close(stdinOpen) }
        Glibc.close(stdout)
        Glibc.close(stderr)
        if timedOut || overLimit { kill(-pid, SIGKILL); kill(pid, SIGKILL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        // WIFEXITED / WTERMSIG are macros Swift cannot call: the status word's layout.
        let signal = status & 0x7f
        return Ended(stdout: out, stderr: err, status: signal == 0 ? (status >> 8) & 0xff : nil, signal: signal == 0 ? nil : signal,
                     timedOut: timedOut, outputOverLimit: overLimit)
    }

    private static func close(_ fds: [Int32]) {
        for fd in fds where fd >= 0 { Glibc.close(fd) }
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { pointers.forEach { free($0) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
