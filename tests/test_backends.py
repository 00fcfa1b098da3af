"""The torch backend and the Triton kernels (through TRITON_INTERPRET=1 on CPU) against
the float64 reference, over every estimator, boundary form, dtype and layout.

Triton cases run with NaN-poisoned outputs and tiny tiles (``small_tiles``: BLOCK_T <= 16)
so that T = 63 spans several time chunks and N = 5 several row programs; a few cases use
the default tiles too. Tolerances: ``tests.rollouts.tolerance`` (float32 rounding over the
effective horizon, see its docstring).
"""

from __future__ import annotations

import itertools

import pytest
import torch

from tests.conftest import (
    INTERPRET,
    assert_same_non_finite,
    launches_used,
    plans_used,
    split_passes,
    tm_coop_settings,
    tm_long_tile_record,
    use_small_tiles,
)
from tests.rollouts import (
    BOOTSTRAP_FORMS,
    ESTIMATORS,
    FEW_ROWS_KIND,
    Case,
    assert_matches,
    make_case,
    tm_lanes_tiles,
    to_time_major,
)

FEATURED = ("traces", "prefix_sum")


@pytest.fixture(params=["torch", "triton-split", "triton-single", "triton-lookback", "triton-time-order",
                        "triton-group-scan"])
def backend(request, monkeypatch):
    """The torch backend, or the Triton kernels with small tiles: one pass per row, the
    two-phase time split, or the single-pass look-back split, all with the backward
    kernels' group-form chunks (Triton >= 3.7); ``triton-time-order``: the two-phase split
    with chunks in time order scanned in reverse (what Triton < 3.7 gets, the H200's
    image included: ``launch._GROUP_TILES``); ``triton-group-scan``: the two-phase split
    with the group form scanned in two levels instead (``launch._GROUP_SCAN``)."""
    if request.param == "torch":
        return "torch"
    if not INTERPRET:
        pytest.skip("Triton on CPU tensors needs TRITON_INTERPRET=1 (GPU runs: tests/test_gpu.py)")
    launch = request.getfixturevalue("poisoned")
    mode = request.param
    use_small_tiles(monkeypatch, launch, split=mode != "triton-single", lookback=mode == "triton-lookback")
    monkeypatch.setattr(launch, "_GROUP_TILES", mode not in ("triton-time-order", "triton-group-scan"))
    monkeypatch.setattr(launch, "_GROUP_SCAN", mode == "triton-group-scan")
    monkeypatch.setattr(launch, "_GROUP_SCAN_MIN_T", 4)  # the small tiles take it too
    monkeypatch.setattr(launch, "_GROUP_SCAN_LOOP", frozenset(launch._FORMS))
    request.addfinalizer(launch.clear_caches)
    return "triton"


def check(case: Case, backend: str) -> None:
    ref = case(backend="reference")
    out = case(backend=backend)
    assert len(out) == len(ref)
    for i, (o, r) in enumerate(zip(out, ref)):
        assert_matches(o, r, case, f"{case.name}[{i}] {backend}")


def check_short_row_forms(name: str, shapes, monkeypatch, launch, time_major: bool = False,
                          rotate: bool = False) -> None:
    """``name`` on the Triton backend at each of ``shapes`` (``time_major``: stored ``[T, N]``),
    every bootstrap form it takes (``rotate``: one a shape, in turn), truncations and
    terminations, against the float64 reference; Retrace with and without the lagged algebra
    (``launch._RETRACE_LAGGED``) in both its kernel forms."""
    for lagged in (frozenset(), frozenset({"actions", "sampled"})) if name.startswith("retrace") else (None,):
        if lagged is not None:
            monkeypatch.setattr(launch, "_RETRACE_LAGGED", lagged)
            launch.clear_caches()
        for k, shape in enumerate(shapes):
            for bootstrap in (BOOTSTRAP_FORMS[k % len(BOOTSTRAP_FORMS)],) if rotate else BOOTSTRAP_FORMS:
                if name == "retrace_av" and bootstrap == "next_values":
                    continue
                check(make_case(name, shape, bootstrap=bootstrap, flags="both", seed=shape[0], time_major=time_major),
                      "triton")


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("T", [1, 3, 63])
@pytest.mark.parametrize("bootstrap", BOOTSTRAP_FORMS)
def test_boundary_forms(name, T, bootstrap, backend):
    check(make_case(name, (5, T), bootstrap=bootstrap, seed=T), backend)


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("flags", ["none", "terminated", "truncated"])
def test_flag_kinds(name, flags, backend):
    check(make_case(name, (4, 37), flags=flags, seed=3), backend)


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("T", [3, 63])
def test_time_major(name, T, backend):
    check(make_case(name, (6, T), time_major=True, seed=5 + T), backend)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_per_step_gamma_lam(name, backend):
    check(make_case(name, (5, 40), per_step=True, seed=11), backend)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_coop_split(name, monkeypatch, poisoned):
    """The cooperative split (launch._COOP, scan.barrier_carry) through the interpreter, which
    runs programs one after another and so takes it as PHASE 5 launched twice (the barrier
    itself runs on a GPU only: tests/test_gpu.py::test_coop_split): every boundary form, one
    row and several row programs, short last segments, per-step coefficients with
    truncations."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    use_small_tiles(monkeypatch, poisoned, split=True, coop=True)
    used = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.coop, kw["PHASE"]))
    poisoned.clear_caches()
    try:
        for k, (shape, bootstrap) in enumerate(zip([(1, 63), (5, 40), (3, 50), (2, 33)], BOOTSTRAP_FORMS)):
            check(make_case(name, shape, bootstrap=bootstrap, per_step=k == 3, flags="truncated" if k == 3 else "both",
                            seed=17 + k), "triton")
    finally:
        poisoned.clear_caches()
    assert used and all(u == (True, 5) for u in used), used


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_input_dtypes(name, dtype, backend):
    check(make_case(name, (3, 33), dtype=dtype, seed=7), backend)


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("flag_dtype", [torch.uint8, torch.int64, torch.float32])
def test_flag_dtypes(name, flag_dtype, backend):
    check(make_case(name, (3, 20), flag_dtype=flag_dtype, seed=13), backend)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_batch_dims_and_middle_time_dim(name, backend):
    """[B1, B2, T] batches, and time in the middle of [B1, T, B2] (time_dim=1)."""
    case = make_case(name, (2, 3, 19), seed=17, n_features=(2,) if name in FEATURED else ())
    check(case, backend)

    def mid(x):
        if not isinstance(x, torch.Tensor) or x.dim() < 3 or x.shape[:3] != (2, 3, 19):
            return x
        return x.movedim(2, 1)

    moved = Case(
        case.name, tuple(mid(a) for a in case.args),
        {**{k: mid(v) for k, v in case.kwargs.items()}, "time_dim": 1}, case.T,
    )
    check(moved, backend)

    # the same stored contiguously: its batch dims (strides 57 and 1) do not merge into one
    # row stride, so the kernels read a copy; outputs must still come back [2, 19, 3]
    def dense(x):
        return x.contiguous() if isinstance(x, torch.Tensor) else x

    stored = Case(moved.name, tuple(dense(a) for a in moved.args),
                  {k: dense(v) for k, v in moved.kwargs.items()}, moved.T)
    check(stored, backend)


@pytest.mark.parametrize("name", FEATURED)
@pytest.mark.parametrize("features", [(1,), (3,), (2, 2)])
def test_feature_dims(name, features, backend):
    check(make_case(name, (3, 21), n_features=features, seed=19), backend)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_unbatched_row(name, backend):
    """A single [T] row (no batch dims); last_value is then a 0-d tensor."""
    check(make_case(name, (45,), seed=23), backend)


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("split", ["none", "chunks", "one_chunk"])
def test_time_major_tiles(name, split, monkeypatch, poisoned):
    """[T, N] storage takes the time-major tiles (rows along lanes, time inside threads),
    small ones here: several row programs, several chunks per program; ``chunks``: the
    two-pass split with segment-major summaries, 3 segments of 4 chunks; ``one_chunk``: 12
    segments of one chunk (PHASE 2 reads the summaries after the tile's loads)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    use_small_tiles(monkeypatch, poisoned, split=split != "none")
    if split == "one_chunk":
        monkeypatch.setattr(poisoned, "_TM_MAX_SEGMENTS", 16)
        poisoned.clear_caches()
    try:
        used = plans_used(monkeypatch, poisoned)
        check(make_case(name, (7, 45), time_major=True, seed=41), "triton")
        assert used and all(pl.time_major and pl.block_n == 4 and pl.block_t == 4 for pl in used), used
        want = {"none": (1, 48), "chunks": (3, 16), "one_chunk": (12, 4)}[split]
        assert all((pl.segments, pl.seg_len) == want for pl in used), used
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("name", ["gae", "vtrace", "traces"])
def test_time_major_default_tiles(name, monkeypatch, poisoned):
    """The production time-major tiles (32 rows by 16 steps on one warp), on 130 rows (the
    last row program holds 2): one pass over 3 chunks; the two-pass split in 3 segments
    of 5 chunks; a row of 100 steps as one chunk of 16 rows by 128 steps on 8 warps; V-trace's
    and GAE's one pass of 64-step tiles on 8 warps where the others split (``_TM_WIDE_KINDS``, 4 chunks:
    pipelined); and the 16-row tiles
    (``_TM_NARROW_ROWS``; the last row program holds 2 rows) (the interpreter is slow on
    these tiles: few programs here)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    used = plans_used(monkeypatch, poisoned)
    monkeypatch.setattr(poisoned, "_TM_MIN_ROWS", 1)
    monkeypatch.setattr(poisoned, "_TM_MIN_STEPS", 2)
    monkeypatch.setattr(poisoned, "_TM_SPLIT_BELOW", 0)  # keep one pass for 5 row programs
    # (these small calls would take whole rows of 129-1024 steps on 4-row tiles: the split here)
    monkeypatch.setattr(poisoned, "_TM_SMALL_LONG_ELEMS", {})
    poisoned.clear_caches()
    try:
        check(make_case(name, (130, 37), time_major=True, seed=43), "triton")
        assert [(pl.time_major, pl.block_n, pl.block_t, pl.num_warps, pl.segments) for pl in used] \
            == [(True, 32, 16, 1, 1)]
        used.clear()
        monkeypatch.setattr(poisoned, "_TM_SPLIT_BELOW", 2)
        monkeypatch.setattr(poisoned, "_TM_SPLIT_MIN_ELEMS", 0)
        monkeypatch.setattr(poisoned, "_TM_MAX_SEGMENTS", 3)
        poisoned.clear_caches()
        check(make_case(name, (130, 200), time_major=True, seed=47), "triton")
        assert [(pl.time_major, pl.segments, pl.seg_len) for pl in used] == [(True, 3, 80)]
        used.clear()
        check(make_case(name, (130, 100), time_major=True, seed=53), "triton")
        assert [(pl.time_major, pl.block_n, pl.block_t, pl.num_warps, pl.segments) for pl in used] \
            == [(True, 16, 128, 8, 1)]
        used.clear()
        monkeypatch.setattr(poisoned, "_TM_WIDE_MIN_BLOCKS", 1)
        poisoned.clear_caches()
        check(make_case(name, (130, 200), time_major=True, seed=67), "triton")
        want = (True, 32, 64, 8, 1, 256, 3) if name in ("vtrace", "gae") else (True, 32, 16, 1, 3, 80, 3)
        assert [(pl.time_major, pl.block_n, pl.block_t, pl.num_warps, pl.segments, pl.seg_len, pl.stages)
                for pl in used] == [want]
        used.clear()
        monkeypatch.setattr(poisoned, "_TM_SPLIT_BELOW", 0)
        monkeypatch.setattr(poisoned, "_TM_NARROW_MIN_T", 2)
        poisoned.clear_caches()
        check(make_case(name, (130, 37), time_major=True, seed=61), "triton")
        assert [(pl.time_major, pl.block_n, pl.block_t, pl.num_warps, pl.segments, pl.stages) for pl in used] \
            == [(True, 16, 16, 1, 1, 1)]
    finally:
        poisoned.clear_caches()


def test_time_major_plans():
    """The time-major plan at the shapes it was measured on (launch.plan_time_major): row
    blocks that fill the GPU take one pass; 16-row tiles where that gives enough blocks;
    fewer are split into segments of at most 16 chunks towards 8 programs per SM; rows of
    up to 128 steps are one chunk (of 8 rows in a call too small to split); programs of 4 or
    more chunks are pipelined 3 deep; too few rows (under 128) or steps, or longer rows in too
    small a call to split, take the generic tiles."""
    from rltriton.kernels import launch

    def got(R, T):
        pl = launch.plan_time_major(R, T, 132)
        return None if pl is None else (pl.block_n, pl.block_t, pl.num_warps, pl.segments, pl.seg_len, pl.stages)

    assert got(16384, 512) == (16, 16, 1, 1, 512, 3)  # 16-row tiles; 32 chunks a program: pipelined
    assert got(8192, 256) == (16, 16, 1, 1, 256, 3)  # 16-row tiles instead of a split
    assert got(16384, 64) == (32, 16, 1, 1, 64, 3)  # short rows keep 32
    assert got(32768, 512) == (32, 16, 1, 1, 512, 3)  # 1024 row blocks
    assert got(32768, 64) == (32, 16, 1, 1, 64, 3)
    assert got(4096, 2048) == (32, 16, 1, 8, 256, 3)  # 8 programs per SM: 8; 16 chunks per segment: 8
    assert got(1024, 2048) == (32, 16, 1, 32, 64, 3)
    assert got(512, 4096) == (32, 16, 1, 64, 64, 3)
    assert got(2048, 512) == (32, 16, 1, 16, 32, 1)  # 2 chunks a program: a plain loop
    assert got(600, 5000) == (32, 16, 1, 32, 160, 3)  # 313 chunks in segments of 10
    assert got(256, 8192) == (32, 16, 1, 64, 128, 3)
    assert got(128, 4096) == (32, 16, 1, 64, 64, 3)
    assert got(4096, 128) == (16, 128, 8, 1, 128, 1)  # one chunk of 16 rows, a warp per 16 steps
    assert got(4096, 64) == (16, 64, 4, 1, 64, 1)
    # V-trace and Retrace: one pass of wider tiles instead of a split from 128 row blocks
    assert launch.plan_time_major(4096, 2048, 132, wide=True)[:5] == (32, 64, 8, 1, 2048)
    assert launch.plan_time_major(4100, 700, 132, wide=True)[:5] == (32, 64, 8, 1, 704)
    assert launch.plan_time_major(2048, 2048, 132, wide=True) == launch.plan_time_major(2048, 2048, 132)
    assert launch.plan_time_major(16384, 512, 132, wide=True) == launch.plan_time_major(16384, 512, 132)
    assert got(20000, 37) == (32, 16, 1, 1, 48, 1)  # 3 chunks
    assert got(1024, 128) == (8, 128, 8, 1, 128, 1)  # 2**17 elements: 8-row tiles (_TM_SMALL_ROWS), no split
    assert got(512, 300) is None  # (longer rows in a call that small: the generic tiles without a form)
    assert got(63, 4096) is None and got(32768, 8) is None
    assert got(64, 65536) == (32, 16, 1, 64, 1024, 3)  # 2 row blocks, 64 segments


def test_time_major_deep_stages():
    """launch._tm_deep: TD(lambda)'s kernel (discounted returns too) and the forward kernel
    pipeline the chunk loop of a whole time-major row 4 deep (``_TM_DEEP_STAGES``) on 16-row
    programs of at least 32 chunks; GAE and V-trace, 32-row programs, rows of 16 chunks,
    split rows, time-major lanes tiles and float64 (no kernel form) keep 3 stages or none."""
    from rltriton.kernels import launch

    def stages(R, T, form):
        pl = launch.plan_for(R, T, torch.device("cpu"), time_major=True, form=form, forward=form == "forward",
                             wide=form in launch._TM_WIDE_KINDS)
        return pl.block_n, pl.segments, pl.stages

    for form in ("td_lambda", "forward"):
        assert stages(16384, 512, form) == (16, 1, 4)
        assert stages(8192, 1024, form) == (16, 1, 4)
        assert stages(16384, 500, form) == (16, 1, 4)  # 32 chunks, the last of 4 steps
        assert stages(8192, 256, form) == (16, 1, 3)  # 16 chunks
        assert stages(32768, 512, form) == (32, 1, 3)  # 32-row programs
        assert stages(4096, 2048, form) == (32, 8, 3)  # split
    for form in ("gae", "vtrace", None):
        assert stages(16384, 512, form) == (16, 1, 3)
    assert launch.plan_for(16384, 128, torch.device("cpu"), time_major=True, form="td_lambda").tm_lanes


@pytest.mark.parametrize("late", [False, True], ids=["wait-first", "wait-late"])
@pytest.mark.parametrize("prod", [False, True, 2], ids=["scan", "products", "fold"])
def test_pdl_launch_settings(late, prod, monkeypatch):
    """launch._PDL's launch settings, on the host (the kernels' side needs an sm_90 GPU:
    tests/test_gpu.py::test_pdl_split, and tests/test_kernels_static.py for the order of the
    wait): a split's PHASE 1 compiles the release in and launches plainly; PHASE 2 launches
    with ``launch_pdl`` and waits first (``PDL``) or, with ``_PDL_LATE``, at its first read of
    the summaries (its carry-in form plus 4); a one-pass plan and a device without the
    feature launch as before."""
    from rltriton.kernels import launch

    monkeypatch.setattr(launch, "_PDL", True)
    monkeypatch.setattr(launch, "_PDL_LATE", late)
    cpu = torch.device("cpu")
    assert not launch._pdl(cpu)  # (the interpreter: never)
    monkeypatch.setattr(launch, "_pdl", lambda device: True)  # as on an H200
    meta = dict(CARRY_PROD=prod)
    split = launch.plan_for(1, 1 << 20, cpu)
    assert split.segments > 1
    (_, _, _, kw1), (_, _, _, kw2) = launch.launch_specs(object(), 1, 1 << 20, split, [torch.zeros(1)], meta,
                                                         torch.float32, cpu)[0]
    assert (kw1["PHASE"], kw2["PHASE"]) == (1, 2)
    assert kw1["PDL"] is True and "launch_pdl" not in kw1 and kw1["CARRY_PROD"] is prod
    assert kw2["launch_pdl"] is True
    if late:
        assert kw2["PDL"] is False and kw2["CARRY_PROD"] == int(prod) + launch.CARRY_WAIT.value
    else:
        assert kw2["PDL"] is True and kw2["CARRY_PROD"] is prod
    (spec,) = launch.launch_specs(object(), 1, 512, launch.plan_for(1, 512, cpu), [torch.zeros(1)], meta,
                                  torch.float32, cpu)[0]
    assert "PDL" not in spec[3] and "launch_pdl" not in spec[3] and spec[3]["PHASE"] == 0
    monkeypatch.setattr(launch, "_pdl", lambda device: False)
    kws = [kw for _, _, _, kw in launch.launch_specs(object(), 1, 1 << 20, split, [torch.zeros(1)], meta,
                                                     torch.float32, cpu)[0]]
    assert not any("PDL" in kw or "launch_pdl" in kw for kw in kws) and all(kw["CARRY_PROD"] is prod for kw in kws)


@pytest.mark.parametrize("cc,driver,want", [((9, 0), 12030, True), ((10, 0), 13000, True), ((9, 0), 12020, False),
                                             ((8, 9), 13000, False), ((9, 0), 0, False)],
                         ids=["sm90-12.3", "sm100-13.0", "sm90-12.2", "sm89", "no-driver"])
def test_pdl_capable(cc, driver, want, monkeypatch):
    """The dependent launch needs compute capability 9.0, Triton's ``launch_pdl`` and a CUDA
    driver of 12.3 or newer (launch._PDL_MIN_DRIVER: graphs with programmatic edges); the
    version is read from the driver library (0 where there is none, as on CI)."""
    import ctypes

    from rltriton.kernels import launch

    if not launch._triton_launch_pdl():
        pytest.skip("this Triton has no launch_pdl")
    read = launch._driver_version.__wrapped__  # (uncached)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index=None: cc)
    monkeypatch.setattr(launch, "_driver_version", lambda: driver)
    launch._pdl_capable.cache_clear()
    try:
        assert launch._pdl_capable(0) is want
    finally:
        launch._pdl_capable.cache_clear()

    def missing(name, *a, **k):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(ctypes, "CDLL", missing)
    assert read() == 0


# (estimator, one-chunk segments, carry-in form): every estimator in each carry-in form, on
# segments of one chunk or of two alternately, so that every pair of two settings comes once
# (24 calls of the 48 in the full product; the composition of the carry-in is scan.py's for
# every kernel)
CARRY_CASES = [pytest.param(name, bool((n + p) % 2 == 0), products,
                            id=f"{pid}-{'one-chunk' if (n + p) % 2 == 0 else 'chunk-loop'}-{name}")
               for n, name in enumerate(ESTIMATORS)
               for p, (products, pid) in enumerate(((True, "products"), (False, "scan"), ("fold", "fold")))]


def test_carry_cases_cover_every_pair():
    """CARRY_CASES holds every pair of values of any two of its three settings."""
    cases = [c.values for c in CARRY_CASES]
    values = (ESTIMATORS, (True, False), (True, False, "fold"))
    for i, j in itertools.combinations(range(3), 2):
        assert {(c[i], c[j]) for c in cases} == set(itertools.product(values[i], values[j])), (i, j)


@pytest.mark.parametrize(("name", "one_chunk", "products"), CARRY_CASES)
def test_carry_products(name, one_chunk, products, monkeypatch, poisoned):
    """PHASE 2's carry-in three ways (launch._CARRY_PRODUCTS): the default sum of products (a
    forward cumprod of the summaries' b read one segment late, and reductions; the split
    tests elsewhere run it too), the same with the initial carry folded into the sum as one
    more column (launch._CARRY_FOLD_INIT, ``fold``: CARRY_PROD = 2), and the two-operand scan
    over the summaries it replaced, forced here, on the interpreter: every estimator against
    the float64 reference, split into one-chunk segments (the carry-in composed after the
    tile's loads, scan.scan_step) or into segments of two chunks (composed first,
    scan.segment_setup; CARRY_CASES: every pair of settings), batch- and time-major; 128
    steps make 8 segments of 16, so that the segment after all others in scan order has its
    folded column in the last of the 8."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    use_small_tiles(monkeypatch, poisoned, split=True)
    monkeypatch.setattr(poisoned, "_CARRY_PRODUCTS", bool(products))
    monkeypatch.setattr(poisoned, "_CARRY_FOLD_INIT", poisoned._CARRY_FOLD_FORMS if products == "fold" else frozenset())
    monkeypatch.setattr(poisoned, "_MAX_SEGMENTS", 8)
    monkeypatch.setattr(poisoned, "_SEG_STEPS", 16 if one_chunk else 32)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.segments, pl.seg_len <= pl.block_t,
                                                             kw.get("CARRY_PROD")))
    poisoned.clear_caches()
    try:
        for shape in ((5, 63), (3, 40), (2, 97), (2, 128)):
            seen.clear()
            check(make_case(name, shape, seed=11 + shape[1]), "triton")
            segs, one, prod = seen[0]
            assert segs > 1 and one == one_chunk and prod == {"fold": 2}.get(products, products), seen
        check(make_case(name, (6, 63), time_major=True, seed=5), "triton")
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("name", ESTIMATORS)
def test_seg_flip(name, monkeypatch, poisoned):
    """PHASE 2 taking the segments in reverse launch order (launch._SEG_FLIP, scan.program_tile)
    on the interpreter: every estimator against the float64 reference, split into one-chunk
    segments and into segments of two chunks; the plan must split and the flag reach PHASE 2
    (never PHASE 1) of batch-major calls from _SEG_FLIP_MIN_ELEMS elements (lowered here to
    5 x 63), not those below, nor time-major ones (they keep the launch order). Any
    bijection of the segments is correct (the passes need no order); with poisoned outputs
    a segment taken twice or never fails (``seg // 2`` in place of the flip fails all 8)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    use_small_tiles(monkeypatch, poisoned, split=True)
    monkeypatch.setattr(poisoned, "_SEG_FLIP", True)
    monkeypatch.setattr(poisoned, "_SEG_FLIP_MIN_ELEMS", 5 * 63)
    monkeypatch.setattr(poisoned, "_MAX_SEGMENTS", 8)
    used = launches_used(monkeypatch, poisoned)

    def flags() -> list:  # SEG_FLIP of each launch of the first call recorded
        return [kw.get("SEG_FLIP") for _, _, _, kw in used[0]]

    try:
        for seg_steps, shape, flip in ((16, (5, 63), True), (32, (5, 97), True), (16, (3, 97), False)):
            monkeypatch.setattr(poisoned, "_SEG_STEPS", seg_steps)
            poisoned.clear_caches()
            used.clear()
            check(make_case(name, shape, seed=17 + shape[1]), "triton")
            assert flags() == [False, flip], (shape, flags())
        used.clear()
        check(make_case(name, (6, 63), time_major=True, seed=6), "triton")
        assert flags() == [False, False], flags()
    finally:
        poisoned.clear_caches()


def test_time_major_few_rows_plan():
    """Few time-major rows (launch._TM_FEW_*): 4, 8 or 16 rows of enough steps for 128
    segments take one tile of all the rows by the kind's steps on its warps, its chunks a
    segment, pipelined its stages deep (``few``, the kind's entry of _TM_FEW_TILES: the
    first tile whose rows they reach); otherwise (or with no tile) the generic tiles (None)."""
    from rltriton.kernels import launch

    long, short = (512, 4, 2, 1), (128, 4, 8, 3)

    def got(R, T, few=((4, long),)):
        pl = launch.plan_time_major(R, T, 132, few=few)
        return None if pl is None else (pl.block_n, pl.block_t, pl.num_warps, pl.segments, pl.seg_len,
                                        pl.time_major, pl.stages)

    assert got(16, 262144) == (16, 512, 4, 256, 1024, True, 1)
    assert got(4, 262144) == (4, 512, 4, 256, 1024, True, 1)
    assert got(8, 200000) == (8, 512, 4, 196, 1024, True, 1)  # the last segment is short
    assert got(16, 131072) == (16, 512, 4, 128, 1024, True, 1)
    assert got(16, 130048) is None  # 127 segments: the generic split
    by_rows = ((16, short), (4, long))  # GAE's form
    assert got(16, 262144, by_rows) == (16, 128, 4, 256, 1024, True, 3)
    assert got(8, 262144, by_rows) == (8, 512, 4, 256, 1024, True, 1)
    assert got(8, 140000, ((8, (128, 8, 4, 3)),)) == (8, 128, 8, 274, 512, True, 3)
    assert got(4, 262144, ((8, short),)) is None  # fewer rows than any of the kind's tiles
    # rows that would pad the tile, too many, too few
    assert got(9, 200000) is None and got(12, 262144) is None
    assert got(32, 262144) is None and got(2, 524288) is None and got(1, 262144) is None
    assert got(16, 262144, few=None) is None  # a kind with no few-rows tile
    cpu = torch.device("cpu")
    assert launch.plan_for(16, 262144, cpu, time_major=True, few=((4, long),)).block_n == 16
    assert launch.plan_for(16, 262144, cpu, time_major=False, few=((4, long),)) == launch.plan(16, 262144)
    # the defaults: the short tiles where they were timed faster (launch._TM_FEW_TILES)
    tiles = {k: [got(r, 262144, launch._TM_FEW_TILES[k])[1] for r in (4, 8, 16)]
             for k in ("gae", "td_lambda", "vtrace", "retrace", "forward")}
    assert tiles == {"gae": [512, 512, 128], "td_lambda": [512, 128, 128], "vtrace": [128] * 3,
                     "retrace": [128] * 3, "forward": [512] * 3}, tiles


@pytest.mark.parametrize("name", ESTIMATORS)
def test_time_major_few_rows(name, monkeypatch, poisoned):
    """The few-rows time-major tiles on the interpreter (shrunk: 4-step chunks, 2 a segment,
    from 2 segments, the default tiles' warps and stages): every estimator against the
    float64 reference, 4, 8 and 16 rows, with resets inside rows and a short last segment;
    each estimator's kind of launch._TM_FEW_TILES (rollouts.FEW_ROWS_KIND) takes its tile for
    that many rows, or the generic tiles where it lists none."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    shrunk = {k: tuple((rows, (4, w, 2, st)) for rows, (_, w, _, st) in v) for k, v in poisoned._TM_FEW_TILES.items()}
    monkeypatch.setattr(poisoned, "_TM_FEW_TILES", shrunk)
    monkeypatch.setattr(poisoned, "_TM_FEW_MIN_SEGMENTS", 2)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.time_major, pl.block_n, pl.block_t, pl.segments,
                                                             pl.stages))
    poisoned.clear_caches()
    try:
        for shape in ((4, 37), (8, 9), (16, 41)):
            tile = next((t for rows, t in shrunk.get(FEW_ROWS_KIND[name], ()) if shape[0] >= rows), None)
            seen.clear()
            check(make_case(name, shape, time_major=True, seed=91 + shape[0]), "triton")
            if tile:
                assert seen[0] == (True, shape[0], 4, -(-shape[1] // 8), tile[3]), seen
            else:
                assert seen[0][1:3] != (shape[0], 4), seen
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("name", ["vtrace", "gae", "retrace_av"])
def test_long_row_plans_by_estimator(name, monkeypatch, poisoned):
    """Rows of more than 2048 steps take the estimator's settings (launch._LONG_ROWS): V-trace
    walks 1024-step chunks on 4 warps, and V-trace and Retrace split rows into one-chunk
    segments of 1024 steps (on 4 and 8 warps); the others split rows of more than
    launch._SHORT_SPLIT_MAX_T steps into 2048-step segments on 8 warps, and shorter rows into
    1024-step segments on 4 (launch._SHORT_SPLIT). Shorter rows are planned the same for every
    estimator. The launcher passes the settings by estimator (both Retrace forms)."""
    launch = poisoned
    default, vtrace, retrace = launch._LONG_ROWS_DEFAULT, launch._LONG_ROWS["vtrace"], launch._LONG_ROWS["retrace"]

    def got(shape, long_rows):
        pl = launch.plan(*shape, 132, long_rows)
        return pl.block_t, pl.num_warps, pl.segments, pl.seg_len

    assert got((512, 4096), default) == (1024, 8, 1, 4096)  # a loop over 4 chunks
    assert got((512, 4096), vtrace) == (1024, 4, 1, 4096)
    assert got((512, 4096), retrace) == (1024, 8, 1, 4096)
    assert got((16, 262144), default) == (1024, 4, 256, 1024)  # the split
    assert got((1, 1048576), default) == (2048, 8, 512, 2048)  # a million steps: 2048-step segments
    assert got((16, 262144), vtrace) == (1024, 4, 256, 1024)
    assert got((16, 262144), retrace) == (1024, 8, 256, 1024)
    assert got((1, 1048576), retrace) == (1024, 8, 1024, 1024)
    assert got((1, 1 << 21), retrace) == (1024, 8, 1024, 2048)  # at most _MAX_SEGMENTS: 2 chunks each
    assert got((200, 4096), vtrace) == (1024, 4, 1, 4096)  # too few chunks to split: the loop
    for shape in ((4096, 2048), (16384, 512), (4096, 128), (32768, 8)):
        assert got(shape, vtrace) == got(shape, retrace) == got(shape, default), shape
    # time-major rows too few for the time-major tiles take the generic plan with the default
    cpu = torch.device("cpu")
    assert launch.plan_for(16, 262144, cpu, time_major=True, long_rows=vtrace) == launch.plan(16, 262144, 132)
    assert launch.plan_for(16, 262144, cpu, long_rows=vtrace) == launch.plan(16, 262144, 132, vtrace)
    if not INTERPRET:
        return
    asked = []
    orig = launch.plan_for
    monkeypatch.setattr(launch, "plan_for", lambda *a, **k: asked.append(k["long_rows"]) or orig(*a, **k))
    poisoned.clear_caches()
    check(make_case(name, (3, 9), bootstrap="last_value", flags="both", seed=5), "triton")
    assert asked == [{"vtrace": vtrace, "gae": default, "retrace_av": retrace}[name]], asked


LONG_SPLIT_CASES = ["discounted_returns", "td_lambda", "traces", "prefix_sum", "vtrace", "gae"]


@pytest.mark.parametrize("name", LONG_SPLIT_CASES)
def test_long_split_plans(name, monkeypatch, poisoned):
    """Split rows of 262144 steps (2^18 + 1 for TD(lambda) and V-trace) to 2^20 take the
    form's one-chunk segments of launch._LONG_SPLIT: 2048 steps on 4 warps for discounted
    returns (TD(lambda)'s kernel without values), the forward kernel (traces, prefix sums) and
    TD(lambda), 2048 on 8 for V-trace, and past 262144 steps 2048 on 4 for GAE (session 33,
    after launch._INTERIOR; at 262144 it keeps launch._SHORT_SPLIT's). Rows
    outside those bounds, rows whose segments would be fewer than _LONG_SPLIT_MIN_PROGRAMS
    programs an SM (1 x 262144: 128 segments of 2048 steps, slower than 256 of 1024 on the
    H200), time-major rows and rows not split keep their plans. The launcher passes the entry
    by estimator (discounted returns: by the absent values)."""
    launch = poisoned
    form = {"traces": "forward", "prefix_sum": "forward"}.get(name, name)
    entry = launch._LONG_SPLIT.get(form)
    long_rows = launch._LONG_ROWS.get(name, launch._LONG_ROWS_DEFAULT)

    def got(shape, split=entry):
        pl = launch.plan(*shape, 132, long_rows, form == "forward", long_split=split)
        return pl.block_t, pl.num_warps, pl.segments, pl.seg_len

    expect = {"discounted_returns": ((2048, 4, 128, 2048), (2048, 4, 512, 2048)),
              "forward": ((2048, 4, 128, 2048), (2048, 4, 512, 2048)),
              "td_lambda": ((1024, 4, 256, 1024), (2048, 4, 512, 2048)),
              "vtrace": ((1024, 4, 256, 1024), (2048, 8, 512, 2048)),
              "gae": ((1024, 4, 256, 1024), (2048, 4, 512, 2048))}[form]
    assert (got((16, 262144)), got((1, 1 << 20))) == expect
    assert got((16, 262144), None) == (1024, 4, 256, 1024)  # without the entry: _SHORT_SPLIT
    assert got((2, 262144)) == got((2, 262144), None)  # 256 programs: 1.94 an SM
    if entry is not None and entry[1] == 262144:
        assert got((3, 262144))[:2] == (2048, entry[0][1])  # 384 programs: 2.9 an SM
    for shape in ((64, 65536), (1, 131072), (1, 262144), (1, 1 << 21), (512, 4096), (4096, 512)):
        assert got(shape) == got(shape, None), shape  # outside the bounds, or not split
    cpu = torch.device("cpu")
    tm = launch.plan_for(16, 262144, cpu, time_major=True, long_split=entry)
    assert tm == launch.plan_for(16, 262144, cpu, time_major=True), tm
    if not INTERPRET:
        return
    asked = []
    orig = launch.plan_for
    monkeypatch.setattr(launch, "plan_for", lambda *a, **k: asked.append(k.get("long_split")) or orig(*a, **k))
    poisoned.clear_caches()
    check(make_case(name, (3, 9), bootstrap="last_value", flags="both", seed=5), "triton")
    assert asked == [entry], asked


def test_few_rows_split_plan():
    """Rows too few to fill the GPU split in time at any size (launch._SPLIT_MIN_ELEMS = 0):
    from _SPLIT_MIN_CHUNKS chunks, or from _SPLIT_FEW_CHUNKS where the row programs are fewer
    than the SMs; with as many programs as SMs, rows of fewer chunks keep one pass (walked in
    chunks), as do rows of fewer than _SPLIT_FEW_CHUNKS chunks."""
    from rltriton.kernels import launch

    vtrace = launch._LONG_ROWS["vtrace"]

    def got(shape, long_rows=launch._LONG_ROWS_DEFAULT):
        pl = launch.plan(*shape, 132, long_rows)
        return pl.block_t, pl.segments, pl.seg_len

    assert got((1, 131072)) == (1024, 128, 1024)  # was one program walking 64 chunks
    assert got((8, 16384)) == (1024, 16, 1024)
    assert got((1, 8192)) == (1024, 8, 1024)
    assert got((128, 4096)) == (1024, 4, 1024)  # 4 chunks, fewer programs than SMs
    assert got((1, 3000)) == (1024, 1, 3072)  # 3 chunks: one pass
    assert got((256, 4096)) == (1024, 1, 4096)  # 4 chunks on as many programs as SMs: the loop
    assert got((256, 4096), vtrace) == (1024, 1, 4096)
    assert got((64, 16384), vtrace) == (1024, 16, 1024)  # 16 chunks: split
    assert got((132, 4096)) == (1024, 1, 4096)


def test_loop_tiles_plan():
    """A row one program walks in chunks takes its form's chunk and pipelining depth
    (launch._LOOP_TILES: V-trace 512-step chunks 3 deep) on rows of whole chunks and at
    least launch._LOOP_TILE_MIN_PROGRAMS programs an SM, the others 1024-step chunks
    unpipelined; rows split in time, time-major storage and the forward kernel keep theirs."""
    from rltriton.kernels import launch

    cpu = torch.device("cpu")

    def got(shape, form, **kw):
        pl = launch.plan_for(*shape, cpu, form=form, long_rows=launch._LONG_ROWS.get(form, launch._LONG_ROWS_DEFAULT),
                             **kw)
        return pl.block_t, pl.num_warps, pl.segments, pl.seg_len, pl.stages

    assert launch._LOOP_TILES == {"vtrace": (512, 3)}
    for shape in ((512, 4096), (384, 4096), (2048, 4096), (512, 8192), (1000, 4096)):
        assert got(shape, "vtrace") == (512, 4, 1, shape[1], 3), shape
    # rows that end in a partial chunk, or on fewer than 2.5 programs an SM: the default
    assert got((512, 3008), "vtrace") == got((512, 3000), "vtrace") == (1024, 4, 1, 3072, 1)
    assert got((330, 4096), "vtrace") == (512, 4, 1, 4096, 3)
    assert got((329, 4096), "vtrace") == (1024, 4, 1, 4096, 1)
    for form in ("gae", "td_lambda", "retrace", "retrace_actions"):
        pl = got((4225, 4096), form)
        assert pl[0] == 1024 and pl[2:] == (1, 4096, 1), (form, pl)
    fwd = got((4225, 4096), "forward", forward=True)  # the forward kernel's own loop
    assert (fwd[0], fwd[4]) == (launch._LOOP_BLOCK_T, launch._FWD_LOOP_STAGES)
    assert got((64, 65536), "vtrace") == (1024, 4, 64, 1024, 1)  # split: one chunk a segment
    # too few time-major rows for their tiles: the generic tiles' default loop
    tm = launch.plan_for(32, 3000, cpu, time_major=True, form="vtrace", long_rows=launch._LONG_ROWS["vtrace"])
    assert (tm.block_t, tm.segments, tm.stages) == (1024, 1, 1), tm


def test_one_chunk_plan():
    """Rows of 2049 to launch._ONE_CHUNK_MAX_T steps on few programs are one chunk of
    next_pow2(T) steps (launch._ONE_CHUNK_ROWS): 4096-step rows on at most 32 programs an SM
    for GAE and the forward kernel (8 for TD(lambda), 2 for V-trace and Retrace, 1 for its
    action form), on 16 warps up to one an SM and 8 beyond (GAE's and TD(lambda)'s kernels: 16
    up to 8 an SM, launch._ONE_CHUNK_WARPS), there only for T a multiple of 16;
    8192-step rows on 16 warps from 0.7 to 2 programs an SM (3 for GAE and the action form, 1
    for V-trace and the forward kernel); Retrace's forms only for T a multiple of 16. Other
    calls keep their plans: fewer or more rows, longer rows, time-major storage, and plans
    asked for without a form."""
    from rltriton.kernels import launch

    cpu = torch.device("cpu")
    vtrace, retrace = launch._LONG_ROWS["vtrace"], launch._LONG_ROWS["retrace"]
    long_rows = {"vtrace": vtrace, "retrace": retrace, "retrace_actions": retrace}

    def got(shape, form="gae"):
        pl = launch.plan_for(*shape, cpu, form=form, forward=form == "forward",
                             long_rows=long_rows.get(form, launch._LONG_ROWS_DEFAULT))
        return pl.block_n, pl.block_t, pl.num_warps, pl.segments, pl.seg_len

    def kept(shape, form="gae"):  # the plan without the rule
        return launch.plan(*shape, 132, long_rows.get(form, launch._LONG_ROWS_DEFAULT), form == "forward",
                           loop_tile=launch._LOOP_TILES.get(form, launch._LOOP_TILE_DEFAULT))[:5]

    one_4k_16, one_4k_8, one_8k = (1, 4096, 16, 1, 4096), (1, 4096, 8, 1, 4096), (1, 8192, 16, 1, 8192)
    assert got((1, 4096)) == one_4k_16 != kept((1, 4096))  # was split in 4 segments
    for form in launch._FORMS + ("forward",):
        assert got((128, 4096), form) == got((132, 4096), form) == one_4k_16, form
        assert got((128, 8192), form) == got((93, 8192), form) == got((128, 6000), form) == one_8k, form
        assert got((92, 8192), form) == kept((92, 8192), form), form  # fewer than 0.7 an SM: the split
        assert got((32, 8192), form) == kept((32, 8192), form) and got((32, 8192), form)[3] == 8, form  # split
        assert got((8, 16384), form) == kept((8, 16384), form), form  # longer rows
        assert got((1, 2048), form) == kept((1, 2048), form) == (1, 2048, 16 if form != "forward" else 8, 1, 2048)
    # 16 warps beyond an SM's worth of programs for GAE's kernel and Retrace's (launch.
    # _ONE_CHUNK_WARPS: up to 8 programs an SM; Retrace's one chunk up to 4, _ONE_CHUNK_ROWS),
    # 8 for the others (TD(lambda)'s kernel under a register cap since session 48)
    assert got((133, 4096)) == got((1056, 4096)) == one_4k_16
    assert got((133, 4096), "retrace") == got((528, 4096), "retrace") == one_4k_16
    assert got((133, 4096), "retrace_actions") == got((528, 4096), "retrace_actions") == one_4k_16
    assert got((1057, 4096)) == got((4224, 4096)) == got((133, 4096), "forward") == one_4k_8
    assert got((4224, 4096), "forward") == got((133, 4096), "vtrace") == got((133, 4096), "td_lambda") == one_4k_8
    assert got((264, 4096), "vtrace") == got((1056, 4096), "td_lambda") == one_4k_8
    assert got((132, 4096), "td_lambda") == one_4k_16
    # ... and a whole row of 1025-2048 steps on 8 warps beyond an SM's worth (16 for the
    # others but the forward kernel's 8, and for every form on fewer programs)
    for form in launch._FORMS + ("forward",):
        eight = form in ("gae", "td_lambda", "forward")
        for T in (1025, 2048):
            assert got((132, T), form) == (1, 2048, 8 if form == "forward" else 16, 1, 2048), (form, T)
            assert got((133, T), form) == got((8192, T), form) == (1, 2048, 8 if eight else 16, 1, 2048), (form, T)
        assert kept((133, 2048), form)[2] == (8 if form == "forward" else 16)  # (plan's default: 16)
    assert got((4225, 4096)) == kept((4225, 4096)) == (1, 1024, 8, 1, 4096)
    assert got((4225, 4096), "forward") == kept((4225, 4096), "forward")
    assert got((1057, 4096), "td_lambda") == kept((1057, 4096), "td_lambda")
    assert got((265, 4096), "vtrace") == kept((265, 4096), "vtrace")
    assert got((529, 4096), "retrace") == kept((529, 4096), "retrace")
    assert got((529, 4096), "retrace_actions") == kept((529, 4096), "retrace_actions")
    assert got((396, 8192)) == got((264, 8192), "td_lambda") == got((396, 8192), "retrace_actions") == one_8k
    assert got((264, 8192), "retrace") == one_8k
    assert got((397, 8192)) == kept((397, 8192))
    assert got((265, 8192), "td_lambda") == kept((265, 8192), "td_lambda")
    assert got((265, 8192), "retrace") == kept((265, 8192), "retrace")
    assert got((133, 8192), "vtrace") == kept((133, 8192), "vtrace")
    assert got((133, 8192), "forward") == kept((133, 8192), "forward")
    # T not a multiple of 16: 16 warps only, and never for Retrace
    assert got((100, 3000)) == got((2, 2049), "vtrace") == got((100, 3000), "forward") == one_4k_16
    assert got((100, 3000), "retrace") == kept((100, 3000), "retrace")
    assert got((100, 3000), "retrace_actions") == kept((100, 3000), "retrace_actions")
    assert got((512, 3000)) == kept((512, 3000)) and got((200, 3000), "forward") == kept((200, 3000), "forward")
    assert got((128, 5000)) == one_8k and got((128, 5000), "retrace") == kept((128, 5000), "retrace")
    assert launch.plan_for(128, 8192, cpu, time_major=True, form="gae") == launch.plan_for(128, 8192, cpu, True)
    assert launch.plan_for(128, 8192, cpu) == launch.plan(128, 8192, 132)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_one_chunk_rows(name, monkeypatch, poisoned):
    """A whole row of 3000 steps in one chunk of 4096 in the group form, and one of 5000 in one
    chunk of 8192 in the group form scanned in two levels (what Triton < 3.7 compiles; the
    8192-step bound lowered so that one row takes it), against the float64 reference with
    outputs poisoned (launch._ONE_CHUNK_ROWS); the boundary forms rotate with the estimator.
    A float64 call keeps the plan before (a walk of 1024-step chunks)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    launch = poisoned
    monkeypatch.setattr(launch, "_ONE_CHUNK_ROWS", {})
    monkeypatch.setattr(launch, "_ONE_CHUNK_DEFAULT", (4.0, 0.0, 2.0, True))
    monkeypatch.setattr(launch, "_GROUP_SCAN", True)
    seen = plans_used(monkeypatch, launch, lambda pl, kw: (pl.block_t, pl.segments, pl.seg_len, kw.get("GROUP_TILES")))
    i = ESTIMATORS.index(name)
    try:
        for k, (group_tiles, T, p2) in enumerate([(True, 3000, 4096), (False, 5000, 8192)]):
            monkeypatch.setattr(launch, "_GROUP_TILES", group_tiles)
            launch.clear_caches()  # (and the replays of the first call)
            seen.clear()
            check(make_case(name, (1, T), bootstrap=BOOTSTRAP_FORMS[(i + 2 * k) % 4], per_step=k == 1, seed=61 + k),
                  "triton")
            form = None if name in FEATURED else (True if group_tiles else 2)  # (the forward kernel has one)
            assert seen == [(p2, 1, p2, form)], seen
        # float64 arithmetic keeps the plans before (its registers would spill in such tiles)
        seen.clear()
        check(make_case(name, (1, 3000), dtype=torch.float64, seed=63), "triton")
        assert seen and seen[0][:3] == (1024, 1, 3072), seen
    finally:
        launch.clear_caches()


def test_tiny_tile_plans():
    """Batch-major tiles of at most launch._TINY_T steps (rows of 1-8 steps) hold
    _TINY_WARP_ELEMS elements a warp (2 a thread; 1 for Retrace's action form,
    _TINY_WARP_ELEMS_BY_FORM), whatever the rows (one warp for a tile of fewer), the forward
    kernel's too; 16-step tiles keep
    the short tiles' 4 a thread (or their own plans); time-major storage keeps its own tiles."""
    from rltriton.kernels import launch

    cpu = torch.device("cpu")
    for form in (*launch._FORMS, "forward"):
        per_thread = 1 if form == "retrace_actions" else 2
        for R, T in ((32768, 8), (32768, 5), (32768, 4), (32768, 1), (7, 8), (3, 2), (100000, 3)):
            pl = launch.plan_for(R, T, cpu, forward=form == "forward", form=form)
            assert pl.block_t <= 8 and not pl.lanes, (form, R, T, pl)
            elems = pl.block_n * pl.block_t
            # (a tile of fewer elements, padded to a warp's rows, is one warp)
            assert elems == 32 * pl.num_warps * per_thread or (elems < 32 * per_thread and pl.num_warps == 1), \
                (form, R, T, pl)
        pl = launch.plan_for(32768, 16, cpu, forward=form == "forward", form=form)
        assert pl.block_n * pl.block_t >= 4 * 32 * pl.num_warps, (form, pl)
        assert launch.plan_for(32768, 8, cpu, time_major=True, form=form) != launch.plan_for(32768, 8, cpu, form=form)
    assert launch.plan(32768, 8) == (32, 8, 4, 1, 8) + launch.Plan(1, 1, 1, 1, 1)[5:]
    assert launch.plan(32768, 8, tiny_warp_elems=128).num_warps == 2


def test_desc_tiles_plan():
    """Batch-major tiles of at most launch._DESC_MAX_T steps in time order (Triton < 3.7) take
    the descending form (``GROUP_TILES = 6``) for the forms of _DESC_FORMS on rows whose
    length is not a multiple of 8, and on rows of 8 steps for those of _DESC_ALIGNED_FORMS
    only; Retrace's action form, longer tiles, the group form (Triton >= 3.7), lanes and
    time-major tiles keep theirs, and so does every tile with ``_DESC_MAX_T = 0``."""
    from rltriton.kernels import launch
    from rltriton.kernels.launch import Plan, _with_group_scan

    def form_of(pl: Plan, form: str, T: int, group_tiles: bool = False) -> object:
        return _with_group_scan({"GROUP_TILES": group_tiles}, pl, form, T)["GROUP_TILES"]

    want_8 = {"gae": False, "td_lambda": 6, "vtrace": False, "retrace": False, "retrace_actions": False}
    for form in launch._FORMS:
        for R, T in ((32768, 8), (32768, 5), (7, 8), (100000, 3), (3, 1), (5000, 6)):
            pl = launch.plan(R, T)
            assert pl.block_t <= launch._DESC_MAX_T == 8, (R, T, pl)
            want = want_8[form] if T % 8 == 0 else (False if form == "retrace_actions" else 6)
            assert form_of(pl, form, T) == want, (form, R, T, pl)
            assert form_of(pl, form, T, True) is True  # (the group form, Triton >= 3.7)
        assert form_of(Plan(32, 16, 4, 1, 16), form, 16) in (False, 2, 3)
        assert form_of(Plan(32, 8, 2, 1, 8, time_major=True), form, 7) is False
        assert form_of(Plan(64, 16, 4, 1, 16, tm_lanes=True), form, 16) == 5


@pytest.mark.parametrize("name", ["gae", "td_lambda", "discounted_returns", "vtrace", "retrace", "retrace_av"])
@pytest.mark.parametrize("split", [False, True], ids=["loop", "split"])
def test_desc_tiles(name, split, monkeypatch, poisoned):
    """Tiles in descending time (``GROUP_TILES = 6``) of 8 steps, every kernel form, which
    the planner gives rows of one chunk (launch._desc_tiles), here also walked in a chunk loop (T = 21: 3
    chunks, the last partly out of range) or split in time (3 segments: PHASE 1's maps and
    PHASE 2's carry-in), several rows a program; the bootstrap forms in turn, Retrace in
    both algebras; NaN-poisoned outputs against the float64 reference."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    use_small_tiles(monkeypatch, poisoned, split=split)
    monkeypatch.setattr(poisoned, "_MAX_BLOCK_T", 8)
    monkeypatch.setattr(poisoned, "_GROUP_TILES", False)
    monkeypatch.setattr(poisoned, "_SEG_STEPS", 8)
    monkeypatch.setattr(poisoned, "_DESC_FORMS", frozenset(poisoned._FORMS))  # (the action form too)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (kw["GROUP_TILES"], pl.block_t, pl.segments > 1))
    poisoned.clear_caches()
    try:
        check_short_row_forms(name, [(5, 21), (9, 3)], monkeypatch, poisoned, rotate=True)
    finally:
        poisoned.clear_caches()
    assert set(seen) == {(6, 8, split), (6, 4, False)}, seen


@pytest.mark.parametrize("name", ["gae", "td_lambda", "discounted_returns", "vtrace", "retrace", "retrace_av"])
def test_tiny_tiles_time_order(name, monkeypatch, poisoned):
    """Rows of 7 and 8 steps on the tiny tiles in time order (Triton < 3.7's form: 2 steps a
    thread, ``GROUP_TILES`` 0, no lanes or descending tiles), whose PHASE 0 takes segment 0
    (scan.segment_zero) for its vector accesses: every kernel form, the bootstrap forms in
    turn, Retrace in both algebras, a last tile of fewer rows, NaN-poisoned outputs against
    the float64 reference."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    monkeypatch.setattr(poisoned, "_GROUP_TILES", False)
    monkeypatch.setattr(poisoned, "_ROW_LANES", False)
    monkeypatch.setattr(poisoned, "_DESC_MAX_T", 0)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (kw["GROUP_TILES"], pl.block_t, pl.segments))
    poisoned.clear_caches()
    try:
        check_short_row_forms(name, [(37, 8), (21, 7)], monkeypatch, poisoned, rotate=True)
    finally:
        poisoned.clear_caches()
    assert set(seen) == {(False, 8, 1)}, seen


def test_segment_zero_rule():
    """scan.segment_zero, the one rule both kernels ask before taking the segment as the
    constant 0: PHASE 0 only (a split's passes have several segments), batch-major tiles of at
    most 8 steps, and the kernel's own gate (the backward kernels pass 8-step tiles in time
    order or as lanes, the forward kernel all but its time-major lanes tiles)."""
    from rltriton.kernels.scan import segment_zero

    assert segment_zero(0, 8, False, True) and segment_zero(0, 4, False, True) and segment_zero(0, 1, False, True)
    assert not segment_zero(1, 8, False, True) and not segment_zero(2, 8, False, True)
    assert not segment_zero(0, 16, False, True) and not segment_zero(0, 128, False, True)
    assert not segment_zero(0, 8, True, True)
    assert not segment_zero(0, 8, False, False)


def test_forward_tiles_plan():
    """The forward kernel's batch-major plans (launch._FWD_TILES): short rows of 16 to 128
    steps in tiles of up to _FWD_SHORT_TILE elements, 8 a thread, halved while the call
    would have fewer than _PROGRAMS_PER_SM programs an SM; 8-step rows, the split and
    time-major tiles as the backward kernels'; a whole row in one chunk on at most 8 warps; a
    row walked in chunks on 4 warps, pipelined, or in 2048-step chunks on 8 warps where a
    backward kernel would split it (launch._FWD_WALK_MIN_SM_SHARE)."""
    from rltriton.kernels import launch

    def fwd(*shape):
        pl = launch.plan(*shape, 132, launch._LONG_ROWS_DEFAULT, True)
        return pl.block_n, pl.block_t, pl.num_warps, pl.segments, pl.seg_len, pl.stages

    assert fwd(32768, 8) == (32, 8, 4, 1, 8, 1) == launch.plan(32768, 8)[:5] + (1,)  # (_TINY_WARP_ELEMS)
    assert fwd(32768, 16) == (64, 16, 4, 1, 16, 1)  # 128 rows would make 256 programs: halved
    assert fwd(32768, 64) == (32, 64, 8, 1, 64, 1)
    assert fwd(16384, 128) == (16, 128, 8, 1, 128, 1)
    assert fwd(4096, 128) == (8, 128, 4, 1, 128, 1)
    assert fwd(1024, 128) == (2, 128, 2, 1, 128, 1)  # halved back to the backward kernels' tile
    assert fwd(4096, 2048) == (1, 2048, 8, 1, 2048, 1)  # backward: 16 warps
    assert fwd(512, 4096) == (1, 1024, 4, 1, 4096, launch._FWD_LOOP_STAGES)
    # fewer programs than an SM's two, from 0.7 an SM (_FWD_WALK_MIN_SM_SHARE): walked in 2048-step chunks
    # on 8 warps rather than split; fewer rows, or rows longer than _FWD_WALK_MAX_T, split
    assert fwd(128, 8192) == (1, 2048, 8, 1, 8192, launch._FWD_LOOP_STAGES)
    assert fwd(256, 4096) == (1, 2048, 8, 1, 4096, launch._FWD_LOOP_STAGES)
    assert fwd(96, 16384) == (1, 2048, 8, 1, 16384, launch._FWD_LOOP_STAGES)
    assert fwd(64, 8192) == (1, 1024, 4, 8, 1024, 1) == launch.plan(64, 8192, 132)[:5] + (1,)
    assert fwd(128, 32768) == (1, 1024, 4, 32, 1024, 1)
    assert fwd(264, 4096) == fwd(512, 4096)  # two programs an SM: the 1024-step chunks
    assert launch.plan(16, 262144, forward=True) == launch.plan(16, 262144)
    cpu = torch.device("cpu")
    assert launch.plan_for(4096, 1024, cpu, time_major=True, forward=True) == launch.plan_for(4096, 1024, cpu, True)
    assert launch.plan_for(32768, 64, cpu, forward=True) == launch.plan(32768, 64, forward=True)


@pytest.mark.parametrize("name", ["traces", "prefix_sum"])
def test_forward_tiles(name, monkeypatch, poisoned):
    """The forward kernel's own tiles (launch._FWD_TILES) on the interpreter: several short
    rows a program in tiles wider than the backward kernels' (one machine of one SM, so few
    rows still make them), and rows walked in pipelined chunks, against the float64
    reference with resets inside rows and an initial carry."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    monkeypatch.setattr(poisoned, "_DEFAULT_SMS", 1)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.block_n, pl.block_t, pl.stages))
    poisoned.clear_caches()
    try:
        for shape in ((37, 9), (37, 33)):
            seen.clear()
            check(make_case(name, shape, seed=87), "triton")
            (bn, bt, _st), = seen
            assert bn * bt > poisoned._SHORT_TILE, seen
        use_small_tiles(monkeypatch, poisoned, split=False)
        monkeypatch.setattr(poisoned, "_DEFAULT_SMS", 1)
        seen.clear()
        check(make_case(name, (5, 63), seed=88), "triton")
        assert seen == [(seen[0][0], 16, poisoned._FWD_LOOP_STAGES)], seen
        # few rows that a split would cut in time, walked instead (launch._FWD_WALK_MIN_SM_SHARE):
        # 5 row programs on 4 SMs, against a single row, which is still split
        use_small_tiles(monkeypatch, poisoned, split=True)
        monkeypatch.setattr(poisoned, "_DEFAULT_SMS", 4)
        monkeypatch.setattr(poisoned, "_FWD_WALK_MIN_SM_SHARE", 0.5)
        seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.segments, pl.block_t, pl.stages))
        check(make_case(name, (5, 63), seed=89), "triton")
        assert seen == [(1, 16, poisoned._FWD_LOOP_STAGES)], seen
        seen.clear()
        check(make_case(name, (1, 63), seed=90), "triton")
        assert seen and all(segments > 1 for segments, _, _ in seen), seen
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("name", ["gae", "vtrace", "retrace_av", "traces"])
@pytest.mark.parametrize("group_tiles", [True, False])
def test_default_tiles_long_rows(name, group_tiles, request, monkeypatch):
    """Default tile sizes: T = 257 on one row a program (the interpreter's plan: a 512-step
    chunk, most of it past T; 7 rows, as many programs; more rows would only repeat them),
    and 201 rows of 3 steps on 64-row tiles (4 programs, the last cut by R); backward chunks
    in group form and in time order (``launch._GROUP_TILES``)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    launch = request.getfixturevalue("poisoned")
    monkeypatch.setattr(launch, "_GROUP_TILES", group_tiles)
    seen = plans_used(monkeypatch, launch, lambda pl, kw: (pl.block_n, pl.segments))
    launch.clear_caches()
    check(make_case(name, (7, 257), seed=29), "triton")
    check(make_case(name, (201, 3), seed=31), "triton")
    (bn_long, segs_long), (bn_short, segs_short) = seen
    assert (bn_long, segs_long, segs_short) == (1, 1, 1) and 1 < bn_short < 201 and 201 % bn_short, seen


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("group_tiles", [True, False])
def test_split_one_chunk_segments(name, group_tiles, monkeypatch, poisoned):
    """The two-phase split with segments of one chunk (``ONE_CHUNK`` in both passes), as the
    GPU runs the longest rows; backward chunks in group form and in time order."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    use_small_tiles(monkeypatch, poisoned, split=True)
    monkeypatch.setattr(poisoned, "_GROUP_TILES", group_tiles)
    monkeypatch.setattr(poisoned, "_SEG_STEPS", 16)
    monkeypatch.setattr(poisoned, "_MAX_SEGMENTS", 8)
    poisoned.clear_caches()
    try:
        pl = poisoned.plan(3, 63)
        assert pl.segments == 4 and pl.seg_len == pl.block_t == 16
        check(make_case(name, (3, 63), seed=37), "triton")
    finally:
        poisoned.clear_caches()


MAP_REDUCE_NAMES = ["gae", "td_lambda", "discounted_returns"]
FLAG_SETS = ("terminated", "truncated", "both", "none")
# (estimator, group tiles, flags, bootstrap form): each flag set with each bootstrap form
# twice, and every pair of any two of the four settings at least once (a pairwise cover: 32
# calls of the 96 in the full product, each of which costs the interpreter about 2 s)
MAP_REDUCE_CASES = [(MAP_REDUCE_NAMES[(f + b + k) % 3], bool((b + k + f % 2) % 2), flags, bootstrap)
                    for f, flags in enumerate(FLAG_SETS) for b, bootstrap in enumerate(BOOTSTRAP_FORMS)
                    for k in range(2)]


def test_map_reduce_cases_cover_every_pair():
    """MAP_REDUCE_CASES holds every pair of values of any two of its four settings."""
    values = (MAP_REDUCE_NAMES, (True, False), FLAG_SETS, BOOTSTRAP_FORMS)
    for i, j in itertools.combinations(range(4), 2):
        assert {(c[i], c[j]) for c in MAP_REDUCE_CASES} == set(itertools.product(values[i], values[j])), (i, j)


@pytest.mark.parametrize(("name", "group_tiles", "flags", "bootstrap"), MAP_REDUCE_CASES)
def test_map_reduce(name, group_tiles, flags, bootstrap, monkeypatch, poisoned):
    """launch._MAP_REDUCE: a time split's PHASE 1 on batch-major tiles composes each chunk's
    map by scan.constant_chunk_map's reductions (GAE's and TD(lambda)'s kernels, scalar gamma
    and lam, float32), against the float64 reference: segments of one chunk and of several
    (the chunk loop composing the maps), a last chunk cut by T, chunks in group form and in
    time order, every flag set and bootstrap form (MAP_REDUCE_CASES: every pair of settings),
    gamma lam = 0 (every beta 0: k^0 must be 1, not 2^(0 * -inf)) and 1. The three forms
    forced (the default takes TD(lambda)'s only: test_map_reduce_forms); the calls that keep
    the scan: test_map_reduce_declined."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    use_small_tiles(monkeypatch, poisoned, split=True)
    monkeypatch.setattr(poisoned, "_GROUP_TILES", group_tiles)
    monkeypatch.setattr(poisoned, "_MAP_REDUCE", frozenset(MAP_REDUCE_NAMES))  # (the default: not GAE)
    used = launches_used(monkeypatch, poisoned)
    poisoned.clear_caches()
    try:
        cases = [make_case(name, (3, 63), flags=flags, bootstrap=bootstrap, seed=41),
                 make_case(name, (5, 257), flags=flags, bootstrap=bootstrap, seed=43),
                 make_case(name, (2, 40), flags=flags, bootstrap=bootstrap, gamma=0.0, seed=45),
                 make_case(name, (2, 40), flags=flags, bootstrap=bootstrap, gamma=1.0, lam=1.0, seed=47)]
        for case in cases:
            used.clear()
            check(case, "triton")
            phase1 = [kw for launches in used for _k, _g, _a, kw in launches if kw.get("PHASE") == 1]
            assert phase1 and all(kw.get("MAP_REDUCE") for kw in phase1), (case.T, phase1)
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("name", MAP_REDUCE_NAMES)
@pytest.mark.parametrize("group_tiles", [True, False])
def test_map_reduce_declined(name, group_tiles, monkeypatch, poisoned):
    """Per-step gamma and lam, time-major tiles and float64 keep PHASE 1's scan with
    launch._MAP_REDUCE on (launch._map_reduce: the choice reads the plan, the gamma and lam
    kinds and the dtype, not the flags or the bootstrap form, so one set of each suffices
    here; test_boundary_forms and test_per_step_gamma_lam check those forms' outputs on the
    scan), against the float64 reference."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    use_small_tiles(monkeypatch, poisoned, split=True)
    monkeypatch.setattr(poisoned, "_GROUP_TILES", group_tiles)
    monkeypatch.setattr(poisoned, "_MAP_REDUCE", frozenset(MAP_REDUCE_NAMES))
    used = launches_used(monkeypatch, poisoned)
    poisoned.clear_caches()
    try:
        for case, what in ((make_case(name, (3, 63), per_step=True, seed=49), "per-step"),
                           (make_case(name, (3, 63), bootstrap="next_values", flags="truncated",
                                      dtype=torch.float64, seed=51), "float64"),
                           (make_case(name, (3, 63), bootstrap="bootstrap_values", time_major=True, seed=53),
                            "time-major")):
            used.clear()
            check(case, "triton")
            phase1 = [kw for launches in used for _k, _g, _a, kw in launches if kw.get("PHASE") == 1]
            assert phase1 and not any(kw.get("MAP_REDUCE") for kw in phase1), (what, phase1)
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("name", MAP_REDUCE_NAMES)
def test_map_reduce_forms(name, monkeypatch, poisoned):
    """By default TD(lambda)'s kernel (with values, and discounted returns without) takes
    launch._MAP_REDUCE's PHASE 1: GAE gained nothing from it on the H200 and keeps the scan."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    use_small_tiles(monkeypatch, poisoned, split=True)
    used = launches_used(monkeypatch, poisoned)
    poisoned.clear_caches()
    try:
        check(make_case(name, (3, 63), seed=57), "triton")
        phase1 = [kw for launches in used for _k, _g, _a, kw in launches if kw.get("PHASE") == 1]
        assert phase1 and all(bool(kw.get("MAP_REDUCE")) == (name != "gae") for kw in phase1), phase1
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("name", MAP_REDUCE_NAMES)
@pytest.mark.parametrize("bad", [float("nan"), float("inf")], ids=["nan", "inf"])
def test_map_reduce_non_finite(name, bad, monkeypatch, poisoned):
    """A NaN or inf reward inside a segment reaches PHASE 1's map as the scan lets it:
    TD(lambda)'s cut scan keeps it out of the steps before an episode end (the reductions
    leave the terms past the first end out), GAE's plain scan carries it as 0 * x (the
    reductions add alpha * 0 there). Outputs with launch._MAP_REDUCE on and off agree: the
    same non-finite elements, the others within float32 rounding."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    use_small_tiles(monkeypatch, poisoned, split=True)
    outs = {}
    for on in (True, False):
        monkeypatch.setattr(poisoned, "_MAP_REDUCE", frozenset(MAP_REDUCE_NAMES if on else ()))
        poisoned.clear_caches()
        case = make_case(name, (4, 120), flags="both", seed=55)
        rewards = case.args[0]
        done = case.kwargs["terminated"] | case.kwargs["truncated"]
        for row in range(4):
            ends = done[row].nonzero().flatten().tolist()
            # the step after the row's first end, and one late in the row (a later segment)
            for t in ([ends[0] + 1] if ends and ends[0] + 1 < 120 else []) + [100 + row]:
                rewards[row, t] = bad
        outs[on] = [o.clone() for o in case(backend="triton")]
    poisoned.clear_caches()
    assert_same_non_finite(outs[True], outs[False])


@pytest.mark.parametrize("name", ESTIMATORS)
def test_empty_time_axis(name, backend):
    case = make_case(name, (4, 0), flags="none", bootstrap="none")
    for o, r in zip(case(backend=backend), case(backend="reference")):
        assert o.shape == r.shape and o.numel() == 0


_RETRACE_FORMS = [(name, lagged, mode) for name in ("retrace", "retrace_av") for lagged in (True, False)
                  for mode in ("single", "split", "lookback", "time-order", "time-major", "per-step")
                  if (name == "retrace_av") == lagged or mode in ("single", "split")]


@pytest.mark.parametrize(("name", "lagged_form", "mode"), _RETRACE_FORMS)
@pytest.mark.parametrize("bootstrap", BOOTSTRAP_FORMS)
def test_retrace_forms(name, lagged_form, mode, bootstrap, monkeypatch, poisoned):
    """Retrace in both kernel forms against the float64 reference. The lagged form
    (``launch._RETRACE_LAGGED``, the default of the action form: a lagged scan of
    H_t = v_t + c_t D_t from step-t quantities, see ``retrace_kernel``) in every layout the
    default tests do not give it: the sampled form's; the direct form (reading step t + 1,
    the sampled form's default) of the action form, one pass and split. Every bootstrap form
    (``next_values`` keeps the direct form: nv_t is not values[t+1] there), interior and
    final truncations and terminations, one pass, the two-phase and look-back splits, chunks
    in time order, time-major tiles, and per-step gamma and lambda."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    use_small_tiles(monkeypatch, poisoned, split=mode in ("split", "lookback", "time-order", "time-major"),
                    lookback=mode == "lookback")
    monkeypatch.setattr(poisoned, "_GROUP_TILES", mode != "time-order")
    monkeypatch.setattr(poisoned, "_RETRACE_LAGGED", frozenset({"actions", "sampled"} if lagged_form else ()))
    lagged = plans_used(monkeypatch, poisoned, lambda pl, kw: kw.get("LAGGED"))
    poisoned.clear_caches()
    try:
        case = make_case(name, (7, 45), bootstrap=bootstrap, flags="both", per_step=mode == "per-step",
                         time_major=mode == "time-major", seed=59)
        check(case, "triton")
        # (retrace_av takes no next_values)
        assert lagged == [lagged_form and "next_values" not in case.kwargs], lagged
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("name", ["retrace", "retrace_av"])
def test_retrace_default_forms(name, monkeypatch, poisoned):
    """By default the action form takes the lagged kernel form and the sampled form the
    direct one (launch._RETRACE_LAGGED, from the H200 timings)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    lagged = plans_used(monkeypatch, poisoned, lambda pl, kw: kw.get("LAGGED"))
    poisoned.clear_caches()
    case = make_case(name, (3, 9), bootstrap="last_value", flags="both", seed=5)
    check(case, "triton")
    assert lagged == [name == "retrace_av"], lagged


def test_retrace_action_vectors_need_a_gpu_and_4_aligned_actions(monkeypatch, poisoned):
    """launch._RETRACE_AV_VEC reads 4 float32 actions per step as one vector (inline PTX),
    only where the launcher can promise the layout (contiguous actions, rows and steps 16-byte
    multiples apart) and only on CUDA: the interpreter keeps the loop (and stays right)."""
    import torch

    from rltriton.kernels.launch import _vec4_actions

    assert _vec4_actions(torch.zeros(3, 5, 4))
    assert _vec4_actions(torch.zeros(5, 3, 4).transpose(0, 1))  # time-major rows
    assert _vec4_actions(torch.zeros(1, 5, 4)[:, :, :])
    assert not _vec4_actions(torch.zeros(3, 5, 5)[..., :4])  # steps 20 bytes apart
    assert not _vec4_actions(torch.zeros(3, 5, 4, dtype=torch.float64))
    assert not _vec4_actions(torch.zeros(3, 5, 3))
    assert not _vec4_actions(torch.zeros(3, 4, 5).transpose(1, 2))  # actions not contiguous
    assert not _vec4_actions(torch.zeros(61)[1:].view(3, 5, 4))  # base 4 bytes past a 16-byte boundary
    if not INTERPRET:
        return
    monkeypatch.setattr(poisoned, "_RETRACE_AV_VEC", True)
    vec = plans_used(monkeypatch, poisoned, lambda pl, kw: kw.get("AV_VEC"))
    poisoned.clear_caches()
    check(make_case("retrace_av", (3, 9), bootstrap="last_value", flags="both", seed=7), "triton")
    assert vec == [0], vec


def _time_order_form(name: str, bootstrap: str, split: bool, flag: str, monkeypatch, poisoned) -> None:
    """Small tiles, chunks in time order (Triton < 3.7's form) and the launch setting
    ``flag`` on; skips what the interpreter or the estimator cannot run."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    if name == "retrace_av" and bootstrap == "next_values":
        pytest.skip("the action form takes no next_values")
    use_small_tiles(monkeypatch, poisoned, split=split)
    monkeypatch.setattr(poisoned, "_GROUP_TILES", False)
    monkeypatch.setattr(poisoned, flag, True)


@pytest.mark.parametrize("forward", [True, False], ids=["forward", "reverse"])
@pytest.mark.parametrize("name", ["gae", "td_lambda", "discounted_returns", "vtrace", "retrace", "retrace_av"])
@pytest.mark.parametrize("bootstrap", BOOTSTRAP_FORMS)
def test_segment_map_forms(name, bootstrap, forward, monkeypatch, poisoned):
    """PHASE 1 of the time split on chunks in time order composes each segment's map with a
    forward scan (launch._SEGMENT_MAP_FORWARD, the default: scan.chunk_map's FORWARD_TOTAL)
    or with ``reverse=True`` (the setting off); the outputs against the float64 reference,
    every bootstrap form, truncations and terminations, several chunks per segment (with
    TD(lambda)'s PHASE 1 on the scan, not launch._MAP_REDUCE's reductions)."""
    _time_order_form(name, bootstrap, True, "_SEGMENT_MAP_FORWARD", monkeypatch, poisoned)
    monkeypatch.setattr(poisoned, "_SEGMENT_MAP_FORWARD", forward)
    monkeypatch.setattr(poisoned, "_MAP_REDUCE", frozenset())
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.segments, pl.seg_len // pl.block_t, kw["SEG_MAP_FWD"]))
    poisoned.clear_caches()
    try:
        check(make_case(name, (5, 63), bootstrap=bootstrap, flags="both", seed=71), "triton")
        assert seen and all(s > 1 and c > 1 and fwd is forward for s, c, fwd in seen), seen
    finally:
        poisoned.clear_caches()


def test_replay_of_vector_actions_checks_alignment():
    """A replay recorded with Retrace's action vectors (``AV_VEC = 4``) and handed action
    tensors whose base address is not 16-byte aligned launches the loop over actions
    (``AV_VEC = 0``) instead, and keeps no fast launch of it; aligned tensors keep
    ``AV_VEC = 4``. Host logic only (a stand-in kernel): the vector loads themselves run in
    tests/test_gpu.py."""
    from rltriton.kernels import launch

    launched = []

    class Kernel:
        arg_names = ["x_ptr", "av_ptr", "pi_ptr", "T"]

        def __getitem__(self, grid):
            return lambda *args, **kwargs: launched.append(dict(kwargs))

    buf = torch.zeros(65)
    aligned, shifted = buf[:64].view(16, 4), buf[1:].view(16, 4)
    assert aligned.data_ptr() % 16 == 0 and shifted.data_ptr() % 16 != 0
    step = launch._Step(Kernel(), (1, 1), [None, None, None, 7], ((0, 0, 0), (1, 0, 1), (2, 0, 2)),
                        {"AV_VEC": 4, "BLOCK_T": 16})
    step(((aligned, aligned, aligned), (), ()))
    step(((aligned, shifted, aligned), (), ()))
    step(((aligned, aligned, shifted), (), ()))
    assert [k["AV_VEC"] for k in launched] == [4, 0, 0], launched
    assert all(k["BLOCK_T"] == 16 for k in launched)
    assert step.fast is None  # the stand-in has no compiled kernel to arm


@pytest.mark.parametrize("name", ["gae", "td_lambda", "discounted_returns", "vtrace", "retrace", "retrace_av"])
@pytest.mark.parametrize("mode", ["single", "split", "lookback"])
def test_group_scan(name, mode, monkeypatch, poisoned):
    """launch._GROUP_SCAN: with chunks that would be in time order (Triton < 3.7) the
    backward kernels take the group form scanned in two levels (``GROUP_TILES = 2``,
    scan.group_scan) in one pass over several chunks, the two-phase split and the
    look-back; every bootstrap form, truncations and terminations, against the float64
    reference."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    use_small_tiles(monkeypatch, poisoned, split=mode != "single", lookback=mode == "lookback")
    monkeypatch.setattr(poisoned, "_GROUP_TILES", False)
    monkeypatch.setattr(poisoned, "_GROUP_SCAN", True)
    monkeypatch.setattr(poisoned, "_GROUP_SCAN_MIN_T", 4)
    monkeypatch.setattr(poisoned, "_GROUP_SCAN_LOOP", frozenset(poisoned._FORMS))
    monkeypatch.setattr(poisoned, "_GROUP_SCAN_FLAT", False)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (kw["GROUP_TILES"], pl.seg_len // pl.block_t, pl.segments))
    poisoned.clear_caches()
    try:
        for bootstrap in BOOTSTRAP_FORMS:
            if name == "retrace_av" and bootstrap == "next_values":
                continue
            check(make_case(name, (5, 63), bootstrap=bootstrap, flags="both", seed=83), "triton")
        assert seen and all(g == 2 for g, _c, _s in seen), seen
        if mode == "single":
            assert all(c > 1 and s == 1 for _g, c, s in seen), seen  # several chunks a row
        else:
            assert all(s > 1 for _g, _c, s in seen), seen
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("form", ["gae", "td_lambda", "vtrace", "retrace", "retrace_actions"])
def test_group_scan_reach(form):
    """By default (launch._group_scan) the two-level group scan takes batch-major tiles of
    64 steps or more whose row is one chunk or split into segments, and for every form but
    Retrace's lagged-coefficient one a row walked in chunks by one program too; short tiles
    (several rows a program), Retrace's chunk loop and time-major tiles keep time order,
    where the H200 timed them faster (launch._GROUP_SCAN)."""
    from rltriton.kernels.launch import _FORMS, Plan, _group_scan, plan

    assert form in _FORMS
    assert _group_scan(plan(4096, 128), form) and _group_scan(plan(32768, 64), form)  # short rows, one chunk
    assert _group_scan(plan(16384, 512), form) and _group_scan(plan(4096, 2048), form)  # one chunk a row
    assert plan(16, 262144).segments > 1 and plan(1, 1 << 20).segments > 1
    assert _group_scan(plan(16, 262144), form) and _group_scan(plan(1, 1 << 20), form)  # split
    assert not _group_scan(plan(32768, 32), form) and not _group_scan(plan(32768, 8), form)
    loop = plan(512, 4096)
    assert loop.segments == 1 and loop.seg_len > loop.block_t
    assert _group_scan(loop, form) == (form != "retrace")
    assert not _group_scan(Plan(32, 16, 1, 1, 16, time_major=True), form)
    assert not _group_scan(Plan(1, 128, 1, 1, 128, time_major=True), form)


@pytest.mark.parametrize("segmented", [False, True], ids=["plain", "segmented"])
@pytest.mark.parametrize("name", ["gae", "td_lambda", "discounted_returns", "vtrace", "retrace", "retrace_av"])
def test_group_scan_flat(name, segmented, monkeypatch, poisoned):
    """launch._GROUP_SCAN_FLAT: short rows, several a program, laid one after another along
    the group axis (``GROUP_TILES = 3``): each row's end ignores the row scanned before it,
    for every bootstrap form, with truncations and terminations, both Retrace kernel forms,
    rows that fill their tile and rows padded inside it (T = 9 in 16-step tiles), a last
    tile of fewer rows, against the float64 reference; with the scan over the groups
    segmented at the rows' starts (launch._FLAT_SEGMENTED) too."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    use_small_tiles(monkeypatch, poisoned, split=False)
    monkeypatch.setattr(poisoned, "_TILE", 128)  # 8 rows of 16 steps: a group for each of 32 threads
    monkeypatch.setattr(poisoned, "_GROUP_TILES", False)
    monkeypatch.setattr(poisoned, "_GROUP_SCAN_FLAT", True)
    monkeypatch.setattr(poisoned, "_FLAT_SEGMENTED", segmented)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (kw["GROUP_TILES"], pl.block_n, pl.block_t,
                                                             kw.get("SEG_GROUPS", 0)))
    poisoned.clear_caches()
    try:
        check_short_row_forms(name, ((37, 9), (20, 16)), monkeypatch, poisoned)
        flat_seg = segmented and name not in ("td_lambda", "discounted_returns")  # their scans cut at 0
        assert seen and all(g == 3 and bn > 1 and sg == (bt // 4 if flat_seg else 0) for g, bn, bt, sg in seen), seen
    finally:
        poisoned.clear_caches()


def test_group_scan_flat_reach(monkeypatch):
    """The flat rows (launch._flat_rows) take only one-pass tiles of several whole rows, of
    _GROUP_SCAN_FLAT_MIN_T steps up to the form's bound, a group for each thread,
    batch-major; with ``_GROUP_SCAN_FLAT`` or ``_GROUP_SCAN`` off none."""
    from rltriton.kernels import launch
    from rltriton.kernels.launch import Plan, _flat_rows, plan

    monkeypatch.setattr(launch, "_GROUP_SCAN", True)
    monkeypatch.setattr(launch, "_GROUP_SCAN_FLAT", True)
    monkeypatch.setattr(launch, "_GROUP_SCAN_FLAT_MIN_T", 16)
    monkeypatch.setattr(launch, "_GROUP_SCAN_FLAT_MAX_T", {"gae": 64, "vtrace": 32, "retrace_actions": 16})
    for shape, forms in (((32768, 16), {"gae", "vtrace", "retrace_actions"}), ((8192, 32), {"gae", "vtrace"}),
                         ((32768, 64), {"gae"}), ((32768, 8), set()), ((4096, 128), set())):
        pl = plan(*shape)
        assert pl.block_n > 1, (shape, pl)
        assert {f for f in launch._FORMS if _flat_rows(pl, f)} == forms, (shape, pl)
    monkeypatch.setattr(launch, "_GROUP_SCAN_FLAT_MIN_T", 4)
    monkeypatch.setattr(launch, "_GROUP_SCAN_FLAT_MAX_T", dict.fromkeys(launch._FORMS, 1 << 20))
    # (an 8-step tile at 4 elements a thread, not launch._TINY_WARP_ELEMS' 2: a flat tile needs a
    # group of 4 steps for every thread)
    assert _flat_rows(plan(32768, 8, tiny_warp_elems=128), "vtrace") and _flat_rows(plan(4096, 128), "retrace")
    assert not _flat_rows(plan(32768, 8), "vtrace")  # (its 2 elements a thread)
    assert not _flat_rows(plan(16384, 512), "gae") and not _flat_rows(plan(16, 262144), "gae")  # a row a program
    assert not _flat_rows(Plan(32, 16, 1, 1, 16, time_major=True), "gae")
    assert not _flat_rows(Plan(8, 2, 1, 1, 2), "gae")  # fewer steps than a group
    assert not _flat_rows(Plan(4, 16, 1, 1, 16), "gae")  # 16 groups for 32 threads
    assert not _flat_rows(Plan(8, 16, 1, 1, 32), "gae")  # two chunks a row
    monkeypatch.setattr(launch, "_GROUP_SCAN", False)
    assert not _flat_rows(plan(32768, 64), "gae")
    monkeypatch.setattr(launch, "_GROUP_SCAN", True)
    monkeypatch.setattr(launch, "_GROUP_SCAN_FLAT", False)
    assert not _flat_rows(plan(32768, 64), "gae")


def test_loop_registers(monkeypatch, poisoned):
    """launch._LOOP_MAXNREG caps the registers (Triton's ``maxnreg``) of the chunk loops of
    the forms it names, and of nothing else: not a form it does not name, not a row in one
    chunk; results still match the float64 reference."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    use_small_tiles(monkeypatch, poisoned, split=False)
    monkeypatch.setattr(poisoned, "_LOOP_MAXNREG", {"gae": 64, "retrace_actions": 128})
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (kw.get("maxnreg"), pl.seg_len // pl.block_t))
    want = {"gae": 64, "td_lambda": None, "vtrace": None, "retrace": None, "retrace_av": 128}
    poisoned.clear_caches()
    try:
        for name, cap in want.items():
            for shape, chunks, c in (((5, 63), 4, cap), ((5, 9), 1, None)):
                seen.clear()
                check(make_case(name, shape, bootstrap="last_value", flags="both", seed=86), "triton")
                assert seen == [(c, chunks)], (name, shape, seen)
    finally:
        poisoned.clear_caches()


def test_whole_row_registers(monkeypatch, poisoned):
    """launch._WHOLE_ROW_MAXNREG caps the registers of the forms it names where a program holds a
    whole batch-major row of 1025 to 4096 steps in one chunk of 2048 or 4096 on more programs
    than SMs, and nowhere else: not a form it does not name, not rows on at most one program an
    SM, 1024-step tiles, time-major storage, float64 (no whole-row plan) or a split row; results
    still match the float64 reference (the interpreter ignores the cap itself: the H200 runs
    it, tests/test_gpu.py::test_whole_row_registers)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    monkeypatch.setattr(poisoned, "_device_sms", lambda device: 2)  # 3 rows: 1.5 programs an SM
    monkeypatch.setattr(poisoned, "_WHOLE_ROW_MAXNREG", {"forward": 64, "vtrace": 80})
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (kw.get("maxnreg"), pl.block_t, pl.segments))
    cases = [  # (estimator, shape, case options, (cap, tile steps, segments) of each launch)
        ("traces", (3, 4096), {}, [(64, 4096, 1)]),  # the forward kernel
        ("prefix_sum", (3, 4000), {}, [(64, 4096, 1)]),
        ("vtrace", (3, 4000), {}, [(80, 4096, 1)]),
        ("gae", (3, 4096), {}, [(None, 4096, 1)]),  # not named
        ("traces", (2, 4096), {}, [(None, 4096, 1)]),  # one program an SM
        ("traces", (3, 2000), {}, [(64, 2048, 1)]),
        ("traces", (3, 1024), {}, [(None, 1024, 1)]),
        ("traces", (3, 4096), {"time_major": True}, None),
        ("traces", (3, 4096), {"dtype": torch.float64}, None),
    ]
    poisoned.clear_caches()
    try:
        for name, shape, kw, want in cases:
            seen.clear()
            check(make_case(name, shape, flags="both", seed=87, **kw), "triton")
            if want is None:  # another plan, uncapped
                assert seen and all(cap is None for cap, _, _ in seen), (name, shape, kw, seen)
            else:
                assert seen == want, (name, shape, kw, seen)
    finally:
        poisoned.clear_caches()


def test_whole_row_4k_warps(monkeypatch, poisoned):
    """launch._WHOLE_ROW_4K_WARPS (none as shipped) sets the warps of a whole batch-major
    4096-step row in one chunk beyond _ONE_CHUNK_WARPS' bound for the forms it names, on the
    H200's 132 SMs, and nothing else: not a form it does not name, not rows within the bound
    (16 warps), not 2048-step rows, not rows of T not a multiple of 16 (no one chunk beyond
    an SM's worth), not time-major storage; the forward kernel on 4 warps still matches the
    float64 reference (2 SMs, under the interpreter)."""
    from rltriton.kernels import launch

    cpu = torch.device("cpu")
    monkeypatch.setattr(launch, "_DEFAULT_SMS", 132)
    monkeypatch.setattr(launch, "_WHOLE_ROW_4K_WARPS", {"td_lambda": 4, "forward": 4})

    def warps(R: int, T: int, form: str, **kw) -> tuple:
        pl = launch.plan_for(R, T, cpu, form=form, forward=form == "forward", **kw)
        return pl.block_t, pl.num_warps, pl.segments, pl.time_major

    launch.clear_caches()
    try:
        assert launch._WHOLE_ROW_4K_WARPS == {"td_lambda": 4, "forward": 4}
        for form in ("td_lambda", "forward"):
            assert warps(512, 4096, form) == warps(133, 4096, form) == (4096, 4, 1, False), form
            assert warps(132, 4096, form) == (4096, 16, 1, False), form  # within the bound
            assert warps(512, 2048, form)[1] == 8, form  # 2048-step rows: _ONE_CHUNK_WARPS' first
            assert warps(512, 4001, form)[0] == 1024, form  # a chunk loop
            assert warps(512, 4096, form, time_major=True)[0] != 4096, form
        assert warps(512, 4096, "gae") == (4096, 16, 1, False)  # not named (its bound: 8 an SM)
        assert warps(1057, 4096, "gae") == (4096, 8, 1, False)  # (beyond GAE's bound: 8, as shipped)
        monkeypatch.setattr(launch, "_WHOLE_ROW_4K_WARPS", {})
        launch.clear_caches()
        assert warps(512, 4096, "td_lambda")[1] == warps(512, 4096, "forward")[1] == 8  # as shipped
    finally:
        launch.clear_caches()
    if not INTERPRET:
        return
    monkeypatch.setattr(poisoned, "_device_sms", lambda device: 2)  # 3 rows: 1.5 programs an SM
    monkeypatch.setattr(poisoned, "_WHOLE_ROW_4K_WARPS", {"forward": 4})
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.block_t, pl.num_warps, pl.segments))
    poisoned.clear_caches()
    try:
        check(make_case("traces", (3, 4096), flags="both", seed=88), "triton")
        assert seen == [(4096, 4, 1)], seen
    finally:
        poisoned.clear_caches()


def test_lanes_registers(monkeypatch, poisoned):
    """launch._TM_LANES_MAXNREG and _LANES_MAXNREG cap the registers of the forms they name where
    those take the time-major lanes tiles, or the batch-major lanes tiles, on more programs
    than SMs, and nowhere else: not a form they do not name, not as many programs as SMs or
    fewer, not the other storage's plan; results still match the float64 reference (the H200
    runs the caps: tests/test_gpu.py::test_tm_lanes_registers, ::test_lanes_registers)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    monkeypatch.setattr(poisoned, "_DEFAULT_SMS", 2)
    monkeypatch.setattr(poisoned, "_ROW_LANES", True)  # (Triton < 3.7's; the lanes tiles are off on 3.7+)
    monkeypatch.setattr(poisoned, "_ROW_LANES_MIN_PROGRAMS", 0)
    monkeypatch.setattr(poisoned, "_TM_LANES_MAXNREG", {"gae": 64, "vtrace": 80})
    monkeypatch.setattr(poisoned, "_LANES_MAXNREG", {"td_lambda": 72})
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.tm_lanes, pl.lanes, pl.block_n, kw.get("maxnreg")))
    cases = [  # (estimator, shape, time-major, cap) of the one launch
        ("gae", (200, 64), True, 64),  # 4 time-major lanes programs of 64 rows on 2 SMs
        ("vtrace", (150, 64), True, 80),
        ("gae", (128, 64), True, None),  # 2 programs
        ("td_lambda", (200, 64), True, None),  # not named for the time-major lanes tiles
        ("td_lambda", (200, 32), False, 72),  # the batch-major lanes tiles
        ("td_lambda", (20, 32), False, None),  # as many programs as SMs or fewer
        ("gae", (200, 32), False, None),  # not named for them
    ]
    poisoned.clear_caches()
    try:
        for name, shape, tm, cap in cases:
            seen.clear()
            check(make_case(name, shape, flags="both", seed=88, time_major=tm), "triton")
            assert len(seen) == 1 and seen[0][0 if tm else 1], (name, shape, tm, seen)  # the lanes tiles
            programs = -(-shape[0] // seen[0][2])
            assert seen[0][3] == cap and (cap is None or programs > 2), (name, shape, tm, seen)
    finally:
        poisoned.clear_caches()


def test_group_scan_loop_forms(monkeypatch, poisoned):
    """In a chunk loop the forms of launch._GROUP_SCAN_LOOP (all but Retrace's lagged
    coefficients: GAE, TD(lambda), discounted returns on its kernel, V-trace, Retrace's
    action form) take the group scan and Retrace keeps time order, each still matching the
    float64 reference."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    use_small_tiles(monkeypatch, poisoned, split=False)
    monkeypatch.setattr(poisoned, "_GROUP_TILES", False)
    monkeypatch.setattr(poisoned, "_GROUP_SCAN_MIN_T", 4)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (kw["GROUP_TILES"], pl.seg_len // pl.block_t))
    want = {"gae": 2, "td_lambda": 2, "discounted_returns": 2, "vtrace": 2, "retrace": False, "retrace_av": 2}
    poisoned.clear_caches()
    try:
        for name, group_tiles in want.items():
            seen.clear()
            check(make_case(name, (5, 63), bootstrap="last_value", flags="both", seed=85), "triton")
            assert seen == [(group_tiles, 4)], (name, seen)
    finally:
        poisoned.clear_caches()


def test_group_scan_only_replaces_time_order(monkeypatch, poisoned):
    """The two-level group scan stands in for chunks in time order only: the reshaped group
    form (Triton >= 3.7) and time-major tiles keep theirs, and chunks of fewer than 4 steps
    take the descending form (``GROUP_TILES = 6``, launch._DESC_MAX_T) instead."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    monkeypatch.setattr(poisoned, "_GROUP_SCAN", True)
    monkeypatch.setattr(poisoned, "_GROUP_SCAN_MIN_T", 4)
    # time-major tiles for a small call (see conftest.use_small_tiles)
    monkeypatch.setattr(poisoned, "_TM_MIN_ROWS", 1)
    monkeypatch.setattr(poisoned, "_TM_MIN_STEPS", 2)
    monkeypatch.setattr(poisoned, "_TM_SPLIT_BELOW", 0)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (kw["GROUP_TILES"], kw["TIME_MAJOR"], pl.block_t))
    for group_tiles in (True, False):
        monkeypatch.setattr(poisoned, "_GROUP_TILES", group_tiles)
        poisoned.clear_caches()
        case = make_case("gae", (3, 9), bootstrap="last_value", flags="both", seed=3)
        check(case, "triton")
        check(make_case("gae", (3, 2), bootstrap="last_value", flags="both", seed=3), "triton")
        check(to_time_major(case), "triton")
    poisoned.clear_caches()
    assert seen == [(True, False, 16), (True, False, 2), (True, True, 16),
                    (2, False, 16), (6, False, 2), (False, True, 16)], seen


@pytest.mark.parametrize("name", ["gae", "td_lambda", "vtrace", "retrace_av"])
def test_rows_beyond_int32_times(name, monkeypatch):
    """The backward kernels count time in int32 (``scan.chunk_times``), so the Triton
    backend refuses rows longer than ``launch._MAX_T`` steps with a ValueError that names
    the limit, the length and the way out (here the limit lowered to 8 steps: 2**31 steps
    do not fit in a test). A row at the limit runs."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    from rltriton.kernels import launch

    monkeypatch.setattr(launch, "_MAX_T", 8)
    launch.clear_caches()
    try:
        with pytest.raises(ValueError, match=r"expected rows of at most 8 steps .*got 9 steps; use backend='torch'"):
            make_case(name, (2, 9), seed=3)(backend="triton")
        check(make_case(name, (2, 8), seed=3), "triton")
    finally:
        launch.clear_caches()


# the tiles' own shapes (launch._ROW_LANES_SHAPES) per form: none, so every form takes
# _ROW_LANES_WARPS's, or Retrace's one-warp tiles (two rows a lane at 16 and 32 steps) for all
_LANE_SHAPES = {"warps": ({}, {(4, True, 32, 16), (4, True, 16, 32), (4, True, 8, 64)}),
                "one-warp": ({f: {16: (1, 2), 32: (1, 2), 64: (1, 1)} for f in ("gae", "td_lambda", "vtrace", "retrace",
                                                                                 "retrace_actions")},
                             {(4, True, 16, 16), (4, True, 8, 32), (4, True, 4, 64)})}


@pytest.mark.parametrize("shapes", sorted(_LANE_SHAPES))
@pytest.mark.parametrize("lanes_last", [False, True], ids=["lanes-first", "lanes-last"])
@pytest.mark.parametrize("name", ["gae", "td_lambda", "discounted_returns", "vtrace", "retrace", "retrace_av"])
def test_lane_tiles(name, lanes_last, shapes, monkeypatch, poisoned):
    """launch._ROW_LANES: short rows across a few lanes each (``GROUP_TILES = 4``,
    scan.lane_scan): 4 lanes a row (16-step tiles: T = 9, padded inside the tile) and 8
    (T = 32, one column of groups a thread; T = 63, two columns and a padded step), every
    bootstrap form, truncations and terminations, both Retrace kernel forms (with and without
    the lagged algebra), a last tile of fewer rows, against the float64 reference, in both
    axis orders of the tile (``scan.LANES_LAST``: Triton 3.6's and 3.8's). Every form takes
    the tiles here (the plans give them to TD(lambda), GAE, V-trace and Retrace only), so the kernel
    code is checked for all of them. ``shapes``: the tiles' warps and rows a lane as
    ``_ROW_LANES_WARPS`` gives them (32 x 4 warps / 4 lanes rows of 16 steps; 16 rows of 32
    steps; 32 x 2 warps / 8 rows of 64), or on one warp with two rows a lane at 16 and 32 steps
    (Retrace's default, ``_ROW_LANES_SHAPES``: 16, 8 and 4 rows)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    import triton.language as tl

    from rltriton.kernels import scan

    own, want = _LANE_SHAPES[shapes]
    monkeypatch.setattr(scan, "LANES_LAST", tl.constexpr(lanes_last))
    monkeypatch.setattr(poisoned, "_ROW_LANES", True)
    monkeypatch.setattr(poisoned, "_ROW_LANES_MIN_PROGRAMS", 0)
    monkeypatch.setattr(poisoned, "_ROW_LANES_MAX_T", dict.fromkeys(poisoned._FORMS, 64))
    monkeypatch.setattr(poisoned, "_ROW_LANES_SHAPES", own)
    monkeypatch.setattr(poisoned, "_ROW_LANES_WHOLE", {})  # (every row length on every tile)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (kw["GROUP_TILES"], pl.lanes, pl.block_n, pl.block_t))
    poisoned.clear_caches()
    try:
        check_short_row_forms(name, ((37, 9), (20, 32), (11, 63)), monkeypatch, poisoned)
        assert set(seen) == want, seen
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("lanes_last", [False, True], ids=["lanes-first", "lanes-last"])
@pytest.mark.parametrize("name", ["gae", "td_lambda", "discounted_returns", "vtrace", "retrace", "retrace_av"])
def test_lane_tiles_tiny(name, lanes_last, monkeypatch, poisoned):
    """launch._ROW_LANES_TINY: rows of exactly 8 steps a row a thread (``GROUP_TILES = 4``
    with one lane a row, scan.lanes_per_row; the chunk's first step 0 in PHASE 0,
    scan.segment_zero): 37 rows (a last tile of 5) and 64, every bootstrap form in turn,
    truncations and terminations, both Retrace kernel forms, against the float64 reference,
    in both axis orders of the tile (``scan.LANES_LAST``). Every form takes the tiles here
    (the plans give them to TD(lambda), GAE, V-trace and Retrace only)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    import triton.language as tl

    from rltriton.kernels import scan

    monkeypatch.setattr(scan, "LANES_LAST", tl.constexpr(lanes_last))
    monkeypatch.setattr(poisoned, "_ROW_LANES", True)
    monkeypatch.setattr(poisoned, "_ROW_LANES_TINY", True)
    monkeypatch.setattr(poisoned, "_ROW_LANES_MIN_PROGRAMS", 0)
    monkeypatch.setattr(poisoned, "_ROW_LANES_MAX_T", dict.fromkeys(poisoned._FORMS, 64))
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (kw["GROUP_TILES"], pl.block_n, pl.block_t, pl.num_warps))
    poisoned.clear_caches()
    try:
        check_short_row_forms(name, ((37, 8), (64, 8)), monkeypatch, poisoned, rotate=True)
        assert set(seen) == {(4, 32, 8, 1)}, seen
    finally:
        poisoned.clear_caches()


def _padded(x, pad: int):
    """``x`` ([*B, T], or [*B, T, *F]) as a view of a wider buffer whose rows are ``pad``
    elements longer along the time axis: the same values, a row stride ``pad`` larger."""
    t_axis = x.dim() - 1 if x.dim() <= 2 else 1
    shape = list(x.shape)
    shape[t_axis] += pad
    buf = torch.full(shape, float("nan") if x.is_floating_point() else 0, dtype=x.dtype)
    view = buf.narrow(t_axis, 0, x.shape[t_axis])
    view.copy_(x)
    return view


def test_row_div_strides_checked():
    """Every stride a kernel rewrites through scan.aligned (and T, or R) is one that
    launch._row_div checks for the divisor (``_stride_slots``: the row strides for ``ROW_DIV``,
    the time strides for ``TM_DIV``): a rewritten stride the launcher did not check
    would move rows (or steps) wherever it lacks the divisor. The backward kernels' row strides
    go through scan.row_stride (scan.aligned, or T itself under ``ROWS_T``), which
    launch._rows_t checks on the same slots. Read from each kernel's source."""
    import inspect
    import re

    from rltriton.kernels import backward, forward, launch

    for kernel in (backward.gae_kernel, backward.td_lambda_kernel, backward.vtrace_kernel, backward.retrace_kernel,
                   forward.forward_kernel):
        src = inspect.getsource(kernel.fn)
        rewritten = set(re.findall(r"^\s+(\w+) = (?:aligned\(\1, ROW_DIV\)|row_stride\(\1, T, ROW_DIV, ROWS_T\))$",
                                   src, re.M))
        checked = {kernel.arg_names[i] for i in launch._stride_slots(kernel, "n")}
        assert rewritten == checked | {"T"}, (kernel.fn.__name__, rewritten ^ (checked | {"T"}))
        rewritten = set(re.findall(r"^\s+(\w+) = aligned\(\1, TM_DIV\)$", src, re.M))
        checked = {kernel.arg_names[i] for i in launch._stride_slots(kernel, "t")}
        assert rewritten == checked | {"R"}, (kernel.fn.__name__, rewritten ^ (checked | {"R"}))


@pytest.mark.parametrize("name", ESTIMATORS)
def test_row_div(name, monkeypatch, poisoned):
    """launch._ROW_DIV: batch-major rows whose length and strides are divisible by 8, 4 or 2
    but not 16 are shown to the kernels (``ROW_DIV``, scan.aligned's ``(s // D) D`` on T and
    the row strides, which the interpreter computes too, so a divisor that some stride lacks
    moves that tensor's rows and fails here): rows of 24 steps (8), 20 (4), 1000 (8; 4 rows),
    18 (2), the bootstrap forms in turn,
    truncations and terminations, against the float64 reference, NaN-poisoned outputs; then the
    rewards (the action values for Retrace's action form, the inputs for the forward scans) read
    from a buffer 2 elements wider (stride 26 beside 24: 2), which the others' strides alone do
    not show. 8-step tiles take one too (rows of 8 steps: 8; of 6: 2); 4-step tiles (below
    ``_ROW_DIV_MIN_T``), odd lengths and 16- or 32-divisible strides take none."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.block_t, kw.get("ROW_DIV")))
    poisoned.clear_caches()
    try:
        for k, (shape, div) in enumerate((((9, 24), 8), ((5, 20), 4), ((4, 1000), 8), ((6, 18), 2), ((7, 8), 8),
                                          ((5, 6), 2), ((7, 4), None), ((4, 7), None), ((3, 32), None),
                                          ((3, 48), None))):
            seen.clear()
            bootstrap = BOOTSTRAP_FORMS[k % len(BOOTSTRAP_FORMS)]
            if name == "retrace_av" and bootstrap == "next_values":
                bootstrap = BOOTSTRAP_FORMS[0]
            check(make_case(name, shape, bootstrap=bootstrap, flags="both", seed=k), "triton")
            assert seen and all(d == div for _t, d in seen), (shape, seen)
        case = make_case(name, (6, 24), flags="both", seed=11)
        case.args = (_padded(case.args[0], 2), *case.args[1:])
        seen.clear()
        check(case, "triton")
        assert seen and all(d == 2 for _t, d in seen), seen
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("name", ESTIMATORS)
def test_tm_div(name, monkeypatch, poisoned):
    """launch._TM_DIV: time-major storage ([T, N]) whose row count and time strides are
    divisible by 8, 4 or 2 but not 16 shows them to the kernels (``TM_DIV``, scan.aligned's
    ``(s // D) D`` on R and every per-step time stride, which the interpreter computes too, so
    a divisor that some stride lacks moves that tensor's steps and fails here): 40 rows (8) on
    the time-major lanes tiles and, at 37 steps, on the time-major tiles (Retrace's action
    form and V-trace past 32 steps take those throughout), 36 (4), 18 (2), the bootstrap forms
    in turn, truncations and terminations, against the float64 reference, NaN-poisoned
    outputs; then the rewards (the action values for the action form, the inputs for the
    forward scans) read from a buffer 2 rows wider (time stride 42 beside 40: 2); and 48 and
    13 rows take none."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    # the tiles that take the default fewest programs take any number (V-trace's 64-step tiles
    # and the action form's keep their own bounds)
    monkeypatch.setattr(poisoned, "_TM_LANES_TILES", {
        form: {bt: t._replace(min_programs=0.0) if t.min_programs == poisoned._TM_LANES_MIN_PROGRAMS else t
               for bt, t in tiles.items()} for form, tiles in poisoned._TM_LANES_TILES.items()})
    monkeypatch.setattr(poisoned, "_TM_MIN_ROWS", 1)
    monkeypatch.setattr(poisoned, "_TM_MIN_STEPS", 2)
    monkeypatch.setattr(poisoned, "_TM_SPLIT_BELOW", 0)  # one pass for these few row programs
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.time_major or pl.tm_lanes, kw.get("TM_DIV")))
    poisoned.clear_caches()
    try:
        for k, (shape, div) in enumerate((((40, 7), 8), ((40, 37), 8), ((36, 20), 4), ((18, 9), 2), ((48, 9), None),
                                          ((13, 8), None))):
            seen.clear()
            bootstrap = BOOTSTRAP_FORMS[k % len(BOOTSTRAP_FORMS)]
            if name == "retrace_av" and bootstrap == "next_values":
                bootstrap = BOOTSTRAP_FORMS[0]
            check(make_case(name, shape, bootstrap=bootstrap, flags="both", seed=k, time_major=True), "triton")
            assert seen and all(tm and d == div for tm, d in seen), (shape, seen)
        case = make_case(name, (40, 9), flags="both", seed=11, time_major=True)
        case.args = (_padded(case.args[0], 2), *case.args[1:])
        assert case.args[0].stride()[0] == 42 * (case.args[0].dim() == 3 and case.args[0].shape[2] or 1)
        seen.clear()
        check(case, "triton")
        assert seen and all(tm and d == 2 for tm, d in seen), seen
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("rows", [64, 32])
@pytest.mark.parametrize("steps", [(4, 8), (2, 4)], ids=["k4-k8", "k2-k4"])
@pytest.mark.parametrize("name", ESTIMATORS)
def test_tm_lanes_tiles(name, steps, rows, monkeypatch, poisoned):
    """launch._TM_LANES: time-major rows along the lanes, time along the warps, K consecutive
    steps a thread (``GROUP_TILES = 5``, scan.tm_lanes_scan): 8-step tiles on 2 warps and 16 on
    4, 4 steps a thread (T = 7 and 9, padded inside the tile; rows short of a tile), 32 on 8
    (a whole tile of rows), 64 on 8 warps, 8 steps a thread (T = 63 over two row programs, the
    last partial); or (``steps``: launch._TM_LANES_TILES's, V-trace's
    shorter tiles and the lagged forms' 64-step ones) each on twice the warps, 2 steps a thread up to
    32-step tiles and 4 beyond; 64 rows a program, or (``rows``) the narrow tiles' 32 (one a
    thread, launch._TM_LANES_NARROW); the bootstrap forms in turn, truncations and
    terminations, both Retrace kernel forms with and without the lagged algebra, NaN-poisoned
    outputs, against the float64 reference. Every form takes the tiles here, the forward scans
    too (the plans give Retrace's action form 32- and 64-step tiles only, launch._TM_LANES_TILES),
    so the kernel code is checked for all."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    monkeypatch.setattr(poisoned, "_TM_LANES", True)
    monkeypatch.setattr(poisoned, "_TM_LANES_NARROW", rows == 32)
    monkeypatch.setattr(poisoned, "_TM_LANES_TILES", tm_lanes_tiles(poisoned, (8, 16, 32, 64), steps=steps,
                                                                    narrow=float("inf")))
    short, long = steps
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (kw.get("GROUP_TILES", pl.tm_lanes and 5), kw.get("TM_W"),
                                                             pl.block_n, pl.block_t))
    poisoned.clear_caches()
    try:
        check_short_row_forms(name, ((20, 7), (70, 63), (64, 30), (30, 9)), monkeypatch, poisoned, time_major=True,
                              rotate=True)
        # the tile of each shape, whose bootstrap form (in turn) the action form may not take
        tiles = [(5, 8 // short, rows, 8), (5, 64 // long, rows, 64), (5, 32 // short, rows, 32),
                 (5, 16 // short, rows, 16)]
        expected = {t for t, b in zip(tiles, BOOTSTRAP_FORMS) if not (name == "retrace_av" and b == "next_values")}
        assert set(seen) == expected, seen
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("name", ["gae", "td_lambda", "vtrace", "traces"])
@pytest.mark.parametrize("segments", [1, 3])
def test_tm_lanes_chunks(name, segments, monkeypatch, poisoned):
    """Time-major lanes tiles (``GROUP_TILES = 5``) of 16 steps walked in a chunk loop (1
    segment of 3 chunks: the carry out of each chunk, across the warps) and split in time (3
    segments of a chunk: PHASE 1's composed maps, scan.tm_lanes_map, and PHASE 2's carry-in),
    forced, which the planner never does (launch._tm_lanes_plan): GAE's plain scan,
    TD(lambda)'s cut one, V-trace's lagged one, the forward kernel's; NaN-poisoned outputs
    against the float64 reference."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    from rltriton.kernels.launch import Plan

    forced = Plan(64, 16, 4, segments, 48 // segments, tm_lanes=True)
    monkeypatch.setattr(poisoned, "plan_for", lambda *a, **k: forced)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (kw.get("GROUP_TILES", 5), kw["TM_W"], kw["PHASE"]))
    poisoned.clear_caches()
    try:
        bootstrap = "last_value" if segments == 1 else "bootstrap_values"
        check(make_case(name, (40, 45), bootstrap=bootstrap, flags="both", seed=segments, time_major=True), "triton")
    finally:
        poisoned.clear_caches()
    assert set(seen) == {(5, 4, 0 if segments == 1 else 1)}, seen  # (the first launch of each call)


@pytest.mark.parametrize("rows, steps", [(8, 4), (16, 4), (4, 8), (8, 16)])
@pytest.mark.parametrize("name", ["gae", "td_lambda", "discounted_returns", "vtrace", "retrace", "traces"])
def test_tm_sub_tiles(name, rows, steps, monkeypatch, poisoned):
    """Time-major lanes tiles of fewer than 32 rows a program (launch._TM_SUB_TILES,
    launch._tm_sub_plan), each warp's lanes left over by the rows along time
    (launch._tm_groups: TM_W is the warps times 32 / rows), on every form's kernel (the
    planner's bounds set wide here, Triton < 3.7 as the tiles need): rows that are no
    multiple of the tile, 64- and 128-step rows (64 padded from 40 is not taken: the tiles
    take rows of exactly their length), truncations and terminations, two bootstrap forms,
    NaN-poisoned outputs against the float64 reference."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    from rltriton.kernels.launch import TmSubTile

    form = "forward" if name == "traces" else "td_lambda" if name == "discounted_returns" else name
    tile = (TmSubTile(rows, steps, 0.0, float("inf")),)
    monkeypatch.setattr(poisoned, "_TM_LANES_NARROW", True)
    monkeypatch.setattr(poisoned, "_TM_SUB_TILES", {form: {64: tile, 128: tile}})
    monkeypatch.setattr(poisoned, "_TM_SPLIT_MIN_ELEMS", 0)  # (calls this small keep the 8-row tiles otherwise)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.tm_lanes, pl.block_n, pl.block_t, pl.num_warps,
                                                             kw.get("TM_W")))
    poisoned.clear_caches()
    try:
        for i, (shape, bootstrap) in enumerate((((21, 64), "last_value"), ((37, 128), "bootstrap_values"))):
            check(make_case(name, shape, bootstrap=bootstrap, flags="both", seed=rows + i, time_major=True), "triton")
            T = shape[1]
            assert seen[-1] == (True, rows, T, T // steps * rows // 32, T // steps), (shape, seen[-1])
        check(make_case(name, (21, 40), flags="both", seed=3, time_major=True), "triton")
        assert not (seen[-1][0] and seen[-1][1] < 32), seen[-1]
    finally:
        poisoned.clear_caches()


def test_tm_sub_tiles_plan(monkeypatch):
    """The time-major lanes tiles of 8 or 16 rows as launch._TM_SUB_TILES ships them
    (launch._tm_sub_plan, through plan_for): each form's tiles in order within their bounds
    (programs of 64 rows an SM), rows of exactly a power-of-two length only, taken before the
    32-row tiles; none for a form without them (GAE's 1024-step rows, float64: no form),
    with ``_TM_SUB`` off, on Triton 3.7 or later (``_TM_LANES_NARROW`` off), or batch-major."""
    import torch

    from rltriton.kernels import launch

    monkeypatch.setattr(launch, "_TM_LANES_NARROW", True)
    launch.clear_caches()
    cpu = torch.device("cpu")
    sms = launch._DEFAULT_SMS

    def got(R, T, form, time_major=True):
        pl = launch.plan_for(R, T, cpu, time_major=time_major, form=form)
        return (pl.block_n, pl.num_warps, launch._tm_groups(pl)) if pl.tm_lanes and pl.block_n < 32 else None

    cut = int(0.125 * sms) * 64  # the most rows of GAE's [8, 512] tile (16 programs on 132 SMs)
    assert got(512, 512, "gae") == (8, 8, 32) and got(cut, 512, "gae") == (8, 8, 32)
    assert got(cut + 1, 512, "gae") == (16, 32, 64) and got(int(0.5 * sms) * 64, 512, "gae") == (16, 32, 64)
    assert got(int(0.5 * sms) * 64 + 1, 512, "gae") is None  # (past the bound: the tiles before)
    assert got(int(launch._TM_LONG_MIN_PROGRAMS * sms) * 64, 512, "gae") is None  # too few rows
    assert got(500, 500, "gae") is None and got(512, 1024, "gae") is None and got(512, 512, None) is None
    assert got(512, 512, "gae", time_major=False) is None
    assert got(2048, 512, "vtrace") == (8, 16, 64) and got(3072, 512, "vtrace") is None
    assert got(4096, 128, "vtrace") == (16, 8, 16) and got(8192, 128, "vtrace") is None
    assert got(16384, 128, "gae") == (16, 8, 16) and got(4096, 128, "td_lambda") is None
    assert got(2048, 512, "td_lambda") == (16, 32, 64) and got(3072, 512, "td_lambda") is None
    assert got(128, 1024, "td_lambda") == (8, 16, 64) and got(1024, 2048, "forward") == (8, 32, 128)
    assert got(8192, 128, "forward") == (16, 8, 16)
    assert got(2048, 128, "gae") == (16, 8, 16) and got(2047, 128, "gae") is None  # (2^18 elements: small below)
    assert got(2048, 512, "gae") == (16, 32, 64)
    monkeypatch.setattr(launch, "_TM_SUB", False)
    assert got(2048, 512, "gae") is None
    monkeypatch.setattr(launch, "_TM_SUB", True)
    monkeypatch.setattr(launch, "_TM_LANES_NARROW", False)
    assert got(2048, 512, "gae") is None
    launch.clear_caches()


@pytest.mark.parametrize("name", ESTIMATORS)
def test_tm_coop(name, monkeypatch, poisoned):
    """launch._TM_COOP (off as shipped) forced for every kernel form: a time-major split of
    one-chunk segments (the small tiles, 4 x 4, a segment a chunk) as one cooperative pass,
    through the interpreter, which runs programs one after another and so takes it as PHASE 5
    launched twice (the barrier runs on a GPU only: tests/test_gpu.py::test_tm_coop): every
    boundary form, rows that are no multiple of the tile, a short last segment, per-step
    coefficients with truncations, NaN-poisoned outputs against the float64 reference; a split
    of more than ``_TM_COOP_MAX_SEGMENTS`` segments, or of segments of several chunks, keeps
    its two passes."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    launch = poisoned
    use_small_tiles(monkeypatch, launch, split=True)
    monkeypatch.setattr(launch, "_TM_COOP", frozenset([*launch._FORMS, "forward"]))
    monkeypatch.setattr(launch, "_TM_MAX_SEGMENTS", 64)  # a segment a chunk: as many as the chunks
    monkeypatch.setattr(launch, "_TM_PROGRAMS_PER_SM", 1 << 20)
    monkeypatch.setattr(launch, "_TM_COOP_MAX_SEGMENTS", 16)
    used = plans_used(monkeypatch, launch, lambda pl, kw: (pl.time_major, pl.coop, pl.segments, kw["PHASE"]))
    launch.clear_caches()
    try:
        for k, (shape, bootstrap) in enumerate(zip([(5, 61), (9, 40), (3, 50), (6, 33)], BOOTSTRAP_FORMS)):
            check(make_case(name, shape, bootstrap=bootstrap, per_step=k == 3, time_major=True,
                            flags="truncated" if k == 3 else "both", seed=31 + k), "triton")
        assert used and all(u[:2] == (True, True) and 1 < u[2] <= 16 and u[3] == 5 for u in used), used
        used.clear()
        check(make_case(name, (5, 70), flags="both", seed=35, time_major=True), "triton")  # 18 chunks
        assert used and all(not u[1] and u[3] in (1, 2) for u in used), used
        monkeypatch.setattr(launch, "_TM_MAX_SEGMENTS", 3)  # segments of several chunks
        launch.clear_caches()
        used.clear()
        check(make_case(name, (5, 40), flags="both", seed=36, time_major=True), "triton")
        assert used and all(not u[1] and u[3] in (1, 2) for u in used), used
    finally:
        launch.clear_caches()


def test_tm_coop_plan(monkeypatch):
    """launch._TM_COOP's plans on 132 SMs: off as shipped; for the forms named, the small
    time-major calls' split (128 x 1024: 8 one-chunk segments of [8, 128]) becomes one
    cooperative pass, but not a split of more than ``_TM_COOP_MAX_SEGMENTS`` segments (GAE
    256 x 1024: 64 of [32, 16]), a split of segments of several chunks (GAE 512 x 2048), a
    time-major lanes tile, batch-major rows, or a form not named."""
    import torch

    from rltriton.kernels import launch

    monkeypatch.setattr(launch, "_TM_LANES_NARROW", True)
    monkeypatch.setattr(launch, "_GROUP_TILES", False)
    launch.clear_caches()
    cpu = torch.device("cpu")

    def plan(R, T, form, time_major=True):
        return launch.plan_for(R, T, cpu, time_major=time_major, form=form)

    assert not launch._TM_COOP and not plan(128, 1024, "gae").coop and plan(128, 1024, "gae").segments == 8
    monkeypatch.setattr(launch, "_TM_COOP", frozenset({"gae", "vtrace"}))
    pl = plan(128, 1024, "gae")
    assert pl.coop and pl.time_major and (pl.block_n, pl.block_t, pl.segments, pl.seg_len) == (8, 128, 8, 128), pl
    assert plan(128, 1024, "vtrace").coop and not plan(128, 1024, "retrace").coop
    wide = plan(256, 1024, "gae")
    assert wide.segments == 64 and wide.seg_len == wide.block_t and not wide.coop, wide
    long = plan(512, 2048, "gae")
    assert long.segments > 1 and long.seg_len > long.block_t and not long.coop, long
    assert plan(4096, 128, "gae").tm_lanes and not plan(4096, 128, "gae").coop
    assert not plan(128, 1024, "gae", time_major=False).coop
    # the settings tests/test_gpu.py::test_tm_coop forces, and the plans it expects
    for key, value in tm_coop_settings(launch).items():
        monkeypatch.setattr(launch, key, value)
    launch.clear_caches()
    for form in [*launch._FORMS, "forward"]:
        for R, T in [(128, 1024), (255, 1024), (200, 760), (140, 640), (130, 513)]:
            pl = plan(R, T, form)
            assert (pl.coop, pl.block_n, pl.block_t, pl.segments) == (True, 8, 128, -(-T // 128)), (form, R, T, pl)
    launch.clear_caches()


def test_tm_lanes_tiles_reach(monkeypatch):
    """The time-major lanes tiles (launch._tm_lanes_plan) as launch._TM_LANES_TILES ships them:
    time-major rows of 5 to 128 steps (GAE, TD(lambda), the forward scans; V-trace and
    Retrace up to 64, to 128 as narrow tiles only; the action form 17 to 64) with rows for a
    quarter of the SMs' 64-row
    programs or more, at 128 steps at most two an SM, V-trace's 64-step tiles on 0.75 to 2, the
    action form's from 0.75: not batch-major rows, not 4-step rows, not rows too few, not a form
    without tiles, not float64 arithmetic (no form then), not with ``_TM_LANES`` off. Steps a
    thread by form and tile (V-trace 2 on short tiles, the lagged forms 4 at 64 steps, GAE's
    and TD(lambda)'s 64-step tiles 4 on at most one program an SM), and the narrow tiles (32
    rows, ``_TM_LANES_NARROW``) where their programs are about a wave."""
    import torch

    from rltriton.kernels import launch
    from rltriton.kernels.launch import _tm_lanes_plan, plan_for

    monkeypatch.setattr(launch, "_TM_LANES", True)
    monkeypatch.setattr(launch, "_TM_LANES_NARROW", False)
    launch.clear_caches()
    cpu = torch.device("cpu")
    sms = launch._DEFAULT_SMS
    pl = plan_for(16384, 64, cpu, time_major=True, form="gae")
    assert pl.tm_lanes and (pl.block_n, pl.block_t, pl.num_warps) == (64, 64, 8) and not pl.time_major, pl
    assert (plan_for(32768, 8, cpu, time_major=True, form="td_lambda").num_warps,
            plan_for(32768, 16, cpu, time_major=True, form="td_lambda").num_warps) == (2, 4)  # 4 steps a thread
    assert not plan_for(16384, 64, cpu, form="gae").tm_lanes  # batch-major
    assert not plan_for(16384, 4, cpu, time_major=True, form="gae").tm_lanes
    assert plan_for(16384, 5, cpu, time_major=True, form="gae").tm_lanes  # an 8-step tile, padded
    assert not plan_for(16384, 129, cpu, time_major=True, form="gae").tm_lanes
    assert not plan_for(16384, 65, cpu, time_major=True, form="vtrace").tm_lanes  # V-trace: up to 64
    assert not plan_for(8192, 128, cpu, time_major=True, form="vtrace").tm_lanes  # (128: narrow only)
    assert not plan_for(16384, 65, cpu, time_major=True, form="retrace").tm_lanes
    assert plan_for(16384, 32, cpu, time_major=True, form="forward").tm_lanes  # the forward scans
    assert not plan_for(16384, 32, cpu, time_major=True, form=None).tm_lanes  # float64
    assert not plan_for(16384, 32, cpu, time_major=True, form="bogus").tm_lanes
    rows = 64 * (sms // 4 + 1)  # a quarter of the SMs' worth of 64-row programs, rounded up
    assert _tm_lanes_plan(rows, 32, sms, "gae") is not None and _tm_lanes_plan(rows - 128, 32, sms, "gae") is None
    assert _tm_lanes_plan(64 * 2 * sms, 128, sms, "gae") is not None
    assert _tm_lanes_plan(64 * 2 * sms + 64, 128, sms, "gae") is None  # 128 steps: at most 2 programs an SM
    assert _tm_lanes_plan(64 * 64 * sms, 128, sms, "td_lambda", True) is not None  # (_DR_TM_LANES_ANY: no bound)
    assert _tm_lanes_plan(64 * 2 * sms + 64, 64, sms, "gae") is not None  # (64: no upper bound)
    # Retrace's action form: 32- and 64-step tiles (rows of 17 to 64 steps) from 0.75 programs an SM
    assert plan_for(16384, 32, cpu, time_major=True, form="retrace_actions").tm_lanes
    assert plan_for(16384, 20, cpu, time_major=True, form="retrace_actions").tm_lanes  # 32-step tiles, padded
    for R, T in ((16384, 16), (32768, 8), (16384, 128)):
        assert not plan_for(R, T, cpu, time_major=True, form="retrace_actions").tm_lanes, (R, T)
    few = 64 * (-(-3 * sms // 4) - 1)  # one 64-row program short of 0.75 an SM
    assert _tm_lanes_plan(few + 64, 32, sms, "retrace_actions") is not None
    assert _tm_lanes_plan(few, 32, sms, "retrace_actions") is None and _tm_lanes_plan(few, 32, sms, "retrace")
    # the lagged forms' 64-step tiles: 4 steps a thread (16 warps), V-trace's on 0.75 to 2
    # programs an SM, Retrace's on any number from a quarter
    for form, R, taken in (("vtrace", 16384, True), ("vtrace", 8192, True), ("vtrace", 32768, False),
                           ("vtrace", 4096, False), ("retrace", 32768, True), ("retrace", 4096, True),
                           ("retrace_actions", 16384, True), ("retrace_actions", 4096, False)):
        pl = plan_for(R, 64, cpu, time_major=True, form=form)
        assert pl.tm_lanes == taken and (not taken or pl.num_warps == 16), (form, R, pl)
    assert _tm_lanes_plan(64 * 2 * sms, 64, sms, "vtrace") and not _tm_lanes_plan(64 * 2 * sms + 64, 64, sms, "vtrace")
    # V-trace's shorter tiles: 2 steps a thread (twice the warps of the other forms')
    assert plan_for(32768, 32, cpu, time_major=True, form="vtrace").num_warps == 16
    assert plan_for(32768, 8, cpu, time_major=True, form="vtrace").num_warps == 4
    assert plan_for(32768, 32, cpu, time_major=True, form="retrace").num_warps == 8
    # fewer steps a thread on few programs: GAE's and TD(lambda)'s 64-step tiles on at most one
    # program an SM take 4 (16 warps), on more the form's 8; not the forward scans', not at 128
    for form in ("gae", "td_lambda"):
        assert _tm_lanes_plan(64 * sms, 64, sms, form).num_warps == 16
        assert _tm_lanes_plan(64 * sms + 64, 64, sms, form).num_warps == 8
    assert _tm_lanes_plan(64 * sms, 64, sms, "forward").num_warps == 8
    assert _tm_lanes_plan(64 * sms, 128, sms, "gae").num_warps == 16  # (128 steps: the form's 8)
    assert all(_tm_lanes_plan(R, T, sms, f).block_n == 64 for R in (4096, 8192) for T in (64, 128)
               for f in ("gae", "vtrace", "forward") if _tm_lanes_plan(R, T, sms, f))
    # narrow tiles (Triton < 3.7): 32 rows a program where those programs are at most two an SM
    # at 64 steps (not the forward scans') and one at 128 (two for TD(lambda)'s kernel),
    # V-trace's 64-step tiles throughout their bounds, never the action form's; the bounds
    # above still count 64-row programs
    monkeypatch.setattr(launch, "_TM_LANES_NARROW", True)
    launch.clear_caches()
    narrow = {(f, R, T): _tm_lanes_plan(R, T, sms, f).block_n
              for f in ("gae", "td_lambda", "vtrace", "retrace", "retrace_actions", "forward")
              for R in (4096, 8192, 16384, 32768) for T in (32, 64, 128) if _tm_lanes_plan(R, T, sms, f)}
    assert {k for k, rows in narrow.items() if rows == 32} == {
        ("gae", 4096, 64), ("gae", 8192, 64), ("gae", 4096, 128), ("td_lambda", 4096, 64), ("td_lambda", 8192, 64),
        ("td_lambda", 4096, 128), ("td_lambda", 8192, 128), ("vtrace", 8192, 64), ("vtrace", 16384, 64),
        ("retrace", 4096, 64), ("retrace", 8192, 64), ("forward", 4096, 128), ("vtrace", 4096, 128),
        ("vtrace", 8192, 128), ("retrace", 4096, 128), ("retrace", 8192, 128)}, narrow
    # V-trace's and Retrace's 128-step tiles (narrow only): 0.45 to 1 program of 64 rows an SM,
    # 8 steps a thread (16 warps); not the action form's
    for form in ("vtrace", "retrace"):
        pl = _tm_lanes_plan(64 * sms, 128, sms, form)
        assert (pl.block_n, pl.num_warps) == (32, 16), (form, pl)
        assert _tm_lanes_plan(64 * sms + 1, 128, sms, form) is None
        assert _tm_lanes_plan(64 * 60, 100, sms, form) and not _tm_lanes_plan(64 * 59, 128, sms, form)
    assert _tm_lanes_plan(64 * sms, 128, sms, "retrace_actions") is None
    assert set(narrow.values()) == {32, 64}
    assert _tm_lanes_plan(32 * 2 * sms, 64, sms, "gae").block_n == 32
    assert _tm_lanes_plan(32 * 2 * sms + 32, 64, sms, "gae").block_n == 64
    assert _tm_lanes_plan(32 * sms + 32, 128, sms, "gae").block_n == 64
    assert _tm_lanes_plan(32 * 2 * sms, 128, sms, "td_lambda").block_n == 32
    assert _tm_lanes_plan(32 * 2 * sms + 32, 128, sms, "td_lambda").block_n == 64
    assert _tm_lanes_plan(8192, 64, sms, "gae").num_warps == 16  # (few programs: 4 steps a thread)
    forced = tm_lanes_tiles(launch, (8, 64), narrow=float("inf"))
    monkeypatch.setattr(launch, "_TM_LANES_TILES", forced)
    assert _tm_lanes_plan(64, 8, sms, "retrace_actions").block_n == 32  # (tests force every tile)
    monkeypatch.setattr(launch, "_TM_LANES", False)
    assert _tm_lanes_plan(16384, 32, sms, "gae") is None
    launch.clear_caches()


def test_lane_tiles_reach(monkeypatch):
    """The lanes tiles (launch._row_lanes_plan) take batch-major rows of _ROW_LANES_MIN_T to
    the form's _ROW_LANES_MAX_T steps with an SM's worth of programs or more, and rows of
    exactly 8 steps a row a thread (``_ROW_LANES_TINY``: 32 rows on one warp; not rows of 5-7
    steps, which allow no 16-byte access): not rows too few, not a form without a bound,
    not float64 arithmetic (run_backward passes no form then), not with ``_ROW_LANES`` off;
    time-major rows keep their own tiles."""
    import torch

    from rltriton.kernels import launch
    from rltriton.kernels.launch import _row_lanes_plan, plan_for
    from rltriton.kernels.scan import lanes_per_row

    monkeypatch.setattr(launch, "_ROW_LANES", True)
    monkeypatch.setattr(launch, "_ROW_LANES_MIN_T", 16)
    monkeypatch.setattr(launch, "_ROW_LANES_MAX_T", {"gae": 32, "td_lambda": 64})
    monkeypatch.setattr(launch, "_ROW_LANES_MIN_PROGRAMS", 1.0)
    launch.clear_caches()
    cpu = torch.device("cpu")
    pl = plan_for(32768, 64, cpu, form="td_lambda")
    assert pl.lanes and pl.block_t == 64 and pl.block_n * lanes_per_row(64) == 32 * pl.num_warps, pl
    assert plan_for(32768, 20, cpu, form="gae").lanes  # 32-step tiles, padded
    assert not plan_for(32768, 64, cpu, form="gae").lanes  # beyond GAE's bound
    tiny = plan_for(32768, 8, cpu, form="td_lambda")  # a row a thread
    assert tiny.lanes and (tiny.block_n, tiny.block_t, tiny.num_warps) == (32, 8, 1) and lanes_per_row(8) == 1, tiny
    assert not plan_for(32768, 6, cpu, form="td_lambda").lanes  # a row stride of 6: no 16-byte access
    assert not plan_for(32768, 8, cpu, form="vtrace").lanes  # no bound for the form
    assert not plan_for(32768, 32, cpu, form="vtrace").lanes  # no bound for the form
    assert not plan_for(32768, 32, cpu, form=None).lanes  # float64: no form passed
    assert not plan_for(32768, 32, cpu, time_major=True, form="gae").lanes
    sms = launch._DEFAULT_SMS
    rows = 16 * sms  # 16-row tiles of 32 steps on 4 warps: one program an SM
    assert _row_lanes_plan(rows, 32, sms, "gae") is not None and _row_lanes_plan(rows - 16, 32, sms, "gae") is None
    assert _row_lanes_plan(32 * sms, 8, sms, "gae") is not None  # 32-row tiles: one program an SM
    assert _row_lanes_plan(32 * sms - 32, 8, sms, "gae") is None
    # a form's own shapes (_ROW_LANES_SHAPES: warps, rows a lane): Retrace's one-warp tiles
    monkeypatch.setattr(launch, "_ROW_LANES_MAX_T", {"gae": 32, "retrace": 64})
    monkeypatch.setattr(launch, "_ROW_LANES_SHAPES", {"retrace": {16: (1, 2), 32: (1, 2), 64: (1, 1)}})
    launch.clear_caches()
    assert tuple(plan_for(32768, 64, cpu, form="retrace"))[:3] == (4, 64, 1)  # 8 lanes a row, one row each
    assert tuple(plan_for(32768, 32, cpu, form="retrace"))[:3] == (8, 32, 1)  # 8 lanes a row, two rows each
    assert tuple(plan_for(32768, 16, cpu, form="retrace"))[:3] == (16, 16, 1)  # 4 lanes a row, two rows each
    assert tuple(plan_for(32768, 32, cpu, form="gae"))[:3] == (16, 32, 4)  # the others keep _ROW_LANES_WARPS
    assert _row_lanes_plan(8 * sms, 32, sms, "retrace") is not None
    assert _row_lanes_plan(8 * sms - 8, 32, sms, "retrace") is None  # fewer programs than SMs
    monkeypatch.setattr(launch, "_ROW_LANES_TINY", False)
    assert _row_lanes_plan(32768, 8, sms, "gae") is None
    monkeypatch.setattr(launch, "_ROW_LANES", False)
    assert _row_lanes_plan(32768, 32, sms, "gae") is None
    # V-trace's 64-step tiles (_ROW_LANES_WHOLE): rows of exactly 64 steps on at most 16
    # programs an SM; its 16- and 32-step tiles take any row length
    monkeypatch.setattr(launch, "_ROW_LANES", True)
    monkeypatch.setattr(launch, "_ROW_LANES_MAX_T", {"vtrace": 64})
    monkeypatch.setattr(launch, "_ROW_LANES_SHAPES", {})
    monkeypatch.setattr(launch, "_ROW_LANES_WHOLE", {"vtrace": (64, 16.0)})
    launch.clear_caches()
    assert tuple(plan_for(16384, 64, cpu, form="vtrace"))[:3] == (8, 64, 2)
    assert plan_for(8 * sms, 64, cpu, form="vtrace").lanes  # one program an SM
    assert _row_lanes_plan(8 * 16 * sms, 64, sms, "vtrace") is not None
    assert _row_lanes_plan(8 * 16 * sms + 8, 64, sms, "vtrace") is None  # past 16 programs an SM
    assert not plan_for(32768, 64, cpu, form="vtrace").lanes  # 31 programs an SM
    assert not plan_for(16384, 48, cpu, form="vtrace").lanes  # not exactly 64 steps
    assert not plan_for(16384, 63, cpu, form="vtrace").lanes
    assert plan_for(16384, 20, cpu, form="vtrace").lanes  # 32-step tiles, padded
    launch.clear_caches()



def test_dr_short_tiles(monkeypatch, poisoned):
    """Discounted returns with a last_value or none, terminations only, scalar gamma and
    float32 take their own short-row tiles (launch._DR_SHORT_TILES: [4, 128] on 2 warps for
    rows of 65-128 steps) on enough programs (here any): against the float64 reference with
    outputs poisoned, on row counts that leave the last tile part empty; truncations,
    bootstrap_values, per-step gamma, float64, TD(lambda) and time-major storage keep the
    [2, 128] tiles (or their own)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    monkeypatch.setattr(poisoned, "_DR_SHORT_TILE_MIN_PROGRAMS", 0.0)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.block_n, pl.block_t, pl.num_warps))
    try:
        poisoned.clear_caches()
        for shape, bootstrap in (((9, 128), "last_value"), ((7, 100), "none"), ((6, 65), "last_value")):
            check(make_case("discounted_returns", shape, bootstrap=bootstrap, flags="terminated", seed=shape[0]),
                  "triton")
            assert seen[-1] == (4, 128, 2), (shape, seen)
        others = [make_case("discounted_returns", (9, 128), flags="both", seed=1),
                  make_case("discounted_returns", (9, 128), bootstrap="bootstrap_values", flags="terminated", seed=2),
                  make_case("discounted_returns", (9, 128), flags="terminated", per_step=True, seed=5),
                  make_case("discounted_returns", (9, 128), flags="terminated", dtype=torch.float64, seed=6),
                  make_case("td_lambda", (9, 128), flags="terminated", seed=3)]
        for case in others:
            check(case, "triton")
            assert seen[-1] == (2, 128, 2), (case.name, seen)
        check(make_case("discounted_returns", (9, 128), flags="terminated", seed=4, time_major=True), "triton")
        assert seen[-1][0] != 4, seen
    finally:
        poisoned.clear_caches()


def test_td_wide_lanes(monkeypatch, poisoned):
    """TD(lambda) and discounted returns on rows of exactly 128 steps, float32, a last_value or
    none, no truncations, scalar gamma and lam take the lanes tiles [8, 128] on 2 warps
    (launch._TD_WIDE_LANES; here on any number of programs, as Triton 3.6 gets them), discounted
    returns without the cut (launch._TD_LAZY_CUT_WIDE: LAZY_CUT), TD(lambda) with it: against
    the float64 reference with outputs poisoned, on row counts that leave the last tile part
    empty. Rows of 100 steps, truncations, per-step bootstrap values, per-step gamma, float64,
    time-major storage and calls of more bytes than _TD_WIDE_LANES_MAX_BYTES keep their tiles,
    as do the other estimators."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    monkeypatch.setattr(poisoned, "_ROW_LANES", True)
    monkeypatch.setattr(poisoned, "_TD_WIDE_LANES_MIN_PROGRAMS", 0.0)
    monkeypatch.setattr(poisoned, "_DR_WIDE_LANES_MIN_PROGRAMS", 0.0)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.block_n, pl.block_t, pl.num_warps, pl.lanes,
                                                             kw.get("EXACT_T"), kw.get("LAZY_CUT")))
    wide = (8, 128, 2, True, True)
    try:
        poisoned.clear_caches()
        for name, shape, bootstrap in (("td_lambda", (13, 128), "last_value"), ("td_lambda", (5, 128), "none"),
                                       ("discounted_returns", (11, 128), "last_value"),
                                       ("discounted_returns", (17, 128), "none")):
            check(make_case(name, shape, bootstrap=bootstrap, flags="terminated", seed=shape[0]), "triton")
            assert seen[-1] == (*wide, name == "discounted_returns"), (name, shape, seen)
        check(make_case("td_lambda", (9, 128), bootstrap="last_value", flags="none", seed=2), "triton")
        assert seen[-1] == (*wide, False), seen
        others = [make_case("td_lambda", (9, 100), flags="terminated", seed=1),
                  make_case("td_lambda", (9, 128), flags="both", seed=3),
                  make_case("discounted_returns", (9, 128), flags="truncated", seed=4),
                  make_case("td_lambda", (9, 128), bootstrap="bootstrap_values", flags="terminated", seed=5),
                  make_case("td_lambda", (9, 128), flags="terminated", per_step=True, seed=6),
                  make_case("discounted_returns", (9, 128), flags="terminated", dtype=torch.float64, seed=7),
                  make_case("gae", (9, 128), flags="terminated", seed=8)]
        for case in others:
            check(case, "triton")
            assert seen[-1][1:4] != wide[1:4] and not seen[-1][5], (case.name, seen)
        check(make_case("td_lambda", (9, 128), flags="terminated", seed=9, time_major=True), "triton")
        assert seen[-1][:4] != wide[:4], seen
        # 9 rows x 128 steps x 13 bytes (rewards, values, returns, bool terminations): 14976
        monkeypatch.setattr(poisoned, "_TD_WIDE_LANES_MAX_BYTES", 9 * 128 * 13 - 1)
        poisoned.clear_caches()
        check(make_case("td_lambda", (9, 128), flags="terminated", seed=10), "triton")
        assert seen[-1][:5] != wide and not seen[-1][5], seen
        check(make_case("discounted_returns", (9, 128), flags="terminated", seed=11), "triton")  # 9 bytes a step
        assert seen[-1] == (*wide, True), seen
    finally:
        poisoned.clear_caches()


def test_dr_tm_lanes_any(monkeypatch, poisoned):
    """Time-major discounted returns to the window edge (no values; a last_value or none, no
    truncations, scalar gamma) take the 128-step time-major lanes tiles past their bound of 2
    programs an SM (launch._DR_TM_LANES_ANY; here on one SM, so 4 programs of 64 rows): against
    the float64 reference with outputs poisoned, on rows of 100 and 128 steps and a row count
    that leaves the last tile part empty. TD(lambda) (values), truncations, per-step gamma and
    per-step bootstrap values keep the time-major tiles; with the setting off so do discounted
    returns; within the bound (2 programs) both estimators take the lanes tiles."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    monkeypatch.setattr(poisoned, "_DEFAULT_SMS", 1)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.tm_lanes, pl.block_t, kw.get("EDGE_CARRY")))
    lanes = (True, 128, True)
    try:
        poisoned.clear_caches()
        for shape, bootstrap in (((200, 100), "last_value"), ((256, 128), "none"), ((193, 128), "last_value")):
            check(make_case("discounted_returns", shape, bootstrap=bootstrap, flags="terminated", seed=shape[0],
                            time_major=True), "triton")
            assert seen[-1] == lanes, (shape, seen)
        others = [make_case("td_lambda", (200, 100), flags="terminated", seed=1, time_major=True),
                  make_case("discounted_returns", (200, 100), flags="both", seed=2, time_major=True),
                  make_case("discounted_returns", (200, 100), flags="terminated", per_step=True, seed=3,
                            time_major=True),
                  make_case("discounted_returns", (200, 100), bootstrap="bootstrap_values", flags="terminated",
                            seed=4, time_major=True)]
        for case in others:
            check(case, "triton")
            assert not seen[-1][0], (case.name, seen)
        for name in ("td_lambda", "discounted_returns"):  # 2 programs: the tile's own bound
            check(make_case(name, (128, 100), flags="terminated", seed=5, time_major=True), "triton")
            assert seen[-1][:2] == (True, 128), (name, seen)
        monkeypatch.setattr(poisoned, "_DR_TM_LANES_ANY", False)
        poisoned.clear_caches()
        check(make_case("discounted_returns", (200, 100), flags="terminated", seed=6, time_major=True), "triton")
        assert not seen[-1][0], seen
    finally:
        poisoned.clear_caches()


# (estimator, shape, keyword arguments, the time-major lanes tile expected: (steps, steps a
# thread) or None) on 2 SMs: TD(lambda)'s 512-step tile takes 0.2 to 1.5 programs of 64 rows,
# 3 for discounted returns to the edge; its 256-step tile up to 3, GAE's up to 2, the forward
# kernel's 0.2 to 1. (Row counts past the bounds run the time-major tiles, slow in the
# interpreter: test_tm_long_tiles_bounds has the rest.)
_TM_LONG_CASES = [
    ("td_lambda", (64, 512), {}, (512, 16)),
    ("td_lambda", (50, 300), {"bootstrap": "next_values"}, (512, 16)),
    ("discounted_returns", (150, 512), {}, (512, 16)),
    ("discounted_returns", (150, 257), {"bootstrap": "none"}, (512, 16)),
    ("td_lambda", (150, 200), {"bootstrap": "bootstrap_values"}, (256, 8)),
    ("gae", (128, 256), {}, (256, 8)),
    ("gae", (60, 129), {"flags": "both", "bootstrap": "none"}, (256, 8)),
    ("traces", (64, 256), {}, (256, 8)),
    ("prefix_sum", (45, 160), {}, (256, 8)),
    ("td_lambda", (65, 512), {}, None),
    ("discounted_returns", (65, 512), {"bootstrap": "bootstrap_values"}, None),
    ("traces", (45, 512), {"flags": "both"}, (512, 16)),
    ("prefix_sum", (64, 512), {}, (512, 16)),
    ("traces", (40, 400), {}, None),  # (the forward kernel's 512-step tile: exactly 512 steps)
    ("prefix_sum", (65, 512), {}, None),
    ("gae", (64, 512), {}, (512, 32)),  # (GAE's 512-step tile: 32 steps a thread, 16 warps, exact)
    ("gae", (40, 512), {"flags": "both", "bootstrap": "bootstrap_values"}, (512, 32)),
    ("gae", (50, 512), {"flags": "truncated", "bootstrap": "next_values"}, (512, 32)),
    ("gae", (65, 512), {}, None),
    ("gae", (45, 400), {}, None),
    ("retrace", (64, 256), {}, (256, 8)),  # (Retrace's 256-step tile, sampled form)
    ("retrace", (40, 200), {"flags": "both", "bootstrap": "bootstrap_values"}, (256, 8)),
    ("retrace", (33, 129), {"flags": "truncated", "bootstrap": "next_values"}, (256, 8)),
    ("retrace", (65, 256), {}, None),
]


def test_tm_long_tiles(monkeypatch, poisoned):
    """Time-major rows of 129 to 512 steps take the time-major lanes tiles of a whole 256- or
    512-step row (``launch._TM_LANES_TILES``' narrow-only 256- and 512-step tiles: 32 rows a
    program, 32 warps, 8 or 16 steps a thread; Triton < 3.7, ``launch._TM_LANES_NARROW``, set
    here) within each form's bounds:
    against the float64 reference with outputs poisoned, on 2 SMs, row counts that leave the
    last program part empty, rows padded inside the tile, several bootstrap forms and
    truncations; discounted returns to the window edge by their own bounds (``edge``), with
    per-step bootstrap values by TD(lambda)'s, past which the time-major tiles run; the
    forward kernel's and GAE's 512-step tiles (GAE's: 32 steps a thread on 16 warps) on rows
    of exactly 512 steps only (``exact``), with T as a constant (EXACT_T)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    monkeypatch.setattr(poisoned, "_DEFAULT_SMS", 2)
    monkeypatch.setattr(poisoned, "_TM_LANES_NARROW", True)
    monkeypatch.setattr(poisoned, "_TM_SUB", False)  # (the 32-row tiles; the 8- and 16-row ones: test_tm_sub_tiles)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.tm_lanes, pl.block_t, pl.block_t // pl.num_warps,
                                                             pl.block_n, pl.num_warps, kw.get("EXACT_T")))
    try:
        poisoned.clear_caches()
        for i, (name, shape, kwargs, tile) in enumerate(_TM_LONG_CASES):
            kwargs = {"flags": "terminated", **kwargs}
            check(make_case(name, shape, seed=40 + i, time_major=True, **kwargs), "triton")
            if tile is not None:
                assert seen[-1] == tm_long_tile_record(poisoned, name, shape[1], tile), (name, shape, kwargs, seen[-1])
            else:
                assert not seen[-1][0], (name, shape, kwargs, seen[-1])
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("name", ["vtrace", "retrace"])
def test_tm_lanes_lagged_128(name, monkeypatch, poisoned):
    """V-trace's and Retrace's (sampled) 128-step time-major lanes tiles as shipped (narrow
    only, 8 steps a thread on 16 warps; Triton < 3.7, ``launch._TM_LANES_NARROW``, set here)
    on 2 SMs, where they run from 0.45 to 1 program of 64 rows an SM (58 to 128 rows): against
    the float64 reference with outputs poisoned, rows of 128 and of 100 steps (padded inside
    the tile), a last program part empty, the bootstrap forms and truncations in turn, float32
    and bfloat16 inputs; 129 rows (past the bound) keep the time-major tiles."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    monkeypatch.setattr(poisoned, "_DEFAULT_SMS", 2)
    monkeypatch.setattr(poisoned, "_TM_LANES_NARROW", True)
    monkeypatch.setattr(poisoned, "_TM_SUB", False)  # (the 32-row tiles; V-trace's [16, 128]: test_tm_sub_tiles)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.tm_lanes, pl.block_n, pl.block_t, pl.num_warps))
    try:
        poisoned.clear_caches()
        for i, (shape, bootstrap, flags, dtype, taken) in enumerate([
                ((128, 128), "last_value", "both", torch.float32, True),
                ((70, 100), "bootstrap_values", "terminated", torch.float32, True),
                ((58, 128), "none", "truncated", torch.float32, True),
                ((96, 128), "next_values", "both", torch.bfloat16, True),
                ((129, 128), "last_value", "both", torch.float32, False)]):
            check(make_case(name, shape, seed=60 + i, time_major=True, bootstrap=bootstrap, flags=flags, dtype=dtype),
                  "triton")
            assert (seen[-1] == (True, 32, 128, 16)) is taken, (name, shape, seen[-1])
            assert taken or not seen[-1][0], (name, shape, seen[-1])
    finally:
        poisoned.clear_caches()


def test_tm_small_plans(monkeypatch):
    """``launch._TM_SMALL_ROWS`` (8 as shipped) and ``_TM_SMALL_LONG_ELEMS`` (its rules in the
    body), on the H200's 132 SMs: time-major calls of fewer than ``_TM_SPLIT_MIN_ELEMS``
    elements, rows of 32 to 128 steps and at least 64 rows take one chunk of the time-major
    tiles of that many rows, a warp per 16 steps (512 x 128, 2047 x 128, 64 x 32, 77 x 33), but
    not rows of more than 128 or fewer than 32 steps, not fewer than 64 rows, not a call of 2^18
    elements (2048 x 128 keeps the 16-row one-chunk tiles), nor the time-major lanes tiles'
    rows; at 0 they take the generic tiles."""
    from rltriton.kernels import launch

    monkeypatch.setattr(launch, "_TM_LANES_NARROW", False)
    monkeypatch.setattr(launch, "_TM_SUB", False)  # (session 59's tiles of 8 or 16 rows: test_tm_sub_tiles_plan)
    cpu, sms = torch.device("cpu"), 132
    monkeypatch.setattr(launch, "_DEFAULT_SMS", sms)
    launch.clear_caches()
    try:
        def tm(R: int, T: int, form: str | None = "gae") -> launch.Plan:
            return launch.plan_for(R, T, cpu, time_major=True, form=form)

        def tile(pl: launch.Plan) -> tuple:
            return pl.block_n, pl.block_t, pl.num_warps, pl.segments, pl.time_major, pl.tm_lanes

        assert launch._TM_SMALL_ROWS == 8
        for R, T, bt, warps in [(512, 128, 128, 8), (2047, 128, 128, 8), (64, 32, 32, 2), (77, 33, 64, 4),
                                (1024, 100, 128, 8)]:
            for form in ("gae", "td_lambda", "vtrace", "retrace", "retrace_actions", "forward", None):
                assert tile(tm(R, T, form)) == (8, bt, warps, 1, True, False), (R, T, form, tm(R, T, form))
        assert tm(2048, 128).block_n == launch._TM_ONE_CHUNK_ROWS  # (2^18 elements)
        assert tm(4096, 128).tm_lanes  # (the time-major lanes tiles first)
        for R, T in [(512, 129), (512, 31), (63, 128)]:
            assert not tm(R, T, "retrace_actions").time_major, (R, T)
        monkeypatch.setattr(launch, "_TM_SMALL_ROWS", 4)
        launch.clear_caches()
        assert (tm(512, 128).block_n, tm(512, 128).num_warps) == (4, 8)
        monkeypatch.setattr(launch, "_TM_SMALL_ROWS", 0)
        launch.clear_caches()
        assert not tm(512, 128).time_major and not tm(512, 128).tm_lanes
        # _TM_SMALL_LONG_ELEMS: 129 to 1024 steps, 128 rows or more, at most 2^18 elements for
        # TD(lambda)'s kernel (where a split took them), fewer for GAE, V-trace, Retrace and the
        # forward kernel (where the generic tiles took them), never for the action form or
        # float64 (no form): one chunk of [4, T] on 8 warps
        assert launch._TM_SMALL_LONG_ELEMS == {"td_lambda": 1 << 18, "forward": (1 << 18) - 1,
                                               "gae": (1 << 18) - 1, "vtrace": (1 << 18) - 1,
                                               "retrace": (1 << 18) - 1}
        # (_TM_SMALL_LONG_FEW_ROWS = 2 rows a program in calls of 64 to 255 rows)
        assert (launch._TM_SMALL_LONG_MIN_ROWS, launch._TM_SMALL_LONG_FEW_BELOW) == (64, 256)
        small = [(256, 512, 512, 4), (128, 1024, 1024, 2), (128, 1000, 1024, 2), (128, 129, 256, 2),
                 (1000, 200, 256, 4), (255, 1024, 1024, 2), (64, 512, 512, 2), (127, 512, 512, 2)]
        for R, T, bt, rows in small + [(512, 512, 512, 4), (256, 1024, 1024, 4), (1024, 256, 256, 4)]:
            assert tile(tm(R, T, "td_lambda")) == (rows, bt, 8, 1, True, False), (R, T, tm(R, T, "td_lambda"))
        def split(R: int, T: int, form: str) -> tuple[int, int] | None:
            # (the rule written out: GAE and Retrace from 86K elements on [8, 128], V-trace
            # above 736 steps on [4, 128] below 192 rows and [8, 128] from 192, the forward
            # kernel above 768 steps on [8, 128])
            if not 128 <= R < 256 or T <= 512:
                return None
            if form == "gae" and R < 192 and R % 4 == 0 and T <= 768:
                return (4, 1)  # (where 4 divides the rows, up to 768 steps, any element count)
            if form in ("gae", "retrace"):
                return (8, 2) if R * T >= 86 * 1024 else None
            if form == "vtrace":
                return ((8, 2) if R >= 192 else (4, 1)) if T > 736 else None
            if form == "forward":
                return (8, 2) if T > 768 else None
            return None

        for R, T, bt, rows in small:
            for form in ("gae", "vtrace", "retrace", "forward"):
                if split(R, T, form):
                    continue  # (_TM_SMALL_SPLIT, below)
                assert tile(tm(R, T, form)) == (rows, bt, 8, 1, True, False), (R, T, form, tm(R, T, form))
        # _TM_SMALL_SPLIT: of those, GAE's and Retrace's calls of 128 to 255 rows of more than
        # 512 steps and at least 86K elements split in time into 128-step one-chunk segments on
        # [8, 128] (2 warps), GAE's on [4, 128] (1) where 4 divides fewer than 192 rows of at
        # most 768 steps, from any element count; V-trace's of more than 736 steps below 192
        # rows on [4, 128] (1), from 192 rows on [8, 128]; the forward kernel's of more than 768
        # steps on [8, 128]
        assert launch._TM_SMALL_SPLIT == {"gae": ((128, 192, 512, 0, 4, 1, 4, 768),
                                                  (128, 256, 512, 86 * 1024, 8, 2)),
                                          "vtrace": ((192, 256, 736, 0, 8, 2), (128, 192, 736, 0, 4, 1)),
                                          "retrace": ((128, 256, 512, 86 * 1024, 8, 2),),
                                          "forward": ((128, 256, 768, 0, 8, 2),)}
        assert launch._TM_SMALL_SPLIT_STEPS == 128
        shapes = [(128, 1024), (128, 1000), (255, 1024), (200, 600), (130, 513), (128, 768), (130, 640),
                  (140, 704), (191, 1024), (192, 641), (192, 705), (200, 680), (250, 640), (137, 643),
                  (137, 642), (191, 641), (191, 737), (192, 737), (192, 736), (200, 769), (200, 768),
                  (140, 640), (188, 768), (188, 769), (190, 640), (192, 640), (128, 513), (136, 600),
                  (130, 600)]
        for R, T in shapes:
            for form in ("gae", "vtrace", "td_lambda", "retrace", "forward"):
                pl, want = tm(R, T, form), split(R, T, form)
                if want is None:
                    assert pl.segments == 1 and pl.block_t >= T, (R, T, form, pl)
                else:
                    rows, warps = want
                    assert tile(pl) == (rows, 128, warps, -(-T // 128), True, False) and pl.seg_len == 128, \
                        (R, T, form, pl)
        # (both sides of each bound taken)
        assert {split(R, T, f) for R, T in shapes for f in ("gae", "vtrace")} == {None, (8, 2), (4, 1)}
        assert split(137, 643, "gae") and not split(137, 642, "gae")  # (88064 elements)
        assert split(137, 643, "retrace") and not split(137, 642, "retrace")
        # (GAE's [4, 128]: 4 | 188 and 136, not 190 or 130; 768 steps, not 769; below 192 rows;
        # more than 512 steps; below 86K elements too, where [8, 128] does not split)
        assert split(188, 768, "gae") == (4, 1) and split(188, 769, "gae") == (8, 2)
        assert split(190, 640, "gae") == (8, 2) and split(192, 640, "gae") == (8, 2)
        assert split(128, 513, "gae") == (4, 1) and not split(128, 512, "gae")
        assert split(136, 600, "gae") == (4, 1) and not split(130, 600, "gae")
        assert split(140, 640, "retrace") == (8, 2)
        assert split(191, 737, "vtrace") == (4, 1) and split(192, 737, "vtrace") == (8, 2)
        assert not split(192, 736, "vtrace") and not split(191, 705, "vtrace")
        assert split(200, 769, "forward") and not split(200, 768, "forward")
        assert not split(255, 1024, "td_lambda")
        for R, T in [(127, 1024), (128, 512), (256, 1024), (255, 1025), (64, 1024)]:
            assert tm(R, T, "gae").block_n != 8 and tm(R, T, "vtrace").block_t != 128, (R, T)
        shipped = launch._TM_SMALL_SPLIT
        monkeypatch.setattr(launch, "_TM_SMALL_SPLIT", {})
        launch.clear_caches()
        assert tile(tm(128, 1024, "gae")) == (2, 1024, 8, 1, True, False)
        monkeypatch.setattr(launch, "_TM_SMALL_SPLIT", shipped)
        launch.clear_caches()
        for form in ("gae", "vtrace", "retrace", "forward"):
            for R, T in [(512, 512), (256, 1024), (1024, 256)]:
                assert tm(R, T, form).segments > 1, (R, T, form)  # (the split)
        assert tm(512, 512, "retrace_actions").segments > 1 and tm(512, 512, None).segments > 1
        assert not tm(256, 512, "retrace_actions").time_major and not tm(256, 512, None).time_major
        assert not tm(128, 512, "retrace_actions").time_major and not tm(128, 1024, None).time_major
        for R, T in [(63, 512), (512, 1025), (513, 512), (256, 1025), (128, 1025)]:
            assert tm(R, T, "td_lambda").block_n not in (2, 4), (R, T)
        # (the 256- and 512-step time-major lanes tiles first, where they are: Triton < 3.7)
        monkeypatch.setattr(launch, "_TM_LANES_NARROW", True)
        launch.clear_caches()
        assert tm(1000, 256, "td_lambda").tm_lanes and tm(512, 512, "td_lambda").block_n == 4
    finally:
        launch.clear_caches()


@pytest.mark.parametrize("name", ESTIMATORS)
def test_tm_small_long_tiles(name, monkeypatch, poisoned):
    """The one-chunk time-major tiles of whole rows of 129 to 1024 steps on 4 rows and 8 warps
    (``launch._TM_SMALL_LONG_ELEMS``: every form here, 2^18 elements) on 2 SMs, from 7 rows
    (``_TM_SMALL_LONG_MIN_ROWS``, lowered here), and on 2 rows below 9 rows
    (``_TM_SMALL_LONG_FEW_BELOW``, lowered here): every estimator against the float64 reference
    with outputs poisoned, rows of 256 steps and of 200 and 300 (padded inside the tile), row
    counts that leave the last tile part empty, the bootstrap forms in turn, truncations and
    terminations, and bfloat16 inputs."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    monkeypatch.setattr(poisoned, "_DEFAULT_SMS", 2)
    monkeypatch.setattr(poisoned, "_TM_SMALL_LONG_ELEMS", dict.fromkeys([*poisoned._FORMS, "forward"], 1 << 18))
    monkeypatch.setattr(poisoned, "_TM_SMALL_LONG_MIN_ROWS", 7)
    monkeypatch.setattr(poisoned, "_TM_SMALL_LONG_FEW_BELOW", 9)
    monkeypatch.setattr(poisoned, "_TM_MIN_ROWS", 7)
    monkeypatch.setattr(poisoned, "_TM_LANES", False)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.time_major, pl.block_n, pl.block_t, pl.num_warps,
                                                             pl.segments))
    try:
        poisoned.clear_caches()
        for k, (shape, dtype) in enumerate([((9, 256), torch.float32), ((10, 200), torch.float32),
                                            ((7, 300), torch.bfloat16)]):
            bootstrap = BOOTSTRAP_FORMS[(k + ESTIMATORS.index(name)) % len(BOOTSTRAP_FORMS)]
            seen.clear()
            check(make_case(name, shape, seed=90 + k, time_major=True, bootstrap=bootstrap, dtype=dtype), "triton")
            rows = 2 if shape[0] < 9 else 4
            assert seen and set(seen) == {(True, rows, 256 if shape[1] <= 256 else 512, 8, 1)}, (name, shape, seen)
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("tile", [(8, 2), (4, 1)], ids=["8x2", "4x1"])
@pytest.mark.parametrize("name", ESTIMATORS)
def test_tm_small_split(name, tile, monkeypatch, poisoned):
    """``launch._TM_SMALL_SPLIT``'s time split of small time-major calls (its tiles, (rows,
    warps), forced for every kernel form here; GAE and V-trace as shipped) on 2 SMs, its bounds
    lowered: 128-step one-chunk segments (3 to 5 of them, the last part empty at 300, 257 and
    600 steps), the two passes' summaries, a last row tile part empty, the bootstrap forms in
    turn, truncations and terminations, and bfloat16 inputs, against the float64 reference with
    outputs poisoned (the action form too, whose calls take it only with a
    ``_TM_SMALL_LONG_ELEMS`` entry, as here: it ships none)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    monkeypatch.setattr(poisoned, "_DEFAULT_SMS", 2)
    monkeypatch.setattr(poisoned, "_TM_SMALL_LONG_ELEMS", dict.fromkeys([*poisoned._FORMS, "forward"], 1 << 18))
    # (7 to 63 rows, above 128 steps, from 2048 elements: every shape below)
    monkeypatch.setattr(poisoned, "_TM_SMALL_SPLIT", dict.fromkeys([*poisoned._FORMS, "forward"],
                                                                   ((7, 64, 128, 2048, *tile),)))
    for key in ("_TM_SMALL_LONG_MIN_ROWS", "_TM_MIN_ROWS"):
        monkeypatch.setattr(poisoned, key, 7)
    monkeypatch.setattr(poisoned, "_TM_SMALL_LONG_FEW_BELOW", 64)
    monkeypatch.setattr(poisoned, "_TM_LANES", False)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.time_major, pl.block_n, pl.block_t, pl.num_warps,
                                                             pl.segments, pl.seg_len))
    try:
        poisoned.clear_caches()
        for k, (shape, dtype) in enumerate([((9, 300), torch.float32), ((13, 257), torch.float32),
                                            ((7, 600), torch.bfloat16)]):
            bootstrap = BOOTSTRAP_FORMS[(k + ESTIMATORS.index(name)) % len(BOOTSTRAP_FORMS)]
            seen.clear()
            check(make_case(name, shape, seed=70 + k, time_major=True, bootstrap=bootstrap, dtype=dtype), "triton")
            want = (True, tile[0], 128, tile[1], -(-shape[1] // 128), 128)
            assert seen and set(seen) == {want}, (name, shape, seen)
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("rows", [8, 4])
@pytest.mark.parametrize("name", ESTIMATORS)
def test_tm_small_tiles(name, rows, monkeypatch, poisoned):
    """The time-major one-chunk tiles of ``launch._TM_SMALL_ROWS`` rows (set here; 8 as
    shipped) on 2 SMs, where calls of 64 to 128 rows take them (the time-major lanes tiles
    off): every estimator against the
    float64 reference with outputs poisoned, rows of 128 steps and of 100 and 33 (padded
    inside the tile), 70 and 77 rows (a last tile part empty), the bootstrap forms in turn,
    truncations and terminations, and bfloat16 inputs."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    monkeypatch.setattr(poisoned, "_DEFAULT_SMS", 2)
    monkeypatch.setattr(poisoned, "_TM_SMALL_ROWS", rows)
    monkeypatch.setattr(poisoned, "_TM_LANES", False)  # (which 2 SMs would give these rows)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.time_major, pl.block_n, pl.block_t, pl.segments))
    try:
        poisoned.clear_caches()
        for k, (shape, dtype) in enumerate([((66, 128), torch.float32), ((70, 100), torch.float32),
                                            ((77, 33), torch.float32), ((64, 128), torch.bfloat16)]):
            bootstrap = BOOTSTRAP_FORMS[(k + rows) % len(BOOTSTRAP_FORMS)]
            seen.clear()
            check(make_case(name, shape, seed=80 + k, time_major=True, bootstrap=bootstrap, dtype=dtype), "triton")
            bt = 64 if shape[1] == 33 else 128
            assert seen and set(seen) == {(True, rows, bt, 1)}, (name, shape, seen)
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("narrow", [True, False], ids=["triton-3.6", "triton-3.8"])
def test_tm_long_tiles_bounds(narrow, monkeypatch):
    """The bounds of ``launch._TM_LANES_TILES``' 256- and 512-step tiles (``narrow_only``) on
    the H200's 132 SMs, as timed (programs of 64 rows an SM): TD(lambda)'s 256-step tile 0.03 to
    1.5 (193 to 12672 rows), its 512-step tile 0.1 to 0.75 (833 to 6336 rows), both 0.03 to 1.5
    for discounted returns to the window edge (``edge``); GAE's 256-step tile 0.03 to 1 (193 to
    8448 rows), the forward kernel's 0.1 to 0.5 (833 to 4224 rows) and its 512-step tile
    0.2 to 0.75 (1665 to 6336 rows) and GAE's 512-step tile 0.15 to 0.5 (1217 to 4224 rows) on
    rows of exactly 512 steps only (``exact``); Retrace's 256-step tile 0.25 to 0.5 (2049 to 4224
    rows), none of 512 steps; none for V-trace, and none on Triton 3.8 (``_TM_LANES_NARROW`` off); the
    128-step tiles' edge bound is still none."""
    from rltriton.kernels import launch

    monkeypatch.setattr(launch, "_DEFAULT_SMS", 132)
    monkeypatch.setattr(launch, "_TM_LANES_NARROW", narrow)
    monkeypatch.setattr(launch, "_TM_SUB", False)
    cpu = torch.device("cpu")
    for form, R, T, edge, tile in [
            ("td_lambda", 12672, 256, False, 256), ("td_lambda", 12673, 256, False, None),
            ("td_lambda", 12672, 129, True, 256), ("td_lambda", 12673, 256, True, None),
            ("td_lambda", 833, 512, False, 512), ("td_lambda", 832, 512, False, None),
            ("td_lambda", 6336, 257, False, 512), ("td_lambda", 6337, 512, False, None),
            ("td_lambda", 193, 512, True, 512), ("td_lambda", 192, 512, True, None),
            ("td_lambda", 193, 256, False, 256), ("td_lambda", 192, 256, True, None),
            ("td_lambda", 12672, 512, True, 512),
            ("td_lambda", 12673, 512, True, None), ("gae", 8448, 256, False, 256),
            ("gae", 8449, 256, False, None), ("gae", 193, 200, False, 256),
            ("gae", 192, 256, False, None), ("gae", 4096, 512, False, 512),
            ("gae", 1217, 512, False, 512), ("gae", 1216, 512, False, None),
            ("gae", 4224, 512, False, 512), ("gae", 4225, 512, False, None),
            ("gae", 4096, 511, False, None),
            ("forward", 833, 256, False, 256), ("forward", 832, 256, False, None),
            ("forward", 4224, 256, False, 256), ("forward", 4225, 256, False, None),
            ("forward", 2048, 512, False, 512), ("forward", 1665, 512, False, 512),
            ("forward", 1664, 512, False, None), ("forward", 6336, 512, False, 512),
            ("forward", 6337, 512, False, None), ("forward", 4096, 511, False, None),
            ("forward", 4096, 300, False, None), ("vtrace", 4096, 256, False, None),
            ("retrace", 4096, 256, False, 256), ("retrace", 2049, 256, False, 256),
            ("retrace", 2048, 256, False, None), ("retrace", 4224, 129, False, 256),
            ("retrace", 4225, 256, False, None), ("retrace", 4096, 512, False, None),
            ("td_lambda", 100000, 128, True, 128)]:
        pl = launch.plan_for(R, T, cpu, time_major=True, form=form, tm_lanes_edge=edge)
        expect = tile if (narrow or tile == 128) else None
        got = pl.block_t if pl.tm_lanes else None
        assert got == expect, (form, R, T, edge, pl)
        if got is not None and got > 128:  # (GAE's 512-step tile: 32 steps a thread, 16 warps)
            warps = 16 if (form, got) == ("gae", 512) else 32
            assert (pl.block_n, pl.num_warps) == (32, warps), (form, R, T, pl)


def _split_never_exact(name: str, monkeypatch, launch, seen: list) -> None:
    """``name`` on 3 rows of 64 steps split in time (two passes, small tiles forced): no launch
    takes ``EXACT_T`` (``seen``: :func:`plans_used`'s records, the flag first)."""
    launch.clear_caches()
    use_small_tiles(monkeypatch, launch, split=True)
    monkeypatch.setattr(launch, "_ROW_LANES", False)  # (lanes tiles are whole rows)
    splits = launches_used(monkeypatch, launch)
    seen.clear()
    check(make_case(name, (3, 64), seed=6), "triton")  # split in time: two passes
    assert not any(rec[0] for rec in seen) and len(splits[-1]) == 2, (seen, splits[-1])


@pytest.mark.parametrize("forms", ["installed", "triton-3.6"])
@pytest.mark.parametrize("name", ["td_lambda", "discounted_returns", "vtrace", "retrace"])
def test_exact_t(name, forms, monkeypatch, poisoned):
    """T as the constant BLOCK_T (and segment 0) on a single pass whose one chunk is exactly
    the row (``launch._EXACT_T``, :func:`launch._exact_t`): against the float64 reference,
    outputs poisoned, on rows of 1, 4, 16, 64, 128 and 256 steps (several rows a program, whole
    rows, every bootstrap form, Retrace in both algebras), batch-major or time-major. TD(lambda)'s
    kernel takes it on batch-major storage and the time-major lanes tiles; V-trace (rows of at
    most 128 steps, ``_EXACT_T_MAX_T``) and Retrace's sampled form on batch-major storage only;
    Retrace's action form (the same kernel) never, GAE as test_exact_t_more says. The
    time-major tiles, rows of 100 steps (a padded chunk) and split rows do not take it.
    ``triton-3.6``: the tile forms the H200's Triton takes (two-level group scan, lanes tiles
    from any number of programs, descending tiles of up to 8 steps, narrow time-major lanes
    tiles)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    if forms == "triton-3.6":
        monkeypatch.setattr(poisoned, "_GROUP_TILES", False)
        monkeypatch.setattr(poisoned, "_ROW_LANES", True)
        monkeypatch.setattr(poisoned, "_ROW_LANES_MIN_PROGRAMS", 0.0)
        monkeypatch.setattr(poisoned, "_TM_LANES_NARROW", True)
    td_kernel = name in ("td_lambda", "discounted_returns")
    # (the tile lengths of the form's time-major lanes tiles; narrow-only ones where the narrow
    # tiles are)
    lane_tiles = {bt for bt, t in poisoned._TM_LANES_TILES["td_lambda" if td_kernel else name].items()
                  if poisoned._TM_LANES_NARROW or not t.narrow_only}
    bound = {"vtrace": 128}.get(name, 1 << 30)

    def expect(time_major: bool, tm_lanes: bool, T: int) -> bool:
        return not time_major and (td_kernel or not tm_lanes) and T <= bound

    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (kw.get("EXACT_T"), pl.time_major, pl.tm_lanes))
    try:
        poisoned.clear_caches()
        for shape in ((33, 1), (20, 4), (9, 16), (5, 64), (3, 128), (2, 256)):
            for time_major in (False, True):
                check_short_row_forms(name, [shape], monkeypatch, poisoned, time_major=time_major)
                # (a time-major call of one step is read as batch-major rows)
                assert seen and all(flag is expect(tm, lanes, shape[1]) for flag, tm, lanes in seen), \
                    (shape, time_major, seen)
                assert time_major or not any(tm or lanes for _, tm, lanes in seen), seen
                seen.clear()
        check(make_case(name, (5, 100), seed=5), "triton")
        assert seen == [(False, False, False)], seen
        # the time-major lanes tiles (here from any number of programs): TD(lambda)'s kernel
        # takes it on whole rows
        with monkeypatch.context() as m:
            m.setattr(poisoned, "_TM_LANES_TILES", {
                form: {bt: t._replace(min_programs=0.0) for bt, t in tiles.items()}
                for form, tiles in poisoned._TM_LANES_TILES.items()})
            poisoned.clear_caches()
            for shape in ((70, 128), (40, 64), (33, 16)):
                seen.clear()
                check_short_row_forms(name, [shape], monkeypatch, poisoned, time_major=True)
                assert seen and all(flag is expect(tm, lanes, shape[1]) for flag, tm, lanes in seen), (shape, seen)
                assert all(lanes is (shape[1] in lane_tiles) for _, _, lanes in seen), (shape, seen)
            seen.clear()
            check(make_case(name, (40, 100), seed=8, time_major=True), "triton")
            assert seen == [(False, False, 128 in lane_tiles)], seen
        _split_never_exact(name, monkeypatch, poisoned, seen)
        seen.clear()
        check(make_case("gae", (5, 64), seed=7), "triton")
        assert seen == [("gae" in poisoned._EXACT_T_FORMS, False, False)], seen
        if name == "retrace":  # (its action form: the same kernel, never with it)
            poisoned.clear_caches()
            seen.clear()
            check(make_case("retrace_av", (5, 64), seed=9), "triton")
            assert seen == [(False, False, False)], seen
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("forms", ["shipped", "every"])
@pytest.mark.parametrize("name", ["gae", "traces", "prefix_sum"])
def test_exact_t_more(name, forms, monkeypatch, poisoned):
    """``EXACT_T`` in GAE's kernel and the forward kernel (traces, prefix sums): T as the
    constant BLOCK_T on one pass whose one chunk is exactly the row, where ``launch._exact_t``
    gives it (``shipped``: the form in ``_EXACT_T_FORMS`` for batch-major storage,
    ``_EXACT_T_TM_LANES`` for the time-major lanes tiles; ``every``: both sets widened to
    the form and no bound on the rows a program, so the kernel code runs whatever the planner
    ships; the forward kernel's batch-major tiles take it as shipped on at most
    ``_EXACT_T_MAX_ROWS`` rows a program): against the float64 reference, outputs poisoned,
    every bootstrap form, truncations and terminations, on whole rows of 16, 64 and 128 steps
    (several rows a program, a last program part empty), batch-major and on the time-major
    lanes tiles (from any number of programs, narrow ones as on Triton 3.6 too); rows of 100
    steps (a padded chunk) and split rows never take it."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    form = "gae" if name == "gae" else "forward"
    if forms == "every":
        monkeypatch.setattr(poisoned, "_EXACT_T_FORMS", poisoned._EXACT_T_FORMS | {form})
        monkeypatch.setattr(poisoned, "_EXACT_T_TM_LANES", poisoned._EXACT_T_TM_LANES | {form})
    monkeypatch.setattr(poisoned, "_TM_LANES_TILES", {
        f: {bt: t._replace(min_programs=0.0) for bt, t in tiles.items()}
        for f, tiles in poisoned._TM_LANES_TILES.items()})

    if forms == "every":
        monkeypatch.setattr(poisoned, "_EXACT_T_MAX_ROWS", {})

    def expect(tm_lanes: bool, rows: int) -> bool:
        if tm_lanes:
            return form in poisoned._EXACT_T_TM_LANES
        return form in poisoned._EXACT_T_FORMS and rows <= poisoned._EXACT_T_MAX_ROWS.get(form, rows)

    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (kw.get("EXACT_T"), pl.time_major, pl.tm_lanes,
                                                             pl.block_n))
    try:
        for narrow in (False, True):
            monkeypatch.setattr(poisoned, "_TM_LANES_NARROW", narrow)
            for shape in ((9, 16), (70, 64), (33, 128)):
                for time_major in (False, True):
                    if narrow and not time_major:
                        continue
                    poisoned.clear_caches()
                    seen.clear()
                    check_short_row_forms(name, [shape], monkeypatch, poisoned, time_major=time_major)
                    assert seen and all(not tm and flag is expect(lanes, rows) and lanes is time_major
                                        for flag, tm, lanes, rows in seen), (shape, time_major, seen)
        for time_major in (False, True):
            poisoned.clear_caches()
            seen.clear()
            check(make_case(name, (40, 100), seed=8, time_major=time_major), "triton")
            assert seen and not any(rec[0] for rec in seen), seen
        _split_never_exact(name, monkeypatch, poisoned, seen)
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("name", ["gae", "td_lambda", "discounted_returns", "vtrace", "retrace", "retrace_av"])
def test_rows_t(name, monkeypatch, poisoned):
    """``launch._ROWS_T`` (on): a backward kernel's one-chunk call whose every per-step
    tensor lies in contiguous rows of T steps sees each row stride as T itself (``ROWS_T``):
    against the float64 reference, outputs poisoned, every bootstrap form (per-step next or
    bootstrap values among them), truncations and terminations, several rows a program, whole
    rows; per-step gamma and lam tensors too. Not taken where a tensor has other strides:
    time-major storage, a per-row gamma broadcast along time (stride 0), rewards read through a
    view of time stride 2, Retrace's action values ([N, T, A]); nor on a split in time (the
    plans of ``launch._rows_t_plan``, which test_rows_t_plan checks; its tiles of
    ``_ROWS_T_SLOWER`` are let through here, so the kernels' code is checked on them)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    assert poisoned._ROWS_T
    monkeypatch.setattr(poisoned, "_ROWS_T_SLOWER", frozenset())  # (the kernels' code on every tile)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: kw.get("ROWS_T", False))
    try:
        poisoned.clear_caches()
        check_short_row_forms(name, [(37, 16), (5, 64), (3, 100)], monkeypatch, poisoned)
        assert seen and all(seen) is (name != "retrace_av"), seen
        seen.clear()
        check(make_case(name, (9, 40), seed=4, per_step=True), "triton")
        assert seen == [name != "retrace_av"], seen
        seen.clear()
        check_short_row_forms(name, [(70, 64)], monkeypatch, poisoned, time_major=True)
        assert seen and not any(seen), seen
        seen.clear()
        case = make_case(name, (6, 24), seed=5)
        case.kwargs["gamma"] = torch.full((6, 1), 0.95)  # (one value a row: time stride 0)
        check(case, "triton")
        assert seen == [False], seen
        seen.clear()
        check(_time_strided(make_case(name, (6, 24), seed=6)), "triton")
        assert seen == [False], seen
        use_small_tiles(monkeypatch, poisoned, split=True)
        monkeypatch.setattr(poisoned, "_ROW_LANES", False)
        poisoned.clear_caches()
        seen.clear()
        check(make_case(name, (3, 64), seed=7), "triton")  # split in time: two passes
        assert seen == [False], seen
    finally:
        poisoned.clear_caches()


def test_rows_t_plan():
    """The plans ``ROWS_T`` is taken on (``launch._rows_t_plan``, timed in session 43): one
    chunk a row in one pass; not a split in time or a chunk loop (Retrace 512 x 4096's
    [1, 1024] chunks read slower), not GAE on 16 warps (one program an SM where two fitted),
    not discounted returns' lazy cut on an [8, 128] tile, not the tiles of
    ``launch._ROWS_T_SLOWER``; the same plans without the lazy cut, GAE's on 8 warps, Retrace's
    and GAE's 8-step rows a thread, V-trace's [4, 64], are."""
    from rltriton.kernels import backward, launch

    ok = launch._rows_t_plan
    td, gae, retrace = backward.td_lambda_kernel, backward.gae_kernel, backward.retrace_kernel
    assert ok(td, 128, launch.Plan(8, 128, 2, 1, 128), {"LAZY_CUT": False})
    assert not ok(td, 128, launch.Plan(8, 128, 2, 1, 128), {"LAZY_CUT": True})
    assert ok(td, 64, launch.Plan(8, 64, 2, 1, 64), {"LAZY_CUT": True})
    assert ok(td, 100, launch.Plan(2, 128, 2, 1, 100), {})
    assert ok(gae, 2048, launch.Plan(1, 2048, 8, 1, 2048), {})
    assert not ok(gae, 4096, launch.Plan(1, 4096, 16, 1, 4096), {})
    assert ok(td, 4096, launch.Plan(1, 4096, 16, 1, 4096), {})
    assert not ok(retrace, 4096, launch.Plan(1, 1024, 8, 1, 4096), {})
    assert not ok(retrace, 4096, launch.Plan(1, 1024, 8, 4, 1024), {})
    vtrace = backward.vtrace_kernel
    assert not ok(vtrace, 128, launch.Plan(2, 128, 2, 1, 128), {})
    assert ok(vtrace, 64, launch.Plan(4, 64, 2, 1, 64), {})
    assert not ok(vtrace, 8, launch.Plan(32, 8, 1, 1, 8, lanes=True), {})
    assert not ok(td, 8, launch.Plan(32, 8, 1, 1, 8, lanes=True), {})
    assert ok(retrace, 8, launch.Plan(32, 8, 1, 1, 8, lanes=True), {})
    assert ok(gae, 8, launch.Plan(32, 8, 1, 1, 8, lanes=True), {})


INTERIOR_NAMES = ["gae", "td_lambda", "discounted_returns", "vtrace", "retrace", "retrace_av", "traces", "prefix_sum"]


def _time_strided(case):
    """``case`` with its first tensor (rewards, or x) read through a view of time stride 2,
    NaN between the steps: an interior segment's pointer moves by its first step times the
    time stride."""
    x = case.args[0]
    wide = torch.full((*x.shape[:-1], 2 * x.shape[-1]), float("nan"), dtype=x.dtype)
    wide[..., ::2] = x
    case.args = (wide[..., ::2], *case.args[1:])
    return case


def _one_row_segments(monkeypatch, launch, lookback: bool = False, coop: bool = False) -> None:
    """Small tiles (:func:`use_small_tiles`) split in one-chunk segments of 32 steps, one
    row a program (1 warp): the tiles of the GPU's long split rows (``lookback``, ``coop``:
    in the single pass of that kind)."""
    use_small_tiles(monkeypatch, launch, split=True, lookback=lookback, coop=coop)
    monkeypatch.setattr(launch, "_MAX_BLOCK_T", 32)
    monkeypatch.setattr(launch, "_TILE", 32)
    monkeypatch.setattr(launch, "_SEG_STEPS", 32)
    monkeypatch.setattr(launch, "_MAX_SEGMENTS", 8)


# (name, launch._INTERIOR_LAZY on): TD(lambda)'s kernel (discounted returns too) in both forms
LAZY_FORMS = frozenset({"td_lambda", "discounted_returns"})
INTERIOR_CASES = [(name, False) for name in INTERIOR_NAMES] + [("td_lambda", True), ("discounted_returns", True)]


@pytest.mark.parametrize("name,lazy", INTERIOR_CASES)
@pytest.mark.parametrize("bootstrap", BOOTSTRAP_FORMS)
def test_interior(name, lazy, bootstrap, monkeypatch, poisoned):
    """launch._INTERIOR: in a two-pass split of one-chunk segments, one row a program, the
    segments wholly before T - 1 (the forward kernel: after the first, wholly before T) run
    their chunk with no test against T, from pointers moved to the segment's start. Against
    the float64 reference: 32-step segments on one warp (the smallest one-row tile: a
    thread needs an element), the last segment cut by T (63, 100), whole (128: its last
    step is T - 1), of one step (97); every flag, each bootstrap form, per-step gamma and lam (their
    pointers move too), float64, flags stored as floats, a time stride of 2, trailing
    features (the forward kernel's lanes), both prefix-sum boundaries, Retrace's lagged and
    direct kernel forms; and the passes took INTERIOR (``lazy``: and INTERIOR_LAZY, the
    interior chunks of TD(lambda)'s kernel without the cut unless something non-finite
    comes out, launch._INTERIOR_LAZY)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    _one_row_segments(monkeypatch, poisoned)
    monkeypatch.setattr(poisoned, "_INTERIOR_LAZY", LAZY_FORMS if lazy else frozenset())
    used = launches_used(monkeypatch, poisoned)
    poisoned.clear_caches()
    try:
        pl = poisoned.plan(3, 100)
        assert pl.segments == 4 and pl.seg_len == pl.block_t == 32 and pl.block_n == 1
        cases = [make_case(name, (3, 63), bootstrap=bootstrap, seed=61),
                 make_case(name, (2, 128), bootstrap=bootstrap, seed=62),
                 make_case(name, (2, 97), bootstrap=bootstrap, flags="terminated", seed=63),
                 make_case(name, (2, 100), bootstrap=bootstrap, flags="truncated", per_step=True, seed=64)]
        if bootstrap == "last_value":  # (the storage variants once: the bootstrap forms are above)
            cases += [make_case(name, (2, 63), bootstrap=bootstrap, dtype=torch.float64, seed=65),
                      make_case(name, (2, 63), bootstrap=bootstrap, flag_dtype=torch.float32, seed=66),
                      _time_strided(make_case(name, (2, 63), bootstrap=bootstrap, seed=67))]
        if name in ("traces", "prefix_sum"):
            cases.append(make_case(name, (2, 63), bootstrap=bootstrap, n_features=(3,), seed=68))
        # Retrace in its other kernel form too (launch._RETRACE_LAGGED: lagged for the action
        # form, direct for the sampled one by default)
        forms = (poisoned._RETRACE_LAGGED, frozenset({"actions", "sampled"}) - poisoned._RETRACE_LAGGED) \
            if name.startswith("retrace") else (poisoned._RETRACE_LAGGED,)
        for lagged in forms:
            monkeypatch.setattr(poisoned, "_RETRACE_LAGGED", lagged)
            poisoned.clear_caches()
            for case in cases:
                used.clear()
                check(case, "triton")
                passes = split_passes(used)
                assert len(passes) == 2 and all(kw.get("INTERIOR") for kw in passes), (case.T, passes)
                assert all(bool(kw.get("INTERIOR_LAZY")) == lazy for kw in passes), (case.T, passes)
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("name,lazy", INTERIOR_CASES)
@pytest.mark.parametrize("bad", [float("nan"), float("inf")], ids=["nan", "inf"])
def test_interior_non_finite(name, lazy, bad, monkeypatch, poisoned):
    """A NaN or inf input inside an interior segment (after an episode end, and late in the
    row) reaches the outputs as the general chunk lets it (TD(lambda)'s cut keeps it out of
    the steps before the end): launch._INTERIOR on and off give the same non-finite
    elements, the others within float32 rounding (``lazy``: launch._INTERIOR_LAZY on, whose
    uncut chunks then go again with the cut)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    _one_row_segments(monkeypatch, poisoned)
    monkeypatch.setattr(poisoned, "_INTERIOR_LAZY", LAZY_FORMS if lazy else frozenset())
    outs = {}
    for on in (True, False):
        monkeypatch.setattr(poisoned, "_INTERIOR", on)
        poisoned.clear_caches()
        case = make_case(name, (4, 120), flags="both", seed=69)
        x = case.args[0]
        flags = case.kwargs.get("terminated", case.kwargs.get("dones"))
        if flags is None:  # (prefix sums: the flags are the second argument)
            flags = case.args[1]
        for row in range(4):
            ends = flags[row].nonzero().flatten().tolist()
            for t in [e + 1 for e in ends if 33 <= e + 1 < 90][:1] + [70 + row]:
                x[row, t] = bad
        outs[on] = [o.clone() for o in case(backend="triton")]
    poisoned.clear_caches()
    assert_same_non_finite(outs[True], outs[False])


@pytest.mark.parametrize("name", INTERIOR_NAMES)
@pytest.mark.parametrize("mode", ["lookback", "coop"])
def test_interior_single_pass(name, mode, monkeypatch, poisoned):
    """launch._INTERIOR_SINGLE_PASS (off by default): the interior chunks in the single
    passes of a split, the decoupled look-back (PHASE 3) and the cooperative pass (here its
    interpreter form, PHASE 5 launched twice), against float64: a last segment cut by T,
    whole, of one step, each bootstrap form once, per-step gamma and lam; the launches took
    INTERIOR."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    _one_row_segments(monkeypatch, poisoned, lookback=mode == "lookback", coop=mode == "coop")
    monkeypatch.setattr(poisoned, "_INTERIOR_SINGLE_PASS", True)
    used = launches_used(monkeypatch, poisoned)
    poisoned.clear_caches()
    try:
        cases = [make_case(name, (3, 100), bootstrap=BOOTSTRAP_FORMS[0], seed=71),
                 make_case(name, (2, 128), bootstrap=BOOTSTRAP_FORMS[1], seed=72),
                 make_case(name, (2, 97), bootstrap=BOOTSTRAP_FORMS[2], flags="terminated", seed=73),
                 make_case(name, (2, 63), bootstrap=BOOTSTRAP_FORMS[3], flags="truncated", per_step=True, seed=74)]
        for case in cases:
            used.clear()
            check(case, "triton")
            launched = [kw for launches in used for _k, _g, _a, kw in launches]
            assert launched and all(kw.get("PHASE") in (3, 5) and kw.get("INTERIOR") for kw in launched), \
                (case.T, launched)
    finally:
        poisoned.clear_caches()
