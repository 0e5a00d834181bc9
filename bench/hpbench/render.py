"""The generated section of docs/BENCHMARKS.md: cells formatted from SPECS over a run's figures,
the goals evaluated, the document rewritten between its markers.
"""
import os
import string
import types

from .common import ratio
from .specs import SPECS, row_key


BEGIN = "<!-- bench.py render: begin (generated from bench/results/*.json; edit bench/bench.py, not this section) -->"
END = "<!-- bench.py render: end -->"


# -- rendering -------------------------------------------------------------------------------------

class Fmt(string.Formatter):
    def format_field(self, value, spec):
        if spec == "x":
            return "n/a" if value is None else f"{value:.2f}×"
        if value is None:
            return "?"
        if spec == "ms":
            return f"{value / 1000:.2f}"
        if spec == "b":
            return str(value).lower() if isinstance(value, bool) else str(value)
        return super().format_field(value, spec)


class Figures(types.SimpleNamespace):
    """A row's figures: one a run predates (a field added to the row since) renders as "?"."""
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return None


def ns(d):
    return Figures(**(d or {}))


def ratios_of(spec, h, r, c):
    def get(path):
        side, key = path.split(".")
        return getattr({"h": h, "r": r, "c": c}[side], key, None)
    x = {name: ratio(get(a), get(b)) for name, (a, b) in spec.get("ratios", {}).items()}
    if "main" in x and x["main"] is not None:
        x["aim"] = x["main"] / 1.3 * 100
    return types.SimpleNamespace(**x)


def cell(template, h, r, c, x):
    if callable(template):
        return template(h, r, c)
    return Fmt().format(template, h=h, r=r, c=c, x=x)


def evaluate_goals(spec, h, r, c, x):
    """[{text, met}]: met true/false, "Not measured", or null (no goal set)."""
    out = []
    for text, cond in spec.get("goals", []):
        met = None
        if cond is not None:
            try:
                met = cond(h, r, c, x)
            except TypeError:            # a figure is missing
                met = "Not measured"
        if met == "Not measured" and spec.get("goal_not_measured"):
            text = spec["goal_not_measured"]
        out.append({"text": cell(text, h, r, c, x), "met": met})
    return out


def rendered_row(rid, res):
    spec = SPECS[rid]
    h, r, c = ns(res.get("figures")), ns(res.get("reference")), ns(res.get("context"))
    x = ratios_of(spec, h, r, c)
    return [cell(spec["what"], h, r, c, x), cell(spec["hotpatch"], h, r, c, x), cell(spec["reference"], h, r, c, x), cell(spec["ratio"], h, r, c, x)]


def load_cell(load):
    if not load:
        return "—"
    text = f"{load['before'][0]:.2f} → {load['after'][0]:.2f}"
    return text + (" **noisy**" if load.get("noisy") else "")


def render(results):
    """The generated section of docs/BENCHMARKS.md from one or more runs' results."""
    rows, runs = {}, []
    for res in results:
        runs.append(res)
        for row in res["rows"]:
            rows[row["id"]] = dict(row, run=res["run"])
    last = runs[-1]
    m = last["machine"]
    out = ["# Benchmarks", "",
           f"Written by {' and '.join(f'`{r}`' for r in dict.fromkeys(res['command'] for res in runs))} (bench/bench.py); every figure below comes from the run{'s' if len(runs) > 1 else ''} described here, "
           "each row's reference measured in the same run as the row. Regenerate this section with "
           f"`python3 bench/bench.py render --doc docs/BENCHMARKS.md {' '.join(r.get('file', 'RESULTS.json') for r in runs)}`.", ""]
    for res in runs:
        prefix = f"- Run {res['run']}: " if len(runs) > 1 else "- "
        out.append(f"{prefix}Date: {res['started']}; command `{res['command']}`; source: commit {res['source']}; "
                   f"{res['seconds']:.0f} s; load average (1/5/15 min) {' '.join(map(str, res['load_start']))} at the start, "
                   f"{' '.join(map(str, res['load_end']))} at the end; results `{res.get('file', '?')}`")
    out += [f"- Machine: {m['nproc']} CPUs (`nproc`), {m['cpu']}, kernel {m['kernel']}, {m['mem_gb']} GB RAM",
            "- Other work on the machine shows up as noise in both columns alike, which is why every figure is a ratio against a "
            "reference measured in the same run. The load column is the 1-minute load average before → after the row's measurement; **noisy** marks a row "
            f"before which the rest of the machine kept more than {last.get('noisy_cores', 0.5)} of the {m['nproc']} cores busy "
            "(sampled for 1 s with nothing of ours running; the load average also counts our previous row for a minute).", "",
           "| what | hotpatch | reference | ratio | load |", "|---|---|---|---|---|"]
    goals, notes = [], []
    for rid in sorted(rows, key=row_key):
        res = rows[rid]
        if rid not in SPECS:
            continue
        if res["status"] != "ok":
            out.append(f"| {rid}. **{res['status']}**: {res.get('reason', '')} | — | — | — | — |")
            continue
        out.append("| " + " | ".join(rendered_row(rid, res) + [load_cell(res.get("load"))]) + " |")
        for g in res.get("goals", []):
            label = g["met"] if isinstance(g["met"], str) else {True: "Met", False: "Not met", None: "No goal set"}[g["met"]]
            goals.append(f"- **{label}**: {g['text']}")
        notes += [f"- {n}" for n in res.get("notes", [])]
    c9 = next((rows[r]["context"] for r in ("9a", "9b", "9c") if r in rows and rows[r].get("context")), {})
    if c9.get("reduced"):
        goals.append(f"- The three scale goals above were measured with a **reduced** registry ({c9['apps']} apps, {c9['patches']} patches), "
                     "not 1,000 apps × 20 × 5: see row 9 and the run notes.")
    if last.get("wrk_seconds", 5) != 5:
        notes.append(f"- **wrk ran {last['wrk_seconds']} s per run (BENCH_WRK_SECONDS), not the 5 s of `make bench`.**")
    tools = {}
    for res in runs:
        tools.update({k: v for k, v in res.get("tools", {}).items() if v})
    if tools:
        notes.append("- Tools: " + "; ".join(f"{k} {v}" for k, v in sorted(tools.items()) if v) + ".")
    out += ["", "## Goals", "", "From issues 5 and 13, each judged on the ratio measured above (reported, not asserted).", ""] + (goals or ["- (no row with a goal was measured)"])
    out += ["", "## Run notes", "", "What this run measured beside the table (the method of every row is in the Notes below).", ""] + (notes or ["- (none)"])
    return "\n".join(out) + "\n"


def write_doc(section, path):
    with open(path) as f:
        text = f.read()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
    else:
        head, tail = "", "\n" + text
    with open(path + ".tmp", "w") as f:
        f.write(f"{head}{BEGIN}\n{section}{END}{tail}")
    os.replace(path + ".tmp", path)


def markdown_table(section):
    return "\n".join(l for l in section.splitlines() if l.startswith("|")) + "\n"
