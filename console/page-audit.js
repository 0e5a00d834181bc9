// The audit log, a page at a time, with the result of re-walking its hash chain.
import { api } from "./api.js";
import { el, table, link, route, when, pill, hash, facts } from "./dom.js";
import { state } from "./shell.js";

/** Events per page the reader may pick; the first is the default. */
export const PAGE_SIZES = [50, 10, 200, 1000];

/** A page of events older than seq `before`, or (null) the newest page. */
const pageRoute = (before, limit) => `${route("audit")}${before === null ? "" : `/before/${before}`}/limit/${limit}`;

function chainSummary(chain) {
  if (!chain) return el("p", { class: "muted" }, "The chain was not checked.");
  if (chain.intact) {
    return facts([
      ["Chain", pill("intact", "intact")],
      ["Events", chain.events === undefined ? el("span", { class: "muted" }, "shown to a token for every app") : String(chain.events)],
      ["Head", chain.head ? hash(chain.head) : el("span", { class: "muted" }, "shown to a token for every app")],
    ]);
  }
  return facts([
    ["Chain", pill("BROKEN", "broken")],
    ["First bad event", chain.seq === undefined ? "—" : String(chain.seq)],
    ["Reason", chain.reason ?? "shown to a token for every app"],
  ]);
}

const short = id => `${String(id).slice(0, 12)}…`;

/** What a change.propose / approve / reject / supersede event (the two-person rule) says,
 *  in words: "change 2 (publish): … · 1 of 2 signatures (67c8d0577c61…) · …". */
function changeDetails(action, d) {
  const signed = Array.isArray(d.signedBy) ? d.signedBy : [];
  const parts = [`change ${d.id} (${d.kind}): ${d.summary}`,
    `${signed.length} of ${d.threshold} signatures of the ${d.role} keys${signed.length ? ` (${signed.map(short).join(", ")})` : ""}`];
  if (Array.isArray(d.approvedBy)) parts.push(`signed now by ${d.approvedBy.map(short).join(", ")}`);
  if (action === "change.approve" && signed.length >= d.threshold) parts.push("threshold met: the change was made");
  if (d.reason) parts.push(`${action === "change.supersede" ? "superseded" : "reason"}: ${d.reason}`);
  if (d.bundleSha256) parts.push(`bundle sha256 ${d.bundleSha256}`);
  return parts.join(" · ");
}

function details(value, action = "") {
  if (value === null || value === undefined) return "";
  if (typeof value !== "object") return String(value);
  if (action.startsWith("change.") && value.id !== undefined && value.summary !== undefined) return changeDetails(action, value);
  return Object.entries(value).map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`).join(" · ");
}

/** The log newest first, `limit` events at a time: `before` is the seq the page starts
 *  below (a decimal string, as the route holds it), null for the newest page. */
export async function auditPage(before, limit = PAGE_SIZES[0]) {
  if (!PAGE_SIZES.includes(limit)) limit = PAGE_SIZES[0];
  const page = await api.audit(before === null ? { limit } : { before, limit });
  const rows = page.events.map(e => el("tr", { "data-seq": e.seq },
    el("td", { class: "num" }, String(e.seq)), el("td", {}, when(e.at)), el("td", {}, e.app),
    el("td", { class: "action" }, e.action), el("td", {}, e.actor), el("td", { class: "details" }, details(e.details, e.action)),
    el("td", {}, el("span", { class: "hash", title: e.hash }, e.hash.slice(0, 12) + "…"))));
  const size = el("select", { id: "page-size", onchange: event => { location.hash = pageRoute(before, Number(event.target.value)); } },
    [...PAGE_SIZES].sort((a, b) => a - b).map(n => el("option", { value: n, selected: n === limit }, String(n))));
  const pager = el("nav", { class: "pager", "aria-label": "Audit pages" },
    before !== null ? link(pageRoute(null, limit), "Newest events") : null,
    page.next !== undefined ? link(pageRoute(page.next, limit), "Older events") : el("span", { class: "muted" }, "Oldest events"),
    el("span", { class: "muted", id: "page-range" }, page.events.length ? `events ${page.events[0].seq}–${page.events[page.events.length - 1].seq}, newest first` : "no events"),
    el("label", { for: "page-size" }, "Events per page"), size);
  return [
    el("h1", {}, "Audit log"),
    el("section", { class: "card", id: "chain" }, chainSummary(page.chain)),
    state.who.scope === "*" ? null : el("p", { class: "muted" }, `Events of ${state.who.scope} only (this token's scope).`),
    pager,
    table(["Seq", "At", "App", "Action", "Actor", "Details", "Hash"], rows, { id: "audit" }),
  ];
}
