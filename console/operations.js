// Generated from the operation table (Sources/PatchCore/API/APIOperation+Table.swift) and the
// release operations' definitions (Sources/PatchRegistry/Operations) by `make operations-js`;
// OperationDefinitionTests fails when it differs. api.js builds every URL and every release
// call from it, so the console spells no route or parameter of its own.
export const operations = Object.freeze({
  health: Object.freeze({ method: "GET", path: "/healthz", scope: "anyone" }),
  metrics: Object.freeze({ method: "GET", path: "/metrics", scope: "anyone" }),
  getMetadata: Object.freeze({ method: "GET", path: "/v1/apps/{app}/metadata/{file}", scope: "anyone" }),
  getTarget: Object.freeze({ method: "GET", path: "/v1/apps/{app}/targets/{appVersion}/{patch}/{hash}.main.js", scope: "anyone" }),
  getChannelTarget: Object.freeze({ method: "GET", path: "/v1/apps/{app}/targets/{channel}/{appVersion}/{patch}/{hash}.main.js", scope: "anyone" }),
  getConditionalTarget: Object.freeze({ method: "GET", path: "/v1/apps/{app}/targets/{appVersion}/{patch}/{hash}.main.conditional.js", scope: "anyone" }),
  getChannelConditionalTarget: Object.freeze({ method: "GET", path: "/v1/apps/{app}/targets/{channel}/{appVersion}/{patch}/{hash}.main.conditional.js", scope: "anyone" }),
  promotePatch: Object.freeze({ method: "POST", path: "/v1/apps/{app}/versions/{appVersion}/promote", scope: "publisher" }),
  rollBackTo: Object.freeze({ method: "POST", path: "/v1/apps/{app}/versions/{appVersion}/rollback", scope: "publisher" }),
  checkPatch: Object.freeze({ method: "GET", path: "/v1/apps/{app}/versions/{appVersion}/patch", scope: "anyone" }),
  publishPatch: Object.freeze({ method: "POST", path: "/v1/apps/{app}/patches", scope: "publisher" }),
  listPatches: Object.freeze({ method: "GET", path: "/v1/apps/{app}/patches", scope: "auditor" }),
  appStatus: Object.freeze({ method: "GET", path: "/v1/apps/{app}/status", scope: "auditor" }),
  postReports: Object.freeze({ method: "POST", path: "/v1/apps/{app}/reports", scope: "anyone" }),
  registerDevice: Object.freeze({ method: "POST", path: "/v1/apps/{app}/devices", scope: "anyone" }),
  appStats: Object.freeze({ method: "GET", path: "/v1/apps/{app}/stats", scope: "auditor" }),
  setGuard: Object.freeze({ method: "PUT", path: "/v1/apps/{app}/guard", scope: "publisher" }),
  removeGuard: Object.freeze({ method: "DELETE", path: "/v1/apps/{app}/guard", scope: "publisher" }),
  getThrottle: Object.freeze({ method: "GET", path: "/v1/apps/{app}/throttle", scope: "auditor" }),
  setThrottle: Object.freeze({ method: "PUT", path: "/v1/apps/{app}/throttle", scope: "publisher" }),
  listWebhooks: Object.freeze({ method: "GET", path: "/v1/apps/{app}/webhooks", scope: "auditor" }),
  addWebhook: Object.freeze({ method: "POST", path: "/v1/apps/{app}/webhooks", scope: "publisher" }),
  removeWebhook: Object.freeze({ method: "DELETE", path: "/v1/apps/{app}/webhooks/{id}", scope: "publisher" }),
  testWebhook: Object.freeze({ method: "POST", path: "/v1/apps/{app}/webhooks/{id}/test", scope: "publisher" }),
  notifyDevices: Object.freeze({ method: "POST", path: "/v1/apps/{app}/notify", scope: "publisher" }),
  setSchedule: Object.freeze({ method: "PUT", path: "/v1/apps/{app}/versions/{appVersion}/patches/{patch}/schedule", scope: "publisher" }),
  revokeVersion: Object.freeze({ method: "POST", path: "/v1/apps/{app}/versions/{appVersion}/revoke", scope: "publisher" }),
  revokePatch: Object.freeze({ method: "POST", path: "/v1/apps/{app}/versions/{appVersion}/patches/{patch}/revoke", scope: "publisher" }),
  setRollout: Object.freeze({ method: "POST", path: "/v1/apps/{app}/versions/{appVersion}/patches/{patch}/rollout", scope: "publisher" }),
  haltPatch: Object.freeze({ method: "POST", path: "/v1/apps/{app}/versions/{appVersion}/patches/{patch}/halt", scope: "publisher" }),
  resumePatch: Object.freeze({ method: "POST", path: "/v1/apps/{app}/versions/{appVersion}/patches/{patch}/resume", scope: "publisher" }),
  createChannel: Object.freeze({ method: "POST", path: "/v1/apps/{app}/channels", scope: "publisher" }),
  listChannels: Object.freeze({ method: "GET", path: "/v1/apps/{app}/channels", scope: "auditor" }),
  listAppVersions: Object.freeze({ method: "GET", path: "/v1/apps/{app}/versions", scope: "auditor" }),
  getAudit: Object.freeze({ method: "GET", path: "/v1/audit", scope: "token" }),
  listApps: Object.freeze({ method: "GET", path: "/v1/apps", scope: "token" }),
  listTokens: Object.freeze({ method: "GET", path: "/v1/tokens", scope: "token" }),
  createToken: Object.freeze({ method: "POST", path: "/v1/tokens", scope: "publisher" }),
  revokeToken: Object.freeze({ method: "DELETE", path: "/v1/tokens/{id}", scope: "publisher" }),
  delegateChannel: Object.freeze({ method: "POST", path: "/v1/apps/{app}/delegations", scope: "publisher" }),
  undelegateChannel: Object.freeze({ method: "DELETE", path: "/v1/apps/{app}/delegations/{channel}", scope: "publisher" }),
  setWithholdRole: Object.freeze({ method: "PUT", path: "/v1/apps/{app}/withhold-role", scope: "publisher" }),
  setManifest: Object.freeze({ method: "PUT", path: "/v1/apps/{app}/versions/{appVersion}/manifest", scope: "publisher" }),
  checkScript: Object.freeze({ method: "POST", path: "/v1/apps/{app}/check", scope: "auditor" }),
  whoami: Object.freeze({ method: "GET", path: "/v1/whoami", scope: "token" }),
  listPending: Object.freeze({ method: "GET", path: "/v1/apps/{app}/pending", scope: "auditor" }),
  getPending: Object.freeze({ method: "GET", path: "/v1/apps/{app}/pending/{id}", scope: "auditor" }),
  approvePending: Object.freeze({ method: "POST", path: "/v1/apps/{app}/pending/{id}/approve", scope: "publisher" }),
  rejectPending: Object.freeze({ method: "POST", path: "/v1/apps/{app}/pending/{id}/reject", scope: "publisher" }),
  patchScript: Object.freeze({ method: "GET", path: "/v1/apps/{app}/versions/{appVersion}/patches/{patch}/script", scope: "auditor" }),
  rootRedirect: Object.freeze({ method: "GET", path: "/", scope: "anyone" }),
  consoleRedirect: Object.freeze({ method: "GET", path: "/console", scope: "anyone" }),
  consoleIndex: Object.freeze({ method: "GET", path: "/console/", scope: "anyone" }),
  consoleFile: Object.freeze({ method: "GET", path: "/console/{file}", scope: "anyone" }),
  getJSPatchPackage: Object.freeze({ method: "GET", path: "/jspatch/{app}/{appVersion}/{package}.zip", scope: "anyone" }),
  getJSPatchLatest: Object.freeze({ method: "GET", path: "/jspatch/{app}/{appVersion}/latest", scope: "anyone" }),
});

export const releases = Object.freeze({
  "publish": Object.freeze({
    routes: ["publishPatch"], danger: "routine", confirms: true,
    parameters: Object.freeze([
      Object.freeze({ name: "appVersion", in: "query", kind: "versions", required: true }),
      Object.freeze({ name: "channel", in: "query", kind: "channel", required: false }),
      Object.freeze({ name: "rollout", in: "query", kind: "percent", required: false }),
      Object.freeze({ name: "message", in: "query", kind: "text", required: false }),
      Object.freeze({ name: "allowSame", in: "query", kind: "flag", required: false }),
      Object.freeze({ name: "newChannel", in: "query", kind: "flag", required: false }),
      Object.freeze({ name: "strictVersion", in: "query", kind: "flag", required: false }),
      Object.freeze({ name: "skipCheck", in: "query", kind: "text", required: false }),
      Object.freeze({ name: "conditions", in: "header", kind: "conditions", required: false }),
      Object.freeze({ name: "bundle", in: "content", kind: "bytes", required: true }),
      Object.freeze({ name: "dryRun", in: "query", kind: "flag", required: false }),
      Object.freeze({ name: "expectPatch", in: "query", kind: "patch", required: false }),
      Object.freeze({ name: "confirm", in: "query", kind: "flag", required: false }),
    ]),
  }),
  "promote": Object.freeze({
    routes: ["promotePatch"], danger: "routine", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "appVersion", in: "path", kind: "appVersion", required: true }),
      Object.freeze({ name: "from", in: "query", kind: "channel", required: true }),
      Object.freeze({ name: "to", in: "query", kind: "channel", required: true }),
      Object.freeze({ name: "patch", in: "query", kind: "patch", required: false }),
      Object.freeze({ name: "rollout", in: "query", kind: "percent", required: false }),
      Object.freeze({ name: "message", in: "query", kind: "text", required: false }),
      Object.freeze({ name: "skipCheck", in: "query", kind: "text", required: false }),
      Object.freeze({ name: "dryRun", in: "query", kind: "flag", required: false }),
      Object.freeze({ name: "expectPatch", in: "query", kind: "patch", required: false }),
    ]),
  }),
  "rollout": Object.freeze({
    routes: ["setRollout"], danger: "routine", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "appVersion", in: "path", kind: "appVersion", required: true }),
      Object.freeze({ name: "patch", in: "path", kind: "patch", required: true }),
      Object.freeze({ name: "percent", in: "body", kind: "percent", required: true }),
      Object.freeze({ name: "dryRun", in: "query", kind: "flag", required: false }),
      Object.freeze({ name: "expectPatch", in: "query", kind: "patch", required: false }),
    ]),
  }),
  "halt": Object.freeze({
    routes: ["haltPatch"], danger: "stops", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "appVersion", in: "path", kind: "appVersion", required: true }),
      Object.freeze({ name: "patch", in: "path", kind: "patch", required: true }),
      Object.freeze({ name: "message", in: "query", kind: "text", required: false }),
      Object.freeze({ name: "dryRun", in: "query", kind: "flag", required: false }),
      Object.freeze({ name: "expectPatch", in: "query", kind: "patch", required: false }),
    ]),
  }),
  "resume": Object.freeze({
    routes: ["resumePatch"], danger: "routine", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "appVersion", in: "path", kind: "appVersion", required: true }),
      Object.freeze({ name: "patch", in: "path", kind: "patch", required: true }),
      Object.freeze({ name: "rollout", in: "query", kind: "percent", required: false }),
      Object.freeze({ name: "dryRun", in: "query", kind: "flag", required: false }),
      Object.freeze({ name: "expectPatch", in: "query", kind: "patch", required: false }),
    ]),
  }),
  "revoke": Object.freeze({
    routes: ["revokePatch", "revokeVersion"], danger: "takesAway", confirms: true,
    parameters: Object.freeze([
      Object.freeze({ name: "appVersion", in: "path", kind: "appVersion", required: true }),
      Object.freeze({ name: "patch", in: "path", kind: "patch", required: false, route: "revokePatch" }),
      Object.freeze({ name: "channel", in: "query", kind: "channel", required: false }),
      Object.freeze({ name: "all", in: "query", kind: "flag", required: true, route: "revokeVersion" }),
      Object.freeze({ name: "message", in: "query", kind: "text", required: false }),
      Object.freeze({ name: "dryRun", in: "query", kind: "flag", required: false }),
      Object.freeze({ name: "expectPatch", in: "query", kind: "patch", required: false }),
      Object.freeze({ name: "confirm", in: "query", kind: "flag", required: false }),
    ]),
  }),
  "rollback": Object.freeze({
    routes: ["rollBackTo"], danger: "takesAway", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "appVersion", in: "path", kind: "appVersion", required: true }),
      Object.freeze({ name: "channel", in: "query", kind: "channel", required: false }),
      Object.freeze({ name: "patch", in: "query", kind: "patch", required: false }),
      Object.freeze({ name: "to", in: "query", kind: "patch", required: false }),
      Object.freeze({ name: "rollout", in: "query", kind: "percent", required: false }),
      Object.freeze({ name: "message", in: "query", kind: "text", required: false }),
      Object.freeze({ name: "skipCheck", in: "query", kind: "text", required: false }),
      Object.freeze({ name: "dryRun", in: "query", kind: "flag", required: false }),
      Object.freeze({ name: "expectPatch", in: "query", kind: "patch", required: false }),
    ]),
  }),
  "channel": Object.freeze({
    routes: ["createChannel"], danger: "routine", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "channel", in: "query", kind: "channel", required: true }),
    ]),
  }),
  "guard": Object.freeze({
    routes: ["setGuard"], danger: "routine", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "channel", in: "body", kind: "channel", required: false }),
      Object.freeze({ name: "maxRollbackRatePpm", in: "body", kind: "integer", required: true }),
      Object.freeze({ name: "minDevices", in: "body", kind: "integer", required: true }),
      Object.freeze({ name: "action", in: "body", kind: "text", required: false }),
    ]),
  }),
  "guard-remove": Object.freeze({
    routes: ["removeGuard"], danger: "routine", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "channel", in: "query", kind: "channel", required: false }),
    ]),
  }),
  "throttle": Object.freeze({
    routes: ["setThrottle"], danger: "routine", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "minInterval", in: "body", kind: "integer", required: false }),
      Object.freeze({ name: "ipRatePerMinute", in: "body", kind: "integer", required: false }),
    ]),
  }),
  "schedule": Object.freeze({
    routes: ["setSchedule"], danger: "routine", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "appVersion", in: "path", kind: "appVersion", required: true }),
      Object.freeze({ name: "patch", in: "path", kind: "patch", required: true }),
      Object.freeze({ name: "steps", in: "body", kind: "integers", required: true }),
      Object.freeze({ name: "everySeconds", in: "body", kind: "integer", required: true }),
    ]),
  }),
  "token": Object.freeze({
    routes: ["createToken"], danger: "routine", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "app", in: "body", kind: "text", required: false }),
      Object.freeze({ name: "role", in: "body", kind: "text", required: false }),
      Object.freeze({ name: "name", in: "body", kind: "text", required: false }),
    ]),
  }),
  "token-revoke": Object.freeze({
    routes: ["revokeToken"], danger: "takesAway", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "id", in: "path", kind: "text", required: true }),
    ]),
  }),
  "delegate": Object.freeze({
    routes: ["delegateChannel"], danger: "routine", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "channel", in: "body", kind: "channel", required: true }),
      Object.freeze({ name: "name", in: "body", kind: "text", required: true }),
      Object.freeze({ name: "keys", in: "body", kind: "json", required: false }),
      Object.freeze({ name: "threshold", in: "body", kind: "integer", required: false }),
      Object.freeze({ name: "replace", in: "body", kind: "flag", required: false }),
      Object.freeze({ name: "role", in: "body", kind: "json", required: false }),
      Object.freeze({ name: "dryRun", in: "query", kind: "flag", required: false }),
    ]),
  }),
  "undelegate": Object.freeze({
    routes: ["undelegateChannel"], danger: "routine", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "channel", in: "path", kind: "channel", required: true }),
    ]),
  }),
  "withhold-role": Object.freeze({
    routes: ["setWithholdRole"], danger: "routine", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "keys", in: "body", kind: "json", required: false }),
      Object.freeze({ name: "threshold", in: "body", kind: "integer", required: false }),
      Object.freeze({ name: "dryRun", in: "query", kind: "flag", required: false }),
    ]),
  }),
  "manifest": Object.freeze({
    routes: ["setManifest"], danger: "routine", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "appVersion", in: "path", kind: "appVersion", required: true }),
      Object.freeze({ name: "manifest", in: "content", kind: "bytes", required: true }),
    ]),
  }),
  "check": Object.freeze({
    routes: ["checkScript"], danger: "routine", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "appVersion", in: "query", kind: "appVersion", required: false }),
      Object.freeze({ name: "script", in: "content", kind: "bytes", required: true }),
    ]),
  }),
  "webhook": Object.freeze({
    routes: ["addWebhook"], danger: "routine", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "url", in: "body", kind: "text", required: true }),
      Object.freeze({ name: "events", in: "body", kind: "text", required: false }),
      Object.freeze({ name: "secret", in: "body", kind: "text", required: false }),
      Object.freeze({ name: "insecureHttp", in: "body", kind: "flag", required: false }),
      Object.freeze({ name: "maxPending", in: "body", kind: "integer", required: false }),
    ]),
  }),
  "webhook-remove": Object.freeze({
    routes: ["removeWebhook"], danger: "routine", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "id", in: "path", kind: "text", required: true }),
    ]),
  }),
  "webhook-test": Object.freeze({
    routes: ["testWebhook"], danger: "routine", confirms: false,
    parameters: Object.freeze([
      Object.freeze({ name: "id", in: "path", kind: "text", required: true }),
    ]),
  }),
});
