"""Device time of each kernel launch of one call, timed alone, beside the streaming floor.

    python benchmarks/phase_times.py discounted_returns,td_lambda 16x262144,1x1048576   # on a GPU
    python benchmarks/phase_times.py td_lambda 16x262144 plan=1,1024,4,64,4096,3 _MAP_REDUCE="frozenset()"

A split call is two launches (PHASE 1: each segment's summary; PHASE 2: carry-in and
outputs); the whole call's device time says nothing of how it divides between them. For each
estimator and shape this records the launches the planner makes for one call
(``launch.launch_specs``), replays each alone in a CUDA graph (``common.device_time_us``) and
prints their times with the call's and two floors: the streaming floor of the whole call,
and a read-only floor (every per-step input read, nothing written, :func:`read_floor`), the
least PHASE 1 can take. Trailing ``NAME=VALUE`` arguments set ``rltriton.kernels.launch``
settings first, and ``plan=BN,BT,WARPS,SEGMENTS,SEG_LEN[,STAGES]`` forces a batch-major plan,
as ``benchmarks/ncu_case.py`` takes them (e.g. segments of several chunks, pipelined, to see
what a PHASE 1 that overlaps its loads would take). (Session 32's figures,
2026-12-03-h200-s32-phase-times.txt, came from an earlier form of the read-only floor that
wrote one float per 2048 elements.) Nothing here is a benchmark result: ``run.py`` times
calls side by side.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import (  # noqa: E402
    _stream_kernel,
    apply_launch_settings,
    device_time_us,
    per_step_inputs,
    stream_floor,
)
from rltriton.kernels import launch  # noqa: E402
from tests.rollouts import make_case, on_gpu  # noqa: E402


def read_floor(inputs: list[torch.Tensor]):
    """A call that only reads ``inputs`` (up to 8, same numel): the streaming kernel of
    ``benchmarks/common.py`` with no outputs, the floor of a pass that only reads, as PHASE 1
    does (it writes a summary per segment)."""
    ins = [x.reshape(-1) for x in inputs][:8]
    n = ins[0].numel()
    block = 2048
    pad = ins + [ins[0]] * (8 - len(ins))
    return lambda: _stream_kernel[(triton.cdiv(n, block),)](*pad, ins[0], ins[0], n, N_IN=len(ins), N_OUT=0,
                                                             BLOCK=block, num_warps=8)


def main() -> None:
    names = sys.argv[1].split(",") if len(sys.argv) > 1 else ["discounted_returns"]
    spec = sys.argv[2] if len(sys.argv) > 2 else "16x262144"
    shapes = [tuple(int(v) for v in s.split("x")) for s in spec.split(",")]
    forced = apply_launch_settings(sys.argv[3:])
    captured: list = []
    orig = launch.launch_specs

    def spy(*a, **k):
        specs, scratch = orig(*a, **k)
        captured.append(specs)
        return specs, scratch

    launch.launch_specs = spy
    print(f"{'estimator':>20} {'shape':>12} {'floor':>6} {'read':>6} {'call':>6}  launches (µs each, alone)")
    for name in names:
        for shape in shapes:
            segs = None if forced is None else -(-shape[1] // forced.seg_len)
            if forced is not None and forced.segments != segs:
                # (the summaries are sized by the plan, the kernel counts segments from T)
                raise ValueError(f"plan={tuple(forced)[:5]}: {shape[1]} steps make {segs} segments of "
                                 f"{forced.seg_len}, not {forced.segments}")
            case = on_gpu(make_case(name, shape, flags="terminated", seed=0))
            per_step = per_step_inputs(list(case.args) + list(case.kwargs.values()), shape)
            launch.clear_caches()  # (a call of a signature seen before would replay, unrecorded)
            captured.clear()
            outs = case(backend="triton")
            specs = captured[-1] if captured else []
            floor = device_time_us(stream_floor(per_step, [torch.empty_like(o) for o in outs]))
            read = device_time_us(read_floor(per_step))
            call = device_time_us(lambda c=case: c(backend="triton"))
            each = []
            for kernel, grid, args, kwargs in specs:
                t = device_time_us(lambda k=kernel, g=grid, a=args, kw=kwargs: k[g](*a, **kw))
                each.append(f"PHASE {kwargs.get('PHASE')} grid {grid} {t:.1f}")
            print(f"{name:>20} {'x'.join(map(str, shape)):>12} {floor:6.1f} {read:6.1f} {call:6.1f}  "
                  + "; ".join(each), flush=True)


if __name__ == "__main__":
    main()
