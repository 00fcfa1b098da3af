"""Where every goal of BENCHMARKS.md stands, from the newest measurement of each row across
the harness's results files (no GPU needed: it reads ``benchmarks/run.py``'s JSON):

    python benchmarks/standing.py                          # every run in benchmarks/results
    python benchmarks/standing.py --since 2026-12-03       # runs started that day or later
    python benchmarks/standing.py A.json B.json --out S.md # these runs only, written to S.md

A verdict is ``run.goal_checks``' verdict on one row (estimator, shape) of one run, so each of
its ratios was measured side by side in one process; for every row and goal the newest run
that gives that goal a verdict decides it (a run started later wins; runs without a start
time count as started at midnight of their date). Rows therefore come from different runs and
commits: the failing rows name theirs, and the table gives the oldest and newest run counted.
Only runs of float32 inputs without truncations (the goals' inputs) on the named GPU count,
and only the rows of BENCHMARKS.md's grids (``run.GRIDS``' classic, massive and long shapes:
96, 160 and 40 rows of the eight estimator forms; a shape of two grids, 4096 x 128 and
16384 x 128, counts in both) unless ``--all-rows`` asks for the others too (few rows, rows of
20 or 1000 steps, A/B shapes), which then count in a column of their own.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import run  # noqa: E402  (the goal checks themselves: one definition of the goals)

RESULTS = ROOT / "benchmarks" / "results"
CATEGORIES = ("classic", "massive", "long")


def load_run(path: Path) -> dict[str, Any] | None:
    """A results file of ``run.py`` as ``{"meta", "rows", "file"}``, or None for any other
    JSON (sweeps, probes, notes) or one that does not parse."""
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(d, dict) or not isinstance(d.get("meta"), dict) or not isinstance(d.get("rows"), list):
        return None
    if not all(isinstance(r, dict) and "candidates" in r and "shape" in r for r in d["rows"]):
        return None
    return {"meta": d["meta"], "rows": d["rows"], "file": path.name}


def started(meta: dict[str, Any]) -> str:
    """The run's start as an ISO time (``date`` at midnight for runs that did not record it)."""
    return str(meta.get("started") or f"{meta.get('date', '0000-00-00')}T00:00:00")


def counts(meta: dict[str, Any], gpu: str) -> bool:
    """Whether a run's rows are the goals' measurements: float32 inputs, no truncations, not
    the CPU smoke check, on a GPU whose name contains ``gpu``."""
    args = meta.get("args") if isinstance(meta.get("args"), dict) else {}
    return (gpu.lower() in str(meta.get("gpu", "")).lower()
            and not meta.get("truncations") and not args.get("truncations")
            and args.get("dtype", "fp32") == "fp32"
            and not args.get("smoke") and meta.get("grid") != "smoke")


def grids(shape: tuple[int, int]) -> list[str]:
    """The grids of BENCHMARKS.md (classic, massive, long) that hold a shape; ``["other"]``
    for none."""
    return [g for g in CATEGORIES if shape in run.GRIDS[g]] or ["other"]


def verdicts(runs: Iterable[dict[str, Any]], all_rows: bool = False) -> dict[tuple[str, str], dict[str, Any]]:
    """``(row, goal) -> verdict`` from the newest run that gives one (rows of the grids only,
    unless ``all_rows``); each verdict carries its run's file, commit, start and the row's
    grids (:func:`grids`)."""
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for rn in sorted(runs, key=lambda r: (started(r["meta"]), r["file"])):
        commit = (rn["meta"].get("git") or {}).get("commit", "?")
        for row in rn["rows"]:
            g = grids(tuple(row["shape"]))
            if g == ["other"] and not all_rows:
                continue
            for v in run.goal_checks([row]):
                best[(v["row"], v["goal"])] = {**v, "grids": g, "file": rn["file"], "commit": str(commit)[:10],
                                               "started": started(rn["meta"])}
    return best


def table(best: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    """Markdown: one line a goal, with the rows met of those measured in each grid."""
    goals: list[str] = []
    for (_, g), v in best.items():
        if g not in goals and not v.get("info"):
            goals.append(g)
    cols = [*CATEGORIES, "other"] if any("other" in v["grids"] for v in best.values()) else list(CATEGORIES)
    lines = ["| goal | " + " | ".join(cols) + " | runs counted |", "| --- |" + " --- |" * (len(cols) + 1)]
    for g in goals:
        vs = [v for (_, gg), v in best.items() if gg == g]
        cells = []
        for c in cols:
            in_c = [v for v in vs if c in v["grids"]]
            cells.append(f"{sum(v['pass'] for v in in_c)} of {len(in_c)}" if in_c else "—")
        span = sorted(v["started"][:10] for v in vs)
        lines.append(f"| {g} | " + " | ".join(cells) + f" | {span[0]} to {span[-1]} |")
    return lines


def misses(best: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    """Markdown: every counted verdict that fails, by goal, with the run that gave it."""
    lines: list[str] = []
    failed = sorted((v for v in best.values() if not v["pass"] and not v.get("info")),
                    key=lambda v: (v["goal"], v["grids"], v["row"]))
    goal = None
    for v in failed:
        if v["goal"] != goal:
            goal = v["goal"]
            lines += ["", f"### {goal}", "", "| row | grid | figure | run | commit |",
                      "| --- | --- | --- | --- | --- |"]
        lines.append(f"| {v['row']} | {', '.join(v['grids'])} | {v['shown']} | `{v['file']}` | `{v['commit']}` |")
    return lines


def report(runs: list[dict[str, Any]], gpu: str, all_rows: bool = False) -> str:
    """The whole markdown report of ``runs`` (those that count, see :func:`counts`)."""
    used = [r for r in runs if counts(r["meta"], gpu)]
    best = verdicts(used, all_rows)
    lines = [f"# Standing of the goals ({gpu}, newest verdict of each row and goal)", "",
             f"From {len(used)} runs of `benchmarks/run.py` (float32, no truncations); "
             "each verdict is one row of one run, measured side by side in one process"
             + ("; every row, on the grids or not." if all_rows else "; the rows of BENCHMARKS.md's grids."), ""]
    lines += table(best)
    lines += misses(best)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="*", help="results JSON files (default: every one in benchmarks/results)")
    p.add_argument("--since", default="", help="only runs started on or after this date (YYYY-MM-DD)")
    p.add_argument("--gpu", default="H200", help="only runs on a GPU whose name contains this (default H200)")
    p.add_argument("--all-rows", action="store_true", help="count the rows off BENCHMARKS.md's grids too")
    p.add_argument("--out", default="", help="write the report here instead of printing it")
    a = p.parse_args(argv)
    paths = [Path(f) for f in a.files] if a.files else sorted(RESULTS.glob("*.json"))
    runs = [r for r in (load_run(f) for f in paths) if r is not None]
    if a.since:
        runs = [r for r in runs if started(r["meta"]) >= a.since]
    text = report(runs, a.gpu, a.all_rows)
    if a.out:
        Path(a.out).write_text(text)
        print(f"wrote {a.out}")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
