// One patch: what was signed, by whom, its adoption over time and what it changed.
import { api, APIError } from "./api.js";
import { el, link, route, when, pill, hash, facts } from "./dom.js";
import { adoptionBars, adoptionChart } from "./charts.js";
import { patchActions } from "./actions.js";
import { loadApp, conditionsText } from "./page-app.js";
import { unifiedHunks } from "./diff.js";

/** Key IDs from the signed metadata: the targets role's keys in the newest root, and the
 *  key IDs of the signatures on the newest targets (which list every active patch). */
async function signingKeys(appName, status) {
  try {
    const [root, targets] = await Promise.all([
      api.metadata(appName, `${status.metadata.root.version}.root.json`),
      api.metadata(appName, `${status.metadata.targets.version}.targets.json`),
    ]);
    return {
      targetsRole: root.signed.roles.targets.keyids,
      targetsSignatures: targets.signatures.map(s => s.keyid),
      rootSignatures: root.signatures.map(s => s.keyid),
      targetsVersion: targets.signed.version,
    };
  } catch (e) {
    return { error: e.message };
  }
}

function keyList(ids) {
  return el("ul", {}, ids.map(id => el("li", {}, hash(id))));
}

async function diffSection(appName, patch, patches) {
  const previous = patches.filter(p => p.appVersion === patch.appVersion && p.channel === patch.channel && p.patch < patch.patch)
    .sort((a, b) => b.patch - a.patch)[0];
  const heading = el("h2", {}, previous ? `Diff against patch ${previous.patch}` : "Diff");
  if (!previous) return [heading, el("p", { class: "muted" }, `The first patch of ${patch.appVersion} on ${patch.channel}: nothing to compare with.`)];
  // patchd does not serve an encrypted app's scripts in the clear (409): not asked at all.
  if (patch.encrypted) {
    return [heading, el("p", { class: "muted" }, `${appName} is encrypted: patchd does not serve its scripts in the clear. ` +
      `Compare them with patchctl diff --app ${appName} --app-version ${patch.appVersion} ${previous.patch} ${patch.patch}, which holds the content key.`)];
  }
  let oldText, newText;
  try {
    [oldText, newText] = await Promise.all([api.script(appName, patch.appVersion, previous.patch), api.script(appName, patch.appVersion, patch.patch)]);
  } catch (e) {
    if (e instanceof APIError && e.status === 409) return [heading, el("p", { class: "muted" }, e.message)];
    throw e;
  }
  const hunks = unifiedHunks(oldText, newText);
  if (hunks === null) return [heading, el("p", { class: "muted" }, "The scripts differ in too many lines to show here; use patchctl diff.")];
  if (hunks.length === 0) return [heading, el("p", {}, "The scripts are identical.")];
  const css = { " ": "", "-": "del", "+": "add" };
  return [heading, el("pre", { class: "diff", id: "diff", tabindex: 0, "aria-label": `diff of patch ${previous.patch} and patch ${patch.patch}` },
    el("span", { class: "hunk" }, `--- patch ${previous.patch}`), el("span", { class: "hunk" }, `+++ patch ${patch.patch}`),
    hunks.map(h => [el("span", { class: "hunk" }, h.header), h.lines.map(l => el("span", { class: css[l.op] }, l.op + l.text))]))];
}

/** The script check the patch passed (or was released past) when it was released: its
 *  outcome, whether the app's native manifest was there, and each finding at its line. */
function checkSection(check) {
  const heading = el("h2", {}, "Script check");
  if (!check) {
    return el("section", { class: "card", id: "check" }, heading,
      el("p", { class: "muted" }, "Released before hotpatch checked scripts: no check is recorded."));
  }
  const outcome = {
    passed: check.native === "checked" ? "passed" : "passed (no native manifest: syntax and top level only)",
    warnings: `passed with ${check.warnings} warning${check.warnings === 1 ? "" : "s"}`,
    failed: `released past ${check.errors} error${check.errors === 1 ? "" : "s"} (--skip-check)`,
    unchecked: "not checked: the check could not run (--skip-check)",
  }[check.outcome] || check.outcome;
  const findings = check.findings.filter(f => f.severity !== "note" || check.outcome !== "passed");
  return el("section", { class: "card", id: "check" }, heading,
    facts([
      ["Outcome", el("span", { class: `check-${check.outcome}` }, outcome)],
      ["Checked", when(check.checkedAt)],
      ["Native manifest", check.native === "checked" ? ["SHA-256 ", hash(check.manifestSha256 || "")] : el("span", { class: "muted" }, "none stored for this version")],
      ["Skip reason", check.skipReason ? el("span", { class: "notes" }, check.skipReason) : null],
      ["Why unchecked", check.unavailable || null],
    ]),
    findings.length === 0 ? el("p", { class: "muted" }, "No findings.") :
      el("ul", { class: "findings" }, findings.map(f => el("li", { class: `finding ${f.severity}` },
        el("code", {}, f.line ? `main.js:${f.line}${f.column ? `:${f.column}` : ""}` : "main.js"), " ",
        el("strong", {}, f.severity), " ", f.message))));
}

export async function patchPage(appName, version, number) {
  const { status, patches, stats } = await loadApp(appName);
  const patch = patches.find(p => p.appVersion === version && String(p.patch) === number);
  if (!patch) throw new Error(`${appName} ${version} has no patch ${number}`);
  const channels = [...new Set(status.versions.map(v => v.channel))];
  const [keys, diff] = await Promise.all([signingKeys(appName, status), diffSection(appName, patch, patches)]);
  const origin = patch.promotedFrom;
  const hourly = stats.hourly.filter(h => h.appVersion === version && h.channel === patch.channel && String(h.patch) === number);
  const listed = patch.state === "active";
  return [
    el("p", {}, link(route("apps"), "Apps"), " / ", link(route("apps", appName), appName), " / ", `${version} patch ${number}`),
    el("h1", {}, `${appName} ${version} patch ${number}`),
    el("section", { class: "card", id: "patch-facts" }, facts([
      ["Channel", patch.channel],
      ["Delivery", pill(patch.delivery)],
      ["Rollout", [el("span", { class: "rollout" }, `${patch.rollout} %`), patch.conditions ? ` of ${conditionsText(patch.conditions)}` : ""]],
      ["Release notes", patch.message ? el("span", { class: "notes" }, patch.message) : el("span", { class: "muted" }, "none")],
      ["Published", [when(patch.publishedAt), " by ", patch.publishedBy]],
      ["Script size", `${patch.length} bytes`],
      ["SHA-256", hash(patch.sha256)],
      ["MD5", hash(patch.md5)],
      patch.encrypted ? ["Served (encrypted)", [`${patch.served.length} bytes, SHA-256 `, hash(patch.served.sha256), ", MD5 ", hash(patch.served.md5)]] : null,
      ["Target path", hash(patch.targetPath)],
      ["Promoted from", origin ? [link(route("apps", appName, "patches", version, origin.patch), `${origin.channel} patch ${origin.patch}`), " (SHA-256 ", hash(origin.sha256), ")"] : null],
      ["Delivery conditions", patch.conditions ? `only ${conditionsText(patch.conditions)}` : null],
      ["Revoked", patch.revokedAt ? [when(patch.revokedAt), " by ", patch.revokedBy, patch.revokeMessage ? `: ${patch.revokeMessage}` : ""] : null],
    ])),
    patchActions(patch, channels),
    checkSection(patch.check),
    el("section", { class: "card", id: "keys" }, el("h2", {}, "Signing keys"), keys.error
      ? el("p", { class: "error" }, `Cannot read the signed metadata: ${keys.error}`)
      : facts([
        ["Targets role (root)", keyList(keys.targetsRole)],
        [listed ? `Signed targets v${keys.targetsVersion} by` : "Not in the signed targets (revoked); current targets signed by", keyList(keys.targetsSignatures)],
        ["Root signed by", keyList(keys.rootSignatures)],
      ])),
    el("section", { class: "card" }, el("h2", {}, "Adoption"), adoptionBars(patch.figures?.devices, 320),
      el("h2", {}, "Over time (last 7 days, added up per hour)"), adoptionChart(hourly)),
    el("section", { class: "card" }, diff),
  ];
}
