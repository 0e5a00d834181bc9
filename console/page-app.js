// One app: versions × channels with what each serves, adoption, guards; then every patch.
import { api } from "./api.js";
import { el, table, link, route, when, pill, hash, facts } from "./dom.js";
import { adoptionBars } from "./charts.js";
import { patchActions, rollbackAction } from "./actions.js";

const key = (version, channel, patch) => `${version}\u0000${channel}\u0000${patch}`;

/** What /status, /patches and /stats say of one app, joined per patch. */
export async function loadApp(appName) {
  const [status, patches, stats] = await Promise.all([api.status(appName), api.patches(appName), api.stats(appName)]);
  const delivery = new Map(), devices = new Map();
  for (const v of status.versions) for (const p of v.patches) delivery.set(key(v.appVersion, v.channel, p.patch), p.delivery);
  for (const f of stats.patches) if (f.patch !== null) devices.set(key(f.appVersion, f.channel, f.patch), f);
  for (const p of patches) {
    p.delivery = p.state === "revoked" ? "revoked" : delivery.get(key(p.appVersion, p.channel, p.patch)) ?? p.state;
    p.figures = devices.get(key(p.appVersion, p.channel, p.patch)) ?? null;
  }
  return { status, patches, stats };
}

function guardState(stats, serving) {
  const guard = stats.guards.find(g => g.channel === serving.channel);
  const trips = stats.trips.filter(t => t.appVersion === serving.appVersion && t.channel === serving.channel);
  const schedules = stats.schedules.filter(s => s.appVersion === serving.appVersion && s.channel === serving.channel);
  const lines = [];
  lines.push(guard ? `guard: ${guard.action} above ${+(guard.maxRollbackRatePpm / 10000).toFixed(2)} % rolled back (from ${guard.minDevices} devices)`
    : "no guard");
  // A trip says what was done and, when that differs, what the guard was configured to do and why
  // (a revoke that would leave the version with no patch halts instead).
  for (const t of trips) {
    const done = `patch ${t.patch} ${t.action === "halt" ? "halted" : "revoked"} by its guard`;
    lines.push(el("span", { class: "pill halted trip" }, t.configured && t.configured !== t.action
      ? `${done} (configured: ${t.configured} — ${t.overrideReason})` : done));
  }
  for (const s of schedules) lines.push(`patch ${s.patch} advancing: ${s.steps.join(" → ")} %, next at ${s.nextAt}`);
  const halted = serving.patches.filter(p => p.delivery === "halted").map(p => `patch ${p.patch}`);
  if (halted.length) lines.push(el("span", { class: "pill halted" }, `halted: ${halted.join(", ")}`));
  return el("div", { class: "guard muted" }, lines.map(line => el("div", {}, line)));
}

function cell(appName, serving, patches, stats) {
  const live = serving.patches.filter(p => p.delivery === "live").map(p => p.patch);
  const newest = live.length ? Math.max(...live) : null;
  const figures = newest === null ? null : patches.find(p => p.appVersion === serving.appVersion && p.channel === serving.channel && p.patch === newest);
  return el("td", { class: "cell", "data-version": serving.appVersion, "data-channel": serving.channel },
    el("div", {}, newest === null ? el("span", { class: "muted" }, "no live patch")
      : [link(route("apps", appName, "patches", serving.appVersion, newest), `patch ${newest}`), " live"]),
    el("div", { class: "split" }, serving.summary),
    el("div", {}, serving.patches.filter(p => p.delivery !== "revoked").map(p => [pill(`${p.patch}: ${p.rollout} % ${p.delivery}`, p.delivery), " "])),
    figures ? adoptionBars(figures.figures?.devices) : null,
    guardState(stats, serving),
    rollbackAction(appName, serving, patches));
}

export async function appPage(appName) {
  const { status, patches, stats } = await loadApp(appName);
  const versions = [...new Set(status.versions.map(v => v.appVersion))];
  const channels = [...new Set(status.versions.map(v => v.channel))].sort((a, b) =>
    (a === "production" ? -1 : b === "production" ? 1 : a.localeCompare(b)));
  const grid = versions.length === 0 ? el("p", { class: "muted" }, "Nothing published yet.") : el("div", { class: "grid" }, table(
    [el("th", { scope: "col" }, "Version"), ...channels.map(c => el("th", { scope: "col" }, c))],
    versions.map(version => el("tr", {}, el("th", { scope: "row" }, version), channels.map(channel => {
      const serving = status.versions.find(v => v.appVersion === version && v.channel === channel);
      return serving ? cell(appName, serving, patches, stats) : el("td", { class: "muted" }, "—");
    }))), { id: "matrix" }));
  const meta = Object.entries(status.metadata).map(([role, m]) => [role, `version ${m.version}, expires ${m.expires}`]);
  const rows = [...patches].reverse().map(p => el("tr", { "data-patch": `${p.appVersion}/${p.patch}` },
    el("td", {}, p.appVersion), el("td", {}, p.channel),
    el("td", {}, link(route("apps", appName, "patches", p.appVersion, p.patch), `patch ${p.patch}`)),
    el("td", { class: "num rollout" }, `${p.rollout} %`),
    el("td", {}, pill(p.delivery)),
    el("td", { class: "num" }, p.figures ? `${p.figures.devices.installed} / ${p.figures.devices.confirmed} / ${p.figures.devices.rolledBack}` : "—"),
    el("td", { class: "num" }, String(p.length)),
    el("td", {}, hash(p.sha256)),
    el("td", {}, when(p.publishedAt), el("br"), el("span", { class: "muted" }, p.publishedBy)),
    el("td", { class: "notes" }, p.message ?? ""),
    el("td", {}, patchActions(p, channels))));
  return [
    el("p", {}, link(route("apps"), "Apps"), " / ", appName),
    el("h1", {}, appName),
    el("section", { class: "card" }, el("h2", {}, "Signed metadata"), facts(meta)),
    el("h2", {}, "Versions × channels"),
    grid,
    el("h2", {}, "Patches"),
    table(["Version", "Channel", "Patch", "Rollout", "Delivery", "Installed / confirmed / rolled back", "Bytes", "SHA-256",
           "Published", "Release notes", "Actions"], rows, { id: "patches" }),
  ];
}
