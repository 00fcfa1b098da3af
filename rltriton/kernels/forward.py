"""Fused kernel of the forward estimators: eligibility traces and episodic prefix sums.

``z_t = x_t + beta_t z_{t-1}`` from ``z_{-1} = initial``. Lanes too few to fill the GPU
are split in time as in ``backward.py`` (PHASE 1 summaries, PHASE 2 carry-in and outputs; PHASE 3 to 5
single passes). ``x`` may carry trailing
feature dims, flattened to ``F`` columns; a program owns ``BLOCK_N`` (row, feature)
lanes and walks time in chunks of ``BLOCK_T`` from the start. The coefficient is per
step (shared by the features of a row):

* KIND 0, traces:            beta_t = g_t l_t (1 - d_{t-1}), d_{-1} = 0
* KIND 1, prefix "ends_at":  beta_t = 1 - d_{t-1}
* KIND 2, prefix "starts_at": beta_t = 1 - d_t
"""

from __future__ import annotations

import triton
import triton.language as tl

from rltriton.kernels.scan import (
    aligned,
    chunk_map,
    compose,
    exact_t,
    grid_dependency,
    interior_chunk,
    load_coef,
    load_flag,
    program_tile,
    scan_step,
    segment_carry_in,
    segment_chunk,
    segment_zero,
    store_summary,
    summary_strides,
)


@triton.jit
def forward_kernel(
    x_ptr, s_x_n, s_x_t, s_x_f,
    d_ptr, s_d_n, s_d_t,
    g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
    init_ptr, s_i_n, s_i_f,
    out_ptr, s_o_n, s_o_t, s_o_f,
    R, F, T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
    KIND: tl.constexpr, HAS_DONES: tl.constexpr, HAS_INIT: tl.constexpr,
    G_TENSOR: tl.constexpr, L_TENSOR: tl.constexpr, DT: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, PHASE: tl.constexpr, S_BLOCK: tl.constexpr,
    ONE_CHUNK: tl.constexpr, TIME_MAJOR: tl.constexpr, STAGES: tl.constexpr = 1, CARRY_PROD: tl.constexpr = False,
    SEG_FLIP: tl.constexpr = False, TM_W: tl.constexpr = 0,
    ROW_DIV: tl.constexpr = 1, TM_DIV: tl.constexpr = 1, INTERIOR: tl.constexpr = False,
    PDL: tl.constexpr = False, EXACT_T: tl.constexpr = False,
):
    """One program: BLOCK_N lanes x one time segment (PHASE 0: the whole row). ``TM_W`` > 0: a
    time-major lanes tile on that many warps (``scan.tm_lanes_scan``; time-major storage of one
    feature, ``launch._TM_LANES``).

    ``INTERIOR`` (``launch._INTERIOR``; the passes of a time split, one chunk a segment,
    one lane a program, batch-major): a segment after the row's first and wholly before T
    has no masked step and reads every flag at t - 1, so its program runs the chunk with
    the pointers moved to the segment's first step and T the constant 2 BLOCK_T (a
    multiple of 16: Triton keeps the vector accesses): its times are constants and the
    tests against T and 0 fold away (as in ``backward.td_lambda_kernel``). ``EXACT_T``
    (``launch._exact_t``): a single pass whose one chunk is exactly the row, so T is the
    constant BLOCK_T and the segment 0 (as in the backward kernels)."""
    # the divisibility of T and the row strides (launch._row_div), for vector accesses
    T = aligned(T, ROW_DIV)
    T = exact_t(T, BLOCK_T, EXACT_T, PHASE, ONE_CHUNK)
    s_x_n = aligned(s_x_n, ROW_DIV)
    s_d_n = aligned(s_d_n, ROW_DIV)
    s_g_n = aligned(s_g_n, ROW_DIV)
    s_l_n = aligned(s_l_n, ROW_DIV)
    s_o_n = aligned(s_o_n, ROW_DIV)
    # time-major storage: the divisibility of R and the time strides (launch._row_div)
    R = aligned(R, TM_DIV)
    s_x_t = aligned(s_x_t, TM_DIV)
    s_d_t = aligned(s_d_t, TM_DIV)
    s_g_t = aligned(s_g_t, TM_DIV)
    s_l_t = aligned(s_l_t, TM_DIV)
    s_o_t = aligned(s_o_t, TM_DIV)
    grid_dependency(PHASE, PDL)  # (launch._PDL: before any load)
    lanes, seg, n_segs, n_chunks = program_tile(R * F, T, SEG, state_ptr, BLOCK_N, BLOCK_T, PHASE, False, TIME_MAJOR,
                                                SEG_FLIP=SEG_FLIP, TM_LANES=TM_W > 0)
    if EXACT_T or segment_zero(PHASE, BLOCK_T, TIME_MAJOR, TM_W == 0):  # (every tile of at most 8 steps but the lanes)
        seg = 0
    if ONE_CHUNK:  # static one-trip loop (see backward.py)
        n_chunks = 1
    lane_mask = lanes < R * F
    s_sr, s_ss = summary_strides(R * F, n_segs, TIME_MAJOR or TM_W > 0)
    rows = lanes // F
    feats = lanes % F
    if HAS_INIT:
        carry = tl.load(init_ptr + rows * s_i_n + feats * s_i_f, mask=lane_mask, other=0.0).to(DT)
        carry = tl.sum(carry, axis=1)
    else:
        carry = tl.zeros([BLOCK_N], DT)
    if PHASE == 1:
        carry = tl.zeros([BLOCK_N], DT)
    if PHASE == 2:
        if not ONE_CHUNK:  # else scan_step reads the summaries, after the tile's loads
            carry = segment_carry_in(sum_a_ptr, sum_b_ptr, s_sr, s_ss, lanes, lane_mask, seg, n_segs, carry, False,
                                     S_BLOCK, TIME_MAJOR, CARRY_PROD)
    inside = False
    if INTERIOR:
        tl.static_assert(TM_W == 0, "INTERIOR: batch-major tiles")
        # steps 1 <= t < T only: not the first segment (flags at t - 1), and a chunk that ends
        # at T - 1 is interior here (no bootstrap at T - 1): interior_chunk's test with T + 1
        inside = (seg > 0) & interior_chunk(seg, SEG, T + 1, BLOCK_T, PHASE, ONE_CHUNK, BLOCK_N, TIME_MAJOR)
    if inside:
        t0 = tl.cast(seg, tl.int64) * SEG
        seg_a, seg_b = _forward_chunks(
            x_ptr + t0 * s_x_t, s_x_t, d_ptr + t0 * s_d_t, s_d_n, s_d_t,
            g_ptr + t0 * s_g_t, s_g_n, s_g_t, g_hi, g_lo, l_ptr + t0 * s_l_t, s_l_n, s_l_t, l_hi, l_lo,
            out_ptr + t0 * s_o_t, s_o_t, 2 * BLOCK_T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
            lanes, tl.full(lane_mask.shape, 1, tl.int1), rows * s_x_n + feats * s_x_f, rows,
            rows * s_o_n + feats * s_o_f, seg, n_segs, n_chunks, carry, s_sr, s_ss, 0, -16,
            KIND, HAS_DONES, G_TENSOR, L_TENSOR, DT, BLOCK_N, BLOCK_T, PHASE, S_BLOCK, ONE_CHUNK, TIME_MAJOR,
            STAGES, CARRY_PROD, TM_W,
        )
    else:
        seg_a, seg_b = _forward_chunks(
            x_ptr, s_x_t, d_ptr, s_d_n, s_d_t, g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
            out_ptr, s_o_t, T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
            lanes, lane_mask, rows * s_x_n + feats * s_x_f, rows, rows * s_o_n + feats * s_o_f,
            seg, n_segs, n_chunks, carry, s_sr, s_ss, seg, 1,
            KIND, HAS_DONES, G_TENSOR, L_TENSOR, DT, BLOCK_N, BLOCK_T, PHASE, S_BLOCK, ONE_CHUNK, TIME_MAJOR,
            STAGES, CARRY_PROD, TM_W,
        )
    store_summary(sum_a_ptr, sum_b_ptr, s_sr, s_ss, lanes, lane_mask, seg, seg_a, seg_b, PHASE)


@triton.jit
def _forward_chunks(
    x_ptr, s_x_t, d_ptr, s_d_n, s_d_t, g_ptr, s_g_n, s_g_t, g_hi, g_lo, l_ptr, s_l_n, s_l_t, l_hi, l_lo,
    out_ptr, s_o_t, T, SEG, sum_a_ptr, sum_b_ptr, incl_ptr, state_ptr,
    lanes, lane_mask, x_lane, rows, o_lane, seg, n_segs, n_chunks, carry, s_sr, s_ss, tseg, t_first,
    KIND: tl.constexpr, HAS_DONES: tl.constexpr, G_TENSOR: tl.constexpr, L_TENSOR: tl.constexpr, DT: tl.constexpr,
    BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, PHASE: tl.constexpr, S_BLOCK: tl.constexpr,
    ONE_CHUNK: tl.constexpr, TIME_MAJOR: tl.constexpr, STAGES: tl.constexpr, CARRY_PROD: tl.constexpr,
    TM_W: tl.constexpr,
):
    """The chunk loop of one program's segment, from ``carry``: writes z (PHASE 0/2) and
    returns the segment's map (seg_a, seg_b) (PHASE 1). ``x_lane`` / ``o_lane``: each lane's
    offset into x and out; ``tseg``: the segment whose steps the times count from (``seg``,
    or 0 for pointers already moved to the segment's first step), ``seg`` places the
    summaries; a flag read at t - 1 needs t >= ``t_first`` (1, or below 0 for a segment
    whose step before it is the previous segment's last)."""
    seg_a = tl.zeros([BLOCK_N], DT)
    seg_b = tl.full([BLOCK_N], 1.0, DT)
    for i in tl.range(n_chunks, num_stages=STAGES):
        ts = segment_chunk(tseg, SEG, i, BLOCK_T, TM_W)
        mask = lane_mask & (ts < T)
        x = tl.load(x_ptr + x_lane + ts * s_x_t, mask=mask, other=0.0).to(DT)
        beta = tl.full(x.shape, 1.0, DT)
        if KIND == 0:
            g = load_coef(g_ptr, g_hi, g_lo, rows, ts, s_g_n, s_g_t, mask, G_TENSOR, DT)
            lm = load_coef(l_ptr, l_hi, l_lo, rows, ts, s_l_n, s_l_t, mask, L_TENSOR, DT)
            beta = beta * g * lm
        if HAS_DONES:
            if KIND == 2:
                d = load_flag(d_ptr, rows, ts, s_d_n, s_d_t, mask)
            else:
                d = load_flag(d_ptr, rows, ts - 1, s_d_n, s_d_t, mask & (ts >= t_first))
            beta = tl.where(d, 0.0, beta)
        # x is 0 where masked, as loaded, so it needs no select of its own (SASS a thread,
        # Triton 3.6: traces 4096 x 512 200 -> 192, 512 x 2048 384 -> 376); beta does: a
        # step past T is the identity
        alpha = x
        beta = tl.where(mask, beta, 1.0)
        if PHASE == 1:
            ca, cb = chunk_map(alpha, beta, TM_W=TM_W)
            seg_a, seg_b = compose(seg_a, seg_b, ca, cb)
        else:
            z, carry = scan_step(
                alpha, beta, carry, state_ptr, sum_a_ptr, sum_b_ptr, incl_ptr, s_sr, s_ss, lanes, lane_mask, seg,
                n_segs, PHASE, False, S_BLOCK, ONE_CHUNK, False, TIME_MAJOR, CARRY_PROD, TM_W=TM_W,
            )
            tl.store(out_ptr + o_lane + ts * s_o_t, z, mask=mask)
    return seg_a, seg_b
