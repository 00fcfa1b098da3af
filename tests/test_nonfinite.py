"""NaN and inf inputs pass through "as arithmetic gives them" (SPEC.md section 4): every
backend puts NaN and inf where the float64 reference (section 3's arithmetic, step by step)
puts them, and agrees with it elsewhere.

A reward (or ``x``) is NaN at one step and +inf at another; for V-trace and Retrace a
log-ratio (the action form: a behaviour log-probability) is NaN too, so the clipped ratios
min(bar, NaN) must stay NaN (``tl.minimum`` alone drops it: ``scan.clip_max``). Flags of both
kinds end episodes inside the rows, so a non-finite value must stop where the recursion is
cut by the formula and leak where the formula multiplies by ``1 - done``.
"""

from __future__ import annotations

import pytest
import torch

from rltriton.kernels import launch
from tests.conftest import INTERPRET, plans_used, use_small_tiles
from tests.rollouts import ESTIMATORS, Case, make_case, tm_lanes_tiles, to_time_major, tolerance

# SPEC.md writes TD(lambda)'s and discounted returns' cut as a choice (X_t = nv_t at done_t),
# so a non-finite G_{t+1} does not reach G_t there: their scans cut where b = 0 (scan.times,
# torch_backend.affine_scan's ``cut``) instead of computing 0 * NaN = NaN
# Retrace's action form runs LAGGED by default (launch._RETRACE_LAGGED): D_t from
# H_{t+1} = v_{t+1} + c_{t+1} D_{t+1} with the episode ends as selects, a different algebra
# from section 3's, so its NaN/inf pattern differs; the direct form is tested here
DIRECT_ONLY = ("retrace_av",)


def _poisoned_inputs(name: str, shape: tuple[int, int] = (4, 23), time_major: bool = False) -> Case:
    case = make_case(name, shape, seed=41)
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in case.args]
    x = args[0]
    x[0, 7] = float("nan")
    x[1, 3] = float("inf")
    if name in ("vtrace", "retrace"):
        args[-1][2, 10] = float("nan")  # a log-ratio
    if name == "retrace_av":
        args[4][2, 10] = float("nan")  # a behaviour log-probability
    case = Case(case.name, tuple(args), case.kwargs, case.T)
    return to_time_major(case) if time_major else case


def _same_nonfinite(out: torch.Tensor, ref: torch.Tensor, case: Case, what: str) -> None:
    out, ref = out.double().cpu(), ref.double().cpu()
    for kind, f in (("NaN", torch.isnan), ("+inf", torch.isposinf), ("-inf", torch.isneginf)):
        diff = (f(out) != f(ref)).nonzero().tolist()
        assert not diff, f"{what}: {kind} at {diff[:5]} in one of output / reference only"
    fin = torch.isfinite(ref)
    err = float((out[fin] - ref[fin]).abs().max()) if fin.any() else 0.0
    assert err <= tolerance(case.T, ref[fin], torch.float32), f"{what}: max abs error {err:.3g}"


# Triton settings of each mode (tests/test_backends.py's backend fixture has the same):
# small tiles split in two passes, or one pass; the look-back; chunks in time order; the
# two-level group scan; rows laid end to end (default tiles, 16 steps), with the scan over
# the groups segmented at the rows' starts (the default) or not ("flat"); time-major tiles;
# the carry-in as a scan of the summaries (the sum of products is the default); time-major
# tiles split, in one pass, and with TD(lambda)'s cut in every scan instead of lazily
# (launch._TD_LAZY_CUT: time-major plans scan without it and run again with it where a
# non-finite value came out); short rows across lanes (GROUP_TILES = 4); time-major rows
# along the lanes (GROUP_TILES = 5)
MODES = {
    "single": dict(split=False),
    "split": dict(split=True),
    "lookback": dict(split=True, lookback=True),
    "time-order": dict(split=True, _GROUP_TILES=False, _GROUP_SCAN=False),
    "group-scan": dict(split=True, _GROUP_TILES=False, _GROUP_SCAN=True, _GROUP_SCAN_MIN_T=4),
    "flat": dict(small=False, _GROUP_TILES=False, _GROUP_SCAN=True, _GROUP_SCAN_FLAT=True, _FLAT_SEGMENTED=False),
    "flat-segmented": dict(small=False, _GROUP_TILES=False, _GROUP_SCAN=True, _GROUP_SCAN_FLAT=True,
                           _FLAT_SEGMENTED=True),
    "time-major": dict(split=True),
    "time-major-single": dict(split=False),
    "time-major-eager": dict(split=True, _TD_LAZY_CUT=False),
    "carry-scan": dict(split=True, _CARRY_PRODUCTS=False),
    # the initial carry folded into PHASE 2's sum of products (launch._CARRY_FOLD_INIT)
    "carry-fold": dict(split=True, _CARRY_FOLD_INIT=launch._CARRY_FOLD_FORMS),
    # rows across lanes (launch._ROW_LANES) for every form, at 40 steps: two columns of groups
    # (_ROW_LANES_WHOLE lifted: V-trace's 64-step tiles on rows of 40 steps too)
    "lanes": dict(small=False, _ROW_LANES=True, _ROW_LANES_MIN_PROGRAMS=0, _ROW_LANES_WHOLE={},
                  _ROW_LANES_MAX_T=dict.fromkeys(("gae", "td_lambda", "vtrace", "retrace", "retrace_actions"), 64)),
    # the same with the tile's other axis order (scan.LANES_LAST: Triton 3.6's and 3.8's)
    "lanes-other-order": dict(small=False, _ROW_LANES=True, _ROW_LANES_MIN_PROGRAMS=0, _ROW_LANES_WHOLE={},
                              _ROW_LANES_MAX_T=dict.fromkeys(("gae", "td_lambda", "vtrace", "retrace",
                                                              "retrace_actions"), 64), other_order=True),
    # time-major rows along the lanes, time along the warps (launch._TM_LANES, GROUP_TILES = 5)
    # for every form, at 40 steps: 8 steps a thread on 8 warps, the tile padded
    "time-major-lanes": dict(small=False, _TM_LANES=True,
                             _TM_LANES_TILES=tm_lanes_tiles(launch, (8, 16, 32, 64))),
}
# rows laid end to end (launch._GROUP_SCAN_FLAT: Triton < 3.7, tiles of 16-64 steps, rows of 9-64): a row's last
# step ignores the row scanned before it by a 0 coefficient, so the estimators whose episode
# ends multiply (per SPEC) let a NaN of one row reach the next row's outputs unless the scan
# over the groups is segmented at the rows' starts (launch._FLAT_SEGMENTED, the default since
# session 12, "flat-segmented"); "flat" forces it off and is expected to fail for these
FLAT_LEAK = ("gae", "vtrace", "retrace", "retrace_av")


def _params():
    out = []
    for name in ESTIMATORS:
        for mode in ["torch", *MODES]:
            marks = ()
            if mode == "flat" and name in FLAT_LEAK:
                marks = pytest.mark.xfail(strict=True, reason="unsegmented flat rows: a NaN crosses rows")
            out.append(pytest.param(name, mode, marks=marks, id=f"{name}-{mode}"))
    return out


@pytest.mark.parametrize("name, mode", _params())
def test_nonfinite_inputs_pass_through(name, mode, monkeypatch, poisoned):
    if mode != "torch" and not INTERPRET:
        pytest.skip("Triton on CPU tensors needs TRITON_INTERPRET=1")
    if name in DIRECT_ONLY:
        monkeypatch.setattr(poisoned, "_RETRACE_LAGGED", frozenset())
    shape = (64, 16) if mode.startswith("flat") else (20, 40) if "lanes" in mode else (4, 23)
    case = _poisoned_inputs(name, shape, time_major=mode.startswith("time-major"))
    ref = _poisoned_inputs(name, shape)(backend="reference")
    assert any(torch.isnan(r).any() for r in ref), "the case must produce a NaN somewhere"
    backend = "torch"
    if mode != "torch":
        backend = "triton"
        settings = dict(MODES[mode])
        if settings.pop("other_order", False):
            import triton.language as tl

            from rltriton.kernels import scan

            monkeypatch.setattr(scan, "LANES_LAST", tl.constexpr(not scan.LANES_LAST))
        if settings.pop("small", True):
            use_small_tiles(monkeypatch, poisoned, split=settings.pop("split", False),
                            lookback=settings.pop("lookback", False))
        for key, value in settings.items():
            monkeypatch.setattr(poisoned, key, value)
        poisoned.clear_caches()
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: kw.get("GROUP_TILES", 5 if pl.tm_lanes else None))
    try:
        out = case(backend=backend)
    finally:
        poisoned.clear_caches()
    if mode == "time-major-lanes":
        assert seen == [5], seen
    elif mode.startswith("lanes") and name not in ("traces", "prefix_sum"):  # (forward estimators: their own tiles)
        assert seen == [4], seen
    if mode.startswith("time-major"):
        out = tuple(o.movedim(0, -1) for o in out)
    for i, (o, r) in enumerate(zip(out, ref)):
        _same_nonfinite(o, r, case, f"{name}[{i}] {mode}")


@pytest.mark.xfail(strict=True, reason="known deviation: the lagged action form's algebra (DIRECT_ONLY above)")
def test_nonfinite_retrace_action_form_lagged(poisoned):
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    case = _poisoned_inputs("retrace_av")
    ref = case(backend="reference")
    for i, (o, r) in enumerate(zip(case(backend="triton"), ref)):
        _same_nonfinite(o, r, case, f"retrace_av[{i}] lagged")


@pytest.mark.parametrize("name", ["td_lambda", "discounted_returns"])
def test_lazy_cut_on_time_major_plans_only(name, monkeypatch, poisoned):
    """TD(lambda)'s kernel scans without the cut and checks its output (``LAZY_CUT``) on
    time-major plans only (launch._TD_LAZY_CUT: batch-major ones were slower so on the
    H200), both passes of a split; the results, with a NaN and an inf in the rewards, match
    the reference's NaN and inf positions either way."""
    if not INTERPRET:
        pytest.skip("Triton on CPU tensors needs TRITON_INTERPRET=1")
    use_small_tiles(monkeypatch, poisoned, split=True)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.time_major, kw.get("LAZY_CUT")))
    ref = _poisoned_inputs(name, (4, 23))(backend="reference")
    for time_major in (False, True):
        seen.clear()
        case = _poisoned_inputs(name, (4, 23), time_major=time_major)
        out = case(backend="triton")
        if time_major:
            out = tuple(o.movedim(0, -1) for o in out)
        assert seen == [(time_major, time_major)], seen
        for i, (o, r) in enumerate(zip(out, ref)):
            _same_nonfinite(o, r, case, f"{name}[{i}] time_major={time_major}")


@pytest.mark.parametrize("name", ["td_lambda", "discounted_returns"])
@pytest.mark.parametrize("tiles", ["whole-row", "chunk-loop", "split"])
def test_lazy_cut_batch_major_single_pass(name, tiles, monkeypatch, poisoned):
    """launch._TD_LAZY_CUT_BATCH forced on (prepared, off by default): batch-major single
    passes, a whole row in one chunk or a chunk loop, scan without the cut and run again with
    it where something came out non-finite; a split keeps the cut in every scan. With NaN
    and inf rewards (one of them in a later chunk than the row's first) the NaN and inf
    positions are the reference's and the rest within rounding; finite inputs match the
    float64 reference."""
    if not INTERPRET:
        pytest.skip("Triton on CPU tensors needs TRITON_INTERPRET=1")
    monkeypatch.setattr(poisoned, "_TD_LAZY_CUT_BATCH", frozenset({"td_lambda", "discounted_returns"}))
    shape = (3, 300)
    if tiles != "whole-row":
        use_small_tiles(monkeypatch, poisoned, split=tiles == "split")
        shape = (4, 63)
    poisoned.clear_caches()  # (replays recorded under other settings)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.segments > 1, pl.chunk_loop, kw.get("LAZY_CUT")))
    bad = _poisoned_inputs(name, shape)
    bad.args[0][2, shape[1] - 4] = float("nan")
    want = {"whole-row": (False, False, True), "chunk-loop": (False, True, True), "split": (True, False, False)}
    try:
        for case in (bad, make_case(name, shape, seed=43)):
            seen.clear()
            poisoned.clear_caches()  # (a replay of the first call would launch without a plan)
            out = case(backend="triton")
            assert seen == [want[tiles]], seen
            for i, (o, r) in enumerate(zip(out, case(backend="reference"))):
                _same_nonfinite(o, r, case, f"{name}[{i}] {tiles}")
    finally:
        poisoned.clear_caches()


@pytest.mark.parametrize("lv", ["finite", "nan", "+inf", "-inf"])
def test_lazy_cut_wide_lanes(lv, monkeypatch, poisoned):
    """Discounted returns on the 128-step lanes tiles (launch._TD_WIDE_LANES, here on any
    number of programs) scan without the cut from the edge carry (launch._TD_LAZY_CUT_WIDE:
    LAZY_CUT) and run again with it where something came out non-finite; TD(lambda) keeps the
    cut there. A NaN and an inf reward inside rows, a NaN at a row's last step, and a last_value
    finite or not on every other row, with that row's last step terminated or not: the NaN and
    inf positions are the reference's and the rest within rounding, for both estimators."""
    if not INTERPRET:
        pytest.skip("Triton on CPU tensors needs TRITON_INTERPRET=1")
    monkeypatch.setattr(poisoned, "_ROW_LANES", True)
    monkeypatch.setattr(poisoned, "_TD_WIDE_LANES_MIN_PROGRAMS", 0.0)
    monkeypatch.setattr(poisoned, "_DR_WIDE_LANES_MIN_PROGRAMS", 0.0)
    poisoned.clear_caches()
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.lanes, pl.block_t, kw.get("LAZY_CUT")))
    value = {"finite": 0.7, "nan": float("nan"), "+inf": float("inf"), "-inf": float("-inf")}[lv]
    try:
        for name in ("discounted_returns", "td_lambda"):
            base = make_case(name, (11, 128), flags="terminated", seed=7)
            args = [a.clone() if isinstance(a, torch.Tensor) else a for a in base.args]
            r = args[0]
            r[0, 7] = float("nan")
            r[1, 100] = float("inf")
            r[3, 127] = float("nan")
            kw = dict(base.kwargs)
            term = kw["terminated"].clone()
            term[0::4, -1] = True  # rows 0, 4, 8: a non-finite last_value stops at the termination
            term[2::4, -1] = False
            last = kw["last_value"].clone()
            last[::2] = value
            case = Case(base.name, tuple(args), {**kw, "terminated": term, "last_value": last}, base.T)
            ref = case(backend="reference")
            if lv != "finite":
                assert not torch.isfinite(ref[0][2]).all(), "a non-finite last_value must reach the outputs"
            seen.clear()
            out = case(backend="triton")
            assert seen == [(True, 128, name == "discounted_returns")], (name, seen)
            for i, (o, want) in enumerate(zip(out, ref)):
                _same_nonfinite(o, want, case, f"{name}[{i}] last_value {lv}")
    finally:
        poisoned.clear_caches()


# launch._EDGE_CARRY: discounted returns with a last_value (or none) and no truncations
# start their scan from a carry holding the window-edge value. The modes where it applies:
# one pass of default tiles, a chunk loop of small tiles, rows across lanes, and time-major
# tiles (lazy cut: the exact pass without the edge carry where something non-finite came
# out) and time-major lanes tiles
EDGE_MODES = {
    "single": dict(),
    "chunks": dict(small=True),
    "lanes": MODES["lanes"],
    "time-major": dict(small=True),
    "time-major-lanes": MODES["time-major-lanes"],
}


def _edge_mode(mode: str, monkeypatch, launch) -> None:
    """The launcher settings of ``EDGE_MODES[mode]`` (skips without the interpreter)."""
    if not INTERPRET:
        pytest.skip("Triton on CPU tensors needs TRITON_INTERPRET=1")
    settings = dict(EDGE_MODES[mode])
    if settings.pop("small", False):
        use_small_tiles(monkeypatch, launch, split=False)
    for key, value in settings.items():
        monkeypatch.setattr(launch, key, value)


# (last_value of every other row, whether the last step of every row is terminated, gamma):
# with the cut, a terminated last step gives the reward alone, where SPEC's arithmetic gives
# r + g * 0 * last_value, NaN for a non-finite last_value; such programs take the per-step
# next-state values instead. (gamma 0 with a non-finite value is left out: every scan cuts
# where its coefficient is 0, gamma's zeros too, where the reference multiplies 0 * NaN)
EDGE_CASES = [
    ("finite", True, 0.97), ("finite", False, 0.97), ("nan", True, 0.97), ("+inf", False, 0.97),
    ("-inf", True, 0.97), ("finite", False, 0.0), ("finite", True, 0.0),
]


@pytest.mark.parametrize("edge", [True, False], ids=["edge", "per-step"])
@pytest.mark.parametrize("mode", list(EDGE_MODES))
@pytest.mark.parametrize("lv, last_term, gamma", EDGE_CASES, ids=[f"{a}-{'term' if b else 'open'}-g{c}"
                                                                   for a, b, c in EDGE_CASES])
def test_discounted_returns_edge_carry(lv, last_term, gamma, mode, edge, monkeypatch, poisoned):
    """Discounted returns from the edge carry (``EDGE_CARRY``) and from per-step next-state
    values agree with the reference, NaN and inf included, for finite and non-finite
    last_values with the last step terminated or not and gamma 0, on every tile form that
    can take it (``launch._EDGE_CARRY_ANY``); the plans take the edge carry exactly where
    ``launch._EDGE_CARRY`` is on (and never with truncations or bootstrap_values)."""
    _edge_mode(mode, monkeypatch, poisoned)
    monkeypatch.setattr(poisoned, "_EDGE_CARRY", edge)
    monkeypatch.setattr(poisoned, "_EDGE_CARRY_ANY", True)
    poisoned.clear_caches()
    time_major = mode.startswith("time-major")
    shape = (20, 40) if "lanes" in mode else (6, 23)
    base = make_case("discounted_returns", shape, flags="terminated", gamma=gamma, seed=5)
    r, kw = base.args[0].clone(), dict(base.kwargs)
    term = kw["terminated"].clone()
    term[:, -1] = last_term
    value = {"finite": 0.7, "nan": float("nan"), "+inf": float("inf"), "-inf": float("-inf")}[lv]
    last = kw["last_value"].clone()
    last[::2] = value
    if gamma:
        r[1, 5] = float("nan")  # and a NaN reward inside a row, cut at the episode's start
    case = Case(base.name, (r,), {**kw, "terminated": term, "last_value": last}, base.T)
    ref = case(backend="reference")
    if lv != "finite":
        assert not torch.isfinite(ref[0][0]).all(), "a non-finite last_value must reach the outputs"
    run = to_time_major(case) if time_major else case
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: kw.get("EDGE_CARRY"))
    try:
        out = run(backend="triton")
        # truncations and per-step bootstrap values never take it
        both = make_case("discounted_returns", shape, flags="both", seed=5)
        both(backend="triton")
        per_step = make_case("discounted_returns", shape, flags="terminated", bootstrap="bootstrap_values", seed=5)
        per_step(backend="triton")
    finally:
        poisoned.clear_caches()
    assert seen == [edge, False, False], seen
    if time_major:
        out = tuple(o.movedim(0, -1) for o in out)
    _same_nonfinite(out[0], ref[0], case, f"{lv} last_term={last_term} gamma={gamma} {mode} edge={edge}")


@pytest.mark.parametrize("mode, T", [("single", 23), ("chunks", 23), ("lanes", 40), ("time-major", 23),
                                     ("time-major-lanes", 40), ("time-major-lanes", 100)])
def test_edge_carry_default_tiles(mode, T, monkeypatch, poisoned):
    """By default only time-major lanes tiles of at least ``_EDGE_CARRY_TM_LANES_MIN_T``
    steps take the edge carry (the tiles it was faster on, launch._EDGE_CARRY): here the
    128-step tile of 100-step rows, not the 64-step one of 40-step rows."""
    _edge_mode(mode, monkeypatch, poisoned)
    if mode == "time-major-lanes":
        monkeypatch.setattr(poisoned, "_TM_LANES_TILES", tm_lanes_tiles(poisoned, (64, 128)))
    poisoned.clear_caches()
    case = make_case("discounted_returns", (20, T) if "lanes" in mode else (6, T), flags="terminated", seed=5)
    seen = plans_used(monkeypatch, poisoned, lambda pl, kw: (pl.tm_lanes, pl.block_t, kw.get("EDGE_CARRY")))
    try:
        out = (to_time_major(case) if mode.startswith("time-major") else case)(backend="triton")
    finally:
        poisoned.clear_caches()
    [(tm_lanes, block_t, edge)] = seen
    assert tm_lanes == (mode == "time-major-lanes"), seen
    assert edge == (tm_lanes and block_t >= poisoned._EDGE_CARRY_TM_LANES_MIN_T), seen
    assert edge == (T == 100), seen
    if mode.startswith("time-major"):
        out = tuple(o.movedim(0, -1) for o in out)
    _same_nonfinite(out[0], case(backend="reference")[0], case, f"default tiles {mode}")
