// Building the DOM. Every string that came from the API goes in as a text node
// (textContent), never as markup: a release note holding <script> is shown, not run.

const SVG = "http://www.w3.org/2000/svg";

/** el("td", {class: "num"}, "42", child…): attributes are set one by one, children are
 *  nodes or text (null and false are skipped). */
export function el(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** The same for SVG elements (charts and bars). */
export function svg(tag, attrs = {}, ...children) {
  return build(document.createElementNS(SVG, tag), attrs, children);
}

function build(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else if (name === "text") node.textContent = String(value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replaces everything inside `node`. */
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

/** A definition list of [label, value] pairs; values may be nodes. */
export function facts(pairs) {
  return el("dl", { class: "facts" }, pairs.filter(p => p && p[1] !== undefined && p[1] !== null && p[1] !== "")
    .map(([label, value]) => [el("dt", {}, label), el("dd", {}, value)]));
}

export function table(headers, rows, attrs = {}) {
  return labelled(el("table", attrs,
    el("thead", {}, el("tr", {}, headers.map(h => typeof h === "string" ? el("th", { scope: "col" }, h) : h))),
    el("tbody", {}, rows)));
}

/** Gives every body cell its column's heading as data-label: on a narrow screen the table
 *  is laid out one cell under the other (console.css), each cell captioned with it. */
export function labelled(tableNode) {
  const headings = [...tableNode.querySelectorAll("thead th")].map(th => th.textContent);
  for (const row of tableNode.querySelectorAll("tbody tr")) {
    let column = 0;
    for (const cell of row.children) {
      if (cell.tagName === "TD" && headings[column]) cell.dataset.label = headings[column];
      column += cell.colSpan || 1;
    }
  }
  return tableNode;
}

export function pill(text, kind = text) {
  return el("span", { class: `pill ${kind}` }, text);
}

export function hash(text) {
  return el("span", { class: "hash" }, text);
}

/** "2026-12-01T12:00:00Z" as the reader's local time, the original in the tooltip. */
export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return el("time", { datetime: iso, title: iso }, date.toLocaleString());
}

export function link(href, ...children) {
  return el("a", { href }, children);
}

/** Path segments for a hash route, escaped so a name can never become part of the route. */
export function route(...segments) {
  return "#/" + segments.map(s => encodeURIComponent(String(s))).join("/");
}
