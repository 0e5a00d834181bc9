import Foundation
import Locking
import PatchCore

/// Checks a JSPatch script before it ships (issue 45; docs/PROTOCOL.md, "Script check"): the
/// worker (`patchcheck`) parses it in JavaScriptCore and runs its top level against a recording
/// JSPatch runtime, in a process of its own under `limits`; the rules then read what it did,
/// against the app version's native manifest when there is one. patchctl and patchd check
/// every publish, promote and rollback through the registry with one of these.
public struct ScriptChecker: Sendable {
    public struct Limits: Sendable, Equatable {
        /// CPU seconds the script's top level may use (the worker's RLIMIT_CPU).
        public var cpuSeconds: Int
        /// Memory it may allocate beyond what the engine reserved at start, in MiB.
        public var memoryMiB: Int
        /// Wall-clock seconds from start to answer, after which the worker is killed.
        public var deadline: TimeInterval

        public init(cpuSeconds: Int = 2, memoryMiB: Int = 256, deadline: TimeInterval = 10) {
            self.cpuSeconds = cpuSeconds
            self.memoryMiB = memoryMiB
            self.deadline = deadline
        }
    }

    /// The worker's file name, looked for beside the running program.
    public static let workerName = "patchcheck"
    /// Names the worker explicitly (a test, or an installation that keeps it elsewhere).
    public static let workerEnvironment = "HOTPATCH_PATCHCHECK"
    /// At most this many workers run at once in one process: each may hold a core for
    /// `cpuSeconds`, and patchd serves devices on the same cores.
    public static let maxConcurrent = 2

    public var worker: String?
    public var limits: Limits
    /// Keep one worker started ahead, its engine up, for the next check (patchd, and any
    /// process that checks more than once): a check then costs the script's own parse and
    /// evaluation, not a process and an engine starting (~20 ms). A one-shot patchctl does not.
    public var keepsSpare: Bool
    /// Recordings made ahead of the call that reads them (`prepare`), shared by every copy.
    let recent = RecentRecordings()

    public init(worker: String? = ScriptChecker.locateWorker(), limits: Limits = Limits(), keepsSpare: Bool = false) {
        self.worker = worker
        self.limits = limits
        self.keepsSpare = keepsSpare
    }

    /// Runs the worker on `script` now and keeps what it recorded for a minute, so the check a
    /// release makes under a lock finds it done: patchd records a script before it takes the
    /// registry's lock, which a worker running for its whole deadline must not hold. A check
    /// that cannot run keeps nothing (the release says so itself).
    public func prepare(_ script: [UInt8]) {
        guard let recorded = try? record(script) else { return }
        recent.keep(recorded, for: script, limits: limits)
    }

    /// `$HOTPATCH_PATCHCHECK`, else `patchcheck` in the running program's directory (where
    /// `swift build` and an installation put it beside patchctl and patchd), else on `$PATH`.
    public static func locateWorker() -> String? {
        let environment = ProcessInfo.processInfo.environment
        if let named = environment[workerEnvironment], !named.isEmpty { return named }
        let manager = FileManager.default
        if let program = try? manager.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            let beside = URL(fileURLWithPath: program).deletingLastPathComponent().appendingPathComponent(workerName).path
            if manager.isExecutableFile(atPath: beside) { return beside }
        }
        for directory in (environment["PATH"] ?? "").split(separator: ":") {
            let candidate = "\(directory)/\(workerName)"
            if manager.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Checks `script` against `manifest` (nil: no native check, and a note says so).
    /// Throws only when the check could not run; what the script does wrong is in the report.
    public func check(_ script: [UInt8], manifest: NativeManifest?, manifestSha256: String? = nil) throws(ScriptCheckError) -> CheckReport {
        try check(script, manifests: [(manifest, manifestSha256)])[0]
    }

    /// The report of one recording against one manifest: a publish to several versions records
    /// the script once and reads it against each version's manifest.
    static func report(_ recording: Recorded, manifest: NativeManifest?, manifestSha256: String?) -> CheckReport {
        switch recording {
        case .limit(let finding):
            return CheckReport(findings: [finding], nativeChecked: false)
        case .recorded(let recording):
            var (findings, touches) = ScriptRules(recording: recording, manifest: manifest).findings()
            if manifest == nil, recording.syntaxError == nil {
                findings.append(CheckFinding(.note, "native-skipped", "native check skipped: no manifest for this app version (patchctl apps manifest --app-version V FILE)"))
            }
            return CheckReport(findings: findings, nativeChecked: manifest != nil && recording.syntaxError == nil, manifestSha256: manifestSha256,
                               touches: touches, syntaxMicros: recording.syntaxMicros, evaluationMicros: recording.evaluationMicros)
        }
    }

    /// Checks one script against several manifests, running the script once.
    public func check(_ script: [UInt8], manifests: [(manifest: NativeManifest?, sha256: String?)]) throws(ScriptCheckError) -> [CheckReport] {
        let recording = try record(script)
        return manifests.map { Self.report(recording, manifest: $0.manifest, manifestSha256: $0.sha256) }
    }

    enum Recorded: Sendable {
        case recorded(ScriptRecording)
        /// The script's top level went past a limit: the one finding there is.
        case limit(CheckFinding)
    }

    /// The largest script a worker reads (a publish's bundle limit, 10 MiB, and room to spare).
    public static let maxScriptBytes = 16 << 20
    /// The worker started ahead (`keepsSpare`), one per process.
    static let spare = SpareWorker()

    /// The slots of `maxConcurrent`: a check waits for one as long as its own deadline.
    private static let slots = DispatchSemaphore(value: maxConcurrent)

    func record(_ script: [UInt8]) throws(ScriptCheckError) -> Recorded {
        if let kept = recent.recorded(for: script, limits: limits) { return kept }
        guard let worker else {
            throw .couldNotRun("the script check's worker (\(Self.workerName)) is not installed beside this program nor on PATH; build it with `swift build` or name it with $\(Self.workerEnvironment)")
        }
        guard String(validating: script, as: UTF8.self) != nil else { throw .couldNotRun("the script is not UTF-8 text") }
        guard Self.slots.wait(timeout: .now() + limits.deadline) == .success else {
            throw .busy("\(Self.maxConcurrent) script checks have been running for \(Int(limits.deadline)) s; retry in a few seconds")
        }
        defer { Self.slots.signal() }
        // One size fits every script, so a spare started before its script is known serves it.
        let process = WorkerProcess(executable: worker, arguments: [
            "--cpu-seconds", String(limits.cpuSeconds), "--memory-mib", String(limits.memoryMiB), "--max-bytes", String(Self.maxScriptBytes),
        ])
        guard script.count <= Self.maxScriptBytes else { throw .couldNotRun("the script is over \(Self.maxScriptBytes) bytes") }
        let started: WorkerProcess.Started
        if keepsSpare, let spare = Self.spare.take(for: process) {
            started = spare
        } else {
            started = try process.start()
        }
        if keepsSpare { Self.spare.refill(with: process) }
        return try Self.interpret(WorkerProcess.exchange(started, input: script, deadline: limits.deadline), limits: limits)
    }

    static func interpret(_ ended: WorkerProcess.Ended, limits: Limits) throws(ScriptCheckError) -> Recorded {
        let stderr = String(decoding: ended.stderr, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if ended.timedOut {
            return .limit(CheckFinding(.error, "limit", "the script's top level did not finish within \(Int(limits.deadline)) s (the check's deadline): an endless loop, or a wait, at top level would hang the app at launch"))
        }
        if ended.outputOverLimit {
            return .limit(CheckFinding(.error, "limit", "the script's top level defines more than the check reads (over \(WorkerProcess.maxOutput >> 20) MiB of recording)"))
        }
        if let signal = ended.signal {
            switch signal {
            // SIGXCPU at the soft limit; SIGKILL at the hard one, a second later (the deadline
            // kill is `timedOut` above).
            case SIGXCPU, SIGKILL:
                return .limit(CheckFinding(.error, "limit", "the script's top level ran past \(limits.cpuSeconds) s of CPU time (an endless loop at top level, or in a getter the runtime reads, hangs the app at launch)"))
            case SIGABRT, SIGSEGV, SIGBUS, SIGTRAP, SIGILL:
                // JavaScriptCore aborts when an allocation fails under the address-space limit.
                return .limit(CheckFinding(.error, "limit", "the script's top level ran out of its \(limits.memoryMiB) MiB of memory (JavaScriptCore stopped with signal \(signal))\(stderr.isEmpty ? "" : ": \(stderr.prefix(300))")"))
            default:
                throw .couldNotRun("the check's worker ended with signal \(signal)\(stderr.isEmpty ? "" : ": \(stderr.prefix(300))")")
            }
        }
        guard ended.status == 0 else {
            throw .couldNotRun("the check's worker failed (exit \(ended.status ?? -1))\(stderr.isEmpty ? "" : ": \(stderr.prefix(300))")")
        }
        guard let json = try? JSONParser.parse(ended.stdout), let recording = ScriptRecording(workerOutput: json) else {
            throw .couldNotRun("the check's worker answered something that is not its report (a patchcheck of another build?)")
        }
        return .recorded(recording)
    }
}

/// One worker started ahead of the check that will use it, for the arguments it was started
/// with: taken by the next check whose arguments are the same, and started again in the
/// background once taken. A spare that has died is dropped, never given a script.
final class SpareWorker: Sendable {
    private struct State {
        var waiting: (arguments: [String], started: WorkerProcess.Started)?
        /// Signalled when the start in progress is done (a next check waits for it rather than
        /// starting a second worker beside it).
        var starting: DispatchSemaphore?
    }
    private let state = Locked(State())

    func take(for process: WorkerProcess) -> WorkerProcess.Started? {
        let arguments = [process.executable] + process.arguments
        if let starting = state.withLock({ $0.waiting == nil ? $0.starting : nil }) {
            // Started a moment ago for this very use: waiting costs less than a second start.
            _ = starting.wait(timeout: .now() + 1)
            starting.signal()
        }
        guard let spare = state.withLock({ state -> WorkerProcess.Started? in
            defer { state.waiting = nil }
            return state.waiting?.arguments == arguments ? state.waiting?.started : nil
        }) else { return nil }
        guard spare.isAlive else {
            spare.discard()
            return nil
        }
        return spare
    }

    /// Starts the next spare off the caller's thread; one start at a time.
    func refill(with process: WorkerProcess) {
        let starting = DispatchSemaphore(value: 0)
        guard state.withLock({ state -> Bool in
            guard state.starting == nil else { return false }
            state.starting = starting
            return true
        }) else { return }
        DispatchQueue.global(qos: .utility).async { [self] in
            let started = try? process.start()
            let previous = state.withLock { state -> WorkerProcess.Started? in
                let previous = state.waiting?.started
                state.waiting = started.map { ([process.executable] + process.arguments, $0) }
                state.starting = nil
                return previous
            }
            starting.signal()
            previous?.discard()
        }
    }
}

/// The last few recordings `prepare` made, by the script's SHA-256 and the limits it ran
/// under, each for a minute: a handful of scripts at most, each recording bounded by the
/// worker's output limit.
final class RecentRecordings: Sendable {
    static let capacity = 8
    static let lifetime: TimeInterval = 60

    private struct Entry {
        let key: String
        let recorded: ScriptChecker.Recorded
        let at: Date
    }
    private let entries = Locked<[Entry]>([])

    private static func key(_ script: [UInt8], _ limits: ScriptChecker.Limits) -> String {
        "\(Digest.sha256Hex(script))/\(limits.cpuSeconds)/\(limits.memoryMiB)/\(limits.deadline)"
    }

    func keep(_ recorded: ScriptChecker.Recorded, for script: [UInt8], limits: ScriptChecker.Limits) {
        let key = Self.key(script, limits), now = Date()
        entries.withLock { entries in
            entries.removeAll { $0.key == key || now.timeIntervalSince($0.at) > Self.lifetime }
            entries.append(Entry(key: key, recorded: recorded, at: now))
            if entries.count > Self.capacity { entries.removeFirst(entries.count - Self.capacity) }
        }
    }

    func recorded(for script: [UInt8], limits: ScriptChecker.Limits) -> ScriptChecker.Recorded? {
        let key = Self.key(script, limits), now = Date()
        return entries.withLock { entries in entries.last { $0.key == key && now.timeIntervalSince($0.at) <= Self.lifetime }?.recorded }
    }
}

public enum ScriptCheckError: Error, Equatable, CustomStringConvertible {
    /// The check did not run: the worker is missing, could not start, or broke.
    case couldNotRun(String)
    /// Too many checks at once in this process.
    case busy(String)

    public var description: String {
        switch self {
        case .couldNotRun(let why): return "the script check could not run: \(why)"
        case .busy(let why): return "the script check is busy: \(why)"
        }
    }
}
