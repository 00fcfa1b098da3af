"""Static properties of the compiled kernels: Triton builds them for sm_90 on the CPU (its
wheel carries ptxas), so CI checks what the H200 will run without a GPU. The build runs in
a subprocess (``benchmarks/ptx_counts.py --json``) because under ``TRITON_INTERPRET=1`` the
kernels of this process are interpreted, not compiled.

The group-form chunks (Triton >= 3.7, which CI runs) must scan forward: Triton lowers
``tl.associative_scan(reverse=True)`` as flip, scan, flip, 7.7x the warp shuffles of a
forward scan, on the pipe the kernels are bound by (see rltriton/kernels/scan.py). Both
forms must keep loads and stores vector accesses and need no layout conversion (Triton
3.6's conversion of the group form's reshape made the kernels 1.4-6x slower).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rltriton.kernels.scan import triton_version

ROOT = Path(__file__).resolve().parents[1]
# one xdist worker takes this whole module (pyproject's addopts: --dist loadgroup), so the
# counts fixture's build of every kernel (26-86 s here, by the load beside it) runs once, not once a
# worker
pytestmark = pytest.mark.xdist_group("static_ptx")
# per thread, [1, 512] on 4 warps, Triton 3.8: a forward scan of (alpha, beta) takes 12
# shuffles (V-trace's four-value lagged scan 24); the reverse scans took 92
MAX_SHUFFLES = {"vtrace": 40}


# Triton 3.9 lowers tl.associative_scan(reverse=True) without the lane flips: the time-order
# [1, 512] tile on 4 warps takes 28 shuffles a thread (3.8: 92), [32, 8] 14 (3.8: 46),
# PHASE 2's carry-in over descending segments 56 (3.8: 88; benchmarks/ptx_counts.py --json
# under each). The checks that measure a form against the reverse scan's cost hold up to 3.8,
# the version CI runs and the forms were built against (the H200 runs 3.6); on 3.9 the tests
# that hold them check the rest of each form's properties. Whether the forms still pay on 3.9
# is untimed (no 3.9 on the H200).
TRITON = triton_version()
REVERSE_SCAN_FLIPS = TRITON < (3, 9)
# Triton 3.9 gives the lagged scans' group form (V-trace, Retrace's action form) one layout
# conversion more than 3.8 (4 against 3 a thread, [1, 512] on 4 warps); untimed, as above
GROUP_SCAN_EXTRA_CVT = 3 if TRITON < (3, 9) else 4


@pytest.fixture(scope="session")
def counts() -> dict:
    # (once a worker: the module's tests, one xdist group, can run between other modules'
    # on their worker, and a module-scoped fixture compiled every kernel again after each, 24 s)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "ptx_counts.py"), "--json"], env=env,
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["gae", "td_lambda", "vtrace", "retrace", "retrace_av", "traces"])
def test_kernels_scan_forward_with_vector_access(counts, name):
    st = counts[name]
    assert st["reverse_scans"] == 0, st
    assert st["shfl"] <= MAX_SHUFFLES.get(name, 20), st
    assert st["v4"] >= 2, st  # rewards and the stores (at least) stay 16-byte accesses
    assert st["cvt"] == 0, st


# global loads per thread, [1, 512] on 4 warps: values[t+1] (and Retrace's log-ratio and
# lam at t+1) come from a register shift of the tile at t plus one load per group of 4
# (scan.load_next); loading them at t+1 took four scalar loads per group (12, 11, 13, 17)
MAX_LOADS = {"gae": 9, "td_lambda": 9, "vtrace": 10, "retrace": 12}


@pytest.mark.parametrize("name", sorted(MAX_LOADS))
def test_next_step_values_are_shifted_not_reloaded(counts, name):
    st = counts[name]
    assert st["ldg"] <= MAX_LOADS[name], st
    assert st["cvt"] == 0, st


@pytest.mark.parametrize("name", ["gae", "td_lambda", "vtrace", "retrace", "retrace_av"])
def test_time_order_chunks(counts, name):
    """Chunks in time order (what Triton < 3.7 gets): one reverse scan of the tile, vector
    accesses, no layout conversion."""
    st = counts[f"{name}_time_order"]
    assert st["reverse_scans"] == 1, st
    assert st["v4"] >= 2 and st["cvt"] == 0, st


@pytest.mark.parametrize("name", ["gae", "td_lambda", "vtrace", "retrace", "retrace_av"])
def test_desc_tiles(counts, name):
    """8-step tiles in descending time (``GROUP_TILES = 6``, launch._DESC_MAX_T) scan forward:
    no reverse scan, so none of its lane flips (a third of the time-order tile's shuffles or
    fewer, [32, 8] on 4 warps), and no layout conversion, for scalar accesses (no vector
    loads: the addresses run backwards) where the time-order tile reads 8-byte vectors."""
    desc, order = counts[f"{name}_desc_32x8"], counts[f"{name}_time_order_32x8"]
    assert desc["reverse_scans"] == 0 and order["reverse_scans"] == 1, (desc, order)
    assert 3 * desc["shfl"] <= 1.1 * order["shfl"] or not REVERSE_SCAN_FLIPS, (desc, order)
    assert desc["cvt"] == 0 and desc["lds"] == 0 and desc["sts"] == 0, desc
    assert desc["v2_loads"] == 0 < order["v2_loads"], (desc, order)


@pytest.mark.parametrize("name", ["gae", "td_lambda", "vtrace", "retrace", "retrace_av"])
def test_group_scan(counts, name):
    """The group form scanned in two levels (launch._GROUP_SCAN, ``GROUP_TILES = 2``): no
    reverse scan, 24 shuffles per thread for a [1, 512] tile on 4 warps (Triton 3.6 and 3.8;
    time order: 92, 184 for the lagged scans of V-trace and Retrace's action form), vector
    accesses, at most one allocation granule (8 registers) above the time-order form's
    registers (Retrace's direct form: 40 against 32 with Triton 3.8, 32 against 32 with 3.6),
    and at most 3 layout conversions more than the time-order form (the groups' maps to and
    from the layout Triton scans in)."""
    st = counts[f"{name}_group_scan"]
    order = counts["retrace_av_lagged" if name == "retrace_av" else f"{name}_time_order"]  # the same kernel form
    assert st["reverse_scans"] == 0 and st["shfl"] <= 24 < order["shfl"], (st, order)
    assert st["v4"] >= 3 and st["cvt"] <= order["cvt"] + GROUP_SCAN_EXTRA_CVT, (st, order)
    assert st["regs"] <= order["regs"] + 8, (st, order)


@pytest.mark.parametrize("name", ["gae", "td_lambda", "vtrace", "retrace", "retrace_av"])
def test_group_scan_loop(counts, name):
    """The group scan in a chunk loop keeps the carry in the tile's layout: at most 2
    shared-memory stores per thread more than time order's loop. Taken as the scan's own
    ``x + p c``, Triton 3.6 broadcast the carry in a layout holding the whole row in every
    thread and converted it (70 stores at [1, 1024] on 8 warps)."""
    st, order = counts[f"{name}_group_scan_loop"], counts[f"{name}_time_order_loop"]
    assert st["reverse_scans"] == 0 and st["shfl"] < order["shfl"], (st, order)
    assert st["sts"] <= order["sts"] + 2, (st, order)


@pytest.mark.parametrize("name", ["gae", "td_lambda", "vtrace", "retrace", "retrace_av"])
def test_group_scan_flat(counts, name):
    """Short rows laid one after another along the group axis (``GROUP_TILES = 3``,
    launch._GROUP_SCAN_FLAT), [4, 64] on 2 warps: one barrier (the scan's own across the two
    warps) where the [4, 16, 4] group scan takes 5 (its groups' maps converted to and from
    the layout Triton scans in through shared memory, Triton 3.6), no reverse scan, vector
    accesses, registers within one allocation granule of it."""
    st, grp = counts[f"{name}_flat_4x64"], counts[f"{name}_group_scan_4x64"]
    assert st["bar"] <= 1 and st["reverse_scans"] == 0 and st["shfl"] <= 24, (st, grp)
    assert st["v4"] == grp["v4"] and st["regs"] <= grp["regs"] + 8, (st, grp)


def test_vtrace_split_registers(counts):
    """V-trace's PHASE 2 on 8 warps fits in 128 registers, so two programs share an SM: at
    142 (a forward carry-in scan over descending segments) it ran 119 us against 84 at
    16 x 262144 on an H200 (scan.segment_carry_in)."""
    assert counts["vtrace_phase2"]["regs"] <= 128, counts["vtrace_phase2"]


def test_split_passes(counts):
    """PHASE 1 scans its chunks forward; PHASE 2 too, apart from the carry-in over the
    summaries (segments in storage order, scanned in reverse: fewer registers, see
    scan.segment_carry_in)."""
    assert counts["gae_phase1"]["reverse_scans"] == 0, counts["gae_phase1"]
    assert counts["gae_phase2"]["reverse_scans"] == 1, counts["gae_phase2"]


def test_split_carry_products(counts):
    """PHASE 2's carry-in as a sum of products (launch._CARRY_PRODUCTS, scan.segment_carry_in:
    a forward cumprod and reductions) takes the reverse scan out of PHASE 2, with fewer
    shuffles (88 -> 62 per thread for GAE at [1, 2048] on 8 warps with Triton 3.8; 96 -> 70
    with 3.6's group scan) and no more registers (V-trace keeps two programs an SM)."""
    old, new = counts["gae_phase2"], counts["gae_phase2_products"]
    # (Triton 3.9, whose reverse scan has no lane flips: 56 -> 46)
    assert new["reverse_scans"] == 0 and new["shfl"] <= old["shfl"] - (20 if REVERSE_SCAN_FLIPS else 10), (old, new)
    assert new["regs"] <= old["regs"], (old, new)
    old, new = counts["vtrace_phase2"], counts["vtrace_phase2_products"]
    assert new["reverse_scans"] == 0 and new["regs"] <= max(old["regs"], 128), (old, new)


def test_time_major_tile_scans_inside_threads(counts):
    """One warp of 128 rows by 4 steps: each thread holds its rows' steps, so the scan over
    time needs no shuffle and no shared memory, and rows are read as 16-byte vectors."""
    st = counts["gae_tm_one_warp"]
    assert st["shfl"] == 0 and st["lds"] == 0 and st["sts"] == 0, st
    assert st["v4"] >= 4 and st["reverse_scans"] == 0, st


@pytest.mark.parametrize("name", ["gae_tm", "td_lambda_tm", "vtrace_tm", "retrace_tm", "retrace_av_tm", "traces_tm",
                                  "gae_tm_last_value", "gae_tm_phase2", "gae_tm_one_chunk"])
def test_time_major_tiles(counts, name):
    """The production time-major tiles (32 rows by 16 steps on one warp, 4 lanes along
    time): no reverse scan, accesses stay 16-byte vectors along rows, and the chunk scans
    of the backward kernels stay in registers and shuffles (no shared memory, no layout
    conversion; a last value adds one conversion, of its [BN] vector). Triton 3.6 and 3.8
    give the same counts (2 shuffle levels: 136 per thread, 264 for V-trace's lagged scan)."""
    st = counts[name]
    assert st["reverse_scans"] == 0, st
    assert st["v4"] >= 2, st
    if name in ("gae_tm", "td_lambda_tm", "vtrace_tm", "retrace_tm"):
        assert st["lds"] == 0 and st["sts"] == 0 and st["cvt"] == 0, st
        assert st["shfl"] <= 272, st
    if name == "gae_tm_last_value":
        assert st["cvt"] <= 1 and st["shfl"] <= 136, st


@pytest.mark.parametrize("name", ["retrace", "retrace_av"])
def test_retrace_lagged_reads_step_t_only(counts, name):
    """The lagged Retrace form (launch._RETRACE_LAGGED) reads nothing at t + 1: fewer
    global loads than the direct form (BASE's bootstrap_values, chunks in time order; for
    the action form 26 against 41 with Triton 3.6 and 3.8), for a second reverse scan's
    shuffles."""
    lag, direct = counts[f"{name}_lagged"], counts[f"{name}_time_order"]
    assert lag["ldg"] < direct["ldg"], (lag, direct)
    assert lag["cvt"] <= direct["cvt"] + 2, (lag, direct)


@pytest.mark.parametrize("version, group", [("3.6.0", False), ("3.6.1+git4a9c3f", False), ("3.7.0", True),
                                            ("3.7.0rc1", True), ("3.10.2", True), ("4.0", True)])
def test_chunk_form_by_triton_version(version, group, monkeypatch):
    """The group-form chunks only from Triton 3.7 (launch._GROUP_TILES): 3.6 lowers their
    reshape through shared memory, up to 6x slower on the H200."""
    import triton

    from rltriton.kernels import launch

    monkeypatch.setattr(triton, "__version__", version)
    assert (launch._triton_version() >= (3, 7)) is group


@pytest.mark.parametrize("name", ["gae", "td_lambda", "vtrace", "retrace", "retrace_av"])
def test_lane_tiles(counts, name):
    """The lanes tiles of short rows (``GROUP_TILES = 4``, launch._ROW_LANES), [8, 64] on 2 warps
    and [32, 16] on 4, in the axis order for the installed Triton (``scan.LANES_LAST``): no
    reverse scan, each thread's loads as vector accesses, and no shared memory or barrier (the
    lanes run along a row's groups in the loads and in the scan alike, so no conversion moves
    data). Triton 3.6 in the other order put the lanes along the columns and converted through
    shared memory 3 times a tile. The plans take the tiles by default only on Triton < 3.7,
    where they were timed (launch._ROW_LANES)."""
    import triton

    from rltriton.kernels import launch, scan

    assert bool(scan.LANES_LAST) == (launch._triton_version() >= (3, 7)), triton.__version__
    for tile in ("8x64", "32x16"):
        st = counts[f"{name}_lanes_{tile}"]
        assert st["reverse_scans"] == 0 and st["v4"] >= 3, (tile, st)
        assert st["sts"] == st["lds"] == st["bar"] == 0, (tile, st)
    assert launch._ROW_LANES == (launch._triton_version() < (3, 7)), triton.__version__


@pytest.mark.parametrize("tile", ["16x16", "8x32", "4x64"])
def test_retrace_lane_tiles(counts, tile, monkeypatch):
    """Retrace's own lanes tiles (launch._ROW_LANES_SHAPES: one warp, two rows a lane of each
    row's lanes at 16 and 32 steps) keep the lanes tiles' properties: no reverse scan, vector
    loads, no shared memory or barrier; and they are what the planner gives Retrace."""
    import torch

    from rltriton.kernels import launch

    st = counts[f"retrace_lanes_{tile}_w1"]
    assert st["reverse_scans"] == 0 and st["v4"] >= 3, st
    assert st["sts"] == st["lds"] == st["bar"] == 0, st
    bn, bt = (int(x) for x in tile.split("x"))
    monkeypatch.setattr(launch, "_ROW_LANES", True)  # (the default on Triton < 3.7 only)
    launch.clear_caches()
    pl = launch.plan_for(bn * launch._DEFAULT_SMS, bt, torch.device("cpu"), form="retrace")
    launch.clear_caches()
    assert pl.lanes and (pl.block_n, pl.block_t, pl.num_warps) == (bn, bt, 1), pl


@pytest.mark.parametrize("name", ["gae", "td_lambda", "vtrace", "retrace", "retrace_av", "traces"])
def test_tm_lanes_tiles(counts, name):
    """The time-major lanes tiles (``GROUP_TILES = 5``, launch._TM_LANES) on time-major
    storage, [64, 64] on 8 warps ([64, 32] for the lagged forms): every access takes two rows
    a thread along all 32 lanes (8-byte vector loads; told the rows' full contiguity, Triton
    makes 16-byte accesses and puts lanes along time), so each thread's steps are its own and
    the scan inside a thread needs no shuffle; the warps' maps cross through shared memory,
    and nothing is scanned in reverse."""
    st = counts[f"{name}_tm_lanes"]
    assert st["rows_on_lanes"] and st["v2_loads"] >= 3, st
    assert st["reverse_scans"] == 0 and st["v4"] == 0, st
    # the shuffles are the conversions of the warps' [64, 8] maps into the layout Triton scans
    # them in and back (32 with Triton 3.6 and 3.8, a tile of 512 steps of 64 rows); the
    # time-major tiles' scan took 88 for 16 elements a thread
    assert st["shfl"] <= 32, st


@pytest.mark.parametrize("name", ["gae", "td_lambda", "vtrace"])
def test_tm_lanes_narrow_tiles(counts, name):
    """The narrow time-major lanes tiles (32 rows, launch._TM_LANES_NARROW: GAE's and
    TD(lambda)'s [32, 128] and V-trace's [32, 64] on 16 warps) where the planner gives them,
    Triton < 3.7: one row a thread on every lane (scalar accesses), the scan inside each
    thread and the warps' maps through shared memory as on the 64-row tiles, and no more
    shuffles than those (16 for GAE with Triton 3.6). Triton 3.7 on gives a [32, BT] tile's
    lanes to its time axis (a tie between axes of contiguity 1 goes to the last), 128 shuffles
    a thread for GAE with 3.8, so the planner keeps 64 rows there."""
    from rltriton.kernels import launch, scan

    st = counts[f"{name}_tm_lanes_narrow"]
    assert launch._TM_LANES_NARROW == (scan.triton_version() < (3, 7))
    if launch._TM_LANES_NARROW:
        assert st["row_on_lanes"] and st["reverse_scans"] == 0 and st["v4"] == 0, st
        assert st["shfl"] <= 32, st
    else:
        assert not st["row_on_lanes"], st  # (if this fails, Triton lays them out as 3.6 does: time them)


# (the forward kernel has no lanes tiles)
@pytest.mark.parametrize("name, form", [(n, f) for n in ("gae", "td_lambda", "vtrace", "retrace", "retrace_av")
                                        for f in ("default", "lanes")] + [("traces", "default")])
def test_row_div(counts, name, form):
    """A row length and batch-major row strides that Triton does not specialise (rows of 24
    steps; it knows divisibility by 16 only): with the launcher's ``ROW_DIV = 8``
    (launch._ROW_DIV, scan.aligned on T and the strides: a vector needs its start aligned and
    its mask, t < T, the same across it) an [8, 32] tile makes 16-byte vector accesses, at
    most the scalar loads of the flags and the shifted reads, and no shared memory (the
    installed Triton's default form and Triton 3.6's lanes tiles); without it every access is
    scalar."""
    hinted = counts[f"{name}_{form}_row_div8"]
    plain = counts[f"{name}_{form}_row_div1"]
    assert plain["v4"] == 0 and hinted["v4"] >= 2, (hinted, plain)
    assert hinted["ldg"] < plain["ldg"] and hinted["lds"] == 0, (hinted, plain)


@pytest.mark.parametrize("name", ["gae", "td_lambda", "vtrace", "retrace", "retrace_av", "traces"])
@pytest.mark.parametrize("form", ["tm", "tm_lanes"])
def test_tm_div(counts, name, form):
    """A row count and time strides that Triton does not specialise (1000 rows of time-major
    storage): with the launcher's ``TM_DIV = 8`` (launch._TM_DIV, scan.aligned on R and the
    time strides: the time-major tiles' vectors run along rows, masked by row < R) the
    time-major tiles make 16-byte accesses and the time-major lanes tiles 8-byte ones (two rows
    a thread), with fewer global loads; without it every access is scalar."""
    hinted = counts[f"{name}_{form}_tm_div8"]
    plain = counts[f"{name}_{form}_tm_div1"]
    wide = "v4" if form == "tm" else "v2_loads"
    assert plain["v4"] == 0 and plain["v2_loads"] == 0 and hinted[wide] >= 8, (hinted, plain)
    assert hinted["ldg"] < plain["ldg"], (hinted, plain)


@pytest.mark.parametrize("name", ["gae_tm", "traces_tm"])
def test_time_major_chunk_loop_is_pipelined(counts, name):
    """STAGES = 3 (launch._TM_STAGES) turns the time-major chunk loop's global loads into
    cp.async copies issued ahead of the chunk being scanned: if a Triton release stops
    pipelining loops without a dot, the time-major tiles lose up to half their speed."""
    piped = counts[f"{name}_stages3"]
    plain = counts["gae_tm_last_value" if name == "gae_tm" else "traces_tm"]
    assert piped["cp_async"] > 0 and plain["cp_async"] == 0, (piped, plain)
    assert piped["ldg"] < plain["ldg"], (piped, plain)


def test_retrace_action_vectors(counts):
    """AV_VEC = 4 (launch._RETRACE_AV_VEC) reads each step's 4 action values and 4 target
    probabilities as one 16-byte vector load each: 8 more vector loads per thread for a
    [1, 512] tile on 4 warps (4 steps per thread) than the loop over actions (which it does
    not carry: the launcher picks the loop for a misaligned base address)."""
    vec, loop = counts["retrace_av_lagged_vec4"], counts["retrace_av_lagged"]
    assert vec["v4"] >= loop["v4"] + 8, (vec, loop)
    assert vec["cvt"] <= loop["cvt"], (vec, loop)


def test_segment_map_without_reverse_scan(counts):
    """PHASE 1 needs only each segment's composed map: on chunks in time order (what Triton
    < 3.7 gets) ``SEG_MAP_FWD`` (launch._SEGMENT_MAP_FORWARD) makes it a forward scan of the
    composition taken the other way round (scan.chunk_map, scan.affine_after), not
    ``reverse=True`` (flip, scan, flip: 188 shuffles per thread at [1, 2048] on 8 warps with
    Triton 3.6, against 28)."""
    st = counts["gae_phase1_time_order"]
    assert st["reverse_scans"] == 0 and st["shfl"] <= 40, st


@pytest.mark.parametrize("name", ["gae", "td_lambda", "vtrace", "retrace", "retrace_av", "traces"])
def test_dependent_launch_waits_before_loads(counts, name):
    """launch._PDL (scan.grid_dependency): a split's PHASE 2, launched while PHASE 1 may still
    run, waits for it (``griddepcontrol.wait``) before its first global load, so no summary,
    and nothing else, is read before PHASE 1 has completed; PHASE 1 releases it
    (``griddepcontrol.launch_dependents``); kernels compiled without it hold neither. (The
    H200 checks the results, ``tests/test_gpu.py::test_pdl_split``, but a missing wait went
    unseen there in session 35: PHASE 1 wrote its summaries before PHASE 2's loads came.)"""
    st = counts[f"{name}_phase2_pdl"]
    assert st["gdc_wait"] == 1 and st["gdc_wait_first"] and st["gdc_launch"] == 0, st
    if name == "gae":
        st = counts["gae_phase1_pdl"]
        assert st["gdc_launch"] == 1 and st["gdc_wait"] == 0, st
        for plain in ("gae_phase1", "gae_phase2"):
            assert counts[plain]["gdc_launch"] == 0 and counts[plain]["gdc_wait"] == 0, counts[plain]


def test_dependent_launch_waits_late_after_the_tile_loads(counts):
    """launch._PDL_LATE: PHASE 2's wait at its first read of the summaries
    (scan.segment_carry_in), so the tile's loads (inputs written before PHASE 1 started) are
    issued before it and the summaries' loads after it: GAE at the long rows' one-chunk
    segments, the carry fold's two summary loads (a, and the b one column late)."""
    st, first = counts["gae_phase2_pdl_late"], counts["gae_phase2_pdl"]
    assert st["gdc_wait"] == 1 and not st["gdc_wait_first"] and st["gdc_launch"] == 0, st
    assert 2 <= st["ldg_after_wait"] < first["ldg_after_wait"], (st, first)
