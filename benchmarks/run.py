"""Side-by-side benchmark of rltriton against the streaming floor and its peers (BENCHMARKS.md).

    python benchmarks/run.py --grid quick --out DIR          # on the GPU
    python benchmarks/run.py --smoke --out /tmp/bench_smoke  # CPU, harness check only

For every estimator and shape: fresh random inputs; every candidate's output checked against
the float64 oracle before its time counts (a wrong candidate is timed and flagged); then the
candidates are timed interleaved (floor, rltriton, peers, floor, rltriton, peers, ...) for
``--rounds`` rounds, keeping the minimum of each figure: the full call (common.full_call_us)
and the device time (common.device_time_us, CUDA-graph replay). Results go to
``<out>/<date>-<gpu>-<grid>[-trunc].{json,md}`` and ``...-<estimator>.png``; the JSON and
markdown are rewritten after every row, so a run cut short still leaves its figures.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import math
import os
import platform
import re
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# The bandwidth floor is bytes / the copy bandwidth measured at the start of each run
# (copy_bandwidth: a 1 GiB device-to-device copy, far beyond the H200's 50 MB L2). This is
# what runs before that measurement existed recorded (an H200's, assumed), kept for them.
HBM_BYTES_PER_S = 4.3e12
COPY_BW: dict[str, float] = {"B_per_s": HBM_BYTES_PER_S}

GRIDS: dict[str, list[tuple[int, int]]] = {
    "classic": [(64, 512), (128, 1024), (256, 1024), (512, 128), (512, 512), (512, 2048), (512, 4096),
                (4096, 128), (4096, 512), (4096, 2048), (16384, 128), (16384, 512)],
    "massive": [(n, t) for n in (4096, 8192, 16384, 32768) for t in (8, 16, 32, 64, 128)],
    "long": [(64, 65536), (16, 131072), (16, 262144), (1, 1048576), (1, 4194304)],
    "quick": [(4096, 128), (16384, 512), (512, 4096), (32768, 8), (32768, 64), (16, 262144), (1, 1048576)],
    # rows too few to fill the GPU, of 8192-131072 steps (one environment's long rollout):
    # outside BENCHMARKS.md's grid, split in time since session 14
    "fewrows": [(1, 8192), (1, 32768), (1, 131072), (8, 16384), (32, 8192), (128, 8192)],
}
SMOKE_SHAPES = [("classic", (4, 16)), ("massive", (16, 8)), ("long", (2, 300))]
LONG_GOAL_SHAPES = {(16, 262144), (1, 1048576)}
PEERS = ("torch.compile", "torchrl", "cleanrl", "rl-triton", "pufferlib")
COLORS = {"rltriton": "C0", "rltriton[torch]": "C1", "rltriton(lp)": "C9", "rltriton(bare)": "C7", "rltriton(tm)": "C8",
          "torch.compile": "C2", "torchrl": "C4", "cleanrl": "C3", "rl-triton": "C6", "pufferlib": "C5"}


def category(shape: tuple[int, int]) -> str:
    """classic / massive / long, for the goal checks (a shape of two grids counts as classic)."""
    if shape in GRIDS["long"] or shape[1] > 16384:
        return "long"
    if shape in GRIDS["classic"]:
        return "classic"
    if shape in GRIDS["massive"]:
        return "massive"
    return "classic"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--grid", default="quick", help="comma list of classic,massive,long,quick,fewrows (default quick)")
    p.add_argument("--shapes", default="", help="these shapes instead of the grid's, e.g. 4096x128,16x262144")
    p.add_argument("--estimators", default="all",
                   help="comma list of gae,td_lambda,discounted_returns,vtrace,retrace,retrace_av,traces,prefix_sum "
                        "or all (retrace_av: the action form, 4 actions)")
    p.add_argument("--peers", default="all", help=f"comma list of {','.join(PEERS)} or all / none")
    p.add_argument("--compile-for", default="gae,retrace,retrace_av",
                   help="estimators that get the torch.compile doubling-scan peer "
                        "(default gae,retrace,retrace_av; 'all')")
    p.add_argument("--truncations", action="store_true", help="add 5%% truncations with bootstrap_values")
    p.add_argument("--torch-backend", action="store_true", help="also time rltriton's torch backend")
    p.add_argument("--time-major", action="store_true",
                   help="also time rltriton on time-major [T, N] storage (time_dim=0), CleanRL's layout")
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--lam", type=float, default=0.95)
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds (min over rounds is kept)")
    p.add_argument("--calls", type=int, default=50, help="calls per trial of the full-call figure")
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--graph-calls", type=int, default=50, help="calls captured per CUDA graph")
    p.add_argument("--native", choices=("build", "prebuilt", "off"), default="build",
                   help="rltriton's compiled replay of repeated calls (rltriton.kernels.native): build it when "
                        "missing and use it (build, the default), use it only if already built (prebuilt), or not "
                        "(off)")
    p.add_argument("--max-minutes", type=float, default=9.0,
                   help="stop starting new rows after this long (results so far are written)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"), help="output folder")
    p.add_argument("--tag", default="", help="extra suffix for the output file names")
    p.add_argument("--dtype", default="fp32", choices=("fp32", "bf16", "fp16"),
                   help="dtype of every floating-point input (outputs stay float32; the oracle reads the "
                        "rounded inputs in float64)")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--from-json", default="", metavar="PATH",
                   help="only re-render the markdown and plots of an earlier run's JSON (next to it, or in --out)")
    p.add_argument("--commit", default="",
                   help="the commit to record instead of git's (the GPU machine's copy of the tree may carry "
                        "a stale .git: pass the SHA of the tree sent); with --from-json, corrects an earlier "
                        "run's record")
    p.add_argument("--smoke", action="store_true",
                   help="CPU harness check: tiny shapes, TRITON_INTERPRET=1, perf_counter timing")
    return p.parse_args(argv)


# imported (the goal checks' tests), the module takes the default arguments, not the importer's
ARGS = parse_args(None if __name__ == "__main__" else [])
if ARGS.smoke:
    # before anything imports triton kernels: the interpreter runs them on CPU tensors
    os.environ["TRITON_INTERPRET"] = "1"
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import triton  # noqa: E402

import rltriton as rt  # noqa: E402
from benchmarks import common  # noqa: E402
from benchmarks import peers as P  # noqa: E402

# --------------------------------------------------------------------------------------------
# Environment
# --------------------------------------------------------------------------------------------


def source_digest() -> str:
    """sha256 (12 hex digits) of the package's Python sources (sorted paths and bytes): names
    the code that ran even where the machine's git metadata is stale or absent (the GPU
    machine's copy of the tree may carry an older .git). Run it at a commit to match."""
    h = hashlib.sha256()
    for f in sorted((ROOT / "rltriton").rglob("*.py")):
        h.update(str(f.relative_to(ROOT)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


def git_commit() -> dict[str, Any]:
    info: dict[str, Any] = {"source_digest": source_digest()}
    if ARGS.commit:
        info.update(commit=ARGS.commit, source="--commit")
        return info
    try:
        info["commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                        check=True, timeout=10).stdout.strip()
        st = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                            capture_output=True, text=True, timeout=10).stdout
        info["dirty_files"] = [ln[3:] for ln in st.splitlines() if ln.strip()]
        return info
    except Exception:  # noqa: BLE001 - no git binary, or no repository: read .git by hand
        pass
    head = ROOT / ".git" / "HEAD"
    try:
        h = head.read_text().strip()
        if h.startswith("ref:"):
            ref = h.split(None, 1)[1]
            f = ROOT / ".git" / ref
            if f.exists():
                info["commit"] = f.read_text().strip()
            else:
                packed = ROOT / ".git" / "packed-refs"
                for ln in packed.read_text().splitlines() if packed.exists() else []:
                    if ln.endswith(" " + ref):
                        info["commit"] = ln.split()[0]
            info.setdefault("commit", f"unknown ({ref})")
        else:
            info["commit"] = h
        info["source"] = ".git/HEAD"
    except Exception:  # noqa: BLE001
        info["commit"] = "unknown (no git, no .git/HEAD)"
    return info


def gpu_name() -> str:
    if ARGS.smoke or not torch.cuda.is_available():
        return "cpu-" + (platform.processor() or platform.machine() or "host")
    return torch.cuda.get_device_name(0)


def slug(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-")


def versions() -> dict[str, Any]:
    v: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "triton": triton.__version__,
        "rltriton": getattr(rt, "__version__", "?"),
        "platform": platform.platform(),
    }
    for mod in ("torchrl", "tensordict", "pufferlib", "matplotlib"):
        try:
            m = __import__(mod)
            v[mod] = getattr(m, "__version__", "?")
        except Exception:  # noqa: BLE001
            v[mod] = None
    return v


# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------


def sync() -> None:
    if not ARGS.smoke:
        torch.cuda.synchronize()


def one_call_us(fn) -> float:
    """Wall time of one warm call. The first call is not timed: for the floor it is the
    first call at all (its Triton compile), and a compile-length time here made the plan
    treat it as slow (one call per CUDA graph, so graph-launch latency counted as device
    time: a 12-19 us floor for 2.6 us of work in the first row of a run)."""
    fn()
    sync()
    a = time.perf_counter()
    fn()
    sync()
    return (time.perf_counter() - a) * 1e6


def copy_bandwidth() -> float:
    """Bytes per second of a device-to-device copy (each byte read and written counts), the
    best of 5 timings of 10 copies of 1 GiB: DRAM bandwidth, not L2's. With --smoke, a
    64 MiB copy on the CPU."""
    n = (1 << 24) if ARGS.smoke else (1 << 28)  # float32 elements
    dev = "cpu" if ARGS.smoke else "cuda"
    x = torch.ones(n, device=dev)
    y = torch.empty_like(x)
    y.copy_(x)
    sync()
    best = float("inf")
    for _ in range(5):
        if ARGS.smoke:
            a = time.perf_counter()
            for _ in range(10):
                y.copy_(x)
            t = (time.perf_counter() - a) / 10
        else:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(10):
                y.copy_(x)
            end.record()
            end.synchronize()
            t = start.elapsed_time(end) / 1e3 / 10
        best = min(best, t)
    del x, y
    if not ARGS.smoke:
        torch.cuda.empty_cache()
    return 2 * n * 4 / best


def plan(t0_us: float) -> dict[str, int]:
    """Timing effort for a candidate whose single call takes ``t0_us``: the BENCHMARKS.md
    protocol for anything under 2 ms, fewer calls (noted in the results) for slow ones."""
    if ARGS.smoke:
        return {"calls": 2, "trials": 1, "warmup": 0, "graph_calls": 0, "rounds": min(ARGS.rounds, 2)}
    if t0_us < 2000:
        return {"calls": ARGS.calls, "trials": ARGS.trials, "warmup": ARGS.warmup,
                "graph_calls": ARGS.graph_calls, "rounds": ARGS.rounds}
    calls = max(3, min(ARGS.calls, int(3e5 / t0_us)))
    return {"calls": calls, "trials": 2, "warmup": 2, "graph_calls": max(1, min(ARGS.graph_calls, int(1e5 / t0_us))),
            "rounds": 1 if t0_us > 2e4 else ARGS.rounds}


def full_us(fn, pl: dict[str, int]) -> float:
    if ARGS.smoke:
        return common.perf_counter_us(fn, calls=pl["calls"], trials=pl["trials"], warmup=pl["warmup"])
    return common.full_call_us(fn, calls=pl["calls"], trials=pl["trials"], warmup=pl["warmup"])


def device_us(fn, pl: dict[str, int]) -> float:
    return common.device_time_us(fn, graph_calls=pl["graph_calls"])


# --------------------------------------------------------------------------------------------
# One row: an estimator at one shape
# --------------------------------------------------------------------------------------------


class Entry:
    """A timed call (a candidate or the floor) and its figures."""

    def __init__(self, name: str, fn, capturable: bool, note: str = "") -> None:
        self.name, self.fn, self.capturable = name, fn, capturable
        self.notes = [note] if note else []
        self.full: float | None = None
        self.device: float | None = None
        self.plan: dict[str, int] | None = None
        self.check: dict[str, Any] | None = None
        self.error: str | None = None
        self.rounds_done = 0

    def record(self) -> dict[str, Any]:
        d = {"full_us": self.full, "device_us": self.device, "notes": self.notes, "plan": self.plan,
             "rounds": self.rounds_done}
        if self.check is not None:
            d.update({"ok": self.check["ok"], "max_abs_err": self.check["max_abs_err"], "check": self.check})
        if self.error:
            d["error"] = self.error
        return d


def short_exc(exc: BaseException) -> str:
    s = f"{type(exc).__name__}: {exc}"
    return s if len(s) < 400 else s[:400] + " ..."


def build_candidates(est: str, ro: P.Rollout, status: dict[str, tuple[bool, str]]) -> tuple[list[P.Candidate],
                                                                                           dict[str, str]]:
    backend = "triton"
    cands: list[P.Candidate] = [P.rltriton_candidate(ro, backend)]
    skipped: dict[str, str] = {}
    if ARGS.torch_backend or ARGS.smoke:
        cands.append(P.rltriton_candidate(ro, "torch", name="rltriton[torch]"))
    if ARGS.time_major or ARGS.smoke:
        cands.append(P.rltriton_time_major_candidate(ro, backend if not ARGS.smoke else "torch"))
    if est == "vtrace":
        cands.append(P.rltriton_logp_candidate(ro, backend))
    compile_for = P.ESTIMATORS if ARGS.compile_for == "all" else tuple(ARGS.compile_for.split(","))

    def compiled() -> P.Candidate:
        if est not in compile_for:
            raise P.Skip(f"not in --compile-for ({ARGS.compile_for})")
        return P.torch_compile_candidate(ro)

    makers = {
        "torch.compile": compiled,
        "torchrl": lambda: P.torchrl_candidate(ro),
        "cleanrl": lambda: P.cleanrl_candidate(ro),
        "rl-triton": lambda: P.rl_triton_candidate(ro),
        "pufferlib": lambda: P.pufferlib_candidate(ro),
    }
    for name in selected_peers():
        ok, why = status.get(name, (True, ""))
        if not ok:
            skipped[name] = why
            continue
        try:
            cands.append(makers[name]())
        except P.Skip as s:
            skipped[name] = str(s)
        except Exception as exc:  # noqa: BLE001
            skipped[name] = "adapter failed: " + short_exc(exc)
    return cands, skipped


def selected_peers() -> list[str]:
    if ARGS.peers == "none":
        return []
    if ARGS.peers == "all":
        return list(PEERS)
    return [p for p in ARGS.peers.split(",") if p]


def run_row(est: str, shape: tuple[int, int], cat: str, status, seed: int) -> dict[str, Any]:
    N, T = shape
    dev = "cpu" if ARGS.smoke else "cuda"
    row: dict[str, Any] = {"estimator": est, "shape": [N, T], "category": cat, "truncations": ARGS.truncations,
                           "candidates": {}, "skipped": {}, "errors": []}
    t_start = time.perf_counter()
    ro = P.make_rollout(est, N, T, device=dev, truncations=ARGS.truncations, gamma=ARGS.gamma, lam=ARGS.lam,
                        seed=seed)
    if ARGS.dtype != "fp32":
        dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[ARGS.dtype]
        ro.t = {k: (v.to(dt) if v.is_floating_point() else v) for k, v in ro.t.items()}
        if "log_pi_target" in ro.t:
            # the log-probs candidate subtracts the cast log-probs: the oracle must read the
            # same log_rhos (the cast of the float32 difference differs by a rounding)
            ro.t["log_rhos"] = ro.t["log_pi_target"] - ro.t["log_pi_behavior"]
    oracle = "torch64" if cat == "long" else "reference"
    row["oracle"] = {"reference": "rt.reference (float64, CPU)",
                     "torch64": "rltriton torch backend in float64 on the device"}[oracle]
    ref = P.reference_outputs(ro, oracle)
    row["oracle_s"] = round(time.perf_counter() - t_start, 3)

    # floor: reads our per-step inputs, writes as many float32 [N, T] outputs as we return
    ins = P.floor_io(ro)
    outs = [torch.empty(N, T, device=dev) for _ in P.OUTPUT_NAMES[est]]
    nbytes = sum(x.numel() * x.element_size() for x in ins + outs)
    row["bytes"] = nbytes
    row["floor_inputs"] = [f"{tuple(x.shape)} {str(x.dtype).replace('torch.', '')}" for x in ins]
    row["bw_floor_us"] = nbytes / COPY_BW["B_per_s"] * 1e6
    entries = [Entry("floor", common.stream_floor(ins, outs), True, "streaming Triton kernel, same bytes")]

    cands, skipped = build_candidates(est, ro, status)
    row["skipped"] = skipped
    for c in cands:
        e = Entry(c.name, c.fn, c.capturable and not ARGS.smoke, c.note)
        if not c.capturable:
            e.notes.append("device = None: not CUDA-graph capturable")
        try:
            result = c.fn()  # first call: JIT/compile, then the correctness check
            sync()
            e.check = P.check(c.outputs(result), ref, T)
            del result
        except Exception as exc:  # noqa: BLE001
            e.error = "first call failed: " + short_exc(exc)
            row["errors"].append(f"{c.name}: {e.error}")
            row["candidates"][c.name] = e.record()
            _recover()
            continue
        entries.append(e)

    # the full-call goal's reference: rltriton's own launches re-issued through kernel[grid]
    ours = next((e for e in entries if e.name == "rltriton"), None)
    if ours is not None:
        try:
            entries.append(Entry("rltriton(bare)", common.bare_launch(ours.fn), False,
                                 "rltriton's kernel launches re-issued through kernel[grid] with the arguments "
                                 "of one call (BENCHMARKS.md: a bare Triton launch of the same kernel; same "
                                 "kernels, so not checked)"))
        except Exception as exc:  # noqa: BLE001
            row["errors"].append("rltriton(bare): " + short_exc(exc))
            _recover()

    # timing effort per entry, from one warm call
    for e in entries:
        try:
            e.plan = plan(one_call_us(e.fn))
        except Exception as exc:  # noqa: BLE001
            e.error = "timing failed: " + short_exc(exc)
    live = [e for e in entries if e.error is None]
    n_rounds = max((e.plan["rounds"] for e in live), default=0)
    for rnd in range(n_rounds):
        for e in live:
            if e.error is not None or rnd >= e.plan["rounds"]:
                continue
            try:
                f = full_us(e.fn, e.plan)
                e.full = f if e.full is None else min(e.full, f)
                if e.capturable and e.plan["graph_calls"] > 0:
                    d = device_us(e.fn, e.plan)
                    e.device = d if e.device is None else min(e.device, d)
                e.rounds_done = rnd + 1
            except Exception as exc:  # noqa: BLE001
                msg = short_exc(exc)
                if e.capturable and e.full is not None and e.device is None and "captur" in msg.lower():
                    e.capturable = False
                    e.notes.append("device = None: CUDA-graph capture failed: " + msg)
                else:
                    e.error = "timing failed: " + msg
                    row["errors"].append(f"{e.name}: {e.error}")
                _recover()
    for e in entries:
        if e.plan and e.plan["calls"] < ARGS.calls and not ARGS.smoke:
            e.notes.append(f"slow: {e.plan['calls']} calls x {e.plan['trials']} trials, "
                           f"{e.plan['graph_calls']} per graph, {e.plan['rounds']} round(s)")
    row["floor"] = entries[0].record()
    for e in entries[1:]:
        row["candidates"][e.name] = e.record()
    row["seconds"] = round(time.perf_counter() - t_start, 2)
    del ro, ref, ins, outs, entries, cands
    _recover()
    return row


def _recover() -> None:
    if ARGS.smoke:
        return
    try:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    except Exception:  # noqa: BLE001
        pass


# --------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------


def fmt(x: float | None, nd: int = 1) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    if x >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{nd}f}"


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b <= 0:
        return None
    return a / b


def cand_cell(c: dict[str, Any] | None, key: str) -> str:
    if c is None:
        return "—"
    s = fmt(c.get(key))
    if c.get("ok") is False:
        s += " ✗"
    return s


def goal_checks(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The goals of BENCHMARKS.md, one verdict per row and goal."""
    out = []
    for r in rows:
        ours = r["candidates"].get("rltriton")
        if not ours or ours.get("device_us") is None:
            continue
        shape = tuple(r["shape"])
        tag = f"{r['estimator']} {shape[0]}x{shape[1]}"
        fl = r["floor"]
        if r["category"] in ("classic", "massive"):
            q = ratio(ours["device_us"], fl.get("device_us"))
            out.append({"row": tag, "goal": "device <= 1.25 x floor", "value": q, "shown": f"{fmt(q, 2)}x",
                        "pass": q is not None and q <= 1.25})
        else:
            # BENCHMARKS.md names two long rows; the others are shown, not counted
            q = ratio(ours["device_us"], r["bw_floor_us"])
            goal = "device <= 2 x bandwidth floor" + ("" if shape in LONG_GOAL_SHAPES else " (not a goal row)")
            out.append({"row": tag, "goal": goal, "value": q, "shown": f"{fmt(q, 2)}x",
                        "pass": q is not None and q <= 2.0, "info": shape not in LONG_GOAL_SHAPES})
        tm = r["candidates"].get("rltriton(tm)")
        if tm and tm.get("device_us") is not None:
            q = ratio(tm["device_us"], ours["device_us"])
            out.append({"row": tag, "goal": "time-major device <= 1.25 x batch-major", "value": q,
                        "shown": f"{fmt(q, 2)}x", "pass": q is not None and q <= 1.25 and tm.get("ok") is not False})
        bare = r["candidates"].get("rltriton(bare)")
        if ours.get("full_us") is not None and bare and bare.get("full_us") is not None:
            d = ours["full_us"] - bare["full_us"]
            out.append({"row": tag, "goal": "full call <= bare launch of the same kernels + 5 us", "value": d,
                        "shown": f"{d:+.1f} µs", "pass": d <= 5.0})
        if ours.get("full_us") is not None and fl.get("full_us") is not None:
            # not a goal of BENCHMARKS.md (that one is the bare launch above): the floor kernel
            # has a few arguments, ours ~50, so this shows the launcher's cost per argument
            d = ours["full_us"] - fl["full_us"]
            out.append({"row": tag, "goal": "full call - floor kernel's full call (not a goal)", "value": d,
                        "shown": f"{d:+.1f} µs", "pass": d <= 5.0, "info": True})
        for peer in ("rl-triton", "pufferlib"):
            pc = r["candidates"].get(peer)
            if not pc or pc.get("full_us") is None:
                continue
            fast_dev = pc.get("device_us") is None or ours["device_us"] <= pc["device_us"]
            fast_full = ours["full_us"] is not None and ours["full_us"] <= pc["full_us"]
            q = ratio(pc.get("device_us"), ours["device_us"])
            qf = ratio(pc.get("full_us"), ours["full_us"])
            wrong = " (peer output wrong)" if pc.get("ok") is False else ""
            out.append({"row": tag, "goal": f"ahead of {peer} (device and full call)", "value": q,
                        "shown": f"{peer}/rltriton: device {fmt(q, 2)}x, full {fmt(qf, 2)}x{wrong}",
                        "pass": bool(fast_dev and fast_full)})
        if ours.get("ok") is False:
            err = ours.get("max_abs_err")
            out.append({"row": tag, "goal": "rltriton correct", "value": err,
                        "shown": "?" if err is None else f"max abs err {err:.2e}", "pass": False})
    return out


def markdown(meta: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    L: list[str] = []
    L.append(f"# rltriton benchmark — {meta['gpu']} — {meta['grid']}{' (truncations)' if meta['truncations'] else ''}")
    L.append("")
    L.append(f"{meta['date']} · commit `{meta['git'].get('commit', '?')}`"
             + (f" (+{len(meta['git']['dirty_files'])} modified files)" if meta["git"].get("dirty_files") else "")
             + (f" · rltriton sources `{meta['git']['source_digest']}`" if meta["git"].get("source_digest") else "")
             + f" · torch {meta['versions']['torch']} · triton {meta['versions']['triton']} · "
             f"python {meta['versions']['python']}")
    L.append("")
    L.append(f"`{meta['command']}`")
    L.append("")
    L.append("Times in µs. **device**: CUDA-graph replay per call; **full**: events around one call "
             "after a synchronize (median per trial, min over trials), min over interleaved rounds. "
             "floor: streaming Triton kernel moving the same bytes; bw floor: bytes / "
             f"{meta.get('bandwidth_B_per_s', HBM_BYTES_PER_S):.3g} B/s "
             f"({meta.get('bandwidth_source', 'assumed: an H200 copy bandwidth')}). "
             "✗: output does not match the float64 oracle (timed anyway). —: not run / not capturable.")
    L.append("")
    L.append("Peers: " + "; ".join(f"**{k}**: {v[1]}" for k, v in meta["peer_status"].items()))
    if meta.get("native"):  # results files before session 24 do not record it
        L.append("")
        L.append(f"rltriton's compiled replay of repeated calls (`rltriton.kernels.native`): {meta['native']}")
    L.append("")
    ests = [e for e in P.ESTIMATORS if any(r["estimator"] == e for r in rows)]
    for est in ests:
        rs = [r for r in rows if r["estimator"] == est]
        names = []
        for r in rs:
            for n in r["candidates"]:
                if n != "rltriton" and n not in names:
                    names.append(n)
        L.append(f"## {est}")
        L.append("")
        for key, title in (("device_us", "Device time (µs)"), ("full_us", "Full call (µs)")):
            L.append(f"### {title}")
            L.append("")
            hdr = ["shape", "floor", "bw floor", "rltriton", "rltriton / floor"]
            if key == "device_us":
                hdr.append("rltriton / bw floor")
            for n in names:
                hdr += [n, f"{n} / rltriton"]
            L.append("| " + " | ".join(hdr) + " |")
            L.append("|" + " --- |" * len(hdr))
            for r in rs:
                ours = r["candidates"].get("rltriton")
                o = ours.get(key) if ours else None
                fl = r["floor"].get(key)
                cells = [f"{r['shape'][0]}x{r['shape'][1]}", fmt(fl), fmt(r["bw_floor_us"], 2) if key == "device_us"
                         else "", cand_cell(ours, key), fmt(ratio(o, fl), 2)]
                if key == "device_us":
                    cells.append(fmt(ratio(o, r["bw_floor_us"]), 2))
                for n in names:
                    c = r["candidates"].get(n)
                    if c is None:
                        cells += ["skip" if n in r["skipped"] else "—", ""]
                    else:
                        cells += [cand_cell(c, key), fmt(ratio(c.get(key), o), 2)]
                L.append("| " + " | ".join(cells) + " |")
            L.append("")
        L.append("### Correctness (max abs error vs the oracle; tolerance of tests/rollouts.py)")
        L.append("")
        L.append("| shape | oracle | " + " | ".join(["rltriton"] + names) + " |")
        L.append("|" + " --- |" * (2 + 1 + len(names)))
        for r in rs:
            cells = [f"{r['shape'][0]}x{r['shape'][1]}", "ref64" if r["oracle"].startswith("rt.") else "torch64"]
            for n in ["rltriton"] + names:
                c = r["candidates"].get(n)
                if c is None:
                    cells.append("skip" if n in r["skipped"] else "—")
                elif c.get("error"):
                    cells.append("error")
                elif "ok" not in c:
                    cells.append("n/a")
                else:
                    err = c.get("max_abs_err")
                    cells.append(("pass " if c.get("ok") else "**FAIL** ") + (f"{err:.1e}" if err is not None else "?"))
            L.append("| " + " | ".join(cells) + " |")
        L.append("")
        notes = {}
        for r in rs:
            for n, why in r["skipped"].items():
                notes.setdefault(f"{n} skipped", set()).add(why)
            for n, c in r["candidates"].items():
                for nt in c.get("notes", []):
                    notes.setdefault(n, set()).add(nt)
                if c.get("error"):
                    notes.setdefault(n, set()).add(c["error"])
        if notes:
            L.append("Notes:")
            L.append("")
            for k, v in notes.items():
                for x in sorted(v):
                    L.append(f"- {k}: {x}")
            L.append("")
    checks = goal_checks(rows)
    L.append("## Goal checks (BENCHMARKS.md)")
    L.append("")
    if checks:
        goals = [c for c in checks if not c.get("info")]
        n_pass = sum(c["pass"] for c in goals)
        L.append(f"{n_pass} of {len(goals)} pass (rows marked *not a goal* are shown only).")
        L.append("")
        L.append("| goal | pass | fail |")
        L.append("| --- | --- | --- |")
        kinds: dict[str, list[bool]] = {}
        for c in checks:
            kinds.setdefault(c["goal"], []).append(c["pass"])
        for k, v in kinds.items():
            L.append(f"| {k} | {sum(v)} | {len(v) - sum(v)} |")
        L.append("")
        L.append("| row | goal | value | verdict |")
        L.append("| --- | --- | --- | --- |")
        for c in checks:
            verdict = ("(pass)" if c["pass"] else "(over)") if c.get("info") else ("pass" if c["pass"] else "**FAIL**")
            L.append(f"| {c['row']} | {c['goal']} | {c.get('shown', '—')} | {verdict} |")
    else:
        L.append("No device figures (smoke run or nothing measured).")
    L.append("")
    if meta.get("notes"):
        L.append("## Run notes")
        L.append("")
        for n in meta["notes"]:
            L.append(f"- {n}")
        L.append("")
    return "\n".join(L)


def plots(rows: list[dict[str, Any]], stem: Path) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as exc:  # noqa: BLE001
        return [f"no plots: matplotlib unavailable ({type(exc).__name__})"]
    written = []
    for est in P.ESTIMATORS:
        rs = [r for r in rows if r["estimator"] == est]
        if not rs:
            continue
        envs = sorted({r["shape"][0] for r in rs})
        names = ["floor", "bw floor"]
        for r in rs:
            for n in r["candidates"]:
                if n not in names:
                    names.append(n)
        ncol = min(len(envs), 5)
        nblk = -(-len(envs) // ncol)
        fig, axes = plt.subplots(2 * nblk, ncol, figsize=(3.6 * ncol, 3.0 * 2 * nblk), squeeze=False)
        for i, n_env in enumerate(envs):
            blk, col = divmod(i, ncol)
            sub = sorted((r for r in rs if r["shape"][0] == n_env), key=lambda r: r["shape"][1])
            for k, (key, label) in enumerate((("device_us", "device µs"), ("full_us", "full call µs"))):
                ax = axes[2 * blk + k][col]
                for n in names:
                    xs, ys = [], []
                    for r in sub:
                        if n == "floor":
                            y = r["floor"].get(key)
                        elif n == "bw floor":
                            y = r["bw_floor_us"] if key == "device_us" else None
                        else:
                            y = (r["candidates"].get(n) or {}).get(key)
                        if y is not None and y > 0:
                            xs.append(r["shape"][1])
                            ys.append(y)
                    if xs:
                        if n == "floor":
                            ax.plot(xs, ys, "--", color="black", marker="o", ms=3, label=n)
                        elif n == "bw floor":
                            ax.plot(xs, ys, ":", color="grey", marker=".", ms=3, label=n)
                        else:
                            ax.plot(xs, ys, "-", marker="o", ms=3, lw=2.2 if n == "rltriton" else 1.2, label=n,
                                    color=COLORS.get(n))
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                ax.set_title(f"{est}  N={n_env}", fontsize=9)
                ax.set_xlabel("seq_len", fontsize=8)
                ax.set_ylabel(label, fontsize=8)
                ax.tick_params(labelsize=7)
                ax.grid(True, which="both", alpha=0.3)
        for j in range(len(envs), nblk * ncol):
            blk, col = divmod(j, ncol)
            axes[2 * blk][col].axis("off")
            axes[2 * blk + 1][col].axis("off")
        handles, labels = [], []
        for ax in axes.flat:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
        fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 8), fontsize=8)
        fig.tight_layout(rect=(0, 0, 1, 0.95))
        path = Path(f"{stem}-{est}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(str(path))
    return written


def short_table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'estimator':<18} {'shape':>12} {'floor':>8} {'ours':>8} {'/floor':>6} {'full':>8}  "
             "peers (device µs, or full call where no device figure; ✗ = wrong)"]
    for r in rows:
        ours = r["candidates"].get("rltriton") or {}
        fl = r["floor"]
        o = ours.get("device_us") if ours.get("device_us") is not None else ours.get("full_us")
        f = fl.get("device_us") if fl.get("device_us") is not None else fl.get("full_us")
        peers = []
        for n, c in r["candidates"].items():
            if n == "rltriton":
                continue
            t = c.get("device_us") if c.get("device_us") is not None else c.get("full_us")
            mark = " ✗" if c.get("ok") is False else ""
            peers.append(f"{n}={fmt(t)}{'' if c.get('device_us') is not None else '(full)'}{mark}")
        bad = " ✗" if ours.get("ok") is False else ""
        lines.append(f"{r['estimator']:<18} {r['shape'][0]:>5}x{r['shape'][1]:<7}{fmt(f):>8} {fmt(o):>8}{bad} "
                     f"{fmt(ratio(o, f), 2):>6} {fmt(ours.get('full_us')):>8}  " + ", ".join(peers))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def parse_shapes(spec: str) -> list[tuple[int, int]]:
    out = []
    for s in spec.split(","):
        s = s.strip().lower()
        if s:
            n, t = s.split("x")
            out.append((int(n), int(t)))
    return out


def write_json(stem: Path, meta: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """``<stem>.json``: the run's record, its rows and their goal checks."""
    Path(f"{stem}.json").write_text(json.dumps({"meta": meta, "rows": rows, "goal_checks": goal_checks(rows)},
                                               indent=1, default=str))


def rerender(path: str) -> int:
    src = Path(path)
    d = json.loads(src.read_text())
    out_dir = Path(ARGS.out) if "--out" in sys.argv else src.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / src.stem
    meta, rows = d["meta"], d["rows"]
    if ARGS.commit:
        meta["git"] = {**meta["git"], "recorded_commit": meta["git"].get("commit"), "commit": ARGS.commit,
                       "dirty_files": [], "source": "--commit at re-render"}
    if not ARGS.no_plots:
        meta["plots"] = plots(rows, stem)
    Path(f"{stem}.md").write_text(markdown(meta, rows))
    if ARGS.commit:  # the corrected record (and the goal checks of this version) go to the JSON too
        write_json(stem, meta, rows)
    print(f"wrote {stem}.md" + "".join(f", {x}" for x in meta.get("plots", [])))
    print(short_table(rows))
    return 0


def native_status() -> str:
    """Set up rltriton's compiled replay as ``--native`` asks; what the rltriton rows use."""
    from rltriton.kernels import native

    if ARGS.native == "off" or ARGS.smoke or not torch.cuda.is_available():
        os.environ["RLTRITON_NATIVE"] = "0"
        return "off: repeated calls take the Python replay"
    if ARGS.native == "prebuilt":  # native.load() would otherwise build a missing module
        os.environ["RLTRITON_NATIVE"] = "prebuilt"
    else:  # built here, so that a failure's reason goes into the results
        try:
            native.build()
        except (RuntimeError, OSError) as exc:
            os.environ["RLTRITON_NATIVE"] = "0"  # no second attempt at the first repeated call
            return f"not built ({str(exc)[:200]}): repeated calls take the Python replay"
    if native.load() is None:
        return "not built: repeated calls take the Python replay"
    return f"on ({native.module_path().name} in {native.module_path().parent})"


def main() -> int:
    if ARGS.from_json:
        return rerender(ARGS.from_json)
    t_begin = time.perf_counter()
    if not ARGS.smoke and not torch.cuda.is_available():
        print("no CUDA device: run on the GPU, or use --smoke for the CPU harness check", file=sys.stderr)
        return 2
    grids = [g for g in ARGS.grid.split(",") if g]
    for g in grids:
        if g not in GRIDS:
            print(f"unknown grid {g!r}; choose from {', '.join(GRIDS)}", file=sys.stderr)
            return 2
    ests = list(P.ESTIMATORS) if ARGS.estimators == "all" else [e for e in ARGS.estimators.split(",") if e]
    for e in ests:
        if e not in P.ESTIMATORS:
            print(f"unknown estimator {e!r}; choose from {', '.join(P.ESTIMATORS)}", file=sys.stderr)
            return 2
    for p in selected_peers():
        if p not in PEERS:
            print(f"unknown peer {p!r}; choose from {', '.join(PEERS)}", file=sys.stderr)
            return 2

    # shapes: (category, shape), deduplicated in grid order
    shapes: list[tuple[str, tuple[int, int]]] = []
    if ARGS.smoke:
        shapes = list(SMOKE_SHAPES)
        grid_tag = "smoke"
    else:
        for g in grids:
            for s in GRIDS[g]:
                if all(s != x for _, x in shapes):
                    shapes.append((category(s), s))
        # "-", not "+": the device tool drops result files whose names hold a "+"
        grid_tag = "-".join(grids)
    if ARGS.shapes:
        extra = parse_shapes(ARGS.shapes)
        shapes = [(category(s), s) for s in extra]
        grid_tag = "custom"

    # peers available in this process
    status: dict[str, tuple[bool, str]] = {}
    sel = selected_peers()
    if "torch.compile" in sel:
        status["torch.compile"] = (True, f"our Hillis-Steele doubling scan, torch {torch.__version__} "
                                         f"(for {ARGS.compile_for})")
    if "torchrl" in sel:
        status["torchrl"] = P.torchrl_status()
    if "cleanrl" in sel:
        status["cleanrl"] = (True, f"PPO GAE loop over T (T <= {P.CLEANRL_MAX_T}, N*T <= 2**21)")
    if "rl-triton" in sel:
        status["rl-triton"] = P.rl_triton_status(strip_asserts=ARGS.smoke)
    if "pufferlib" in sel:
        status["pufferlib"] = P.pufferlib_status()
    for k, (ok, why) in status.items():
        print(f"[peer] {k}: {'available' if ok else 'SKIPPED'} — {why}", flush=True)
    native_note = native_status()
    print(f"[rltriton] compiled replay: {native_note}", flush=True)

    out_dir = Path(ARGS.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    date = _dt.date.today().isoformat()
    gname = gpu_name()
    stem_name = f"{date}-{slug(gname)}-{grid_tag}{'-trunc' if ARGS.truncations else ''}"
    if ARGS.dtype != "fp32":
        stem_name += f"-{ARGS.dtype}"
    if ARGS.tag:
        stem_name += f"-{slug(ARGS.tag)}"
    stem = out_dir / stem_name
    meta: dict[str, Any] = {
        "date": date,
        "started": _dt.datetime.now().isoformat(timespec="seconds"),
        "gpu": gname,
        "grid": grid_tag,
        "truncations": ARGS.truncations,
        "command": " ".join([Path(sys.executable).name] + [sys.argv[0]] + sys.argv[1:]),
        "args": vars(ARGS),
        "versions": versions(),
        "git": git_commit(),
        "peer_status": {k: [ok, why] for k, (ok, why) in status.items()},
        "native": native_note,
        "bandwidth_B_per_s": COPY_BW["B_per_s"],
        "method": "interleaved rounds; full = common.full_call_us, device = common.device_time_us; "
                  "min over rounds" if not ARGS.smoke else
                  "SMOKE: CPU, TRITON_INTERPRET=1, perf_counter timing; figures are not benchmarks",
        "notes": [],
    }
    try:
        COPY_BW["B_per_s"] = meta["bandwidth_B_per_s"] = copy_bandwidth()
        meta["bandwidth_source"] = "measured: a 1 GiB device-to-device copy, best of 5" if not ARGS.smoke else \
            "measured: a 64 MiB CPU copy (smoke)"
    except Exception as exc:  # noqa: BLE001 - a failed measurement must not lose the run
        meta["bandwidth_source"] = f"assumed (measuring failed: {short_exc(exc)})"
        meta["notes"].append("copy bandwidth not measured: " + short_exc(exc))
        _recover()
    print(f"[bandwidth] copy: {COPY_BW['B_per_s'] / 1e12:.2f} TB/s", flush=True)
    if not ARGS.smoke:
        meta["device"] = {"name": gname, "capability": list(torch.cuda.get_device_capability(0)),
                          "memory_GiB": round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)}
    rows: list[dict[str, Any]] = []

    def write() -> None:
        meta["finished"] = _dt.datetime.now().isoformat(timespec="seconds")
        meta["elapsed_s"] = round(time.perf_counter() - t_begin, 1)
        write_json(stem, meta, rows)
        Path(f"{stem}.md").write_text(markdown(meta, rows))

    def on_term(signum, frame):  # a timeout's SIGTERM: leave what was measured
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_term)
    budget_s = ARGS.max_minutes * 60
    todo = [(e, c, s) for e in ests for c, s in shapes]
    try:
        for i, (est, cat, shape) in enumerate(todo):
            if time.perf_counter() - t_begin > budget_s:
                left = [f"{e} {s[0]}x{s[1]}" for e, _, s in todo[i:]]
                meta["notes"].append(f"time budget (--max-minutes {ARGS.max_minutes}) reached; not run: "
                                     + ", ".join(left))
                print(f"[budget] stopping: {len(left)} rows not run", flush=True)
                break
            print(f"[{i + 1}/{len(todo)}] {est} {shape[0]}x{shape[1]} ({cat}) ...", flush=True)
            try:
                row = run_row(est, shape, cat, status, ARGS.seed + 1009 * i + shape[0] + shape[1])
            except Exception as exc:  # noqa: BLE001 - one bad row must not lose the others
                row = {"estimator": est, "shape": list(shape), "category": cat, "truncations": ARGS.truncations,
                       "candidates": {}, "skipped": {}, "floor": {}, "bw_floor_us": None,
                       "errors": ["row failed: " + short_exc(exc), traceback.format_exc(limit=6)]}
                print("   row failed:", short_exc(exc), flush=True)
                _recover()
            rows.append(row)
            ours = row["candidates"].get("rltriton") or {}
            print(f"   floor dev {fmt(row['floor'].get('device_us'))} full {fmt(row['floor'].get('full_us'))} | "
                  f"rltriton dev {fmt(ours.get('device_us'))} full {fmt(ours.get('full_us'))} "
                  f"{'ok' if ours.get('ok') else 'WRONG' if ours else '-'} | {row.get('seconds', '?')} s", flush=True)
            for n, c in row["candidates"].items():
                if n != "rltriton":
                    err = c.get("max_abs_err")
                    print(f"   {n:<16} dev {fmt(c.get('device_us')):>8} full {fmt(c.get('full_us')):>8} "
                          f"err {'—' if err is None else format(err, '.1e')}"
                          f" {'unchecked' if 'ok' not in c else 'ok' if c['ok'] else 'WRONG'}"
                          f"{' ' + c['error'] if c.get('error') else ''}",
                          flush=True)
            write()
    except KeyboardInterrupt as exc:
        meta["notes"].append(f"interrupted ({exc}); rows so far are kept")
    finally:
        if not ARGS.no_plots and rows:
            try:
                meta["plots"] = plots(rows, stem)
                meta["notes"] += [x for x in meta["plots"] if not x.endswith(".png")]
            except Exception as exc:  # noqa: BLE001
                meta["notes"].append("plots failed: " + short_exc(exc))
        write()
    print()
    pngs = [x for x in meta.get("plots", []) if x.endswith(".png")]
    print(f"wrote {stem}.json, {stem}.md" + (f" and {len(pngs)} plots ({stem}-<estimator>.png)" if pngs else ""))
    for n in meta["notes"]:
        print("note:", n)
    checks = [c for c in goal_checks(rows) if not c.get("info")]
    if checks:
        print(f"goal checks: {sum(c['pass'] for c in checks)} of {len(checks)} pass (see the .md)")
    print()
    print(short_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
