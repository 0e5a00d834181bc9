// Adoption as inline SVG, built element by element (no markup strings, no library).
import { el, svg } from "./dom.js";

export const EVENTS = [["installed", "installed"], ["confirmed", "confirmed"], ["rolledBack", "rolled back"]];

function legend() {
  return el("div", { class: "legend" }, EVENTS.map(([key, label]) =>
    el("span", {}, el("span", { class: `swatch ${key}` }), label)));
}

/** Devices that installed, confirmed and rolled back one patch, as three bars scaled to
 *  the largest of them; each bar has its figure as text for screen readers and tooltips. */
export function adoptionBars(devices, width = 220) {
  const counts = EVENTS.map(([key]) => Number(devices?.[key] ?? 0));
  const max = Math.max(1, ...counts);
  const row = 16, label = 70, bar = width - label - 44;
  const summary = EVENTS.map(([, name], i) => `${counts[i]} ${name}`).join(", ");
  const chart = svg("svg", { width, height: row * EVENTS.length, role: "img", "aria-label": `devices: ${summary}` },
    svg("title", {}, `devices: ${summary}`),
    EVENTS.map(([key, name], i) => svg("g", { transform: `translate(0 ${i * row})` },
      svg("text", { x: 0, y: 11 }, name),
      svg("rect", { class: "track", x: label, y: 2, width: bar, height: 10, rx: 2 }),
      svg("rect", { class: key, x: label, y: 2, width: Math.round(bar * counts[i] / max), height: 10, rx: 2 }),
      svg("text", { x: label + bar + 6, y: 11 }, String(counts[i])))));
  return el("div", { class: "bars" }, chart);
}

/** Events per hour of one patch, added up from its first hour: one line per event type. */
export function adoptionChart(hourly) {
  const hours = [...new Set(hourly.map(h => h.hour))].sort();
  if (hours.length === 0) return el("p", { class: "muted" }, "No device has reported on this patch yet.");
  const width = 640, height = 200, left = 44, right = 12, top = 10, bottom = 28;
  const totals = Object.fromEntries(EVENTS.map(([key]) => [key, 0]));
  const series = Object.fromEntries(EVENTS.map(([key]) => [key, []]));
  for (const hour of hours) {
    for (const entry of hourly.filter(h => h.hour === hour)) {
      for (const [key] of EVENTS) totals[key] += Number(entry.events?.[key] ?? 0);
    }
    for (const [key] of EVENTS) series[key].push(totals[key]);
  }
  const max = Math.max(1, ...EVENTS.map(([key]) => totals[key]));
  // Placed by time, so an hour without reports is a gap, not a step closer together.
  const times = hours.map(h => Date.parse(h));
  const span = times[times.length - 1] - times[0];
  const x = i => left + (span > 0 ? (times[i] - times[0]) / span : 0.5) * (width - left - right);
  const y = v => top + (height - top - bottom) * (1 - v / max);
  const summary = EVENTS.map(([key, name]) => `${totals[key]} ${name}`).join(", ");
  const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
                             "aria-label": `events over ${hours.length} hours: ${summary}` },
    svg("title", {}, `events over ${hours.length} hours: ${summary}`),
    svg("line", { class: "axis", x1: left, y1: y(0), x2: width - right, y2: y(0) }),
    svg("line", { class: "axis", x1: left, y1: top, x2: left, y2: y(0) }),
    svg("text", { x: left - 6, y: y(max) + 4, "text-anchor": "end" }, String(max)),
    svg("text", { x: left - 6, y: y(0) + 4, "text-anchor": "end" }, "0"),
    svg("text", { x: left, y: height - 8 }, hours[0]),
    hours.length > 1 ? svg("text", { x: width - right, y: height - 8, "text-anchor": "end" }, hours[hours.length - 1]) : null,
    EVENTS.map(([key]) => hours.length === 1
      ? svg("circle", { class: key, cx: x(0), cy: y(series[key][0]), r: 4 })
      : svg("polyline", { class: `line ${key}`, points: series[key].map((v, i) => `${x(i)},${y(v)}`).join(" ") })));
  return el("div", { class: "chart" }, chart, legend());
}
