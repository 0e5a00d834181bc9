import Foundation
import PatchAPI
import PatchCore

/// One release operation (publish, promote, rollout, halt, resume, revoke, rollback) as a
/// value: its parameters, validated once when it is made (`init(_:)`), its one wire form
/// (`values`), and its one `execute` against the registry. Everything else follows from it:
/// patchd's handler for every operation is decode → execute → encode (`OperationRoutes`),
/// patchctl's local form is `execute` and its remote form one generic send
/// (`Remote.perform`), a change waiting for signatures is stored as its `values`
/// (`ReleaseChange.operation`), and the console's calls and docs/openapi.yaml's parameters are
/// checked against `definition` by `OperationDefinitionTests`.
///
/// Adding one: a type here with its `definition`, the registry function it calls, a line in
/// `ReleaseOperations.all`, and its route in the operation table.
public protocol ReleaseOperation: Sendable {
    static var definition: OperationDefinition { get }
    /// Reads and checks the parameters; a bad or missing one is `RegistryError.invalidCall`
    /// (400 over HTTP, a usage error in patchctl), the same words on every side.
    init(_ values: OperationValues) throws(RegistryError)
    /// The parameters as they travel and are stored; `init(values)` gives the same value back.
    var values: OperationValues { get }
    /// One line for listings of pending changes: what the change does.
    var summary: String { get }
    /// Makes the change (or, with `context.dryRun`, works it out in full and keeps nothing):
    /// what the route answers.
    func execute(on registry: Registry, _ context: OperationContext) throws(RegistryError) -> JSON
    /// The status of a change that was made: `definition.status` unless a call's form says
    /// otherwise (a plain rollback revokes; `--to` publishes).
    var status: Int { get }
    /// The script a call would check (`definition.checksScript`), found without changing
    /// anything: patchd records it in the worker before it takes the registry's lock.
    func scriptToCheck(in registry: Registry, app: AppName) throws(RegistryError) -> [UInt8]?
}

extension ReleaseOperation {
    public var status: Int { Self.definition.status }
    public func scriptToCheck(in registry: Registry, app: AppName) throws(RegistryError) -> [UInt8]? { nil }
}

/// What one call of an operation carries besides its parameters.
public struct OperationContext: Sendable {
    /// The app its route names; nil for an operation on the registry as a whole (tokens).
    public var app: AppName?
    public var actor: Actor
    /// The token a call to patchd came with, whose scope an operation holds what it issues or
    /// revokes to; nil in patchctl's local form, whose user holds the registry itself.
    public var caller: TokenRecord?
    /// `dryRun=true` / `--dry-run`: everything is worked out, nothing is kept.
    public var dryRun: Bool
    /// `expectPatch=N` / `--expect-patch N`: what the operation's version and channel must
    /// serve when it commits (each operation's definition says what it compares), else 409.
    public var expectPatch: Int?
    /// `confirm=true` / `--yes`: a change that would leave a version and channel serving no
    /// patch, or a publish to several versions, goes ahead; without it such a change is refused
    /// (`RegistryError.unconfirmed`).
    public var confirmed: Bool
    public var now: Date

    public init(app: AppName?, actor: Actor, caller: TokenRecord? = nil, dryRun: Bool = false, expectPatch: Int? = nil, confirmed: Bool = false,
                now: Date = Date()) {
        self.app = app
        self.actor = actor
        self.caller = caller
        self.dryRun = dryRun
        self.expectPatch = expectPatch
        self.confirmed = confirmed
        self.now = now
    }

    /// The app the operation acts on: its route always names one.
    public func requireApp() throws(RegistryError) -> AppName {
        guard let app else { throw .internalError("an operation on an app was run without one") }
        return app
    }
}

/// What every side knows of an operation without running it.
public struct OperationDefinition: Sendable {
    /// How much a mistaken call can take from devices: what the console colours its button
    /// by, and what decides whether a call needs `confirm`.
    public enum Danger: String, Sendable {
        /// Adds or changes what devices are offered, never takes a patch from a device.
        case routine
        /// Stops offering a patch; devices that installed it keep it.
        case stops
        /// Takes a patch from devices that run it, and can leave a version with nothing:
        /// refused unless `confirm` when it would.
        case takesAway
    }

    /// The pending store's `kind`, and the patchctl command that runs it.
    public let kind: String
    /// Its routes in the operation table: a call goes to the first whose path parameters
    /// (besides `app`) all have values.
    public let routes: [APIOperation]
    public let parameters: [OperationParameter]
    /// The audit events a successful call may append.
    public let audits: [String]
    public let danger: Danger
    /// Whether `dryRun` / `expectPatch` apply (each also a query parameter of its routes).
    public let dryRun: Bool
    public let expectPatch: Bool
    /// Whether a call that would leave a version and channel serving no patch, or (publish)
    /// names several versions, needs `confirm`.
    public let confirms: Bool
    /// The status of a change that was made (a dry run answers 200).
    public let status: Int
    /// The metric its requests are counted under (`Metrics.Route`'s raw value).
    public let metric: String
    /// The most request-body bytes its routes read.
    public let bodyLimit: Int
    /// Whether a call runs the script check (publish, promote, rollback, check): a worker
    /// process for up to its deadline, which patchd waits for off its I/O threads.
    public let checksScript: Bool

    public init(kind: String, routes: [APIOperation], parameters: [OperationParameter], audits: [String], danger: Danger,
                dryRun: Bool = true, expectPatch: Bool = true, confirms: Bool = false, status: Int = 200, metric: String, bodyLimit: Int = 0,
                checksScript: Bool = false) {
        self.kind = kind
        self.routes = routes
        self.parameters = parameters
        self.audits = audits
        self.danger = danger
        self.dryRun = dryRun
        self.expectPatch = expectPatch
        self.confirms = confirms
        self.status = status
        self.metric = metric
        self.bodyLimit = bodyLimit
        self.checksScript = checksScript
    }

    /// The parameters every call of it may carry besides its own: how it is run, not what it does.
    public var callParameters: [OperationParameter] {
        var out: [OperationParameter] = []
        if dryRun { out.append(.dryRun) }
        if expectPatch { out.append(.expectPatch) }
        if confirms { out.append(.confirm) }
        return out
    }

    public func parameter(_ name: String) -> OperationParameter? { (parameters + callParameters).first { $0.name == name } }

    /// The parameter `name` as `route` takes it.
    public func parameter(_ name: String, on route: APIOperation) -> OperationParameter? {
        (parameters + callParameters).first { $0.name == name && $0.belongs(to: route) }
    }

    /// The route a call with `values` goes to.
    public func route(for values: OperationValues) -> APIOperation {
        routes.first { $0.parameters.allSatisfy { $0 == "app" || values[$0] != nil } } ?? routes[routes.count - 1]
    }
}

/// One parameter of an operation: where it travels, what it holds, and the one line that
/// describes it in openapi.yaml, the console and `--help`.
public struct OperationParameter: Sendable, Hashable {
    public enum Place: String, Sendable {
        case path, query
        /// A member of a JSON object body.
        case body
        case header
        /// The request body itself (a publish's bundle).
        case content
    }

    public enum Kind: String, Sendable {
        case appVersion, channel, patch, percent, text, flag
        /// A version selector (`VersionSelector`): one version, a list, a range or a wildcard.
        case versions
        /// A whole number; in a body, a JSON integer.
        case integer
        /// Whole numbers: in a body a JSON array of integers, in text form comma-separated.
        case integers
        /// A JSON value (a key list, signed metadata): in a body as it is, in text form its
        /// canonical JSON.
        case json
        /// Delivery conditions as canonical JSON (docs/PROTOCOL.md section 5).
        case conditions
        case bytes
    }

    public let name: String
    public let place: Place
    public let kind: Kind
    public let required: Bool
    public let summary: String
    /// The header a `header` parameter is sent in.
    public let header: String?
    /// The one route of the operation that takes it (`operationId`); nil: every route.
    public let route: String?

    public init(_ name: String, _ place: Place, _ kind: Kind, required: Bool = false, header: String? = nil, route: String? = nil, _ summary: String) {
        self.name = name
        self.place = place
        self.kind = kind
        self.required = required
        self.summary = summary
        self.header = header
        self.route = route
    }

    /// Whether `route` takes it.
    public func belongs(to route: APIOperation) -> Bool { self.route == nil || self.route == route.id }

    public static let appVersion = OperationParameter("appVersion", .path, .appVersion, required: true, "the app version, as devices send it")
    public static let dryRun = OperationParameter("dryRun", .query, .flag, "true: work the change out in full and keep nothing (200)")
    public static let expectPatch = OperationParameter("expectPatch", .query, .patch, "the patch the change expects (0: none); 409 and nothing changed when it differs")
    public static let confirm = OperationParameter("confirm", .query, .flag, "true: make the change even though it leaves the version and channel serving no patch, or publishes to several versions")
    public static let message = OperationParameter("message", .query, .text, "why, or release notes (one line): kept with the patch and in the audit log")
}

/// An operation's parameters in their wire form: each a string as a query would carry it
/// (a JSON body member is turned into one), and a publish's bundle. What a pending change
/// stores, what the console sends, what patchctl's remote form sends.
public struct OperationValues: Sendable, Equatable {
    public var fields: [String: String]
    public var bundle: [UInt8]?

    public init(_ fields: [String: String] = [:], bundle: [UInt8]? = nil) {
        self.fields = fields
        self.bundle = bundle
    }

    public subscript(name: String) -> String? {
        get { fields[name] }
        set { fields[name] = newValue }
    }

    static func bad(_ message: String) -> RegistryError { .invalidCall(message) }

    public func appVersion() throws(RegistryError) -> AppVersion {
        guard let raw = fields["appVersion"] else { throw OperationValues.bad("appVersion is required") }
        do { return try AppVersion(raw) } catch { throw .invalidCall(error.message) }
    }

    /// `appVersion` as a version selector (`VersionSelector`).
    public func versions() throws(RegistryError) -> VersionSelector {
        guard let raw = fields["appVersion"] else { throw OperationValues.bad("appVersion is required") }
        do { return try VersionSelector(raw) } catch { throw .invalidCall(error.message) }
    }

    public func channel(_ name: String) throws(RegistryError) -> ChannelName? {
        guard let raw = fields[name] else { return nil }
        do { return try ChannelName(raw) } catch { throw .invalidCall("\(name): \(error.message)") }
    }

    /// A patch number: a positive decimal without sign or leading zeros; `allowZero` for
    /// `expectPatch`, whose 0 means "none".
    public func patch(_ name: String, allowZero: Bool = false) throws(RegistryError) -> Int? {
        guard let raw = fields[name] else { return nil }
        guard let n = Int(raw), String(n) == raw, n >= (allowZero ? 0 : 1), n <= Int(Int32.max) else {
            throw OperationValues.bad("\(name) must be a patch number\(allowZero ? " (0 for none)" : ""), got \(raw.debugSanitized)")
        }
        return n
    }

    public func percent(_ name: String) throws(RegistryError) -> Int? {
        guard let raw = fields[name] else { return nil }
        guard let n = Int(raw), String(n) == raw, (0...100).contains(n) else {
            throw OperationValues.bad("\(name) must be a percentage from 0 to 100, got \(raw.debugSanitized)")
        }
        return n
    }

    public func flag(_ name: String) throws(RegistryError) -> Bool {
        switch fields[name] {
        case nil, "false": return false
        case "true": return true
        case let raw?: throw OperationValues.bad("\(name) must be true or false, got \(raw.debugSanitized)")
        }
    }

    public func text(_ name: String) -> String? { fields[name] }

    public func json(_ name: String) throws(RegistryError) -> JSON? {
        guard let raw = fields[name] else { return nil }
        guard let json = try? JSONParser.parse(Array(raw.utf8)) else { throw OperationValues.bad("\(name) must be JSON") }
        return json
    }

    /// A decimal without sign or leading zeros within `range`.
    public func integer(_ name: String, in range: ClosedRange<Int>) throws(RegistryError) -> Int? {
        guard let raw = fields[name] else { return nil }
        guard let n = Int(raw), String(n) == raw, range.contains(n) else {
            throw OperationValues.bad("\(name) must be an integer from \(range.lowerBound) to \(range.upperBound), got \(raw.debugSanitized)")
        }
        return n
    }

    /// Comma-separated decimals, each within `range`, at most `limit` of them.
    public func integers(_ name: String, in range: ClosedRange<Int>, limit: Int) throws(RegistryError) -> [Int]? {
        guard let raw = fields[name] else { return nil }
        let items = raw.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let numbers = items.compactMap { item in Int(item).flatMap { String($0) == item && range.contains($0) ? $0 : nil } }
        guard numbers.count == items.count, !numbers.isEmpty, numbers.count <= limit else {
            throw OperationValues.bad("\(name) must be 1 to \(limit) integers from \(range.lowerBound) to \(range.upperBound)")
        }
        return numbers
    }

    public func conditions(_ name: String) throws(RegistryError) -> DeliveryConditions? {
        guard let raw = fields[name] else { return nil }
        guard let json = try? JSONParser.parse(Array(raw.utf8), maxLength: 16 * 1024), let conditions = DeliveryConditions(json) else {
            throw OperationValues.bad("\(name) must be delivery conditions as docs/PROTOCOL.md section 5 gives them")
        }
        return conditions
    }

    /// The fields set from typed values; nil and false values are left out, so a value read
    /// back is the one written.
    public static func encode(_ pairs: KeyValuePairs<String, Any?>, bundle: [UInt8]? = nil) -> OperationValues {
        var out = OperationValues(bundle: bundle)
        for (name, value) in pairs {
            switch value {
            case nil: continue
            case let v as AppVersion: out[name] = v.rawValue
            case let v as ChannelName: out[name] = v.rawValue
            case let v as Int: out[name] = String(v)
            case let v as Bool: if v { out[name] = "true" }
            case let v as [Int]: out[name] = v.map(String.init).joined(separator: ",")
            case let v as String: out[name] = v
            case let v as DeliveryConditions: out[name] = v.json.canonicalString
            // (JSON is nil-literal-expressible: a `nil` meant as "left out" must be typed `JSON?`.)
            case let v as JSON: out[name] = v.canonicalString
            default: preconditionFailure("\(name): no wire form for \(type(of: value))")
            }
        }
        return out
    }

    /// The stored form (a pending change's `change`): each field typed as its parameter
    /// declares (numbers as numbers, flags as booleans, conditions as their object).
    public func json(_ definition: OperationDefinition) -> JSON {
        var out: [String: JSON] = ["kind": .string(definition.kind)]
        for (name, raw) in fields {
            switch definition.parameter(name)?.kind {
            case .patch?, .percent?, .integer?: out[name] = Int64(raw).map { .int($0) } ?? .string(raw)
            case .integers?: out[name] = .array(raw.split(separator: ",").map { Int64($0).map { .int($0) } ?? .string(String($0)) })
            case .flag?: out[name] = .bool(raw == "true")
            case .conditions?, .json?: out[name] = (try? JSONParser.parse(Array(raw.utf8))) ?? .string(raw)
            default: out[name] = .string(raw)
            }
        }
        return .object(out)
    }

    /// Reads the stored form back: numbers and booleans as their text, objects as canonical
    /// JSON, nulls left out (stored forms before operations were values wrote them).
    public init(stored json: [String: JSON], bundle: [UInt8]?) {
        var fields: [String: String] = [:]
        for (name, value) in json where name != "kind" {
            switch value {
            case .null: continue
            case .string(let s): fields[name] = s
            case .int(let n): fields[name] = String(n)
            case .bool(let b): if b { fields[name] = "true" }
            case .array(let items) where items.allSatisfy({ $0.intValue != nil }): fields[name] = items.compactMap(\.intValue).map(String.init).joined(separator: ",")
            default: fields[name] = value.canonicalString
            }
        }
        self.init(fields, bundle: bundle)
    }
}

extension VersionServing {
    /// Whether some share of the split names a patch: the fleet, beyond the devices a
    /// conditional patch admits, is offered one.
    public var servesFleet: Bool { shares.contains { $0.patch != nil } }

    /// Whether no device of the version and channel would be offered a patch: no share of
    /// the split names one and no conditional patch is live. What "would leave nothing" means
    /// for revoke and rollback.
    public var servesNothing: Bool { !servesFleet && conditional.isEmpty }
}
