"""Host time of a repeated call: the replay's fast launch with pointers handed to Triton's
launcher as ints (the default) or as tensors, or without the launch metadata that only launch
hooks read (``_FastLaunch.LAUNCH_METADATA = False``), against a bare ``kernel[grid]`` launch of
the same kernel with the same arguments, interleaved in one process.

    python benchmarks/host.py [gae,vtrace,...] [RxT,...]      # on a GPU machine

Two figures per variant, µs, minimum over interleaved rounds:

* **submit**: wall time of issuing one call (no synchronize between calls; the median of
  200 calls per round), the host cost a training loop pays per call;
* **full**: ``common.full_call_us``, CUDA events around one call after a synchronize, as
  ``run.py`` and ``probe.py`` report it (host time plus launch latency plus device time).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import bare_launch, full_call_us  # noqa: E402
from rltriton.kernels import launch  # noqa: E402
from tests.rollouts import make_case, on_gpu  # noqa: E402


def submit_us(fn, calls: int = 200) -> float:
    """Median wall time of issuing one call, the GPU left to drain only at the end."""
    torch.cuda.synchronize()
    ts = []
    for _ in range(calls):
        a = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - a) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(ts)


def main() -> None:
    names = sys.argv[1].split(",") if len(sys.argv) > 1 else ["gae", "vtrace", "td_lambda", "retrace"]
    shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[2].split(",")] if len(sys.argv) > 2 \
        else [(4096, 128), (32768, 8), (16, 262144)]
    print(f"{'estimator':<10} {'shape':>14} {'submit: ints':>13} {'tensors':>8} {'no meta':>8} {'bare':>7}"
          f" {'full: ints':>11} {'tensors':>8} {'no meta':>8} {'bare':>7}")
    for name in names:
        for shape in shapes:
            case = on_gpu(make_case(name, shape, flags="terminated", seed=0))
            fn, args, kw = case.fn(), case.args, {**case.kwargs, "backend": "triton"}
            bare = bare_launch(lambda case=case: case(backend="triton"))
            launch.clear_caches()
            for _ in range(3):  # record, arm the fast launch, use it
                fn(*args, **kw)

            def call(fn=fn, args=args, kw=kw):
                return fn(*args, **kw)

            variants = ("ints", "tensors", "nometa", "bare")
            sub: dict[str, list[float]] = {v: [] for v in variants}
            full: dict[str, list[float]] = {v: [] for v in variants}
            for _ in range(5):
                for variant in variants:
                    launch._FastLaunch.POINTERS_AS_INTS = variant != "tensors"
                    launch._FastLaunch.LAUNCH_METADATA = variant != "nometa"
                    f = bare if variant == "bare" else call
                    sub[variant].append(submit_us(f))
                    full[variant].append(full_call_us(f, calls=30, trials=2, warmup=5))
            launch._FastLaunch.POINTERS_AS_INTS = True
            launch._FastLaunch.LAUNCH_METADATA = True
            print(f"{name:<10} {str(shape):>14} {min(sub['ints']):13.1f} {min(sub['tensors']):8.1f}"
                  f" {min(sub['nometa']):8.1f} {min(sub['bare']):7.1f} {min(full['ints']):11.1f}"
                  f" {min(full['tensors']):8.1f} {min(full['nometa']):8.1f} {min(full['bare']):7.1f}", flush=True)


if __name__ == "__main__":
    main()
