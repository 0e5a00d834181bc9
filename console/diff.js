// A unified diff of two scripts (Myers' O(ND) algorithm over lines), for the patch page.

const CONTEXT = 3;
const MAX_EDITS = 4000;

/** [{op: " " | "-" | "+", text}] turning `a` into `b`, or null past MAX_EDITS changes. */
export function lineEdits(a, b) {
  const n = a.length, m = b.length, max = n + m, offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace = [];
  for (let d = 0; d <= Math.min(max, MAX_EDITS); d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]) ? v[offset + k + 1] : v[offset + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) { x++; y++; }
      v[offset + k] = x;
      if (x >= n && y >= m) return backtrack(trace, a, b, offset, d);
    }
  }
  return null;
}

function backtrack(trace, a, b, offset, depth) {
  const edits = [];
  let x = a.length, y = b.length;
  for (let d = depth; d > 0; d--) {
    const v = trace[d], k = x - y;
    const down = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]);
    const prevK = down ? k + 1 : k - 1;
    const prevX = v[offset + prevK], prevY = prevX - prevK;
    while (x > prevX && y > prevY) edits.push({ op: " ", text: a[--x] }), y--;
    if (down) edits.push({ op: "+", text: b[--y] });
    else edits.push({ op: "-", text: a[--x] });
  }
  while (x > 0 && y > 0) edits.push({ op: " ", text: a[--x] }), y--;
  return edits.reverse();
}

function lines(text) {
  const out = text.split("\n");
  if (out.length && out[out.length - 1] === "") out.pop();
  return out;
}

/** Hunks as diff -u prints them: [{header, lines: [{op, text}]}]; [] when the scripts are
 *  the same, null when they differ too much to show here. */
export function unifiedHunks(oldText, newText) {
  const edits = lineEdits(lines(oldText), lines(newText));
  if (edits === null) return null;
  // Line numbers before each edit, in the old and the new script.
  const oldAt = [], newAt = [];
  let o = 1, n = 1;
  for (const edit of edits) {
    oldAt.push(o); newAt.push(n);
    if (edit.op !== "+") o++;
    if (edit.op !== "-") n++;
  }
  // Changed edits with CONTEXT lines around them; ranges that touch become one hunk.
  const ranges = [];
  edits.forEach((edit, i) => {
    if (edit.op === " ") return;
    const start = Math.max(0, i - CONTEXT), end = Math.min(edits.length, i + CONTEXT + 1);
    const last = ranges[ranges.length - 1];
    if (last && start <= last.end) last.end = end; else ranges.push({ start, end });
  });
  return ranges.map(({ start, end }) => {
    const part = edits.slice(start, end);
    const oldCount = part.filter(e => e.op !== "+").length, newCount = part.filter(e => e.op !== "-").length;
    const oldStart = oldCount ? oldAt[start] : oldAt[start] - 1, newStart = newCount ? newAt[start] : newAt[start] - 1;
    return { header: `@@ -${oldStart},${oldCount} +${newStart},${newCount} @@`, lines: part };
  });
}
