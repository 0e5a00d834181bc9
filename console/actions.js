// Publisher actions. Each opens a confirmation naming app, version, channel and patch; none
// is offered to an auditor (canAct), and patchd refuses them anyway.
import { api } from "./api.js";
import { el } from "./dom.js";
import { canAct, confirmAction } from "./shell.js";

function where(p) {
  return [["App", p.app], ["Version", p.appVersion], ["Channel", p.channel], ["Patch", p.patch],
          ["SHA-256", p.sha256]];
}

function button(action, label, p, onclick, kind = "") {
  return el("button", { type: "button", class: kind, "data-action": action,
                        "aria-label": `${label}: ${p.app} ${p.appVersion} ${p.channel} patch ${p.patch}`, onclick }, label);
}

function percentField(id, value) {
  return el("div", {}, el("label", { for: id }, "Rollout (percent of devices, 0–100)"),
    el("input", { id, type: "number", min: 0, max: 100, step: 1, value, required: true }));
}

function readPercent(id) {
  const raw = document.getElementById(id).value.trim();
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n > 100) throw new Error("the rollout must be a whole number from 0 to 100");
  return n;
}

const rolloutDone = r => r.changed ? `${r.app} ${r.appVersion} patch ${r.patch}: rollout ${r.from} % → ${r.rollout} %`
  : `${r.app} ${r.appVersion} patch ${r.patch}: rollout unchanged at ${r.rollout} %`;

/** The buttons for one patch (rollout, halt or resume, revoke, promote); none for a
 *  revoked patch or a token that may not publish. */
export function patchActions(p, channels = []) {
  if (!canAct(p.app) || p.state !== "active") return null;
  const buttons = [
    button("rollout", "Change rollout", p, () => confirmAction({
      title: "Change the rollout", what: where(p).concat([["Rollout now", `${p.rollout} %`]]),
      extra: percentField("confirm-percent", p.rollout), confirmLabel: "Change rollout",
      run: () => api.rollout(p.app, p.appVersion, p.patch, readPercent("confirm-percent")), done: rolloutDone,
    })),
  ];
  if (p.rollout > 0) {
    buttons.push(button("halt", "Halt", p, () => confirmAction({
      title: "Halt this patch (rollout 0 %)", what: where(p).concat([["Rollout now", `${p.rollout} %`]]),
      confirmLabel: "Halt", run: () => api.rollout(p.app, p.appVersion, p.patch, 0), done: rolloutDone,
    }), "danger"));
  } else {
    buttons.push(button("resume", "Resume", p, () => confirmAction({
      title: "Resume this patch", what: where(p).concat([["Rollout now", "0 % (halted)"]]),
      extra: percentField("confirm-percent", 100), confirmLabel: "Resume",
      run: () => api.rollout(p.app, p.appVersion, p.patch, readPercent("confirm-percent")), done: rolloutDone,
    }), "primary"));
  }
  buttons.push(button("revoke", "Revoke", p, () => confirmAction({
    title: "Revoke this patch", what: where(p),
    extra: el("div", {}, el("label", { for: "confirm-message" }, "Why (optional, kept with the patch and in the audit log)"),
      el("input", { id: "confirm-message", type: "text", maxlength: 500 })),
    confirmLabel: "Revoke",
    run: () => api.revoke(p.app, p.appVersion, p.patch, document.getElementById("confirm-message").value.trim()),
    done: revoked => `revoked ${p.app} ${p.appVersion} patch ${revoked.map(r => r.patch).join(", ")}`,
  }), "danger"));
  const targets = channels.filter(c => c !== p.channel);
  if (targets.length || p.channel !== "production") {
    const options = [...new Set(targets.concat(p.channel !== "production" ? ["production"] : []))];
    buttons.push(button("promote", "Promote", p, () => confirmAction({
      title: "Promote this patch to another channel", what: where(p),
      extra: el("div", {}, el("label", { for: "confirm-to" }, "To channel"),
        el("select", { id: "confirm-to" }, options.map(c => el("option", { value: c }, c))),
        percentField("confirm-percent", 100)),
      confirmLabel: "Promote",
      run: () => api.promote(p.app, p.appVersion, { from: p.channel, to: document.getElementById("confirm-to").value,
                                                     patch: p.patch, rollout: readPercent("confirm-percent") }),
      done: r => `promoted ${p.app} ${p.appVersion} ${p.channel} patch ${p.patch} to ${r.channel} as patch ${r.patch}`,
    })));
  }
  return el("div", { class: "actions" }, buttons);
}

/** Rollback of one version and channel: revokes the newest live patch, named in the dialog. */
export function rollbackAction(appName, serving, patches) {
  const newest = Math.max(...serving.patches.filter(x => x.delivery === "live").map(x => x.patch));
  const p = patches.find(x => x.appVersion === serving.appVersion && x.channel === serving.channel && x.patch === newest);
  if (!canAct(appName) || !p) return null;
  return button("rollback", "Roll back", p, () => confirmAction({
    title: "Roll back: revoke the newest live patch", what: where(p).concat([["Serving now", serving.summary]]),
    confirmLabel: "Roll back", run: () => api.revoke(appName, p.appVersion, p.patch, "rolled back from the console"),
    done: () => `rolled back ${appName} ${p.appVersion} ${p.channel}: revoked patch ${p.patch}`,
  }), "danger");
}
