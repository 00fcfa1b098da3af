"""Prototype (session 37; not the library's kernel): discounted returns on [N, T] batch-major
rows, one whole row a program, scanned in two levels as the library's group form
(``scan.group_scan``: groups of 4 steps, a thread's groups' maps composed in registers, a
lagged scan over the groups), against a form whose threads each hold P groups next to one
another in scan order: the tile is [1, T/(4P), P, 4], so Triton gives the P groups of a
thread to its registers (the group axis of T/(4P) to the lanes and warps), each thread
composes its P groups' maps in registers, and the scan over the groups runs over T/(4P)
elements, one a thread. The group form's [1, T/4, 4] on W warps gives each thread
T/(128 W) groups T/(4 P) apart instead, and Triton's scan then runs a warp-level scan for
each of them.

    python3 benchmarks/proto_pair_groups.py 512x4096,512x2048          # on the GPU
    PYTHONPATH=/tmp/tri36 python benchmarks/proto_pair_groups.py --sass 4096  # SASS, no GPU
"""
from __future__ import annotations

import collections
import re
import sys
from functools import partial
from pathlib import Path

import torch
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rltriton.kernels.scan import _neg_zero, group_scan, group_steps, lagged_scan, madd  # noqa: E402


@triton.jit
def _pick_h(x, h: tl.constexpr):
    """Slice ``h`` of axis 2 of [1, NJ, P] (registers of one thread: a masked sum)."""
    hi = tl.arange(0, x.shape[2])[None, None, :]
    return tl.sum(tl.where(hi == h, x, _neg_zero(x)), axis=2)


@triton.jit
def pair_scan(alpha, beta, carry, CUT: tl.constexpr):
    """The states of a [1, NJ, P, 4] tile: group g = P j + h (at [0, j, h]) holds 4 steps
    ascending in time, groups in scan order (descending time); ``carry`` [1] enters group 0."""
    P: tl.constexpr = alpha.shape[2]
    a0, a1, a2, a3, b0, b1, b2, b3, fa, fb = group_steps(alpha, beta, CUT)  # [1, NJ, P]
    # each thread's P groups composed in scan order (h = 0 first): the map entering j
    pa = _pick_h(fa, 0)
    pb = _pick_h(fb, 0)
    for h in tl.static_range(1, P):
        pa = madd(_pick_h(fa, h), _pick_h(fb, h), pa, CUT)
        pb = _pick_h(fb, h) * pb
    _p, q, _x, y = lagged_scan(pa, pb, 1, CUT)
    e = madd(y, q, carry[:, None], CUT)  # [1, NJ]: the state entering group P j
    hi = tl.arange(0, P)[None, None, :]
    ent = tl.zeros(fa.shape, fa.dtype) + e[:, :, None]
    for h in tl.static_range(1, P):
        e = madd(_pick_h(fa, h - 1), _pick_h(fb, h - 1), e, CUT)
        ent = tl.where(hi == h, e[:, :, None], ent)
    s3 = madd(a3, b3, ent, CUT)
    s2 = madd(a2, b2, s3, CUT)
    s1 = madd(a1, b1, s2, CUT)
    s0 = madd(a0, b0, s1, CUT)
    k = tl.arange(0, 4)[None, None, None, :]
    out = tl.where(k == 0, s0[:, :, :, None], tl.where(k == 1, s1[:, :, :, None],
                   tl.where(k == 2, s2[:, :, :, None], s3[:, :, :, None])))
    return out


@triton.jit
def dr_rows(r_ptr, term_ptr, lv_ptr, out_ptr, g, T: tl.constexpr, P: tl.constexpr, CUT: tl.constexpr):
    """Discounted returns of row ``program_id`` (T a power of two, one chunk), P groups a
    thread (P = 0: the library's group form, ``scan.group_scan``)."""
    row = tl.program_id(0)
    if P == 0:
        gi = tl.arange(0, T // 4)[None, :, None]
        k = tl.arange(0, 4)[None, None, :]
        ts = (T - 4) - 4 * gi + k
    else:
        # j along axis 1 and h along axis 2: Triton's load layout takes the axes of equal
        # contiguity in ascending order after the vector's, so the lanes and warps go along
        # j and each thread holds its P groups h in registers
        j = tl.arange(0, T // (4 * P))[None, :, None, None]
        h = tl.arange(0, P)[None, None, :, None]
        k = tl.arange(0, 4)[None, None, None, :]
        ts = (T - 4) - 4 * (P * j + h) + k
    off = row.to(tl.int64) * T + ts
    r = tl.load(r_ptr + off)
    d = tl.load(term_ptr + off) != 0
    lv = tl.load(lv_ptr + row + tl.zeros([1], tl.int32))
    last = ts == T - 1
    gd = tl.where(d, 0.0, g)
    if P == 0:
        alpha = r + tl.where(last, gd * lv[:, None, None], 0.0)
        beta = tl.where(last, 0.0, gd)
        s, _later, _c = group_scan(alpha, beta, tl.zeros([1], tl.float32), CUT)
    else:
        alpha = r + tl.where(last, gd * lv[:, None, None, None], 0.0)
        beta = tl.where(last, 0.0, gd)
        s = pair_scan(alpha, beta, tl.zeros([1], tl.float32), CUT)
    tl.store(out_ptr + off, s)


VARIANTS = [(0, 16), (0, 8), (2, 16), (2, 8), (4, 16), (4, 8), (4, 4), (8, 8), (8, 4), (8, 2)]


def sass_counts(T: int) -> None:
    """SASS instructions a thread and registers of each variant (Triton's own ptxas, sm_90)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from benchmarks.sass_counts import resources, sass

    for p, w in VARIANTS:
        sig = {"r_ptr": "*fp32", "term_ptr": "*u8", "lv_ptr": "*fp32", "out_ptr": "*fp32", "g": "fp32",
               "T": "constexpr", "P": "constexpr", "CUT": "constexpr"}
        consts = {(5,): T, (6,): p, (7,): True}
        attrs = {(i,): [["tt.divisibility", 16]] for i in range(4)}
        try:
            c = triton.compile(ASTSource(dr_rows, sig, consts, attrs), target=GPUTarget("cuda", 90, 32),
                               options=dict(num_warps=w))
        except Exception as exc:  # noqa: BLE001 (a variant Triton cannot compile: say so, go on)
            print(f"P={p} warps={w}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            continue
        text = sass(c)
        ops = re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", text)
        top = collections.Counter(o.split(".")[0] for o in ops).most_common(8)
        print(f"P={p} warps={w}: {len(ops)} SASS a thread ({len(ops) * w} a warp's worth x warps), "
              f"{resources(c)}; {', '.join(f'{o} {n}' for o, n in top)}")


def main() -> None:
    if sys.argv[1] == "--sass":
        sass_counts(int(sys.argv[2]))
        return
    import rltriton as rt
    from benchmarks.common import device_time_us

    torch.manual_seed(0)
    for shape in sys.argv[1].split(","):
        n, T = (int(x) for x in shape.split("x"))
        r = torch.randn(n, T, device="cuda")
        term = (torch.rand(n, T, device="cuda") < 0.05).to(torch.uint8)
        lv = torch.randn(n, device="cuda")
        library = partial(rt.discounted_returns, r, gamma=0.99, terminated=term.bool(), last_value=lv)
        ref = library()
        out = torch.empty_like(r)
        calls = {"library": library}
        for p, w in VARIANTS:
            calls[f"P={p} warps={w}"] = partial(dr_rows[(n,)], r, term, lv, out, 0.99, T=T, P=p, CUT=True,
                                               num_warps=w)
        errs = {}
        for name, call in calls.items():
            if name != "library":
                out.fill_(float("nan"))
                call()
                errs[name] = (out - ref).abs().max().item()
        # interleaved rounds, the best of each
        best = {name: float("inf") for name in calls}
        for _ in range(3):
            for name, call in calls.items():
                best[name] = min(best[name], device_time_us(call))
        print(f"== {n}x{T}")
        for name in calls:
            print(f"   {name:16s} {best[name]:6.1f} us   max|diff| {errs.get(name, 0.0):.1e}")


if __name__ == "__main__":
    main()
