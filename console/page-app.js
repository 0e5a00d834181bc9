// One app: the changes waiting for signatures, the versions devices ask for, versions ×
// channels with what each serves, adoption, guards; then every patch.
import { api } from "./api.js";
import { el, table, labelled, link, route, when, pill, hash, facts } from "./dom.js";
import { adoptionBars } from "./charts.js";
import { patchActions, rollbackAction } from "./actions.js";
import { loadPending, pendingSection } from "./pending.js";

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

/** What a patch's delivery conditions admit, from the listing's form: "2 listed test
 *  devices", "2 listed test devices, OS ≥ 16.0", "devices with OS 15.0–17.4". */
export function conditionsText(c) {
  const os = !c.os ? null : c.os.min && c.os.max ? `OS ${c.os.min}–${c.os.max}` : c.os.min ? `OS ≥ ${c.os.min}` : `OS ≤ ${c.os.max}`;
  if (c.devices === undefined) return `devices with ${os}`;
  const listed = `${c.devices} listed test device${c.devices === 1 ? "" : "s"}`;
  return os ? `${listed}, ${os}` : listed;
}

/** Who a patch goes to: its rollout percentage of its version's devices, or of the devices
 *  its conditions admit (a conditional patch never reaches a share of everyone). */
export function reach(p) {
  return p.conditions ? `${p.rollout === 100 ? "" : `${p.rollout} % of `}${conditionsText(p.conditions)}` : `${p.rollout} %`;
}

/** "patch 2 → 50 %, none → 50 %": the split of the devices no conditional patch admits
 *  (basis points shown as patchctl shows them). */
function splitText(served) {
  return served.map(s => `${s.patch === null ? "none" : `patch ${s.patch}`} → ${+(s.basisPoints / 100).toFixed(2)} %`).join(", ");
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
  const mine = patches.filter(p => p.appVersion === serving.appVersion && p.channel === serving.channel);
  const conditional = new Map(mine.filter(p => p.conditions).map(p => [p.patch, p]));
  // The headline names who gets what: each live conditional patch with the devices it is
  // for, then the patch every other device gets (the newest of the split).
  const headlines = serving.conditional.map(c => el("div", { class: "headline conditional" },
    link(route("apps", appName, "patches", serving.appVersion, c.patch), `patch ${c.patch}`),
    ` → ${conditional.has(c.patch) ? reach(conditional.get(c.patch)) : c.conditions}`));
  const everyone = serving.served.find(s => s.patch !== null)?.patch ?? null;
  const other = serving.conditional.length ? "every other device: " : "";
  headlines.push(el("div", { class: "headline" }, everyone === null ? el("span", { class: "muted" }, `${other}no live patch`)
    : [other, link(route("apps", appName, "patches", serving.appVersion, everyone), `patch ${everyone}`), " live"]));
  const live = serving.patches.filter(p => p.delivery === "live").map(p => p.patch);
  const newest = live.length ? Math.max(...live) : null;
  const figures = newest === null ? null : mine.find(p => p.patch === newest);
  return el("td", { class: "cell", "data-version": serving.appVersion, "data-channel": serving.channel },
    headlines,
    el("div", { class: "split" }, splitText(serving.served)),
    el("div", {}, serving.patches.filter(p => p.delivery !== "revoked").map(p => [pill(`${p.patch}: ${
      conditional.has(p.patch) ? reach(conditional.get(p.patch)) : `${p.rollout} %`} ${p.delivery}`, p.delivery), " "])),
    figures ? adoptionBars(figures.figures?.devices) : null,
    guardState(stats, serving),
    rollbackAction(appName, serving, patches));
}

/** The app versions devices checked for (issue 44), the most asked first: what a publish
 *  should name. A version devices ask for that has no patch says so; one with patches that no
 *  device asks for is not listed here, which is the point of looking. */
function askedSection(asked, versions) {
  const rows = asked.versions.map(v => el("tr", { "data-version": v.appVersion },
    el("th", { scope: "row" }, v.appVersion),
    el("td", { class: "num" }, String(v.checks)),
    el("td", {}, v.lastDay),
    el("td", { class: "muted" }, versions.includes(v.appVersion) ? "" : "no patch")));
  return el("section", { class: "card" },
    el("h2", {}, `Versions devices ask for (last ${asked.days} days)`),
    rows.length ? table(["Version", "Checks", "Last asked", ""], rows, { id: "asked" })
      : el("p", { class: "muted", id: "asked" }, `No device has checked for a version in the last ${asked.days} days.`));
}

/** "Published together (one change, audit seq 12): 2.3 patch 4, 2.3.1 patch 2 (production)":
 *  a publish to several versions, while a patch of it is active. */
function togetherLines(appName, together) {
  if (!together || !together.length) return null;
  return el("div", { id: "together" }, together.map(set => el("p", { class: "together", "data-seq": set.publishSeq },
    `Published together (one change, audit seq ${set.publishSeq}): `,
    set.patches.map((p, i) => [i ? ", " : "", link(route("apps", appName, "patches", p.appVersion, p.patch), `${p.appVersion} patch ${p.patch}`)]),
    ` (${set.channel})`)));
}

const productionFirst = (a, b) => (a === "production" ? -1 : b === "production" ? 1 : a.localeCompare(b));

/** The patches table, one tbody per version and channel (production first), newest patch
 *  first in each, every row with only the actions that apply to it. */
function patchTable(appName, versions, channels, patches) {
  const headers = ["Patch", "Rollout", "Delivery", "Installed / confirmed / rolled back", "Bytes", "SHA-256",
                   "Published", "Release notes", "Actions"];
  const order = [...new Set(versions.concat(patches.map(p => p.appVersion)))];
  const groups = [];
  for (const version of order) {
    for (const channel of [...new Set(patches.filter(p => p.appVersion === version).map(p => p.channel))].sort(productionFirst)) {
      groups.push([version, channel, patches.filter(p => p.appVersion === version && p.channel === channel).sort((a, b) => b.patch - a.patch)]);
    }
  }
  const row = p => el("tr", { "data-patch": `${p.appVersion}/${p.patch}` },
    el("td", { class: "patch" }, link(route("apps", appName, "patches", p.appVersion, p.patch), `patch ${p.patch}`)),
    el("td", { class: "num" }, el("span", { class: "rollout" }, `${p.rollout} %`),
      p.conditions ? [el("br"), el("span", { class: "muted reach" }, `of ${conditionsText(p.conditions)}`)] : null),
    el("td", {}, pill(p.delivery)),
    el("td", { class: "num" }, p.figures ? `${p.figures.devices.installed} / ${p.figures.devices.confirmed} / ${p.figures.devices.rolledBack}` : "—"),
    el("td", { class: "num" }, String(p.length)),
    el("td", {}, hash(p.sha256)),
    el("td", {}, when(p.publishedAt), el("br"), el("span", { class: "muted" }, p.publishedBy)),
    el("td", { class: "notes" }, p.message ?? ""),
    el("td", {}, patchActions(p, channels)));
  return labelled(el("table", { id: "patches" },
    el("thead", {}, el("tr", {}, headers.map(h => el("th", { scope: "col" }, h)))),
    groups.map(([version, channel, rows]) => el("tbody", { "data-group": `${version}/${channel}` },
      el("tr", { class: "group" }, el("th", { scope: "colgroup", colspan: headers.length }, `${version} · ${channel}`)),
      rows.map(row)))));
}

export async function appPage(appName) {
  const [{ status, patches, stats }, changes, asked] = await Promise.all([loadApp(appName), loadPending(appName), api.versions(appName)]);
  const versions = [...new Set(status.versions.map(v => v.appVersion))];
  const channels = [...new Set(status.versions.map(v => v.channel))].sort(productionFirst);
  const grid = versions.length === 0 ? el("p", { class: "muted" }, "Nothing published yet.") : el("div", { class: "grid" }, table(
    [el("th", { scope: "col" }, "Version"), ...channels.map(c => el("th", { scope: "col" }, c))],
    versions.map(version => el("tr", {}, el("th", { scope: "row" }, version), channels.map(channel => {
      const serving = status.versions.find(v => v.appVersion === version && v.channel === channel);
      return serving ? cell(appName, serving, patches, stats) : el("td", { class: "muted" }, "—");
    }))), { id: "matrix" }));
  const meta = Object.entries(status.metadata).map(([role, m]) => [role, `version ${m.version}, expires ${m.expires}`]);
  return [
    el("p", {}, link(route("apps"), "Apps"), " / ", appName),
    el("h1", {}, appName),
    pendingSection(appName, changes),
    el("section", { class: "card" }, el("h2", {}, "Signed metadata"), facts(meta)),
    askedSection(asked, versions),
    el("h2", {}, "Versions × channels"),
    grid,
    togetherLines(appName, status.together),
    el("h2", {}, "Patches"),
    patchTable(appName, versions, channels, patches),
  ];
}
