"""A/B device times of rltriton versions, side by side on one GPU.

    mkdir -p _ab/<rev> && git archive <rev> rltriton | tar -x -C _ab/<rev>   # one folder per version
    python benchmarks/ab.py _ab/<rev1> _ab/<rev2> . [--shapes 512x4096,...] [--est gae,vtrace,gae_tm]

``_ab/`` is git-ignored: carry it to the GPU machine (the device tool's ``carry``).

Estimators: gae, vtrace, td_lambda, discounted_returns, retrace, retrace_av (the action form, 4 actions), traces
(eligibility traces, the forward kernel). Names with ``_tm`` (``gae_tm``) time time-major
``[T, N]`` inputs; a final ``_bv`` (``gae_tm_bv``) passes ``bootstrap_values`` instead of
``last_value``. A version folder can differ from another in a module setting alone (e.g.
``launch._TM_STAGES = 1`` in its copy). Each
version runs in its own process (its ``rltriton`` first on ``sys.path``) on the same
inputs (seeded), and the table gives the device time (CUDA-graph replay, µs) per version
and shape. Used to find which commit moved a time; the floor and peers are ``run.py``'s job.
Each version's outputs are summed (float64 sum of absolute values) and compared with the first
version's: a ``MISMATCH`` line names a version whose plan changed a result beyond rounding.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHAPES = "4096x128,4096x2048,16384x512,512x4096,32768x8,32768x64,16x262144,1x1048576"


def _one(src: str, shapes: list[tuple[int, int]], ests: list[str]) -> dict:
    sys.path.insert(0, str(Path(src).resolve()))
    sys.path.insert(1, str(ROOT))
    import torch

    import rltriton as rt
    from benchmarks.common import device_time_us

    assert Path(rt.__file__).resolve().is_relative_to(Path(src).resolve()), rt.__file__
    out: dict = {}
    sums: dict = {}
    out["_sums"] = sums
    for n, t in shapes:
        for est in ests:
            tm = "_tm" in est  # time-major storage: [T, N], time_dim=0
            bv = est.endswith("_bv")  # bootstrap_values (per step) instead of last_value
            shape = (t, n) if tm else (n, t)
            g = torch.Generator(device="cuda").manual_seed(0)
            r = torch.randn(shape, device="cuda", generator=g)
            v = torch.randn(shape, device="cuda", generator=g)
            lr = 0.3 * torch.randn(shape, device="cuda", generator=g)
            term = torch.rand(shape, device="cuda", generator=g) < 0.01
            boot = torch.randn(n, device="cuda", generator=g)
            kw = dict(gamma=0.99, terminated=term, time_dim=0 if tm else -1)
            if bv:
                kw["bootstrap_values"] = torch.randn(shape, device="cuda", generator=g)
            else:
                kw["last_value"] = boot
            calls = {
                "gae": partial(rt.gae, r, v, lam=0.95, **kw),
                "vtrace": partial(rt.vtrace, r, v, lr, **kw),
                "td_lambda": partial(rt.td_lambda, r, v, lam=0.95, **kw),
                "discounted_returns": partial(rt.discounted_returns, r, **kw),
                "retrace": partial(rt.retrace, r, v + 0.1, v, lr, lam=0.95, **kw),
                "traces": partial(rt.eligibility_traces, r, gamma=0.99, lam=0.95, dones=term,
                                  time_dim=kw["time_dim"]),
                "prefix_sum": partial(rt.episodic_prefix_sum, r, term, time_dim=kw["time_dim"]),
            }
            if est.startswith("retrace_av"):
                # 4 actions, [*B, T, A] action values and target probabilities
                A = 4
                av = torch.randn(*shape, A, device="cuda", generator=g)
                pi = torch.softmax(torch.randn(*shape, A, device="cuda", generator=g), dim=-1)
                act = torch.randint(0, A, shape, device="cuda", generator=g)
                blp = torch.log(torch.rand(shape, device="cuda", generator=g) * 0.9 + 0.1)
                calls["retrace_av"] = partial(rt.retrace_from_action_values, r, av, pi, act, blp, lam=0.95, **kw)
            call = calls[est.removesuffix("_bv").removesuffix("_tm")]
            res = call()
            # a checksum of the outputs: versions that differ in a plan must agree (to rounding)
            res = res if isinstance(res, tuple) else (res,)
            sums[f"{est} {n}x{t}"] = [float(o.double().abs().sum()) for o in res]
            out[f"{est} {n}x{t}"] = device_time_us(call)
            del r, v, lr, term, boot, calls
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("srcs", nargs="*")
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--est", default="gae,vtrace")
    ap.add_argument("--child", default=None)
    a = ap.parse_args()
    shapes = [tuple(int(x) for x in s.split("x")) for s in a.shapes.split(",")]
    ests = a.est.split(",")
    if a.child:
        print(json.dumps(_one(a.child, shapes, ests)))
        return
    res = {}
    for src in a.srcs:
        p = subprocess.run([sys.executable, __file__, "--child", src, "--shapes", a.shapes, "--est", a.est],
                           capture_output=True, text=True)
        if p.returncode:
            print(f"{src}: failed\n{p.stderr[-2000:]}")
            continue
        res[src] = json.loads(p.stdout.strip().splitlines()[-1])
    keys = [f"{e} {n}x{t}" for n, t in shapes for e in ests]
    names = [Path(s).name or s for s in res]
    first = next(iter(res.values()), {}).get("_sums", {})
    for s, r in res.items():
        for k, sums in r.get("_sums", {}).items():
            ref = first.get(k)
            if ref and any(not abs(a - b) <= 1e-4 * max(abs(b), 1.0) for a, b in zip(sums, ref)):
                print(f"MISMATCH {Path(s).name} {k}: output checksums {sums} against {ref}")
    print(f"{'case':<22}" + "".join(f"{n[:10]:>11}" for n in names))
    for k in keys:
        print(f"{k:<22}" + "".join(f"{res[s].get(k, float('nan')):>11.1f}" for s in res))


if __name__ == "__main__":
    main()
