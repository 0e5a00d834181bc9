// The apps overview: every app the token may read, with what each serves now.
import { api } from "./api.js";
import { el, table, link, route, when, pill } from "./dom.js";

export async function appsPage() {
  const apps = await api.apps();
  const statuses = await Promise.all(apps.map(a => api.status(a.app).catch(() => null)));
  const rows = apps.map((a, i) => {
    const versions = statuses[i]?.versions ?? [];
    return el("tr", {},
      el("td", {}, link(route("apps", a.app), a.app)),
      el("td", {}, a.encrypted ? pill("encrypted", "superseded") : "plaintext"),
      el("td", {}, versions.length === 0 ? el("span", { class: "muted" }, "nothing published")
        : el("ul", {}, versions.map(v => el("li", {}, `${v.appVersion} · ${v.channel}: ${v.summary}`)))),
      el("td", {}, when(a.createdAt), el("br"), el("span", { class: "muted" }, a.createdBy)));
  });
  return [
    el("h1", {}, "Apps"),
    apps.length === 0 ? el("p", {}, "This token may read no app.")
      : table(["App", "Scripts", "Serving now (version · channel)", "Created"], rows, { id: "apps" }),
  ];
}
