// What every page shares: who is signed in, the notice line and the confirmation every
// publisher action goes through.
import { el, replace } from "./dom.js";

export const $ = id => document.getElementById(id);

/** Who is signed in: {id, name, role, scope} from /v1/whoami. */
export const state = { who: null };

export const canAct = appName =>
  state.who?.role === "publisher" && (state.who.scope === "*" || state.who.scope === appName);

export function notice(text, bad = false) {
  const box = $("notice");
  box.textContent = text;
  box.classList.toggle("bad", bad);
  box.hidden = !text;
}

/** How the Confirm button looks: "danger" for what takes code away from devices (halt,
 *  revoke, rollback), "primary" for what gives more of it (a raise, resume, promote). */
export function confirmKind(kind) {
  $("confirm-ok").className = kind === "danger" ? "danger" : "primary";
}

/** Asks before changing anything: the dialog names what the action touches (`what`:
 *  [label, value] pairs such as app, version, channel, patch). `run` is called on Confirm;
 *  its error stays in the dialog, its success closes it and shows `done(result)`. */
export function confirmAction({ title, what, extra = null, confirmLabel = "Confirm", kind = "danger", run, done }) {
  const dialog = $("confirm");
  $("confirm-title").textContent = title;
  replace($("confirm-what"), what.map(([label, value]) => [el("dt", {}, label), el("dd", {}, String(value))]));
  replace($("confirm-extra"), extra);
  const error = $("confirm-error");
  error.hidden = true;
  const ok = $("confirm-ok"), cancel = $("confirm-cancel");
  ok.textContent = confirmLabel;
  confirmKind(kind);
  ok.disabled = false;
  const form = dialog.querySelector("form");
  const close = () => { dialog.close(); ok.onclick = null; cancel.onclick = null; form.onsubmit = null; };
  cancel.onclick = close;
  // Enter in a field of the dialog confirms (a dialog form would otherwise just close).
  form.onsubmit = event => { event.preventDefault(); if (!ok.disabled) ok.click(); };
  ok.onclick = async () => {
    ok.disabled = true;
    try {
      const result = await run();
      close();
      notice(done(result));
      window.dispatchEvent(new Event("hotpatch:changed"));
    } catch (e) {
      error.textContent = e.message;
      error.hidden = false;
      ok.disabled = false;
    }
  };
  dialog.showModal();
  (extra?.querySelector?.("input, select") || cancel).focus();
}

