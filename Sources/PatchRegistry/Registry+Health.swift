extension Registry {
    /// Reads the registry the way serving does (the apps table, through SQLite's page cache
    /// and the file): the number of apps, or the error that makes every app route fail.
    /// What `/healthz` answers on, so a load balancer stops sending traffic to an instance
    /// whose registry is gone or corrupt instead of seeing "ok" beside a wall of 404s. A
    /// SQLite file deleted or replaced under the process still reads (its pages are open), so
    /// the path is checked first: what this process would write there is lost.
    public func checkReadable() throws(RegistryError) -> Int {
        do throws(StorageError) {
            try db.checkNotReplaced()
            return Int(try db.query("SELECT count(*) FROM apps") { $0.int(0) }.first ?? 0)
        } catch {
            throw .storage(error)
        }
    }
}
