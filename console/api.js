// The JSON API of patchd, with the token from session storage as a bearer header. The
// token never goes into a URL, a cookie or the console log.

import { operations, releases } from "./operations.js";

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

/** The URL of operation `id` of the table (operations.js) with its path parameters filled in,
 *  each encoded as one segment, and `query`'s pairs (unset ones left out). */
export function url(id, values = {}, query = {}) {
  const operation = operations[id];
  if (!operation) throw new Error(`no operation ${id}`);
  const path = operation.path.replace(/\{([A-Za-z]+)\}/g, (_, name) => {
    if (values[name] === undefined) throw new Error(`${id}: no value for {${name}}`);
    return encodeURIComponent(String(values[name]));
  });
  const pairs = Object.entries(query).filter(([, v]) => v !== undefined && v !== null && v !== "").map(([k, v]) => [k, String(v)]);
  return pairs.length ? `${path}?${new URLSearchParams(pairs)}` : path;
}

/** A release change patchd did not make but stored, waiting for key holders' signatures (the
 *  two-person rule): the 202 answer of a publish, promote, rollback, revoke or rollout. It is
 *  returned, not thrown, and is no success: nothing of it is served yet. */
export class Pending {
  constructor(change, message) {
    this.change = change;
    this.message = message;
  }
}

/** Calls operation `id`: its method and path from the table, never spelt here. */
async function call(id, values, { query = {}, body, text = false, signed = operations[id].scope !== "anyone" } = {}) {
  const method = operations[id].method, path = url(id, values, query);
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
  if (response.status === 202 && !text) {
    const parsed = await response.json();
    return parsed && parsed.pending ? new Pending(parsed.pending, parsed.message) : parsed;
  }
  return text ? response.text() : response.json();
}

/** A `before` above every audit seq (the largest the API takes), for the newest page; a
 *  string, since it is past what a JavaScript number holds exactly. */
export const NEWEST = "9223372036854775807";

const patchOf = (app, appVersion, patch) => ({ app, appVersion, patch });

/** Runs release operation `kind` (operations.js `releases`, from the operation's definition in
 *  Sources/PatchRegistry/Operations) for `app` with `values` by their wire names: each goes
 *  where the definition puts it (path, query or JSON body), to the first of its routes whose
 *  path parameters all have values. A name the operation does not take is an error here, as
 *  patchd would answer it. */
export function perform(kind, app, values = {}) {
  const release = releases[kind];
  if (!release) throw new Error(`no release operation ${kind}`);
  const given = Object.entries(values).filter(([, v]) => v !== undefined && v !== null && v !== "");
  const has = name => name === "app" || given.some(([n]) => n === name);
  const route = release.routes.find(id => [...operations[id].path.matchAll(/\{([A-Za-z]+)\}/g)].every(m => has(m[1])))
    ?? release.routes[release.routes.length - 1];
  const inPath = new Set([...operations[route].path.matchAll(/\{([A-Za-z]+)\}/g)].map(m => m[1]));
  const path = { app }, query = {}, body = {};
  for (const [name, value] of given) {
    const parameter = release.parameters.find(p => p.name === name && (!p.route || p.route === route));
    if (!parameter) throw new Error(`${kind} takes no ${name}`);
    if (parameter.in === "path" && inPath.has(name)) path[name] = value;
    else if (parameter.in === "body") body[name] = parameter.kind === "patch" || parameter.kind === "percent" ? Number(value) : String(value);
    else query[name] = value;
  }
  const takesBody = release.parameters.some(p => p.in === "body");
  return call(route, path, { query, body: takesBody ? body : undefined });
}

export const api = {
  whoami: () => call("whoami"),
  apps: () => call("listApps"),
  status: app => call("appStatus", { app }),
  patches: app => call("listPatches", { app }),
  /** The app versions devices checked for in the last 30 days, the most asked first. */
  versions: app => call("listAppVersions", { app }),
  stats: (app, hours = 168) => call("appStats", { app }, { query: { hours } }),
  script: (app, version, patch) => call("patchScript", patchOf(app, version, patch), { text: true }),
  /** A metadata file of the app's TUF repository (public, no token). */
  metadata: (app, file) => call("getMetadata", { app, file }),
  /** A page of the audit log, newest first: the events below seq `before` (the newest
   *  page by default: above every seq there can be). */
  audit: ({ before = NEWEST, limit = 50, appName = null } = {}) =>
    call("getAudit", {}, { query: { verify: "true", before, limit, app: appName } }),
  /** A release operation (rollout, halt, resume, revoke, rollback, promote…): `perform`. */
  perform,
  /** The app's release changes waiting for signatures, oldest first; `all` adds the approved,
   *  rejected and superseded ones. */
  pending: (app, { all = false } = {}) => call("listPending", { app }, { query: { all: all ? "true" : undefined } }),
  /** Withdraws a pending change: it will never land. */
  reject: (app, id, reason) => call("rejectPending", { app, id }, { query: { reason } }),
};
