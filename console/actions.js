// Publisher actions. Each opens a confirmation naming app, version, channel and patch; none
// is offered to an auditor (canAct), and patchd refuses them anyway.
import { api, APIError } from "./api.js";
import { el } from "./dom.js";
import { canAct, confirmAction, confirmKind } from "./shell.js";

function where(p) {
  return [["App", p.app], ["Version", p.appVersion], ["Channel", p.channel], ["Patch", p.patch],
          ["SHA-256", p.sha256]];
}

function button(action, label, p, onclick, kind = "") {
  return el("button", { type: "button", class: kind, "data-action": action,
                        "aria-label": `${label}: ${p.app} ${p.appVersion} ${p.channel} patch ${p.patch}`, onclick }, label);
}

/** The percentage field; with `from`, Confirm turns "danger" while the value would halt the
 *  patch (0 %) and stays "primary" for any other change. */
function percentField(id, value, from = null, required = true) {
  const oninput = from === null ? null : event => confirmKind(event.target.value.trim() === "0" ? "danger" : "primary");
  return el("div", {}, el("label", { for: id }, "Rollout (percent of devices, 0–100)"),
    el("input", { id, type: "number", min: 0, max: 100, step: 1, value, required, oninput,
                  placeholder: required ? "" : "as before the halt" }));
}

/** The percentage field, or undefined when it is left empty. */
function readOptionalPercent(id) {
  return document.getElementById(id).value.trim() === "" ? undefined : readPercent(id);
}

function readPercent(id) {
  const raw = document.getElementById(id).value.trim();
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n > 100) throw new Error("the rollout must be a whole number from 0 to 100");
  return n;
}

function reasonField(purpose) {
  return el("div", {}, el("label", { for: "confirm-message" }, purpose),
    el("input", { id: "confirm-message", type: "text", maxlength: 500 }));
}

const reason = () => document.getElementById("confirm-message").value.trim();

const rolloutDone = r => r.changed ? `${r.app} ${r.appVersion} patch ${r.patch}: rollout ${r.from} % → ${r.rollout} %`
  : `${r.app} ${r.appVersion} patch ${r.patch}: rollout unchanged at ${r.rollout} %`;

/** The buttons that apply to one patch, by its delivery: a live patch can have its rollout
 *  changed, be halted, revoked or promoted; a halted one resumed, revoked or promoted; a
 *  superseded one (every device already gets a newer patch) only revoked. None for a revoked
 *  patch or a token that may not publish. */
export function patchActions(p, channels = []) {
  if (!canAct(p.app) || p.state !== "active" || p.delivery === "revoked") return null;
  const buttons = [];
  if (p.delivery === "live") {
    buttons.push(button("rollout", "Change rollout", p, () => confirmAction({
      title: "Change the rollout", what: where(p).concat([["Rollout now", `${p.rollout} %`]]),
      extra: percentField("confirm-percent", p.rollout, p.rollout), confirmLabel: "Change rollout", kind: "primary",
      run: () => api.perform("rollout", p.app, { appVersion: p.appVersion, patch: p.patch, percent: readPercent("confirm-percent") }),
      done: rolloutDone,
    })));
    buttons.push(button("halt", "Halt", p, () => confirmAction({
      title: "Halt this patch (rollout 0 %; devices that have it keep it)", what: where(p).concat([["Rollout now", `${p.rollout} %`]]),
      extra: reasonField("Why (optional, kept in the audit log)"),
      confirmLabel: "Halt", kind: "danger",
      run: () => api.perform("halt", p.app, { appVersion: p.appVersion, patch: p.patch, message: reason() }), done: rolloutDone,
    }), "danger"));
  } else if (p.delivery === "halted") {
    buttons.push(button("resume", "Resume", p, () => confirmAction({
      title: "Resume this patch", what: where(p).concat([["Rollout now", "0 % (halted)"]]),
      extra: percentField("confirm-percent", "", 0, false), confirmLabel: "Resume", kind: "primary",
      // An empty field: back to the percentage the halt found (patchd's rule).
      run: () => api.perform("resume", p.app, { appVersion: p.appVersion, patch: p.patch, rollout: readOptionalPercent("confirm-percent") }),
      done: rolloutDone,
    }), "primary"));
  }
  buttons.push(button("revoke", "Revoke", p, () => confirmAction({
    title: "Revoke this patch", what: where(p),
    extra: reasonField("Why (optional, kept with the patch and in the audit log)"),
    confirmLabel: "Revoke", kind: "danger",
    run: () => revokeConfirming(p, reason()),
    done: revoked => `revoked ${p.app} ${p.appVersion} patch ${revoked.map(r => r.patch).join(", ")}`,
  }), "danger"));
  const targets = channels.filter(c => c !== p.channel);
  if (p.delivery !== "superseded" && (targets.length || p.channel !== "production")) {
    const options = [...new Set(targets.concat(p.channel !== "production" ? ["production"] : []))];
    buttons.push(button("promote", "Promote", p, () => confirmAction({
      title: "Promote this patch to another channel", what: where(p),
      extra: el("div", {}, el("label", { for: "confirm-to" }, "To channel"),
        el("select", { id: "confirm-to" }, options.map(c => el("option", { value: c }, c))),
        percentField("confirm-percent", 100)),
      confirmLabel: "Promote", kind: "primary",
      run: () => api.perform("promote", p.app, { appVersion: p.appVersion, from: p.channel, to: document.getElementById("confirm-to").value,
                                                 patch: p.patch, rollout: readPercent("confirm-percent") }),
      done: r => `promoted ${p.app} ${p.appVersion} ${p.channel} patch ${p.patch} to ${r.channel} as patch ${r.patch}`,
    })));
  }
  return el("div", { class: "actions" }, buttons);
}

/** A revoke; one patchd says would leave the version and channel serving no patch
 *  (`confirmation_required`, its message saying what devices would run) is asked about once
 *  more, and sent again with `confirm` only if the publisher says so. */
async function revokeConfirming(p, message) {
  const values = { appVersion: p.appVersion, patch: p.patch, message };
  try {
    return await api.perform("revoke", p.app, values);
  } catch (error) {
    if (!(error instanceof APIError) || error.code !== "confirmation_required") throw error;
    if (!window.confirm(`${error.message}.\n\nRevoke anyway?`)) throw new Error("not revoked: nothing was changed");
    return api.perform("revoke", p.app, { ...values, confirm: "true" });
  }
}

/** Reject of a change waiting for signatures (the two-person rule): it will never land.
 *  Approving is not offered: that is a signature, made where the key is (patchctl approve). */
export function rejectAction(c) {
  if (!canAct(c.app) || c.state !== "pending") return null;
  return el("button", { type: "button", class: "danger", "data-action": "reject", "aria-label": `Reject: ${c.app} change ${c.id}`,
    onclick: () => confirmAction({
      title: "Reject this change (it will never land)",
      what: [["App", c.app], ["Change", c.id], ["Kind", c.kind], ["What", c.summary], ["Proposed by", c.proposedBy],
             ["Signatures", `${c.signedBy.length} of ${c.threshold}`]],
      extra: reasonField("Why (optional, kept in the audit log)"), confirmLabel: "Reject", kind: "danger",
      run: () => api.reject(c.app, c.id, reason()),
      done: r => `rejected change ${r.id} of ${r.app} (${r.summary}): it will never land`,
    }) }, "Reject");
}

/** Rollback of one version and channel: patchd publishes an earlier patch's bytes again as
 *  the next patch, so the version always keeps a patch (a revoke of the newest live one
 *  could leave it with none). The earlier patches offered are the non-revoked ones older
 *  than the newest live patch and not holding its bytes; with none there is no rollback
 *  (revoke remains, on the patch's row). */
export function rollbackAction(appName, serving, patches) {
  if (!canAct(appName)) return null;
  const live = serving.patches.filter(x => x.delivery === "live").map(x => x.patch);
  if (!live.length) return null;
  const newest = Math.max(...live);
  const mine = patches.filter(x => x.appVersion === serving.appVersion && x.channel === serving.channel);
  const p = mine.find(x => x.patch === newest);
  if (!p) return null;
  const earlier = mine.filter(x => x.patch < newest && x.state === "active" && x.sha256 !== p.sha256).sort((a, b) => b.patch - a.patch);
  if (!earlier.length) return null;
  const label = n => `Roll back to patch ${n}`;
  const chosen = () => Number(document.getElementById("confirm-to-patch").value);
  const picker = el("div", {},
    el("label", { for: "confirm-to-patch" }, "Publish again the code of"),
    el("select", { id: "confirm-to-patch", onchange: () => { document.getElementById("confirm-ok").textContent = label(chosen()); } },
      earlier.map(x => el("option", { value: x.patch }, `patch ${x.patch} (${x.delivery}, ${x.rollout} %)`))),
    reasonField("Why (optional; becomes the new patch's release notes and goes into the audit log)"));
  return button("rollback", label(earlier[0].patch), p, () => confirmAction({
    title: "Roll back: publish an earlier patch's code as the next patch", what: where(p).concat([["Serving now", serving.summary]]),
    extra: picker, confirmLabel: label(earlier[0].patch), kind: "danger",
    run: () => api.perform("rollback", appName, { appVersion: p.appVersion, channel: p.channel, to: chosen(), expectPatch: newest, message: reason() }),
    done: r => `rolled back ${appName} ${p.appVersion} ${p.channel} to patch ${r.rolledBackTo?.patch ?? chosen()}: published as patch ${r.patch}`,
  }), "danger");
}
