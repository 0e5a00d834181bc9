// What every page shares: who is signed in, the notice line and the confirmation every
// publisher action goes through.
import { el, replace } from "./dom.js";
import { Pending } from "./api.js";

export const $ = id => document.getElementById(id);

/** Who is signed in: {id, name, role, scope} from /v1/whoami. */
export const state = { who: null };

export const canAct = appName =>
  state.who?.role === "publisher" && (state.who.scope === "*" || state.who.scope === appName);

/** The notice line: `kind` true (or "bad") for a refusal, "pending" for a change that waits
 *  for signatures (not a success: nothing of it is served). */
export function notice(text, kind = false) {
  const box = $("notice");
  box.textContent = text;
  box.classList.toggle("bad", kind === true || kind === "bad");
  box.classList.toggle("pending", kind === "pending");
  box.hidden = !text;
}

/** The command a key holder approves change `c` with, on the machine that holds the key:
 *  the console never holds a private key, so it never signs. */
export const approveCommand = c => `patchctl approve --app ${c.app} ${c.id} --key-file KEY.pem`;

/** "pending: waiting for 1 more signature (change 2) …": what a 202 answer means. */
export function pendingText(c) {
  const more = `${c.missing} more signature${c.missing === 1 ? "" : "s"}`;
  return `pending: waiting for ${more} (change ${c.id}): ${c.summary}. Nothing of it is served until ` +
    `${c.missing === 1 ? "a key holder approves" : "key holders approve"} it with ${approveCommand(c)}.`;
}

/** How the Confirm button looks: "danger" for what takes code away from devices (halt,
 *  revoke, rollback), "primary" for what gives more of it (a raise, resume, promote). */
export function confirmKind(kind) {
  $("confirm-ok").className = kind === "danger" ? "danger" : "primary";
}

/** Asks before changing anything: the dialog names what the action touches (`what`:
 *  [label, value] pairs such as app, version, channel, patch). `run` is called on Confirm;
 *  its error stays in the dialog, its success closes it and shows `done(result)`, and an
 *  answer that the change waits for signatures (api.js Pending) shows that instead. */
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
      // A 202: patchd stored the change for key holders to sign, it did not make it.
      if (result instanceof Pending) notice(pendingText(result.change), "pending");
      else notice(done(result));
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

