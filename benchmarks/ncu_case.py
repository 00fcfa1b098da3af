"""One estimator call and its streaming floor, for a hardware-counter profile with Nsight Compute.

    ncu --clock-control none --section SpeedOfLight --section Occupancy --section WarpStateStats \\
        -k regex:_kernel python benchmarks/ncu_case.py gae 16384x64 [tm] [NAME=VALUE ...]

Runs the estimator's Triton call twice (time-major ``[T, N]`` storage with ``tm``), then the
streaming floor kernel of ``benchmarks/common.py`` that moves the same bytes twice, so the
profile holds both side by side (the first call of each also compiles it, outside any
kernel). Trailing ``NAME=VALUE`` arguments set ``rltriton.kernels.launch`` settings first, as
``benchmarks/profile_kernels.py`` does; ``plan=BN,BT,WARPS,SEGMENTS,SEG_LEN[,STAGES]`` forces a
plan (on the storage's tiles: time-major ones with ``tm``), as ``benchmarks/sweep.py`` does.
Times here come from the profiler's replays, cold caches and all: what counts is the counters
(DRAM throughput, occupancy, stall reasons), not the durations; ``run.py`` times calls.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import apply_launch_settings, estimator_plan, per_step_inputs, stream_floor  # noqa: E402
from rltriton.kernels import launch  # noqa: E402
from tests.rollouts import make_case, on_gpu  # noqa: E402


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "gae"
    shape = tuple(int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "16384x64").split("x"))
    rest = sys.argv[3:]
    tm = "tm" in rest
    apply_launch_settings([s for s in rest if "=" in s], tm)
    launch.clear_caches()
    case = on_gpu(make_case(name, shape, flags="terminated", seed=0, time_major=tm))
    per_step = per_step_inputs(list(case.args) + list(case.kwargs.values()), shape[::-1] if tm else shape)
    outs = case(backend="triton")
    case(backend="triton")
    floor = stream_floor(per_step, [torch.empty_like(o) for o in outs])
    floor()
    floor()
    torch.cuda.synchronize()
    pl = estimator_plan(name, shape, tm)
    print(f"{name} {shape} {'time-major' if tm else 'batch-major'}: plan {tuple(pl)}")


if __name__ == "__main__":
    main()
