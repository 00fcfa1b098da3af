"""Launchers: from a canonical :class:`~rltriton.assigner.Problem` to one kernel launch.

The host side only views tensors as ``[rows, T]`` (a reshape of the time-last views the
assigner made; a view whenever the batch dims merge, which holds for batch-major and
time-major storage alike), reads their strides, picks a cached tile config and launches.
Absent optional tensors are constexpr branches in the kernel: their pointer arguments
receive an existing tensor that the kernel never reads. Nothing here synchronises.
"""

from __future__ import annotations

import functools
import inspect
import operator
import struct
from typing import TYPE_CHECKING, NamedTuple

import torch
import triton.language as tl
from torch import Tensor

from rltriton.kernels.backward import gae_kernel, retrace_kernel, td_lambda_kernel, vtrace_kernel
from rltriton.kernels.forward import forward_kernel
from rltriton.kernels.scan import CARRY_WAIT, lanes_per_row, triton_version

if TYPE_CHECKING:
    from rltriton.assigner import CreditAssigner, Problem

_NV_NONE, _NV_NEXT, _NV_BOOTSTRAP, _NV_LAST = 0, 1, 2, 3
# The backward kernels count time in int32 (scan.chunk_times: a compare or an add of steps
# is one instruction where int64 took two; TD(lambda) [4, 64] on 2 warps 304 -> 280 SASS
# instructions a thread, Triton 3.6): rows of at most this many steps, so that a chunk's
# last step (T rounded up to a chunk of at most 16384) stays below 2**31.
_MAX_T = 2**31 - 2**15
_TILE = 2048  # most elements of a [BLOCK_N, BLOCK_T] tile
_MAX_BLOCK_T = 2048  # rows up to this many steps are one chunk (no carry between chunks)
_LOOP_BLOCK_T = 1024  # chunk of longer rows that are not split in time
_LOOP_TILE_DEFAULT = (_LOOP_BLOCK_T, 1)  # (steps, pipelining depth) of a chunk loop, _LOOP_TILES aside
_SHORT_T = 128  # rows up to this many steps are tiled several to a program
_SHORT_TILE = 256  # elements of a short-row tile
# elements a warp of a short-row tile takes (4 a thread). Session 9's sweep found one warp
# (8 a thread) 5-15% faster for GAE and Retrace at 16-32 steps. Timed side by side
# (`bash benchmarks/device_run.sh short`, 2026-11-30-h200-s10 notes), default -> one warp
# -> 1024-element tiles at 8 a thread: mixed and within ~0.5 us for GAE (32768 x 16
# 3.3 -> 2.9 -> 3.3, 32768 x 8 2.7 -> 2.9 -> 3.5), slower for the rest (V-trace 32768 x 64
# 11.1 -> 14.9 -> 20.6, the action form 32768 x 32 18.4 -> 27.6 -> 28.8): kept at 4 a thread.
_SHORT_WARP_ELEMS = 128
_SHORT_TILE_DEFAULT = (_SHORT_TILE, _SHORT_WARP_ELEMS)  # (a short-row tile's elements, a warp's), _DR_SHORT_TILES aside
# Tiles of at most _TINY_T steps (rows of 1-8 steps) take _TINY_WARP_ELEMS elements a warp (2 a
# thread; the action form of Retrace _TINY_WARP_ELEMS_BY_FORM's 1): such a call runs in one
# wave, each SM holding a few programs, and Triton 3.6 lowers their reverse scan with a flip
# of the whole warp's lanes (5 butterfly shuffles per value each way; with the scan's own
# shuffles, 84 of the 272 SASS instructions a thread of discounted returns' [32, 8] tile on 2
# warps, against 46 of 200 on 4), so more threads with fewer elements finish sooner. H200,
# Triton 3.6 (benchmarks/ab.py, 2026-12-01-h200-s21-ab-tiny.txt), us, 4 a thread -> 2 a thread (with the 8-step tiles'
# ROW_DIV, _ROW_DIV_MIN_T): GAE 16384 x 8 2.3 -> 2.1, 4096 x 8 1.9 -> 1.7; TD(lambda) 4096 x 8
# 1.9 -> 1.6; V-trace 16384 x 8 2.7 -> 2.4; Retrace 16384 x 8 2.7 -> 2.3, 32768 x 4 2.6 ->
# 2.3; traces 4096 x 8 1.8 -> 1.5; 32768 x 8 by 0.1-0.3 (Retrace 3.4 -> 3.1); the action
# form at 1 a thread 4096 x 8 3.2 -> 1.9, 16384 x 8 3.7 -> 2.8 (2.4 and 3.1 at 2 a thread).
# One element a thread lost elsewhere (V-trace 32768 x 8 3.4 -> 3.5, traces 2.0 -> 2.3), as
# did 16-row tiles ([16, 8] on 2 or 4 warps), 64-row ones on 8 warps (equal), and a row a
# thread ([32, 8] on one warp, the group scan: 1.3-1.9x slower; docs/performance.md).
_TINY_T = 8
_TINY_WARP_ELEMS = 64
_TINY_WARP_ELEMS_BY_FORM = {"retrace_actions": 32}
# Batch-major tiles of at most _DESC_MAX_T steps in time order (Triton < 3.7) hold their steps
# in descending time instead (GROUP_TILES = 6, scan.chunk_times) and scan forward: no flip of
# the warp's lanes around the scan, for accesses that run backwards in memory and are
# therefore scalar (a warp still reads whole rows). The forms of _DESC_FORMS take it on rows
# whose length is not a multiple of 8; on 8-step rows only those of _DESC_ALIGNED_FORMS: the
# rule is the A/B's below, where only TD(lambda)'s kernel gained at 8 steps (why 8-step rows,
# ROW_DIV 8, differ from 6-step ones, ROW_DIV 2, was not profiled).
# H200, Triton 3.6, device us, time order -> descending (benchmarks/ab.py,
# 2026-12-02-h200-s22-ab-desc.txt), GAE / TD(lambda) / discounted returns / V-trace / Retrace:
#   32768 x 4   2.1 / 2.0 / 2.0 / 2.5 / 2.3  ->  1.9 / 1.8 / 1.7 / 2.1 / 2.1
#   32768 x 6   2.9 / 2.7 / 2.6 / 3.4 / 3.2  ->  2.5 / 2.4 / 2.1 / 3.0 / 2.8
#   32768 x 2   1.8 / 1.8 / 1.7 / 2.1 / 2.0  ->  1.7 / 1.6 / 1.5 / 1.7 / 1.7
#   32768 x 8   2.6 / 2.7 / 2.6 / 3.3 / 3.1  ->  3.0 / 2.7 / 2.4 / 3.6 / 3.8
#   16384 x 8   2.1 / 2.1 / 1.9 / 2.5 / 2.3  ->  2.3 / 2.0 / 1.9 / 2.6 / 2.6
# Retrace's action form (1 element a thread, its actions read as vectors either way) was equal
# or slower everywhere (32768 x 8 4.1 -> 6.1, 32768 x 6 4.2 -> 4.2). 0: never.
_DESC_MAX_T = 8
_DESC_FORMS = frozenset({"gae", "td_lambda", "vtrace", "retrace"})
_DESC_ALIGNED_FORMS = frozenset({"td_lambda"})
_SEG_STEPS = 2048  # steps of a time segment when rows are split: one chunk
# Rows too few to fill the GPU are split in time from _SPLIT_MIN_CHUNKS chunks, or from
# _SPLIT_FEW_CHUNKS with fewer row programs than SMs. Until session 14 calls under
# _SPLIT_MIN_ELEMS = 1 << 18 elements were never split, and rows of fewer than 8 chunks
# never: one program then walked each row, a chain of dependent chunks (H200, Triton 3.6,
# benchmarks/ab.py, `device_run.sh splitmin` and `splitchunks`, 2026-12-01-h200-s14 notes;
# device us, walked -> split): GAE 1 x 131072 150.4 -> 5.2, 1 x 16384 19.7 -> 4.8, 8 x 16384
# 20.2 -> 5.3, 1 x 8192 10.7 -> 4.7, 32 x 8192 11.0 -> 5.8, 128 x 8192 11.7 -> 9.8; V-trace
# 1 x 65536 102 -> 5.0, 128 x 4096 8.3 -> 7.4; the action form 1 x 131072 244 -> 7.2. Rows of
# 4-7 chunks on at least an SM's worth of programs keep one pass (V-trace 256 x 4096 9.5
# against 10.8 split), as do rows of 2-3 chunks (GAE 256 x 4096 7.6 against 10.0).
_SPLIT_MIN_CHUNKS = 8
_SPLIT_FEW_CHUNKS = 4
_PROGRAMS_PER_SM = 2  # programs wanted per multiprocessor before rows are split in time
_SPLIT_MIN_ELEMS = 0  # no size threshold (see above); the tests raise it to keep one pass
_MAX_SEGMENTS = 1024
# Rows of at most _SHORT_SPLIT_MAX_T steps split (and count chunks) in segments of
# _SHORT_SPLIT = (steps, warps) where the estimator's own segments are longer: H200, Triton
# 3.6 (benchmarks/ab.py, 2026-12-01-h200-s14 notes), 2048-step segments on 8 warps -> 1024 on
# 4, device us: GAE 16 x 262144 35.3 -> 31.6, 128 x 8192 9.9 -> 9.0, 32 x 8192 5.9 -> 5.5,
# 1 x 8192 4.8 -> 4.3; TD(lambda) 35.0 -> 33.2, 10.7 -> 9.6; traces 21.6 -> 20.5, 7.8 -> 7.0;
# but GAE 1 x 1048576 10.3 -> 11.2 (TD(lambda) 11.3 -> 12.2, traces 8.1 -> 8.9): a million
# steps in one row keep 2048 (1024 segments a row make PHASE 2's carry-in 1024 wide).
_SHORT_SPLIT = (1024, 4)
_SHORT_SPLIT_MAX_T = 262144
# Long rows (T > 2048) per estimator, as (warps of a program that walks its row in 1024-step
# chunks, steps of a segment of the time split, warps of a segment's program): a split
# segment is one chunk. H200, Triton 3.6 (benchmarks/ab.py, 2026-11-30-h200-s7 notes):
# - V-trace, loop on 8 -> 4 warps: 512 x 4096 25.9 -> 18.3 us, 384 x 4096 20.7 -> 14.3,
#   1024 x 4096 56.0 -> 41.1, 512 x 8192 55.3 -> 40.9 (GAE 3-5% slower, TD(lambda) 1-5% faster,
#   Retrace within 1-8% either way and its action form 37% slower: those keep 8);
# - V-trace, split segments of 2048 steps on 8 warps -> 1024 on 4: 1 x 1048576 25.0 -> 19.8,
#   16 x 262144 and 64 x 65536 equal (80.7 -> 81.2, 82.0 -> 81.6);
# - Retrace, 2048 steps on 8 warps -> 1024 on 8: 16 x 262144 76.9 -> 61.1, 64 x 65536
#   77.4 -> 61.4, 1 x 1048576 18.6 -> 18.1; the action form 230.7 -> 135.6, 228.6 -> 135.0,
#   64.5 -> 38.8;
# - GAE and TD(lambda) keep the default: 1024-step segments gained 2-9% on 16 and 64 rows
#   but lost 9-19% on one row.
_LONG_ROWS_DEFAULT = (8, 2048, 8)
_LONG_ROWS = {"vtrace": (4, 1024, 4), "retrace": (8, 1024, 8)}
# Split rows of min_T to _LONG_SPLIT_MAX_T steps per kernel form: one-chunk segments of
# (steps, warps) = tile, for {form: (tile, min_T)}; "discounted_returns" is TD(lambda)'s
# kernel without values. 16 steps a thread instead of 8 (a million steps: instead of 2048 on
# 8 warps): each segment's program spends less of its time in the scan's shuffles and
# barriers for its loads. PHASE 1 alone took 9.6 us at 16 x 262144 (discounted returns)
# against 4.0 to read its inputs, PHASE 2 14.8 against a streaming floor of 6.6
# (benchmarks/phase_times.py). H200, Triton 3.6 (benchmarks/sweep.py with SWEEP_TILES,
# 2026-12-03-h200-s32-notes.md), device us, default -> this: discounted returns 16 x 262144
# 24.0 -> 22.3, 1 x 1048576 9.5 -> 8.6; traces 19.7 -> 18.0, 8.1 -> 7.4; TD(lambda)
# 1 x 1048576 10.3 -> 9.7 (16 x 262144 30.6 -> 31.4: kept); V-trace 1 x 1048576 on 2048 steps
# and 8 warps 13.7 -> 12.6 (16 x 262144 48.6 -> 49.2: kept). GAE gained nowhere (16 x 262144
# 31.0 -> 31.6, 1 x 1048576 9.4 -> 9.5) and keeps its segments. An A/B of the rule
# (benchmarks/ab.py, 2026-12-03-h200-s32-ab-long-split.txt) kept those figures and gained at
# 32 x 262144 (discounted returns 46.4 -> 42.9, traces 37.3 -> 32.3), 4 x 524288 (14.5 ->
# 13.0, 12.0 -> 10.2; TD(lambda) 16.1 -> 15.1) and 2 x 1048576 (15.0 -> 13.1, 13.0 -> 10.8,
# V-trace 28.1 -> 25.5), but lost at 1 x 262144 (5.3 -> 6.5, 4.6 -> 5.1), whose 128 segments
# of 2048 steps are fewer programs than SMs: the rule needs _LONG_SPLIT_MIN_PROGRAMS programs
# an SM (1 x 262144: 0.97; 1 x 1048576, the fewest that gained: 3.9).
# Session 33, after _INTERIOR (benchmarks/ab.py, 2026-12-03-h200-s33-ab-split.txt): GAE
# past 262144 steps too, us: 1 x 1048576 9.6 -> 8.9, 4 x 524288 14.9 -> 14.2, 2 x 1048576
# 14.8 -> 14.6; rows of 262144 steps stay on 2048-step segments where they take them
# (back on 1024: discounted returns 16 x 262144 18.1 -> 20.0, traces 16.1 -> 17.8).
_LONG_SPLIT = {"discounted_returns": ((2048, 4), 262144), "forward": ((2048, 4), 262144),
               "td_lambda": ((2048, 4), 262145), "vtrace": ((2048, 8), 262145), "gae": ((2048, 4), 262145)}
_LONG_SPLIT_MAX_T = 1 << 20
_LONG_SPLIT_MIN_PROGRAMS = 2.0
# PHASE 1 of a time split on batch-major tiles with scalar gamma and lam in float32, for the
# kernel forms named here ("gae", "td_lambda", "discounted_returns": TD(lambda)'s kernel
# without values): each chunk's map from two reductions (the first episode end by a min, the
# discounted sum before it by a sum; scan.constant_chunk_map) instead of a scan. The pass
# only needs each segment's total, and it took twice its read floor: PHASE 1 of discounted
# returns at 16 x 262144 9.6 us against 4.0 to read its inputs (benchmarks/phase_times.py,
# 2026-12-03-h200-s32-phase-times.txt). H200, Triton 3.6 (benchmarks/ab.py,
# 2026-12-03-h200-s32-ab-map-reduce.txt), scan -> reductions, us: TD(lambda) 16 x 262144
# 29.9 -> 28.4, 64 x 65536 29.6 -> 28.1, 1 x 1048576 9.7 -> 9.5; GAE 29.7 -> 29.8, 30.3 ->
# 30.3, 9.3 -> 9.2; discounted returns 22.5 -> 22.9, 23.8 -> 23.5, 8.5 -> 8.3. So the scan
# was not what held the pass up, and only TD(lambda) takes them; the others stay tested
# (tests/test_backends.py::test_map_reduce, tests/test_gpu.py::test_map_reduce).
# Session 34, after _INTERIOR (2026-12-03-h200-s34-ab-lazy.txt), us: discounted returns
# 16 x 262144 18.0 -> 17.7, 64 x 65536 18.9 -> 18.4, 1 x 1048576 8.5 -> 7.8, 4 x 524288 11.3 ->
# 11.4; GAE 27.3 -> 27.5, 27.1 -> 27.3, 9.0 -> 8.8, 14.1 -> 14.1 (GAE stays on the scan).
_MAP_REDUCE = frozenset({"td_lambda", "discounted_returns"})
# A row walked by one program in chunks (batch-major, no split): (steps of a chunk, depth of
# the chunk loop's software pipeline, Plan.stages) per backward kernel form; the default is
# _LOOP_TILE_DEFAULT, _LOOP_BLOCK_T-step chunks not pipelined. H200, Triton 3.6: benchmarks/sweep.py vtrace
# 512x4096 (2026-12-02-h200-s27-sweep-classic.txt) found 512-step chunks 3 deep 13.2 us
# against the default 1024-step chunks' 15.1. A/B (benchmarks/ab.py, two runs,
# 2026-12-02-h200-s27-ab-vtrace-loop.txt), device us, default -> these: 512 x 4096 14.3 ->
# 12.6, 384 x 4096 11.0 -> 10.4, 1024 x 4096 35.4 -> 26.1, 2048 x 4096 67.7 -> 49.0,
# 4096 x 4096 130.7 -> 94.0, 512 x 8192 35.3 -> 25.5, 1000 x 4096 35.2 -> 26.1; but rows
# that end in a partial chunk lost (512 x 3000 9.3 -> 10.3, 512 x 3008 9.3 -> 10.2), as did
# 300 rows (2.3 programs an SM: 300 x 4096 9.8 -> 10.3, where 384 rows, 2.9 an SM, gained),
# so a form's tile applies to rows of whole chunks on at least _LOOP_TILE_MIN_PROGRAMS
# programs an SM (between those two).
_LOOP_TILES: dict[str, tuple[int, int]] = {"vtrace": (512, 3)}
_LOOP_TILE_MIN_PROGRAMS = 2.5
# The forward kernel (eligibility traces, episodic prefix sums: one input, no look-ahead)
# keeps fewer values live per element than the backward estimators and wants more elements a
# thread: short rows of at least _FWD_SHORT_MIN_T steps take tiles of up to _FWD_SHORT_TILE
# elements on a warp per _FWD_WARP_ELEMS (8 a thread, against 256-element tiles at 4), a row
# in one chunk at most _FWD_ONE_CHUNK_WARPS warps, a row walked in chunks _FWD_LOOP_WARPS
# warps pipelined _FWD_LOOP_STAGES deep. Found by benchmarks/sweep.py traces, then timed
# (benchmarks/ab.py, `device_run.sh fwd`; 2026-11-30-h200-s9 notes), H200, Triton 3.6,
# device us, eligibility traces / prefix sums, the backward kernels' tiles -> these with
# 1024- / 2048-element short tiles:
#   32768 x 16    2.6 / 2.6    -> 2.2 / 2.2,  2.1 / 2.2
#   32768 x 32    4.0 / 4.1    -> 2.9 / 2.9,  3.0 / 2.8
#   32768 x 64    6.5 / 6.6    -> 4.4 / 4.6,  4.1 / 4.2
#   16384 x 128   6.4 / 6.4    -> 4.3 / 4.6,  4.4 / 4.6
#   4096 x 2048   23.6 / 24.1  -> 20.0 / 20.1 (8 warps, not 16)
#   512 x 4096    7.2 / 7.2    -> 6.3 / 6.2   (4 warps, 3 stages, not 8 warps)
#   1024 x 4096   14.3 / 14.4  -> 10.0 / 10.0
# 32768 x 8 (its [32, 8] tile kept), 1024 x 128 and 16384 x 512 equal to 0.1 us.
# Where a call has too few rows for its SMs, a forward short-row tile halves its rows (down to
# the backward kernels' tile) until there are _PROGRAMS_PER_SM programs an SM.
_FWD_TILES = True
_FWD_SHORT_MIN_T = 16
_FWD_SHORT_TILE = 2048
_FWD_WARP_ELEMS = 256
_FWD_LOOP_WARPS = 4
_FWD_LOOP_STAGES = 3
_FWD_ONE_CHUNK_WARPS = 8
# The forward kernel on row programs for at least _FWD_WALK_MIN_SM_SHARE of the SMs (93 of the
# H200's 132), but fewer than _PROGRAMS_PER_SM an SM, of at most _FWD_WALK_MAX_T steps: each
# row walked by one program in _FWD_WALK_BLOCK_T-step chunks on _FWD_WALK_WARPS warps
# (pipelined _FWD_LOOP_STAGES deep), not split in time. Its scan is light enough that a second
# pass over the row costs more than the walk once about an SM's worth of rows run side by
# side. Found by benchmarks/sweep.py traces / prefix_sum, then timed (benchmarks/ab.py,
# 2026-12-01-h200-s15 notes), H200, Triton 3.6, device us, eligibility traces (prefix sums
# equal to 0.1-0.3), split or 1024-step chunks on 4 warps -> walked in 2048-step chunks on 8:
#   128 x 4096   5.2 -> 3.5     256 x 4096   5.0 -> 4.5     96 x 8192   6.0 -> 5.6
#   128 x 8192   7.0 -> 5.8     256 x 8192  10.8 -> 7.0    128 x 16384 10.8 -> 10.0
#   64 x 8192    5.2 -> 5.3 (kept split), 100 x 3000 5.7 -> 5.8;
# with an SM's two programs or more the 1024-step chunks on 4 warps stay (512 x 4096
# 6.3 -> 7.4, 1024 x 4096 9.9 -> 12.9, 2048 x 4096 24.0 -> 31.7 walked in 2048-step chunks).
_FWD_WALK_BLOCK_T = 2048
_FWD_WALK_WARPS = 8
_FWD_WALK_MIN_SM_SHARE = 0.7  # (64 rows: split 5.2 us, walked 5.3; 96: 6.0 and 5.6)
_FWD_WALK_MAX_T = 16384
# Rows of 2049 to _ONE_CHUNK_MAX_T steps on few programs are held whole in one chunk of
# next_pow2(T) steps by one program: one launch, with neither a chunk loop's carry hand-over
# between dependent chunks nor a split's second pass, second launch and scratch buffers.
# ptxas fits 16 warps in 128 registers a thread (one program an SM), which these rows want:
# 4096-step rows take 16 warps up to one program an SM and 8 beyond (122 registers for GAE:
# two an SM), 8192-step rows 16. Per kernel form, _ONE_CHUNK_ROWS[form] (else
# _ONE_CHUNK_DEFAULT) = (most programs an SM with 4096 steps, fewest and most with 8192,
# whether rows of T not a multiple of 16 take it): such rows are not 16-byte aligned where the
# tensors are contiguous, so every load is a scalar one, and they take it on 16 warps only
# (8 warps on 512 x 3000 lost everywhere: GAE 19.0 -> 31.0 us), not at all for Retrace. Found
# by `SWEEP_ONE_CHUNK=1 benchmarks/sweep.py` (`device_run.sh one-chunk`), then timed against
# the plans before (a split below an SM's worth of programs, else 1024-step chunks walked):
# `device_run.sh one-chunk-ab` (benchmarks/ab.py, 2026-12-01-h200-s16 notes), H200, Triton 3.6,
# device us, before -> one chunk (adopted where the form's bounds allow):
#              GAE         TD(lambda)   V-trace      Retrace      action form  traces
#   1 x 4096   4.2 -> 2.9  4.9 -> 3.5   4.6 -> 3.9   4.2 -> 3.4   6.1 -> 6.1   3.7 -> 2.7
#   128 x 4096 6.5 -> 4.2  6.7 -> 4.2   7.3 -> 4.8   8.1 -> 4.4  14.5 -> 7.4   3.7 -> 3.0
#   256 x 4096 7.5 -> 5.2  7.3 -> 5.8   9.5 -> 9.0   9.9 -> 6.9  21.8 -> 25.4  4.5 -> 3.6
#   512 x 4096 10.6 -> 9.1 10.9 -> 10.1 15.4 -> 23.4 19.1 -> 21.8 40.7 -> 48.2 6.1 -> 5.5
#   100 x 3000 8.7 -> 6.8  9.1 -> 7.4  14.1 -> 8.2   8.1 -> 8.5   9.0 -> 9.8   5.7 -> 4.6
#   96 x 8192  7.7 -> 6.0  8.2 -> 7.0   9.3 -> 8.9  10.7 -> 7.6  23.1 -> 16.6  5.4 -> 4.4
#   128 x 8192 9.0 -> 6.3  9.7 -> 7.2  10.8 -> 9.7  13.4 -> 7.9  36.6 -> 23.1  5.8 -> 4.6
#   256 x 8192 15.4 -> 11.4 16.3 -> 13.1 21.6 -> 23.2 28.1 -> 22.4 70.8 -> 43.9 7.1 -> 7.7
# (discounted returns as TD(lambda), prefix sums as traces; 1 x 8192 and 32 x 8192 keep the
# split, 4.3 against 5.0 for GAE in the sweep; a 16384-step row on 32 warps lost everywhere,
# 8 x 16384 GAE 5.1 -> 12.0.) More rows (same A/B tool, `_ab/wide`: the bounds above against
# 64 programs an SM), before -> one chunk:
#              GAE          TD(lambda)   returns      traces       action form
#   768 x 4096  25.2 -> 17.4 19.2 -> 15.5 14.3 -> 13.0  7.8 -> 7.3
#   1024 x 4096 28.9 -> 23.4 26.3 -> 24.0 19.2 -> 18.6  9.9 -> 9.6
#   2048 x 4096 54.4 -> 42.0 50.2 -> 45.2 41.8 -> 45.4 24.2 -> 21.6
#   4096 x 4096 104.9 -> 79.4 96.2 -> 86.7 79.3 -> 87.8 43.9 -> 40.2
#   384 x 8192  24.6 -> 20.9 18.3 -> 22.0 14.4 -> 16.9  9.4 -> 9.4  68.3 -> 63.4
#   512 x 8192  28.7 -> 28.8 25.8 -> 35.9 18.6 -> 24.5 10.9 -> 11.1 76.3 -> 82.6
# (Retrace 384 x 8192 32.1 -> 33.6; 512 x 6000 lost for every form.) So GAE and the forward
# kernel take 4096-step rows on up to 32 programs an SM (4224 rows, the most timed), TD(lambda)
# (and the discounted returns of its kernel) on up to 8, and GAE and the action form 8192-step
# rows up to 3. The full call drops with the second launch and the scratch buffers: GAE
# 128 x 8192 about 46 -> 29 us in the sweep, on a host where a bare launch took ~25.
# Float64 arithmetic keeps the plans before: a whole row takes twice the registers (ptxas,
# Triton 3.6: V-trace's 8192-step row on 16 warps spills 3.1 KB a thread, GAE's 220 bytes;
# V-trace's 4096-step row 256), and no float64 call was timed.
_ONE_CHUNK = True
_ONE_CHUNK_MAX_T = 8192
_ONE_CHUNK_DEFAULT = (4.0, 0.7, 2.0, True)  # (the bounds first timed for every form; tests use them)
_ONE_CHUNK_ROWS = {"gae": (32.0, 0.7, 3.0, True), "td_lambda": (8.0, 0.7, 2.0, True),
                   "vtrace": (2.0, 0.7, 1.0, True), "retrace": (4.0, 0.7, 2.0, False),
                   "retrace_actions": (4.0, 0.7, 3.0, False), "forward": (32.0, 0.7, 1.0, True)}
# The warps of a whole row, per kernel form (session 26): (warps of a row of 1025-2048 steps,
# one chunk, on more programs than SMs, 16 on fewer; most programs an SM on which a 4096-step
# row of T a multiple of 16 keeps 16 warps, 8 beyond). The default, 16 and 1.0, is what every
# form had before: 16 warps for a 2048-step row came from GAE 4096 x 2048 in an early session
# (47 us against 49 on 8), and 16 warps for a 4096-step row up to one program an SM from
# session 16's sweep. GAE's and TD(lambda)'s kernels (discounted returns' too) have since
# been faster on 8 and on 16 beyond an SM's worth of programs (`2026-12-02-h200-s26-ab-warps.txt`,
# benchmarks/ab.py, device us, before -> after; rows on fewer programs were not timed):
#              GAE          TD(lambda)   returns
#   512 x 2048  4.8 -> 4.1   4.9 -> 4.5   4.5 -> 4.1  (8 warps; again: 4.9 -> 4.4, 4.8 -> 4.6, 4.5 -> 4.2)
#   1000 x 2048 8.2 -> 7.5   8.1 -> 7.1   7.5 -> 6.6
#   2048 x 2048 20.0 -> 19.5 16.2 -> 15.7 13.9 -> 12.2
#   4096 x 2048 37.2 -> 36.7 30.4 -> 28.6 27.5 -> 25.5
#   256 x 4096  5.0 -> 5.1   5.3 -> 5.2   4.9 -> 4.8  (16 warps, 1.9 programs an SM)
#   512 x 4096  9.3 -> 8.9   9.4 -> 8.5   8.5 -> 7.8  (3.9)
#   1024 x 4096 23.8 -> 20.9 29.3 -> 20.9 19.6 -> 14.4 (7.8; GAE's rows beyond it, up to 32
#                                                       programs an SM, were not timed on 16)
# with the outputs' checksums equal. The other forms lost or tied with the same change:
# V-trace 4096 x 2048 47.3 -> 69.9 (112 registers on 8 warps), traces 1024 x 4096 9.9 -> 11.9,
# Retrace 256 x 4096 6.4 -> 7.8 and within 0.5 us at 2048 steps. Rows of T not a multiple
# of 16 keep 16 warps only up to one program an SM, as before (8 warps lost there).
# Session 48 (below, _WHOLE_ROW_MAXNREG) moved TD(lambda)'s kernel to 8 warps under a register
# cap beyond one program an SM, and gave Retrace's forms one chunk of a whole 4096-step row on
# 16 warps up to 4 programs an SM (_ONE_CHUNK_ROWS' 4.0; they walked such rows in 1024-step
# chunks from 2 and 1 an SM before).
_ONE_CHUNK_WARPS_DEFAULT = (16, 1.0)
_ONE_CHUNK_WARPS = {"gae": (8, 8.0), "td_lambda": (8, 1.0), "retrace": (16, 8.0), "retrace_actions": (16, 8.0)}
# A register cap (Triton's ``maxnreg``) per kernel form for whole batch-major rows of 1025 to
# 4096 steps in one chunk of 2048 or 4096, one a program, on more programs than SMs (prepared in
# session 47, timed and adopted in session 48: see the end of this comment). The classic grid's
# 512 x 4096 (512 programs on 132 SMs, 3.9 an SM)
# is the one row every estimator misses: GAE's and TD(lambda)'s kernels hold it on 16 warps, 8
# steps a thread, two programs an SM (two rounds of programs); the forward kernel on 8 warps at
# 72 registers, three an SM (two rounds); V-trace and Retrace walk it in chunks. Over half their
# time there is what the SMs take to issue their instructions (SASS a thread x warps x programs
# / (132 SMs x 4 schedulers): TD(lambda) about 4.3 us at 1.98 GHz of its 7.8, discounted returns
# 3.9 of 7.0; the floor kernel takes 4.7 and 3.9), and two rounds of programs an SM pay the
# loads' latency twice, so a plan that issues fewer and runs in one round may gain: on 8 warps a
# thread's 16 steps take fewer instructions a step (the scans across threads serve more steps),
# and at 64 registers four programs of 8 warps are resident an SM, 528 on 132 SMs. SASS a
# thread, Triton 3.6 (benchmarks/sass_counts.py NAME 512x4096 SETTINGS; registers, stack bytes
# of spills), the plan now -> one chunk on 8 warps -> capped at 64: TD(lambda) 552 (53) on 16
# warps -> 824 (80) -> 856 (64, 16 B), discounted returns 496 -> 720 -> 752 (0 B), GAE 552 ->
# 792 (88) -> 856 (96 B), the forward kernel 680 (72) -> 696 (24 B); Retrace's chunk loop ([1,
# 1024] on 8 warps, 60 registers, its body 4 times) 632 -> 896 (107) -> 1048 (208 B), V-trace's
# ([1, 512] on 4 warps, 119, 8 times) 720 -> 1232 (205) -> 1632 (520 B), the action form's (80)
# 1112 -> 2448 (244) -> 3072 (656 B). On 16 warps, two programs an SM (two rounds): Retrace 576
# (60, no cap needed), V-trace 728 (111) -> 824 capped at 64 (120 B), the action form 1336 (128)
# -> 1496 (208 B). With Triton 3.8 (CI's) at 64 on 8 warps: TD(lambda) 768 (0 B), GAE 792 (64
# B), the forward kernel 696 (24 B). At 512 x 2048 the others run in one round already (8 warps,
# 40-51 registers) but V-trace holds its rows on 16 warps at 58 registers, two programs an SM:
# on 8 capped at 64, 392 -> 728 (104 B; uncapped 656 at 112 registers). A whole 4096-step row
# takes 8 warps beyond _ONE_CHUNK_WARPS' bound (GAE's and TD(lambda)'s 8 programs an SM) and one
# chunk within _ONE_CHUNK_ROWS' (V-trace and Retrace 2, the action form 1), so the A/B sets
# those too: `device_run.sh s47-whole-row-a` (GAE, TD(lambda), discounted returns, traces on 8
# warps) and `-b` (V-trace, Retrace, the action form on 8 and on 16 warps; V-trace's 2048-step
# rows on 8 in the former). tests/test_gpu.py::test_whole_row_registers.
# Session 48's A/B (benchmarks/ab.py, H200, Triton 3.6, device us; 2026-12-05-h200-s48-ab-whole-
# row-a.txt and -b.txt), as shipped before -> c8 (8 warps capped at 64; the forms' one chunk up to
# 4 programs an SM) -> c16 (16 warps, capped at 64, up to 8 an SM):
#              TD(lambda)   returns      GAE          traces       V-trace      Retrace      action form
#   512 x 4096  8.0 -> 7.2   7.0 -> 6.4   8.6 -> 11.9  5.5 -> 5.7  12.9 47.0 19.9 20.0 25.6 16.6 40.9 76.7 36.7
#   384 x 4096  6.5 -> 6.0   5.7 -> 5.2   7.5 -> 7.7   4.4 -> 4.5  10.3 34.5 15.8 13.0 18.9 10.1 35.9 53.3 30.4
#   256 x 4096  4.8 -> 4.6   4.3 -> 4.1   5.2 -> 5.9   3.6 -> 3.9   8.7 21.5  8.1  6.4  9.2  6.3 22.1 34.3 20.2
#   1024 x 4096 17.0 -> 18.1 12.7 -> 11.2 21.4 -> 26.4 9.8 -> 10.0
#   512 x 4000  8.8 -> 8.8  10.2 -> 7.8   9.1 -> 11.6  5.6 -> 5.6
#   512 x 2048                                                      6.1  7.9  6.2  5.5  6.1  6.1 18.9 18.7 18.8
#   4096 x 2048                                                    47.1 67.4 47.5 50.7 58.0 58.2 118.1 114.8 114.9
# So TD(lambda)'s kernel (TD(lambda), discounted returns) takes c8 (16 warps up to one program
# an SM, 8 capped beyond; 1024 x 4096 of TD(lambda) loses 6%, of returns gains 12%), Retrace
# and the action form c16 (one chunk up to 4 programs an SM on 16 warps; the action form capped,
# Retrace not: its 2048-step rows lost under the cap, and its 4096-step row on 16 warps takes
# 60 registers uncapped, 576 SASS a thread, against 584 and 24 B of spills capped); GAE, V-trace
# and the forward kernel keep their plans (tests/test_gpu.py::test_whole_row_plans).
_WHOLE_ROW_MAXNREG: dict[str, int] = {"td_lambda": 64, "retrace_actions": 64}
# The warps of a whole 4096-step row in one chunk beyond _ONE_CHUNK_WARPS' bound, per kernel form
# (none: 8, as shipped; prepared in session 48, timed in session 49 and lost, see the end). On
# 4 warps a thread holds 32 steps: more of the scan runs in the thread, whose serial steps are
# cheaper than the scans across threads, and a program needs registers for 128 threads only. SASS a thread at 512 x 4096
# (Triton 3.6, benchmarks/sass_counts.py; registers, spills; the issue estimate of the whole
# grid on 132 SMs): the forward kernel 680 (72, 3 programs an SM, 1.29 rounds; 2.66 us) -> 1208
# on 4 warps (105, 4 an SM, one round; 2.37 us); TD(lambda) 856 on 8 capped at 64 (16 B; 3.35
# us) -> 1352 on 4 capped at 128 (127, none, one round; 2.65 us), discounted returns 752 (2.95)
# -> 1176 (121; 2.30); GAE 552 on 16 warps (two rounds; 4.33) -> 1472 on 4 capped at 128 (136 B;
# 2.88), 1376 uncapped at 174 registers (two an SM). `device_run.sh s49-whole-4warps` times
# them (TD(lambda)'s kernel with _WHOLE_ROW_MAXNREG 128 on 4 warps; GAE's with its bound down
# to one program an SM, as TD(lambda)'s); tests/test_gpu.py::test_whole_row_4k_warps. Session
# 49's A/B (2026-12-05-h100-s49-ab-whole-4warps.txt; H100, Triton 3.6, device us), as shipped ->
# 4 warps: 512 x 4096 TD(lambda) 7.4 -> 8.1, discounted returns 6.6 -> 7.6, traces 5.8 -> 6.6,
# GAE 10.3 -> 18.6; 1024 x 4096 TD(lambda) 22.5 -> 28.4; slower at every row timed but one
# (512 x 4000 discounted returns 7.9 -> 7.8), so none.
_WHOLE_ROW_4K_WARPS: dict[str, int] = {}
_WHOLE_ROW_4K_WARPS_DEFAULT = 8
# The same for the time-major lanes tiles (_TM_LANES_TILES; whole rows of up to 128 steps, 32 or
# 64 rows a program) on more programs than SMs (session 47; none as shipped, untimed). Where a
# form's tile takes more than 64 registers on 16 warps only one program an SM is resident, and a
# call of more programs than SMs runs in two rounds or more. Triton 3.6, time-major
# (benchmarks/sass_counts.py NAME RxT tm _TM_LANES_MAXNREG=...): GAE 16384 x 128 (256 programs
# of [64, 128] on 16 warps, 1.38x its batch-major time in session 43's run) 720 SASS a thread at
# 106 registers -> 928 at 64 (40 B of spills), one round instead of two; V-trace 8192 x 128
# ([32, 128] on 16 warps, 256 programs; session 45's narrow tiles) 776 at 121 -> 1016 (160 B),
# Retrace 752 at 87 -> 840 (24 B); GAE 32768 x 64 ([64, 64] on 8 warps, 512 programs, three an
# SM at 78 registers) 824 -> 912 at 64 (48 B), four an SM. V-trace and Retrace took the
# one-chunk time-major tiles at 16384 x 128 and beyond ([32, 16] on one warp, 207 registers:
# about 4 warps an SM) because the narrow lanes tiles lost there uncapped (one program an SM,
# four rounds); capped, two an SM. `device_run.sh s47-tm-lanes-regs` times them, with
# _TM_LAGGED_128's bound raised to 2 programs of 64 rows an SM in one variant;
# tests/test_gpu.py::test_tm_lanes_registers.
_TM_LANES_MAXNREG: dict[str, int] = {}
# The same for the (batch-major) lanes tiles (_ROW_LANES; session 47; none as shipped, untimed).
# V-trace 16384 x 64, 1.2506x its floor kernel in session 45's run (the goal 1.25x): [8, 64]
# on 2 warps (_ROW_LANES_WHOLE) at 80 registers keeps 12 programs an SM resident, so its 2048
# programs take 1.29 rounds on 132 SMs; at 64, 16 an SM and one round (8192 x 64, 0.65 rounds,
# is at 1.17x). `device_run.sh s45-vtrace64` times it beside the other shapes of those tiles.
_LANES_MAXNREG: dict[str, int] = {}
# Split rows by single-pass decoupled look-back (PHASE 3) instead of two launches. Correct
# on the H200 (tests/test_gpu.py::test_lookback_split) but slower: H200, Triton 3.6
# (`bash benchmarks/device_run.sh lookback`, 2026-11-30-h200-s10 notes), two passes ->
# look-back, GAE 1 x 1048576 10.7 -> 19.5 us, 16 x 262144 40.8 -> 53.9, traces 8.6 -> 17.5,
# V-trace 16 x 262144 57.7 -> 93.9; equal only at 1 x 4194304 (61.9 -> 62.5). Its kernel has
# the second pass's registers (72 against 66 for GAE) and adds ~10 us of waiting at 1M
# elements: each program's ticket, aggregate, look-back and inclusive value are a chain of
# memory round trips that two plain passes do not have. Polling the flags with ld.acquire
# loads instead of atomics gave wrong results (a reordering the atomics prevent) and was no
# faster, so the atomics stay.
_LOOKBACK = False
# Split rows in one cooperative launch (PHASE 4, scan.grid_barrier) where every program of
# the split can be resident at once: segments of one chunk, from the split's own up to
# _COOP_MAX_T steps, the shortest that leaves at most _COOP_PER_SM programs an SM, each
# thread holding _COOP_ELEMS steps of its segment. Every input is read once and the carries
# are composed after a single grid barrier, where the two-pass split reads them twice in two
# launches. Whether the programs fit is checked on the compiled kernel (its registers,
# warps and shared memory, :func:`_coop_fits`); where they do not, the same tiles run as
# the two passes.
_COOP = False
# ... and, for the kernel forms named here, a time-major split of one-chunk segments on the
# time-major tiles (plan_time_major's; in practice the small calls' _TM_SMALL_SPLIT, e.g.
# 128 x 1024 as 8 segments of [8, 128]), where the same check finds every program resident;
# not the lanes tiles (scan.scan_step: no single pass). Why it might gain there where _COOP lost on
# batch-major rows of 262144 elements (GAE 1 x 262144 5.8 -> 6.6 us, session 14): these calls
# are latency-bound, not issue-bound (benchmarks/sass_counts.py: the shipped split of
# 128 x 1024 issues 0.25 + 0.26 us on its busiest SM, of a 5.7 us call against 2.1
# batch-major), and their PHASE 2 reloads every input on strided time-major tiles and composes
# up to 64 summaries before its scan. Prepared in session 60 (no GPU was lent), off until
# timed: `bash benchmarks/device_run.sh s60-tm-coop`. The compiled replay (native.py) takes
# no cooperative grid, so such a call's full call goes through the Python replay. At most
# _TM_COOP_MAX_SEGMENTS segments: the carry of each composes every earlier segment's map in
# registers, and 64 of them (GAE 256 x 1024 on [32, 16]) took 255 registers and spilled
# (Triton 3.6, sm_90: 3504 SASS a thread, against 1280 and 88 registers for 128 x 1024's 8).
_TM_COOP: frozenset[str] = frozenset()
_TM_COOP_MAX_SEGMENTS = 16
_COOP_MAX_T = 8192
_COOP_PER_SM = 2
_COOP_ELEMS = 16
_DEFAULT_SMS = 132  # the CPU interpreter has no device to ask
# The two passes of a time split as a programmatic dependent launch (sm_90 and newer: Hopper):
# PHASE 1 lets PHASE 2 launch once all of its programs have started, and PHASE 2, launched
# with the programmatic stream serialisation attribute, waits for PHASE 1 to complete before
# any load (scan.grid_dependency). The launch of the second pass and its programs' start
# then overlap the first pass instead of following its last program. H200, Triton 3.6
# (device_run.sh s35-pdl, 2026-12-03-h200-s35-notes), plain -> dependent launch, us:
# 1 x 1048576 discounted returns 8.1 -> 7.3, GAE 9.2 -> 8.4, V-trace 12.3 -> 11.8, traces
# 6.8 -> 6.4; 16 x 262144 GAE 27.0 -> 26.4, traces 16.2 -> 15.6; 4 x 524288 Retrace 24.4 ->
# 23.5; 1 x 131072 GAE 4.7 -> 3.9, V-trace 5.0 -> 4.3; 8 x 16384 GAE 4.5 -> 4.0; time-major
# 1 x 131072 GAE 4.9 -> 4.1; no row slower by more than 0.1 us. The compiled replay
# (native.py) launches it through cuLaunchKernelEx with the attribute (its GPU tests, and
# those of a CUDA graph capturing it, passed in session 36: 2026-12-03-h200-s36-notes).
_PDL = True
# ... with PHASE 2's wait moved from its start to its first read of the summaries (its
# CARRY_PROD plus scan.CARRY_WAIT, scan.segment_carry_in): where the carry-in follows the tile's loads (one
# chunk a segment, scan.scan_step), those loads, of inputs written before PHASE 1 started, are
# issued while PHASE 1 still runs. device_run.sh s36-pdl-late (2026-12-03-h200-s36-ab-pdl-
# late.txt), us, plain / wait first / wait late: 1 x 1048576 discounted returns 8.2 / 7.2 /
# 6.9, TD(lambda) 8.4 / 8.1 / 7.4, V-trace 12.2 / 11.9 / 11.3, Retrace 12.8 / 12.2 / 11.8;
# 16 x 262144 Retrace 43.0 / 42.4 / 41.8; 8 x 16384 Retrace's action form 7.2 / 6.9 / 6.0;
# the late wait slower than the first by at most 0.6 (discounted returns 16 x 262144, 17.6 /
# 17.1 / 17.7), nowhere slower than the plain launch by more than 0.1.
_PDL_LATE = True
# Retrace from quantities of step t only (retrace_kernel's LAGGED form: a lagged scan of
# H_t = v_t + c_t D_t instead of reading v, rho and, in the action form, the whole
# expectation again at t + 1), for the forms named here ("actions": retrace_from_action_values,
# "sampled": retrace). It trades those loads for the lagged scan's four-component combine.
# H200, Triton 3.6 (benchmarks/ab.py, 2026-11-30-h200-s6 notes), direct -> lagged: the
# action form (4 actions) got faster at every shape timed (16384 x 512 198 -> 168 us,
# 32768 x 8 21.8 -> 15.0, 4096 x 2048 291 -> 284, 512 x 4096 73.9 -> 71.7); the sampled form
# gained 7-8% from 2048 steps on but lost 50% at 512 x 4096 (19.4 -> 29.2), so it stays direct.
_RETRACE_LAGGED = frozenset({"actions"})
# Retrace's action form with 4 float32 actions per step, contiguous, 16-byte aligned: read
# each step's action values and target probabilities as one 16-byte vector load each
# (retrace_kernel's AV_VEC = 4, inline PTX) instead of a strided load per action. The layout
# and the base addresses are checked here, on the host (a replay checks each call's
# addresses again, see _Step); the kernel carries no fallback, because with the loop over
# actions compiled beside the vector loads behind a run-time alignment test the vector form
# gained far less. H200, Triton 3.6 (benchmarks/ab.py, 2026-11-30-h200-s7 notes), loop ->
# vectors without the fallback, batch-major: 4096 x 2048 283 -> 126 us, 16384 x 512
# 166 -> 125, 512 x 4096 70.5 -> 45.5, 32768 x 64 71 -> 37, 32768 x 8 15.1 -> 4.7,
# 16 x 262144 319 -> 208; time-major 4096 x 2048 490 -> 234, 16384 x 512 245 -> 131. (With
# the fallback compiled in: 16384 x 512 166 -> 187, 4096 x 2048 283 -> 254.)
_RETRACE_AV_VEC = True
# Time-major storage ([T, N]: rows are the contiguous axis). A tile is _TM_ROWS rows by
# _TM_STEPS steps on _TM_WARPS warps: 4 contiguous rows per thread (one 16-byte access, see
# scan.program_tile), 8 lanes along rows and 4 along time, 4 steps per thread, so the scan
# over time runs in registers and 2 shuffle levels, with no shared memory. A program walks
# its segment of time in such chunks, so the chunks of one row block are a chain of
# dependent loads: what makes these tiles fast is many small programs in flight, and a
# chunk loop that loads ahead (_TM_STAGES). Row blocks
# fewer than _TM_SPLIT_BELOW per SM are therefore split in time (two passes, summaries
# read along rows) into segments of at most _TM_CHUNKS_PER_SEGMENT chunks and towards
# _TM_PROGRAMS_PER_SM programs per SM, at most _TM_MAX_SEGMENTS; rows of up to
# _TM_ONE_CHUNK_T steps are instead one chunk of the whole row (see _TM_ONE_CHUNK_ROWS).
# Measured on the H200 (Triton 3.6; benchmarks/sweep.py with SWEEP_TIME_MAJOR=1, GAE and
# V-trace, 2026-11-30-h200-s5 results): against the earlier 128-row tiles on 4 warps with
# at most 16 segments, 512 x 4096 GAE 68 -> 23 us, 4096 x 2048 211 -> 101, 4096 x 128
# 12.7 -> 5.2, 8192 x 256 35 -> 20; 16384 x 512 unchanged (85). Splitting 16384 x 512 (512
# row blocks) in two made it slower (130 us): its row blocks already fill the GPU.
# Below _TM_MIN_ROWS rows or _TM_MIN_STEPS steps the generic tiles are used (H200, Triton
# 3.6: 32768 x 8 GAE 2.9 us generic against 3.5 time-major). From 128 rows up the time-major
# tiles win (256 x 8192 GAE 121 -> 32 us, 128 x 16384 169 -> 60, 384 x 4096 95 -> 20, with
# the minimum at 512 rows before). From 64 rows too (benchmarks/ab.py, 2026-11-30-h200-s11
# notes), the batch-major tiles' strided reads -> these, GAE / TD(lambda) / V-trace / traces,
# us: 64 x 65536 282 -> 112 / 218 -> 159 / 343 -> 210 / 143 -> 63; 96 x 20000 123 -> 39 /
# 96 -> 54 / 152 -> 70 / 73 -> 23; 64 x 16384 71 -> 32 / 55 -> 45 / 83 -> 57 / 40 -> 20. At
# 32 rows they won at 8192 steps but lost at 131072 (TD(lambda) 217 -> 310, V-trace 340 ->
# 413), so fewer than 64 rows keep the generic tiles (or the few-rows tiles below).
_TM_ROWS = 32
_TM_STEPS = 16
_TM_WARPS = 1
_TM_MIN_ROWS = 64
_TM_MIN_STEPS = 32
_TM_SPLIT_BELOW = 2
_TM_SPLIT_MIN_ELEMS = 1 << 18  # below this, too few row blocks take the generic tiles instead
_TM_PROGRAMS_PER_SM = 8
_TM_CHUNKS_PER_SEGMENT = 16
_TM_MAX_SEGMENTS = 64
_TM_ONE_CHUNK_T = 128
# Rows of up to _TM_ONE_CHUNK_T steps, one chunk: _TM_ONE_CHUNK_ROWS rows, a warp per
# _TM_ONE_CHUNK_WARP_STEPS steps. H200, Triton 3.6 (2026-11-30-h200-s6 notes), 32 -> 16 rows:
# 4096 x 128 GAE 5.1 -> 4.5 us, V-trace 6.4 -> 5.4, Retrace 6.4 -> 5.1, traces 4.5 -> 3.7;
# 4096 x 64 V-trace 4.6 -> 3.5; 8192 x 128 within 0.2 us but V-trace 11.0 -> 9.1. A warp per
# 32 steps instead was slower (4096 x 128 V-trace 6.4 -> 12.2).
_TM_ONE_CHUNK_ROWS = 16
_TM_ONE_CHUNK_WARP_STEPS = 16
# Time-major calls too small to split (fewer than _TM_SPLIT_MIN_ELEMS elements) of rows of
# _TM_MIN_STEPS to _TM_ONE_CHUNK_T steps, from _TM_MIN_ROWS rows (the classic grid's 512 x 128;
# CleanRL's Atari buffers of 128 steps with 64 to 1024 environments) took the generic tiles: a
# program's rows read down strided columns, one 4-byte element of each 32-byte sector.
# _TM_SMALL_ROWS (0: off) gives them instead the one-chunk time-major tiles of that many rows
# (8: one 32-byte access along the rows; 4: a 16-byte one) and a warp per
# _TM_ONE_CHUNK_WARP_STEPS steps. Session 17's sweep of forced plans (benchmarks/sweep.py with
# SWEEP_TIME_MAJOR=1 SWEEP_TM_NARROW=1, 2026-12-01-h200-s17-sweep-tm-narrow-*.txt) found it;
# session 48 timed it as a rule (`device_run.sh s46-tm-small`, benchmarks/ab.py,
# 2026-12-05-h200-s48-ab-tm-small.txt; H200, Triton 3.6, device us), time-major, the generic
# tiles -> 4 rows -> 8 rows:
#              GAE            TD(lambda)     V-trace        Retrace        traces
#   256 x 128  2.9 2.2 2.3    3.0 2.3 2.5    3.3 2.7 2.7    3.7 2.5 2.7    2.4 2.0 2.1
#   512 x 128  3.8 2.8 2.5    3.4 2.5 2.6    4.0 3.1 2.8    4.6 3.0 2.7    2.6 2.2 2.1
#   1024 x 128 5.9 3.3 2.9    5.1 2.9 2.8    5.9 3.7 3.3    6.9 3.8 3.2    3.3 2.6 2.4
#   2000 x 128 9.7 4.6 3.6    7.9 3.8 3.3    9.9 5.1 4.0   11.7 5.3 4.1    4.5 3.3 2.8
#   512 x 64   2.3 2.2 2.0    2.1 2.0 2.1    3.3 2.3 2.2    3.7 2.3 2.2    2.0 1.9 1.7
# so 8 rows (tests/test_gpu.py::test_tm_small_tiles checks every estimator on them).
_TM_SMALL_ROWS = 8
# ... and rows of more than _TM_ONE_CHUNK_T and at most _TM_SMALL_LONG_MAX_T steps, in calls of
# _TM_SMALL_LONG_MIN_ROWS rows or more and at most _TM_SMALL_LONG_ELEMS[form] elements (no entry:
# never), are one chunk of a whole row on _TM_SMALL_LONG_ROWS rows and _TM_SMALL_LONG_WARPS warps
# (the classic grid's 512 x 512, 256 x 1024 and 128 x 1024 otherwise take a two-pass split of
# one-warp tiles from _TM_SPLIT_MIN_ELEMS = 2^18 elements and the generic tiles' strided columns
# below). Session 48's A/B (`device_run.sh s46-tm-small-long`, 2026-12-05-h200-s48-ab-tm-small-long.txt;
# H200, Triton 3.6, device us), time-major, as before -> [4, T] on 8 warps (-> [8, T]: lost
# nearly everywhere):
#              GAE         TD(lambda)  V-trace     Retrace     traces
#   256 x 512  8.0 -> 4.8  6.6 -> 3.9  8.5 -> 5.6  9.5 -> 5.4  5.4 -> 3.6   (2^17 elements)
#   128 x 1024 8.3 -> 7.6  6.4 -> 6.4  9.1 -> 9.4  9.6 -> 9.0  6.1 -> 5.6   (2^17)
#   512 x 512  4.6 -> 5.5  4.9 -> 4.6  6.5 -> 6.6  6.0 -> 6.5  4.7 -> 4.4   (2^18: the split)
#   256 x 1024 5.7 -> 7.8  9.9 -> 6.5  7.4 -> 9.6  6.9 -> 9.1  5.9 -> 5.7   (2^18)
#   1024 x 256 5.2 -> 5.1  4.0 -> 3.9  5.9 -> 5.8  5.3 -> 6.1  4.1 -> 4.0   (2^18)
# So TD(lambda)'s kernel (discounted returns too) takes it up to 2^18 elements, GAE, V-trace,
# Retrace and the forward kernel (traces, prefix sums) below (where it replaces the generic
# tiles, not the split); the action form was not timed. Through the harness at 056d399
# (2026-12-05-nvidia-h200-custom-s48-verify.md, with the forward kernel to 2^18 as first
# adopted) the forward kernel lost at 2^18 against session 43's run of the split, time-major
# traces 256 x 1024 4.3 -> 5.7 us and 512 x 512 3.8 -> 4.3, prefix sums 4.3 -> 5.7 and 4.0 ->
# 4.2 (the A/B's traces had the split at 5.9 and 4.7 there; the harness decides), and gained
# below (128 x 1024: 6.1 -> 5.7, 6.0 -> 5.7), so it stops below 2^18 too; TD(lambda) 256 x 1024
# 9.9 -> 6.4, discounted returns 5.4 -> 5.6. 64 x 512 (16 programs) gained nothing in session
# 17's sweep.
_TM_SMALL_LONG_ELEMS: dict[str, int] = {
    "td_lambda": _TM_SPLIT_MIN_ELEMS, **dict.fromkeys(("gae", "vtrace", "retrace", "forward"), _TM_SPLIT_MIN_ELEMS - 1)}
_TM_SMALL_LONG_ROWS = 4
_TM_SMALL_LONG_WARPS = 8
_TM_SMALL_LONG_MAX_T = 1024
# Calls of fewer than _TM_SMALL_LONG_FEW_BELOW rows take _TM_SMALL_LONG_FEW_ROWS rows a program
# (twice the programs: 128 x 1024 ran 32 programs of [4, 1024], two warps a scheduler on 32
# SMs), from _TM_SMALL_LONG_MIN_ROWS rows. Session 49's A/B (`device_run.sh s48-tm-rows`,
# 2026-12-05-h100-s49-ab-tm-rows.txt; H100, Triton 3.6, device us), time-major, as shipped ->
# 2 rows -> 1 row (-> 1 row on 4 warps, not shown: as 1 row):
#              GAE             TD(lambda)      V-trace          traces
#   128 x 1024 7.8 -> 7.4 9.4  6.6 -> 5.6 7.2  9.6 -> 8.7 11.1  5.7 -> 5.2 6.5
#   64 x 512   4.5 -> 4.4 4.7  3.7 -> 3.4 3.7  4.8 -> 4.9 5.1   3.3 -> 3.1 3.3  (generic tiles before)
#   256 x 1024 5.8 -> 9.9      6.9 -> 7.1      7.5 -> 11.6      6.0 -> 6.3      (2^18: GAE, V-trace,
#   512 x 512  5.1 -> 8.9      4.8 -> 6.7      6.6 -> 10.0      4.8 -> 5.4       traces split)
# so 2 rows below 256 rows (64 programs at 128 rows; at 256 rows, 128 programs of 2 rows lost
# to 64 of 4: TD(lambda) 6.9 -> 7.1), and from 64 rows (16 programs at 4 rows gained nothing in
# session 17's sweep; 32 at 2 rows gained for three of the four forms above, V-trace 0.1 us slower).
_TM_SMALL_LONG_FEW_BELOW = 256
_TM_SMALL_LONG_FEW_ROWS = 2
_TM_SMALL_LONG_MIN_ROWS = 64
# ... but in those calls of fewer than _TM_SMALL_LONG_FEW_BELOW rows, the first of the form's
# _TM_SMALL_SPLIT tiles (from rows, below rows, above steps, from elements, rows, warps[, a row
# count that is a multiple of, at most steps]: 6 or 8 fields) whose bounds the call reaches
# splits its rows in time into one-chunk segments of
# _TM_SMALL_SPLIT_STEPS steps on [rows, 128] tiles on that many warps (no entry, or no tile
# reached: the whole rows above): 128 x 1024 takes 8 segments of 16 or 32 row blocks instead of
# 64 programs of a 1024-step chain each. Session 50's sweep (`device_run.sh s50-sweep-tm-small`,
# benchmarks/sweep.py SWEEP_TM_NARROW_FEW=1, 2026-12-05-h100-s50-sweep-tm-small-*.log; H100,
# Triton 3.6, device us, every plan's outputs checked against the default's), time-major
# 128 x 1024, [2, 1024] on 8 warps as shipped -> the best plan:
#   GAE 7.4 -> 5.9 ([8, 128] on 2 warps, 8 segments; [4, 128] on 1: 6.1)
#   V-trace 8.6 -> 7.7 ([4, 128] on 1 warp; [8, 128] on 2: 8.1)
#   traces 5.1 -> 4.9 ([8, 128] on 2: within the noise, not taken); TD(lambda) 5.5, as shipped
#   (its best split, [4, 128], 6.7)
# At 64 x 512 (4 segments) GAE gained less (4.5 -> 4.2 on [4, 128]) and V-trace lost (4.9 ->
# 5.4), so calls of fewer than 128 rows keep the whole rows. Where session 50 split every call
# of 128-255 rows of 513-1024 steps it lost some; session 51's A/Bs between the bounds
# (`device_run.sh s51-refine`, `s51-rule`: 2026-12-06-h100-s51-refine.txt, -s51-rule.txt; H100,
# device us, whole rows -> split on [8, 128] / [4, 128]) put them here:
#   GAE      losses at 130 x 513, 576, 640 (83200 elements and fewer: 4.9 -> 5.5, 5.2 -> 5.6,
#            5.5 -> 5.7); gains from 140 x 640 (89600: 5.9 -> 5.7), 128 x 704 6.0 -> 5.5,
#            160 x 600 6.1 -> 5.6, 200 x 600 6.2 -> 5.4, 224 x 1024 9.3 -> 6.5
#   V-trace  [4, 128] gains above 640 steps below 192 rows (128 x 704 7.1 -> 6.7, 128 x 768
#            7.4 -> 6.8, 176 x 1024 10.2 -> 8.6), losses at 640 steps and fewer (130 x 640
#            6.5 -> 8.1, 140 x 640 6.8 -> 7.2; 160 x 600 and 176 x 576 gained 0.3, not taken);
#            from 192 rows [8, 128] (half the programs) gains above 704 steps (192 x 768
#            8.9 -> 8.3, 250 x 1024 11.2 -> 9.7, 255 x 1024 12.4 -> 10.8) and loses at 704
#            and fewer (200 x 704 8.0 -> 8.4, 250 x 640 7.9 -> 8.3); [4, 128] lost there at
#            255 and 250 x 1024 (12.6, 12.7)
# Session 52 timed that rule at its bounds and the split for the forms not yet tried
# (`device_run.sh s51-bounds`, `s52-split-more`: 2026-12-06-h100-s52-bounds.txt,
# -s52-split-more.txt; H100, device us, whole rows -> split):
#   GAE      as shipped: 140 x 640 5.8 -> 5.5, 128 x 688 5.9 -> 5.6, 192 x 720 6.9 -> 5.9,
#            250 x 768 7.8 -> 6.6, but 130 x 680 5.4 -> 5.8 and 150 x 600 5.4 -> 5.6 (row counts
#            not a multiple of 4 lost at every small call timed: 130 x 513-680, 150 x 600)
#   V-trace  641-736 steps net loss (130 x 680 6.8 -> 8.4, 180 x 672 7.4 -> 7.9, 200 x 736 8.2 ->
#            8.6, 192 x 720 8.3 -> 8.4; 128 x 688 7.0 -> 6.7, 128 x 704 7.1 -> 6.7), every call
#            of 768 steps or more gained or tied, so both tiles from above 736 steps
#   Retrace  [8, 128]: 128 x 1024 8.8 -> 7.3, 192 x 1024 10.7 -> 7.8, 255 x 1024 12.9 -> 9.7,
#            200 x 600 7.4 -> 6.8, 128 x 768 7.4 -> 7.0, but 130 x 640 6.2 -> 6.8 ([4, 128]
#            slower everywhere): GAE's bound
#   forward  [8, 128] (traces / prefix sums): 128 x 1024 5.2 -> 4.8 / 5.1 -> 4.9, 192 x 1024
#            6.1 -> 5.0 / 5.9 -> 5.1, 255 x 1024 7.1 -> 5.8 / 7.2 -> 5.8; at 768 steps and
#            fewer none gained (130 x 640 4.1 -> 4.5, 200 x 600 4.7 -> 4.8), so above 768
# Session 54 (`device_run.sh s54-odd`, `s54-g4`: 2026-12-07-h100-s54-odd.txt, -s54-g4.txt;
# H100, device us): GAE's losses at 130 x 680 and 150 x 600 were the bound's noise (whole rows
# -> as shipped 5.5 -> 5.6, 5.6 -> 5.6; 130 x 768 6.2 -> 5.8, 170 x 640 6.2 -> 5.8, 134 x 1024
# 7.5 -> 6.2, 250 x 640 6.8 -> 6.4), but at row counts that are multiples of 4 [4, 128] on 1 warp
# beat [8, 128] up to 768 steps below 192 rows (140 x 640 5.5 -> 4.9, 128 x 704 5.6 -> 5.0,
# 160 x 600 5.5 -> 5.1, 176 x 640 5.6 -> 5.2, 160 x 704 5.6 -> 5.3, 128 x 768 5.5 -> 5.2; tied at
# 128 x 1024, 5.8 -> 5.9; lost at 192 x 1024 6.1 -> 6.8 and 200 x 736 5.8 -> 6.0) and lost at
# every row count of 2 mod 4 (130 x 768 5.8 -> 6.0, 150 x 700 5.8 -> 6.0, 162 x 768 6.0 -> 6.3):
# with 4 | R a tile's four rows start on a 16-byte boundary at every step. Its bounds
# (`s54-g4-bounds`, `s54-g4-steps`: -s54-g4-bounds.txt, -s54-g4-steps.txt; whole rows / [8, 128]
# / [4, 128]): it gains below GAE's 86K elements too (128 x 576 5.2 / - / 4.6, 128 x 640 5.8 /
# - / 4.9, 132 x 600 5.0 / - / 4.8, 160 x 520 5.3 / - / 5.0), and at 188 x 528 (5.7 / 5.6 / 5.2)
# and 188 x 768 (7.0 / 6.2 / 5.8); past 768 steps it is mixed (140 x 800 5.5 -> 5.2, 188 x 832
# 6.4 -> 6.2, but 160 x 896 5.8 -> 6.0, 176 x 960 5.9 -> 6.2, 128 x 1000 5.7 -> 5.9)
_TM_SMALL_SPLIT: dict[str, tuple[tuple[int, ...], ...]] = {
    "gae": ((128, 192, 512, 0, 4, 1, 4, 768), (128, 256, 512, 86 * 1024, 8, 2)),
    "vtrace": ((192, 256, 736, 0, 8, 2), (128, 192, 736, 0, 4, 1)),
    "retrace": ((128, 256, 512, 86 * 1024, 8, 2),),
    "forward": ((128, 256, 768, 0, 8, 2),),
}
_TM_SMALL_SPLIT_STEPS = 128
# A program that walks at least _TM_PIPELINE_CHUNKS chunks has its chunk loop software
# pipelined _TM_STAGES deep (``tl.range(num_stages=...)``: Triton >= 3.x issues the next
# chunks' loads as cp.async copies into shared memory while the current chunk is scanned),
# so the chain of chunks is no longer one memory latency per chunk. H200, Triton 3.6
# (benchmarks/ab.py, 2026-11-30-h200-s6 notes), time-major, plain loop -> 3 stages:
# 16384 x 512 GAE 86.7 -> 44.9 us, V-trace 100.8 -> 65.3, TD(lambda) 77.0 -> 34.1;
# 4096 x 2048 GAE 102 -> 75; 512 x 4096 GAE 22.4 -> 19.1. Programs of 2 chunks (2048 x 512
# V-trace 14.5 -> 16.3) and batch-major 1024-step chunks (512 x 4096 GAE 13.7 -> 17.1) got
# slower, so those keep the plain loop.
_TM_STAGES = 3
_TM_PIPELINE_CHUNKS = 4
# ... and _TM_DEEP_STAGES deep for the kernel forms of _TM_DEEP_FORMS where one program of
# _TM_NARROW_ROWS rows walks a whole row of at least _TM_DEEP_CHUNKS chunks (no split): one
# warp, 8 elements a chunk a thread, where a fourth chunk in flight keeps more bytes moving.
# H200, Triton 3.6 (benchmarks/ab.py, 2026-12-04-h200-s41-ab-tm-stages.txt), 3 -> 4 stages,
# time-major 16384 x 512: TD(lambda) 32.6 -> 31.0 us, discounted returns 27.4 -> 25.2, traces
# 26.7 -> 23.7; GAE (39.5 -> 44.8) and V-trace (49.5 -> 51.6) lost, as did every form on split
# rows (4096 x 2048 traces 36.7 -> 38.9, discounted returns 37.9 -> 38.6) and on 16 chunks
# (8192 x 256 traces 6.9 -> 7.2); 6 stages lost everywhere. Then (-s41-ab-tm-deep.txt),
# 3 -> 4 stages: 8192 x 512 TD(lambda) 23.4 -> 20.9, discounted returns 12.1 -> 11.9, traces
# 13.0 -> 12.6; 16384 x 1024 62.1 -> 60.1, 52.1 -> 47.4, 50.4 -> 44.3; 8192 x 1024 44.4 ->
# 39.2, 39.6 -> 33.7, 37.6 -> 29.6; but 32-row programs lost (32768 x 512: TD(lambda) 56.2 ->
# 59.5, traces 40.4 -> 44.4), so the 16-row ones only.
_TM_DEEP_STAGES = 4
_TM_DEEP_CHUNKS = 32
_TM_DEEP_FORMS = frozenset({"td_lambda", "forward"})
# Row blocks fewer than _TM_NARROW_BELOW per SM take tiles of _TM_NARROW_ROWS rows when
# that makes at least _TM_SPLIT_BELOW row blocks per SM (no split). H200, Triton 3.6
# (benchmarks/ab.py, 2026-11-30-h200-s6 notes), 32 -> 16 rows: 16384 x 512 GAE 44.2 -> 39.9,
# V-trace 64.9 -> 49.4; 8192 x 256 GAE 15.9 -> 11.7, traces 10.8 -> 7.1; slower where it
# does not avoid a split or the 32-row blocks already fill the GPU (4096 x 2048 GAE 66 -> 81,
# 32768 x 64 V-trace 13.0 -> 17.0).
# Rows of fewer than _TM_NARROW_MIN_T steps keep 32 (untimed there; at 64 steps the 16-row
# tiles were the slower ones).
_TM_NARROW_ROWS = 16
_TM_NARROW_BELOW = 4
_TM_NARROW_MIN_T = 256
# About a row block per SM or more (_TM_WIDE_MIN_BLOCKS), rows too few to skip the split
# take, for the estimators of _TM_WIDE_KINDS, one pass of wider pipelined tiles instead
# (_TM_WIDE_STEPS steps on _TM_WIDE_WARPS warps). H200, Triton 3.6 (2026-11-30-h200-s6
# notes), split -> (32 rows, 64 steps, 8 warps): 4096 x 2048 V-trace 86 -> 74 us, Retrace
# (sampled) 98 -> 74, 4096 x 512 V-trace 24 -> 20; GAE equal (65 -> 64), TD(lambda) 53 -> 62
# and traces 38 -> 59 slower, so those keep the split. With 4 warps V-trace got slower
# (88 -> 141). GAE and Retrace's action form take them since session 41 (benchmarks/ab.py,
# 2026-12-04-h200-s41-ab-tm-stages.txt, -ab-tm-deep.txt, -ab-tm-av-wide.txt; split -> one
# pass, us): GAE 4096 x 2048 71.2 -> 65.0 and 70.3 -> 64.8, 4096 x 4096 141.7 -> 126.2,
# 4096 x 1024 36.5 -> 34.5 (4096 x 512, 512 x 4096 and 2048 x 1024 within 0.2); the action
# form 4096 x 2048 238.2 -> 221.1, 4096 x 512 71.1 -> 59.0, 4100 x 700 98.1 -> 84.8, 4096 x
# 4096 462.9 -> 433.7. TD(lambda)'s kernel still loses with them (4096 x 2048 TD(lambda)
# 55.5 -> 60.8, discounted returns 37.9 -> 56.1).
_TM_WIDE_KINDS = frozenset({"vtrace", "retrace", "gae", "retrace_actions"})
_TM_WIDE_MIN_BLOCKS = 128
_TM_WIDE_STEPS = 64
_TM_WIDE_WARPS = 8
# Few rows (4, 8 or 16: a power of two from _TM_FEW_MIN_ROWS to _TM_FEW_MAX_ROWS) of many
# steps, time-major: the generic tiles read each row along a stride of R elements, so a
# 32-byte sector serves one row and is fetched again for every other row. The kinds of
# _TM_FEW_TILES ("forward": traces and prefix sums) take one tile of all the rows (4 a
# thread: a 16-byte access) by `steps` steps on `warps` warps, split into segments of
# `chunks` chunks, the chunk loop pipelined `stages` deep, once that makes at least
# _TM_FEW_MIN_SEGMENTS segments; each kind lists (from rows, tile) pairs, most rows first.
# H200, Triton 3.6:
# * _TM_FEW_LONG (benchmarks/sweep.py with SWEEP_TIME_MAJOR=1, then benchmarks/ab.py,
#   2026-11-30-h200-s10 notes), generic -> these tiles, GAE / TD(lambda) / traces, us:
#   16 x 262144 241 -> 80 / 180 -> 75 / 95 -> 40; 8 x 262144 116 -> 42 / 86 -> 45 / 43 -> 22;
#   4 x 262144 40 -> 20 / 28 -> 19 / 18 -> 14; 16 x 131072 121 -> 45 / 88 -> 44 / 51 -> 31.
#   Rows that pad the tile lost (9 x 200000 GAE 101 -> 495, 12 x 262144 178 -> 578), as did
#   2 rows (2 x 524288 GAE 31 -> 33, TD(lambda) 21 -> 31). V-trace lost with every such
#   tile (305 -> 630 at best): ptxas spills its PHASE 2 (4.5 KB a thread at [16, 512] on 4
#   warps; Retrace 1 KB).
# * _TM_FEW_SHORT, 4x the chunks of a quarter the steps, pipelined (the same sweep with
#   shorter chunks among the candidates, then benchmarks/ab.py, 2026-11-30-h200-s12 notes),
#   previous tiles -> these, us: V-trace (generic) 16 x 262144 307 -> 80, 8 x 262144 143 ->
#   68, 4 x 262144 44 -> 30, 16 x 131072 151 -> 59; Retrace (generic) 350 -> 61, 166 -> 76,
#   47 -> 34, 173 -> 43; GAE (long) 16 x 262144 76 -> 49, 16 x 131072 44 -> 34 but 8 x
#   262144 41 -> 56, 4 x 262144 20 -> 30; TD(lambda) (long) 112 -> 66, 66 -> 48, 67 -> 54 but
#   4 x 262144 25 -> 29; traces (long) slower at every shape (39 -> 44, 22 -> 32, 14 -> 20).
#   Retrace's action form (session 13, benchmarks/device_run.sh tm-few-av), generic ->
#   these -> _TM_FEW_LONG: 16 x 262144 436 -> 172 -> 1786, 8 x 262144 218 -> 114 -> 601, 4 x
#   262144 88 -> 55 -> 85, 16 x 131072 223 -> 119 -> 1305.
_TM_FEW_LONG = (512, 4, 2, 1)  # (steps, warps, chunks a segment, stages)
_TM_FEW_SHORT = (128, 4, 8, 3)
_TM_FEW_TILES: dict[str, tuple[tuple[int, tuple[int, int, int, int]], ...]] = {
    "gae": ((16, _TM_FEW_SHORT), (4, _TM_FEW_LONG)),
    "td_lambda": ((8, _TM_FEW_SHORT), (4, _TM_FEW_LONG)),
    "vtrace": ((4, _TM_FEW_SHORT),),
    "retrace": ((4, _TM_FEW_SHORT),),
    "retrace_actions": ((4, _TM_FEW_SHORT),),
    "forward": ((4, _TM_FEW_LONG),),
}
_TM_FEW_MIN_ROWS = 4
_TM_FEW_MAX_ROWS = 16
_TM_FEW_MIN_SEGMENTS = 128


_triton_version = triton_version  # scan.triton_version: the kernels' axis orders follow it too


# Backward kernels on batch-major storage hold a chunk in scan order as groups of 4 steps
# (scan.chunk_times: forward scans, 12 shuffles per thread at [1, 512] on 4 warps) with
# Triton >= 3.7. Before 3.7 Triton lowers the reshape from groups to the scanned tile as a
# layout conversion through shared memory (4-8 KB a program): measured on an H200 with
# Triton 3.6, that was 1.4-6x slower than a tile in time order scanned with
# reverse=True (92 shuffles, no conversion), which those versions therefore get.
_GROUP_TILES = _triton_version() >= (3, 7)
# Backward kernels on batch-major storage with Triton < 3.7 instead keep the group form
# as it is loaded, [BN, BT/4, 4], and scan it in two levels (GROUP_TILES = 2,
# scan.group_scan): each thread composes its groups' maps in registers, a forward scan over
# the groups gives the state entering each group, and the group's 4 states follow in
# registers. No reshape, split or join (which Triton 3.6 lowers as layout conversions) and
# no reverse scan. Triton 3.6, shuffles per thread (benchmarks/ptx_counts.py): GAE on a
# [1, 512] tile on 4 warps 24 (time order: 92), V-trace 24 (184), Retrace's lagged action
# form 24 (184); [1, 2048] on 8 warps GAE 48 (172), V-trace 48 (344); the same registers
# within 5%. With Triton >= 3.7 the reshaped group form is leaner still (GAE 12).
# H200, Triton 3.6, device time (benchmarks/ab.py; 2026-11-30-h200-s8 notes), time order
# -> group scan, GAE / TD(lambda) / V-trace / Retrace's action form, in us:
#   4096 x 128     3.6 / 3.7 / 4.6 / 7.1       -> 2.8 / 2.9 / 3.3 / 6.4
#   16384 x 512    43.3 / 37.8 / 54.2 / 123.1  -> 36.0 / 27.1 / 42.8 / 117.5
#   4096 x 2048    47.3 / 45.8 / 65.0 / 125.6  -> 37.2 / 29.6 / 46.6 / 125.8
#   64 x 65536     50.8 / 44.6 / 81.6 / 134.5  -> 41.0 / 32.1 / 56.8 / 125.3
#   1 x 1048576    14.7 / 13.6 / 19.9 / 38.9   -> 10.5 / 10.5 / 16.9 / 38.4
# It loses on tiles of fewer than _GROUP_SCAN_MIN_T steps (several short rows a program:
# the groups' maps go to and from the layout Triton scans in through shared memory, which
# the time-order scan's shuffles do not; 32768 x 32 GAE 5.8 -> 7.2, V-trace 7.3 -> 8.7),
# where time order stays. On a row walked in chunks by one program it depends on the
# estimator; only the forms in _GROUP_SCAN_LOOP take it there. 512 x 4096 / 1024 x 4096 /
# 512 x 3000 / 256 x 8192, time order -> group scan: TD(lambda) 12.9 / 28.5 / 18.5 / 14.6
# -> 9.4 / 24.7 / 17.8 / 11.5; Retrace's action form 46.1 / 87.8 / 61.4 / 67.9 -> 40.7 /
# 77.2 / 35.8 / 68.2; but GAE 13.6 / 30.9 / 17.7 / 16.0 -> 15.1 / 35.8 / 18.0 / 14.4,
# V-trace 18.4 / 41.5 -> 26.2 / 49.8, Retrace 19.2 / 37.5 -> 28.1 / 45.4 (all uncapped);
# with the register caps of _LOOP_MAXNREG, GAE and V-trace gain there too (see below).
_GROUP_SCAN = True
_GROUP_SCAN_MIN_T = 64
# the kernel forms of the backward estimators (run_backward's ``kform``)
_FORMS = ("gae", "td_lambda", "vtrace", "retrace", "retrace_actions")
_GROUP_SCAN_LOOP = frozenset({"gae", "td_lambda", "vtrace", "retrace_actions"})
# Tiles of several rows, each row one chunk (short rows), can lay their rows one after
# another along the group axis (GROUP_TILES = 3, scan.chunk_tile): [1, BN * BT/4, 4]. With a
# single row of groups the groups' maps are already in the layout Triton scans in, so the
# two-level scan needs none of the layout conversions through shared memory that it takes
# on [BN > 1, ...] tiles with Triton 3.6 (the rows vary fastest across threads there, the
# groups in the scan's layout). PTX per thread (benchmarks/ptx_counts.py, Triton 3.6), GAE
# [4, 64] on 2 warps: barriers 5 -> 1 (the scan's own across the two warps), shuffles
# 16 -> 24, shared stores / loads 3 / 3 -> 4 / 2; [32, 8] likewise; time order: 0 barriers,
# 90 shuffles. H200, Triton 3.6, device us (benchmarks/ab.py, `device_run.sh flat`;
# 2026-11-30-h200-s9 notes), default -> flat, GAE / TD(lambda) / V-trace / Retrace /
# Retrace's action form:
#   32768 x 8      2.7 / 2.9 / 3.6 / 3.3 / 4.8       -> 3.8 / 3.8 / 5.0 / 5.2 / 6.1
#   32768 x 16     3.7 / 3.7 / 4.5 / 4.2 / 7.2       -> 3.3 / 3.0 / 3.6 / 3.9 / 6.8
#   32768 x 32     5.9 / 5.7 / 7.3 / 6.9 / 19.2      -> 4.6 / 4.2 / 5.3 / 5.5 / 19.7
#   32768 x 64     8.7 / 7.7 / 10.9 / 13.8 / 35.0    -> 7.6 / 7.0 / 11.2 / 14.2 / 36.6
#   16384 x 128    7.0 / 6.6 / 10.0 / 14.3 / 32.9    -> 7.3 / 6.7 / 11.2 / 14.5 / 33.7
# so it takes tiles of _GROUP_SCAN_FLAT_MIN_T steps up to a bound per form,
# _GROUP_SCAN_FLAT_MAX_T (8-step tiles keep time order's shuffles; from 128 steps, or from
# 64 for V-trace and Retrace, the [BN, ...] group scan stays).
_GROUP_SCAN_FLAT = True
_GROUP_SCAN_FLAT_MIN_T = 16
_GROUP_SCAN_FLAT_MAX_T = {"gae": 64, "td_lambda": 64, "vtrace": 32, "retrace": 32, "retrace_actions": 16}
# A chunk loop's programs stay resident together only as far as registers allow: at
# 512 x 4096 (512 programs, 132 SMs) 4 programs an SM run in one wave, 3 need two. TD(lambda)'s
# group-scan loop (63 registers on 8 warps) gained 27% there and GAE's (72: 3 programs an SM)
# lost 11%. A register cap per kernel form for chunk loops (Triton's ``maxnreg``; ptxas,
# Triton 3.6: GAE's group-scan loop at 64 spills 4 bytes, V-trace's on 4 warps at 128 none)
# lets GAE's and V-trace's loops take the group scan too. H200, Triton 3.6, device us
# (`device_run.sh loopreg`), default (time order, no cap) -> group scan with the caps:
# 512 x 4096 / 1024 x 4096 / 2048 x 4096 / 256 x 8192 / 512 x 3000: GAE 13.8 / 30.4 / 56.3
# / 16.6 / 17.6 -> 10.2 / 28.6 / 53.8 / 14.9 / 18.0, V-trace 18.3 / 41.1 / 78.0 / 23.9 /
# 30.8 -> 15.1 / 36.2 / 68.6 / 24.2 / 23.8. Retrace's loop lost with the group scan (512 x
# 3000: 20.2 -> 30.9) and keeps time order, capped at 64: 19.1 / 37.1 / 69.5 / 26.7 / 20.2 ->
# 18.9 / 36.6 / 68.8 / 27.2 / 18.2. TD(lambda) and the action form: no change either way.
_LOOP_MAXNREG: dict[str, int] = {"gae": 64, "vtrace": 128, "retrace": 64}
# PHASE 1 of a time split needs only each segment's composed map: on chunks in time order a
# forward scan of the composition taken the other way round gives it without reverse=True's
# flips (scan.chunk_map's FORWARD_TOTAL; 188 -> 28 shuffles per thread at [1, 2048] with
# Triton 3.6, same registers). With group tiles (Triton >= 3.7) the scan is forward anyway.
# H200, Triton 3.6 (benchmarks/ab.py, 2026-11-30-h200-s7 notes), reverse -> forward:
# 16 x 262144 GAE 55.0 -> 50.7 us, V-trace 84.2 -> 81.5, TD(lambda) 48.3 -> 44.9;
# 1 x 1048576 GAE 16.3 -> 14.9; 64 x 65536 GAE 55.0 -> 51.3.
_SEGMENT_MAP_FORWARD = True
# PHASE 2 of a time split composes the summaries of the segments before its own in scan
# order (scan.segment_carry_in): by default with a two-operand scan over them, in reverse on
# batch-major tiles (Triton's reverse scans cost ~7x the shuffles of forward ones, see
# backward.py); with _CARRY_PRODUCTS as a sum of products instead: one forward cumprod of
# one operand and two reductions. Statically (benchmarks/ptx_counts.py, Triton 3.6 and 3.8,
# sm_90) it takes the reverse scan out of every backward kernel's batch-major PHASE 2 and
# cuts the time-major one's shuffles by ~40% (see the 2026-11-30-h200-s10 notes). H200,
# Triton 3.6 (benchmarks/ab.py, 2026-11-30-h200-s11 notes), reverse scan -> products, us:
# 16 x 262144 GAE 41.1 -> 39.3, TD(lambda) 37.2 -> 35.0, V-trace 57.8 -> 55.9, GAE
# time-major 79.5 -> 76.3; 1 x 1048576 V-trace 16.9 -> 14.2; 64 x 65536 V-trace 57.7 -> 51.2;
# 512 x 4096 (no split) unchanged.
_CARRY_PRODUCTS = True
# (every kernel form _CARRY_FOLD_INIT can name: the split forms of run_backward and "forward"
# for the traces and prefix sums; the tests force it on all of them)
_CARRY_FOLD_FORMS = frozenset({"gae", "td_lambda", "discounted_returns", "vtrace", "retrace",
                               "retrace_actions", "forward"})
# ... with the carry entering the row's last segment (init) folded into the sum as one more
# column (scan.segment_carry_in's PROD = 2), for the kernel forms named here: the product of
# the b and its reduction go, a cross-warp reduction (two barriers) fewer on PHASE 2's path
# before its scan, which at one row of 2^20 steps is a wave of programs each as long as its
# chain of barriers. The carry-in cost 1-3 us there in session 25 (a diagnostic that skipped
# it: V-trace 13.8 -> 10.6, TD(lambda) 10.2 -> 8.7, GAE 9.3 -> 8.5). H200, Triton 3.6
# (device_run.sh s35-fold, 2026-12-03-h200-s35-notes), products -> folded, us: 1 x 1048576
# V-trace 12.5 -> 12.2, Retrace 13.0 -> 12.7, TD(lambda) 8.5 -> 8.3, traces 7.0 -> 6.8;
# 16 x 262144 Retrace 44.7 -> 43.2, TD(lambda) 23.3 -> 22.6; 64 x 65536 V-trace 41.6 -> 40.4,
# traces 17.0 -> 16.2; time-major TD(lambda) 512 x 4096 17.8 -> 17.1; GAE equal or faster
# (26.9 -> 26.9, 8.9 -> 8.8). Left out: discounted returns (16 x 262144 17.3 -> 20.1, again
# 17.6 -> 20.6 and 32 x 262144 33.8 -> 41.0 in s35-fold2) and Retrace's action form (s35-av:
# 16 x 262144 110.1 -> 115.2, 64 x 65536 111.4 -> 116.2; 4 x 524288 66.2 -> 64.6).
_CARRY_FOLD_INIT = frozenset({"gae", "td_lambda", "vtrace", "retrace", "forward"})


def _carry_prod(form: str) -> bool | int:
    """The ``CARRY_PROD`` of kernel form ``form`` (a name of ``_CARRY_FOLD_FORMS``):
    ``_CARRY_PRODUCTS``, or 2 for the products with the initial carry folded in (a form
    named in ``_CARRY_FOLD_INIT``)."""
    return 2 if _CARRY_PRODUCTS and form in _CARRY_FOLD_INIT else _CARRY_PRODUCTS


# TD(lambda)'s and discounted returns' scans cut where beta = 0 (scan.times: a select after
# every multiply of the scan, so a later episode's NaN or inf stays there). Since that cut
# (session 11) their kernels compile to ~36% more PTX (static, Triton 3.6: [4, 512]
# time-major PHASE 1 3058 -> 4164 lines, 46 -> 202 compares) and ran 8-29% slower (H200
# harness, session 9 -> 11: discounted returns 512 x 4096 8.4 -> 10.0 us, time-major
# 32768 x 64 5.9 -> 7.6). With _TD_LAZY_CUT each program scans without the cut and checks
# what it wrote, running its segment again with the cut only when something came out
# non-finite (backward.td_lambda_kernel's LAZY_CUT), which gives the cut's result exactly.
# H200, Triton 3.6 (bash benchmarks/device_run.sh lazycut, 2026-11-30-h200-s13-notes), cut in
# every scan -> lazily, us: time-major tiles gain (TD(lambda) 16 x 262144 61.8 -> 44.8,
# 16384 x 512 35.9 -> 32.6, 32768 x 64 8.9 -> 7.4; discounted returns 56.5 -> 40.2, 31.9 ->
# 27.7), batch-major ones lose (TD(lambda) 16384 x 512 27.2 -> 34.6, 16 x 262144 34.7 ->
# 48.4, 512 x 4096 10.9 -> 13.2), so it applies to time-major plans only.
_TD_LAZY_CUT = True
# ... and on batch-major single passes (one segment: a whole row, or a chunk loop; not rows
# across lanes) for the kernel forms named here ("td_lambda", "discounted_returns": its kernel
# without values). Session 13's batch-major loss was TD(lambda) at 72 registers, one 16-warp
# program an SM; discounted returns' whole 4096-step row with it is 64 registers, still two
# programs an SM as the cut's 53, and its uncut scan issues 472 SASS instructions a thread
# against 552 (benchmarks/sass_counts.py, Triton 3.6, 2026-12-03-h200-s36-notes.md), where
# Nsight Compute saw 0.73 warps issued a scheduler a cycle (2026-12-02-h200-s28-ncu-stalls.txt).
# Timed in session 37 (device_run.sh s37-lazybm, 2026-12-03-h200-s37-ab-lazy-batch.txt), us,
# cut -> lazily: discounted returns gained only at 512 rows of 2048-4096 steps (7.6 -> 6.9,
# 4.1 -> 3.8) and lost elsewhere (4096 x 2048 22.8 -> 23.5, 16384 x 512 21.0 -> 22.3, 512 x
# 12000 30.3 -> 43.4); TD(lambda) lost at every row (72 registers: 512 x 4096 8.0 -> 10.0).
# Off; the bootstrap term folded where T is a constant (backward._td_lambda_chunks) took
# discounted returns 512 x 4096 to 6.9 without a second path.
_TD_LAZY_CUT_BATCH: frozenset[str] = frozenset()
# Discounted returns (td_lambda_kernel without values) with a last_value or no bootstrap and
# no truncations, on whole rows (PHASE 0), may start their scan from a carry holding the
# window-edge value instead of reading it into step T - 1's nv: each step is then
# r + g carry, cut where terminated, with no per-step nv or t = T - 1 test
# (backward.td_lambda_kernel's EDGE_CARRY; a program whose last_value is non-finite takes
# the per-step form, so the kernel holds both). Static, Triton 3.6, sm_90, PTX instructions
# a thread on the path taken, per-step nv -> edge carry: [2, 128] on 2 warps 253 -> 206,
# [8, 64] lanes tile 383 -> 292, [1, 512] 281 -> 230, [1, 2048] 555 -> 464. H200, Triton 3.6
# (benchmarks/ab.py, 2026-12-02-h200-s27-ab-edge.txt), device us, per-step -> edge carry:
# time-major lanes tiles of 128 steps gained (16384 x 128 6.8 -> 6.0, then 6.6 -> 6.2 and
# 6.6 -> 6.0 in two repeats; 4096 x 128 3.3 -> 3.0, 3.2 -> 3.0, 3.2 -> 3.1; 8192 x 128 equal),
# and only they take it (_EDGE_CARRY_TM_LANES_MIN_T); at 64 steps they tied or lost
# (4096 x 64 2.3 -> 2.4, 2.1 -> 2.3, 2.2 -> 2.3; 32768 x 64 5.6 -> 5.4), at 8 they lost
# (32768 x 8 2.1 -> 2.3, 16384 x 8 1.8 -> 2.1), as did batch-major rows of 8-128 steps
# (0.1-0.2 us: 8192 x 128 4.1 -> 4.3, 32768 x 8 2.4 -> 2.6) and the time-major tiles' lazy
# cut (32768 x 128 12.1 -> 12.7); batch-major rows of 512-2048 steps were mixed (4096 x 512
# 5.8 -> 5.1 but 4096 x 2048 25.7 -> 26.2).
_EDGE_CARRY = True
_EDGE_CARRY_TM_LANES_MIN_T = 128
_EDGE_CARRY_ANY = False  # (tests: every tile of whole rows the kernel takes it on)


def _bootstrapped_at_the_edge(meta: dict) -> bool:
    """Whether a backward call with ``meta`` (``_common``'s) is bootstrapped at the window edge
    at most: a last_value or none, no truncations, no per-step lam (with no values, the calls
    ``_EDGE_CARRY`` and ``_DR_SHORT_TILES`` apply to; with or without, ``_TD_WIDE_LANES``)."""
    return not meta["HAS_TRUNC"] and not meta["L_TENSOR"] and meta["NV_MODE"] in (_NV_NONE, _NV_LAST)


def _returns_to_the_edge(meta: dict, has_values: bool) -> bool:
    """Whether a ``td_lambda_kernel`` call with ``meta`` is discounted returns (no values)
    bootstrapped at the window edge at most (:func:`_bootstrapped_at_the_edge`)."""
    return not has_values and _bootstrapped_at_the_edge(meta)


def _edge_carry(pl: Plan, meta: dict) -> bool:
    """Whether a ``td_lambda_kernel`` launch of ``pl`` with ``meta`` starts from the edge
    carry (``_EDGE_CARRY``): discounted returns (no values) with a last_value or no
    bootstrap, no truncations, on a time-major lanes tile of at least
    ``_EDGE_CARRY_TM_LANES_MIN_T`` steps (whole rows: one segment), or with
    ``_EDGE_CARRY_ANY`` on any tile of whole rows but rows laid end to end
    (``GROUP_TILES = 3``), as the kernel allows."""
    tile = (pl.tm_lanes and pl.block_t >= _EDGE_CARRY_TM_LANES_MIN_T) or (_EDGE_CARRY_ANY and meta["GROUP_TILES"] != 3)
    return _EDGE_CARRY and tile and pl.segments == 1 and _returns_to_the_edge(meta, meta["HAS_VALUES"])


# PHASE 2 of a time split walks the segments in the opposite order to PHASE 1
# (scan.program_tile's SEG_FLIP), so it starts on the inputs PHASE 1 read last, which may
# still sit in L2 (16 x 262144 GAE reads 38 MB a pass; the H200's L2 holds 50 MB), for calls
# of at least _SEG_FLIP_MIN_ELEMS elements on batch-major tiles. H200, Triton 3.6
# (benchmarks/ab.py, 2026-11-30-h200-s12 notes), in order -> flipped, us: 16 x 262144 GAE
# 38.8 -> 34.8, V-trace 55.2 -> 50.0, Retrace 55.7 -> 49.8; 64 x 65536 V-trace 50.7 -> 43.9;
# 1 x 4194304 GAE 58.2 -> 53.3, V-trace 80.1 -> 69.1; TD(lambda) and traces within 2%.
# Smaller calls, whose inputs fit in L2 in any order, gained nothing or lost a little
# (16 x 131072 GAE 16.8 -> 17.3, TD(lambda) 17.7 -> 18.1), and time-major tiles were mixed
# (64 x 65536 Retrace 154 -> 151 but TD(lambda) 159 -> 165; 16 x 262144 traces 40 -> 42), so
# those keep the launch order.
_SEG_FLIP = True
_SEG_FLIP_MIN_ELEMS = 1 << 22
# Rows laid end to end (_GROUP_SCAN_FLAT, GROUP_TILES = 3) end each row with a 0 coefficient,
# and 0 * NaN = NaN would carry a NaN or inf of one row into the next for GAE, V-trace and
# Retrace (whose episode ends multiply, as SPEC's formulas do). With _FLAT_SEGMENTED the scan
# over the groups is segmented at every row's first group instead
# (scan.affine_combine_lagged_seg: a flag operand and selects), so no value crosses a row's
# start. H200, Triton 3.6 (benchmarks/ab.py, 2026-11-30-h200-s12 notes), plain -> segmented,
# us: 32768 x 16 GAE 3.1 -> 3.1, V-trace 3.6 -> 3.6, Retrace 3.9 -> 4.1; 32768 x 64 GAE 7.8
# -> 8.1, V-trace and Retrace equal; 4096 x 16 Retrace 2.2 -> 2.4: at most 0.3 us, kept for
# rows that never mix.
_FLAT_SEGMENTED = True

# Short rows on batch-major storage, many of them, take tiles whose rows each span a few
# lanes (Plan.lanes, GROUP_TILES = 4, scan.lane_scan): [L, BN, NC, 4] with row n's group
# L c + l at [l, n, c], L = 8 lanes a row (scan.lanes_per_row; 4 for 16-step rows; 1 for
# 8-step rows, _ROW_LANES_TINY below). Triton
# lays the accesses out with the lanes along l, then along the rows, so each load of a warp
# reads whole 128-byte lines, and each thread holds NC groups L apart; the scan is log2(L)
# shuffle rounds across a row's lanes and the columns in registers, with no barrier or
# shared memory, where the flat rows' two-level scan (GROUP_TILES = 3) takes a round per
# doubling of the program's groups and a pass across warps. SASS per element (Triton 3.6,
# sm_90, ptxas; flat -> lanes): discounted returns [4, 64] on 2 warps 52 -> [8, 64] 34,
# TD(lambda) 68 -> 49, GAE 72 -> 43; V-trace [4, 32] on 1 warp 86 -> [8, 32] on 2 warps 76.
# A row a thread instead ([BN, BT/4, 4] with BN a multiple of the threads, a serial scan in
# registers: 16-25 instructions an element) read 16 bytes a lane from a different row per
# lane, and lost 1.2-4x (discounted returns 32768 x 64 6.5 -> 11.4 us, GAE 7.5 -> 24.5).
# H200, Triton 3.6, device us (SWEEP_LANES=1 benchmarks/sweep.py, 2026-12-01-h200-s18
# notes), default -> lanes on 4 warps (2 at 64 steps):
#   discounted returns 32768 x 16 / 32 / 64   2.8 / 4.1 / 6.6  -> 2.4 / 3.2 / 4.9
#   TD(lambda)         32768 x 16 / 32 / 64   2.9 / 4.2 / 6.8  -> 2.5 / 3.4 / 5.4
#   GAE                32768 x 16 / 32        2.9 / 4.2        -> 2.8 / 3.9
#   V-trace            32768 x 16 / 32        3.7 / 5.7        -> 3.0 / 4.6
# 8-step rows (two lanes a row) lost (discounted returns 32768 x 8 2.5 -> 2.7), as did GAE at
# 64 steps (16384 x 64 4.3 -> 4.4) and V-trace at 64 (5.8 -> 6.1), 128-step rows (TD(lambda)
# 16384 x 128 6.7 -> 7.8). Rows of _ROW_LANES_MIN_T to the form's _ROW_LANES_MAX_T steps
# (next power of two) with at least _ROW_LANES_MIN_PROGRAMS programs an SM; float32 and
# narrower arithmetic (float64 was not timed). By default on Triton < 3.7 only: Triton 3.8
# gives an access's lanes to the highest of the axes it ties on, not the lowest, so there the
# tile takes the other axis order (scan.LANES_LAST; in 3.6's order 3.8 converted through
# shared memory 3 times a tile). ptxas (3.8, sm_90a) builds that order with no shared memory,
# SASS per element against 3.8's own reshaped group form: discounted returns [8, 64] 34 against
# [4, 64] 42, GAE [16, 32] 54 against [8, 32] 54, V-trace 76 against 84. It is not timed (the
# H200 image has Triton 3.6), so 3.8 keeps the group form (launch._GROUP_TILES), which session
# 7 timed within 1.25x of the floor for GAE and V-trace at most shapes.
_ROW_LANES = _triton_version() < (3, 7)
_ROW_LANES_MIN_T = 16
_ROW_LANES_MAX_T = {"gae": 32, "td_lambda": 64, "vtrace": 64, "retrace": 64}
_ROW_LANES_WARPS = {16: 4, 32: 4, 64: 2}  # by the tile's steps; 4 otherwise
# A form's own (warps, rows a lane holds of each of its rows' lanes) by the tile's steps, in
# place of _ROW_LANES_WARPS's warps and one row. Retrace's sampled form (SWEEP_LANES=1
# benchmarks/sweep.py, 2026-12-02-h200-s23 notes), device us, default -> lanes tiles of one
# warp: 16384 x 64 6.2 -> 4.5 ([4, 64]; 5.2 on 2 warps), 8192 x 64 3.9 -> 3.4, 32768 x 32
# 5.4 -> 4.7 ([8, 32], two rows a lane; 5.1 on 2 warps), 16384 x 32 3.9 -> 3.3.
_ROW_LANES_SHAPES: dict[str, dict[int, tuple[int, int]]] = {"retrace": {16: (1, 2), 32: (1, 2), 64: (1, 1)}}
# A form's tiles of this many steps (_ROW_LANES_WHOLE[form] = (steps, most programs an SM))
# for rows of exactly that many steps only, on at most that many programs an SM. V-trace's
# 64-step rows on [8, 64] on 2 warps (SASS a thread, Triton 3.6: 424 for 16 elements, no
# barrier, against the flat [4, 64] on 2 warps' 272 for 4): H200, Triton 3.6 (benchmarks/ab.py,
# 2026-12-04-h200-s43-ab-vtrace-lanes64.txt; two runs of [4, 64] on one warp, one of [8, 64]
# on 2, alike), device us: 8192 x 64 3.7 -> 3.3, 16384 x 64 5.7 -> 5.0 and 5.6 -> 5.0, 4096 x
# 64 2.5 -> 2.5; but 32768 x 64 (32 programs an SM) 10.1 -> 10.8 and 10.2 -> 10.8, and rows of
# 48 steps in the 64-step tile 4.5 -> 5.7 (16384 x 48), as session 18 had found at 64 steps.
# As shipped (-s43-ab-vtrace-lanes64-check.txt): 8192 x 64 3.7 -> 3.3, 16384 x 64 5.6 -> 5.0;
# 4096 x 64, 32768 x 64, 16384 x 48 and 8192 x 128 within 0.1.
_ROW_LANES_WHOLE: dict[str, tuple[int, float]] = {"vtrace": (64, 16.0)}
_ROW_LANES_MIN_PROGRAMS = 1.0
# Rows of exactly _ROW_LANES_TINY_T (8) steps take lanes tiles of one lane a row (a row a
# thread, scan.lanes_per_row): each thread reads its row's two groups as two 16-byte accesses
# and scans them in registers, and a warp's lanes read 32 rows side by side, where the tiny
# tiles (_TINY_WARP_ELEMS) spread a row over 4 lanes and Triton 3.6 flips and shuffles them
# (discounted returns: 176 SASS a thread for 2 steps, 136 here for 8). [32, 8] on
# _ROW_LANES_TINY_WARPS (1) warp, on _ROW_LANES_MIN_PROGRAMS programs an SM or more. H200,
# Triton 3.6 (benchmarks/ab.py, 2026-12-04-h200-s40-ab-lanes8-warps.txt), us, tiny tiles -> these:
# GAE 32768 x 8 2.7 -> 1.9, 16384 x 8 2.1 -> 1.7, 8192 x 8 1.8 -> 1.5; TD(lambda) 2.6 -> 1.9,
# 2.0 -> 1.6, 1.7 -> 1.4; discounted returns 2.3 -> 1.9, 1.9 -> 1.6, 1.7 -> 1.4; V-trace
# 3.4 -> 2.4, 2.4 -> 1.9, 2.1 -> 1.7; Retrace 3.1 -> 2.5, 2.3 -> 2.2, 2.0 -> 1.7 ([128, 8] on 4
# warps: discounted returns 32768 x 8 1.7, the rest equal or slower). Rows of 5-7 steps lost
# (32768 x 6: GAE 2.4 -> 3.0, V-trace 2.9 -> 3.8): a row stride of 6 allows no 16-byte access.
_ROW_LANES_TINY = True
_ROW_LANES_TINY_T = 8
_ROW_LANES_TINY_WARPS = 1
# TD(lambda)'s kernel's lanes tiles of 128 steps (session 29): [8, 128] on 2 warps, for calls
# that _td_wide_lanes admits. Session 18 timed them slower (TD(lambda) 16384 x 128 6.7 -> 7.8,
# above); since session 28 a row of exactly 128 steps takes T as a constant (_EXACT_T), and
# they gain. H200, Triton 3.6, device us (benchmarks/ab.py, two runs alike,
# 2026-12-02-h200-s29-ab-lanes-128.txt; SWEEP_LANES=1 benchmarks/sweep.py, -s29-sweep-lanes.txt),
# default -> [8, 128] on 2 warps: TD(lambda) with a last_value 8192 x 128 4.1 -> 3.9, 12288 x 128
# 5.4 -> 4.6, 16384 x 128 6.9 -> 5.6 (6.7 -> 5.5), 24576 x 128 9.8 -> 9.6, 32768 x 128 14.0 ->
# 15.5; discounted returns (from their [4, 128] tiles) 8192 x 128 3.6 -> 3.7, 12288 x 128 4.6 ->
# 4.5, 16384 x 128 5.6 -> 5.2, 24576 x 128 7.9 -> 6.6, 32768 x 128 9.9 -> 8.7; 4096 x 128 2.7 ->
# 3.0 and 3.2. They lost on rows of 100 steps (no constant T: TD(lambda) 16384 x 100 6.6 -> 7.1,
# discounted returns 8192 x 100 3.5 -> 4.0) and with per-step bootstrap values (TD(lambda)
# 16384 x 128 6.9 -> 7.3, 32768 x 128 14.9 -> 18.7). [32, 128] on 8 warps ran about as fast
# (TD(lambda) 16384 x 128 5.4, discounted returns 32768 x 128 8.9). The calls that lost at 24576
# and 32768 rows are the ones whose bytes (54 MB for TD(lambda) 32768 x 128) no longer stay in
# the H200's 50 MB L2 between the benchmark's replays, where the default already runs at the
# floor kernel's time; hence the bound on a call's bytes, _TD_WIDE_LANES_MAX_BYTES.
_TD_WIDE_LANES = True
_TD_WIDE_LANES_T = 128
_TD_WIDE_LANES_WARPS = 2
# TD(lambda) from 7 programs an SM since session 45 (7392 rows on 132 SMs; 10 before, from
# session 29): H200, Triton 3.6, device us, 10 -> 7, two runs (benchmarks/ab.py,
# 2026-12-04-h200-s45-ab-td128.txt): TD(lambda) 8192 x 128 4.2 -> 3.7 and 4.1 -> 3.8 (the
# massive grid's 1.40x of the floor kernel); 4096 x 128 (3.9 an SM) stays off, as from 3 an SM
# it lost (2.6 -> 2.9); 12288 and 16384 x 128, and rows of 100 steps, unchanged.
_TD_WIDE_LANES_MIN_PROGRAMS = 7.0  # programs an SM ([8, 128] tiles)
_TD_WIDE_LANES_MAX_BYTES = 40_000_000  # bytes of per-step data a call reads and writes
# Discounted returns take the same tiles from _DR_WIDE_LANES_MIN_PROGRAMS programs an SM, and
# scan them without the cut (the forms of _TD_LAZY_CUT_WIDE: LAZY_CUT, a second pass with the
# cut only for a program whose output came out non-finite). The cut is a compare and a select
# after each FMA of the scan: [8, 128] on 2 warps takes 432 SASS instructions a thread with it,
# about 30% of them the cut's (scan.madd; Triton 3.6, benchmarks/sass_counts.py). H200, Triton
# 3.6 (benchmarks/ab.py, 2026-12-04-h200-s41-ab-lazy-lanes.txt), device us, before -> lazy ->
# lazy from 3 programs an SM: discounted returns 4096 x 128 2.6 -> 2.7 -> 2.5, 8192 x 128 3.6
# -> 3.6 -> 3.0, 16384 x 128 5.0 -> 4.5 -> 4.4, 32768 x 128 8.5 -> 7.6 -> 7.6. TD(lambda) lost
# with it (16384 x 128 5.7 -> 6.8; its values make the uncut pass longer) and so did the
# shorter lanes tiles of both (16-64 steps: discounted returns 32768 x 64 4.3 -> 4.6, 32768 x
# 16 2.2 -> 2.4), which keep the cut; TD(lambda) from 3 programs an SM lost at 4096 x 128
# (2.7 -> 3.1).
_DR_WIDE_LANES_MIN_PROGRAMS = 3.0
_TD_LAZY_CUT_WIDE: frozenset[str] = frozenset({"discounted_returns"})


def _row_lanes_plan(R: int, T: int, sms: int, form: str | None, wide_lanes: float | None = None) -> Plan | None:
    """The lanes plan (``_ROW_LANES``) for R batch-major rows of T steps of the kernel form
    ``form`` (None: never), or None where it does not apply; rows of exactly
    ``_ROW_LANES_TINY_T`` steps a row a thread (``_ROW_LANES_TINY``). ``wide_lanes``: the fewest
    programs an SM from which the call takes TD(lambda)'s kernel's 128-step lanes tiles
    (:func:`_td_wide_lanes`: rows of exactly ``_TD_WIDE_LANES_T`` steps; None: it does not)."""
    if not _ROW_LANES or form is None or form not in _ROW_LANES_MAX_T:
        return None
    p2 = _next_pow2(max(T, 1))
    if wide_lanes is not None:
        warps, per_lane, min_programs = _TD_WIDE_LANES_WARPS, 1, wide_lanes
    elif _ROW_LANES_TINY and T == _ROW_LANES_TINY_T:
        warps, per_lane, min_programs = _ROW_LANES_TINY_WARPS, 1, _ROW_LANES_MIN_PROGRAMS
    elif max(4, _ROW_LANES_MIN_T) <= p2 <= _ROW_LANES_MAX_T[form]:
        warps, per_lane = _ROW_LANES_SHAPES.get(form, {}).get(p2, (_ROW_LANES_WARPS.get(p2, 4), 1))
        min_programs = _ROW_LANES_MIN_PROGRAMS
    else:
        return None
    block_n = 32 * warps * per_lane // lanes_per_row(p2)
    if _cdiv(R, block_n) < min_programs * sms:
        return None
    whole = _ROW_LANES_WHOLE.get(form)
    if whole is not None and wide_lanes is None and p2 >= whole[0] \
            and (T != whole[0] or _cdiv(R, block_n) > whole[1] * sms):
        return None
    return Plan(block_n, p2, warps, 1, p2, lanes=True)


_TM_LANES = True
_TM_LANES_ROWS = 64  # rows a program (two a thread); _TM_LANES_NARROW_ROWS where a tile's narrow bound says
_TM_LANES_NARROW_ROWS = 32
# Narrow tiles (32 rows a program, one a thread, a 4-byte access along all 32 lanes) where the
# 64-row programs are too few for the SMs. Triton 3.6 lays a [32, BT] tile out with the lanes
# along rows as wanted; 3.8 gives them to the time axis (the tie between two axes of contiguity
# 1 goes to the last), 128 shuffles a thread against 16 for GAE [32, 128] on 16 warps, so the
# narrow tiles are for Triton < 3.7 only. H200, Triton 3.6 (benchmarks/ab.py,
# 2026-12-02-h200-s25-ab.txt), time-major, 64 -> 32 rows, us: GAE 4096 x 128 4.6 -> 4.0,
# TD(lambda) 4.2 -> 3.5, discounted returns 3.5 -> 3.2; TD(lambda) 4096 x 64 2.8 -> 2.4,
# discounted returns 2.5 -> 2.3, Retrace 3.6 -> 3.3; GAE 8192 x 64 3.6 -> 3.4, V-trace 4.5 ->
# 3.9, Retrace 4.4 -> 4.2; V-trace 16384 x 64 7.4 -> 6.4. But 32-row programs beyond about a
# wave lost (8192 x 128: GAE 5.5 -> 5.8, traces 4.0 -> 4.5; 16384 x 64: TD(lambda) 4.3 -> 4.7,
# Retrace 5.7 -> 6.4; 32768 x 32 every form, GAE 4.4 -> 4.8), and 4096 x 32 moved by at most 0.1.
_TM_LANES_NARROW = _triton_version() < (3, 7)
_TM_LANES_MIN_PROGRAMS = 0.25  # programs an SM: a tile's fewest unless it says otherwise


class TmLanesTile(NamedTuple):
    """A form's time-major lanes tile of a number of steps (``_TM_LANES_TILES``): taken on
    ``min_programs`` to ``max_programs`` programs of ``_TM_LANES_ROWS`` rows an SM, with
    ``steps`` consecutive steps a thread (at most the tile's), or ``few[1]`` on at most
    ``few[0]`` programs an SM; narrow (``_TM_LANES_NARROW_ROWS`` rows a program) while those
    programs are at most ``narrow`` an SM. ``edge``: the bounds (programs an SM, as
    ``min_programs`` and ``max_programs``) for discounted returns to the window edge
    (``_DR_TM_LANES_ANY``); None: ``min_programs`` and no upper bound. ``narrow_only``: taken
    as the narrow tiles only (``_TM_LANES_NARROW``, Triton < 3.7), never on 64-row programs.
    ``exact``: taken only by rows of exactly the tile's length, whose kernel then takes T as a
    constant (EXACT_T, whether or not the form is in ``_EXACT_T_TM_LANES``); a padded row keeps
    the tiles before."""

    min_programs: float
    max_programs: float
    steps: int
    few: tuple[float, int] | None = None
    narrow: float = 0.0
    edge: tuple[float, float] | None = None
    narrow_only: bool = False
    exact: bool = False


def _tm_tiles(steps: dict[int, int], own: dict[int, dict] | None = None,
              min_programs: float = _TM_LANES_MIN_PROGRAMS) -> dict[int, TmLanesTile]:
    """A form's entry of ``_TM_LANES_TILES``: for each tile length, its steps a thread, from
    ``min_programs`` programs an SM with no upper bound, then the fields ``own`` gives that
    length."""
    own = own or {}
    return {bt: TmLanesTile(min_programs, float("inf"), k)._replace(**own.get(bt, {})) for bt, k in steps.items()}


# Time-major lanes tiles (scan.tm_lanes_scan, GROUP_TILES = 5) for many short time-major
# rows: 64 rows a program, two a thread (one 8-byte access; every lane along rows), the warps
# along time, each thread K consecutive steps scanned in registers, then across the warps
# through shared memory; one chunk a row. The time-major tiles (plan_time_major) hold 4 rows
# by 4 steps a thread with lanes along time too: at 142 registers and one warp a program they
# ran ~4 warps an SM at 16384 x 64 (Nsight Compute, 2026-12-01-h200-s19-ncu.txt). On for every
# Triton version: the rows' contiguity, not a tie between axes, decides the layout of the
# 64-row tiles, and Triton 3.8 builds the same one (tests/test_kernels_static.py::
# test_tm_lanes_tiles; GAE [64, 64] on 8 warps: 80 registers and 52 SASS instructions an
# element with 3.6 and 3.8), though only 3.6 was timed.
#
# _TM_LANES_TILES[form][tile steps] (a power of two; rows of up to that many steps, as one
# chunk) is the TmLanesTile a form takes, from these A/Bs (H200, Triton 3.6, benchmarks/ab.py,
# time-major tiles -> these, device us):
# - Defaults (2026-12-01-h200-s19-ab-tm-lanes*.txt): tiles of 8 to 128 steps from a quarter of
#   the SMs' worth of programs, K = 4 up to 32-step tiles and 8 beyond: discounted returns
#   16384 x 64 5.8 -> 3.7, TD(lambda) 8192 x 128 7.9 -> 4.8, GAE 32768 x 32 5.5 -> 4.5, traces
#   8192 x 128 5.9 -> 4.0; at 128 steps at most two programs an SM: GAE lost with 512 (32768 x
#   128 21.4 -> 25.2 as one chunk in a prototype, 2026-12-01-h200-s19-proto-tm-lanes.txt; 21 ->
#   46 in chunks of 64).
# - GAE's and TD(lambda)'s 64-step tiles take K = 4 on at most one program an SM (``few``;
#   2026-12-02-h200-s23-ab-tm-few.txt), 8 -> 4: TD(lambda) 4096 x 64 3.1 -> 2.8, 4096 x 48 2.9
#   -> 2.6, 8192 x 40 3.2 -> 2.9, 8192 x 64 3.4 -> 3.3; GAE 4096 x 64 2.9 -> 2.8, 8192 x 64 3.7
#   -> 3.6. Up to two programs an SM lost at 16384 x 64 (GAE 4.8 -> 5.0, discounted returns 3.7
#   -> 3.9); the forward scans did not gain (traces 8192 x 64 2.8 -> 2.9). K = 4 on every
#   64-step tile lost up to 0.3 at 32768 rows, and on 128-step tiles (32 warps) everywhere
#   (discounted returns 16384 x 128 6.6 -> 7.4); 16 lost everywhere (GAE 32768 x 64 8.3 -> 10.5).
# - V-trace and Retrace (the lagged scan, a 4-tuple in registers) gain up to 32 steps
#   (V-trace 32768 x 8 3.5 -> 2.9, Retrace 32768 x 32 7.1 -> 5.0) and lose from 64 with K = 8
#   (V-trace 32768 x 64 13.2 -> 26.5: 207 registers); with K = 4 at 64
#   (2026-12-02-h200-s23-ab-tm-lanes-lagged.txt): Retrace 16384 x 64 7.9 -> 5.6, 32768 x 64 15.4
#   -> 14.8, 8192 x 64 4.6 -> 4.4, 4096 x 64 3.4 -> 3.3; V-trace 16384 x 64 10.3 -> 7.2, 8192 x
#   64 4.4 -> 4.4, but 32768 x 64 13.3 -> 18.2 and 4096 x 64 3.5 -> 3.8, hence its 0.75 to 2
#   programs an SM there. No 64-row 128-step tiles: with K = 4 (32 warps) or 8 they lost at most
#   shapes (Retrace 16384 x 128 14.7 -> 17.6 and 18.8; V-trace 16384 x 128 18.4 -> 27.8); the
#   narrow ones came in session 45 (below). V-trace's
#   shorter tiles take K = 2, twice the warps (same file), 4 -> 2: 4096 x 8 1.8 -> 1.5, 32768 x 8
#   2.8 -> 2.5, 16384 x 16 2.9 -> 2.7, 8192 x 32 3.2 -> 2.9, 32768 x 32 6.4 -> 6.1, none slower;
#   Retrace's were mixed with 2 (32768 x 32 4.9 -> 6.0).
# - Retrace's action form takes 32- and 64-step tiles only, from 0.75 programs an SM, K = 4
#   (2026-12-02-h200-s22-ab-av.txt): 8192 x 32 5.1 -> 4.6, 16384 x 32 14.7 -> 6.6, 32768 x 32
#   27.0 -> 18.7; but 4096 x 32 3.5 -> 3.8, 8192 x 8 2.7 -> 3.3, 4096 x 8 2.2 -> 3.0; at 64 steps
#   (-s23-ab-tm-few.txt) 16384 x 64 27.6 -> 20.4, 32768 x 64 39.8 -> 39.3, 8192 x 64 equal; at
#   128, K = 8, 4096 x 128 8.0 -> 11.2.
# - ``narrow`` (_TM_LANES_NARROW, above): 64- and 128-step tiles whose 32-row programs are about
#   a wave (two an SM at 64 steps, one at 128, for 16 warps of 61-96 registers), V-trace's
#   64-step tiles always (within their bounds); not the action form's (not timed). TD(lambda)'s
#   kernel's 128-step tiles up to two an SM since session 41 (benchmarks/ab.py,
#   2026-12-04-h200-s41-ab-tm-dr128.txt), time-major 8192 x 128, 64 -> 32 rows: discounted
#   returns 4.1 -> 3.8 us (batch-major 3.1), TD(lambda) 4.6 -> 4.5; 4096 x 128 (32 rows before)
#   and 16384 x 128 (past the bound) within 0.1. K = 4 there lost (16384 x 128 5.2 -> 7.0).
# - V-trace's and Retrace's (sampled) 128-step tiles since session 45: narrow only
#   (``narrow_only``; the 64-row ones of session 23 above, 207 registers, lost), K = 8 on 16
#   warps, 121 registers and 776 SASS instructions a thread for V-trace against the time-major
#   one-chunk tiles' 1128, 120 of them shared-memory loads of layout conversions (Triton 3.6,
#   benchmarks/sass_counts.py). Time-major, device us, one-chunk tiles -> these (benchmarks/ab.py,
#   2026-12-04-h200-s45-ab-tm128-lagged.txt; the base twice, alike): V-trace 4096 x 128 5.3 ->
#   4.7, 8192 x 128 9.0 -> 7.5, 8192 x 100 8.3 -> 7.1; Retrace 4.5 from 5.2, 7.2 from 8.2, 6.8
#   from 7.5; at 16384 x 128 (1.9 programs of 64 rows an SM) they lost (V-trace 18.4 -> 19.2,
#   Retrace 14.5 -> 21.1) and at 32768 x 128 (26.8 -> 44.0), hence at most one an SM; 2048 x
#   128 (0.24) was not taken, so from the fewest timed (0.48, 4096 rows) less a margin. K = 4
#   on 32 warps (64 registers, 440 instructions) gained less (V-trace 8192 x 128 7.8).
# - Whole 256- and 512-step rows (session 31; their own table, _TM_LONG_TILES, until session
#   46): 32 rows a program (narrow), 32 warps, K = 8 or 16 consecutive steps a thread, for
#   Triton < 3.7 only (``narrow_only``, _TM_LANES_NARROW: Triton 3.8 lays [32, BT] tiles out
#   with the lanes along time, and its [64, 512] tiles spill 700-1500 bytes a thread; ptxas,
#   Triton 3.6: TD(lambda) [32, 512] 64 registers and 92 bytes of spills, GAE 200). Rows of 129
#   to 512 steps otherwise take the time-major tiles' two passes (4096 x 512 TD(lambda) 15.8 us
#   against 5.5 batch-major). H200, Triton 3.6, time-major, device us, the time-major tiles ->
#   these (benchmarks/ab.py, 2026-12-02-h200-s31-ab-tm512.txt, two runs, and
#   -s31-ab-tm-bounds.txt):
#   - 256 steps: TD(lambda) 4096 x 256 9.8 -> 4.8, 1024 x 256 5.9 -> 4.0, 8192 x 160 12.2 ->
#     8.0, 12288 x 256 13.6 -> 12.8, but 16384 x 256 17.2 -> 22.4 (hence 1.5 programs of 64 rows
#     an SM at most); GAE 4096 x 256 12.0 -> 6.2, 8192 x 256 11.9 -> 11.3, 12288 x 256 17.9 ->
#     20.9 (1 an SM); traces 4096 x 256 8.0 -> 4.8, 1024 x 256 4.6 -> 4.1, but 6144 x 256 6.4 ->
#     7.6 and 256 x 256 3.8 -> 4.0 (0.1 to 0.5 an SM); discounted returns 4096 x 256 9.8 -> 4.1,
#     12288 x 256 11.6 -> 9.6, 16384 x 256 12.8 -> 13.8.
#   - 512 steps (K = 16): TD(lambda) 4096 x 512 15.8 -> 8.0, 2048 x 512 10.2 -> 7.0, 6144 x 512
#     19.1 -> 17.7, 4096 x 257 11.9 -> 8.6, 1024 x 512 7.2 -> 6.9, but 8192 x 512 23.4 -> 23.3,
#     16384 x 512 32.6 -> 45.2 and 256 x 512 6.2 -> 6.8 (0.1 to 0.75 an SM); discounted returns
#     to the edge 4096 x 512 14.8 -> 6.3, 8192 x 512 17.2 -> 12.2, 256 x 512 5.5 -> 5.2, 12288 x
#     512 25.0 -> 24.6, 16384 x 512 27.6 -> 32.3 (``edge``: up to 1.5 an SM), but 64 x 512 3.2 ->
#     5.2 (-s31-ab-shipped.txt; hence from _TM_LONG_MIN_PROGRAMS, 256 rows the fewest that
#     gained, 256 x 256 too: TD(lambda) 4.0 -> 3.7, GAE 5.1 -> 5.0); with per-step
#     bootstrap values they gained like them (8192 x 512 18.1 -> 12.6) but keep TD(lambda)'s
#     bounds, as the call's plan does not tell them apart. GAE lost at most shapes (4096 x 512
#     16.4 -> 23.3, 512 x 512 5.6 -> 11.1) and traces everywhere (4096 x 512 10.7 -> 15.0): none.
#   V-trace and Retrace (the lagged scan) were not timed on them (Retrace's 256-step tile:
#   session 57, below). The forward kernel's tile
#   serves the episodic prefix sums too, timed on traces only.
# - The forward kernel's whole 512-step rows (session 55): with T the constant 512
#   (_EXACT_T_TM_LANES) its [32, 512] tile on 32 warps holds 64 registers and no spills (936 ->
#   568 SASS a thread and 184 -> 0 bytes of stack, Triton 3.6), where a padded row spills as
#   before, so rows of exactly 512 steps only (``exact``). H100, Triton 3.6, time-major, device
#   us (benchmarks/ab.py, 2026-12-07-h100-s55-fwd512.txt), the time-major tiles -> this tile,
#   traces / prefix sums: 2048 x 512 7.9 -> 5.2 / 7.6 -> 6.0, 4096 x 512 10.2 -> 6.2 / 10.3 ->
#   7.2, 6144 x 512 11.4 -> 10.1 / 12.0 -> 11.8; 1024 x 512 5.7 -> 5.1 / 5.5 -> 5.7, 256 x 512
#   3.5 -> 4.7, 8192 x 512 13.8 -> 14.8 / 14.3 -> 17.8, 4096 x 300 and x 400 (padded) 9.4 -> 13.1
#   and 15.1: hence 0.2 to 0.75 programs of 64 rows an SM (1665-6336 rows on 132 SMs).
# - GAE's whole 512-step rows (session 57): on a [32, 512] tile with T the constant 512, 32 steps
#   a thread on 16 warps (128 registers and 96 bytes of stack, Triton 3.6; 16 steps on 32 warps
#   held 64 registers and 184 bytes and lost: 4096 x 512 18.0 -> 26.6, 6144 x 512 27.4 -> 42.1).
#   At 128 registers a program fills an SM's register file: one program an SM, so the tile wins
#   while its programs of 32 rows are one wave. H100, Triton 3.6, time-major, device us
#   (benchmarks/ab.py, `device_run.sh s56-gae512`, `s57-gae512`, 2026-12-07-h100-s57-gae512.txt),
#   the time-major tiles -> this tile, last value / per-step bootstrap values: 1536 x 512 10.7
#   -> 9.8 / 10.3 -> 9.7, 2048 x 512 13.3 -> 9.9 / 11.5 -> 9.8, 2560 x 512 14.8 -> 11.2 / 16.3 ->
#   11.1, 3072 x 512 15.2 -> 12.0, 3584 x 512 17.8 -> 14.2, 4096 x 512 17.8 -> 17.3 / 18.2 ->
#   16.4; but 1024 x 512 6.4 -> 9.6, 256 x 512 5.0 -> 9.1 (one program's 512 steps take ~9 us),
#   4608 x 512 21.7 -> 29.3, 6144 x 512 27.3 -> 33.8 (a second wave): hence 0.15 to 0.5 programs
#   of 64 rows an SM (1217-4224 rows on 132 SMs).
# - Retrace's (sampled) whole 129- to 256-step rows (session 57): [32, 256] on 32 warps, 8 steps
#   a thread, 64 registers and no spills (736 SASS a thread at 4096 x 256, Triton 3.6), against
#   the time-major tiles' [32, 64] chunks walked on 8 warps. H100, Triton 3.6, time-major, device
#   us (benchmarks/ab.py, `device_run.sh s57-retrace`, `s57-retrace256`,
#   2026-12-07-h100-s57-retrace.txt, -retrace256.txt), those -> this tile: 2560 x 256 14.7 ->
#   7.9, 3072 x 256 14.9 -> 8.3, 3584 x 256 15.7 -> 8.6, 4096 x 256 11.4 -> 8.8, 4224 x 256 14.6
#   -> 8.8, 4096 x 200 11.1 -> 7.8, 3000 x 200 15.2 -> 7.4, 4096 x 129 9.7 -> 6.8; but 2048 x
#   256 6.9 -> 7.2, 2048 x 200 6.6 -> 6.7, 1024 x 256 5.5 -> 7.1, 512 x 256 4.3 -> 6.6 (one
#   program's 256 steps take ~6.5 us), 5120 x 256 15.3 -> 16.0, 8192 x 256 21.2 -> 26.2 (past one
#   wave of 32-row programs at one an SM), 4608 x 256 15.3 -> 14.7: hence 0.25 to 0.5 programs
#   of 64 rows an SM (2049-4224 rows on 132 SMs). Its 512-step tile lost everywhere with T
#   constant (16 steps a thread on 32 warps, 568 bytes of stack: 4096 x 512 22.7 -> 65.4; 32 on
#   16 warps, 648 bytes: 22.7 -> 58.9; 512 x 512 6.1 -> 19.9). V-trace's kernel spills 600 bytes
#   or more on either (32 registers a thread, Triton 3.6) and was not timed.
_TM_LONG_MIN_PROGRAMS = 0.03  # 4 programs of 64 rows on 132 SMs (193 rows)
_TM_SHORT_K = {8: 4, 16: 4, 32: 4}
_TM_NARROW_ONLY = dict(narrow=float("inf"), narrow_only=True)  # 32 rows a program, Triton < 3.7 only
_TM_LAGGED_128 = dict(min_programs=0.45, max_programs=1.0, **_TM_NARROW_ONLY)
_TM_LONG_EDGE = (_TM_LONG_MIN_PROGRAMS, 1.5)  # discounted returns to the window edge, 256 and 512 steps
_TM_LANES_TILES: dict[str, dict[int, TmLanesTile]] = {
    "gae": _tm_tiles({**_TM_SHORT_K, 64: 8, 128: 8, 256: 8, 512: 32},
                     {64: dict(few=(1.0, 4), narrow=2.0), 128: dict(max_programs=2.0, narrow=1.0),
                      256: dict(min_programs=_TM_LONG_MIN_PROGRAMS, max_programs=1.0, **_TM_NARROW_ONLY),
                      512: dict(min_programs=0.15, max_programs=0.5, exact=True, **_TM_NARROW_ONLY)}),
    "td_lambda": _tm_tiles({**_TM_SHORT_K, 64: 8, 128: 8, 256: 8, 512: 16},
                           {64: dict(few=(1.0, 4), narrow=2.0), 128: dict(max_programs=2.0, narrow=2.0),
                            256: dict(min_programs=_TM_LONG_MIN_PROGRAMS, max_programs=1.5, edge=_TM_LONG_EDGE,
                                      **_TM_NARROW_ONLY),
                            512: dict(min_programs=0.1, max_programs=0.75, edge=_TM_LONG_EDGE, **_TM_NARROW_ONLY)}),
    "vtrace": _tm_tiles({8: 2, 16: 2, 32: 2, 64: 4, 128: 8},
                        {64: dict(min_programs=0.75, max_programs=2.0, narrow=float("inf")),
                         128: _TM_LAGGED_128}),
    "retrace": _tm_tiles({**_TM_SHORT_K, 64: 4, 128: 8, 256: 8},
                         {64: dict(narrow=2.0), 128: _TM_LAGGED_128,
                          256: dict(min_programs=0.25, max_programs=0.5, **_TM_NARROW_ONLY)}),
    "retrace_actions": _tm_tiles({32: 4, 64: 4}, min_programs=0.75),
    "forward": _tm_tiles({**_TM_SHORT_K, 64: 8, 128: 8, 256: 8, 512: 16},
                         {128: dict(max_programs=2.0, narrow=1.0),
                          256: dict(min_programs=0.1, max_programs=0.5, **_TM_NARROW_ONLY),
                          512: dict(min_programs=0.2, max_programs=0.75, exact=True, **_TM_NARROW_ONLY)}),
}


# Discounted returns bootstrapped at the window edge at most (no values, a last_value or none,
# no truncations: _returns_to_the_edge, the calls that start from the edge carry, _EDGE_CARRY;
# and a scalar gamma, as timed) take TD(lambda)'s kernel's 128-step time-major lanes tiles on
# any number of programs, past the tile's max_programs (2 an SM), which TD(lambda) itself and
# GAE keep. H200, Triton 3.6, time-major, device us (benchmarks/ab.py, two runs alike,
# 2026-12-02-h200-s30-ab-tm-lanes-128.txt), the time-major tiles -> these: discounted returns
# 24576 x 128 11.2 -> 7.2, 32768 x 128 12.0 -> 9.9, 49152 x 128 23.8 -> 18.4, 32768 x 100
# 10.4 -> 8.7 (as shipped, -s30-ab-dr-tm-lanes.txt: 131072 x 128 50.2 -> 44.0); TD(lambda)
# was mixed (24576 x 128 11.7 -> 9.6 but 32768 x 128 15.6 -> 16.8, 32768 x 100 10.7 -> 16.8)
# and GAE slower everywhere (32768 x 128 21.2 -> 26.0).
_DR_TM_LANES_ANY = True


class TmSubTile(NamedTuple):
    """A form's time-major lanes tile of fewer than 32 rows a program (``_TM_SUB_TILES``):
    ``rows`` rows (one a lane; each warp's other 32 / rows lanes along time, see
    :func:`_tm_groups`) by a whole row, ``steps`` consecutive steps a thread, taken on
    ``min_programs`` to ``max_programs`` programs of ``_TM_LANES_ROWS`` rows an SM (the unit
    of ``TmLanesTile``'s bounds, so that both read alike)."""

    rows: int
    steps: int
    min_programs: float
    max_programs: float


# Time-major lanes tiles of 8 or 16 rows a program (session 59, TmSubTile, _tm_sub_plan): a
# whole row of a power-of-two length, the rows along 8 or 16 lanes (one 32- or 64-byte run of
# float32 a step: whole 32-byte sectors) and the other lanes and the warps along time, so a
# call of few rows gets 4 or 2 times the programs of the 32-row tiles with fewer steps a
# thread, where those tiles left most SMs idle or held 128 registers (GAE's [32, 512], one
# program an SM). Rows of exactly the tile's length only (as timed), Triton < 3.7 only (as the
# narrow tiles, _TM_LANES_NARROW: Triton 3.6 gives the rows the first lanes, contiguity 1 on
# both axes). Triton 3.6 statics (benchmarks/sass_counts.py, sm_90): GAE [8, 512] on 8 warps
# 92 registers, no spills (as shipped, [32, 512] on 16: 128 and 96 bytes of stack); [8, 128]
# on 4 warps 72; V-trace [8, 512] on 16 warps 124 (242 on 8). H100, Triton 3.6, time-major,
# device us (benchmarks/ab.py, `device_run.sh s59-sub32`, 2026-12-07-h100-s59-sub32.txt), as
# shipped -> [8, T] K = 16 / [8, T] K = 8 / [16, T] K = 8:
#   GAE 512 x 512 4.9 -> 4.0 / 4.0 / 5.1, 2048 x 512 9.8 -> 7.8 / 7.7 / 6.4, 4096 x 512 16.8 ->
#   17.0 / 16.9 / 14.5, 16384 x 512 54.6 -> 73.8 / 72.0 / 67.4; 4096 x 128 4.0 -> 3.7 ([16, 128]),
#   8192 x 128 5.7 -> 5.6, 16384 x 128 12.7 -> 11.9; 512 x 2048 13.7 -> 17.4 / 13.8, 256 x 1024
#   5.8 -> 6.2 / 6.4 (none there);
#   V-trace 512 x 512 6.6 -> 5.9 / 5.7 / 22.5, 2048 x 512 15.5 -> 13.4 / 13.7 / 69.4, 4096 x 512
#   21.6 -> 38.7 / 39.1; 4096 x 128 4.7 -> 4.4 ([16, 128]), 8192 x 128 7.9 -> 7.5, 16384 x 128
#   19.0 -> 26.3; 512 x 2048 and 256 x 1024 lost on every tile;
#   TD(lambda) 512 x 512 4.9 -> 3.3 / 3.4 / 4.2, 2048 x 512 6.9 -> 5.9 / 6.1 / 5.1, 4096 x 512 8.2
#   -> 12.0 / 11.4 / 9.2; 256 x 1024 6.8 -> 4.4, 512 x 2048 12.1 -> 8.2 ([8, T] K = 16); at 128
#   steps within 0.1 on [16, 128] (none);
#   traces 512 x 512 4.8 -> 2.7 / 3.0 / 3.6, 2048 x 512 5.3 -> 4.9 / 5.0 / 4.5, 4096 x 512 6.1 ->
#   8.7; 256 x 1024 5.9 -> 3.6, 512 x 2048 8.9 -> 6.8; 8192 x 128 3.9 -> 3.5 ([16, 128]), 4096 x
#   128 2.8 -> 2.7, 16384 x 128 4.9 -> 5.3.
# Tiles of 4 rows lost everywhere but 256 x 1024 (TD(lambda) 4.9, traces 4.2). The bounds
# (programs of 64 rows an SM; 132 SMs: 0.03 is 193 rows, 0.125 1056, 0.25 2112, 0.5 4224)
# come from the A/B of the tiles as adopted in and past wider bounds (`device_run.sh
# s59-verify`, 2026-12-07-h100-s59-verify-ab.txt), as shipped -> these:
#   GAE 256 x 512 5.0 -> 3.8, 1024 x 512 6.5 -> 5.1, 1536 x 512 9.9 -> 6.1, 2048 x 512 9.9 -> 6.3,
#   3072 x 512 12.0 -> 10.5, 4096 x 512 17.3 -> 14.8; 2048 x 128 3.7 -> 2.9, 4096 x 128 4.1 ->
#   3.7, 8192 x 128 5.9 -> 5.8, 16384 x 128 11.7 -> 11.5;
#   V-trace 256 x 512 5.9 -> 5.6, 1024 x 512 8.0 -> 6.8, 2048 x 512 15.5 -> 12.2, but 3072 x 512
#   22.6 -> 25.2 (hence 0.25); 2048 x 128 4.1 -> 3.6, 4096 x 128 4.9 -> 4.5, but 8192 x 128 8.6 ->
#   9.1 (7.9 -> 7.5 in s59-sub32; hence 0.5);
#   TD(lambda) / discounted returns 256 x 512 4.0 -> 3.0 / 5.2 -> 2.9, 1024 x 512 6.8 -> 4.2 / 5.4
#   -> 3.9, 2048 x 512 7.0 -> 5.1 / 5.6 -> 4.7, but 3072 x 512 7.7 -> 8.0 / 6.1 -> 7.4 (hence
#   0.25); 128 x 1024 5.6 -> 4.3 / 5.3 -> 4.1, 512 x 1024 10.7 -> 4.8 / 6.6 -> 4.5, 1024 x 1024
#   10.8 -> 6.4 / 9.4 -> 5.9; 256 x 2048 9.6 -> 7.7 / 9.6 -> 6.5, 1024 x 2048 16.0 -> 11.4 / 12.5
#   -> 9.5 (per-step bootstrap values alike: 1024 x 512 6.6 -> 4.2, 512 x 1024 11.8 -> 4.8);
#   traces 256 x 512 3.8 -> 2.5, 1536 x 512 7.3 -> 4.1, 2048 x 512 5.3 -> 4.4, but 3072 x 512 5.8
#   -> 6.8; 128 x 1024 4.9 -> 3.6, 1024 x 1024 8.1 -> 5.4, 1024 x 2048 10.8 -> 9.2; 2048 x 128 2.9
#   -> 2.3, 8192 x 128 3.9 -> 3.5.
# 64 x 512 (one program, outside every bound) moved by at most 0.1 with them. The tiles a form
# lists are tried in order, the first whose bounds hold the call taken; the 32-row tiles and
# the time-major tiles take what they leave.
_TM_SUB = True
_TM_SUB_TILES: dict[str, dict[int, tuple[TmSubTile, ...]]] = {
    "gae": {128: (TmSubTile(16, 8, 0.2, 2.0),),
            512: (TmSubTile(8, 16, _TM_LONG_MIN_PROGRAMS, 0.125), TmSubTile(16, 8, 0.125, 0.5))},
    "vtrace": {128: (TmSubTile(16, 8, 0.2, 0.5),), 512: (TmSubTile(8, 8, _TM_LONG_MIN_PROGRAMS, 0.25),)},
    "td_lambda": {512: (TmSubTile(8, 16, _TM_LONG_MIN_PROGRAMS, 0.125), TmSubTile(16, 8, 0.125, 0.25)),
                  1024: (TmSubTile(8, 16, 0.01, 0.125),), 2048: (TmSubTile(8, 16, _TM_LONG_MIN_PROGRAMS, 0.125),)},
    "forward": {128: (TmSubTile(16, 8, 0.2, 1.0),),
                512: (TmSubTile(8, 16, _TM_LONG_MIN_PROGRAMS, 0.125), TmSubTile(16, 8, 0.125, 0.25)),
                1024: (TmSubTile(8, 16, 0.01, 0.125),), 2048: (TmSubTile(8, 16, _TM_LONG_MIN_PROGRAMS, 0.125),)},
}


def _tm_small_call(R: int, T: int) -> bool:
    """Whether R time-major rows of T steps are a call small enough for
    :func:`plan_time_major`'s 8-row one-chunk tiles (``_TM_SMALL_ROWS``): rows of at most
    ``_TM_ONE_CHUNK_T`` steps, fewer than ``_TM_SPLIT_MIN_ELEMS`` elements."""
    return T <= _TM_ONE_CHUNK_T and R * T < _TM_SPLIT_MIN_ELEMS


def _tm_sub_plan(R: int, T: int, sms: int, form: str | None) -> Plan | None:
    """The time-major lanes plan of fewer than 32 rows a program (``_TM_SUB_TILES``) for R
    time-major rows of exactly T steps (a power of two) of the kernel form ``form`` (None:
    never): the first of the form's tiles of that length whose bounds hold ``cdiv(R,
    _TM_LANES_ROWS)`` programs, one chunk a row on ``T / steps * rows / 32`` warps; None
    without one, on other row lengths, for the small calls of ``plan_time_major``'s 8-row
    one-chunk tiles (:func:`_tm_small_call`), and on Triton 3.7 or later
    (``_TM_LANES_NARROW``)."""
    if not (_TM_SUB and _TM_LANES and _TM_LANES_NARROW) or T < 2 or T & (T - 1):
        return None
    if _tm_small_call(R, T):
        return None  # (small calls keep session 48's 8-row one-chunk tiles: not timed against these)
    programs = _cdiv(R, _TM_LANES_ROWS)
    for tile in _TM_SUB_TILES.get(form, {}).get(T, ()):
        if tile.min_programs * sms <= programs <= tile.max_programs * sms:
            return Plan(tile.rows, T, T // tile.steps * tile.rows // 32, 1, T, tm_lanes=True)
    return None


def _tm_lanes_plan(R: int, T: int, sms: int, form: str | None, edge: bool = False) -> Plan | None:
    """The time-major lanes plan (``_TM_LANES``) for R time-major rows of T steps of the kernel
    form ``form`` (None: never): a row as one chunk of the form's tile of ``next_pow2(T)``
    steps in ``_TM_LANES_TILES`` (its ``narrow_only`` tiles on Triton < 3.7 only), on as many
    programs of ``_TM_LANES_ROWS`` rows an SM as that tile's bounds allow (else None;
    ``edge``: its ``edge`` bounds, for discounted returns to the window edge,
    ``_DR_TM_LANES_ANY``), ``_TM_LANES_NARROW_ROWS`` rows a program where its narrow bound
    says (``_TM_LANES_NARROW``).

    Longer rows keep the time-major tiles: these tiles in 64- or 128-step chunks, walked in a
    loop or split in time, were up to 3.5x slower (16384 x 512 GAE 41 -> 143 us; every step
    of the loop waits for the warps' carry) and at best 1.2x faster (512 x 2048 13.8 -> 11.3),
    far from the batch-major time (2026-12-01-h200-s19-ab-tm-lanes-long.txt); the kernels take
    such plans (tests/test_backends.py::test_tm_lanes_chunks), the planner does not give them;
    whole rows of up to 512 steps take the 256- and 512-step tiles' one chunk instead (Triton <
    3.7)."""
    p2 = _next_pow2(max(T, 1))
    tile = _TM_LANES_TILES.get(form, {}).get(p2)  # (form None: no entry)
    if not _TM_LANES or tile is None or (tile.exact and T != p2):
        return None
    programs = _cdiv(R, _TM_LANES_ROWS)
    lo, hi = tile.min_programs, tile.max_programs
    if edge:
        lo, hi = tile.edge or (lo, float("inf"))
    if not lo * sms <= programs <= hi * sms:
        return None
    k = tile.steps
    if tile.few is not None and programs <= tile.few[0] * sms:
        k = tile.few[1]
    k = min(k, p2)
    rows = _TM_LANES_ROWS
    if _TM_LANES_NARROW and _cdiv(R, _TM_LANES_NARROW_ROWS) <= tile.narrow * sms:
        rows = _TM_LANES_NARROW_ROWS
    elif tile.narrow_only:
        return None
    return Plan(rows, p2, p2 // k, 1, p2, tm_lanes=True)


# Batch-major rows whose length and strides are divisible by 2, 4 or 8 but not 16 (rows of 24
# or 1000 steps) are shown to Triton as such (_row_div, scan.aligned): Triton specialises an
# integer argument divisible by 16 and no other, so such rows had scalar accesses only (a
# vector needs its start aligned, through the row stride, and its mask, t < T, the same
# across it, through T). H200, Triton 3.6 (benchmarks/ab.py,
# 2026-12-01-h200-s20-ab-row-div-T.txt), us, without -> with:
#   32768 x 24   GAE 7.9 -> 3.4, TD(lambda) 7.9 -> 3.4, V-trace 9.7 -> 4.5, Retrace 12.7 -> 5.3
#   1024 x 1000  GAE 9.0 -> 4.3, TD(lambda) 10.4 -> 4.3, V-trace 11.8 -> 5.3, traces 5.4 -> 3.5
#   4096 x 100   GAE 4.9 -> 2.9, V-trace 6.7 -> 3.3; 64 x 1000 Retrace 3.8 -> 2.0
# On 8-step tiles the strides' divisor alone gained nothing and GAE lost 0.1-0.2 us (32768 x
# 8 2.7 -> 2.9, 2026-12-01-h200-s20-ab-stride-divs.txt); with T's too they compile ~30%
# shorter and gained up to 0.2 us (Retrace 4096 x 8 2.2 -> 2.0, discounted returns 1.9 ->
# 1.7; 2026-12-01-h200-s21-ab-tiny.txt), timed with _TINY_WARP_ELEMS as adopted with it; tiles
# of fewer steps than _ROW_DIV_MIN_T (rows of 1-4 steps) are untimed with a divisor.
# Time-major storage turns it around (_TM_DIV, the kernels' TM_DIV): the time-major tiles'
# vectors run along rows, so they need the row count R (their mask is row < R) and the time
# strides (R for a contiguous [T, N]) divisible, and Triton sees 1000 rows as neither. Shown
# on the time-major tiles (Plan.time_major, Plan.tm_lanes), the code is that of 1024 rows.
# Session 20 showed the time strides alone, on every call of time-major storage: mixed
# (2026-12-01-h200-s20-ab-tm-divs.txt; GAE 1000 x 128, on the batch-major tiles, 4.6 -> 8.0).
# H200, Triton 3.6 (benchmarks/ab.py, 2026-12-01-h200-s21-ab-tm-div.txt), time-major, us,
# without -> with R and the strides:
#   1000 x 512   GAE 9.8 -> 7.2, TD(lambda) 25.2 -> 7.2, V-trace 14.6 -> 9.3, action form 20.2 -> 16.4
#   504 x 2048   GAE 26.5 -> 13.6, V-trace 32.4 -> 17.0, Retrace 31.5 -> 18.4, action form 84.8 -> 52.0
#   1000 x 1000  GAE 23.1 -> 12.7, TD(lambda) 22.2 -> 10.9, action form 94.2 -> 49.2
#   4008 x 64    GAE 3.5 -> 3.1, TD(lambda) 3.7 -> 3.0, traces 2.8 -> 2.5
#   24 x 4096    within 0.4 (the few-rows tiles), but the action form 16.1 -> 16.9
# The forward kernel is mixed (traces 1000 x 512 5.1 -> 5.8, 504 x 2048 8.5 -> 9.1, but
# 1000 x 1000 10.9 -> 9.5) and takes it too, so that its times are those of 1024 or 512 rows.
_ROW_DIV = True
_ROW_DIV_MIN_T = 8
_TM_DIV = True


# Output allocators. Tests replace these with NaN-filling versions so that an element a
# kernel fails to write shows up as NaN.
empty_like = torch.empty_like
empty = torch.empty


class Plan(NamedTuple):
    """How one call is cut: tile shape, warps, and the time split (``segments`` of
    ``seg_len`` steps; 1 segment is a single pass; ``lookback``: split rows in one launch,
    one chunk per segment)."""

    block_n: int
    block_t: int
    num_warps: int
    segments: int
    seg_len: int
    lookback: bool = False  # one pass with decoupled look-back instead of two launches
    time_major: bool = False  # tiles for rows-contiguous storage (see _TM_ROWS, plan_time_major)
    stages: int = 1  # software-pipelining depth of the chunk loop (see _TM_STAGES)
    coop: bool = False  # one cooperative pass with a grid barrier where it fits (see _COOP)
    lanes: bool = False  # rows across a few lanes each (GROUP_TILES = 4, see _ROW_LANES)
    tm_lanes: bool = False  # time-major rows along the lanes, time along the warps (GROUP_TILES = 5, _TM_LANES)

    @property
    def chunk_loop(self) -> bool:
        """One pass in which each program walks its rows in several chunks."""
        return self.segments == 1 and self.seg_len > self.block_t


@functools.lru_cache(maxsize=16)
def _sm_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


# The oldest CUDA driver the dependent launch is taken on: 12.3, whose graphs hold a
# programmatic dependency as an edge of their own (a caller's CUDA graph of the two passes:
# tests/test_gpu.py::test_pdl_graph_capture, on the H200's driver). A capture on an older
# driver was never tried, so older drivers launch the passes plainly.
_PDL_MIN_DRIVER = 12030


@functools.lru_cache(maxsize=1)
def _driver_version() -> int:
    """The CUDA driver's version as ``cuDriverGetVersion`` gives it (12030 for 12.3), or 0
    where the driver library cannot be loaded or asked. No GPU work, no synchronisation."""
    import ctypes
    import sys

    name = "nvcuda.dll" if sys.platform.startswith("win") else "libcuda.so.1"
    try:
        lib = ctypes.CDLL(name)
        version = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(version)) != 0:
            return 0
    except (OSError, AttributeError):
        return 0
    return int(version.value)


def _triton_launch_pdl() -> bool:
    """Whether the installed Triton compiles and launches with ``launch_pdl`` (a CUDA
    compile option since Triton 3.3)."""
    try:
        from triton.backends.nvidia.compiler import CUDAOptions
    except ImportError:
        return False
    return "launch_pdl" in getattr(CUDAOptions, "__dataclass_fields__", {})


@functools.lru_cache(maxsize=16)
def _pdl_capable(index: int) -> bool:
    """Device ``index`` runs griddepcontrol (compute capability 9.0 or newer), the installed
    Triton has ``launch_pdl`` (:func:`_triton_launch_pdl`) and the driver is at least
    ``_PDL_MIN_DRIVER``."""
    return _triton_launch_pdl() and torch.cuda.get_device_capability(index) >= (9, 0) \
        and _driver_version() >= _PDL_MIN_DRIVER


def _pdl(device: torch.device) -> bool:
    """Whether a time split's passes on ``device`` take ``_PDL``'s dependent launch: a CUDA
    device of compute capability 9.0 or newer (griddepcontrol; never the CPU interpreter) with
    a driver of at least ``_PDL_MIN_DRIVER`` (:func:`_pdl_capable`)."""
    return (_PDL and device.type == "cuda"
            and _pdl_capable(device.index if device.index is not None else torch.cuda.current_device()))


def _device_sms(device: torch.device) -> int:
    """The multiprocessors of ``device`` (``_DEFAULT_SMS`` for the CPU interpreter)."""
    if device.type != "cuda":
        return _DEFAULT_SMS
    return _sm_count(device.index if device.index is not None else torch.cuda.current_device())


def _cdiv(a: int, b: int) -> int:
    # plain integer arithmetic: triton.cdiv is a JIT function, slow to call from the host
    return -(-a // b)


def _next_pow2(x: int) -> int:
    return 1 << (x - 1).bit_length() if x > 1 else 1


def _one_chunk_warps(programs: int, T: int, p2: int, sms: int,
                     bounds: tuple[float, float, float, bool] | None, wide_4k: float = 1.0,
                     beyond_4k: int = _WHOLE_ROW_4K_WARPS_DEFAULT) -> int:
    """Warps of a program holding a whole row of ``T`` steps in one chunk of ``p2`` =
    next_pow2(T) (``_ONE_CHUNK``), or 0 where the plan should not: ``bounds`` as in
    ``_ONE_CHUNK_ROWS`` (None: never); ``wide_4k`` as in ``_ONE_CHUNK_WARPS``; ``beyond_4k``
    the warps of a whole 4096-step row past that bound (``_WHOLE_ROW_4K_WARPS``)."""
    if not _ONE_CHUNK or bounds is None or not _MAX_BLOCK_T < p2 <= _ONE_CHUNK_MAX_T:
        return 0
    most_4k, fewest_8k, most_8k, unaligned = bounds
    aligned = T % 16 == 0
    if p2 <= 4096:
        few = programs <= sms
        warps = 16 if few or (aligned and programs <= wide_4k * sms) else beyond_4k
        # rows of T not a multiple of 16 (scalar loads) only on an SM's worth of programs
        fits = programs <= most_4k * sms and (aligned or (unaligned and few))
    else:
        warps = 16
        fits = fewest_8k * sms <= programs <= most_8k * sms and (aligned or unaligned)
    return warps if fits else 0


@functools.lru_cache(maxsize=4096)
def plan(R: int, T: int, sms: int = _DEFAULT_SMS, long_rows: tuple[int, int, int] = _LONG_ROWS_DEFAULT,
         forward: bool = False, one_chunk: tuple[float, float, float, bool] | None = None,
         tiny_warp_elems: int = _TINY_WARP_ELEMS,
         whole_warps: tuple[int, float] | tuple[int, float, int] = _ONE_CHUNK_WARPS_DEFAULT,
         loop_tile: tuple[int, int] = _LOOP_TILE_DEFAULT,
         short_tile: tuple[int, int] = _SHORT_TILE_DEFAULT,
         long_split: tuple[tuple[int, int], int] | None = None) -> Plan:
    """The launch plan for R rows (lanes) of T steps.

    Chosen from sweeps on an H200 (``benchmarks/sweep.py``; results in
    benchmarks/results/): short rows (T <= 128) take ~256-element tiles of several rows,
    which gives thousands of small programs; rows up to 2048 steps take one row per
    program in a single chunk (``ONE_CHUNK``: no carry hand-over), 4 warps per 512 steps;
    longer rows walk 1024-step chunks. Rows too few to fill the GPU (fewer than
    ``_PROGRAMS_PER_SM`` per SM) of ``_SPLIT_MIN_CHUNKS`` chunks or more (``_SPLIT_FEW_CHUNKS``
    when the row programs are fewer than the SMs) are cut into one-chunk segments of 2048
    steps (``_SHORT_SPLIT``'s 1024 for rows of at most ``_SHORT_SPLIT_MAX_T`` steps) run in
    parallel (two launches: summaries, then carry-in and outputs; one cooperative launch
    with ``_COOP``).
    ``long_rows`` (the estimator's entry of ``_LONG_ROWS``) changes the last two for rows of
    more than 2048 steps: the warps of a program that walks its row in chunks, and the steps
    (at most ``_SEG_STEPS``) and warps of a split segment. ``forward``: the forward kernel's
    tiles (``_FWD_SHORT_TILE`` and the settings beside it): more elements a thread, and rows
    that a split would cut walked instead on programs for ``_FWD_WALK_MIN_SM_SHARE`` of the SMs
    (``_FWD_WALK_MAX_T`` steps at most), in ``_FWD_WALK_BLOCK_T``-step chunks. ``one_chunk``
    (the form's entry of ``_ONE_CHUNK_ROWS``; None: never): rows of 2049 to
    ``_ONE_CHUNK_MAX_T`` steps on that many programs an SM (and of T a multiple of 16, or
    not, as it says) are one chunk of ``next_pow2(T)`` steps instead of a split or a chunk
    loop. ``tiny_warp_elems``: the elements a warp of a tile of at most ``_TINY_T`` steps
    (the form's entry of ``_TINY_WARP_ELEMS_BY_FORM``). ``whole_warps`` (the form's entry of
    ``_ONE_CHUNK_WARPS``): the warps of a whole row of 1025 to 2048 steps on more programs
    than SMs, and the most programs an SM on which a whole 4096-step row keeps 16 warps; and,
    third where given (the form's entry of ``_WHOLE_ROW_4K_WARPS``, else
    ``_WHOLE_ROW_4K_WARPS_DEFAULT``), its warps beyond.
    ``loop_tile`` (the form's entry of ``_LOOP_TILES``): the steps of a chunk of a row that
    one program walks (backward kernels) and the chunk loop's pipelining depth, for rows of
    whole chunks on at least ``_LOOP_TILE_MIN_PROGRAMS`` programs an SM. ``short_tile``
    (``_SHORT_TILE_DEFAULT``, or ``_DR_SHORT_TILES``' entry for the rows' length): the elements
    of a short-row tile and the elements a warp takes (backward kernels). ``long_split`` (the
    form's entry of ``_LONG_SPLIT``; None: none): ``((steps, warps), min_T)``, the one-chunk
    segments of split rows of ``min_T`` to ``_LONG_SPLIT_MAX_T`` steps that make at least
    ``_LONG_SPLIT_MIN_PROGRAMS`` programs an SM.
    """
    target = _PROGRAMS_PER_SM * sms
    p2 = _next_pow2(max(T, 1))
    fwd_short = forward and _FWD_SHORT_MIN_T <= p2 <= _SHORT_T
    if p2 <= _SHORT_T:
        block_t = min(p2, _MAX_BLOCK_T)
        rows_p2 = _next_pow2(max(R, 1))
        block_n = max(1, min(short_tile[0] // block_t, rows_p2))
        if fwd_short:
            wide = max(block_n, min(_FWD_SHORT_TILE // block_t, rows_p2))
            while wide > block_n and _cdiv(R, wide) < target:
                wide //= 2
            fwd_short = wide > block_n  # (else the backward kernels' tile and warps)
            block_n = wide
    else:
        block_t = min(p2, _MAX_BLOCK_T)
        block_n = 1
    block_n = max(1, min(block_n, _TILE // block_t))
    programs = _cdiv(R, block_n)
    whole = _one_chunk_warps(programs, T, p2, sms, one_chunk, *whole_warps[1:])
    if whole:
        return Plan(1, p2, whole, 1, p2)
    loop_warps, split_steps, split_warps = long_rows
    if T <= _SHORT_SPLIT_MAX_T and split_steps > _SHORT_SPLIT[0]:
        split_steps, split_warps = _SHORT_SPLIT
    if (long_split is not None and long_split[1] <= T <= _LONG_SPLIT_MAX_T
            and programs * _cdiv(T, long_split[0][0]) >= _LONG_SPLIT_MIN_PROGRAMS * sms):
        split_steps, split_warps = long_split[0]
    seg_steps = min(_SEG_STEPS, split_steps)
    walk = forward and _FWD_WALK_MIN_SM_SHARE * sms <= programs < target and T <= _FWD_WALK_MAX_T
    if forward or T % loop_tile[0] or programs < _LOOP_TILE_MIN_PROGRAMS * sms:
        loop_tile = _LOOP_TILE_DEFAULT  # (the forward kernel's loop: its own stages below)
    loop_block_t = _FWD_WALK_BLOCK_T if walk else loop_tile[0]
    if programs < target and p2 > _MAX_BLOCK_T and not walk:
        block_t = min(block_t, split_steps)  # (rows that may be split: an estimator's own chunk)
    n_chunks = _cdiv(T, block_t)
    segments, seg_len = 1, n_chunks * block_t
    coop = False
    chunks_to_split = _SPLIT_MIN_CHUNKS if programs >= sms else min(_SPLIT_MIN_CHUNKS, _SPLIT_FEW_CHUNKS)
    if programs < target and n_chunks >= chunks_to_split and R * T >= _SPLIT_MIN_ELEMS and not walk:
        per_seg = max(1, min(n_chunks, seg_steps // block_t))
        per_seg = max(per_seg, _cdiv(n_chunks, _MAX_SEGMENTS))
        segments, seg_len = _cdiv(n_chunks, per_seg), per_seg * block_t
        if _LOOKBACK:
            segments, seg_len = n_chunks, block_t
        elif _COOP:
            coop_t = _coop_steps(programs, T, block_t, sms)
            if coop_t:
                block_t, seg_len, segments, coop = coop_t, coop_t, _cdiv(T, coop_t), True
    elif n_chunks > 1 and block_t > loop_block_t:
        # a long row walked by one program: smaller chunks keep registers for more programs
        block_t = loop_block_t
        seg_len = _cdiv(T, block_t) * block_t
    # Triton's scan lowering needs at least one element per thread (no replicated layouts):
    # pad tiny tiles with masked rows up to a warp.
    block_n = max(block_n, _cdiv(32, block_t))
    elems = block_n * block_t
    # more than 8 warps only for a whole 2048-step row in one chunk: 16, or for GAE's and
    # TD(lambda)'s kernels on more programs than SMs whole_warps' (_ONE_CHUNK_WARPS; fewer
    # programs were not timed with it)
    cap = 8
    if segments == 1 and elems >= 2048 and seg_len <= block_t:
        cap = whole_warps[0] if programs > sms else 16
    if forward:
        cap = min(cap, _FWD_ONE_CHUNK_WARPS)
        loop_warps = min(loop_warps, _FWD_WALK_WARPS if walk else _FWD_LOOP_WARPS)
    per_warp = _FWD_WARP_ELEMS if fwd_short else (short_tile[1] if p2 <= _SHORT_T else 128)
    if block_t <= _TINY_T:
        per_warp = tiny_warp_elems
    num_warps = max(1, min(cap, elems // per_warp))
    stages = 1
    if segments == 1 and seg_len > block_t:
        num_warps = min(num_warps, loop_warps)
        stages = _FWD_LOOP_STAGES if forward else loop_tile[1]
    elif segments > 1:
        num_warps = min(num_warps, split_warps)
    if coop:
        num_warps = max(4, min(16, block_t // (32 * _COOP_ELEMS)))
    return Plan(block_n, block_t, num_warps, segments, seg_len, _LOOKBACK and segments > 1, stages=stages,
                coop=coop)


def _coop_steps(programs: int, T: int, block_t: int, sms: int) -> int:
    """The steps of a one-chunk segment for a cooperative split of ``programs`` row blocks
    of ``T`` steps (0: none): the shortest power of two from ``block_t`` up to
    ``_COOP_MAX_T`` that gives at least two segments and at most ``_COOP_PER_SM`` programs an
    SM."""
    t = block_t
    while t <= _COOP_MAX_T:
        segs = _cdiv(T, t)
        if segs < 2:
            return 0
        if programs * segs <= _COOP_PER_SM * sms:
            return t
        t *= 2
    return 0


FewTiles = tuple[tuple[int, tuple[int, int, int, int]], ...]


def _small_split_tile(small_split: tuple[tuple[int, ...], ...], R: int, T: int) -> tuple[int, int] | None:
    """(rows, warps) of the first of a form's ``_TM_SMALL_SPLIT`` tiles whose bounds R rows of
    T steps reach (from rows, below rows, above steps, from elements; optionally the row count
    a multiple of the seventh field, at most the eighth's steps), or None."""
    for tile in small_split:
        if tile[0] <= R < tile[1] and T > tile[2] and R * T >= tile[3] \
                and (len(tile) < 7 or R % tile[6] == 0) and (len(tile) < 8 or T <= tile[7]):
            return tile[4], tile[5]
    return None


@functools.lru_cache(maxsize=4096)
def plan_time_major(R: int, T: int, sms: int = _DEFAULT_SMS, wide: bool = False,
                    few: FewTiles | None = None, small_long: int = 0,
                    small_split: tuple[tuple[int, ...], ...] = ()) -> Plan | None:
    """The launch plan for R rows of T steps stored time-major (rows contiguous), or None
    when :func:`plan`'s tiles serve better (fewer than ``_TM_MIN_ROWS`` rows or
    ``_TM_MIN_STEPS`` steps, or too small a call to split).

    Tiles of ``_TM_ROWS`` rows by ``_TM_STEPS`` steps on ``_TM_WARPS`` warps
    (``_TM_NARROW_ROWS`` rows where that avoids a split, see there). With fewer
    than ``_TM_SPLIT_BELOW`` row blocks per SM, rows of at most ``_TM_ONE_CHUNK_T`` steps
    are one chunk of ``_TM_ONE_CHUNK_ROWS`` rows (a warp per ``_TM_ONE_CHUNK_WARP_STEPS``
    steps; of ``_TM_SMALL_ROWS`` rows, where set, in calls of fewer than
    ``_TM_SPLIT_MIN_ELEMS`` elements, which otherwise take the generic tiles; ``small_long``
    (the kernel form's entry of ``_TM_SMALL_LONG_ELEMS``, 0: never): rows of up to
    ``_TM_SMALL_LONG_MAX_T`` steps in calls of at most that many elements too, on
    ``_TM_SMALL_LONG_ROWS`` rows, ``_TM_SMALL_LONG_FEW_ROWS`` below ``_TM_SMALL_LONG_FEW_BELOW``
    rows; ``small_split``, the form's entry of ``_TM_SMALL_SPLIT``, (from rows, below rows,
    above steps, from elements, rows, warps[, rows a multiple of, at most steps]) tiles, empty:
    never: those calls of fewer than
    ``_TM_SMALL_LONG_FEW_BELOW`` rows that reach a tile's bounds split into one-chunk segments
    of ``_TM_SMALL_SPLIT_STEPS`` steps on the first such tile's rows and warps instead), and
    longer rows are cut into segments
    of whole chunks (two passes, summaries stored segment-major so they too are read along
    rows): enough segments for ``_TM_PROGRAMS_PER_SM`` programs per SM (a power of two)
    and for at most ``_TM_CHUNKS_PER_SEGMENT`` chunks each, at most ``_TM_MAX_SEGMENTS``.
    Programs of ``_TM_PIPELINE_CHUNKS`` chunks or more pipeline their loop ``_TM_STAGES``
    deep. ``wide`` (the estimators of ``_TM_WIDE_KINDS``): from ``_TM_WIDE_MIN_BLOCKS`` row
    blocks, one pass of ``_TM_WIDE_STEPS``-step tiles on ``_TM_WIDE_WARPS`` warps instead of a
    split. ``few`` (the kind's entry of ``_TM_FEW_TILES``: (from rows, (steps, warps, chunks
    a segment, stages)) pairs, most rows first): a power of two of rows from
    ``_TM_FEW_MIN_ROWS`` to ``_TM_FEW_MAX_ROWS`` of enough steps for
    ``_TM_FEW_MIN_SEGMENTS`` segments take one row block as wide as the rows, split in time,
    the first tile whose rows they reach (see there)."""
    if few and _TM_FEW_MIN_ROWS <= R <= _TM_FEW_MAX_ROWS and R & (R - 1) == 0:
        steps, warps, chunks, stages = next((tile for rows, tile in few if R >= rows), (0, 0, 0, 0))
        seg_len = steps * chunks
        if seg_len and _cdiv(T, seg_len) >= _TM_FEW_MIN_SEGMENTS:
            return Plan(R, steps, warps, _cdiv(T, seg_len), seg_len, False, True, stages)
    if R < _TM_MIN_ROWS or T < max(2, _TM_MIN_STEPS):
        return None
    block_n, block_t, num_warps = _TM_ROWS, min(_TM_STEPS, _next_pow2(T)), _TM_WARPS
    row_blocks = _cdiv(R, block_n)
    if T >= _TM_NARROW_MIN_T and row_blocks < _TM_NARROW_BELOW * sms \
            and _cdiv(R, _TM_NARROW_ROWS) >= _TM_SPLIT_BELOW * sms:
        # narrower tiles: twice the programs, enough to skip the split (8192 x 256) or to
        # fill the SMs better (16384 x 512)
        block_n = _TM_NARROW_ROWS
        row_blocks = _cdiv(R, block_n)
    n_chunks = _cdiv(T, block_t)
    segments = 1
    if row_blocks < _TM_SPLIT_BELOW * sms:
        if _TM_SMALL_ROWS and _tm_small_call(R, T):
            return _tm_one_chunk(_TM_SMALL_ROWS, T)  # (a call this small: narrow tiles, no split)
        if small_long and _TM_ONE_CHUNK_T < T <= _TM_SMALL_LONG_MAX_T and R >= _TM_SMALL_LONG_MIN_ROWS \
                and R * T <= small_long:
            split = _small_split_tile(small_split, R, T) if R < _TM_SMALL_LONG_FEW_BELOW else None
            if split is not None:
                # (a 1024-step chain a program on 64 programs: 8 short segments instead)
                rows, warps = split
                steps = _TM_SMALL_SPLIT_STEPS
                return Plan(rows, steps, warps, _cdiv(T, steps), steps, False, True)
            rows = _TM_SMALL_LONG_FEW_ROWS if R < _TM_SMALL_LONG_FEW_BELOW else _TM_SMALL_LONG_ROWS
            return _tm_one_chunk(rows, T, _TM_SMALL_LONG_WARPS)
        if R * T < _TM_SPLIT_MIN_ELEMS or n_chunks < 2:
            # too few row blocks and nothing to split: the generic tiles give more programs
            # (several rows each, short rows: their accesses along rows are already wide)
            return None
        if T <= _TM_ONE_CHUNK_T:
            return _tm_one_chunk(_TM_ONE_CHUNK_ROWS, T)
        if wide and row_blocks >= _TM_WIDE_MIN_BLOCKS:
            # about a row block per SM already: one pass of wider tiles (pipelined), where a
            # split would read everything twice
            n_chunks = _cdiv(T, _TM_WIDE_STEPS)
            return Plan(block_n, _TM_WIDE_STEPS, _TM_WIDE_WARPS, 1, n_chunks * _TM_WIDE_STEPS, False, True,
                        _tm_stages(n_chunks))
        wanted = max(1, _TM_PROGRAMS_PER_SM * sms // row_blocks)
        segments = max(1 << (wanted.bit_length() - 1), _cdiv(n_chunks, _TM_CHUNKS_PER_SEGMENT))
        segments = min(segments, _TM_MAX_SEGMENTS, n_chunks)
    per_seg = _cdiv(n_chunks, segments)
    segments = _cdiv(n_chunks, per_seg)
    return Plan(block_n, block_t, num_warps, segments, per_seg * block_t, False, True, _tm_stages(per_seg))


def _tm_one_chunk(rows: int, T: int, warps: int = 0) -> Plan:
    """A time-major plan of one chunk a row: ``rows`` rows by ``next_pow2(T)`` steps on
    ``warps`` warps (0: a warp per ``_TM_ONE_CHUNK_WARP_STEPS`` steps), one segment."""
    block_t = _next_pow2(T)
    return Plan(rows, block_t, warps or max(1, block_t // _TM_ONE_CHUNK_WARP_STEPS), 1, block_t, False, True)


def _tm_stages(chunks: int) -> int:
    """Pipelining depth of a time-major program's loop over ``chunks`` chunks."""
    return _TM_STAGES if chunks >= _TM_PIPELINE_CHUNKS else 1


def _tm_deep(pl: Plan, form: str | None) -> Plan:
    """``pl`` (a time-major plan) with its chunk loop pipelined ``_TM_DEEP_STAGES`` deep where
    the kernel form ``form`` is one of ``_TM_DEEP_FORMS`` and each program of
    ``_TM_NARROW_ROWS`` rows walks a whole row of at least ``_TM_DEEP_CHUNKS`` pipelined chunks
    (no split, not a lanes tile)."""
    if form in _TM_DEEP_FORMS and not pl.tm_lanes and pl.segments == 1 and pl.stages > 1 \
            and pl.block_n == _TM_NARROW_ROWS and pl.seg_len // pl.block_t >= _TM_DEEP_CHUNKS:
        return pl._replace(stages=_TM_DEEP_STAGES)
    return pl


def plan_for(R: int, T: int, device: torch.device, time_major: bool = False, wide: bool = False,
             long_rows: tuple[int, int, int] = _LONG_ROWS_DEFAULT, forward: bool = False,
             few: FewTiles | None = None, form: str | None = None,
             short_tile: tuple[int, int] | None = None, wide_lanes: float | None = None,
             tm_lanes_edge: bool = False, long_split: tuple[tuple[int, int], int] | None = None) -> Plan:
    """The plan for ``R`` rows of ``T`` steps on ``device``; ``time_major``: the rows are
    the contiguous axis (unit row stride), which has its own tiles (:func:`plan_time_major`,
    ``wide`` and ``few`` as there); ``long_rows`` as in :func:`plan`, for batch-major storage (time-major
    rows too few for their own tiles keep the default: the estimators' settings were timed on
    batch-major rows only); ``forward``: the forward kernel's batch-major tiles (likewise);
    ``form``: the kernel form (``_FORMS`` or ``"forward"``) whose ``_ONE_CHUNK_ROWS`` entry
    decides where a whole row is one chunk on batch-major storage, and whose short rows may
    take the lanes tiles (:func:`_row_lanes_plan`; time-major: :func:`_tm_lanes_plan`) (None:
    neither); ``short_tile``: as in :func:`plan` (batch-major storage only); ``wide_lanes``: the
    fewest programs an SM from which the call takes TD(lambda)'s kernel's 128-step lanes tiles
    (:func:`_td_wide_lanes`; None: never);
    ``tm_lanes_edge``: the time-major lanes tiles' bounds for discounted returns to the window
    edge (``_DR_TM_LANES_ANY``); ``long_split``: as in :func:`plan` (batch-major storage only).
    A time-major split of a form in ``_TM_COOP`` into at most ``_TM_COOP_MAX_SEGMENTS``
    one-chunk segments is made one cooperative pass (``Plan.coop``; off as shipped)."""
    sms = _device_sms(device)
    if time_major:
        pl = _tm_sub_plan(R, T, sms, form) or _tm_lanes_plan(R, T, sms, form, tm_lanes_edge) or plan_time_major(
            R, T, sms, wide, few, _TM_SMALL_LONG_ELEMS.get(form, 0), _TM_SMALL_SPLIT.get(form, ()))
        if pl is not None:
            if form in _TM_COOP and not pl.tm_lanes and 1 < pl.segments <= _TM_COOP_MAX_SEGMENTS \
                    and pl.seg_len == pl.block_t:
                # one cooperative pass of the split's one-chunk segments (see _TM_COOP)
                return pl._replace(coop=True)
            return _tm_deep(pl, form)
        long_rows, forward, form, short_tile, long_split = _LONG_ROWS_DEFAULT, False, None, None, None
    else:
        pl = _row_lanes_plan(R, T, sms, form, wide_lanes)
        if pl is not None:
            return pl
    one_chunk = None if form is None else _ONE_CHUNK_ROWS.get(form, _ONE_CHUNK_DEFAULT)
    return plan(R, T, sms, long_rows, forward and _FWD_TILES, one_chunk,
                _TINY_WARP_ELEMS_BY_FORM.get(form, _TINY_WARP_ELEMS),
                (*_ONE_CHUNK_WARPS.get(form, _ONE_CHUNK_WARPS_DEFAULT),
                 _WHOLE_ROW_4K_WARPS.get(form, _WHOLE_ROW_4K_WARPS_DEFAULT)),
                _LOOP_TILES.get(form, _LOOP_TILE_DEFAULT),
                short_tile or _SHORT_TILE_DEFAULT, long_split)


# --- replay of repeated calls ------------------------------------------------------------
#
# A training loop calls an estimator with tensors of the same shapes, strides and dtypes at
# every update. The first call of a signature records its launch; later calls with the same
# signature (see ``CreditAssigner._signature``) replay it: allocate the outputs, put the new
# tensors in the recorded argument slots, launch. Validation, the boundary form, strides and
# the plan all follow from the signature, so they are not recomputed.

_recorder: list | None = None
_generation = 0  # bumped by clear_caches(): replays recorded before are dropped


def clear_caches() -> None:
    """Forget cached plans and replays (after changing the plan settings of this module)."""
    global _generation
    _generation += 1
    from rltriton.kernels import native

    mod = native.loaded()
    if mod is not None:  # the compiled replay's entries armed before are dropped too
        mod.set_generation(_generation)
    plan.cache_clear()
    plan_time_major.cache_clear()


class _Step:
    """One kernel launch of a replay: the argument list with tensor slots left empty, and
    where each slot's tensor comes from: ``(position, source, index)`` with source 0 = the
    call's tensors, 1 = its outputs, 2 = the call's scratch buffers."""

    __slots__ = ("kernel", "grid", "template", "slots", "kwargs", "fast")

    def __init__(self, kernel, grid, template, slots, kwargs) -> None:
        self.kernel, self.grid, self.template, self.slots, self.kwargs = kernel, grid, template, slots, kwargs
        self.fast: _FastLaunch | None = None

    def __call__(self, sources: tuple) -> None:
        fast = self.fast
        if fast is not None and fast(sources):
            return
        args = self.template.copy()
        for k, src, j in self.slots:
            args[k] = sources[src][j]
        kwargs = self.kwargs
        if kwargs.get("AV_VEC") and not _vector_args_aligned(self.kernel, args):
            # recorded with the action tensors 16-byte aligned, called with a view that is
            # not: the loop over actions (the vector loads would fault)
            kwargs = {**kwargs, "AV_VEC": 0}
        compiled = self.kernel[self.grid](*args, **kwargs)
        if fast is None and kwargs is self.kwargs:
            self.fast = _FastLaunch.make(self.kernel, compiled, self.grid, args, kwargs, self.slots, self.template)


def _vector_args_aligned(kernel, args: list) -> bool:
    """Whether the arguments that retrace_kernel's ``AV_VEC = 4`` reads as 16-byte vectors
    (the action values and target probabilities) start at 16-byte aligned addresses."""
    names = kernel.arg_names
    return all(args[names.index(n)].data_ptr() % 16 == 0 for n in ("av_ptr", "pi_ptr"))


class Replay:
    """The recorded launches of one call (one pass, or the two passes of a time split),
    re-issued with new tensors of the same signature; a split's scratch buffers are made
    afresh for each call (so calls on different streams never share them).

    The first replay of a launch goes through ``kernel[grid](...)`` and keeps the compiled
    kernel it returns; later replays hand the arguments straight to that compiled kernel's
    launcher, as ``JITFunction.run`` itself does after its checks (see :class:`_FastLaunch`)."""

    __slots__ = ("steps", "scratch", "out_dtypes", "generation", "native")

    def __init__(self, steps: tuple[_Step, ...], scratch: tuple, out_dtypes: tuple) -> None:
        self.steps, self.scratch, self.out_dtypes, self.generation = steps, scratch, out_dtypes, _generation
        # None: not (yet) armed in the compiled replay (rltriton.kernels.native); False:
        # never armed there (scratch buffers, or a launch that is not plain)
        self.native: bool | None = None

    @staticmethod
    def build(records: list, tensors: tuple, outs: tuple[Tensor, ...]) -> Replay | None:
        """A replay of the launches in ``records`` (one entry of :func:`_launch`) when every
        tensor argument is one of the call's ``tensors`` (by position), one of its outputs, or
        one of the scratch buffers made for the call, and the outputs are laid out as
        ``empty_like(tensors[0])`` lays them out; else None."""
        if len(records) != 1 or records[0] is None:
            return None
        specs, scratch = records[0]
        ids_in: dict[int, int] = {}
        for i, t in enumerate(tensors):
            if t is not None:
                if id(t) in ids_in:  # one tensor in two slots: positions would be ambiguous
                    return None
                ids_in[id(t)] = i
        ids_out = {id(o): j for j, o in enumerate(outs)}
        ids_tmp = {id(b): j for j, b in enumerate(scratch)}
        like = tensors[0]
        if any(o.shape != like.shape or o.stride() != like.stride() for o in outs):
            return None
        steps = []
        for kernel, grid, args, kwargs in specs:
            template = list(args)
            slots = []
            for k, a in enumerate(args):
                if isinstance(a, Tensor):
                    if id(a) in ids_out:
                        slots.append((k, 1, ids_out[id(a)]))
                    elif id(a) in ids_in:
                        slots.append((k, 0, ids_in[id(a)]))
                    elif id(a) in ids_tmp:
                        slots.append((k, 2, ids_tmp[id(a)]))
                    else:  # a view made for this call
                        return None
                    template[k] = None
            steps.append(_Step(kernel, grid, template, tuple(slots), kwargs))
        # the grid-barrier counters are the current stream's at each call (None: coop_counters)
        layout = tuple((None, None, b.device) if _is_counters(b) else (b.shape, b.dtype, b.device) for b in scratch)
        return Replay(tuple(steps), layout, tuple(None if o.dtype == like.dtype else o.dtype for o in outs))

    def __call__(self, tensors: tuple) -> tuple[Tensor, ...]:
        like = tensors[0]
        # empty_like without a dtype argument is ~0.3 us cheaper a call (None: like's own)
        outs = tuple([empty_like(like) if d is None else empty_like(like, dtype=d) for d in self.out_dtypes])
        tmp = tuple([coop_counters(dev) if shape is None else torch.empty(shape, dtype=dt, device=dev)
                     for shape, dt, dev in self.scratch]) if self.scratch else ()
        sources = (tensors, outs, tmp)
        for step in self.steps:
            step(sources)
        return outs


def _is_counters(b: Tensor) -> bool:
    """Whether ``b`` is a cooperative split's barrier counters (:func:`coop_counters`): int32,
    two elements (the summaries are float)."""
    return b.dtype == torch.int32 and b.shape == (2,)


def _live_hook(hook):
    """``hook`` (a launch hook of ``triton.knobs.runtime``), or None where calling it would do
    nothing. Triton 3.6 and 3.8 keep each hook as a ``HookChain``, never None, empty unless a
    profiler or the user added to it; the launcher calls a hook it is handed (a Python call
    that loops over nothing) and the launch metadata is computed for it (1.7 us, see
    :class:`_FastLaunch`), so an empty chain is handed on as None, which skips both."""
    return hook if hook is None or getattr(hook, "calls", True) else None


class _FastLaunch:
    """A compiled kernel launched without ``JITFunction.run``'s per-call work (binding ~50
    arguments, computing the specialisation key, looking up the cache: ~20-40 us of host
    time per call with Triton 3.6). Valid only for the exact specialisation it came from:
    every integer argument is fixed by the replay's signature (shapes and strides). The call
    checks the one thing that is not, each tensor's 16-byte alignment: a tensor the
    specialisation took as aligned must still be (a misaligned view goes through
    ``kernel[grid]``, which compiles for it); one it took as unaligned may be either, since
    code compiled without the assumption is right at any address.

    The argument list is kept whole (the recorded integers, then the constexprs) with the
    tensors' slots empty; a call copies it and puts each tensor's address (a Python int) in
    its slot, which Triton's launcher takes as it is. Given a tensor, the launcher calls
    ``data_ptr()`` and asks the driver (``cuPointerGetAttribute``) whether the address is
    device memory, once per pointer argument (13-16 here); the replay's signature already
    fixes every tensor's device. ``POINTERS_AS_INTS = False`` hands the tensors instead (for
    A/B timing, ``benchmarks/host.py``).

    Triton >= 3.4 (``triton.knobs``) launches with every bound argument, constexprs
    included, exactly as done here; older versions keep the slow path."""

    POINTERS_AS_INTS = True
    # False: skip ``CompiledKernel.launch_metadata`` (1.7 us of a 29 us repeated call in a
    # cProfile on the H200, 2026-11-30-h200-s10 notes) when no launch hook is live
    # (_live_hook). Triton 3.6's and 3.8's ``launch_metadata`` return None then anyway (it is
    # read only by the hooks), so skipping it changes nothing but the call and its
    # ~50-argument tuple.
    LAUNCH_METADATA = False

    # Triton 3.6's ``CompiledKernel.run`` is a Python ``CudaLauncher.__call__`` that builds
    # two closures to allocate scratch buffers (none for these kernels) and re-packs the
    # ~50 arguments before its C ``launch``; with no scratch, call that ``launch`` directly.
    # Only for the versions whose convention was checked on a GPU (``_DIRECT_VERSIONS``;
    # Triton 3.8 passes its arguments differently): the others keep ``run``.
    DIRECT_LAUNCHER = True
    _DIRECT_VERSIONS = frozenset({(3, 6)})
    # True: calls go through a function generated for this launch (:meth:`_generate`) that
    # reads each address into a local, checks alignment in one expression and calls the
    # launcher with the arguments written out, instead of :meth:`general`'s loops and list
    # copies; it hands over to :meth:`general` while a launch hook is live or this is False
    # (for A/B timing with the other switches, ``benchmarks/host.py``).
    GENERATED = True

    __slots__ = ("compiled", "grid", "sources", "positions", "must_align", "all_aligned", "values",
                 "device_stream", "runtime", "direct", "call")

    def __init__(self, compiled, grid, slots: tuple, aligned: tuple, template: list, consts: tuple) -> None:
        import triton

        self.compiled, self.grid = compiled, grid
        self.sources = tuple((src, j) for _, src, j in slots)  # where each tensor comes from
        self.positions = tuple(k for k, _, _ in slots)  # its argument slot
        self.must_align = tuple(i for i, a in enumerate(aligned) if a)
        self.all_aligned = all(aligned)
        self.values = [*template, *consts]
        drv = triton.runtime.driver.active
        # torch.cuda.current_device() (Triton's get_current_device) re-checks CUDA's lazy
        # initialisation on every call; the first launch has initialised it
        get_device = getattr(torch._C, "_cuda_getDevice", None) or drv.get_current_device
        self.device_stream = (get_device, drv.get_current_stream)
        # the hooks are read from it at every call (they can be set at any time); an import
        # statement per call costs about a microsecond
        self.runtime = triton.knobs.runtime
        self.direct = self._direct_launch(compiled)
        self.call = self._generate()

    @classmethod
    def _direct_launch(cls, compiled) -> tuple | None:
        """``(launch, cooperative, pdl)`` of Triton 3.6's launcher, for :meth:`__call__` to
        call ``launch`` as ``CudaLauncher.__call__`` would with no scratch buffers, or None."""
        run = compiled.run
        if _triton_version() not in cls._DIRECT_VERSIONS or type(run).__name__ != "CudaLauncher" \
                or getattr(run, "global_scratch_size", 1) or getattr(run, "profile_scratch_size", 1):
            return None
        try:
            return run.launch, run.launch_cooperative_grid, run.launch_pdl
        except AttributeError:
            return None

    @staticmethod
    def make(kernel, compiled, grid, args: list, kwargs: dict, slots: tuple, template: list) -> _FastLaunch | None:
        """The fast launch of a ``_Step`` whose first launch (``args``: ``template`` with the
        tensors of ``slots`` in place) compiled ``compiled``, or None where it cannot be made."""
        try:
            import triton
            from triton import knobs  # noqa: F401  (3.4+: the launch convention used below)
        except ImportError:
            return None
        if compiled is None or not hasattr(compiled, "run") or getattr(triton.knobs.runtime, "interpret", False):
            return None
        consts = _FastLaunch.constexprs(kernel, len(args), kwargs)
        if consts is None:
            return None
        aligned = tuple(args[k].data_ptr() % 16 == 0 for k, _, _ in slots)
        return _FastLaunch(compiled, grid, slots, aligned, template, consts)

    @staticmethod
    def constexprs(kernel, n_args: int, kwargs: dict) -> tuple | None:
        """The values of ``kernel``'s parameters after its first ``n_args`` (its constexprs),
        as the launch bound them: from ``kwargs``, or the parameter's default where the
        launch left one out (e.g. ``SEG_GROUPS`` off flat rows, ``SEG_FLIP`` outside a
        split's PHASE 2), which is what the compiled kernel was specialised with. None when
        one has neither (the launch would not have compiled)."""
        names = getattr(kernel, "arg_names", None)
        if names is None:
            return None
        fn = getattr(kernel, "fn", None)  # the Python function (JITFunction and the interpreter's)
        if fn is None:
            return None
        empty = inspect.Parameter.empty
        defaults = {n: q.default for n, q in inspect.signature(fn).parameters.items() if q.default is not empty}
        rest = names[n_args:]
        if any(n not in kwargs and n not in defaults for n in rest):
            return None
        return tuple(kwargs[n] if n in kwargs else defaults[n] for n in rest)

    def __call__(self, sources: tuple) -> bool:
        """Launch with the tensors of ``sources`` (a replay's (inputs, outputs, scratch)) and
        return True, or return False without launching when a tensor the specialisation took
        as 16-byte aligned is not."""
        return self.call(sources)

    def _generate(self):
        """The launch as one generated function of ``sources`` (see ``GENERATED``): what
        :meth:`general` does with every loop unrolled for this launch's slots and the
        recorded integers written in as literals. Triton's own launcher binds its arguments
        with generated code in the same way."""
        direct = self.direct
        lines = ["def call(sources):", "    if not cls.GENERATED:", "        return general(sources)"]
        for src in sorted({src for src, _ in self.sources}):
            lines.append(f"    s{src} = sources[{src}]")
        names = {}
        for i, (k, (src, j)) in enumerate(zip(self.positions, self.sources)):
            names[k] = f"p{i}"
            lines.append(f"    p{i} = s{src}[{j}].data_ptr()")
        if self.must_align:
            lines += ["    if (" + " | ".join(f"p{i}" for i in self.must_align) + ") & 15:", "        return False"]
        lines += ["    if live(rt.launch_enter_hook) is not None or live(rt.launch_exit_hook) is not None:",
                  "        return general(sources)"]
        env: dict = {}
        values = []
        for k, v in enumerate(self.values):
            if k in names:
                values.append(names[k])
            elif type(v) in (int, bool) or v is None:
                values.append(repr(v))
            else:
                values.append(f"v{k}")
                env[f"v{k}"] = v
        g0, g1 = (int(x) for x in self.grid[:2])
        c = self.compiled
        if direct is not None:
            head = f"launch({g0}, {g1}, 1, gs(gd()), function, {int(direct[1])}, {int(direct[2])}, None, None, packed, "
        else:
            head = f"launch({g0}, {g1}, 1, gs(gd()), function, packed, "
        lines += ["    " + head + "None, None, None, " + ", ".join(values) + ")", "    return True"]
        get_device, get_stream = self.device_stream
        env.update(cls=type(self), general=self.general, live=_live_hook, rt=self.runtime,
                   launch=direct[0] if direct is not None else c.run, gd=get_device, gs=get_stream,
                   function=c.function, packed=c.packed_metadata)
        # the names above become the factory's parameters, so the call reads them as
        # closure cells rather than globals
        body = "\n".join("    " + x for x in [*lines, "return call"])
        factory = f"def factory({', '.join(env)}):\n{body}\n"
        scope: dict = {}
        exec(compile(factory, f"<rltriton fast launch {getattr(c, 'name', '')}>", "exec"), scope)  # noqa: S102
        return scope["factory"](**env)

    def general(self, sources: tuple) -> bool:
        """:meth:`__call__` with the switches read at every call (the generated function's
        fallback)."""
        ptrs = [sources[src][j].data_ptr() for src, j in self.sources]
        if self.all_aligned:  # the usual case: one C-level fold instead of a loop
            if functools.reduce(operator.or_, ptrs, 0) & 15:
                return False
        else:
            for i in self.must_align:
                if ptrs[i] & 15:
                    return False
        values = self.values.copy()
        given = ptrs if self.POINTERS_AS_INTS else [sources[src][j] for src, j in self.sources]
        for k, v in zip(self.positions, given):
            values[k] = v
        c = self.compiled
        get_device, get_stream = self.device_stream
        stream = get_stream(get_device())
        g = self.grid
        rt = self.runtime
        enter, leave = _live_hook(rt.launch_enter_hook), _live_hook(rt.launch_exit_hook)
        meta = c.launch_metadata(g, stream, *values) \
            if self.LAUNCH_METADATA or enter is not None or leave is not None else None
        direct = self.direct
        if direct is not None and self.DIRECT_LAUNCHER:
            direct[0](g[0], g[1], 1, stream, c.function, direct[1], direct[2], None, None, c.packed_metadata, meta,
                      enter, leave, *values)
        else:
            c.run(g[0], g[1], 1, stream, c.function, c.packed_metadata, meta, enter, leave, *values)
        return True


def record(fn, tensors: tuple) -> tuple[tuple[Tensor, ...], Replay | None]:
    """Run ``fn()`` (a Triton call) and return its outputs and a replay of it, if any."""
    global _recorder
    _recorder = records = []
    try:
        outs = fn()
    finally:
        _recorder = None
    return outs, Replay.build(records, tensors, outs)


def _group_scan(pl: Plan, form: str) -> bool:
    """Whether the kernel form ``form`` (one of ``_FORMS``), with chunks that would be in
    time order, takes the two-level group scan instead (``_GROUP_SCAN``): batch-major tiles
    of at least ``_GROUP_SCAN_MIN_T`` steps (and 4, a group), and a row in one chunk or
    split into segments, or walked in chunks for the forms in ``_GROUP_SCAN_LOOP``."""
    if not _GROUP_SCAN or pl.time_major or pl.block_t < max(4, _GROUP_SCAN_MIN_T):
        return False
    return form in _GROUP_SCAN_LOOP or not pl.chunk_loop


def _flat_rows(pl: Plan, form: str) -> bool:
    """Whether a tile of the kernel form ``form`` lays its rows one after another along the
    group axis (``GROUP_TILES = 3``, ``_GROUP_SCAN_FLAT``): batch-major, several rows a
    program, each row one chunk of ``_GROUP_SCAN_FLAT_MIN_T`` to the form's
    ``_GROUP_SCAN_FLAT_MAX_T`` steps, in one pass, and a group for every thread (Triton's
    scan needs an element per thread)."""
    return (_GROUP_SCAN and _GROUP_SCAN_FLAT and not pl.time_major and pl.block_n > 1 and pl.segments == 1
            and pl.seg_len <= pl.block_t
            and max(4, _GROUP_SCAN_FLAT_MIN_T) <= pl.block_t <= _GROUP_SCAN_FLAT_MAX_T.get(form, 0)
            and pl.block_n * pl.block_t // 4 >= 32 * pl.num_warps)


def _with_loop_registers(meta: dict, pl: Plan, form: str) -> dict:
    """``meta`` with the register cap of ``_LOOP_MAXNREG`` for ``form`` when ``pl`` walks each
    row in chunks in one pass (batch-major)."""
    cap = _LOOP_MAXNREG.get(form)
    if cap and not pl.time_major and pl.chunk_loop:
        return {**meta, "maxnreg": cap}
    return meta


def _with_register_caps(meta: dict, pl: Plan, form: str, R: int, device: torch.device) -> dict:
    """``meta`` with session 47's register cap for ``form`` where ``pl`` runs more programs than
    ``device`` has SMs (fewer are resident whatever their registers): ``_TM_LANES_MAXNREG``'s on
    the time-major lanes tiles, ``_LANES_MAXNREG``'s on the (batch-major) lanes tiles,
    ``_WHOLE_ROW_MAXNREG``'s where a program holds a whole batch-major row of 1025 to 4096
    steps in one chunk of 2048 or 4096."""
    if _cdiv(R, pl.block_n) <= _device_sms(device):
        return meta
    if pl.tm_lanes:
        cap = _TM_LANES_MAXNREG.get(form)
    elif pl.lanes:
        cap = _LANES_MAXNREG.get(form)
    elif (not pl.time_major and pl.segments == 1 and pl.block_n == 1 and pl.block_t in (2048, 4096)
          and pl.seg_len <= pl.block_t):
        cap = _WHOLE_ROW_MAXNREG.get(form)
    else:
        cap = None
    return {**meta, "maxnreg": cap} if cap else meta


def _desc_tiles(pl: Plan, form: str, T: int) -> bool:
    """Whether a batch-major tile in time order of the kernel form ``form`` for rows of
    ``T`` steps holds its steps in descending time instead (``GROUP_TILES = 6``,
    ``_DESC_MAX_T``, ``_DESC_FORMS``, ``_DESC_ALIGNED_FORMS``)."""
    return (not pl.time_major and pl.block_t <= _DESC_MAX_T and form in _DESC_FORMS
            and (T % 8 != 0 or form in _DESC_ALIGNED_FORMS))


def _tm_groups(pl: Plan) -> int:
    """The thread groups along time of a time-major lanes plan (the kernels' ``TM_W``, see
    :func:`scan.chunk_times`): its warps, each a group where the tile has 32 rows or more;
    a tile of fewer rows (``block_n`` < 32, one a lane) leaves each warp ``32 / block_n``
    lanes along time, each a group of its own."""
    return pl.num_warps * max(1, 32 // pl.block_n)


def _with_group_scan(meta: dict, pl: Plan, form: str, T: int) -> dict:
    """``meta`` with ``GROUP_TILES = 5`` and its warps (``TM_W``) for a time-major lanes plan
    (``Plan.tm_lanes``), ``GROUP_TILES = 4`` for a lanes plan (``Plan.lanes``; its tiles need no
    reshape, so Triton 3.6 takes them too), else ``6`` (descending time) where
    :func:`_desc_tiles` says so for rows of ``T`` steps, else ``3`` where :func:`_flat_rows` says so (and
    ``SEG_GROUPS`` with ``_FLAT_SEGMENTED``), else ``2`` where :func:`_group_scan` does
    (chunks in time order otherwise, ``GROUP_TILES = False``: Triton < 3.7)."""
    if pl.tm_lanes:
        return {**meta, "GROUP_TILES": 5, "TM_W": _tm_groups(pl)}
    if pl.lanes:
        return {**meta, "GROUP_TILES": 4}
    if meta["GROUP_TILES"] is not False:
        return meta
    if _desc_tiles(pl, form, T):
        return {**meta, "GROUP_TILES": 6}
    if _flat_rows(pl, form):
        # the scan over the groups segmented at each row's first group (scan.group_scan's
        # SEG_GROUPS); TD(lambda)'s scan already cuts where its coefficient is 0 (its kernel
        # has no SEG_GROUPS)
        seg = {"SEG_GROUPS": pl.block_t // 4} if _FLAT_SEGMENTED and form != "td_lambda" else {}
        return {**meta, "GROUP_TILES": 3, **seg}
    if _group_scan(pl, form):
        return {**meta, "GROUP_TILES": 2}
    return meta


def launch_specs(kernel, lanes: int, T: int, pl: Plan, args: list, meta: dict, dtype: torch.dtype,
                 device) -> tuple[list[tuple], list[Tensor] | None]:
    """The kernel launches of one call, as ``(kernel, grid, args, kwargs)``, and the scratch
    buffers made for them (None: some cannot be remade by a replay): one pass (PHASE 0),
    the two passes of the time split, or the single look-back pass. ``args`` are the kernel's arguments up to ``T``
    (exclusive); ``lanes`` rows are tiled by the plan."""
    rows_grid = _cdiv(lanes, pl.block_n)
    common = dict(BLOCK_N=pl.block_n, BLOCK_T=pl.block_t, num_warps=pl.num_warps,
                  ONE_CHUNK=pl.seg_len <= pl.block_t, TIME_MAJOR=pl.time_major, STAGES=pl.stages,
                  **meta)
    if pl.segments == 1:
        full = [*args, T, pl.seg_len, args[0], args[0], args[0], args[0]]
        return [(kernel, (rows_grid, 1), full, dict(PHASE=0, S_BLOCK=1, **common))], []
    if pl.lookback:
        # state[0]: ticket counter; state[1 + row * segments + seg]: 0 / 1 aggregate / 2 inclusive
        state = torch.zeros(1 + lanes * pl.segments, dtype=torch.int32, device=device)
        maps = torch.empty((3, lanes * pl.segments), dtype=dtype, device=device)
        full = [*args, T, pl.seg_len, maps[0], maps[1], maps[2], state]
        # S_BLOCK: the look-back window, at least one element per thread (as below)
        window = max(32, 32 * pl.num_warps // pl.block_n)
        # not replayable: the flags must start zeroed, and the maps are views of one buffer
        return [(kernel, (rows_grid * pl.segments, 1), full, dict(PHASE=3, S_BLOCK=window, **common))], None
    # summaries: [lanes, segments], segment-major for time-major tiles (scan.summary_strides)
    sum_a = torch.empty(lanes * pl.segments, dtype=dtype, device=device)
    sum_b = torch.empty(lanes * pl.segments, dtype=dtype, device=device)
    grid = (rows_grid, pl.segments)
    # the summary tile of the carry-in scan also needs an element per thread (time-major:
    # its block_n rows count too; with 128 rows the segments stay inside the threads)
    threads = 32 * pl.num_warps
    s_block = max(_next_pow2(pl.segments), _cdiv(threads, pl.block_n) if pl.time_major or pl.tm_lanes else threads)
    full = [*args, T, pl.seg_len, sum_a, sum_b, sum_a, args[0]]
    if pl.coop:
        if device.type != "cuda":
            # the interpreter runs programs one after another: PHASE 5 (no barrier) twice,
            # the first launch storing every segment's map, the second composing the carries
            # (the first launch's programs read the maps of segments not yet run, whose
            # outputs the second overwrites: identity maps there, not uninitialised memory,
            # keep those discarded carries finite)
            sum_a.zero_()
            sum_b.fill_(1.0)
            spec = (kernel, grid, full, dict(PHASE=5, S_BLOCK=s_block, **common))
            return [spec, spec], [sum_a, sum_b]
        state = coop_counters(device)
        coop = [*full[:-1], state]  # the barrier's counters in the state slot
        kw = dict(PHASE=4, S_BLOCK=s_block, launch_cooperative_grid=True, **common)
        if _coop_fits(kernel, coop, grid, kw, device):
            return [(kernel, grid, coop, kw)], [sum_a, sum_b, state]
    # PHASE 2 only: PHASE 1 has no use for it
    flip = _SEG_FLIP and not pl.time_major and lanes * T >= _SEG_FLIP_MIN_ELEMS
    # _PDL: both passes compile the grid dependency in, PHASE 2 launches with the attribute and
    # waits at its start or, _PDL_LATE, at its first read of the summaries
    pdl: list[dict] = [{}, {}]
    if _pdl(device):
        wait = (dict(PDL=False, CARRY_PROD=int(common.get("CARRY_PROD", False)) + CARRY_WAIT.value) if _PDL_LATE
                else dict(PDL=True))
        pdl = [dict(PDL=True), dict(launch_pdl=True, **wait)]
    return [(kernel, grid, full, {"PHASE": phase, "S_BLOCK": s_block, "SEG_FLIP": flip and phase == 2, **common,
                                  **pdl[phase - 1]})
            for phase in (1, 2)], [sum_a, sum_b]


# grid-barrier counters of the cooperative split, per (device, stream): the kernel leaves
# them 0, so launches in order on one stream share them; launches on two streams never do
_coop_state: dict[tuple[int, int], Tensor] = {}


def coop_counters(device: torch.device) -> Tensor:
    """The two int32 counters (zero) that a cooperative split's grid barrier
    (``scan.grid_barrier``) uses on the current stream of ``device``. While a CUDA graph is
    captured, new ones for each call (zeroed in the graph), so a replay of the graph never
    shares them with launches outside it."""
    if torch.cuda.is_current_stream_capturing():
        return torch.zeros(2, dtype=torch.int32, device=device)
    stream = torch.cuda.current_stream(device)
    key = (stream.device_index, stream.cuda_stream)
    state = _coop_state.get(key)
    if state is None:
        state = _coop_state[key] = torch.zeros(2, dtype=torch.int32, device=device)
    return state


_coop_fit_cache: dict[tuple, bool] = {}


def _coop_fits(kernel, args: list, grid: tuple[int, int], kwargs: dict, device: torch.device) -> bool:
    """Whether every program of a cooperative launch ``kernel[grid](*args, **kwargs)`` can
    be resident at once: programs per SM from the compiled kernel's registers, warps and
    shared memory (as the CUDA occupancy calculator counts them), times the SMs. Compiles
    the kernel (Triton's warmup, no launch) the first time for each key. Were the count
    too high, the driver would refuse the cooperative launch (an error, not a hang)."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    key = (kernel, index, grid, tuple(sorted(kwargs.items())))
    fits = _coop_fit_cache.get(key)
    if fits is None:
        compiled = kernel.warmup(*args, grid=grid, **kwargs)
        props = torch.cuda.get_device_properties(index)
        warps = compiled.metadata.num_warps
        compiled._init_handles()  # loads the module: n_regs is known from then on
        warp_regs = _cdiv(max(compiled.n_regs, 1) * 32, 256) * 256  # allocated per warp in 256s
        per_sm = min(getattr(props, "regs_per_multiprocessor", 65536) // (warp_regs * warps),
                     getattr(props, "max_threads_per_multi_processor", 2048) // (32 * warps), 32)
        shared = compiled.metadata.shared
        if shared:
            per_sm = min(per_sm, getattr(props, "shared_memory_per_multiprocessor", 233472) // (shared + 1024))
        fits = _coop_fit_cache[key] = grid[0] * grid[1] <= per_sm * props.multi_processor_count
    return fits


@functools.lru_cache(maxsize=32)
def _stride_slots(kernel, axis: str) -> tuple[int, ...]:
    """The positions among ``kernel``'s arguments of its per-step strides along ``axis``:
    ``"n"``, the row strides (``s_*_n`` with an ``s_*_t`` beside it, which it passes through
    ``scan.aligned`` with ``ROW_DIV``; not the per-row last value's or initial trace's), or
    ``"t"``, the time strides (``s_*_t`` with an ``s_*_n`` beside it, with ``TM_DIV``)."""
    names = kernel.arg_names
    other = {"n": "t", "t": "n"}[axis]
    return tuple(i for i, n in enumerate(names)
                 if n.startswith("s_") and n.endswith(f"_{axis}") and f"{n[:-2]}_{other}" in names)


def _row_div(kernel, args: list, T: int, pl: Plan) -> dict:
    """``ROW_DIV`` for a launch of ``kernel`` with ``args`` over rows of ``T`` steps under
    ``pl`` (``_ROW_DIV``): the largest power of two, 2, 4 or 8, that divides T and every
    per-step row stride, which ``scan.aligned`` shows to Triton; none where Triton's own
    specialisation (divisible by 16) says as much, where no power of two does, or for tiles of
    fewer than ``_ROW_DIV_MIN_T`` steps. On the time-major tiles (``Plan.time_major``,
    ``Plan.tm_lanes``: time-major storage) it is ``TM_DIV`` instead (``_TM_DIV``): the same
    for the row count R and every per-step time stride, as those tiles' vectors run along
    rows (their mask is ``row < R``)."""
    if not _ROW_DIV:
        return {}
    if pl.time_major or pl.tm_lanes:
        if not _TM_DIV:
            return {}
        key, values = "TM_DIV", (args[kernel.arg_names.index("R")], *(args[i] for i in _stride_slots(kernel, "t")))
    elif pl.block_t < _ROW_DIV_MIN_T:
        return {}
    else:
        key, values = "ROW_DIV", (T, *(args[i] for i in _stride_slots(kernel, "n")))
    d = 16
    for v in values:
        while d > 1 and v % d:
            d //= 2
    return {key: d} if 1 < d < 16 else {}


# Every per-step tensor of a backward kernel's call in contiguous rows of T steps (row stride T,
# time stride 1: a caller's [N, T] tensors, and our outputs laid out like its rewards) is
# shown to the kernel as such (_ROWS_T, the kernels' ROWS_T): each per-step row stride is then
# T itself, one row offset serves every tensor, where each took its own multiply from its own
# stride argument. SASS a thread (Triton 3.6, benchmarks/sass_counts.py): TD(lambda) [2, 128] on
# 2 warps 216 -> 192, GAE [2, 128] 240 -> 224 and [4, 64] 280 -> 264, V-trace [4, 64] 296 -> 272
# and [2, 128] 296 -> 264, Retrace [4, 64] 408 -> 368. Timed in session 43 (H200, an A/B off ->
# on twice, benchmarks/results/2026-12-04-h200-s43-ab-rows-t.txt): 0.1-0.3 us faster on most
# one-chunk rows (TD(lambda) 16384 x 128 5.7 -> 5.4, 16384 x 32 2.4 -> 2.2, GAE 4096 x 512 6.9
# -> 6.7, V-trace 512 x 2048 6.1 -> 5.9, Retrace 8192 x 64 3.3 -> 3.0), slower on the plans
# it is therefore not taken on (_rows_t_plan): chunk loops and time splits (Retrace 512 x 4096,
# [1, 1024] chunks: 18.7 -> 20.4; the shared offset lives across the loop), GAE's rows on 16
# warps (512 x 4096, [1, 4096]: 52 -> 70 registers, one program an SM where two fitted: 9.0 ->
# 11.6), discounted returns' lazy cut on tiles of 1024 elements or more ([8, 128] on 2 warps,
# 8192 x 128 3.1 -> 3.4, 16384 x 128 4.5 -> 4.6; 56 -> 59 registers), and the tiles of
# _ROWS_T_SLOWER, 0.1-0.3 us slower in every run of a second A/B with the gate above
# (2026-12-04-h200-s43-ab-rows-t-gate.txt): V-trace's [2, 128] (8192 x 128 4.4 -> 4.7 and 4.5
# -> 4.6, 4096 x 128 3.1 -> 3.2 twice) and the 8-step rows a thread of V-trace and of
# TD(lambda)'s kernel (32768 x 8: V-trace 2.4 -> 2.5, discounted returns 1.8 -> 1.9, each in
# all four runs; Retrace's and GAE's gain or tie and keep it).
_ROWS_T = True
_ROWS_T_KERNELS = frozenset({"gae_kernel", "td_lambda_kernel", "vtrace_kernel", "retrace_kernel"})
_ROWS_T_GAE_MAX_WARPS = 8
_ROWS_T_LAZY_MAX_ELEMS = 512
_ROWS_T_SLOWER = frozenset({("vtrace_kernel", 2, 128), ("vtrace_kernel", 32, 8), ("td_lambda_kernel", 32, 8)})


def _rows_t_plan(kernel, T: int, pl: Plan, meta: dict) -> bool:
    """Whether plan ``pl`` of ``kernel`` over rows of ``T`` steps is one ``ROWS_T`` gains on
    (see ``_ROWS_T``): one chunk a row in one pass, and neither GAE on more than
    ``_ROWS_T_GAE_MAX_WARPS`` warps nor a lazy cut on tiles of more than
    ``_ROWS_T_LAZY_MAX_ELEMS`` elements, nor a tile of ``_ROWS_T_SLOWER``."""
    name = kernel.fn.__name__
    if pl.segments != 1 or pl.block_t < T or (name, pl.block_n, pl.block_t) in _ROWS_T_SLOWER:
        return False
    if name == "gae_kernel" and pl.num_warps > _ROWS_T_GAE_MAX_WARPS:
        return False
    return not (meta.get("LAZY_CUT", False) and pl.block_n * pl.block_t > _ROWS_T_LAZY_MAX_ELEMS)


def _rows_t(kernel, args: list, T: int, pl: Plan, meta: dict) -> dict:
    """``ROWS_T`` for a launch of ``kernel`` (a kernel of ``_ROWS_T_KERNELS``) with ``args``
    over rows of ``T`` steps by plan ``pl`` with constexprs ``meta`` (``_ROWS_T``, where
    :func:`_rows_t_plan` allows it): where every per-step tensor's (row stride, time stride)
    is (T, 1), or (0, 0) for an absent one (its pointer the rewards', ``args[0]``, as
    ``run_backward`` passes it: the kernel reads nothing through it). A broadcast input
    (gamma of one value a row, a stride 0) keeps its own strides: no flag."""
    if not _ROWS_T or kernel.fn.__name__ not in _ROWS_T_KERNELS or not _rows_t_plan(kernel, T, pl, meta):
        return {}
    names = kernel.arg_names
    for i in _stride_slots(kernel, "n"):
        strides = (args[i], args[names.index(names[i][:-2] + "_t")])
        if strides != (T, 1) and not (strides == (0, 0) and args[i - 1] is args[0]):
            return {}
    return {"ROWS_T": True}


def _launch(kernel, lanes: int, T: int, pl: Plan, args: list, meta: dict, dtype: torch.dtype, device) -> None:
    """Issue the launches of :func:`launch_specs`; record a replayable one for :func:`record`."""
    meta = {**meta, **_row_div(kernel, args, T, pl), **_rows_t(kernel, args, T, pl, meta)}
    specs, scratch = launch_specs(kernel, lanes, T, pl, args, meta, dtype, device)
    if _recorder is not None:
        _recorder.append((specs, scratch) if scratch is not None else None)
    for k, grid, a, kw in specs:
        k[grid](*a, **kw)


@functools.lru_cache(maxsize=1024)
def split_scalar(x: float) -> tuple[float, float]:
    """``x`` as float32 ``hi + lo`` (Triton passes Python floats as float32)."""
    hi = struct.unpack("f", struct.pack("f", x))[0]
    lo = struct.unpack("f", struct.pack("f", x - hi))[0]
    return hi, lo


def merged_strides(shape: tuple[int, ...], strides: tuple[int, ...], tdim: int) -> tuple[int, int] | None:
    """(row stride, time stride) of a ``[*B, T]`` tensor (time at ``tdim``) read as
    ``[rows, T]``, or None when its batch dims do not merge into one stride.

    Pure arithmetic on the metadata: batch-major ``[N, T]``, time-major ``[T, N]``,
    ``[T, B1, B2]`` and broadcast (stride 0) batches all merge; only hand-made views that
    interleave their batch dims do not. ``tdim = -1`` reads every dim as a batch dim.
    """
    row_stride, expected = 0, None
    for i in range(len(shape) - 1, -1, -1):
        if i == tdim or shape[i] == 1:
            continue
        if expected is None:
            row_stride = strides[i]
        elif strides[i] != expected:
            return None
        expected = strides[i] * shape[i]
    return row_stride, (strides[tdim] if tdim >= 0 else 0)


class _Rows:
    """Pointer and [rows, T] strides of the caller's tensors; copies (reshape) only the
    rare layouts whose batch dims do not merge."""

    __slots__ = ("p",)

    def __init__(self, p: Problem) -> None:
        self.p = p

    def __call__(self, x: Tensor | None, kind: str = "step") -> tuple[Tensor | None, int, int]:
        if x is None:
            return None, 0, 0
        p = self.p
        st = merged_strides(x.shape, x.stride(), p.time_dim if kind == "step" else -1)
        if st is None:
            x = p._view(x, kind).reshape(-1, p.T) if kind == "step" else x.reshape(-1)
            st = (x.stride(0), x.stride(1) if kind == "step" else 0)
        return x, st[0], st[1]


def _dt(p: Problem):
    return tl.float64 if p.dtype == torch.float64 else tl.float32


def _output(p: Problem, caller: Tensor, like: tuple[Tensor, int, int]) -> tuple[Tensor, int, int]:
    """An output of the caller's shape laid out like ``caller`` (the caller's rewards) and
    its [rows, T] strides (``like``: the rewards as returned by ``_Rows``); time-last
    contiguous, then moved to ``time_dim``, when that layout does not merge (``_Rows`` then
    read a copy, and the output must still come back in the caller's shape)."""
    out = empty_like(caller, dtype=p.dtype)
    out_stride = out.stride()
    if like[0] is caller and out_stride == caller.stride():  # read in place, dense: same strides
        return out, like[1], like[2]
    st = merged_strides(out.shape, out_stride, p.time_dim)
    if st is None:
        flat = empty(p.shape, dtype=p.dtype, device=p.device)
        return flat.movedim(-1, p.time_dim), p.T, 1
    return out, st[0], st[1]


def _coef(c, rows: _Rows, dummy: Tensor) -> tuple[Tensor, int, int, float, float, bool]:
    """(pointer, stride_n, stride_t, hi, lo, is_tensor) for gamma or lam."""
    if isinstance(c, Tensor):
        ptr, sn, st = rows(c.expand(rows.p.user_shape))
        return ptr, sn, st, 0.0, 0.0, True  # type: ignore[return-value]
    hi, lo = split_scalar(float(c))
    return dummy, 0, 0, hi, lo, False


def _common(p: Problem, rows: _Rows, dummy: Tensor) -> tuple[list, dict]:
    """Arguments shared by the backward kernels: flags, boundary form, gamma, lam."""
    raw = p.raw
    term = rows(raw.get("terminated"))
    trunc = rows(raw.get("truncated"))
    if "next_values" in raw:
        nv, mode = rows(raw["next_values"]), _NV_NEXT
    elif "bootstrap_values" in raw:
        nv, mode = rows(raw["bootstrap_values"]), _NV_BOOTSTRAP
    else:
        nv, mode = (None, 0, 0), (_NV_LAST if "last_value" in raw else _NV_NONE)
    lv = rows(raw.get("last_value"), "row")
    g = _coef(p.gamma_raw, rows, dummy)
    lm = _coef(p.lam_raw, rows, dummy)
    args = [
        term[0] if term[0] is not None else dummy, term[1], term[2],
        trunc[0] if trunc[0] is not None else dummy, trunc[1], trunc[2],
        nv[0] if nv[0] is not None else dummy, nv[1], nv[2],
        lv[0] if lv[0] is not None else dummy, lv[1],
        *g[:5], *lm[:5],
    ]
    meta = dict(
        HAS_TERM=term[0] is not None, HAS_TRUNC=trunc[0] is not None, NV_MODE=mode,
        G_TENSOR=g[5], L_TENSOR=lm[5], DT=_dt(p), GROUP_TILES=_GROUP_TILES, SEG_MAP_FWD=_SEGMENT_MAP_FORWARD,
    )
    return args, meta


# Discounted returns' short-row tiles (td_lambda_kernel without values, a last_value or none,
# no truncations, scalar gamma, float32), by the rows' length (next power of two): (elements
# of the tile, elements a warp), on at least _DR_SHORT_TILE_MIN_PROGRAMS programs an SM of
# that tile. Rows of 65-128 steps take [4, 128] tiles on 2 warps (8 elements a thread) in
# place of [2, 128] on 2 warps. Found by `device_run.sh sweep-128` (16384 x 128: 6.5 -> 5.8 us).
# H200, Triton 3.6, device us (benchmarks/ab.py, 2026-12-02-h200-s28-ab-short-tiles.txt and
# -s28-ab-row-iters.txt), [2, 128] -> [4, 128]: 8192 x 128 4.1 -> 3.6 (4.0 -> 3.6, 4.0 -> 3.7 in
# two repeats), 16384 x 128 6.5 -> 5.8 (6.4 -> 5.9), 32768 x 128 11.8 -> 10.0, 16384 x 100
# 6.5 -> 5.4 (6.5 -> 5.5); 4096 x 128 2.8 -> 2.8, 2048 x 128 (3.9 programs an SM) 2.2 -> 2.1.
# The same tiles lost for the kernels that read more a step: GAE 16384 x 128 7.1 -> 8.4,
# TD(lambda) 6.9 -> 7.5, V-trace 9.9 -> 15.1, and so did [1, 128] tiles on one warp for all four
# (discounted returns 16384 x 128 6.5 -> 11.2), so only discounted returns take them; with
# truncations or per-step bootstrap values (one more access a step) it was not timed.
_DR_SHORT_TILES: dict[int, tuple[int, int]] = {128: (512, 256)}
_DR_SHORT_TILE_MIN_PROGRAMS = 4.0


def _scalar_returns_to_the_edge(p: Problem, meta: dict) -> bool:
    """Whether this ``td_lambda_kernel`` call (``meta``: ``_common``'s) is discounted returns
    bootstrapped at the window edge at most (:func:`_returns_to_the_edge`) with a scalar gamma:
    the calls ``_DR_SHORT_TILES`` and ``_DR_TM_LANES_ANY`` were timed on."""
    return _returns_to_the_edge(meta, "values" in p.raw) and not meta["G_TENSOR"]


def _dr_short_tile(p: Problem, R: int, meta: dict) -> tuple[int, int] | None:
    """Discounted returns' short-row tile (``_DR_SHORT_TILES``) for this ``td_lambda_kernel``
    call (``meta``: ``_common``'s), or None."""
    tile = _DR_SHORT_TILES.get(_next_pow2(max(p.T, 1)))
    if tile is None or not _scalar_returns_to_the_edge(p, meta) or p.dtype != torch.float32:
        return None
    if _cdiv(R, tile[0] // _next_pow2(p.T)) < _DR_SHORT_TILE_MIN_PROGRAMS * _device_sms(p.device):
        return None
    return tile


def _td_wide_lanes(p: Problem, R: int, meta: dict) -> float | None:
    """The fewest programs an SM from which this ``td_lambda_kernel`` call (``meta``:
    ``_common``'s) takes the 128-step lanes tiles (``_TD_WIDE_LANES``; discounted returns
    ``_DR_WIDE_LANES_MIN_PROGRAMS``, TD(lambda) ``_TD_WIDE_LANES_MIN_PROGRAMS``), or None where
    it may not: they are for TD(lambda) or discounted returns on rows of exactly 128 steps,
    float32, a last_value or none, no truncations, scalar gamma and lam, and at most
    ``_TD_WIDE_LANES_MAX_BYTES`` read and written (rewards, values, terminations, returns)."""
    if not _TD_WIDE_LANES or p.T != _TD_WIDE_LANES_T or p.dtype != torch.float32 or meta["G_TENSOR"] \
            or not _bootstrapped_at_the_edge(meta):
        return None
    raw = p.raw
    step_bytes = p.dtype.itemsize + sum(raw[k].element_size() for k in ("rewards", "values", "terminated")
                                        if raw.get(k) is not None)
    if R * p.T * step_bytes > _TD_WIDE_LANES_MAX_BYTES:
        return None
    return _TD_WIDE_LANES_MIN_PROGRAMS if raw.get("values") is not None else _DR_WIDE_LANES_MIN_PROGRAMS


# TD(lambda)'s kernel (TD(lambda), discounted returns) on a single pass of batch-major rows
# whose one chunk is exactly the row (T == BLOCK_T: rows of a power of two steps up to a
# whole-row chunk; for time-major storage see below) takes T
# as the constant BLOCK_T and the segment as 0 (td_lambda_kernel's EXACT_T), so the t < T and
# t = T - 1 tests fold: SASS a thread (Triton 3.6, sm_90a), TD(lambda) [2, 128] on 2 warps
# 244 -> 216, discounted returns [4, 128] 382 -> 323, its lanes tile [8, 64] 320 -> 267. H200,
# Triton 3.6, device us (benchmarks/ab.py, 2026-12-02-h200-s28-ab-exact-t.txt, two runs), every
# backward kernel with it -> without: TD(lambda) 4096 x 512 6.4 -> 5.8 and 6.5 -> 5.8,
# 16384 x 128 6.9 -> 6.8, 7.0 -> 6.9, 32768 x 128 14.1 -> 13.8; discounted returns 4096 x 512
# 5.8 -> 5.4 twice, 16384 x 128 5.8 -> 5.6 twice, 32768 x 128 9.9 -> 9.7, 32768 x 64 4.9 ->
# 4.7; 512 x 2048 within 0.1 either way. GAE lost at 16384 x 128 (6.6 -> 6.8, 6.7 -> 6.9) and
# V-trace at 4096 x 512 (9.8 -> 10.1, 9.9 -> 10.1) although each gained elsewhere (GAE
# 4096 x 512 7.2 -> 6.7, V-trace 16384 x 128 10.1 -> 9.9), so only TD(lambda)'s kernel takes it.
# Session 29: the time-major lanes tiles of whole rows (Plan.tm_lanes) take it too, the same fold
# (device us, benchmarks/ab.py, 2026-12-02-h200-s29-ab-tm-exact-t.txt, two runs, time-major
# storage): TD(lambda) 16384 x 128 8.2 -> 6.3 and 6.2, 32768 x 64 7.1 -> 5.8 and 6.9 -> 5.7;
# discounted returns 16384 x 128 6.2 -> 5.3, 32768 x 64 5.6 -> 4.8 and 5.7 -> 4.7, 16384 x 64
# 3.8 -> 3.5; 4096-8192 x 8-128 and 16384 x 16 within 0.2 either way. The time-major tiles
# (Plan.time_major, 32768 x 128) keep the runtime T.
_EXACT_T = True
# V-trace's and Retrace's sampled-form kernels take it too since session 42, on batch-major
# storage only (the time-major lanes tiles were not faster with it: V-trace 16384 x 64 6.4 ->
# 6.3, 32768 x 64 13.1 -> 13.4), V-trace on rows of at most _EXACT_T_MAX_T["vtrace"] steps.
# SASS a thread (Triton 3.6, benchmarks/sass_counts.py), without -> with: V-trace [4, 64] on 2
# warps 336 -> 296 (55 -> 48 registers), [2, 128] 328 -> 296, [16, 32] on 4 warps 296 -> 264,
# [1, 512] on 4 warps 352 -> 336; Retrace [4, 64] on one warp 472 -> 408. H200, Triton 3.6,
# device us (benchmarks/ab.py, 2026-12-04-h200-s42-ab-vtrace-exact.txt, two runs, and
# -s42-ab-exact-gae-retrace-vtrace.txt): V-trace 16384 x 64 5.8 -> 5.6 (three runs alike),
# 32768 x 64 10.8 -> 10.2, 8192 x 128 4.8 -> 4.5, 16384 x 128 10.3 -> 9.9, 32768 x 32 4.6 ->
# 4.2, 16384 x 32 3.0 -> 2.8, 4096 x 16 2.2 -> 1.8; but 4096 x 512 9.8 -> 9.9 and 9.9 -> 10.1
# (session 28 likewise: 9.8 -> 10.1 twice), hence the bound; Retrace 4096 x 512 13.2 -> 12.8,
# 8192 x 128 4.9 -> 4.7, 16384 x 128 13.4 -> 13.2, 16384 x 32 3.3 -> 3.1; as shipped, against
# the session's start (-s42-ab-exact-final.txt, two runs): V-trace 16384 x 32 3.1 -> 2.9 twice,
# 8192 x 128 4.7 -> 4.5 and 4.6, 16384 x 128 9.8 -> 9.6, 9.9 -> 9.8; Retrace 4096 x 512 12.9 ->
# 12.6, 12.8 -> 12.7, 8192 x 128 4.9 -> 4.8 twice; TD(lambda) within 0.1. GAE stays without it:
# mixed again (4096 x 512 6.8 -> 6.4, but 16384 x 128 7.1 -> 7.3, as in session 28).
_EXACT_T_FORMS = frozenset({"td_lambda", "discounted_returns", "vtrace", "retrace", "forward"})  # (forward: below)
_EXACT_T_MAX_T = {"vtrace": 128}
# ... and on the time-major lanes tiles of whole rows (Plan.tm_lanes), these forms' kernels.
# Session 55 gave GAE's kernel and the forward kernel (traces, prefix sums) EXACT_T too. SASS a
# thread (Triton 3.6, benchmarks/sass_counts.py), without -> with: the forward kernel's
# time-major lanes tiles [64, 128] 640 -> 456, [32, 128] 512 -> 336, [64, 64] 616 -> 440,
# [32, 256] 528 -> 336; its batch-major [1, 2048] 376 -> 320, [1, 512] 192 -> 160, [16, 128]
# 264 -> 224; GAE [64, 128] 720 -> 688, [32, 128] 656 -> 520. H100, Triton 3.6, device us
# (benchmarks/ab.py, `device_run.sh s55-exact`, 2026-12-07-h100-s55-exact-tm.txt, -bm.txt),
# without -> with: time-major traces 16384 x 128 6.1 -> 4.9, 4096 x 128 3.3 -> 2.8, 4096 x 256
# 4.9 -> 4.1, 32768 x 64 5.1 -> 4.6, prefix sums 16384 x 128 6.1 -> 5.0, 32768 x 64 5.2 -> 4.4,
# none of 15 shapes slower; batch-major traces 512 x 4096 5.8 -> 5.5, 4096 x 512 4.7 -> 4.4,
# 512 x 2048 3.3 -> 3.1, 4096 x 128 ([8, 128]) 2.4 -> 2.3, but 16384 x 128 ([16, 128]) 4.5 ->
# 4.6 and prefix sums 32768 x 64 ([32, 64]) 4.3 -> 4.5, hence at most _EXACT_T_MAX_ROWS rows a
# program there. GAE on the time-major lanes tiles was mixed (4096 x 128 3.9 -> 3.7, 16384 x 128
# 11.5 -> 11.1, 4096 x 256 6.7 -> 6.1, but 8192 x 128 5.8 -> 6.0, 16384 x 64 5.0 -> 5.2, 32768 x 8
# 2.4 -> 2.6) and keeps the runtime T (its kernel takes EXACT_T, tested, off).
_EXACT_T_TM_LANES = frozenset({"td_lambda", "discounted_returns", "forward"})
_EXACT_T_MAX_ROWS = {"forward": 8}  # rows a program at most, batch-major


def _exact_t(pl: Plan, T: int, form: str) -> bool:
    """Whether a call of the kernel form ``form`` (``split_form`` of :func:`run_backward`: TD(lambda)
    and discounted returns apart, Retrace's action form as ``retrace_actions``) on plan ``pl``
    takes T as the constant BLOCK_T and its segment as 0 (the kernels' ``EXACT_T``,
    ``_EXACT_T``): one pass whose one chunk is exactly the row, for the forms of
    ``_EXACT_T_FORMS`` on batch-major storage (at most their ``_EXACT_T_MAX_ROWS`` rows a
    program) and of ``_EXACT_T_TM_LANES`` on the time-major lanes tiles (every form on its
    ``exact`` tiles, ``TmLanesTile.exact``), on rows of at most their ``_EXACT_T_MAX_T`` steps."""
    if not _EXACT_T or pl.time_major or T > _EXACT_T_MAX_T.get(form, T):
        return False
    if pl.tm_lanes:
        # (an ``exact`` tile is taken by rows of exactly its length only, for their EXACT_T)
        tile = _TM_LANES_TILES.get(form, {}).get(pl.block_t)
        if form not in _EXACT_T_TM_LANES and not (tile is not None and tile.exact):
            return False
    elif form not in _EXACT_T_FORMS:
        return False
    if not pl.tm_lanes and pl.block_n > _EXACT_T_MAX_ROWS.get(form, pl.block_n):
        return False
    return pl.segments == 1 and pl.seg_len == pl.block_t == T


# The segments of a two-pass split before a row's last one (one chunk a segment, one row a
# program, batch-major) run a chunk with no test against T (the INTERIOR of td_lambda_kernel,
# gae_kernel, vtrace_kernel, retrace_kernel and forward_kernel):
# their times are constants and there is no masked step, row end or bootstrap at T - 1.
# The kernels of the long split are bound by issued instructions (Nsight Compute, H200,
# Triton 3.6: PHASE 1 of discounted returns at 16 x 262144 issues on 75% of cycles against
# a streaming kernel's 15%), and the tests and selects on T were about a quarter of them.
_INTERIOR = True
# ... in the single passes of a split too (the look-back, _LOOKBACK, and the cooperative
# pass, _COOP; both off by default, slower than the two passes in sessions 10 and 11).
# Correct on the H200 (tests/test_gpu.py::test_interior_single_pass, 2026-12-03-h200-s34-
# gpu-single.log) but the single passes stay slower with them (benchmarks/ab.py, `device_run.sh
# s34-single`, 2026-12-03-h200-s34-ab-single.txt), device us, two passes / look-back /
# cooperative: 1 x 1048576 discounted returns 8.2 / 14.7 / 8.8, TD(lambda) 8.6 / 15.4 / 9.5,
# GAE 9.3 / 14.4 / 9.5, V-trace 12.5 / 27.0 / 13.6, traces 7.1 / 13.0 / 8.1; 4 x 524288 GAE
# 14.1 / 20.8 / 19.2; 16 x 262144 equal to the two passes for the cooperative pass (whose
# programs do not all fit there, so it runs as the two passes), twice for the look-back.
# So off: the two launches are not what keeps 1 x 1048576 from its floor.
_INTERIOR_SINGLE_PASS = False
# TD(lambda)'s kernel forms ("td_lambda", "discounted_returns": without values) whose
# interior chunks run without the cut, checked, and then, where something came out
# non-finite, the general chunk with it (td_lambda_kernel's INTERIOR_LAZY, as _TD_LAZY_CUT's
# time-major chunks): the cut's selects (scan.madd) were about a sixth of the interior chunk's
# instructions (benchmarks/sass_counts.py, Triton 3.6, sm_90, discounted returns 16 x 262144,
# interior path of PHASE 2 728 -> 608 SASS a thread, PHASE 1 480 -> 408), at 95 registers a
# thread for the kernel against 80. H200, Triton 3.6 (benchmarks/ab.py, `device_run.sh
# s34-lazy`, 2026-12-03-h200-s34-ab-lazy.txt), device us, cut -> lazy: TD(lambda) 16 x 262144
# 25.4 -> 23.5, 64 x 65536 23.9 -> 22.9, 4 x 524288 14.3 -> 14.0, 1 x 1048576 8.9 -> 8.9;
# discounted returns 18.0 -> 18.3, 18.9 -> 18.6, 11.3 -> 11.5, 8.5 -> 7.5. Capped at 80
# registers (Triton's maxnreg) it lost what it gained (TD(lambda) 16 x 262144 25.3).
_INTERIOR_LAZY = frozenset({"td_lambda"})


def _interior(pl: Plan, meta: dict, forward: bool = False) -> bool:
    """Whether a call on plan ``pl`` (``meta``: its kernel's settings) takes ``_INTERIOR``'s
    chunks in the segments before a split row's last: the two-pass split (the single passes
    too with ``_INTERIOR_SINGLE_PASS``), one chunk a segment, one row (lane) a program,
    batch-major tiles, for the backward kernels in group form (the ``INTERIOR`` of
    td_lambda_kernel, gae_kernel, vtrace_kernel, retrace_kernel and, with ``forward``,
    forward_kernel, whose interior segments also leave out the first)."""
    return (_INTERIOR and pl.segments > 1 and pl.seg_len == pl.block_t and pl.block_n == 1
            and (_INTERIOR_SINGLE_PASS or not (pl.lookback or pl.coop))
            and not (pl.time_major or pl.tm_lanes or pl.lanes)
            and (forward or meta.get("GROUP_TILES") in (1, 2)))


def _map_reduce(pl: Plan, meta: dict, form: str) -> bool:
    """Whether a call of kernel form ``form`` (``"gae"``, ``"td_lambda"`` or
    ``"discounted_returns"``; ``meta``: its kernel's settings) on plan ``pl`` takes
    ``_MAP_REDUCE``'s PHASE 1: a form named there, a two-pass split of batch-major tiles,
    gamma and lam scalars (its chunks' beta is then one constant or 0), float32 arithmetic
    (``tl.log2`` and ``tl.exp2`` of float32 only were timed and checked on the GPU)."""
    return (form in _MAP_REDUCE and pl.segments > 1
            and not (pl.lookback or pl.coop or pl.time_major or pl.tm_lanes)
            and not (meta["G_TENSOR"] or meta["L_TENSOR"]) and meta["DT"] == tl.float32)


def _one_chunk_form(form: str, p: Problem) -> str | None:
    """The kernel form whose ``_ONE_CHUNK_ROWS`` bounds the call's plan takes: None (never a
    whole row in one chunk) for float64 arithmetic, whose registers those tiles would spill."""
    return None if p.dtype == torch.float64 else form


def run_backward(kind: str, p: Problem, assigner: CreditAssigner) -> tuple[Tensor, ...]:
    """Launch the fused kernel of a backward estimator; outputs in the caller's layout."""
    T = p.T
    if T > _MAX_T:
        raise ValueError(f"expected rows of at most {_MAX_T} steps for the Triton backend (its kernels count time "
                         f"in int32), got {T} steps; use backend='torch' for longer rows")
    R = p.shape.numel() // T
    raw = p.raw
    rows = _Rows(p)
    r = rows(raw["rewards"])
    like = r
    caller = raw["rewards"]
    dummy = r[0]
    common, meta = _common(p, rows, dummy)
    # the kernel form (_FORMS): Retrace's action form has few-rows tiles of its own
    kform = "retrace_actions" if "action_values" in raw else kind
    short_tile = _dr_short_tile(p, R, meta) if kind == "td_lambda" else None
    wide_lanes = _td_wide_lanes(p, R, meta) if kind == "td_lambda" else None
    # (discounted returns to the window edge: _DR_TM_LANES_ANY)
    tm_lanes_edge = _DR_TM_LANES_ANY and kind == "td_lambda" and _scalar_returns_to_the_edge(p, meta)
    split_form = "discounted_returns" if kind == "td_lambda" and raw.get("values") is None else kform
    meta["CARRY_PROD"] = _carry_prod(split_form)
    pl = plan_for(R, T, p.device, time_major=r[1] == 1, wide=kform in _TM_WIDE_KINDS,  # unit row stride: [T, N]
                  long_rows=_LONG_ROWS.get(kind, _LONG_ROWS_DEFAULT), few=_TM_FEW_TILES.get(kform),
                  form=_one_chunk_form(kform, p), short_tile=short_tile, wide_lanes=wide_lanes,
                  tm_lanes_edge=tm_lanes_edge, long_split=_LONG_SPLIT.get(split_form))
    meta = _with_loop_registers(_with_group_scan(meta, pl, kform, T), pl, kform)
    meta = _with_register_caps(meta, pl, kform, R, p.device)
    if kind in ("gae", "td_lambda") and _map_reduce(pl, meta, split_form):
        meta = {**meta, "MAP_REDUCE": True}
    if kind in ("gae", "vtrace", "retrace"):
        meta = {**meta, "INTERIOR": _interior(pl, meta)}
    if kind in ("gae", "vtrace", "retrace"):
        meta = {**meta, "EXACT_T": _exact_t(pl, T, split_form)}
    if kind == "gae":
        adv = _output(p, caller, like)
        tgt = _output(p, caller, like)
        args = [*r, *rows(raw["values"]), *common, *adv, *tgt, R]
        _launch(gae_kernel, R, T, pl, args, meta, p.dtype, p.device)
        return adv[0], tgt[0]
    if kind == "td_lambda":
        v = rows(raw.get("values"))
        out = _output(p, caller, like)
        args = [*r, v[0] if v[0] is not None else dummy, v[1], v[2], *common, *out, R]
        # (the 128-step lanes tiles: only where _td_wide_lanes admitted the call)
        wide_tile = pl.lanes and pl.block_t == _TD_WIDE_LANES_T and wide_lanes is not None
        lazy = _TD_LAZY_CUT and (pl.time_major or (split_form in _TD_LAZY_CUT_BATCH and pl.segments == 1
                                                    and not pl.lanes)
                                 or (split_form in _TD_LAZY_CUT_WIDE and wide_tile))
        meta = {**meta, "HAS_VALUES": v[0] is not None, "LAZY_CUT": lazy,
                "EXACT_T": _exact_t(pl, T, split_form),
                "INTERIOR": not lazy and _interior(pl, meta)}
        meta["INTERIOR_LAZY"] = split_form in _INTERIOR_LAZY and meta["INTERIOR"]
        _launch(td_lambda_kernel, R, T, pl, args, {**meta, "EDGE_CARRY": _edge_carry(pl, meta)}, p.dtype, p.device)
        return (out[0],)
    if kind == "vtrace":
        vs = _output(p, caller, like)
        pg = _output(p, caller, like)
        args = [
            *r, *rows(raw["values"]), *common, *rows(raw["log_rhos"]),
            *split_scalar(assigner.rho_bar), *split_scalar(assigner.c_bar), *split_scalar(assigner.pg_rho_bar),
            *vs, *pg, R,
        ]
        _launch(vtrace_kernel, R, T, pl, args, meta, p.dtype, p.device)
        return vs[0], pg[0]
    if kind == "retrace":
        qt = _output(p, caller, like)
        adv = _output(p, caller, like)
        if "action_values" in raw:
            t = p.tensors
            A = t["action_values"].shape[-1]
            av3 = t["action_values"].reshape(-1, T, A)
            pi3 = t["target_probs"].reshape(-1, T, A)
            q = v = (dummy, 0, 0)
            lr = rows(raw["behavior_log_probs"])
            av_args = [
                _owner(av3, raw["action_values"]), *av3.stride(), _owner(pi3, raw["target_probs"]), *pi3.stride(),
                *rows(raw["actions"]), A,
            ]
            av_vec = 4 if _RETRACE_AV_VEC and p.device.type == "cuda" and _vec4_actions(av3) and _vec4_actions(pi3) \
                else 0
        else:
            q = rows(raw["q_values"])
            v = rows(raw["state_values"])
            lr = rows(raw["log_rhos"])
            av_args = [dummy, 0, 0, 0, dummy, 0, 0, 0, dummy, 0, 0, 1]
            av_vec = 0
        args = [*r, *v, *common, *q, *lr, *split_scalar(assigner.c_bar), *av_args, *qt, *adv, R]
        form = "actions" if "action_values" in raw else "sampled"
        meta = {**meta, "ACTION_FORM": form == "actions",
                "LAGGED": form in _RETRACE_LAGGED and meta["NV_MODE"] != _NV_NEXT, "AV_VEC": av_vec}
        _launch(retrace_kernel, R, T, pl, args, meta, p.dtype, p.device)
        return qt[0], adv[0]
    raise ValueError(f"kind: expected one of gae, td_lambda, vtrace, retrace, got {kind!r}")


def _vec4_actions(x: Tensor) -> bool:
    """Whether ``[rows, T, A]`` per-action values can be read a step at a time as one 16-byte
    vector (retrace_kernel's ``AV_VEC = 4``): 4 float32 actions, contiguous, every row and
    step a multiple of 16 bytes apart, from a 16-byte aligned base address (checked per call;
    a replay checks each call's addresses again, :class:`_Step`)."""
    if x.dtype != torch.float32 or x.shape[-1] != 4 or x.stride(-1) != 1 or x.data_ptr() % 16 != 0:
        return False
    return all(st % 4 == 0 for size, st in zip(x.shape[:-1], x.stride()[:-1]) if size > 1)


def _owner(view: Tensor, owner: Tensor | None) -> Tensor:
    """``owner`` when ``view`` (a reshape of it) starts at the same address, else ``view``.

    The kernel reads only the address and the strides it is given, so passing the caller's
    own tensor instead of a reshaped view changes nothing on the device, and lets a replay
    (:class:`Replay`) recognise the argument as one of the call's tensors."""
    if owner is not None and view.data_ptr() == owner.data_ptr():
        return owner
    return view


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
    init = p.tensors.get("initial")
    init2 = None if init is None else init.reshape(R, F)
    rows = _Rows(p)
    d2, sdn, sdt = rows(p.raw.get("dones"))
    xp = _owner(x3, p.raw["x"])
    g, sgn, sgt, ghi, glo, g_tensor = _coef(p.gamma_raw, rows, xp)
    lm, sln, slt, lhi, llo, l_tensor = _coef(p.lam_raw, rows, xp)
    k = 0 if kind == "traces" else (1 if assigner.boundary == "ends_at" else 2)
    args = [
        xp, *x3.stride(), d2 if d2 is not None else xp, sdn, sdt,
        g, sgn, sgt, ghi, glo, lm, sln, slt, lhi, llo,
        _owner(init2, p.raw.get("initial")) if init2 is not None else xp,
        *((0, 0) if init2 is None else init2.stride()),
        _owner(out3, out), *out3.stride(), R, F,
    ]
    meta = dict(
        KIND=k, HAS_DONES=d2 is not None, HAS_INIT=init2 is not None,
        G_TENSOR=g_tensor, L_TENSOR=l_tensor, DT=_dt(p), CARRY_PROD=_carry_prod("forward"),
    )
    pl = plan_for(R * F, T, p.device, time_major=F == 1 and x3.stride(0) == 1, forward=True,
                  few=_TM_FEW_TILES.get("forward"), form=_one_chunk_form("forward", p),
                  long_split=_LONG_SPLIT.get("forward"))
    if pl.tm_lanes:
        meta["TM_W"] = _tm_groups(pl)
    meta["INTERIOR"] = _interior(pl, meta, forward=True)
    meta["EXACT_T"] = _exact_t(pl, T, "forward")
    meta = _with_register_caps(meta, pl, "forward", R * F, p.device)
    _launch(forward_kernel, R * F, T, pl, args, meta, p.dtype, p.device)
    return (out,)
