import Foundation

/// A target as the targets search answers for its path: the entry and the role that signed it.
public struct FoundTarget: Sendable, Equatable {
    public let path: String
    /// `targets`, or the delegated role the search found the path in.
    public let role: String
    public let file: TargetFile

    public init(path: String, role: String, file: TargetFile) {
        self.path = path
        self.role = role
        self.file = file
    }
}

/// Every entry of every targets role the walk reached, split by whether the search for its
/// path answers with it.
public struct TargetListing: Sendable, Equatable {
    /// One per path, as `Updater.targetInfo(path:in:)` finds it, sorted by path.
    public let found: [FoundTarget]
    /// Entries a role lists that the search for their path does not reach: outside the
    /// role's `paths` or hash prefixes, cut off by a terminating delegation, or shadowed by
    /// an earlier role listing the same path. A client never uses them; `verify` reports them.
    public let unreachable: [FoundTarget]
}

/// The order of spec 5.6.7's targets search, as python-tuf's `_preorder_depth_first_walk`:
/// preorder depth-first from top-level targets, a delegator's roles in the order it lists
/// them, each role name visited once, at most `maxRoles` roles. With a path, only roles
/// trusted for it are followed and a terminating one drops every role still pending; without
/// one (listing everything), every delegation is followed. Pure: the caller loads each role.
struct DelegationWalk {
    struct Step: Equatable {
        let role: String
        /// The role whose `delegations` names `role` (top-level targets: `root`).
        let delegator: String
    }

    let path: String?
    private var pending = [Step(role: Role.targets.rawValue, delegator: Role.root.rawValue)]
    private var visited = Set<String>()
    private var remaining: Int

    init(path: String?, maxRoles: Int) {
        self.path = path
        self.remaining = maxRoles
    }

    /// The next role to look in; nil when the search is over (nothing pending, or the bound).
    mutating func next() -> Step? {
        while remaining > 0, let step = pending.popLast() {
            if !visited.contains(step.role) { return step }
        }
        return nil
    }

    /// `role` was looked in and did not list the path: queue the roles it delegates to.
    mutating func visited(_ role: String, _ body: TargetsBody) {
        visited.insert(role)
        remaining -= 1
        guard let delegations = body.delegations else { return }
        var children: [Step] = []
        for child in delegations.roles {
            guard let path else {
                // A role with no paths can answer no search (the withhold role), so a listing of
                // what searches find does not load it either.
                if child.scope != .paths([]) { children.append(Step(role: child.name, delegator: role)) }
                continue
            }
            guard child.isDelegated(path) else { continue }
            children.append(Step(role: child.name, delegator: role))
            if child.terminating {
                pending = []
                break
            }
        }
        pending.append(contentsOf: children.reversed())
    }
}

extension Updater {
    /// Spec 5.6.7: the entry for `path`, searched for from top-level targets through the
    /// delegated roles trusted for it, each loaded (downloaded and verified) when first
    /// needed. nil when no role the search reaches lists it. `trusted` is what `refresh`
    /// returned; the roles loaded are kept in it for later searches.
    public func targetInfo(path: String, in trusted: inout TrustedMetadata) async throws(UpdateError) -> FoundTarget? {
        try await search(path) { (step) async throws(UpdateError) in try await loadTargetsRole(step, &trusted) }
    }

    /// Every target the search can find, for clients that choose among targets rather than
    /// look one up (PatchClient picks its app version's patch; `verify` checks them all).
    /// Walks every reachable role once, at most `limits.delegations`, then answers each
    /// listed path as `targetInfo(path:in:)` would over the roles loaded. Without delegations
    /// that is top-level targets' entries, and nothing is downloaded.
    public func listTargets(in trusted: inout TrustedMetadata) async throws(UpdateError) -> TargetListing {
        guard let top = trusted.targets else { throw .verification(.missingRole("targets")) }
        let topRole = Role.targets.rawValue
        guard top.body.delegations != nil else {
            let found = top.body.targets.map { FoundTarget(path: $0.key, role: topRole, file: $0.value) }
            return TargetListing(found: found.sorted { $0.path < $1.path }, unreachable: [])
        }
        var walk = DelegationWalk(path: nil, maxRoles: limits.delegations)
        var listed: [FoundTarget] = []
        while let step = walk.next() {
            let body = try await loadTargetsRole(step, &trusted)
            listed += body.targets.map { FoundTarget(path: $0.key, role: step.role, file: $0.value) }
            walk.visited(step.role, body)
        }
        // Each path answered by the search itself, so the listing never disagrees with a lookup.
        let loaded = trusted
        var checked = Set<DelegationWalk.Step>()  // (role, delegator) pairs whose signatures were checked
        var last: (path: String, answer: FoundTarget?)?
        var found: [FoundTarget] = []
        var unreachable: [FoundTarget] = []
        for entry in listed.sorted(by: { ($0.path, $0.role) < ($1.path, $1.role) }) {
            if last?.path != entry.path {
                let answer = try await search(entry.path) { (step) throws(UpdateError) in
                    if step.role == topRole { return loaded.targets?.body }
                    if checked.contains(step) { return loaded.delegatedTargets[step.role]?.body }
                    let body = try verified { () throws(TUFError) in try loaded.loadedDelegatedTargets(step.role, delegator: step.delegator)?.body }
                    if body != nil { checked.insert(step) }
                    return body
                }
                last = (entry.path, answer)
            }
            if last?.answer == entry { found.append(entry) } else { unreachable.append(entry) }
        }
        return TargetListing(found: found, unreachable: unreachable)
    }

    /// The walk, given how to get each role's body; a role `load` has no body for (the
    /// listing's bound cut it off) is passed over.
    private func search(_ path: String, load: (DelegationWalk.Step) async throws(UpdateError) -> TargetsBody?) async throws(UpdateError) -> FoundTarget? {
        var walk = DelegationWalk(path: path, maxRoles: limits.delegations)
        while let step = walk.next() {
            guard let body = try await load(step) else { continue }
            if let file = body.targets[path] { return FoundTarget(path: path, role: step.role, file: file) }
            walk.visited(step.role, body)
        }
        return nil
    }

    /// A targets role for the walk: top-level targets as `refresh` left them; a delegated
    /// role as loaded before (checked against this delegator's keys); else the cache's copy
    /// when it is what snapshot pins now (spec 5.6.7 through python-tuf's `_load_targets`:
    /// an unchanged role costs no request); else downloaded as `{V}.{role}.json`, V from
    /// snapshot, and kept in the cache once it verifies.
    func loadTargetsRole(_ step: DelegationWalk.Step, _ trusted: inout TrustedMetadata) async throws(UpdateError) -> TargetsBody {
        if step.role == Role.targets.rawValue {
            guard let targets = trusted.targets else { throw .verification(.missingRole("targets")) }
            return targets.body
        }
        let loaded = trusted
        if let known = try verified({ () throws(TUFError) in try loaded.loadedDelegatedTargets(step.role, delegator: step.delegator) }) {
            return known.body
        }
        guard let version = trusted.snapshot?.body.meta["\(step.role).json"]?.version else {
            throw .verification(.malformed(role: "snapshot", reason: "no \(step.role.debugSanitized).json for a delegated role"))
        }
        let cachedName = RoleFileName.cached(step.role)
        // A copy that fails its checks is passed over (the download replaces it); one that
        // still verifies under the delegator's keys stays the floor the download is held to.
        if let bytes = cache?.read(cachedName, limit: limits.targets),
           let current = try? trusted.loadCachedDelegatedTargets(bytes, role: step.role, delegator: step.delegator) {
            return current.body
        }
        let file = RepositoryFile.metadata("\(version).\(RoleFileName.quoted(step.role)).json")
        let answer = try await download(file, limit: min(trusted.delegatedTargetsLengthLimit(step.role), limits.targets))
        try expectOK(answer, file)
        let role = try verified { () throws(TUFError) in
            try trusted.updateDelegatedTargets(answer.body, role: step.role, delegator: step.delegator)
        }
        try cache?.write(cachedName, answer.body)
        return role.body
    }
}

extension DelegationWalk.Step: Hashable {}
