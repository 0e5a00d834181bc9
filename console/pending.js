// Release changes waiting for signatures (the two-person rule): what each would sign, read
// from the metadata its key holders sign (`signed`, not the summary patchd wrote), who has
// signed and how a key holder approves it. The console holds no private key, so it never
// signs; a publisher may reject.
import { api } from "./api.js";
import { el, table, when, hash, facts } from "./dom.js";
import { approveCommand } from "./shell.js";
import { rejectAction } from "./actions.js";

/** A keyid as patchctl shortens it (the whole one in the tooltip). */
export const shortKey = id => el("span", { class: "hash", title: id }, `${id.slice(0, 12)}…`);

const keyList = ids => ids.length ? ids.map((id, i) => [i ? ", " : "", shortKey(id)]) : el("span", { class: "muted" }, "none");

/** The app's changes (all=true: the pending ones and the others), each pending one with the
 *  targets its role lists now (`current`, from the role's stored metadata, the version below
 *  the one to be signed; null when that cannot be read), to say what a signature changes. */
export async function loadPending(appName) {
  const changes = await api.pending(appName, { all: true });
  await Promise.all(changes.filter(c => c.state === "pending" && c.signed?.targets).map(async c => {
    c.current = null;
    const stored = c.signed.version - 1;
    if (!(stored >= 1)) { c.current = {}; return; }
    try {
      c.current = (await api.metadata(appName, `${stored}.${c.role}.json`)).signed.targets ?? {};
    } catch { /* shown without the comparison */ }
  }));
  return changes;
}

/** What the change's metadata would list, each target against what its role lists now (new,
 *  its rollout or bytes changed, unchanged), then what it would list no more (a revoke, or
 *  patches older than a new full rollout, which no device can be given any more). */
function targetRows(c) {
  const next = c.signed?.targets ?? {}, now = c.current;
  const row = (path, entry, what) => el("tr", { class: what === "unchanged" ? "muted" : "changed", "data-path": path },
    el("td", { class: "path" }, path), el("td", {}, hash(entry.hashes?.sha256 ?? "?")),
    el("td", { class: "num" }, entry.custom?.rollout === undefined ? "—" : `${entry.custom.rollout} %`), el("td", { class: "what" }, what));
  const rows = Object.keys(next).sort().map(path => {
    const entry = next[path] ?? {}, before = now?.[path];
    const rollout = entry.custom?.rollout, was = before?.custom?.rollout;
    const what = now === null ? "—" : !before ? "new" : before.hashes?.sha256 !== entry.hashes?.sha256 ? "other bytes"
      : was !== rollout ? `rollout ${was ?? "—"} % → ${rollout ?? "—"} %` : "unchanged";
    return row(path, entry, what);
  });
  for (const path of Object.keys(now ?? {}).filter(path => !(path in next)).sort()) {
    rows.push(row(path, now[path], "no longer listed"));
  }
  return rows;
}

function changeCard(c) {
  const signatures = `${c.signedBy.length} of ${c.threshold} signature${c.threshold === 1 ? "" : "s"}`;
  const waitingFor = c.keyids.filter(id => !c.signedBy.includes(id));
  const rows = targetRows(c);
  return el("article", { class: "change", "data-change": c.id },
    el("h3", {}, `Change ${c.id}: ${c.summary}`),
    facts([
      ["Proposed", [when(c.proposedAt), " by ", c.proposedBy]],
      ["Signatures", [el("span", { class: "signatures" }, signatures), ` of the ${c.role} keys; signed by `, el("span", { class: "signed-by" }, keyList(c.signedBy))]],
      ["Still to sign", [`${c.missing} more of `, keyList(waitingFor)]],
      ["Bundle SHA-256", c.bundleSha256 ? el("span", { class: "hash bundle" }, c.bundleSha256) : null],
      ["Release notes", c.change?.message ?? null],
      ["Metadata", c.signed ? `${c.role} version ${c.signed.version}, expires ${c.signed.expires}` : null],
      ["Approve", el("code", { class: "approve" }, approveCommand(c))],
    ]),
    rows.length ? table(["Target the signature covers", "SHA-256", "Rollout", "Change"], rows, { class: "targets" })
      : el("p", { class: "muted" }, "The metadata to be signed lists no target."),
    el("div", { class: "actions" }, rejectAction(c)));
}

/** The app's "Waiting for signatures" section, from loadPending: each pending change in
 *  full, the others counted. Null for an app that never had one. */
export function pendingSection(appName, changes) {
  if (!changes.length) return null;
  const waiting = changes.filter(c => c.state === "pending");
  const past = {};
  for (const c of changes) if (c.state !== "pending") past[c.state] = (past[c.state] ?? 0) + 1;
  const earlier = Object.entries(past).map(([state, n]) => `${n} ${state}`).join(", ");
  return el("section", { class: "card", id: "pending" },
    el("h2", {}, "Waiting for signatures"),
    el("p", {}, "These release changes need more signatures by the keys of their role before patchd makes them; " +
      "nothing of them is served until then. A key holder approves one on the machine that holds the key, with ",
      el("code", {}, `patchctl approve --app ${appName} ID --key-file KEY.pem`),
      ` (against this patchd: add --server ${location.origin} and a publisher token in HOTPATCH_TOKEN). ` +
      "The console never holds private keys, so it does not sign."),
    waiting.length ? waiting.map(changeCard) : el("p", { class: "muted none" }, "Nothing is waiting for signatures."),
    earlier ? el("p", { class: "muted" }, `Earlier changes: ${earlier} (patchctl pending --app ${appName} --all).`) : null);
}
