"""Host time of a repeated call: the replay's fast launch as it is by default (a function
generated for the launch, pointers handed to Triton's launcher as ints, no launch metadata when
no hook is live, Triton 3.6's C launcher called directly) and with one of those undone: the
general path (``_FastLaunch.GENERATED = False``), and on it pointers as tensors
(``POINTERS_AS_INTS = False``), the metadata computed (``LAUNCH_METADATA = True``), Triton's
``CompiledKernel.run`` (``DIRECT_LAUNCHER = False``); against a bare ``kernel[grid]`` launch
of the same kernel with the same arguments, interleaved in one process.

    python benchmarks/host.py [gae,vtrace,...] [RxT,...]      # on a GPU machine
    python benchmarks/host.py --breakdown [gae,...] [RxT,...]  # where the submit time goes

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


def repeated_call(name: str, shape: tuple[int, int]):
    """The functional call of ``name`` at ``shape`` (on the GPU, Triton backend) as a
    zero-argument function, already called three times (record, arm the fast launch, use
    it), and its case."""
    case = on_gpu(make_case(name, shape, flags="terminated", seed=0))
    fn, args, kw = case.fn(), case.args, {**case.kwargs, "backend": "triton"}
    launch.clear_caches()

    def call():
        return fn(*args, **kw)

    for _ in range(3):
        call()
    return call, case


def main(names: list[str], shapes: list[tuple[int, int]]) -> None:
    # each switch of launch._FastLaunch against the default; the others than "general" go
    # through its general path too (the generated one reads none of them)
    plain = {"GENERATED": False}
    variants = {"default": {}, "general": plain, "tensors": {**plain, "POINTERS_AS_INTS": False},
                "meta": {**plain, "LAUNCH_METADATA": True}, "run": {**plain, "DIRECT_LAUNCHER": False}, "bare": {}}
    fast = launch._FastLaunch
    defaults = {k: getattr(fast, k) for k in ("POINTERS_AS_INTS", "LAUNCH_METADATA", "DIRECT_LAUNCHER", "GENERATED")}
    head = " ".join(f"{v:>8}" for v in variants)
    print(f"{'estimator':<10} {'shape':>14}  submit: {head}   full: {head}")
    for name in names:
        for shape in shapes:
            call, case = repeated_call(name, shape)
            bare = bare_launch(lambda case=case: case(backend="triton"))
            sub: dict[str, list[float]] = {v: [] for v in variants}
            full: dict[str, list[float]] = {v: [] for v in variants}
            try:
                for _ in range(5):
                    for variant, settings in variants.items():
                        for k, v in {**defaults, **settings}.items():
                            setattr(fast, k, v)
                        f = bare if variant == "bare" else call
                        sub[variant].append(submit_us(f))
                        full[variant].append(full_call_us(f, calls=30, trials=2, warmup=5))
            finally:
                for k, v in defaults.items():
                    setattr(fast, k, v)
            print(f"{name:<10} {str(shape):>14}  submit: " + " ".join(f"{min(sub[v]):8.1f}" for v in variants)
                  + "   full: " + " ".join(f"{min(full[v]):8.1f}" for v in variants), flush=True)


def launches_only(call):
    """Two zero-argument functions re-issuing the launches of one repeated ``call``: through
    ``_FastLaunch`` (the alignment check, stream lookup and argument tuple, then Triton's C
    launcher) and through the C launcher alone, with the arguments it was handed; and the
    call's outputs, which must outlive both (the launches write into them)."""
    fast_cls = launch._FastLaunch
    orig = fast_cls.__call__
    fast_calls: list = []
    c_calls: list = []

    def spy(self, sources):
        fast_calls.append((self, sources))
        direct = self.direct
        if direct is None or not fast_cls.DIRECT_LAUNCHER:
            return orig(self, sources)

        def record_c(*a, real=direct[0]):
            c_calls.append((real, a))
            return real(*a)

        self.direct = (record_c, *direct[1:])
        try:
            return orig(self, sources)
        finally:
            self.direct = direct

    fast_cls.__call__ = spy
    generated = fast_cls.GENERATED
    # (the generated launch holds the C launcher in its closure, out of the spy's reach: the
    # general path reads it from ``self.direct``, where the spy records it)
    fast_cls.GENERATED = False
    try:
        outs = call()
    finally:
        fast_cls.__call__ = orig
        fast_cls.GENERATED = generated

    def via_fast():
        for self, sources in fast_calls:
            orig(self, sources)

    def via_c():
        for f, a in c_calls:
            f(*a)

    return via_fast, (via_c if c_calls else None), outs


def breakdown(names: list[str], shapes: list[tuple[int, int]]) -> None:
    """Where a repeated call's submit time goes: the whole call; with the launches stubbed
    out (the Python front end, the signature and the output allocation); with the replay
    stubbed out too (front end and signature only); the launches alone, through
    ``_FastLaunch`` and through Triton's C launcher alone. Differences give the launch (ours
    and Triton's) and the allocation."""
    print(f"{'estimator':<10} {'shape':>14} {'call':>7} {'no launch':>10} {'no replay':>10} {'launches':>9}"
          f" {'C launch':>9}")
    step_call, replay_call = launch._Step.__call__, launch.Replay.__call__
    for name in names:
        for shape in shapes:
            call, _case = repeated_call(name, shape)
            kept = tuple(call())
            via_fast, via_c, _outs = launches_only(call)
            res: dict[str, list[float]] = {"call": [], "nolaunch": [], "noreplay": [], "fast": [], "c": []}
            try:
                for _ in range(5):
                    for variant in ("call", "nolaunch", "noreplay"):
                        launch._Step.__call__ = step_call if variant == "call" else (lambda self, sources: None)
                        launch.Replay.__call__ = (lambda self, tensors, kept=kept: kept) \
                            if variant == "noreplay" else replay_call
                        res[variant].append(submit_us(call))
                    launch._Step.__call__, launch.Replay.__call__ = step_call, replay_call
                    res["fast"].append(submit_us(via_fast))
                    if via_c is not None:
                        res["c"].append(submit_us(via_c))
            finally:
                launch._Step.__call__, launch.Replay.__call__ = step_call, replay_call
            c_us = f"{min(res['c']):9.1f}" if res["c"] else f"{'—':>9}"
            print(f"{name:<10} {str(shape):>14} {min(res['call']):7.1f} {min(res['nolaunch']):10.1f}"
                  f" {min(res['noreplay']):10.1f} {min(res['fast']):9.1f} {c_us}", flush=True)


if __name__ == "__main__":
    # these variants are of the Python replay (launch._FastLaunch's switches); the compiled
    # replay would serve the repeated calls past them (benchmarks/native_launch.py times it)
    import os

    os.environ["RLTRITON_NATIVE"] = "0"
    split = "--breakdown" in sys.argv
    argv = [a for a in sys.argv[1:] if a != "--breakdown"]
    names = argv[0].split(",") if argv else (["gae"] if split else ["gae", "vtrace", "td_lambda", "retrace"])
    shapes = [tuple(int(v) for v in s.split("x")) for s in argv[1].split(",")] if len(argv) > 1 \
        else ([(32768, 8)] if split else [(4096, 128), (32768, 8), (16, 262144)])
    (breakdown if split else main)(names, shapes)
