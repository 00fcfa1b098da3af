"""Plot the episode-return CSVs of the example scripts, one curve per group of runs (seeds).

    python examples/plot_runs.py --out vtrace.png \\
        "V-trace=runs/impala_v_*.csv" "no correction=runs/impala_plain_*.csv"

Each argument is ``LABEL=GLOB``. A run's returns are averaged in bins of environment steps;
the curve is the mean over the group's runs, the band spans their min and max. Prints, per
group, the mean return over each run and over its last 100 episodes.
"""

from __future__ import annotations

import argparse
import csv
import glob

import numpy as np


def load(path: str) -> tuple[np.ndarray, np.ndarray]:
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return (np.array([float(r["global_step"]) for r in rows]), np.array([float(r["episode_return"]) for r in rows]))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("groups", nargs="+", help='"LABEL=GLOB" (quote the glob)')
    p.add_argument("--out", required=True, help="PNG to write")
    p.add_argument("--title", default="")
    p.add_argument("--bins", type=int, default=40)
    args = p.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for i, group in enumerate(args.groups):
        label, pattern = group.split("=", 1)
        runs = [load(f) for f in sorted(glob.glob(pattern))]
        runs = [r for r in runs if len(r[0])]
        if not runs:
            raise SystemExit(f"no CSV with episodes matches {pattern!r}")
        edges = np.linspace(0, max(r[0].max() for r in runs), args.bins + 1)
        centers = (edges[:-1] + edges[1:]) / 2
        curves = []
        for steps, rets in runs:
            idx = np.clip(np.searchsorted(edges, steps, side="right") - 1, 0, args.bins - 1)
            sums, counts = np.bincount(idx, rets, args.bins), np.bincount(idx, minlength=args.bins)
            curve = np.full(args.bins, np.nan)
            curve[counts > 0] = sums[counts > 0] / counts[counts > 0]
            curves.append(curve)
        curves = np.array(curves)
        ax.plot(centers, np.nanmean(curves, 0), color=f"C{i}", label=f"{label} ({len(runs)} runs)")
        ax.fill_between(centers, np.nanmin(curves, 0), np.nanmax(curves, 0), color=f"C{i}", alpha=0.2)
        whole = [r.mean() for _, r in runs]
        last = [r[-100:].mean() for _, r in runs]
        print(f"{label:30s} runs {len(runs)}  mean return over the run {np.mean(whole):8.1f} "
              f"(per run {', '.join(f'{x:.1f}' for x in whole)})  last 100 episodes {np.mean(last):8.1f} "
              f"(per run {', '.join(f'{x:.1f}' for x in last)})")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("episode return (binned)")
    ax.set_title(args.title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)


if __name__ == "__main__":
    main()
