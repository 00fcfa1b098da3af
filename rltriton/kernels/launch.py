"""Launchers: from a canonical :class:`~rltriton.assigner.Problem` to one kernel launch.

The host side only views tensors as ``[rows, T]`` (a reshape of the time-last views the
assigner made; a view whenever the batch dims merge, which holds for batch-major and
time-major storage alike), reads their strides, picks a cached tile config and launches.
Absent optional tensors are constexpr branches in the kernel: their pointer arguments
receive an existing tensor that the kernel never reads. Nothing here synchronises.
"""

from __future__ import annotations

import functools
import struct
from typing import TYPE_CHECKING, NamedTuple

import torch
import triton
import triton.language as tl
from torch import Tensor

from rltriton.kernels.backward import gae_kernel, retrace_kernel, td_lambda_kernel, vtrace_kernel
from rltriton.kernels.forward import forward_kernel

if TYPE_CHECKING:
    from rltriton.assigner import CreditAssigner, Problem

_NV_NONE, _NV_NEXT, _NV_BOOTSTRAP, _NV_LAST = 0, 1, 2, 3
_TILE = 2048  # most elements of a [BLOCK_N, BLOCK_T] tile
_MAX_BLOCK_T = 512
_PROGRAMS_PER_SM = 4  # programs wanted per multiprocessor before rows are split in time
_SPLIT_MIN_ELEMS = 1 << 18  # below this a single pass wins over a second launch
_MAX_SEGMENTS = 1024
_DEFAULT_SMS = 132  # the CPU interpreter has no device to ask

# Output allocators. Tests replace these with NaN-filling versions so that an element a
# kernel fails to write shows up as NaN.
empty_like = torch.empty_like
empty = torch.empty


class Plan(NamedTuple):
    """How one call is cut: tile shape, warps, and the time split (``segments`` of
    ``seg_len`` steps; 1 segment is a single pass)."""

    block_n: int
    block_t: int
    num_warps: int
    segments: int
    seg_len: int


@functools.lru_cache(maxsize=16)
def _sm_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def _prev_pow2(x: int) -> int:
    return 1 << (max(x, 1).bit_length() - 1)


@functools.lru_cache(maxsize=4096)
def plan(R: int, T: int, width: int = 1, sms: int = _DEFAULT_SMS) -> Plan:
    """The launch plan for R rows (lanes) of T steps. ``width`` divides the tile budget
    (the action axis of Retrace's action form).

    Rows are tiled so that there are about ``_PROGRAMS_PER_SM`` programs per SM (short rows
    get many rows per program, long rows one); when even one row per program leaves the
    GPU underfilled and the problem is large, rows are cut into segments run in parallel
    (two launches: summaries, then carry-in and outputs).
    """
    target = _PROGRAMS_PER_SM * sms
    block_t = min(triton.next_power_of_2(max(T, 1)), _MAX_BLOCK_T)
    max_bn = max(1, _TILE // (block_t * width))
    block_n = max(1, min(max_bn, _prev_pow2(R // target), triton.next_power_of_2(max(R, 1))))
    programs = triton.cdiv(R, block_n)
    n_chunks = triton.cdiv(T, block_t)
    segments, seg_len = 1, n_chunks * block_t
    if programs < target and n_chunks > 1 and R * T >= _SPLIT_MIN_ELEMS:
        want = min(n_chunks, triton.cdiv(2 * target, programs), _MAX_SEGMENTS)
        per_seg = triton.cdiv(n_chunks, want)
        segments, seg_len = triton.cdiv(n_chunks, per_seg), per_seg * block_t
    # Triton's scan lowering needs at least one element per thread (no replicated layouts):
    # pad tiny tiles with masked rows up to a warp.
    block_n = max(block_n, triton.cdiv(32, block_t))
    elems = block_n * block_t
    num_warps = 4 if elems * width >= 1024 else (2 if elems * width >= 256 else 1)
    num_warps = min(num_warps, max(1, elems // 32))
    return Plan(block_n, block_t, num_warps, segments, seg_len)


def plan_for(R: int, T: int, device: torch.device, width: int = 1) -> Plan:
    sms = _sm_count(device.index if device.index is not None else torch.cuda.current_device()) \
        if device.type == "cuda" else _DEFAULT_SMS
    return plan(R, T, width, sms)


def _launch(kernel, lanes: int, T: int, pl: Plan, args: list, meta: dict, dtype: torch.dtype, device) -> None:
    """One pass (PHASE 0), or the two passes of the time split. ``args`` are the kernel's
    arguments up to ``T`` (exclusive); ``lanes`` rows are tiled by the plan."""
    rows_grid = triton.cdiv(lanes, pl.block_n)
    common = dict(BLOCK_N=pl.block_n, BLOCK_T=pl.block_t, num_warps=pl.num_warps, **meta)
    if pl.segments == 1:
        kernel[(rows_grid, 1)](*args, T, pl.seg_len, args[0], args[0], PHASE=0, S_BLOCK=1, **common)
        return
    sum_a = torch.empty((lanes, pl.segments), dtype=dtype, device=device)
    sum_b = torch.empty((lanes, pl.segments), dtype=dtype, device=device)
    grid = (rows_grid, pl.segments)
    # the summary tile of the carry-in scan also needs an element per thread
    s_block = max(triton.next_power_of_2(pl.segments), 32 * pl.num_warps)
    kernel[grid](*args, T, pl.seg_len, sum_a, sum_b, PHASE=1, S_BLOCK=s_block, **common)
    kernel[grid](*args, T, pl.seg_len, sum_a, sum_b, PHASE=2, S_BLOCK=s_block, **common)


@functools.lru_cache(maxsize=1024)
def split_scalar(x: float) -> tuple[float, float]:
    """``x`` as float32 ``hi + lo`` (Triton passes Python floats as float32)."""
    hi = struct.unpack("f", struct.pack("f", x))[0]
    lo = struct.unpack("f", struct.pack("f", x - hi))[0]
    return hi, lo


def _rows(x: Tensor, T: int) -> Tensor:
    """A time-last ``[*B, T]`` view as ``[rows, T]`` (a view when the batch dims merge)."""
    return x.reshape(-1, T)


def _st(x: Tensor | None) -> tuple[int, int]:
    return (0, 0) if x is None else (x.stride(0), x.stride(1))


def _dt(p: Problem):
    return tl.float64 if p.dtype == torch.float64 else tl.float32


def _output(p: Problem, like: Tensor) -> tuple[Tensor, Tensor]:
    """An output in the caller's layout (strides of ``like``) and its ``[rows, T]`` view."""
    caller = like.movedim(-1, p.time_dim)
    out = empty_like(caller, dtype=p.dtype)
    try:
        return out, out.movedim(p.time_dim, -1).view(-1, p.T)
    except RuntimeError:  # the caller's batch dims do not merge: write time-last instead
        flat = empty(p.shape, dtype=p.dtype, device=p.device)
        return flat.movedim(-1, p.time_dim), flat.view(-1, p.T)


def _coef(c, T: int, dummy: Tensor) -> tuple[Tensor, int, int, float, float, bool]:
    """(pointer, stride_n, stride_t, hi, lo, is_tensor) for gamma or lam."""
    if isinstance(c, Tensor):
        c2 = _rows(c, T)
        return c2, c2.stride(0), c2.stride(1), 0.0, 0.0, True
    hi, lo = split_scalar(float(c))
    return dummy, 0, 0, hi, lo, False


def _common(p: Problem) -> tuple[list, dict, Tensor]:
    """Arguments shared by the backward kernels: flags, boundary form, gamma, lam."""
    T = p.T
    dummy = _rows(p.tensors["rewards"], T)
    term = None if p.terminated is None else _rows(p.terminated, T)
    trunc = None if p.truncated is None else _rows(p.truncated, T)
    if p.next_values is not None:
        nv, mode = _rows(p.next_values, T), _NV_NEXT
    elif p.bootstrap_values is not None:
        nv, mode = _rows(p.bootstrap_values, T), _NV_BOOTSTRAP
    else:
        nv, mode = None, (_NV_LAST if p.last_value is not None else _NV_NONE)
    lv = None if p.last_value is None else p.last_value.reshape(-1)
    g, sgn, sgt, ghi, glo, g_tensor = _coef(p.gamma, T, dummy)
    lm, sln, slt, lhi, llo, l_tensor = _coef(p.lam, T, dummy)
    args = [
        term if term is not None else dummy, *_st(term),
        trunc if trunc is not None else dummy, *_st(trunc),
        nv if nv is not None else dummy, *_st(nv),
        lv if lv is not None else dummy, 0 if lv is None else lv.stride(0),
        g, sgn, sgt, ghi, glo, lm, sln, slt, lhi, llo,
    ]
    meta = dict(
        HAS_TERM=term is not None, HAS_TRUNC=trunc is not None, NV_MODE=mode,
        G_TENSOR=g_tensor, L_TENSOR=l_tensor, DT=_dt(p),
    )
    return args, meta, dummy


def run_backward(kind: str, p: Problem, assigner: CreditAssigner) -> tuple[Tensor, ...]:
    """Launch the fused kernel of a backward estimator; outputs in the caller's layout."""
    T = p.T
    R = p.shape.numel() // T
    common, meta, dummy = _common(p)
    r = _rows(p.tensors["rewards"], T)
    like = p.tensors["rewards"]
    pl = plan_for(R, T, p.device)
    if kind == "gae":
        v = _rows(p.tensors["values"], T)
        adv, adv2 = _output(p, like)
        tgt, tgt2 = _output(p, like)
        args = [r, *_st(r), v, *_st(v), *common, adv2, *_st(adv2), tgt2, *_st(tgt2), R]
        _launch(gae_kernel, R, T, pl, args, meta, p.dtype, p.device)
        return adv, tgt
    if kind == "td_lambda":
        values = p.tensors.get("values")
        v = None if values is None else _rows(values, T)
        out, out2 = _output(p, like)
        args = [r, *_st(r), v if v is not None else dummy, *_st(v), *common, out2, *_st(out2), R]
        _launch(td_lambda_kernel, R, T, pl, args, {**meta, "HAS_VALUES": v is not None}, p.dtype, p.device)
        return (out,)
    if kind == "vtrace":
        v = _rows(p.tensors["values"], T)
        lr = _rows(p.tensors["log_rhos"], T)
        vs, vs2 = _output(p, like)
        pg, pg2 = _output(p, like)
        args = [
            r, *_st(r), v, *_st(v), *common, lr, *_st(lr),
            *split_scalar(assigner.rho_bar), *split_scalar(assigner.c_bar), *split_scalar(assigner.pg_rho_bar),
            vs2, *_st(vs2), pg2, *_st(pg2), R,
        ]
        _launch(vtrace_kernel, R, T, pl, args, meta, p.dtype, p.device)
        return vs, pg
    if kind == "retrace":
        qt, qt2 = _output(p, like)
        adv, adv2 = _output(p, like)
        if "action_values" in p.tensors:
            av = p.tensors["action_values"]
            A = av.shape[-1]
            av3 = av.reshape(-1, T, A)
            pi3 = p.tensors["target_probs"].reshape(-1, T, A)
            act = _rows(p.tensors["actions"], T)
            lr = _rows(p.tensors["behavior_log_probs"], T)
            block_a = triton.next_power_of_2(A)
            pl = plan_for(R, T, p.device, block_a)
            q = v = dummy
            av_args = [av3, *av3.stride(), pi3, *pi3.stride(), act, *_st(act), A]
        else:
            q = _rows(p.tensors["q_values"], T)
            v = _rows(p.tensors["state_values"], T)
            lr = _rows(p.tensors["log_rhos"], T)
            block_a = 1
            av_args = [dummy, 0, 0, 0, dummy, 0, 0, 0, dummy, 0, 0, 1]
        args = [
            r, *_st(r), v, *_st(v), *common, q, *_st(q), lr, *_st(lr), *split_scalar(assigner.c_bar),
            *av_args, qt2, *_st(qt2), adv2, *_st(adv2), R,
        ]
        meta = {**meta, "ACTION_FORM": "action_values" in p.tensors, "BLOCK_A": block_a}
        _launch(retrace_kernel, R, T, pl, args, meta, p.dtype, p.device)
        return qt, adv
    raise ValueError(f"kind: expected one of gae, td_lambda, vtrace, retrace, got {kind!r}")


def run_forward(kind: str, p: Problem, assigner: CreditAssigner) -> tuple[Tensor]:
    """Launch the forward kernel (eligibility traces, episodic prefix sums)."""
    T = p.T
    nb = len(p.batch_shape)
    x = p.tensors["x"]  # [*B, T, *F]
    feat = x.shape[nb + 1 :]
    F = feat.numel()
    R = p.batch_shape.numel()
    x3 = x.reshape(R, T, F)
    caller = x.movedim(nb, p.time_dim)
    out = empty_like(caller, dtype=p.dtype)
    try:
        out3 = out.movedim(p.time_dim, nb).view(R, T, F)
    except RuntimeError:  # caller's dims do not merge: write [*B, T, *F] contiguous
        flat = empty(x.shape, dtype=p.dtype, device=p.device)
        out, out3 = flat.movedim(nb, p.time_dim), flat.view(R, T, F)
    d = p.tensors.get("dones")
    d2 = None if d is None else _rows(d, T)
    init = p.tensors.get("initial")
    init2 = None if init is None else init.reshape(R, F)
    g, sgn, sgt, ghi, glo, g_tensor = _coef(p.gamma, T, x3)
    lm, sln, slt, lhi, llo, l_tensor = _coef(p.lam, T, x3)
    k = 0 if kind == "traces" else (1 if assigner.boundary == "ends_at" else 2)
    args = [
        x3, *x3.stride(), d2 if d2 is not None else x3, *_st(d2),
        g, sgn, sgt, ghi, glo, lm, sln, slt, lhi, llo,
        init2 if init2 is not None else x3, *((0, 0) if init2 is None else init2.stride()),
        out3, *out3.stride(), R, F,
    ]
    meta = dict(
        KIND=k, HAS_DONES=d2 is not None, HAS_INIT=init2 is not None,
        G_TENSOR=g_tensor, L_TENSOR=l_tensor, DT=_dt(p),
    )
    _launch(forward_kernel, R * F, T, plan_for(R * F, T, p.device), args, meta, p.dtype, p.device)
    return (out,)
