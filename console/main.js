// The console's entry point: sign-in and the hash router.
import { api, session, APIError } from "./api.js";
import { el, replace } from "./dom.js";
import { $, state, notice } from "./shell.js";
import { appsPage } from "./page-apps.js";
import { appPage } from "./page-app.js";
import { patchPage } from "./page-patch.js";
import { auditPage } from "./page-audit.js";

function showSignIn(message = "") {
  $("page").hidden = true;
  $("nav").hidden = true;
  $("sign-out").hidden = true;
  $("who").textContent = "";
  $("sign-in").hidden = false;
  const error = $("sign-in-error");
  error.textContent = message;
  error.hidden = !message;
  $("token").focus();
}

/** Checks the stored token with /v1/whoami; false (and the sign-in form) when there is none
 *  or patchd refuses it. */
async function signedIn() {
  if (!session.token) { showSignIn(); return false; }
  if (state.who) return true;
  try {
    state.who = await api.whoami();
  } catch (e) {
    session.clear();
    showSignIn(e instanceof APIError && e.status === 401
      ? "patchd does not know this token (mistyped, or revoked). Check it and try again."
      : `Cannot sign in: ${e.message}`);
    return false;
  }
  $("who").textContent = `${state.who.name} · ${state.who.role} · ${state.who.scope === "*" ? "every app" : state.who.scope}`;
  $("sign-in").hidden = true;
  $("nav").hidden = false;
  $("sign-out").hidden = false;
  return true;
}

const pages = [
  [/^#\/apps\/([^/]+)\/patches\/([^/]+)\/([^/]+)$/, m => patchPage(m[1], m[2], m[3])],
  [/^#\/apps\/([^/]+)$/, m => appPage(m[1])],
  [/^#\/audit(?:\/before\/(\d+))?(?:\/limit\/(\d+))?$/, m => auditPage(m[1] ?? null, m[2] ? Number(m[2]) : undefined)],
  [/^#\/apps$/, () => appsPage()],
];

let rendering = 0;

export async function render() {
  const turn = ++rendering;
  if (!(await signedIn())) return;
  const hash = location.hash || "#/apps";
  const page = $("page");
  for (const [pattern, make] of pages) {
    const m = hash.match(pattern);
    if (!m) continue;
    const args = m.map((part, i) => (i === 0 || part === undefined ? part : decodeURIComponent(part)));
    try {
      const content = await make(args);
      if (turn !== rendering) return;
      replace(page, content);
      // Which route the content shows, set only once it is in (tests wait for it).
      page.dataset.route = hash;
    } catch (e) {
      if (turn !== rendering) return;
      if (e instanceof APIError && e.status === 401) { session.clear(); state.who = null; showSignIn("patchd no longer accepts this token; sign in again."); return; }
      replace(page, el("h1", {}, "Cannot show this page"), el("p", { class: "error", role: "alert" }, e.message));
    }
    page.hidden = false;
    document.title = `${page.querySelector("h1")?.textContent ?? "console"} · hotpatch`;
    return;
  }
  location.hash = "#/apps";
}

$("sign-in-form").addEventListener("submit", event => {
  event.preventDefault();
  const token = $("token").value.trim();
  $("token").value = "";
  if (!token) return;
  session.set(token);
  state.who = null;
  notice("");
  render();
});

$("sign-out").addEventListener("click", () => {
  session.clear();
  state.who = null;
  notice("");
  replace($("page"));
  showSignIn();
});

window.addEventListener("hotpatch:changed", () => render());
// A new page starts at the top, with the keyboard focus on it.
window.addEventListener("hashchange", () => { notice(""); render().then(() => { window.scrollTo(0, 0); $("main").focus({ preventScroll: true }); }); });
render();
