"""Which repeated calls the compiled replay (``rltriton.kernels.native``) arms, and what a full
call costs: for each shape, layout (batch-major ``[N, T]``, time-major ``[T, N]``) and
estimator, the median full call (synchronised, host and device) over repeated calls, then each
recorded replay's state: ``native`` (True armed, False never, None not yet), its launches, whether
it makes scratch buffers, and for each launch whether it has a fast launch and a plain spec.

    python benchmarks/replay_status.py [--shapes 512x512,4096x512] [--calls 200]

GPU only; prints one line per case.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import rltriton as rt  # noqa: E402
from benchmarks.common import perf_counter_us  # noqa: E402
from rltriton.assigner import instance  # noqa: E402
from rltriton.estimators.gae import GAE  # noqa: E402
from rltriton.estimators.td_lambda import TDLambda  # noqa: E402
from rltriton.kernels import native  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="8x128,4096x128,512x512,256x1024,512x2048,4096x512,4096x2048,16384x512")
    ap.add_argument("--calls", type=int, default=200)
    a = ap.parse_args()
    for item in a.shapes.split(","):
        n, t = (int(x) for x in item.split("x"))
        for tm in (False, True):
            shape = (t, n) if tm else (n, t)
            r, v = torch.randn(shape, device="cuda"), torch.randn(shape, device="cuda")
            term = torch.rand(shape, device="cuda") < 0.01
            last = torch.randn(n, device="cuda")
            kw = dict(gamma=0.99, lam=0.95, terminated=term, last_value=last, time_dim=0 if tm else -1)
            for name, cls, fn in (("gae", GAE, rt.gae), ("td_lambda", TDLambda, rt.td_lambda)):
                # wall time of one synchronised call, host and device: the median of a.calls
                us = perf_counter_us(functools.partial(fn, r, v, **kw), calls=a.calls, trials=1, warmup=20)
                est = instance(cls, 0.99, 0.95)
                info = []
                for key, rep in est._replays.items():
                    if key[0] != kw["time_dim"] or key[3] is None or key[3][0] != r.shape:
                        continue
                    specs = ["-" if st.fast is None else ("plain" if native.step_spec(st.fast) else "not plain")
                             for st in rep.steps]
                    info.append(f"native={rep.native} launches={len(rep.steps)} scratch={bool(rep.scratch)} {specs}")
                print(f"{name:10s} {n:6d}x{t:<6d} {'tm' if tm else 'bm'} full {us:6.1f} us  {'; '.join(info)}",
                      flush=True)


if __name__ == "__main__":
    main()
