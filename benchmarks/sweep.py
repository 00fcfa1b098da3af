"""Sweep launch plans (tile, warps, time segments) against the streaming floor.

    python benchmarks/sweep.py [estimator] [RxT,RxT,...] > sweep.txt     # on a GPU machine
    SWEEP_TIME_MAJOR=1 python benchmarks/sweep.py gae                  # CleanRL's [T, N] storage
    SWEEP_STAGES=1 python benchmarks/sweep.py gae                      # plain chunk loops only
    SWEEP_BIG=1 python benchmarks/sweep.py traces 128x8192             # chunks of 4096-8192 steps too
    SWEEP_ONE_CHUNK=1 python benchmarks/sweep.py gae 32x8192           # only whole rows in one chunk
    SWEEP_TILES=2048:4 SWEEP_ONE_CHUNK_SEGS=1 python benchmarks/sweep.py traces 16x262144 # given chunks, split
    SWEEP_TIME_MAJOR=1 SWEEP_TM_NARROW=1 python benchmarks/sweep.py gae 512x2048   # [T, N], 4-8 rows a tile
    SWEEP_TIME_MAJOR=1 SWEEP_TM_NARROW=1 SWEEP_TM_NARROW_FEW=1 python benchmarks/sweep.py gae 128x1024  # small calls
    SWEEP_LANES=1 python benchmarks/sweep.py td_lambda 32768x64        # rows across lanes (GROUP_TILES = 4)
    SWEEP_TIME_MAJOR=1 SWEEP_TM_LANES=1 python benchmarks/sweep.py td_lambda 512x2048   # [T, N], lanes tiles split

For each shape, times the default plan of ``rltriton.kernels.launch.plan_for`` and a set of
forced plans (CUDA-graph device time), and prints the best one; with SWEEP_TIME_MAJOR the
inputs are [T, N] and the candidates are the time-major tiles (``launch.plan_time_major``)
and the generic plan. Plans whose programs walk several chunks are tried with the chunk loop
plain and pipelined (``Plan.stages``; the depths in SWEEP_STAGES, default 1,3). Used to set
the plan heuristics; results are recorded in benchmarks/results/.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import device_time_us, estimator_plan, full_call_us, stream_floor  # noqa: E402
from rltriton.kernels import launch  # noqa: E402
from rltriton.kernels.scan import lanes_per_row  # noqa: E402
from tests.rollouts import make_case, on_gpu  # noqa: E402

# Few time-major rows (launch._TM_FEW_TILES): a tile as wide as the rows (4 per thread, the
# other lanes along time), split in time. (steps, warps, chunks a segment, most segments,
# pipelined): short chunks first, so that a time box ends on the long ones, which are slow
# wherever they spill: 16 steps a thread or fewer at 16 rows (V-trace spills 4.5 KB a thread
# in PHASE 2 at [16, 512] on 4 warps, Retrace 1 KB; ptxas with Triton 3.6), at most 256
# segments (the carry-in holds [rows, segments] summaries in registers), chunk loops
# pipelined; then long chunks, up to 1024 segments, one pass of one chunk a row among them.
FEW_ROWS_TILES = (
    *((bt, w, (2, 4, 8, 16, 32), 256, True) for bt, w in ((64, 4), (128, 4), (128, 8), (256, 8))),
    *((bt, w, (1, 2, 4, 8), 1024, False) for bt, w in ((256, 2), (512, 4), (1024, 4), (1024, 8), (2048, 8))),
)


def few_rows(R: int, T: int, p2: int) -> list:
    """The few-rows candidates of ``FEW_ROWS_TILES`` for R time-major rows of T steps."""
    bn = max(4, 1 << (R - 1).bit_length())
    out = []
    for bt, w, pers, max_segs, pipelined in FEW_ROWS_TILES:
        if bt > p2:
            continue
        n_chunks = -(-T // bt)
        for per in pers:
            segs = -(-n_chunks // per)
            if segs <= max_segs and (segs > 1 or (per == 1 and not pipelined)):
                for st in (STAGES if pipelined else (1,)):
                    out.append(launch.Plan(bn, bt, w, segs, per * bt, False, True, st))
    return out

def split_plans(bn: int, bt: int, w: int, n_chunks: int, segs, time_major: bool) -> list:
    """Plans of ``bn`` rows by ``bt``-step chunks on ``w`` warps cut into about ``s`` segments
    of whole chunks for each ``s`` of ``segs``; each with the chunk loop of every depth of
    STAGES where a program walks at least 2 chunks (plain otherwise)."""
    out = []
    for s in segs:
        per = -(-n_chunks // s)
        for st in STAGES:
            if st == 1 or per >= 2:
                out.append(launch.Plan(bn, bt, w, -(-n_chunks // per), per * bt, False, time_major, st))
    return out


def narrow_rows(R: int, T: int, p2: int) -> list:
    """Time-major tiles of 4 or 8 rows (one 16- or 32-byte access along rows a thread, every
    lane along time) for R >= 64 rows: a whole row in one chunk of up to 8192 steps (one
    pass, no split), or chunks of 256-2048 steps split into segments for 1-16 programs per
    SM, 4-32 elements a thread. With TM_NARROW_FEW: 2, 4 or 8 rows, chunks of 128-512 steps,
    split from 16 programs."""
    out = []
    rows, chunks, fewest = ((2, 4, 8), (128, 256, 512), 16) if TM_NARROW_FEW else ((4, 8), (256, 512, 1024, 2048), 132)
    for bn in rows:
        row_blocks = -(-R // bn)
        if p2 <= 8192:
            for w in (1, 2, 4, 8, 16):
                if 4 <= bn * p2 // (32 * w) <= 32:
                    out.append(launch.Plan(bn, p2, w, 1, p2, False, True, 1))
        for bt in chunks:
            if bt >= p2:
                continue
            n_chunks = -(-T // bt)
            w = max(1, bn * bt // (32 * 16))
            segs = [s for s in (2, 4, 8, 16, 32, 64) if s <= n_chunks and fewest <= row_blocks * s <= 16 * 132]
            out += split_plans(bn, bt, w, n_chunks, segs, True)
    return out


def tm_lanes_split(R: int, T: int, p2: int) -> list:
    """Time-major lanes tiles (``Plan.tm_lanes``: rows along the lanes, time along the warps)
    of 128-, 256- and 512-step chunks (8, 8 and 16 steps a thread: 16, 32 and 32 warps), 32 or
    64 rows a program, split in time into segments of 1, 2 or 4 chunks (at most 256 segments):
    for few time-major rows of long rows, which the planner gives the time-major tiles' split
    of one-warp tiles. The kernels take these plans (tests/test_backends.py::
    test_tm_lanes_chunks); the planner does not."""
    out = []
    for bt, k in ((128, 8), (256, 8), (512, 16)):
        if bt > p2:
            continue
        n_chunks = -(-T // bt)
        for rows in (32, 64):
            for per in (1, 2, 4):
                segs = -(-n_chunks // per)
                if segs <= 256 and (segs > 1 or per == 1):
                    out.append(launch.Plan(rows, bt, bt // k, segs, per * bt, tm_lanes=True))
    return out


def candidates(R: int, T: int):
    p2 = 1 << (max(T, 1) - 1).bit_length()
    out = []
    if TM_LANES:
        return tm_lanes_split(R, T, p2)
    if TM_NARROW:
        return narrow_rows(R, T, p2) if R >= 64 else []
    if LANES:
        # rows across a few lanes each (launch._ROW_LANES, GROUP_TILES = 4): SWEEP_LANE_SHAPES
        # lists warps:m, a tile of 32 x warps x m / L rows (m rows for each lane of a row)
        lanes = lanes_per_row(p2)
        return [launch.Plan(32 * w * m // lanes, p2, w, 1, p2, lanes=True) for w, m in LANE_SHAPES if p2 >= 4]
    if ONE_CHUNK:
        # a whole row in one chunk of 2048-16384 steps, one program a row, one launch: no
        # split's second pass and scratch, no chunk loop's carry hand-over (ptxas caps 16
        # warps at 128 registers and 32 at 64, so every program can be resident)
        return [launch.Plan(1, p2, w, 1, p2) for w in (8, 16, 32) if 2048 <= p2 <= 16384 and 4 <= p2 // (32 * w) <= 16]
    if TIME_MAJOR:
        # rows are contiguous: the time-major tiles (launch.plan_time_major) of 32 or 128
        # rows, warps side by side in time, split in time; and the generic tiles for comparison
        out.append(launch.plan(R, T))
        if T < 2:
            return out
        if R < 128:
            return out + few_rows(R, T, p2)
        # (rows, steps, warps): 128 rows is the default tile (4 rows per thread, lanes along
        # rows, warps along time); 32 rows give 4x the programs, with lanes shared between
        # rows and time. Segments: powers of two that give 1-16 programs per SM
        # (SWEEP_STAGES, default "1,3": the chunk loop plain or pipelined, launch._TM_STAGES,
        # for programs of at least 2 chunks; batch-major plans below likewise)
        shapes = [(128, 16, 4), (128, 8, 2), (32, 16, 1), (32, 32, 2), (32, 32, 4), (32, 64, 4), (32, 64, 8),
                  (32, 128, 8), (16, 16, 1), (16, 32, 1), (64, 16, 2)]
        for bn, bt, w in shapes:
            if bt > 2 * p2:
                continue
            row_blocks = -(-R // bn)
            n_chunks = -(-T // bt)
            segs = [1] + [s for s in (2, 4, 8, 16, 32, 64)
                          if s <= n_chunks and 132 <= row_blocks * s <= 16 * 132]
            out += split_plans(bn, bt, w, n_chunks, segs, True)
        return out
    if T <= 128:
        for tile, w in ((256, 1), (256, 2), (512, 2), (1024, 4), (2048, 4), (2048, 8)):
            out.append(launch.Plan(max(1, tile // p2), p2, w, 1, p2))
    else:
        for bt, w in TILES or ((512, 4), (512, 8), (1024, 4), (1024, 8), (2048, 8), (2048, 16), *BIG_TILES):
            if bt > p2:
                continue
            n_chunks = -(-T // bt)
            for bn in ((1, 4) if R >= 4096 and bt <= 512 else (1,)):
                programs = -(-R // bn)
                segs = [] if ONE_CHUNK_SEGS else [1]
                for s in (-(-2 * 132 // programs), -(-8 * 132 // programs), n_chunks):
                    s = min(n_chunks, s)
                    if s > 1 and s not in segs and (s == n_chunks or not ONE_CHUNK_SEGS):
                        segs.append(s)
                # (pipelined chunk loops, as the time-major tiles')
                out += split_plans(bn, bt, w, n_chunks, segs, False)
                if n_chunks > 1 and bn == 1 and not ONE_CHUNK_SEGS:  # single-pass look-back: one chunk a segment
                    out.append(launch.Plan(1, bt, w, n_chunks, bt, True))
    return out


VERBOSE = bool(os.environ.get("SWEEP_VERBOSE"))
TIME_MAJOR = bool(os.environ.get("SWEEP_TIME_MAJOR"))
STAGES = [int(x) for x in os.environ.get("SWEEP_STAGES", "1,3").split(",")]
# SWEEP_BIG=1: also chunks longer than launch._MAX_BLOCK_T (a whole 4096- or 8192-step row in
# one chunk, as rl-triton's kernels hold a row), which the plans never choose
BIG_TILES = ((4096, 8), (4096, 16), (8192, 16), (8192, 32)) if os.environ.get("SWEEP_BIG") else ()
# SWEEP_ONE_CHUNK=1: only the plans that hold a whole row in one chunk (see candidates), each
# with its full call beside its device time
ONE_CHUNK = bool(os.environ.get("SWEEP_ONE_CHUNK"))
# SWEEP_TILES=steps:warps,... : the batch-major chunks to try instead of the list in candidates
# (e.g. 2048:4 for 16 steps a thread); SWEEP_ONE_CHUNK_SEGS=1: only splits into segments of one
# chunk (a program a chunk, as launch._SHORT_SPLIT's), no chunk loops and no single pass
TILES = [tuple(int(v) for v in x.split(":")) for x in os.environ.get("SWEEP_TILES", "").split(",") if x]
ONE_CHUNK_SEGS = bool(os.environ.get("SWEEP_ONE_CHUNK_SEGS"))
# SWEEP_TM_NARROW=1 (with SWEEP_TIME_MAJOR=1): only the time-major tiles of 4 or 8 rows
# (narrow_rows), against the default plan
TM_NARROW = TIME_MAJOR and bool(os.environ.get("SWEEP_TM_NARROW"))
# SWEEP_TM_NARROW_FEW=1 (with SWEEP_TM_NARROW=1): the small calls' side of them (session 49):
# 2, 4 or 8 rows, whole rows or 128-512-step chunks split in time from 16 programs (the
# default's splits start at 132 programs, so 128 x 1024 and 256 x 1024 were only ever timed
# on whole rows there)
TM_NARROW_FEW = TM_NARROW and bool(os.environ.get("SWEEP_TM_NARROW_FEW"))
# SWEEP_TM_LANES=1 (with SWEEP_TIME_MAJOR=1): only the time-major lanes tiles split in time
# (tm_lanes_split), against the default plan
TM_LANES = TIME_MAJOR and bool(os.environ.get("SWEEP_TM_LANES"))
# SWEEP_LANES=1: only the lanes tiles (launch._ROW_LANES; SWEEP_LANE_SHAPES: warps:m), against the
# default plan without them
LANES = bool(os.environ.get("SWEEP_LANES"))
LANE_SHAPES = [tuple(int(v) for v in x.split(":"))
               for x in os.environ.get("SWEEP_LANE_SHAPES", "1:1,2:1,4:1,1:2,2:2").split(",")]
SHAPES = [(32768, 8), (16384, 16), (8192, 32), (32768, 64), (4096, 128), (16384, 512), (4096, 512), (4096, 2048),
          (512, 512), (512, 2048), (512, 4096), (256, 1024), (128, 1024), (64, 512), (64, 65536), (16, 262144),
          (1, 1048576)]


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "gae"
    shapes = SHAPES
    if len(sys.argv) > 2:
        shapes = [tuple(int(x) for x in s.split("x")) for s in sys.argv[2].split(",")]
    orig = launch.plan_for
    if LANES:  # the default plan without the lanes tiles, for the candidates to beat
        launch._ROW_LANES = False
    print(f"{'shape':>14} {'floor':>7} {'default':>8} {'best':>7} {'ratio':>6}  best plan / default plan")
    for shape in shapes:
        case = on_gpu(make_case(name, shape, flags="terminated", seed=0, time_major=TIME_MAJOR))
        step_shape = torch.Size(shape[::-1] if TIME_MAJOR else shape)
        per_step = [x for x in list(case.args) + list(case.kwargs.values())
                    if isinstance(x, torch.Tensor) and x.shape == step_shape]
        n_out = len(case(backend="triton"))
        floor = device_time_us(stream_floor(per_step, [torch.empty(shape, device="cuda") for _ in range(n_out)]))
        launch.plan_for = orig
        launch.clear_caches()  # replays of an earlier plan must not stand in for this one
        default_plan = estimator_plan(name, shape, TIME_MAJOR, orig)
        default = device_time_us(lambda c=case: c(backend="triton"))
        if ONE_CHUNK:
            full = full_call_us(lambda c=case: c(backend="triton"))
            print(f"   {str(shape):>14} {default:8.1f} {default / floor:6.2f}  default {tuple(default_plan)}, "
                  f"full call {full:.1f}", flush=True)
        ref = case(backend="triton")  # the default plan's outputs (its tests pass on the GPU)
        best, best_plan = default, default_plan
        for pl in candidates(*shape):
            launch.plan_for = lambda *a, _p=pl, **k: _p
            launch.clear_caches()
            try:
                calls = 10 if shape[0] * shape[1] >= 1 << 22 else 50
                got = case(backend="triton")
                if not all(torch.allclose(g, r, rtol=1e-4, atol=1e-4) for g, r in zip(got, ref)):
                    print(f"   WRONG {tuple(pl)}", flush=True)
                    continue
                t = device_time_us(lambda c=case: c(backend="triton"), graph_calls=calls, replays=3)
            except Exception as e:  # a plan the compiler rejects (registers, shared memory)
                print(f"   skip {pl}: {type(e).__name__}", flush=True)
                continue
            if VERBOSE or ONE_CHUNK:
                full = f", full call {full_call_us(lambda c=case: c(backend='triton')):.1f}" if ONE_CHUNK else ""
                print(f"   {str(shape):>14} {t:8.1f} {t / floor:6.2f}  {tuple(pl)}{full}", flush=True)
            if t < best:
                best, best_plan = t, pl
        launch.plan_for = orig
        launch.clear_caches()
        print(f"{str(shape):>14} {floor:7.1f} {default:8.1f} {best:7.1f} {best / floor:6.2f}  {tuple(best_plan)} / "
              f"{tuple(default_plan)}", flush=True)


if __name__ == "__main__":
    main()
