"""Fused kernels of the backward estimators: GAE, TD(lambda) / discounted returns,
V-trace and Retrace (both forms).

Each program owns ``BLOCK_N`` rows and walks their time axis in chunks of ``BLOCK_T``
steps from the end, carrying one state per row between chunks. Inside a chunk it loads
the raw rollout tensors (native dtypes, any strides, int64 offsets), builds the
coefficients of ``A_t = alpha_t + beta_t A_{t+1}`` in registers, scans, and writes every
output of the estimator. Out-of-range steps of the last chunk are identity elements
(alpha = 0, beta = 1), so they do not disturb the scan.

A chunk is held in the group form of ``scan.chunk_times`` (``[BN, BT/4, 4]``: groups of
four steps in descending order, ascending within a group, so loads and stores stay vector
accesses) and turned into scan order only for the scan, which is then a forward
``tl.associative_scan``: Triton's ``reverse=True`` costs 7.7x the warp shuffles (92
against 12 per thread for GAE at [1, 512] on 4 warps, counted in the PTX for sm_90), and
the kernels are bound by that pipe (Nsight Compute: 88% L1/shared throughput, MIO stalls).

Rows too few to fill the GPU are split in time (grid axis 1, segments of SEG steps):
PHASE 1 stores each segment's composed map, PHASE 2 turns the summaries of the later
segments into its carry-in and writes the outputs; PHASE 3 does both in one pass by
decoupled look-back, PHASE 4 in one cooperative pass with a grid barrier (PHASE 5: the same
without the barrier, launched twice by the CPU interpreter; see ``scan.py``); PHASE 0 is
one pass over whole rows.

``TIME_MAJOR`` (storage with unit row stride, CleanRL's ``[T, N]``) turns the tile around:
lanes along rows, each thread's steps in its registers, no groups (``scan.program_tile``).
Many short time-major rows instead take ``GROUP_TILES = 5`` on ``TM_W`` thread groups
along time (with ``TIME_MAJOR`` off): every lane along rows (tiles of fewer than 32 rows:
the lanes left over along time too), the warps along time, each thread a run of
consecutive steps (``scan.tm_lanes_scan``, ``launch._TM_LANES``, ``launch._tm_groups``).

Structure (which optional tensors exist, the boundary form, tensor vs scalar gamma/lam,
the arithmetic dtype) is ``tl.constexpr``; hyper-parameters are runtime scalars.
``ONE_CHUNK`` (every program's segment is one chunk: rows of at most ``BLOCK_T`` steps,
the common case) makes the chunk loop static, so the carry hand-over between chunks (a
cross-warp reduction per chunk) is compiled out: ~15% of the device time at 16384 x 512.
"""

from __future__ import annotations

import triton
import triton.language as tl

from rltriton.kernels.scan import (
    aligned,
    chunk_map,
    chunk_start,
    chunk_tile,
    clip_max,
    compose,
    constant_chunk_map,
    exact_t,
    group_order,
    interior_chunk,
    load_coef,
    load_flag,
    load_next,
    load_next_only,
    load_tile,
    next_state_values,
    row_stride,
    row_values,
    scalar,
    scan_order,
    scan_step,
    scan_step_lagged,
    segment_setup,
    store_summary,
    t_off,
)


@triton.jit
def _prologue(
    term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
    g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
    rows, ts, mask,
    HAS_TERM: tl.constexpr, HAS_TRUNC: tl.constexpr, G_TENSOR: tl.constexpr, L_TENSOR: tl.constexpr,
    DT: tl.constexpr,
):
    """Flags and coefficients of a tile: (trunc, done, g, l, gk = g (1 - term))."""
    false = (ts < 0) & (rows < 0)
    term = false
    trunc = false
    if HAS_TERM:
        term = load_flag(term_ptr, rows, ts, s_term_n, s_term_t, mask)
    if HAS_TRUNC:
        trunc = load_flag(trunc_ptr, rows, ts, s_trunc_n, s_trunc_t, mask)
    done = term | trunc
    g = load_coef(g_ptr, g_hi, g_lo, rows, ts, s_g_n, s_g_t, mask, G_TENSOR, DT)
    lm = load_coef(l_ptr, l_hi, l_lo, rows, ts, s_l_n, s_l_t, mask, L_TENSOR, DT)
    g = g + tl.zeros(ts.shape, DT) + tl.zeros(rows.shape, DT)
    lm = lm + tl.zeros(ts.shape, DT) + tl.zeros(rows.shape, DT)
    gk = tl.where(term, 0.0, g)
    return trunc, done, g, lm, gk


@triton.jit
def gae_kernel(
    r_ptr, s_r_n, s_r_t, v_ptr, s_v_n, s_v_t,
    term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
    nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n,
    g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
    adv_ptr, s_a_n, s_a_t, tgt_ptr, s_o_n, s_o_t,
    R, T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
    HAS_TERM: tl.constexpr, HAS_TRUNC: tl.constexpr, NV_MODE: tl.constexpr,
    G_TENSOR: tl.constexpr, L_TENSOR: tl.constexpr, DT: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, PHASE: tl.constexpr, S_BLOCK: tl.constexpr,
    ONE_CHUNK: tl.constexpr, TIME_MAJOR: tl.constexpr, GROUP_TILES: tl.constexpr, STAGES: tl.constexpr = 1,
    SEG_MAP_FWD: tl.constexpr = False, CARRY_PROD: tl.constexpr = False, SEG_FLIP: tl.constexpr = False,
    SEG_GROUPS: tl.constexpr = 0, TM_W: tl.constexpr = 0,
    ROW_DIV: tl.constexpr = 1, TM_DIV: tl.constexpr = 1, MAP_REDUCE: tl.constexpr = False,
    INTERIOR: tl.constexpr = False,
    PDL: tl.constexpr = False, ROWS_T: tl.constexpr = False, EXACT_T: tl.constexpr = False,
):
    """GAE: alpha = r + g (1-term) nv - V, beta = g l (1-done); outputs A and A + V.
    ``MAP_REDUCE`` (scalar gamma and lam): PHASE 1's chunk maps by
    :func:`scan.constant_chunk_map`'s reductions instead of a scan (uncut: a non-finite
    alpha past an episode's end reaches the map as 0 * x, as in the scan). ``INTERIOR``:
    see :func:`td_lambda_kernel`. ``EXACT_T``: likewise (``launch._exact_t``: GAE on the
    time-major lanes tiles of whole rows only)."""
    # the divisibility of T and the row strides (launch._row_div), for vector accesses; the row
    # strides T itself where every per-step tensor lies in contiguous rows (launch._ROWS_T)
    T = aligned(T, ROW_DIV)
    T = exact_t(T, BLOCK_T, EXACT_T, PHASE, ONE_CHUNK)
    s_r_n = row_stride(s_r_n, T, ROW_DIV, ROWS_T)
    s_v_n = row_stride(s_v_n, T, ROW_DIV, ROWS_T)
    s_term_n = row_stride(s_term_n, T, ROW_DIV, ROWS_T)
    s_trunc_n = row_stride(s_trunc_n, T, ROW_DIV, ROWS_T)
    s_nv_n = row_stride(s_nv_n, T, ROW_DIV, ROWS_T)
    s_g_n = row_stride(s_g_n, T, ROW_DIV, ROWS_T)
    s_l_n = row_stride(s_l_n, T, ROW_DIV, ROWS_T)
    s_a_n = row_stride(s_a_n, T, ROW_DIV, ROWS_T)
    s_o_n = row_stride(s_o_n, T, ROW_DIV, ROWS_T)
    # time-major storage: the divisibility of R and the time strides (launch._row_div)
    R = aligned(R, TM_DIV)
    s_r_t = aligned(s_r_t, TM_DIV)
    s_v_t = aligned(s_v_t, TM_DIV)
    s_term_t = aligned(s_term_t, TM_DIV)
    s_trunc_t = aligned(s_trunc_t, TM_DIV)
    s_nv_t = aligned(s_nv_t, TM_DIV)
    s_g_t = aligned(s_g_t, TM_DIV)
    s_l_t = aligned(s_l_t, TM_DIV)
    s_a_t = aligned(s_a_t, TM_DIV)
    s_o_t = aligned(s_o_t, TM_DIV)
    rows, row_mask, seg, n_segs, n_chunks, carry, s_sr, s_ss = segment_setup(
        R, T, SEG, state_ptr, sum_a_ptr, sum_b_ptr, BLOCK_N, BLOCK_T, PHASE, S_BLOCK, DT, ONE_CHUNK, TIME_MAJOR,
        GROUP_TILES, CARRY_PROD, SEG_FLIP=SEG_FLIP, PDL=PDL, EXACT_T=EXACT_T,
    )
    if ONE_CHUNK:  # a static one-trip loop: the carry out of it is dead code, not a reduction
        n_chunks = 1
    inside = False
    if INTERIOR:
        inside = interior_chunk(seg, SEG, T, BLOCK_T, PHASE, ONE_CHUNK, BLOCK_N, TIME_MAJOR, GROUP_TILES)
    NV_IN: tl.constexpr = 0 if NV_MODE == 3 else NV_MODE  # (no step of an interior chunk is T - 1)
    if inside:
        # (td_lambda_kernel's INTERIOR: pointers at the segment's first step, T a constant)
        t0 = tl.cast(seg, tl.int64) * SEG
        seg_a, seg_b = _gae_chunks(
            r_ptr + t0 * s_r_t, s_r_n, s_r_t, v_ptr + t0 * s_v_t, s_v_n, s_v_t,
            term_ptr + t0 * s_term_t, s_term_n, s_term_t, trunc_ptr + t0 * s_trunc_t, s_trunc_n, s_trunc_t,
            nv_ptr + t0 * s_nv_t, s_nv_n, s_nv_t, lv_ptr, s_lv_n, g_ptr + t0 * s_g_t, s_g_n, s_g_t, g_hi, g_lo,
            l_ptr + t0 * s_l_t, s_l_n, s_l_t, l_hi, l_lo,
            adv_ptr + t0 * s_a_t, s_a_n, s_a_t, tgt_ptr + t0 * s_o_t, s_o_n, s_o_t,
            2 * BLOCK_T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
            rows, tl.full(row_mask.shape, 1, tl.int1), seg, n_segs, n_chunks, carry, s_sr, s_ss, 0,
            HAS_TERM, HAS_TRUNC, NV_IN, G_TENSOR, L_TENSOR, DT, BLOCK_N, BLOCK_T, PHASE, S_BLOCK,
            ONE_CHUNK, TIME_MAJOR, GROUP_TILES, STAGES, SEG_MAP_FWD, CARRY_PROD, SEG_GROUPS, TM_W, MAP_REDUCE,
        )
    else:
        seg_a, seg_b = _gae_chunks(
            r_ptr, s_r_n, s_r_t, v_ptr, s_v_n, s_v_t,
            term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
            nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n, g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
            adv_ptr, s_a_n, s_a_t, tgt_ptr, s_o_n, s_o_t,
            T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
            rows, row_mask, seg, n_segs, n_chunks, carry, s_sr, s_ss, seg,
            HAS_TERM, HAS_TRUNC, NV_MODE, G_TENSOR, L_TENSOR, DT, BLOCK_N, BLOCK_T, PHASE, S_BLOCK,
            ONE_CHUNK, TIME_MAJOR, GROUP_TILES, STAGES, SEG_MAP_FWD, CARRY_PROD, SEG_GROUPS, TM_W, MAP_REDUCE,
        )
    store_summary(sum_a_ptr, sum_b_ptr, s_sr, s_ss, rows, row_mask, seg, seg_a, seg_b, PHASE)


@triton.jit
def _gae_chunks(
    r_ptr, s_r_n, s_r_t, v_ptr, s_v_n, s_v_t,
    term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
    nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n,
    g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
    adv_ptr, s_a_n, s_a_t, tgt_ptr, s_o_n, s_o_t,
    T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
    rows, row_mask, seg, n_segs, n_chunks, carry, s_sr, s_ss, tseg,
    HAS_TERM: tl.constexpr, HAS_TRUNC: tl.constexpr, NV_MODE: tl.constexpr,
    G_TENSOR: tl.constexpr, L_TENSOR: tl.constexpr, DT: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, PHASE: tl.constexpr, S_BLOCK: tl.constexpr,
    ONE_CHUNK: tl.constexpr, TIME_MAJOR: tl.constexpr, GROUP_TILES: tl.constexpr, STAGES: tl.constexpr,
    SEG_MAP_FWD: tl.constexpr, CARRY_PROD: tl.constexpr, SEG_GROUPS: tl.constexpr, TM_W: tl.constexpr,
    MAP_REDUCE: tl.constexpr,
):
    """GAE's chunk loop over one program's segment, from ``carry``: writes the advantages and
    targets (PHASE 0/2) and returns the segment's map (seg_a, seg_b) (PHASE 1). ``tseg``: as
    in :func:`_td_lambda_chunks`."""
    REV: tl.constexpr = not (GROUP_TILES or TIME_MAJOR)  # chunks in time order: reverse scans
    seg_a = tl.zeros([BLOCK_N], DT)
    seg_b = tl.full([BLOCK_N], 1.0, DT)
    for i in tl.range(n_chunks, num_stages=STAGES):
        rows_t, row_mask_t, ts, mask = chunk_tile(
            tseg, SEG, T, i, n_chunks, rows, row_mask, BLOCK_T, TIME_MAJOR, GROUP_TILES, TM_W)
        trunc, done, g, lm, gk = _prologue(
            term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
            g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
            rows_t, ts, mask, HAS_TERM, HAS_TRUNC, G_TENSOR, L_TENSOR, DT,
        )
        r = load_tile(r_ptr, rows_t, ts, s_r_n, s_r_t, mask, DT)
        v = load_tile(v_ptr, rows_t, ts, s_v_n, s_v_t, mask, DT)
        v_next = load_next(v, v_ptr, rows, row_mask, ts, T, s_v_n, s_v_t, DT, GROUP_TILES)
        nv = next_state_values(
            v_next, nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n, rows_t, ts, T, mask, row_mask_t, trunc,
            True, HAS_TRUNC, NV_MODE, DT,
        )
        alpha = tl.where(mask, r + gk * nv - v, 0.0)
        beta = tl.where(mask, tl.where(done, 0.0, g * lm), 1.0)
        if GROUP_TILES == 3:  # rows one after another: a row's end ignores the next row (scan.chunk_tile)
            beta = tl.where(ts == T - 1, 0.0, beta)
        if PHASE == 1 and MAP_REDUCE:
            t_lo = chunk_start(tseg, SEG, i, n_chunks, BLOCK_T)
            k = scalar(g_hi, g_lo, DT) * scalar(l_hi, l_lo, DT)
            ca, cb = constant_chunk_map(alpha, beta, ts, t_lo, T, k, BLOCK_T)
            seg_a, seg_b = compose(seg_a, seg_b, ca, cb)
        elif PHASE == 1:
            ca, cb = chunk_map(scan_order(alpha, GROUP_TILES), scan_order(beta, GROUP_TILES), REV, SEG_MAP_FWD,
                               False, TM_W)
            seg_a, seg_b = compose(seg_a, seg_b, ca, cb)
        else:
            adv, carry = scan_step(
                scan_order(alpha, GROUP_TILES), scan_order(beta, GROUP_TILES), carry, state_ptr, sum_a_ptr, sum_b_ptr,
                incl_ptr, s_sr, s_ss, rows,
                row_mask, seg, n_segs, PHASE, True, S_BLOCK, ONE_CHUNK, REV, TIME_MAJOR, CARRY_PROD,
                SEG_GROUPS=SEG_GROUPS, LANES=GROUP_TILES == 4, TM_W=TM_W,
            )
            adv = group_order(adv, r)
            tl.store(adv_ptr + rows_t * s_a_n + t_off(ts, s_a_t), adv, mask=mask)
            tl.store(tgt_ptr + rows_t * s_o_n + t_off(ts, s_o_t), adv + v, mask=mask)
    return seg_a, seg_b


@triton.jit
def _td_lambda_chunks(
    r_ptr, s_r_n, s_r_t, v_ptr, s_v_n, s_v_t,
    term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
    nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n,
    g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
    out_ptr, s_o_n, s_o_t,
    T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
    rows, row_mask, seg, n_segs, n_chunks, carry, s_sr, s_ss, tseg,
    HAS_VALUES: tl.constexpr, HAS_TERM: tl.constexpr, HAS_TRUNC: tl.constexpr, NV_MODE: tl.constexpr,
    G_TENSOR: tl.constexpr, L_TENSOR: tl.constexpr, DT: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, PHASE: tl.constexpr, S_BLOCK: tl.constexpr,
    ONE_CHUNK: tl.constexpr, TIME_MAJOR: tl.constexpr, GROUP_TILES: tl.constexpr, STAGES: tl.constexpr,
    SEG_MAP_FWD: tl.constexpr, CARRY_PROD: tl.constexpr, CUT: tl.constexpr, CHECK: tl.constexpr,
    TM_W: tl.constexpr = 0, EDGE_CARRY: tl.constexpr = False, MAP_REDUCE: tl.constexpr = False,
    CONST_T: tl.constexpr = False,
):
    """TD(lambda)'s chunk loop over one program's segment, from ``carry``: returns the
    segment's map (seg_a, seg_b) (PHASE 1) and, with ``CHECK``, a scalar that is 0 when
    every value this pass produced (the returns written, or PHASE 1's map) is finite and NaN
    otherwise (the sum of each value times 0), else 0. ``CUT``: see :func:`scan.times`.
    ``MAP_REDUCE`` (scalar gamma and lam): PHASE 1's chunk maps by
    :func:`scan.constant_chunk_map`'s reductions instead of a scan. ``tseg``: the segment
    whose steps the chunks' times count from (``seg``, or 0 for pointers already moved to
    the segment's first step: td_lambda_kernel's ``INTERIOR``); ``seg`` places the summaries.
    ``CONST_T``: T is a constant (td_lambda_kernel's ``EXACT_T``)."""
    REV: tl.constexpr = not (GROUP_TILES or TIME_MAJOR)  # chunks in time order: reverse scans
    seg_a = tl.zeros([BLOCK_N], DT)
    seg_b = tl.full([BLOCK_N], 1.0, DT)
    if CHECK and PHASE != 1:
        # one addend per element of the tile, summed once after the loop (a reduction per
        # chunk would cost a barrier each)
        _rt0, _rm0, _ts0, mask0 = chunk_tile(tseg, SEG, T, 0, n_chunks, rows, row_mask, BLOCK_T, TIME_MAJOR,
                                             GROUP_TILES, TM_W)
        acc = tl.zeros(mask0.shape, DT)
    for i in tl.range(n_chunks, num_stages=STAGES):
        rows_t, row_mask_t, ts, mask = chunk_tile(
            tseg, SEG, T, i, n_chunks, rows, row_mask, BLOCK_T, TIME_MAJOR, GROUP_TILES, TM_W)
        trunc, done, g, lm, gk = _prologue(
            term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
            g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
            rows_t, ts, mask, HAS_TERM, HAS_TRUNC, G_TENSOR, L_TENSOR, DT,
        )
        r = load_tile(r_ptr, rows_t, ts, s_r_n, s_r_t, mask, DT)
        v_next = tl.zeros(r.shape, DT)
        if HAS_VALUES:
            v_next = load_next_only(v_ptr, rows, row_mask, ts, T, s_v_n, s_v_t, DT, GROUP_TILES)
        if EDGE_CARRY:
            # discounted returns from a carry that already holds the window-edge value
            # (td_lambda_kernel): t = T - 1 is an ordinary step, beta = g unless done, and
            # alpha is the reward (0 where masked, as loaded)
            cont = done == 0
            alpha = r
        else:
            nv = next_state_values(
                v_next, nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n, rows_t, ts, T, mask, row_mask_t, trunc,
                HAS_VALUES, HAS_TRUNC, NV_MODE, DT,
            )
            cont = (ts + 1 < T) & (done == 0)
            if NV_MODE == 0 and not HAS_VALUES and not (G_TENSOR or L_TENSOR):
                # discounted returns with no bootstrap: nv is 0 and the scalars are finite, so the
                # bootstrap term is 0 exactly; 0 * g cannot be folded by the compiler (a NaN g
                # would make it NaN), which cost 4 instructions an element; r is 0 where masked
                # (as loaded)
                alpha = r
            elif NV_MODE == 3 and not HAS_VALUES:
                # a last_value and no values: nv is 0 but at t = T - 1, where cont is false,
                # so the bootstrap term is g_k nv there and 0 before; written so, the term
                # folds away wherever the time is a constant (launch._EXACT_T) instead of
                # costing a 0 * g_k product and a select an element. Where masked, r and the
                # last_value are 0 as loaded, so alpha is too.
                alpha = r + tl.where(ts == T - 1, gk * nv, 0.0)
            else:
                alpha = r + gk * nv * tl.where(cont, 1.0 - lm, 1.0)
                if not CONST_T:
                    # with T a constant, T is the row (no step past it) and a row past R reads 0
                    # for r, the values and the bootstrap, so alpha is 0 there without this
                    # select (SASS a thread, TD(lambda), Triton 3.6: 512 x 4096 584 -> 568,
                    # 512 x 2048 472 -> 456, 16384 x 128's [8, 128] lanes 552 -> 536)
                    alpha = tl.where(mask, alpha, 0.0)
        if CONST_T:
            # past T a step is the identity (beta 1, alpha 0 as above), so a chunk's padding
            # passes the carry through; a row past R is never stored and never meets another
            # row's scan (the flat rows' end of row is beta = 0 at T - 1 whatever the mask),
            # so the time's mask is enough, and with T a constant it folds away (SASS a
            # thread, discounted returns 512 x 4096: 528 -> 512; 4096 x 128: 304 -> 296).
            # With T at run time it cost more than the whole mask, which the loads compute
            # anyway (time-major 16384 x 512: 1248 -> 1336; Triton 3.6)
            beta = tl.where(ts < T, tl.where(cont, g * lm, 0.0), 1.0)
        else:
            beta = tl.where(mask, tl.where(cont, g * lm, 0.0), 1.0)
        if PHASE == 1 and MAP_REDUCE:
            t_lo = chunk_start(tseg, SEG, i, n_chunks, BLOCK_T)
            k = scalar(g_hi, g_lo, DT) * scalar(l_hi, l_lo, DT)
            ca, cb = constant_chunk_map(alpha, beta, ts, t_lo, T, k, BLOCK_T, CUT)
            seg_a, seg_b = compose(seg_a, seg_b, ca, cb, CUT)
        elif PHASE == 1:
            ca, cb = chunk_map(scan_order(alpha, GROUP_TILES), scan_order(beta, GROUP_TILES), REV, SEG_MAP_FWD,
                               CUT, TM_W)
            seg_a, seg_b = compose(seg_a, seg_b, ca, cb, CUT)
        else:
            out, carry = scan_step(
                scan_order(alpha, GROUP_TILES), scan_order(beta, GROUP_TILES), carry, state_ptr, sum_a_ptr, sum_b_ptr,
                incl_ptr, s_sr, s_ss, rows,
                row_mask, seg, n_segs, PHASE, True, S_BLOCK, ONE_CHUNK, REV, TIME_MAJOR, CARRY_PROD, CUT,
                LANES=GROUP_TILES == 4, TM_W=TM_W,
            )
            out = group_order(out, r)
            tl.store(out_ptr + rows_t * s_o_n + t_off(ts, s_o_t), out, mask=mask)
            if CHECK:
                acc += out * 0.0
    if CHECK:
        if PHASE == 1:
            return seg_a, seg_b, tl.sum(seg_a * 0.0)
        else:
            return seg_a, seg_b, tl.sum(acc)
    else:
        return seg_a, seg_b, 0.0


@triton.jit
def td_lambda_kernel(
    r_ptr, s_r_n, s_r_t, v_ptr, s_v_n, s_v_t,
    term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
    nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n,
    g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
    out_ptr, s_o_n, s_o_t,
    R, T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
    HAS_VALUES: tl.constexpr, HAS_TERM: tl.constexpr, HAS_TRUNC: tl.constexpr, NV_MODE: tl.constexpr,
    G_TENSOR: tl.constexpr, L_TENSOR: tl.constexpr, DT: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, PHASE: tl.constexpr, S_BLOCK: tl.constexpr,
    ONE_CHUNK: tl.constexpr, TIME_MAJOR: tl.constexpr, GROUP_TILES: tl.constexpr, STAGES: tl.constexpr = 1,
    SEG_MAP_FWD: tl.constexpr = False, CARRY_PROD: tl.constexpr = False, SEG_FLIP: tl.constexpr = False,
    LAZY_CUT: tl.constexpr = False, TM_W: tl.constexpr = 0,
    ROW_DIV: tl.constexpr = 1, TM_DIV: tl.constexpr = 1, EDGE_CARRY: tl.constexpr = False,
    EXACT_T: tl.constexpr = False, MAP_REDUCE: tl.constexpr = False, INTERIOR: tl.constexpr = False,
    INTERIOR_LAZY: tl.constexpr = False,
    PDL: tl.constexpr = False, ROWS_T: tl.constexpr = False,
):
    """TD(lambda) (and discounted returns with lam = 1, no values). With cont_t = (t < T-1
    and not done_t): alpha = r + g (1-term) nv (1 - l cont), beta = g l cont. The scans cut
    where beta = 0 (``CUT``, scan.times): SPEC chooses nv_t there, so a NaN or inf return of
    a later episode does not reach an earlier one.

    ``LAZY_CUT`` (``launch._TD_LAZY_CUT``; not in the single passes of PHASE 3 to 5, whose
    programs wait for one another, so none may run its segment twice): the chunk loop
    runs first without the cut, which only differs where 0 meets a non-finite value, and
    that makes a NaN that reaches this pass's returns (or PHASE 1's map) too: every
    intermediate of the scan is added into some return. So when all it produced is finite
    it is the cut scan's result, and otherwise the program runs its segment again with the
    cut, from the same carry, writing over the first pass's returns.

    ``EXACT_T`` (``launch._EXACT_T``): a single pass whose one chunk is exactly the row
    (T == BLOCK_T), so T is the constant BLOCK_T and the segment 0: every step's time is then a
    constant of its register, and the tests t < T and t = T - 1 fold away.

    ``INTERIOR`` (``launch._INTERIOR``; the passes of a time split, one chunk a segment,
    one row a program, batch-major): a segment whose steps all lie before T - 1 (every
    segment of a split row but the last) has no masked step, no row end and no bootstrap at
    T - 1, so its program runs the chunk with the pointers moved to the segment's first step
    and T the constant 2 BLOCK_T: its times are constants, and every test against T folds
    away, as with ``EXACT_T``; a multiple of 16, so that Triton still proves the masks
    constant over each group of 4 steps and keeps the vector accesses. ``NV_MODE`` 3
    (``last_value`` at T - 1 only) is then ``NV_MODE`` 0. The last segment takes the
    general chunk.

    ``INTERIOR_LAZY`` (``launch._INTERIOR_LAZY``): the interior chunks take ``LAZY_CUT``'s
    form: scanned without the cut, checked, and run again with it (the general chunk, from
    the same carry) only where something came out non-finite."""
    # the divisibility of T and the row strides (launch._row_div), for vector accesses; the row
    # strides T itself where every per-step tensor lies in contiguous rows (launch._ROWS_T)
    T = aligned(T, ROW_DIV)
    T = exact_t(T, BLOCK_T, EXACT_T, PHASE, ONE_CHUNK)
    s_r_n = row_stride(s_r_n, T, ROW_DIV, ROWS_T)
    s_v_n = row_stride(s_v_n, T, ROW_DIV, ROWS_T)
    s_term_n = row_stride(s_term_n, T, ROW_DIV, ROWS_T)
    s_trunc_n = row_stride(s_trunc_n, T, ROW_DIV, ROWS_T)
    s_nv_n = row_stride(s_nv_n, T, ROW_DIV, ROWS_T)
    s_g_n = row_stride(s_g_n, T, ROW_DIV, ROWS_T)
    s_l_n = row_stride(s_l_n, T, ROW_DIV, ROWS_T)
    s_o_n = row_stride(s_o_n, T, ROW_DIV, ROWS_T)
    # time-major storage: the divisibility of R and the time strides (launch._row_div)
    R = aligned(R, TM_DIV)
    s_r_t = aligned(s_r_t, TM_DIV)
    s_v_t = aligned(s_v_t, TM_DIV)
    s_term_t = aligned(s_term_t, TM_DIV)
    s_trunc_t = aligned(s_trunc_t, TM_DIV)
    s_nv_t = aligned(s_nv_t, TM_DIV)
    s_g_t = aligned(s_g_t, TM_DIV)
    s_l_t = aligned(s_l_t, TM_DIV)
    s_o_t = aligned(s_o_t, TM_DIV)
    rows, row_mask, seg, n_segs, n_chunks, carry, s_sr, s_ss = segment_setup(
        R, T, SEG, state_ptr, sum_a_ptr, sum_b_ptr, BLOCK_N, BLOCK_T, PHASE, S_BLOCK, DT, ONE_CHUNK, TIME_MAJOR,
        GROUP_TILES, CARRY_PROD, True, SEG_FLIP=SEG_FLIP, PDL=PDL, EXACT_T=EXACT_T,
    )
    if ONE_CHUNK:  # a static one-trip loop: the carry out of it is dead code, not a reduction
        n_chunks = 1
    # EDGE_CARRY (launch._EDGE_CARRY): discounted returns (no values, so lam is 1; nv is
    # last_value at t = T - 1, or 0, no truncations) on whole rows start from a carry that
    # holds the window-edge value, so t = T - 1 is an ordinary step (r + g carry, cut where
    # terminated) and no step needs its own nv or a t = T - 1 test (discounted returns
    # [2, 128] on 2 warps: 253 -> 206 PTX instructions a thread, Triton 3.6).
    tl.static_assert(not EDGE_CARRY or (PHASE == 0 and not HAS_VALUES and not HAS_TRUNC and not L_TENSOR
                                        and (NV_MODE == 0 or NV_MODE == 3) and GROUP_TILES != 3),
                     "EDGE_CARRY: discounted returns on whole rows, no truncations, not rows end to end")
    LAZY: tl.constexpr = LAZY_CUT and PHASE < 3
    edge = False
    edge_carry = carry
    if EDGE_CARRY and NV_MODE == 3:
        edge_carry = row_values(lv_ptr, s_lv_n, rows, row_mask, DT)
        if LAZY:
            # uncut, a last step whose beta is 0 gives r + 0 * last_value as SPEC's arithmetic
            # does; whatever comes out non-finite sends the program to the exact pass below
            edge = True
        else:
            # with the cut, a last step whose beta is 0 (terminated, or gamma 0) gives r, where
            # SPEC's r + g (1 - term) last_value is NaN for a non-finite last_value: programs
            # holding one take the per-step nv instead
            finite = edge_carry * 0.0 == 0.0
            edge = tl.min(finite.to(tl.int32), 0) != 0
    elif EDGE_CARRY:
        edge = True
    inside = False
    if INTERIOR:
        tl.static_assert(not LAZY and not EDGE_CARRY, "INTERIOR: not the time-major LAZY_CUT, no edge carry")
        inside = interior_chunk(seg, SEG, T, BLOCK_T, PHASE, ONE_CHUNK, BLOCK_N, TIME_MAJOR, GROUP_TILES)
    NV_IN: tl.constexpr = 0 if NV_MODE == 3 else NV_MODE  # (no step of an interior chunk is T - 1)
    # (two whole calls, not one with the run-time test around alpha and cont inside the loop:
    # that form took 75 registers a thread for [64, 128] time-major lanes tiles on 16 warps
    # against these calls' 64, one program an SM instead of two; Triton 3.6)
    if INTERIOR_LAZY:
        # an interior chunk without the cut, then the general chunk with it from the same
        # carry, for the other segments and wherever the first made something non-finite:
        # two branches one after the other, so the kernel holds one copy of each path (a
        # second copy after the first, as LAZY's below, took 99 registers a thread against 80
        # for discounted returns' PHASE 2 on [1, 2048]; a loop of two trips, 167)
        seg_a = tl.zeros([BLOCK_N], DT)
        seg_b = tl.full([BLOCK_N], 1.0, DT)
        check = tl.sum(seg_a)
        if inside:
            t0 = tl.cast(seg, tl.int64) * SEG
            seg_a, seg_b, check = _td_lambda_chunks(
                r_ptr + t0 * s_r_t, s_r_n, s_r_t, v_ptr + t0 * s_v_t, s_v_n, s_v_t,
                term_ptr + t0 * s_term_t, s_term_n, s_term_t, trunc_ptr + t0 * s_trunc_t, s_trunc_n, s_trunc_t,
                nv_ptr + t0 * s_nv_t, s_nv_n, s_nv_t, lv_ptr, s_lv_n, g_ptr + t0 * s_g_t, s_g_n, s_g_t, g_hi, g_lo,
                l_ptr + t0 * s_l_t, s_l_n, s_l_t, l_hi, l_lo, out_ptr + t0 * s_o_t, s_o_n, s_o_t,
                2 * BLOCK_T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
                rows, tl.full(row_mask.shape, 1, tl.int1), seg, n_segs, n_chunks, carry, s_sr, s_ss, 0,
                HAS_VALUES, HAS_TERM, HAS_TRUNC, NV_IN, G_TENSOR, L_TENSOR, DT, BLOCK_N, BLOCK_T, PHASE, S_BLOCK,
                ONE_CHUNK, TIME_MAJOR, GROUP_TILES, STAGES, SEG_MAP_FWD, CARRY_PROD, False, True, TM_W, False,
                MAP_REDUCE,
            )
        if (check != 0) | (not inside):
            tl.debug_barrier()  # a first pass's stores land before the ones that replace them
            seg_a, seg_b, _again = _td_lambda_chunks(
                r_ptr, s_r_n, s_r_t, v_ptr, s_v_n, s_v_t, term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n,
                s_trunc_t, nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n, g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n,
                s_l_t, l_hi, l_lo, out_ptr, s_o_n, s_o_t, T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
                rows, row_mask, seg, n_segs, n_chunks, carry, s_sr, s_ss, seg,
                HAS_VALUES, HAS_TERM, HAS_TRUNC, NV_MODE, G_TENSOR, L_TENSOR, DT, BLOCK_N, BLOCK_T, PHASE,
                S_BLOCK, ONE_CHUNK, TIME_MAJOR, GROUP_TILES, STAGES, SEG_MAP_FWD, CARRY_PROD, True, False, TM_W,
                False, MAP_REDUCE, CONST_T=EXACT_T,
            )
    elif inside:
        # the segment's steps from its first (int64: a time stride may be large); one row a
        # program, and the grid has R of them, so the row mask is all true
        t0 = tl.cast(seg, tl.int64) * SEG
        every = tl.full(row_mask.shape, 1, tl.int1)
        seg_a, seg_b, check = _td_lambda_chunks(
            r_ptr + t0 * s_r_t, s_r_n, s_r_t, v_ptr + t0 * s_v_t, s_v_n, s_v_t,
            term_ptr + t0 * s_term_t, s_term_n, s_term_t, trunc_ptr + t0 * s_trunc_t, s_trunc_n, s_trunc_t,
            nv_ptr + t0 * s_nv_t, s_nv_n, s_nv_t, lv_ptr, s_lv_n, g_ptr + t0 * s_g_t, s_g_n, s_g_t, g_hi, g_lo,
            l_ptr + t0 * s_l_t, s_l_n, s_l_t, l_hi, l_lo, out_ptr + t0 * s_o_t, s_o_n, s_o_t,
            2 * BLOCK_T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
            rows, every, seg, n_segs, n_chunks, carry, s_sr, s_ss, 0,
            HAS_VALUES, HAS_TERM, HAS_TRUNC, NV_IN, G_TENSOR, L_TENSOR, DT, BLOCK_N, BLOCK_T, PHASE, S_BLOCK,
            ONE_CHUNK, TIME_MAJOR, GROUP_TILES, STAGES, SEG_MAP_FWD, CARRY_PROD, True, False, TM_W, False,
            MAP_REDUCE,
        )
    elif edge:
        seg_a, seg_b, check = _td_lambda_chunks(
            r_ptr, s_r_n, s_r_t, v_ptr, s_v_n, s_v_t, term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
            nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n, g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
            out_ptr, s_o_n, s_o_t, T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
            rows, row_mask, seg, n_segs, n_chunks, edge_carry, s_sr, s_ss, seg,
            HAS_VALUES, HAS_TERM, HAS_TRUNC, NV_MODE, G_TENSOR, L_TENSOR, DT, BLOCK_N, BLOCK_T, PHASE, S_BLOCK,
            ONE_CHUNK, TIME_MAJOR, GROUP_TILES, STAGES, SEG_MAP_FWD, CARRY_PROD, not LAZY, LAZY, TM_W, True,
            MAP_REDUCE, CONST_T=EXACT_T,
        )
    else:
        seg_a, seg_b, check = _td_lambda_chunks(
            r_ptr, s_r_n, s_r_t, v_ptr, s_v_n, s_v_t, term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
            nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n, g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
            out_ptr, s_o_n, s_o_t, T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
            rows, row_mask, seg, n_segs, n_chunks, carry, s_sr, s_ss, seg,
            HAS_VALUES, HAS_TERM, HAS_TRUNC, NV_MODE, G_TENSOR, L_TENSOR, DT, BLOCK_N, BLOCK_T, PHASE, S_BLOCK,
            ONE_CHUNK, TIME_MAJOR, GROUP_TILES, STAGES, SEG_MAP_FWD, CARRY_PROD, not LAZY, LAZY, TM_W, False,
            MAP_REDUCE, CONST_T=EXACT_T,
        )
    tl.static_assert(not INTERIOR_LAZY or INTERIOR, "INTERIOR_LAZY: interior chunks")
    if LAZY:
        if check != 0:  # NaN: something non-finite came out; the exact pass, with the cut
            tl.debug_barrier()  # the first pass's stores land before the ones that replace them
            seg_a, seg_b, _again = _td_lambda_chunks(
                r_ptr, s_r_n, s_r_t, v_ptr, s_v_n, s_v_t, term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n,
                s_trunc_t, nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n, g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n,
                s_l_t, l_hi, l_lo, out_ptr, s_o_n, s_o_t, T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
                rows, row_mask, seg, n_segs, n_chunks, carry, s_sr, s_ss, seg,
                HAS_VALUES, HAS_TERM, HAS_TRUNC, NV_MODE, G_TENSOR, L_TENSOR, DT, BLOCK_N, BLOCK_T, PHASE, S_BLOCK,
                ONE_CHUNK, TIME_MAJOR, GROUP_TILES, STAGES, SEG_MAP_FWD, CARRY_PROD, True, False, TM_W, False,
                MAP_REDUCE, CONST_T=EXACT_T,
            )
    store_summary(sum_a_ptr, sum_b_ptr, s_sr, s_ss, rows, row_mask, seg, seg_a, seg_b, PHASE)


@triton.jit
def vtrace_kernel(
    r_ptr, s_r_n, s_r_t, v_ptr, s_v_n, s_v_t,
    term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
    nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n,
    g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
    lr_ptr, s_lr_n, s_lr_t, rho_hi, rho_lo, c_hi, c_lo, pg_hi, pg_lo,
    vs_ptr, s_vs_n, s_vs_t, pg_ptr, s_pg_n, s_pg_t,
    R, T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
    HAS_TERM: tl.constexpr, HAS_TRUNC: tl.constexpr, NV_MODE: tl.constexpr,
    G_TENSOR: tl.constexpr, L_TENSOR: tl.constexpr, DT: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, PHASE: tl.constexpr, S_BLOCK: tl.constexpr,
    ONE_CHUNK: tl.constexpr, TIME_MAJOR: tl.constexpr, GROUP_TILES: tl.constexpr, STAGES: tl.constexpr = 1,
    SEG_MAP_FWD: tl.constexpr = False, CARRY_PROD: tl.constexpr = False, SEG_FLIP: tl.constexpr = False,
    SEG_GROUPS: tl.constexpr = 0, TM_W: tl.constexpr = 0,
    ROW_DIV: tl.constexpr = 1, TM_DIV: tl.constexpr = 1, INTERIOR: tl.constexpr = False,
    PDL: tl.constexpr = False, EXACT_T: tl.constexpr = False, ROWS_T: tl.constexpr = False,
):
    """V-trace: alpha = rho (r + g (1-term) nv - V), beta = g (1-done) c; vs = V + D, and
    the policy-gradient advantage from vs_{t+1} = V_{t+1} + D_{t+1}, which the lagged scan
    supplies in registers (no store-and-reload). ``INTERIOR``, ``EXACT_T``: see
    :func:`td_lambda_kernel`."""
    # the divisibility of T and the row strides (launch._row_div), for vector accesses; the row
    # strides T itself where every per-step tensor lies in contiguous rows (launch._ROWS_T)
    T = aligned(T, ROW_DIV)
    T = exact_t(T, BLOCK_T, EXACT_T, PHASE, ONE_CHUNK)
    s_r_n = row_stride(s_r_n, T, ROW_DIV, ROWS_T)
    s_v_n = row_stride(s_v_n, T, ROW_DIV, ROWS_T)
    s_term_n = row_stride(s_term_n, T, ROW_DIV, ROWS_T)
    s_trunc_n = row_stride(s_trunc_n, T, ROW_DIV, ROWS_T)
    s_nv_n = row_stride(s_nv_n, T, ROW_DIV, ROWS_T)
    s_g_n = row_stride(s_g_n, T, ROW_DIV, ROWS_T)
    s_l_n = row_stride(s_l_n, T, ROW_DIV, ROWS_T)
    s_lr_n = row_stride(s_lr_n, T, ROW_DIV, ROWS_T)
    s_vs_n = row_stride(s_vs_n, T, ROW_DIV, ROWS_T)
    s_pg_n = row_stride(s_pg_n, T, ROW_DIV, ROWS_T)
    # time-major storage: the divisibility of R and the time strides (launch._row_div)
    R = aligned(R, TM_DIV)
    s_r_t = aligned(s_r_t, TM_DIV)
    s_v_t = aligned(s_v_t, TM_DIV)
    s_term_t = aligned(s_term_t, TM_DIV)
    s_trunc_t = aligned(s_trunc_t, TM_DIV)
    s_nv_t = aligned(s_nv_t, TM_DIV)
    s_g_t = aligned(s_g_t, TM_DIV)
    s_l_t = aligned(s_l_t, TM_DIV)
    s_lr_t = aligned(s_lr_t, TM_DIV)
    s_vs_t = aligned(s_vs_t, TM_DIV)
    s_pg_t = aligned(s_pg_t, TM_DIV)
    rows, row_mask, seg, n_segs, n_chunks, carry, s_sr, s_ss = segment_setup(
        R, T, SEG, state_ptr, sum_a_ptr, sum_b_ptr, BLOCK_N, BLOCK_T, PHASE, S_BLOCK, DT, ONE_CHUNK, TIME_MAJOR,
        GROUP_TILES, CARRY_PROD, SEG_FLIP=SEG_FLIP, PDL=PDL, EXACT_T=EXACT_T,
    )
    if ONE_CHUNK:  # a static one-trip loop: the carry out of it is dead code, not a reduction
        n_chunks = 1
    inside = False
    if INTERIOR:
        inside = interior_chunk(seg, SEG, T, BLOCK_T, PHASE, ONE_CHUNK, BLOCK_N, TIME_MAJOR, GROUP_TILES)
    NV_IN: tl.constexpr = 0 if NV_MODE == 3 else NV_MODE  # (no step of an interior chunk is T - 1)
    if inside:
        # (td_lambda_kernel's INTERIOR: pointers at the segment's first step, T a constant)
        t0 = tl.cast(seg, tl.int64) * SEG
        seg_a, seg_b = _vtrace_chunks(
            r_ptr + t0 * s_r_t, s_r_n, s_r_t, v_ptr + t0 * s_v_t, s_v_n, s_v_t,
            term_ptr + t0 * s_term_t, s_term_n, s_term_t, trunc_ptr + t0 * s_trunc_t, s_trunc_n, s_trunc_t,
            nv_ptr + t0 * s_nv_t, s_nv_n, s_nv_t, lv_ptr, s_lv_n, g_ptr + t0 * s_g_t, s_g_n, s_g_t, g_hi, g_lo,
            l_ptr + t0 * s_l_t, s_l_n, s_l_t, l_hi, l_lo,
            lr_ptr + t0 * s_lr_t, s_lr_n, s_lr_t, rho_hi, rho_lo, c_hi, c_lo, pg_hi, pg_lo,
            vs_ptr + t0 * s_vs_t, s_vs_n, s_vs_t, pg_ptr + t0 * s_pg_t, s_pg_n, s_pg_t,
            2 * BLOCK_T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
            rows, tl.full(row_mask.shape, 1, tl.int1), seg, n_segs, n_chunks, carry, s_sr, s_ss, 0,
            HAS_TERM, HAS_TRUNC, NV_IN, G_TENSOR, L_TENSOR, DT, BLOCK_N, BLOCK_T, PHASE, S_BLOCK,
            ONE_CHUNK, TIME_MAJOR, GROUP_TILES, STAGES, SEG_MAP_FWD, CARRY_PROD, SEG_GROUPS, TM_W,
        )
    else:
        seg_a, seg_b = _vtrace_chunks(
            r_ptr, s_r_n, s_r_t, v_ptr, s_v_n, s_v_t,
            term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
            nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n, g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
            lr_ptr, s_lr_n, s_lr_t, rho_hi, rho_lo, c_hi, c_lo, pg_hi, pg_lo,
            vs_ptr, s_vs_n, s_vs_t, pg_ptr, s_pg_n, s_pg_t,
            T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
            rows, row_mask, seg, n_segs, n_chunks, carry, s_sr, s_ss, seg,
            HAS_TERM, HAS_TRUNC, NV_MODE, G_TENSOR, L_TENSOR, DT, BLOCK_N, BLOCK_T, PHASE, S_BLOCK,
            ONE_CHUNK, TIME_MAJOR, GROUP_TILES, STAGES, SEG_MAP_FWD, CARRY_PROD, SEG_GROUPS, TM_W,
        )
    store_summary(sum_a_ptr, sum_b_ptr, s_sr, s_ss, rows, row_mask, seg, seg_a, seg_b, PHASE)


@triton.jit
def _vtrace_chunks(
    r_ptr, s_r_n, s_r_t, v_ptr, s_v_n, s_v_t,
    term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
    nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n,
    g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
    lr_ptr, s_lr_n, s_lr_t, rho_hi, rho_lo, c_hi, c_lo, pg_hi, pg_lo,
    vs_ptr, s_vs_n, s_vs_t, pg_ptr, s_pg_n, s_pg_t,
    T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
    rows, row_mask, seg, n_segs, n_chunks, carry, s_sr, s_ss, tseg,
    HAS_TERM: tl.constexpr, HAS_TRUNC: tl.constexpr, NV_MODE: tl.constexpr,
    G_TENSOR: tl.constexpr, L_TENSOR: tl.constexpr, DT: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, PHASE: tl.constexpr, S_BLOCK: tl.constexpr,
    ONE_CHUNK: tl.constexpr, TIME_MAJOR: tl.constexpr, GROUP_TILES: tl.constexpr, STAGES: tl.constexpr,
    SEG_MAP_FWD: tl.constexpr, CARRY_PROD: tl.constexpr, SEG_GROUPS: tl.constexpr, TM_W: tl.constexpr,
):
    """V-trace's chunk loop over one program's segment, from ``carry``: writes vs and the
    policy-gradient advantages (PHASE 0/2) and returns the segment's map (seg_a, seg_b)
    (PHASE 1). ``tseg``: as in :func:`_td_lambda_chunks`."""
    REV: tl.constexpr = not (GROUP_TILES or TIME_MAJOR)  # chunks in time order: reverse scans
    seg_a = tl.zeros([BLOCK_N], DT)
    seg_b = tl.full([BLOCK_N], 1.0, DT)
    rho_bar = scalar(rho_hi, rho_lo, DT)
    c_bar = scalar(c_hi, c_lo, DT)
    pg_bar = scalar(pg_hi, pg_lo, DT)
    for i in tl.range(n_chunks, num_stages=STAGES):
        rows_t, row_mask_t, ts, mask = chunk_tile(
            tseg, SEG, T, i, n_chunks, rows, row_mask, BLOCK_T, TIME_MAJOR, GROUP_TILES, TM_W)
        trunc, done, g, lm, gk = _prologue(
            term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
            g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
            rows_t, ts, mask, HAS_TERM, HAS_TRUNC, G_TENSOR, L_TENSOR, DT,
        )
        r = load_tile(r_ptr, rows_t, ts, s_r_n, s_r_t, mask, DT)
        v = load_tile(v_ptr, rows_t, ts, s_v_n, s_v_t, mask, DT)
        v_next = load_next(v, v_ptr, rows, row_mask, ts, T, s_v_n, s_v_t, DT, GROUP_TILES)
        ratio = tl.exp(load_tile(lr_ptr, rows_t, ts, s_lr_n, s_lr_t, mask, DT))
        nv = next_state_values(
            v_next, nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n, rows_t, ts, T, mask, row_mask_t, trunc,
            True, HAS_TRUNC, NV_MODE, DT,
        )
        alpha = tl.where(mask, clip_max(ratio, rho_bar) * (r + gk * nv - v), 0.0)
        beta = tl.where(mask, tl.where(done, 0.0, g * lm * clip_max(ratio, c_bar)), 1.0)
        if GROUP_TILES == 3:  # rows one after another: a row's end ignores the next row (scan.chunk_tile)
            beta = tl.where(ts == T - 1, 0.0, beta)
        if PHASE == 1:
            ca, cb = chunk_map(scan_order(alpha, GROUP_TILES), scan_order(beta, GROUP_TILES), REV, SEG_MAP_FWD,
                               False, TM_W)
            seg_a, seg_b = compose(seg_a, seg_b, ca, cb)
        else:
            d, d_next, carry = scan_step_lagged(
                scan_order(alpha, GROUP_TILES), scan_order(beta, GROUP_TILES), carry, state_ptr, sum_a_ptr, sum_b_ptr,
                incl_ptr, s_sr, s_ss, rows,
                row_mask, seg, n_segs, PHASE, True, S_BLOCK, ONE_CHUNK, REV, TIME_MAJOR, CARRY_PROD,
                SEG_GROUPS=SEG_GROUPS, LANES=GROUP_TILES == 4, TM_W=TM_W,
            )
            d = group_order(d, r)
            d_next = group_order(d_next, r)
            inside = (ts + 1 < T) & (done == 0)
            q_in = r + gk * (lm * (v_next + d_next) + (1.0 - lm) * nv)
            q = tl.where(inside, q_in, r + gk * nv)
            tl.store(vs_ptr + rows_t * s_vs_n + t_off(ts, s_vs_t), v + d, mask=mask)
            tl.store(pg_ptr + rows_t * s_pg_n + t_off(ts, s_pg_t), clip_max(ratio, pg_bar) * (q - v), mask=mask)
    return seg_a, seg_b


@triton.jit
def _load4(ptr, mask):
    """The 4 float32 at each address of ``ptr`` (16-byte aligned), as 4 tiles shaped like
    ``ptr``: one 16-byte vector load per element (0 where ``mask`` is false). Triton has no
    vector load of a trailing dim short of a [.., 4] tile, whose reshape costs layout
    conversions, so this is inline PTX (not run by the CPU interpreter)."""
    return tl.inline_asm_elementwise(
        asm="""{
        .reg .pred p;
        setp.ne.s32 p, $5, 0;
        mov.f32 $0, 0f00000000;
        mov.f32 $1, 0f00000000;
        mov.f32 $2, 0f00000000;
        mov.f32 $3, 0f00000000;
        @p ld.global.v4.f32 {$0, $1, $2, $3}, [$4];
        }""",
        constraints="=f,=f,=f,=f,l,r",
        args=[ptr, mask.to(tl.int32)],
        dtype=(tl.float32, tl.float32, tl.float32, tl.float32),
        is_pure=True,
        pack=1,
    )


@triton.jit
def _actions_loop(av_ptr, s_av_n, s_av_t, s_av_a, pi_ptr, s_pi_n, s_pi_t, s_pi_a, blp_ptr, s_blp_n, s_blp_t,
                  a_t, rows, ts, mask, A, DT: tl.constexpr):
    """(Q(s_t, a_t), v_t, log rho_t) of :func:`_action_form` with a [BN, BT] tile per action
    (any number of actions, any strides): registers do not grow with the actions (a
    [BN, BT, A] tile made this kernel 5-25x slower), but each load is strided by the
    actions' stride."""
    q = load_tile(av_ptr + a_t * s_av_a, rows, ts, s_av_n, s_av_t, mask, DT)
    pi_a = load_tile(pi_ptr + a_t * s_pi_a, rows, ts, s_pi_n, s_pi_t, mask, DT)
    log_rho = tl.log(tl.where(mask, pi_a, 1.0)) - load_tile(blp_ptr, rows, ts, s_blp_n, s_blp_t, mask, DT)
    v = tl.zeros(q.shape, DT)
    for a in range(A):
        a64 = tl.cast(a, tl.int64)
        av = load_tile(av_ptr + a64 * s_av_a, rows, ts, s_av_n, s_av_t, mask, DT)
        pi = load_tile(pi_ptr + a64 * s_pi_a, rows, ts, s_pi_n, s_pi_t, mask, DT)
        v += pi * av
    return q, v, log_rho


@triton.jit
def _actions_vec4(av_ptr, s_av_n, s_av_t, pi_ptr, s_pi_n, s_pi_t, blp_ptr, s_blp_n, s_blp_t, a_t, rows, ts, mask,
                  DT: tl.constexpr):
    """:func:`_actions_loop` for 4 contiguous float32 actions per step at 16-byte aligned
    addresses: one vector load of each step's action values and one of its probabilities,
    the taken action's picked from registers."""
    a0, a1, a2, a3 = _load4(av_ptr + rows * s_av_n + t_off(ts, s_av_t), mask)
    p0, p1, p2, p3 = _load4(pi_ptr + rows * s_pi_n + t_off(ts, s_pi_t), mask)
    v = p0 * a0 + p1 * a1 + p2 * a2 + p3 * a3
    q = tl.where(a_t == 0, a0, tl.where(a_t == 1, a1, tl.where(a_t == 2, a2, a3)))
    pi_a = tl.where(a_t == 0, p0, tl.where(a_t == 1, p1, tl.where(a_t == 2, p2, p3)))
    log_rho = tl.log(tl.where(mask, pi_a, 1.0)).to(DT) - load_tile(blp_ptr, rows, ts, s_blp_n, s_blp_t, mask, DT)
    return q.to(DT), v.to(DT), log_rho


@triton.jit
def _action_form(av_ptr, s_av_n, s_av_t, s_av_a, pi_ptr, s_pi_n, s_pi_t, s_pi_a,
                 act_ptr, s_act_n, s_act_t, blp_ptr, s_blp_n, s_blp_t,
                 rows, ts, mask, A, DT: tl.constexpr, AV_VEC: tl.constexpr = 0):
    """Retrace's inputs from per-action tensors at steps ``ts``:
    (Q(s_t, a_t), v_t = sum_a pi(a|s_t) Q(s_t, a), log pi(a_t|s_t) - log mu(a_t|s_t)).

    ``AV_VEC = 4`` (4 float32 actions, contiguous, rows and steps 16-byte multiples apart,
    both base addresses 16-byte aligned: checked by the launcher, and by a replay for each
    call) reads each step's actions as one vector load (:func:`_actions_vec4`); else a loop
    over the actions (:func:`_actions_loop`). There is no run-time fallback in the vector form:
    compiled beside it, the loop made the kernel up to 2x slower (H200, launch._RETRACE_AV_VEC)."""
    a_t = tl.load(act_ptr + rows * s_act_n + t_off(ts, s_act_t), mask=mask, other=0).to(tl.int64)
    # actions outside [0, A) are the caller's error, not checked (that would synchronize):
    # clamped, so that no load leaves the action axis
    a_t = tl.minimum(tl.maximum(a_t, 0), A - 1)
    if AV_VEC == 4:
        q, v, log_rho = _actions_vec4(av_ptr, s_av_n, s_av_t, pi_ptr, s_pi_n, s_pi_t, blp_ptr, s_blp_n, s_blp_t,
                                      a_t, rows, ts, mask, DT)
    else:
        q, v, log_rho = _actions_loop(av_ptr, s_av_n, s_av_t, s_av_a, pi_ptr, s_pi_n, s_pi_t, s_pi_a, blp_ptr,
                                      s_blp_n, s_blp_t, a_t, rows, ts, mask, A, DT)
    return q, v, log_rho


@triton.jit
def retrace_kernel(
    r_ptr, s_r_n, s_r_t, v_ptr, s_v_n, s_v_t,
    term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
    nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n,
    g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
    q_ptr, s_q_n, s_q_t, lr_ptr, s_lr_n, s_lr_t, c_hi, c_lo,
    av_ptr, s_av_n, s_av_t, s_av_a, pi_ptr, s_pi_n, s_pi_t, s_pi_a,
    act_ptr, s_act_n, s_act_t, A,
    qt_ptr, s_qt_n, s_qt_t, adv_ptr, s_a_n, s_a_t,
    R, T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
    HAS_TERM: tl.constexpr, HAS_TRUNC: tl.constexpr, NV_MODE: tl.constexpr,
    G_TENSOR: tl.constexpr, L_TENSOR: tl.constexpr, ACTION_FORM: tl.constexpr, DT: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr,
    PHASE: tl.constexpr, S_BLOCK: tl.constexpr, ONE_CHUNK: tl.constexpr, TIME_MAJOR: tl.constexpr,
    GROUP_TILES: tl.constexpr, LAGGED: tl.constexpr = False, STAGES: tl.constexpr = 1,
    AV_VEC: tl.constexpr = 0, SEG_MAP_FWD: tl.constexpr = False, CARRY_PROD: tl.constexpr = False,
    SEG_FLIP: tl.constexpr = False, SEG_GROUPS: tl.constexpr = 0,
    TM_W: tl.constexpr = 0,
    ROW_DIV: tl.constexpr = 1, TM_DIV: tl.constexpr = 1, INTERIOR: tl.constexpr = False,
    PDL: tl.constexpr = False, EXACT_T: tl.constexpr = False, ROWS_T: tl.constexpr = False,
):
    """Retrace: alpha = r + g (1-term) nv - Q, beta = g (1-done) c_{t+1} with
    c_{t+1} = l_{t+1} min(c_bar, rho_{t+1}) (0 at t = T-1); outputs Q + D and Q + D - v.

    ACTION_FORM: Q, v and log rho are formed here from action values, target
    probabilities, actions and behaviour log-probs (``lr_ptr``), at t and at t+1 (pi at
    s_{t+1} for the expectation). Otherwise ``q_ptr``/``v_ptr``/``lr_ptr`` hold them.

    LAGGED (not with ``next_values``, NV_MODE 1): the same outputs from quantities of step t
    only. Where t + 1 < T and step t is not done, nv_t = v_{t+1}, so with
    H_t = v_t + c_t D_t (c_t = l_t min(c_bar, rho_t)) the recursion reads
    D_t = r_t - Q_t + g_t H_{t+1}, and H itself is the affine recursion
    H_t = v_t + c_t (r_t - Q_t + [not inside] g_t (1-term_t) nv_t) + [inside] c_t g_t H_{t+1}
    (inside: t + 1 < T and not done; elsewhere D_t = r_t - Q_t + g_t (1-term_t) nv_t with
    nv_t the bootstrap, or 0). The lagged scan gives H_{t+1} beside H_t, so nothing is read
    at t + 1: the action form evaluates its expectation once per step instead of twice.

    ``INTERIOR``, ``EXACT_T`` (the sampled form only): see :func:`td_lambda_kernel`.
    """
    # the divisibility of T and the row strides (launch._row_div), for vector accesses; the row
    # strides T itself where every per-step tensor lies in contiguous rows (launch._ROWS_T)
    T = aligned(T, ROW_DIV)
    T = exact_t(T, BLOCK_T, EXACT_T, PHASE, ONE_CHUNK)
    s_r_n = row_stride(s_r_n, T, ROW_DIV, ROWS_T)
    s_v_n = row_stride(s_v_n, T, ROW_DIV, ROWS_T)
    s_term_n = row_stride(s_term_n, T, ROW_DIV, ROWS_T)
    s_trunc_n = row_stride(s_trunc_n, T, ROW_DIV, ROWS_T)
    s_nv_n = row_stride(s_nv_n, T, ROW_DIV, ROWS_T)
    s_g_n = row_stride(s_g_n, T, ROW_DIV, ROWS_T)
    s_l_n = row_stride(s_l_n, T, ROW_DIV, ROWS_T)
    s_q_n = row_stride(s_q_n, T, ROW_DIV, ROWS_T)
    s_lr_n = row_stride(s_lr_n, T, ROW_DIV, ROWS_T)
    s_av_n = row_stride(s_av_n, T, ROW_DIV, ROWS_T)
    s_pi_n = row_stride(s_pi_n, T, ROW_DIV, ROWS_T)
    s_act_n = row_stride(s_act_n, T, ROW_DIV, ROWS_T)
    s_qt_n = row_stride(s_qt_n, T, ROW_DIV, ROWS_T)
    s_a_n = row_stride(s_a_n, T, ROW_DIV, ROWS_T)
    # time-major storage: the divisibility of R and the time strides (launch._row_div)
    R = aligned(R, TM_DIV)
    s_r_t = aligned(s_r_t, TM_DIV)
    s_v_t = aligned(s_v_t, TM_DIV)
    s_term_t = aligned(s_term_t, TM_DIV)
    s_trunc_t = aligned(s_trunc_t, TM_DIV)
    s_nv_t = aligned(s_nv_t, TM_DIV)
    s_g_t = aligned(s_g_t, TM_DIV)
    s_l_t = aligned(s_l_t, TM_DIV)
    s_q_t = aligned(s_q_t, TM_DIV)
    s_lr_t = aligned(s_lr_t, TM_DIV)
    s_av_t = aligned(s_av_t, TM_DIV)
    s_pi_t = aligned(s_pi_t, TM_DIV)
    s_act_t = aligned(s_act_t, TM_DIV)
    s_qt_t = aligned(s_qt_t, TM_DIV)
    s_a_t = aligned(s_a_t, TM_DIV)
    rows, row_mask, seg, n_segs, n_chunks, carry, s_sr, s_ss = segment_setup(
        R, T, SEG, state_ptr, sum_a_ptr, sum_b_ptr, BLOCK_N, BLOCK_T, PHASE, S_BLOCK, DT, ONE_CHUNK, TIME_MAJOR,
        GROUP_TILES, CARRY_PROD, SEG_FLIP=SEG_FLIP, PDL=PDL, EXACT_T=EXACT_T,
    )
    if ONE_CHUNK:  # a static one-trip loop: the carry out of it is dead code, not a reduction
        n_chunks = 1
    inside = False
    if INTERIOR:
        inside = interior_chunk(seg, SEG, T, BLOCK_T, PHASE, ONE_CHUNK, BLOCK_N, TIME_MAJOR, GROUP_TILES)
    NV_IN: tl.constexpr = 0 if NV_MODE == 3 else NV_MODE  # (no step of an interior chunk is T - 1)
    if inside:
        # (td_lambda_kernel's INTERIOR: pointers at the segment's first step, T a constant)
        t0 = tl.cast(seg, tl.int64) * SEG
        seg_a, seg_b = _retrace_chunks(
            r_ptr + t0 * s_r_t, s_r_n, s_r_t, v_ptr + t0 * s_v_t, s_v_n, s_v_t,
            term_ptr + t0 * s_term_t, s_term_n, s_term_t, trunc_ptr + t0 * s_trunc_t, s_trunc_n, s_trunc_t,
            nv_ptr + t0 * s_nv_t, s_nv_n, s_nv_t, lv_ptr, s_lv_n, g_ptr + t0 * s_g_t, s_g_n, s_g_t, g_hi, g_lo,
            l_ptr + t0 * s_l_t, s_l_n, s_l_t, l_hi, l_lo,
            q_ptr + t0 * s_q_t, s_q_n, s_q_t, lr_ptr + t0 * s_lr_t, s_lr_n, s_lr_t, c_hi, c_lo,
            av_ptr + t0 * s_av_t, s_av_n, s_av_t, s_av_a, pi_ptr + t0 * s_pi_t, s_pi_n, s_pi_t, s_pi_a,
            act_ptr + t0 * s_act_t, s_act_n, s_act_t, A,
            qt_ptr + t0 * s_qt_t, s_qt_n, s_qt_t, adv_ptr + t0 * s_a_t, s_a_n, s_a_t,
            2 * BLOCK_T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
            rows, tl.full(row_mask.shape, 1, tl.int1), seg, n_segs, n_chunks, carry, s_sr, s_ss, 0,
            HAS_TERM, HAS_TRUNC, NV_IN, G_TENSOR, L_TENSOR, ACTION_FORM, DT, BLOCK_N, BLOCK_T, PHASE, S_BLOCK,
            ONE_CHUNK, TIME_MAJOR, GROUP_TILES, LAGGED, STAGES, AV_VEC, SEG_MAP_FWD, CARRY_PROD, SEG_GROUPS, TM_W,
        )
    else:
        seg_a, seg_b = _retrace_chunks(
            r_ptr, s_r_n, s_r_t, v_ptr, s_v_n, s_v_t,
            term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
            nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n, g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
            q_ptr, s_q_n, s_q_t, lr_ptr, s_lr_n, s_lr_t, c_hi, c_lo,
            av_ptr, s_av_n, s_av_t, s_av_a, pi_ptr, s_pi_n, s_pi_t, s_pi_a,
            act_ptr, s_act_n, s_act_t, A,
            qt_ptr, s_qt_n, s_qt_t, adv_ptr, s_a_n, s_a_t,
            T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
            rows, row_mask, seg, n_segs, n_chunks, carry, s_sr, s_ss, seg,
            HAS_TERM, HAS_TRUNC, NV_MODE, G_TENSOR, L_TENSOR, ACTION_FORM, DT, BLOCK_N, BLOCK_T, PHASE, S_BLOCK,
            ONE_CHUNK, TIME_MAJOR, GROUP_TILES, LAGGED, STAGES, AV_VEC, SEG_MAP_FWD, CARRY_PROD, SEG_GROUPS, TM_W,
        )
    store_summary(sum_a_ptr, sum_b_ptr, s_sr, s_ss, rows, row_mask, seg, seg_a, seg_b, PHASE)


@triton.jit
def _retrace_chunks(
    r_ptr, s_r_n, s_r_t, v_ptr, s_v_n, s_v_t,
    term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
    nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n,
    g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
    q_ptr, s_q_n, s_q_t, lr_ptr, s_lr_n, s_lr_t, c_hi, c_lo,
    av_ptr, s_av_n, s_av_t, s_av_a, pi_ptr, s_pi_n, s_pi_t, s_pi_a,
    act_ptr, s_act_n, s_act_t, A,
    qt_ptr, s_qt_n, s_qt_t, adv_ptr, s_a_n, s_a_t,
    T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
    rows, row_mask, seg, n_segs, n_chunks, carry, s_sr, s_ss, tseg,
    HAS_TERM: tl.constexpr, HAS_TRUNC: tl.constexpr, NV_MODE: tl.constexpr,
    G_TENSOR: tl.constexpr, L_TENSOR: tl.constexpr, ACTION_FORM: tl.constexpr, DT: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, PHASE: tl.constexpr, S_BLOCK: tl.constexpr,
    ONE_CHUNK: tl.constexpr, TIME_MAJOR: tl.constexpr, GROUP_TILES: tl.constexpr, LAGGED: tl.constexpr,
    STAGES: tl.constexpr, AV_VEC: tl.constexpr, SEG_MAP_FWD: tl.constexpr, CARRY_PROD: tl.constexpr,
    SEG_GROUPS: tl.constexpr, TM_W: tl.constexpr,
):
    """Retrace's chunk loop over one program's segment, from ``carry``: writes the Q targets
    and advantages (PHASE 0/2) and returns the segment's map (seg_a, seg_b) (PHASE 1).
    ``tseg``: as in :func:`_td_lambda_chunks`."""
    REV: tl.constexpr = not (GROUP_TILES or TIME_MAJOR)  # chunks in time order: reverse scans
    seg_a = tl.zeros([BLOCK_N], DT)
    seg_b = tl.full([BLOCK_N], 1.0, DT)
    c_bar = scalar(c_hi, c_lo, DT)
    for i in tl.range(n_chunks, num_stages=STAGES):
        rows_t, row_mask_t, ts, mask = chunk_tile(
            tseg, SEG, T, i, n_chunks, rows, row_mask, BLOCK_T, TIME_MAJOR, GROUP_TILES, TM_W)
        has_next = mask & (ts + 1 < T)
        trunc, done, g, lm, gk = _prologue(
            term_ptr, s_term_n, s_term_t, trunc_ptr, s_trunc_n, s_trunc_t,
            g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
            rows_t, ts, mask, HAS_TERM, HAS_TRUNC, G_TENSOR, L_TENSOR, DT,
        )
        r = load_tile(r_ptr, rows_t, ts, s_r_n, s_r_t, mask, DT)
        if LAGGED:
            if ACTION_FORM:
                q, v, lr = _action_form(
                    av_ptr, s_av_n, s_av_t, s_av_a, pi_ptr, s_pi_n, s_pi_t, s_pi_a,
                    act_ptr, s_act_n, s_act_t, lr_ptr, s_lr_n, s_lr_t, rows_t, ts, mask, A, DT, AV_VEC,
                )
            else:
                q = load_tile(q_ptr, rows_t, ts, s_q_n, s_q_t, mask, DT)
                v = load_tile(v_ptr, rows_t, ts, s_v_n, s_v_t, mask, DT)
                lr = load_tile(lr_ptr, rows_t, ts, s_lr_n, s_lr_t, mask, DT)
            c = lm * clip_max(tl.exp(lr), c_bar)
            inside = (ts + 1 < T) & (done == 0)
            # nv_t is needed only outside (the bootstrap, or 0; a terminated step's gk is 0):
            # values[t+1] enter through H_{t+1}, so zeros stand in for them
            nv = next_state_values(
                tl.zeros(r.shape, DT), nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n, rows_t, ts, T, mask, row_mask_t,
                trunc, True, HAS_TRUNC, NV_MODE, DT,
            )
            edge = tl.where(inside, 0.0, gk * nv)
            alpha = tl.where(mask, v + c * (r - q + edge), 0.0)
            beta = tl.where(mask & inside, c * g, tl.where(mask, 0.0, 1.0))
            if PHASE == 1:
                ca, cb = chunk_map(scan_order(alpha, GROUP_TILES), scan_order(beta, GROUP_TILES), REV, SEG_MAP_FWD,
                                   False, TM_W)
                seg_a, seg_b = compose(seg_a, seg_b, ca, cb)
            else:
                _h, h_next, carry = scan_step_lagged(
                    scan_order(alpha, GROUP_TILES), scan_order(beta, GROUP_TILES), carry, state_ptr, sum_a_ptr,
                    sum_b_ptr, incl_ptr, s_sr, s_ss, rows, row_mask, seg, n_segs, PHASE, True, S_BLOCK, ONE_CHUNK, REV,
                    TIME_MAJOR, CARRY_PROD, SEG_GROUPS=SEG_GROUPS, LANES=GROUP_TILES == 4, TM_W=TM_W,
                )
                h_next = group_order(h_next, r)
                d = r - q + tl.where(inside, g * h_next, edge)
                tl.store(qt_ptr + rows_t * s_qt_n + t_off(ts, s_qt_t), q + d, mask=mask)
                tl.store(adv_ptr + rows_t * s_a_n + t_off(ts, s_a_t), q + d - v, mask=mask)
        else:
            if ACTION_FORM:
                q, v, _lr = _action_form(
                    av_ptr, s_av_n, s_av_t, s_av_a, pi_ptr, s_pi_n, s_pi_t, s_pi_a,
                    act_ptr, s_act_n, s_act_t, lr_ptr, s_lr_n, s_lr_t, rows_t, ts, mask, A, DT, AV_VEC,
                )
                _q, v_next, lr_next = _action_form(
                    av_ptr, s_av_n, s_av_t, s_av_a, pi_ptr, s_pi_n, s_pi_t, s_pi_a,
                    act_ptr, s_act_n, s_act_t, lr_ptr, s_lr_n, s_lr_t, rows_t, ts + 1, has_next, A, DT, AV_VEC,
                )
            else:
                q = load_tile(q_ptr, rows_t, ts, s_q_n, s_q_t, mask, DT)
                v = load_tile(v_ptr, rows_t, ts, s_v_n, s_v_t, mask, DT)
                v_next = load_next(v, v_ptr, rows, row_mask, ts, T, s_v_n, s_v_t, DT, GROUP_TILES)
                lr_next = load_next_only(lr_ptr, rows, row_mask, ts, T, s_lr_n, s_lr_t, DT, GROUP_TILES)
            if L_TENSOR:  # lm is the tile of lam at ts (0 beyond T): shift it
                l_next = load_next(lm, l_ptr, rows, row_mask, ts, T, s_l_n, s_l_t, DT, GROUP_TILES)
            else:
                l_next = scalar(l_hi, l_lo, DT)
            c_next = tl.where(has_next, l_next * clip_max(tl.exp(lr_next), c_bar), 0.0)
            nv = next_state_values(
                v_next, nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n, rows_t, ts, T, mask, row_mask_t, trunc,
                True, HAS_TRUNC, NV_MODE, DT,
            )
            alpha = tl.where(mask, r + gk * nv - q, 0.0)
            # g (1 - done) c_{t+1} as SPEC writes it, a product: a NaN ratio at t + 1 makes it
            # NaN even where step t is done (0 * NaN), as the reference's arithmetic does
            beta = tl.where(mask, g * tl.where(done, 0.0, 1.0) * c_next, 1.0)
            if PHASE == 1:
                ca, cb = chunk_map(scan_order(alpha, GROUP_TILES), scan_order(beta, GROUP_TILES), REV, SEG_MAP_FWD,
                                   False, TM_W)
                seg_a, seg_b = compose(seg_a, seg_b, ca, cb)
            else:
                d, carry = scan_step(
                    scan_order(alpha, GROUP_TILES), scan_order(beta, GROUP_TILES), carry, state_ptr, sum_a_ptr,
                    sum_b_ptr, incl_ptr, s_sr, s_ss, rows, row_mask, seg, n_segs, PHASE, True, S_BLOCK, ONE_CHUNK, REV,
                    TIME_MAJOR, CARRY_PROD, SEG_GROUPS=SEG_GROUPS, LANES=GROUP_TILES == 4, TM_W=TM_W,
                )
                d = group_order(d, r)
                tl.store(qt_ptr + rows_t * s_qt_n + t_off(ts, s_qt_t), q + d, mask=mask)
                tl.store(adv_ptr + rows_t * s_a_n + t_off(ts, s_a_t), q + d - v, mask=mask)
    return seg_a, seg_b
