// The JSON API of patchd, with the token from session storage as a bearer header. The
// token never goes into a URL, a cookie or the console log.

const KEY = "hotpatch.token";

export const session = {
  get token() { return sessionStorage.getItem(KEY); },
  set(token) { sessionStorage.setItem(KEY, token); },
  clear() { sessionStorage.removeItem(KEY); },
};

/** An answer patchd refused, with its status and the message of its JSON error body. */
export class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function call(method, path, { body, text = false, signed = true } = {}) {
  const headers = { Accept: text ? "text/plain" : "application/json" };
  if (signed && session.token) headers.Authorization = `Bearer ${session.token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store", credentials: "omit", redirect: "error",
    });
  } catch (error) {
    throw new APIError(0, "network", `patchd cannot be reached (${error.message})`);
  }
  if (!response.ok) {
    let code = "http", message = `${response.status} ${response.statusText}`;
    try {
      const parsed = await response.json();
      if (parsed && parsed.error) { code = parsed.error.code; message = parsed.error.message; }
    } catch { /* not JSON: the status line says enough */ }
    throw new APIError(response.status, code, message);
  }
  return text ? response.text() : response.json();
}

/** A `before` above every audit seq (the largest the API takes), for the newest page; a
 *  string, since it is past what a JavaScript number holds exactly. */
export const NEWEST = "9223372036854775807";

const app = name => `/v1/apps/${encodeURIComponent(name)}`;
const patchPath = (name, version, patch) =>
  `${app(name)}/versions/${encodeURIComponent(version)}/patches/${encodeURIComponent(patch)}`;

export const api = {
  whoami: () => call("GET", "/v1/whoami"),
  apps: () => call("GET", "/v1/apps"),
  status: name => call("GET", `${app(name)}/status`),
  patches: name => call("GET", `${app(name)}/patches`),
  stats: (name, hours = 168) => call("GET", `${app(name)}/stats?hours=${hours}`),
  script: (name, version, patch) => call("GET", `${patchPath(name, version, patch)}/script`, { text: true }),
  /** A metadata file of the app's TUF repository (public, no token). */
  metadata: (name, file) => call("GET", `${app(name)}/metadata/${encodeURIComponent(file)}`, { signed: false }),
  /** A page of the audit log, newest first: the events below seq `before` (the newest
   *  page by default: above every seq there can be). */
  audit: ({ before = NEWEST, limit = 50, appName = null } = {}) => {
    const query = new URLSearchParams({ verify: "true", before: String(before), limit: String(limit) });
    if (appName) query.set("app", appName);
    return call("GET", `/v1/audit?${query}`);
  },
  rollout: (name, version, patch, percent) => call("POST", `${patchPath(name, version, patch)}/rollout`, { body: { percent } }),
  revoke: (name, version, patch, message) => {
    const query = message ? `?${new URLSearchParams({ message })}` : "";
    return call("POST", `${patchPath(name, version, patch)}/revoke${query}`);
  },
  /** Publishes patch `to`'s bytes again as the next patch of the version and channel;
   *  `expectPatch` is the newest live patch the dialog showed (409 if it changed since). */
  rollback: (name, version, { channel, to, expectPatch, message }) => {
    const query = new URLSearchParams({ channel, to: String(to), expectPatch: String(expectPatch) });
    if (message) query.set("message", message);
    return call("POST", `${app(name)}/versions/${encodeURIComponent(version)}/rollback?${query}`);
  },
  promote: (name, version, { from, to, patch, rollout }) => {
    const query = new URLSearchParams({ from, to, patch: String(patch), rollout: String(rollout) });
    return call("POST", `${app(name)}/versions/${encodeURIComponent(version)}/promote?${query}`);
  },
};
