import Foundation

extension Updater {
    /// The withhold role's entries (docs/PROTOCOL.md, "Withhold"), read in the same update as
    /// the rest: when top-level targets delegates it (named `withhold`, no paths) and snapshot
    /// lists a version of it, `withhold.json` is loaded like any delegated role (its version
    /// from snapshot, signed by a threshold of the keys targets names for it, not expired, never
    /// older than the one loaded before) and then read as a withhold list, which may list no
    /// target and delegate nothing. No such delegation, or no file yet: nothing is withheld.
    public func withholds(in trusted: inout TrustedMetadata) async throws(UpdateError) -> Withholds {
        guard let top = trusted.targets else { throw .verification(.missingRole("targets")) }
        guard top.body.delegations?.roles.contains(where: Withholds.isWithholdRole) == true,
              trusted.snapshot?.body.meta["\(Withholds.roleName).json"] != nil else { return Withholds() }
        let body = try await loadTargetsRole(DelegationWalk.Step(role: Withholds.roleName, delegator: Role.targets.rawValue), &trusted)
        return try verified { () throws(TUFError) in try Withholds(body: body) }
    }
}
