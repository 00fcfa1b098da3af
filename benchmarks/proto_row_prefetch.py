"""Prototype (session 40; not the library's kernel): discounted returns on [N, T] batch-major
rows of 512-4096 steps, one whole row a tile, each program taking ITERS rows (pid, pid +
programs, ...), against the library's call. The classic grid's 512 x 4096 runs one row a
program on 16 warps, two programs an SM, in two waves, and Nsight Compute saw half its stalls
waiting on memory (session 28): a program loads its row, then scans it with no load in
flight. Here a program of ITERS rows issues the next row's loads before it scans the current
one, in registers (``dr_prefetch``), or through Triton's pipelined loop (``cp.async``,
``proto_row_tiles.dr_loop`` with STAGES = 2), so that the second wave's loads overlap the
first's scans. Same group scan as the library (``scan.group_scan``, the cut).

    python3 benchmarks/proto_row_prefetch.py 512x4096,512x2048,4096x512   # on the GPU
"""
from __future__ import annotations

import itertools
import sys
from functools import partial
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import rltriton as rt  # noqa: E402
from benchmarks.common import device_time_us, stream_floor  # noqa: E402
from benchmarks.proto_row_tiles import dr_loop  # noqa: E402
from rltriton.kernels.scan import group_scan  # noqa: E402


@triton.jit
def _row_loads(r_ptr, term_ptr, lv_ptr, row, R, ts, T: tl.constexpr):
    ok = (tl.zeros(ts.shape, tl.int32) + row) < R  # (a tensor mask: the interpreter takes no scalar)
    off = row.to(tl.int64) * T + ts
    r = tl.load(r_ptr + off, mask=ok, other=0.0)
    d = tl.load(term_ptr + off, mask=ok, other=0)
    one = tl.zeros([1], tl.int32) + row
    lv = tl.load(lv_ptr + one, mask=one < R, other=0.0)
    return r, d, lv


@triton.jit
def dr_prefetch(r_ptr, term_ptr, lv_ptr, out_ptr, R, g, T: tl.constexpr, ITERS: tl.constexpr,
                CUT: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    gi = tl.arange(0, T // 4)[None, :, None]
    k = tl.arange(0, 4)[None, None, :]
    ts = (T - 4) - 4 * gi + k  # groups of 4 steps ascending, groups in descending time
    last = ts == T - 1
    r, d, lv = _row_loads(r_ptr, term_ptr, lv_ptr, pid, R, ts, T)
    for it in tl.static_range(ITERS):
        row = pid + it * nprog
        if it + 1 < ITERS:
            # the next row's loads go out before this row's scan
            r_n, d_n, lv_n = _row_loads(r_ptr, term_ptr, lv_ptr, row + nprog, R, ts, T)
        gd = tl.where(d != 0, 0.0, g)
        alpha = r + tl.where(last, gd * lv[:, None, None], 0.0)
        beta = tl.where(last, 0.0, gd)
        s, _later, _c = group_scan(alpha, beta, tl.zeros([1], tl.float32), CUT)
        tl.store(out_ptr + row.to(tl.int64) * T + ts, s, mask=(tl.zeros(ts.shape, tl.int32) + row) < R)
        if it + 1 < ITERS:
            r, d, lv = r_n, d_n, lv_n


def main() -> None:
    torch.manual_seed(0)
    for spec in sys.argv[1].split(","):
        n, T = (int(x) for x in spec.split("x"))
        r = torch.randn(n, T, device="cuda")
        term = torch.rand(n, T, device="cuda") < 0.01
        lv = torch.randn(n, device="cuda")
        library = partial(rt.discounted_returns, r, gamma=0.99, terminated=term, last_value=lv)
        ref = library()
        out = torch.empty_like(r)
        floor = stream_floor([r, term], [out])  # (the last_value, one a row, is noise here)
        cands = {"library": library, "floor": floor}
        for w, iters in itertools.product((8, 16), (1, 2, 4)):
            grid = (triton.cdiv(n, iters),)
            cands[f"prefetch w={w} iters={iters}"] = partial(
                dr_prefetch[grid], r, term, lv, out, n, 0.99, T=T, ITERS=iters, CUT=True, num_warps=w)
            if iters > 1:
                cands[f"cp.async w={w} iters={iters}"] = partial(
                    dr_loop[grid], r, term, lv, out, n, n, 0.99, T=T, BN=1, ITERS=iters, STAGES=2, CUT=True,
                    num_warps=w)
        print(f"== {n}x{T}", flush=True)
        times = {}
        for _round in range(2):  # interleaved: A B C ... A B C
            for name, fn in cands.items():
                if name not in ("library", "floor"):
                    out.fill_(float("nan"))
                    fn()
                    err = (out - ref).abs().max().item()
                else:
                    err = 0.0
                us = device_time_us(fn)
                times[name] = min(times.get(name, (us, err))[0], us), err
        for name, (us, err) in sorted(times.items(), key=lambda kv: kv[1][0]):
            print(f"   {name:24s} {us:6.1f} us   max|diff| {err:.1e}", flush=True)


if __name__ == "__main__":
    main()
