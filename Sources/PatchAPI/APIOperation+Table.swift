import PatchCore

/// Every operation of patchd's HTTP API (docs/openapi.yaml; the wire is docs/PROTOCOL.md).
/// `OperationTableTests` holds openapi.yaml, console/operations.js and README's CLI reference
/// to this table, and `RouteTableTests` holds patchd's router to it: an operation is added
/// here first, and each of those fails until the others say the same.
extension APIOperation {
    // MARK: Health and metrics
    public static let health = APIOperation("health", "GET", "/healthz")
    public static let metrics = APIOperation("metrics", "GET", "/metrics")

    // MARK: The TUF repository and the simple check (devices; no token)
    public static let getMetadata = APIOperation("getMetadata", "GET", DeviceRoutes.metadata, commands: ["fetch", "export"])
    public static let getTarget = APIOperation("getTarget", "GET", "/v1/apps/{app}/targets/{appVersion}/{patch}/{hash}.main.js", commands: ["fetch", "export"])
    public static let getChannelTarget = APIOperation("getChannelTarget", "GET", "/v1/apps/{app}/targets/{channel}/{appVersion}/{patch}/{hash}.main.js",
                                                   commands: ["fetch", "export"])
    public static let getConditionalTarget = APIOperation("getConditionalTarget", "GET",
                                                       "/v1/apps/{app}/targets/{appVersion}/{patch}/{hash}.main.conditional.js", commands: ["fetch", "export"])
    public static let getChannelConditionalTarget = APIOperation("getChannelConditionalTarget", "GET",
                                                              "/v1/apps/{app}/targets/{channel}/{appVersion}/{patch}/{hash}.main.conditional.js",
                                                              commands: ["fetch", "export"])
    public static let checkPatch = APIOperation("checkPatch", "GET", "/v1/apps/{app}/versions/{appVersion}/patch")

    // MARK: Release operations (publisher tokens)
    public static let publishPatch = APIOperation("publishPatch", "POST", "/v1/apps/{app}/patches", scope: .publisher, commands: ["publish"])
    public static let promotePatch = APIOperation("promotePatch", "POST", "/v1/apps/{app}/versions/{appVersion}/promote", scope: .publisher, commands: ["promote"])
    public static let rollBackTo = APIOperation("rollBackTo", "POST", "/v1/apps/{app}/versions/{appVersion}/rollback", scope: .publisher, commands: ["rollback"])
    public static let revokeVersion = APIOperation("revokeVersion", "POST", "/v1/apps/{app}/versions/{appVersion}/revoke", scope: .publisher, commands: ["revoke"])
    public static let revokePatch = APIOperation("revokePatch", "POST", "/v1/apps/{app}/versions/{appVersion}/patches/{patch}/revoke",
                                              scope: .publisher, commands: ["revoke"])
    public static let setRollout = APIOperation("setRollout", "POST", "/v1/apps/{app}/versions/{appVersion}/patches/{patch}/rollout",
                                             scope: .publisher, commands: ["rollout"])
    public static let haltPatch = APIOperation("haltPatch", "POST", "/v1/apps/{app}/versions/{appVersion}/patches/{patch}/halt",
                                            scope: .publisher, commands: ["halt"])
    public static let resumePatch = APIOperation("resumePatch", "POST", "/v1/apps/{app}/versions/{appVersion}/patches/{patch}/resume",
                                              scope: .publisher, commands: ["resume"])
    /// Declared channels (issue 42): an operation naming a channel the app has not declared is
    /// refused with a did-you-mean.
    public static let createChannel = APIOperation("createChannel", "POST", "/v1/apps/{app}/channels", scope: .publisher, commands: ["channels create"])
    public static let listChannels = APIOperation("listChannels", "GET", "/v1/apps/{app}/channels", scope: .auditor, commands: ["channels list"])
    /// The app versions devices checked for in the last 30 days (issue 44): what a range of
    /// `publish --app-version` expands against, and what a publish to another version is warned of.
    public static let listAppVersions = APIOperation("listAppVersions", "GET", "/v1/apps/{app}/versions", scope: .auditor, commands: ["apps versions"])
    public static let setSchedule = APIOperation("setSchedule", "PUT", "/v1/apps/{app}/versions/{appVersion}/patches/{patch}/schedule",
                                              scope: .publisher, commands: ["rollout"])
    public static let setGuard = APIOperation("setGuard", "PUT", "/v1/apps/{app}/guard", scope: .publisher,
                                           commands: ["apps guard"])
    public static let removeGuard = APIOperation("removeGuard", "DELETE", "/v1/apps/{app}/guard", scope: .publisher,
                                              commands: ["apps guard"])
    public static let setThrottle = APIOperation("setThrottle", "PUT", "/v1/apps/{app}/throttle", scope: .publisher,
                                              commands: ["apps throttle"])
    /// Webhooks (issue 47): subscriptions to an app's events, delivered by patchd's upkeep.
    public static let listWebhooks = APIOperation("listWebhooks", "GET", "/v1/apps/{app}/webhooks", scope: .auditor, commands: ["apps webhook list"])
    public static let addWebhook = APIOperation("addWebhook", "POST", "/v1/apps/{app}/webhooks", scope: .publisher, commands: ["apps webhook add"])
    public static let removeWebhook = APIOperation("removeWebhook", "DELETE", "/v1/apps/{app}/webhooks/{id}", scope: .publisher, commands: ["apps webhook remove"])
    public static let testWebhook = APIOperation("testWebhook", "POST", "/v1/apps/{app}/webhooks/{id}/test", scope: .publisher, commands: ["apps webhook test"])
    public static let notifyDevices = APIOperation("notifyDevices", "POST", "/v1/apps/{app}/notify", scope: .publisher,
                                                commands: ["notify"])
    /// Scope publisher with no app in the path: any publisher token; the body's app must be
    /// within the caller's own scope (`TokenRecord.mayIssue`).
    public static let createToken = APIOperation("createToken", "POST", "/v1/tokens", scope: .publisher,
                                              commands: ["tokens create"])
    public static let revokeToken = APIOperation("revokeToken", "DELETE", "/v1/tokens/{id}", scope: .publisher,
                                              commands: ["tokens revoke"])
    // Delegated keys per channel (`keys delegate`, issue 24): the role's metadata is signed
    // with a key the server holds (one it makes when the body names no key), or where its keys
    // are (the dry run answers it unsigned); top-level targets with the targets key, on the server.
    public static let delegateChannel = APIOperation("delegateChannel", "POST", "/v1/apps/{app}/delegations", scope: .publisher, commands: ["keys delegate"])
    // The script check (issue 45): an app version's native manifest, and a check alone.
    public static let setManifest = APIOperation("setManifest", "PUT", "/v1/apps/{app}/versions/{appVersion}/manifest", scope: .publisher, commands: ["apps manifest"])
    public static let checkScript = APIOperation("checkScript", "POST", "/v1/apps/{app}/check", scope: .auditor, commands: ["check"])
    public static let setWithholdRole = APIOperation("setWithholdRole", "PUT", "/v1/apps/{app}/withhold-role", scope: .publisher, commands: ["keys withhold"])
    public static let undelegateChannel = APIOperation("undelegateChannel", "DELETE", "/v1/apps/{app}/delegations/{channel}", scope: .publisher, commands: ["keys undelegate"])

    /// The two-person rule: a change the server cannot sign alone is answered 202 with the
    /// stored pending change; key holders sign its metadata on their machines and send the
    /// signatures here (`patchctl approve`).
    public static let approvePending = APIOperation("approvePending", "POST", "/v1/apps/{app}/pending/{id}/approve", scope: .publisher, commands: ["approve", "publish", "promote", "rollback", "revoke", "rollout", "halt", "resume"])
    public static let rejectPending = APIOperation("rejectPending", "POST", "/v1/apps/{app}/pending/{id}/reject", scope: .publisher, commands: ["reject"])

    // MARK: Reading (auditor tokens)
    public static let listPatches = APIOperation("listPatches", "GET", "/v1/apps/{app}/patches", scope: .auditor, commands: ["list", "rollback", "publish"])
    public static let appStatus = APIOperation("appStatus", "GET", "/v1/apps/{app}/status", scope: .auditor, commands: ["status"])
    public static let appStats = APIOperation("appStats", "GET", "/v1/apps/{app}/stats", scope: .auditor, commands: ["rollout", "status"])
    public static let getThrottle = APIOperation("getThrottle", "GET", "/v1/apps/{app}/throttle", scope: .auditor, commands: ["apps throttle"])
    public static let patchScript = APIOperation("patchScript", "GET", "/v1/apps/{app}/versions/{appVersion}/patches/{patch}/script",
                                              scope: .auditor, commands: ["diff"])
    public static let listPending = APIOperation("listPending", "GET", "/v1/apps/{app}/pending", scope: .auditor, commands: ["pending"])
    public static let getPending = APIOperation("getPending", "GET", "/v1/apps/{app}/pending/{id}", scope: .auditor, commands: ["approve"])
    public static let getAudit = APIOperation("getAudit", "GET", "/v1/audit", scope: .token, commands: ["audit"])
    public static let listApps = APIOperation("listApps", "GET", "/v1/apps", scope: .token, commands: ["apps list"])
    public static let listTokens = APIOperation("listTokens", "GET", "/v1/tokens", scope: .token, commands: ["tokens list"])
    public static let whoami = APIOperation("whoami", "GET", "/v1/whoami", scope: .token)

    // MARK: Device reports (no token; bounded bodies)
    public static let postReports = APIOperation("postReports", "POST", DeviceRoutes.reports)
    public static let registerDevice = APIOperation("registerDevice", "POST", DeviceRoutes.devices)

    // MARK: The web console
    public static let rootRedirect = APIOperation("rootRedirect", "GET", "/")
    public static let consoleRedirect = APIOperation("consoleRedirect", "GET", "/console")
    public static let consoleIndex = APIOperation("consoleIndex", "GET", "/console/")
    public static let consoleFile = APIOperation("consoleFile", "GET", "/console/{file}")

    // MARK: JSPatch Loader compatibility
    public static let getJSPatchPackage = APIOperation("getJSPatchPackage", "GET", "/jspatch/{app}/{appVersion}/{package}.zip")
    public static let getJSPatchLatest = APIOperation("getJSPatchLatest", "GET", "/jspatch/{app}/{appVersion}/latest")

    /// The table, in docs/openapi.yaml's order.
    public static let all: [APIOperation] = [
        health, metrics, getMetadata, getTarget, getChannelTarget, getConditionalTarget, getChannelConditionalTarget,
        promotePatch, rollBackTo, checkPatch, publishPatch, listPatches, appStatus, postReports, registerDevice, appStats,
        setGuard, removeGuard, getThrottle, setThrottle, listWebhooks, addWebhook, removeWebhook, testWebhook, notifyDevices, setSchedule, revokeVersion, revokePatch, setRollout, haltPatch, resumePatch, createChannel, listChannels, listAppVersions, getAudit, listApps,
        listTokens, createToken, revokeToken, delegateChannel, undelegateChannel, setWithholdRole, setManifest, checkScript, whoami, listPending, getPending, approvePending, rejectPending,
        patchScript, rootRedirect, consoleRedirect, consoleIndex, consoleFile, getJSPatchPackage, getJSPatchLatest,
    ]

    /// The operation with this `operationId`.
    public static func named(_ id: String) -> APIOperation? { all.first { $0.id == id } }
}
