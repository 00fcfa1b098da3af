"""Quick probe: device time of each estimator against the streaming floor, and the full
call against a bare launch of the same Triton kernel with the same arguments.

    python benchmarks/probe.py [gae,vtrace,...]      # on a GPU machine

"bare" replays the exact launch rltriton makes (same kernel, arguments, grid, constexprs)
straight through ``kernel[grid](...)``: the full-call goal of BENCHMARKS.md is
``full <= bare + 5 us``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import bare_launch, device_time_us, full_call_us, per_step_inputs, stream_floor  # noqa: E402
from tests.rollouts import ESTIMATORS, make_case, on_gpu  # noqa: E402

SHAPES = [(4096, 128), (4096, 2048), (16384, 512), (512, 4096), (32768, 8), (16384, 16), (32768, 64),
          (64, 65536), (16, 262144), (1, 1048576)]


def main() -> None:
    names = sys.argv[1].split(",") if len(sys.argv) > 1 else ESTIMATORS
    print(f"{'estimator':<12} {'shape':>14} {'floor':>7} {'ours':>7} {'ratio':>6} {'full':>7} {'bare':>7} "
          f"{'full-bare':>9}")
    for name in names:
        for shape in SHAPES:
            case = on_gpu(make_case(name, shape, flags="terminated", seed=0))
            # (the action form's [N, T, A] inputs count too: their bytes are streamed)
            per_step = per_step_inputs(list(case.args) + list(case.kwargs.values()), shape)
            n_out = len(case(backend="triton"))
            outs = [torch.empty(shape, device="cuda") for _ in range(n_out)]
            floor = stream_floor(per_step, outs)
            f = device_time_us(floor)
            fn, args, kw = case.fn(), case.args, {**case.kwargs, "backend": "triton"}
            call = lambda fn=fn, args=args, kw=kw: fn(*args, **kw)  # noqa: E731
            o = device_time_us(call)
            bare = bare_launch(lambda case=case: case(backend="triton"))
            full = full_call_us(call, calls=30, trials=3, warmup=10)
            b = full_call_us(bare, calls=30, trials=3, warmup=10)
            print(f"{name:<12} {str(shape):>14} {f:7.1f} {o:7.1f} {o / f:6.2f} {full:7.1f} {b:7.1f} {full - b:9.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
