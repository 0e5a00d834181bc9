// The audit log, a page at a time, with the result of re-walking its hash chain.
import { api } from "./api.js";
import { el, table, link, route, when, pill, hash, facts } from "./dom.js";
import { state } from "./shell.js";

const PAGE = 50;

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

function details(value) {
  if (value === null || value === undefined) return "";
  if (typeof value !== "object") return String(value);
  return Object.entries(value).map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`).join(" · ");
}

export async function auditPage(after) {
  const page = await api.audit({ after, limit: PAGE });
  const rows = page.events.map(e => el("tr", { "data-seq": e.seq },
    el("td", { class: "num" }, String(e.seq)), el("td", {}, when(e.at)), el("td", {}, e.app),
    el("td", { class: "action" }, e.action), el("td", {}, e.actor), el("td", { class: "details" }, details(e.details)),
    el("td", {}, el("span", { class: "hash", title: e.hash }, e.hash.slice(0, 12) + "…"))));
  const pager = el("nav", { class: "pager", "aria-label": "Audit pages" },
    after > 0 ? link(route("audit"), "First page") : null,
    page.next !== undefined ? link(`${route("audit")}/after/${page.next}`, "Next page") : el("span", { class: "muted" }, "Last page"),
    el("span", { class: "muted" }, page.events.length ? `events ${page.events[0].seq}–${page.events[page.events.length - 1].seq}` : "no events"));
  return [
    el("h1", {}, "Audit log"),
    el("section", { class: "card", id: "chain" }, chainSummary(page.chain)),
    state.who.scope === "*" ? null : el("p", { class: "muted" }, `Events of ${state.who.scope} only (this token's scope).`),
    pager,
    table(["Seq", "At", "App", "Action", "Actor", "Details", "Hash"], rows, { id: "audit" }),
  ];
}
