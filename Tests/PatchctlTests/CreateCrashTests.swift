import Foundation
import Testing
import HotpatchTestSupport
import PatchCore

/// `apps create --encrypt` killed at any moment: the next `apps create` of the name succeeds,
/// or finds the app committed with all its keys; nothing a committed app uses is ever removed
/// or replaced, and no key material of a create that never committed stays behind.
@Suite("Crash safety of apps create")
struct CreateCrashTests {
    /// What is left in the key directory beside the apps' own directories and key files.
    static func leftovers(_ w: Workspace) -> [String] {
        let all = (FileManager.default.enumerator(atPath: w.path("keys"))?.allObjects as? [String]) ?? []
        return all.filter { $0.split(separator: "/").contains { $0.hasPrefix(".") } }.sorted()
    }

    @Test("killed at each step, apps create runs again (or says the app exists) and the app works",
          arguments: ["create.staged", "create.installed", "create.before-commit", "create.committed"])
    func killAtEachStep(point: String) throws {
        let w = try Workspace()
        let crashed = try w.run(["apps", "create", "demo", "--encrypt"], environment: ["HOTPATCH_CRASH_AT": point])
        #expect(crashed.killedBySignal == SIGKILL, "the crash point \(point) was not reached")
        let again = try w.run(["apps", "create", "demo", "--encrypt"])
        if point == "create.committed" {
            #expect(again.status == 2 && again.stderr.contains("app \"demo\" already exists"), "\(again.stderr)")
        } else {
            #expect(again.status == 0, "\(again.stderr)")
        }
        #expect(try w.expectWorking("demo", encrypted: true))
        #expect(Self.leftovers(w) == [])
    }

    @Test("20 SIGKILLs at random moments of apps create --encrypt: every create then succeeds or finds its app whole")
    func randomKills() throws {
        let w = try Workspace()
        // Kills spread over a whole create, timed on this machine (the fastest of three).
        var duration = Double.infinity
        for n in 0..<3 {
            let started = Date()
            try w.run(["apps", "create", "probe\(n)", "--encrypt"])
            duration = min(duration, Date().timeIntervalSince(started))
        }
        var leftKeyFiles = 0, committed = 0
        for n in 0..<20 {
            let name = "app\(n)"
            let creating = try w.start(["apps", "create", name, "--encrypt"])
            usleep(UInt32(Double.random(in: 0.2...0.9) * duration * 1_000_000))
            kill(creating.process.processIdentifier, SIGKILL)
            _ = creating.wait()
            let hadFiles = !Self.leftovers(w).isEmpty || FileManager.default.fileExists(atPath: w.path("keys/\(name)"))
            let again = try w.run(["apps", "create", name, "--encrypt"])
            if again.status == 0, hadFiles { leftKeyFiles += 1 }
            if again.status != 0 {
                #expect(again.stderr.contains("app \"\(name)\" already exists"), "\(name): \(again.stderr)")
                committed += 1
            }
        }
        print("apps create: \(leftKeyFiles) of 20 kills left key files of a create that never committed, \(committed) came after the commit")
        for n in 0..<20 {
            #expect(try w.expectWorking("app\(n)", encrypted: true))
            // One key file per role: no key of a create that never committed is left beside them.
            let pems = try FileManager.default.contentsOfDirectory(atPath: w.path("keys/app\(n)")).filter { $0.hasSuffix(".pem") }
            #expect(pems.count == Role.allCases.count, "app\(n): \(pems.sorted())")
        }
        #expect(Self.leftovers(w) == [])
    }

    @Test("keys of an app this registry does not know are never overwritten: a clear refusal, files untouched")
    func foreignKeysAreKept() throws {
        let w = try Workspace()
        // Registry A creates demo; registry B shares the key directory and tries the same name.
        try w.run(["apps", "create", "demo", "--encrypt"])
        let before = try Self.files(w, "keys/demo")
        let other = try w.run(["apps", "create", "demo", "--encrypt", "--keys", w.path("keys")] + w.registryArguments("data-b"), local: false)
        #expect(other.status == 2)
        #expect(other.stderr.contains("are never overwritten") && other.stderr.contains("move the directory away"), "\(other.stderr)")
        #expect(try Self.files(w, "keys/demo") == before)
        #expect(try w.expectWorking("demo", encrypted: true))

        // A create of registry A killed before its commit is not B's to clean up either.
        #expect(try w.run(["apps", "create", "sec", "--encrypt"], environment: ["HOTPATCH_CRASH_AT": "create.before-commit"]).killedBySignal == SIGKILL)
        let orphan = try Self.files(w, "keys/sec")
        #expect(try w.run(["apps", "create", "sec", "--keys", w.path("keys")] + w.registryArguments("data-b"), local: false).status == 2)
        #expect(try Self.files(w, "keys/sec") == orphan)
        #expect(try w.run(["apps", "create", "sec", "--encrypt"]).status == 0)
        #expect(try w.expectWorking("sec", encrypted: true))
    }

    static func files(_ w: Workspace, _ directory: String) throws -> [String: Data] {
        var out: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: w.path(directory)) {
            out[name] = try Data(contentsOf: URL(fileURLWithPath: w.path("\(directory)/\(name)")))
        }
        return out
    }
}

/// `registry.sqlite` holds token hashes, the audit log and every bundle.
@Suite("Registry file permissions",
       .enabled(if: !TestBackend.isPostgres, "the modes of registry.sqlite and its data directory: a PostgreSQL registry has no file of its own (the server's files and the database's grants decide who reads it)"))
struct RegistryPermissionTests {
    @Test("registry.sqlite, -wal and -shm are created 0600 whatever the umask")
    func privateFiles() throws {
        let w = try Workspace()
        #expect(try w.run(["apps", "create", "demo"], umask: "000").status == 0)
        #expect(w.mode("data/registry.sqlite") == 0o600)
        #expect(w.mode("data") == 0o700)
        // SQLite makes -wal and -shm while a connection is open: look at them then.
        let pauses = w.path("pauses")
        try FileManager.default.createDirectory(atPath: pauses, withIntermediateDirectories: true)
        try FileManager.default.removeItem(atPath: w.path("data/registry.sqlite"))
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: w.path("data/registry.sqlite\(suffix)")) }
        let creating = try w.start(["apps", "create", "other"], environment: ["HOTPATCH_PAUSE_AT": "signing-root.read", "HOTPATCH_PAUSE_DIR": pauses],
                                   umask: "000")
        #expect(Workspace.poll(seconds: 30) { FileManager.default.fileExists(atPath: "\(pauses)/signing-root.read.paused") || !creating.isRunning })
        let modes = ["registry.sqlite", "registry.sqlite-wal", "registry.sqlite-shm"].map { w.mode("data/\($0)") }
        _ = FileManager.default.createFile(atPath: "\(pauses)/signing-root.read.resume", contents: nil)
        _ = creating.wait()
        #expect(modes == [0o600, 0o600, 0o600])
    }

    @Test("a data directory or registry file others can read is reported once on stderr; a private one is not")
    func warnsWhenExposed() throws {
        let w = try Workspace()
        let created = try w.run(["apps", "create", "demo"])
        #expect(!created.stderr.contains("warning"), "\(created.stderr)")
        chmod(w.path("data"), 0o755)
        let open = try w.run(["list"])
        #expect(open.status == 0)
        #expect(open.stderr.components(separatedBy: "warning: the data directory").count == 2, "\(open.stderr)")
        #expect(open.stderr.contains("chmod 700"))
        chmod(w.path("data"), 0o700)
        chmod(w.path("data/registry.sqlite"), 0o644)
        let file = try w.run(["list"])
        #expect(file.stderr.contains("registry.sqlite is readable by group or others") && file.stderr.contains("chmod 600"), "\(file.stderr)")
        chmod(w.path("data/registry.sqlite"), 0o600)
        #expect(try w.run(["list"]).stderr.isEmpty)
    }
}
