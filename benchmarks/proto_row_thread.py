"""Prototype (session 40; not the library's kernel): short batch-major rows (8-32 steps) with
one whole row a thread. The library's 8-step tiles give a row to 4 lanes (2 steps a thread;
discounted returns 32768 x 8: [32, 8] tiles on 4 warps, 14 shared-memory loads a thread for
a layout conversion), and 32768 x 8 misses the floor goal for five estimators (1.26-1.44x in
session 39) while the time-major call of the same shape, whose lanes tiles scan a row in one
thread's registers, is faster than the batch-major one. Here a row is read as groups of 4
steps, each a [BN, 1, 4] tile (one 16-byte access a thread; Triton gives the 4 steps to one
thread and the rows to the lanes), scanned group by group from the last in registers with the
library's cut (``scan.madd``): no shuffle, no shared memory.

    python3 benchmarks/proto_row_thread.py 32768x8,16384x8,4096x8,32768x16   # on the GPU
"""
from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import rltriton as rt  # noqa: E402
from benchmarks.common import device_time_us, stream_floor  # noqa: E402
from rltriton.kernels.scan import group_pick, group_tile, madd  # noqa: E402


@triton.jit
def _steps(x):
    return group_pick(x, 0), group_pick(x, 1), group_pick(x, 2), group_pick(x, 3)


@triton.jit
def row_thread(r_ptr, v_ptr, term_ptr, lv_ptr, out_ptr, ret_ptr, R, g, lam, T: tl.constexpr, BN: tl.constexpr,
               GAE: tl.constexpr, CUT: tl.constexpr):
    """GAE (``GAE``) or discounted returns with a last_value, terminations only, on [R, T]
    rows, BN rows a program, a row a thread (T a multiple of 4); GAE writes the returns
    (advantages + values) to ``ret_ptr`` too, as the library's call does."""
    rows = tl.program_id(0) * BN + tl.arange(0, BN)
    rmask = rows < R
    k = tl.arange(0, 4)[None, None, :]
    base = rows[:, None, None] * T + k
    m = rmask[:, None, None] & (k < 4)
    lv = tl.load(lv_ptr + rows, mask=rmask, other=0.0)[:, None]
    nv = lv  # the value after the group's last step
    c = lv  # discounted returns: the carry holds the window-edge value
    if GAE:
        c = tl.zeros_like(lv)
    for gi in tl.static_range(T // 4):
        off = base + 4 * (T // 4 - 1 - gi)  # groups from the last in time
        r = tl.load(r_ptr + off, mask=m, other=0.0)
        gd = tl.where(tl.load(term_ptr + off, mask=m, other=0) != 0, 0.0, g)
        g0, g1, g2, g3 = _steps(gd)
        if GAE:
            v = tl.load(v_ptr + off, mask=m, other=0.0)
            v0, v1, v2, v3 = _steps(v)
            r0, r1, r2, r3 = _steps(r)
            d3 = r3 + g3 * nv - v3
            d2 = r2 + g2 * v3 - v2
            d1 = r1 + g1 * v2 - v1
            d0 = r0 + g0 * v1 - v0
            nv = v0
            if gi == 0:  # the window's last step: nothing after it in the scan
                s3 = d3
            else:
                s3 = madd(d3, g3 * lam, c, CUT)
            s2 = madd(d2, g2 * lam, s3, CUT)
            s1 = madd(d1, g1 * lam, s2, CUT)
            s0 = madd(d0, g0 * lam, s1, CUT)
        else:
            r0, r1, r2, r3 = _steps(r)
            s3 = madd(r3, g3, c, CUT)
            s2 = madd(r2, g2, s3, CUT)
            s1 = madd(r1, g1, s2, CUT)
            s0 = madd(r0, g0, s1, CUT)
        s = group_tile(s0, s1, s2, s3)
        tl.store(out_ptr + off, s, mask=m)
        if GAE:
            tl.store(ret_ptr + off, s + v, mask=m)
        c = s0


def main() -> None:
    torch.manual_seed(0)
    for spec in sys.argv[1].split(","):
        n, T = (int(x) for x in spec.split("x"))
        r = torch.randn(n, T, device="cuda")
        v = torch.randn(n, T, device="cuda")
        term = torch.rand(n, T, device="cuda") < 0.05
        lv = torch.randn(n, device="cuda")
        out = torch.empty_like(r)
        ret = torch.empty_like(r)
        for est in ("discounted_returns", "gae"):
            is_gae = est == "gae"
            if is_gae:
                library = partial(rt.gae, r, v, gamma=0.99, lam=0.95, terminated=term, last_value=lv)
                floor = stream_floor([r, v, term], [out, ret])
            else:
                library = partial(rt.discounted_returns, r, gamma=0.99, terminated=term, last_value=lv)
                floor = stream_floor([r, term], [out])
            ref = library()
            ref, ref_ret = ref if isinstance(ref, tuple) else (ref, None)
            cands = {"library": library, "floor": floor}
            for bn, w in ((32, 1), (64, 1), (64, 2), (128, 2), (128, 4), (256, 4), (256, 8)):
                cands[f"row a thread BN={bn} warps={w}"] = partial(
                    row_thread[(triton.cdiv(n, bn),)], r, v, term, lv, out, ret, n, 0.99, 0.95, T=T, BN=bn, GAE=is_gae,
                    CUT=True, num_warps=w)
            times: dict[str, tuple[float, float]] = {}
            for _round in range(2):  # interleaved
                for name, fn in cands.items():
                    err = 0.0
                    if name not in ("library", "floor"):
                        out.fill_(float("nan"))
                        ret.fill_(float("nan"))
                        fn()
                        err = (out - ref).abs().max().item()
                        if ref_ret is not None:
                            err = max(err, (ret - ref_ret).abs().max().item())
                    us = device_time_us(fn)
                    times[name] = min(times.get(name, (us, err))[0], us), err
            print(f"== {est} {n}x{T}", flush=True)
            for name, (us, err) in sorted(times.items(), key=lambda kv: kv[1][0]):
                print(f"   {name:28s} {us:6.2f} us   max|diff| {err:.1e}", flush=True)


if __name__ == "__main__":
    main()
