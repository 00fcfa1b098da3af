"""Prototype (session 28; not the library's kernel): discounted returns on [N, 128] batch-major
rows, each program walking ITERS row tiles (pid, pid + programs, ...) in a loop of STAGES
pipelining depth, against the library's call, with the library's scan (scan.group_scan, the
cut). It found that several row tiles a program, not pipelining, is what gains (the
backward kernels' ROW_ITERS, launch._ROW_ITERS):

    python3 benchmarks/proto_row_tiles.py 8192,16384,32768    # on the GPU (Triton 3.6 tested)

Results: benchmarks/results/2026-12-02-h200-s28-proto-row-tiles.txt."""
import itertools
import sys
from functools import partial

import torch
import triton
import triton.language as tl

import rltriton as rt
from benchmarks.common import device_time_us
from rltriton.kernels.scan import group_scan


@triton.jit
def dr_loop(r_ptr, term_ptr, lv_ptr, out_ptr, R, n_blocks, g, T: tl.constexpr, BN: tl.constexpr,
            ITERS: tl.constexpr, STAGES: tl.constexpr, CUT: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    gi = tl.arange(0, T // 4)[None, :, None]
    k = tl.arange(0, 4)[None, None, :]
    ts = (T - 4) - 4 * gi + k
    last = ts == T - 1
    for it in tl.range(0, ITERS, num_stages=STAGES):
        rb = pid + it * nprog
        rows = rb * BN + tl.arange(0, BN)
        rmask = rows < R
        m = rmask[:, None, None] & (ts < T)
        off = rows[:, None, None].to(tl.int64) * T + ts
        r = tl.load(r_ptr + off, mask=m, other=0.0)
        d = tl.load(term_ptr + off, mask=m, other=0) != 0
        lv = tl.load(lv_ptr + rows, mask=rmask, other=0.0)
        gd = tl.where(d, 0.0, g)
        alpha = r + tl.where(last, gd * lv[:, None, None], 0.0)
        beta = tl.where(last, 0.0, gd)
        s, _later, _c = group_scan(alpha, beta, tl.zeros([BN], tl.float32), CUT)
        tl.store(out_ptr + off, s, mask=m)


def main() -> None:
    torch.manual_seed(0)
    T = 128
    for n in [int(x) for x in sys.argv[1].split(",")]:
        r = torch.randn(n, T, device="cuda")
        term = torch.rand(n, T, device="cuda") < 0.01
        lv = torch.randn(n, device="cuda")
        library = partial(rt.discounted_returns, r, gamma=0.99, terminated=term, last_value=lv)
        ref = library()
        lib = device_time_us(library)
        out = torch.empty_like(r)
        rows = []
        for bn, w, iters, st in itertools.product((2, 4), (1, 2), (1, 2, 4, 8), (1, 2, 3)):
            if iters == 1 and st > 1:
                continue
            nb = triton.cdiv(n, bn)
            call = partial(dr_loop[(triton.cdiv(nb, iters),)], r, term, lv, out, n, nb, 0.99, T=T, BN=bn,
                           ITERS=iters, STAGES=st, CUT=True, num_warps=w)
            out.fill_(float("nan"))
            call()
            err = (out - ref).abs().max().item()
            rows.append((device_time_us(call), bn, w, iters, st, err))
        rows.sort()
        print(f"== {n}x{T}: library {lib:.1f} us")
        for us, bn, w, iters, st, err in rows[:12]:
            print(f"   {us:5.1f}  BN={bn} warps={w} iters={iters} stages={st}  max|diff| {err:.1e}")
        for us, bn, w, iters, _st, _err in rows:
            if iters == 1:
                print(f"   (one tile a program) {us:5.1f}  BN={bn} warps={w}")


if __name__ == "__main__":
    main()
