import Foundation
import PatchCore

/// `tokens create`: an API token for patchd (`Registry.createToken`). Over patchd the caller's
/// token issues it and may issue none broader than itself (`TokenRecord.mayIssue`); it is
/// recorded as the new token's parent, so revoking the caller revokes it.
public struct CreateTokenOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "token", routes: [.createToken],
        parameters: [
            OperationParameter("app", .body, .text, "the app it is scoped to; left out: every app"),
            OperationParameter("role", .body, .text, "publisher (the default) or auditor"),
            OperationParameter("name", .body, .text, "who or what uses it, recorded as its actor (default: the caller's)"),
        ],
        // 4096 bytes: a 200-character name written all in `\u` escapes (12 bytes a character
        // outside the BMP) and an app name fit, so a body the schema allows is never 413.
        audits: ["token.create"], danger: .routine, dryRun: false, expectPatch: false, status: 201, metric: "tokens", bodyLimit: 4096)

    public var app: AppName?
    public var role: TokenRole
    public var name: String?

    public init(app: AppName?, role: TokenRole = .publisher, name: String? = nil) {
        self.app = app
        self.role = role
        self.name = name
    }

    public init(_ values: OperationValues) throws(RegistryError) {
        var app: AppName?
        if let raw = values.text("app") {
            do { app = try AppName(raw) } catch { throw .invalidCall("app: \(error.message)") }
        }
        let raw = values.text("role") ?? TokenRole.publisher.rawValue
        guard let role = TokenRole(rawValue: raw) else { throw .invalidCall("role must be publisher or auditor, got \(raw.debugSanitized)") }
        self.init(app: app, role: role, name: values.text("name"))
    }

    public var values: OperationValues { .encode(["app": app?.rawValue, "role": role.rawValue, "name": name]) }

    public var summary: String { "issue a \(role.rawValue) token for \(app.map { "app \($0)" } ?? "every app")" }

    /// The listing entry and, once, `token`.
    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        if let caller = context.caller, !caller.mayIssue(app: app) {
            throw .forbidden(caller.refusal(needs: .publisher, app: app, for: "issuing a token for \(app.map { "app \($0)" } ?? "every app")"))
        }
        return try registry.createToken(app: app, role: role, name: name ?? context.actor.name, actor: context.actor, parent: context.caller?.id,
                                        now: context.now).json
    }
}

/// `tokens revoke ID`: a token and every token issued from it (`Registry.revokeToken`). Over
/// patchd, only one no broader than the caller: what it could have issued.
public struct RevokeTokenOperation: ReleaseOperation, Equatable {
    public static let definition = OperationDefinition(
        kind: "token-revoke", routes: [.revokeToken],
        parameters: [OperationParameter("id", .path, .text, required: true, "the token's id: 12 lower-case hex digits")],
        audits: ["token.revoke"], danger: .takesAway, dryRun: false, expectPatch: false, metric: "tokens")

    public var id: String

    public init(id: String) throws(RegistryError) {
        guard id.utf8.count == 12, id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            throw .invalidCall("a token id is 12 lower-case hex digits")
        }
        self.id = id
    }

    public init(_ values: OperationValues) throws(RegistryError) {
        guard let id = values.text("id") else { throw .invalidCall("id is required") }
        try self.init(id: id)
    }

    public var values: OperationValues { .encode(["id": id]) }

    public var summary: String { "revoke token \(id) and the tokens issued from it" }

    /// `TokenRecord.revokedJSON`.
    public func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON {
        // Looked up and revoked under one write: the scope checked is the one revoked.
        try registry.revokeToken(id: id, actor: context.actor, now: context.now) { target throws(RegistryError) in
            if let caller = context.caller, !caller.mayIssue(app: target.app) {
                throw .forbidden(caller.refusal(needs: .publisher, for: "revoking a token", scope: " for the app that token is scoped to, or for every app"))
            }
        }.revokedJSON
    }
}
