"""Host time of a repeated call through the compiled replay (``rltriton.kernels.native``)
against the Python replay, and against PufferLib's op where it loads, interleaved in one
process on the GPU::

    python benchmarks/native_launch.py [gae,vtrace,...] [RxT,...]

The calls are the harness's (``peers.rltriton_candidate`` on ``peers.make_rollout``, the
functional API with ``backend="auto"``); the compiled module is built first when missing
(``native.build()``). Both paths' outputs are checked equal, bit for bit, before timing.
Figures, µs, minimum over interleaved rounds: **submit** (``host.submit_us``: issuing one call,
no synchronize between calls) and **full** (``common.full_call_us``: CUDA events around one
call after a synchronize, as ``run.py`` reports it). PufferLib (GAE only) writes into a
preallocated output, as its API does.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import peers  # noqa: E402
from benchmarks.common import full_call_us  # noqa: E402
from benchmarks.host import submit_us  # noqa: E402
from rltriton.assigner import _INSTANCES  # noqa: E402
from rltriton.kernels import launch, native  # noqa: E402

SHAPES = "32768x8,8192x8,4096x16,16384x16,8192x32,16384x32"


class PythonPath:
    """While entered, every cached estimator instance takes the Python replay (its compiled
    table set aside and its replays kept from arming)."""

    def __enter__(self):
        self.saved = []
        for inst in _INSTANCES.values():
            self.saved.append((inst, inst._native, {k: r.native for k, r in inst._replays.items()}))
            inst._native = None
            for r in inst._replays.values():
                r.native = False
        return self

    def __exit__(self, *exc):
        for inst, table, states in self.saved:
            inst._native = table
            for k, r in inst._replays.items():
                r.native = states.get(k)


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    names = args[0].split(",") if args else ["gae", "vtrace", "td_lambda"]
    shapes = [tuple(int(v) for v in s.split("x")) for s in (args[1] if len(args) > 1 else SHAPES).split(",")]
    path = native.build()
    assert native.load() is not None, "the compiled replay did not load"
    puff_ok, puff_note = peers.pufferlib_status()
    print(torch.__version__, native.module_path().name, path, "pufferlib:", puff_ok, puff_note, flush=True)
    rows = []
    for name in names:
        for N, T in shapes:
            launch.clear_caches()
            ro = peers.make_rollout(name, N, T, device="cuda", truncations=False, gamma=0.99, lam=0.95, seed=0)
            cand = peers.rltriton_candidate(ro, "auto")
            call = cand.fn
            for _ in range(4):
                call()
            torch.cuda.synchronize()
            inst = [i for i in _INSTANCES.values() if i._native is not None and len(i._native)]
            armed = bool(inst)
            a = call()
            with PythonPath():
                b = call()
            a = a if isinstance(a, tuple) else (a,)
            b = b if isinstance(b, tuple) else (b,)
            equal = all(torch.equal(x, y) for x, y in zip(a, b))
            puff = peers.pufferlib_candidate(ro).fn if (puff_ok and name == "gae") else None
            res: dict[str, list[float]] = {"native submit": [], "python submit": [], "native full": [],
                                           "python full": [], "pufferlib full": [], "pufferlib submit": []}
            for _ in range(5):
                res["native submit"].append(submit_us(call))
                res["native full"].append(full_call_us(call, calls=30, trials=2, warmup=5))
                with PythonPath():
                    res["python submit"].append(submit_us(call))
                    res["python full"].append(full_call_us(call, calls=30, trials=2, warmup=5))
                if puff is not None:
                    res["pufferlib submit"].append(submit_us(puff))
                    res["pufferlib full"].append(full_call_us(puff, calls=30, trials=2, warmup=5))
            r = {k: min(v) for k, v in res.items() if v}
            rows.append((name, (N, T), armed, equal, r))
            print(name, (N, T), "armed", armed, "equal", equal,
                  " ".join(f"{k}={v:.1f}" for k, v in r.items()), flush=True)
    print("\n| call | armed | equal | submit: Python replay | compiled | full: Python replay | compiled | "
          "PufferLib full | PufferLib submit |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, (N, T), armed, equal, r in rows:
        p = r.get("pufferlib full")
        ps = r.get("pufferlib submit")
        print(f"| {name} {N} × {T} | {armed} | {equal} | {r['python submit']:.1f} | {r['native submit']:.1f} | "
              f"{r['python full']:.1f} | {r['native full']:.1f} | {'—' if p is None else f'{p:.1f}'} | "
              f"{'—' if ps is None else f'{ps:.1f}'} |")


if __name__ == "__main__":
    main()
