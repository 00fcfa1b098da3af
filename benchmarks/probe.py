"""Quick probe: device time of every estimator against the streaming floor on a few shapes.

    python benchmarks/probe.py            # on a GPU machine
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import device_time_us, full_call_us, stream_floor  # noqa: E402
from tests.rollouts import ESTIMATORS, make_case  # noqa: E402

SHAPES = [(4096, 128), (4096, 2048), (16384, 512), (512, 4096), (32768, 8), (16384, 16), (32768, 64),
          (64, 65536), (16, 262144), (1, 1048576)]


def gpu(case):
    case.args = tuple(a.cuda() if isinstance(a, torch.Tensor) else a for a in case.args)
    case.kwargs = {k: (v.cuda() if isinstance(v, torch.Tensor) else v) for k, v in case.kwargs.items()}
    return case


def main() -> None:
    names = sys.argv[1].split(",") if len(sys.argv) > 1 else ESTIMATORS
    print(f"{'estimator':<12} {'shape':>14} {'floor us':>9} {'ours us':>9} {'ratio':>6} {'full us':>8}")
    for name in names:
        for shape in SHAPES:
            case = gpu(make_case(name, shape, flags="terminated", seed=0))
            per_step = [x for x in list(case.args) + list(case.kwargs.values())
                        if isinstance(x, torch.Tensor) and x.shape == torch.Size(shape)]
            n_out = len(case(backend="triton"))
            outs = [torch.empty(shape, device="cuda") for _ in range(n_out)]
            floor = stream_floor(per_step[:6], outs)
            f = device_time_us(floor)
            o = device_time_us(lambda c=case: c(backend="triton"))
            full = full_call_us(lambda c=case: c(backend="triton"), calls=20, trials=2, warmup=5)
            print(f"{name:<12} {str(shape):>14} {f:9.1f} {o:9.1f} {o / f:6.2f} {full:8.1f}", flush=True)


if __name__ == "__main__":
    main()
