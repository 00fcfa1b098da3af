"""The plans that ``tests/test_gpu.py`` expects, checked on the CPU, so that a planner change
which moves a GPU test off the tiles it forces fails in CI and not sessions later on the GPU.

Each test here is one of ``test_gpu.py``'s, with the same parameters, run "dry": the H200's
132 SMs and Triton 3.6's settings (the device image's version: no reshaped group tiles,
lanes tiles for short rows, narrow time-major lanes tiles), the launcher's whole host path
(validation, plan, kernel constexprs) and no kernel launched; the references are not
computed, nothing is compared and the inputs are constants, not random draws
(``rollouts.RANDOM_VALUES``). What is left of each test is its assertions on the plans
and constexprs the launcher chose. A repeated call with the same signature is skipped, as
the GPU's replay of it makes no new plan. The outputs themselves are checked on the H200
(``pytest -m gpu``), and the interpreter tests check the same kernels at small shapes.
The last test checks the premise of ``tests/test_native.py``'s time-split test the same way.
"""

from __future__ import annotations

import functools

import pytest
import torch

from tests import rollouts
from tests import test_gpu as G
from tests import test_native as N
from tests.conftest import plans_used
from tests.rollouts import Case, make_case, to_time_major

H200_SMS = 132
# Triton 3.6's values of the settings that launch.py derives from the installed version
TRITON_36 = {"_GROUP_TILES": False, "_ROW_LANES": True, "_TM_LANES_NARROW": True}


def _signature(case: Case) -> tuple:
    """What a replay is keyed by, near enough: the estimator, the arguments' shapes,
    strides and dtypes (values otherwise)."""
    def sig(x):
        return (tuple(x.shape), x.stride(), x.dtype) if isinstance(x, torch.Tensor) else repr(x)

    return (case.name, tuple(sig(a) for a in case.args), tuple(sorted((k, sig(v)) for k, v in case.kwargs.items())))


class _NoKernel:
    """Stands in for a kernel in a launch spec: ``kernel[grid](*args, **kwargs)`` does nothing."""

    def __getitem__(self, grid):
        return lambda *args, **kwargs: None


_NO_KERNEL = _NoKernel()


@pytest.fixture(autouse=True)
def dry(monkeypatch):
    """The launcher as on the H200 with Triton 3.6, minus the launches."""
    from rltriton.kernels import launch

    for key, value in TRITON_36.items():
        monkeypatch.setattr(launch, key, value)
    monkeypatch.setattr(launch, "_sm_count", lambda index: H200_SMS)
    # the Triton backend takes CPU tensors only under the interpreter; nothing is launched, so
    # on a CUDA machine (no TRITON_INTERPRET) this lets the host path run all the same
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)

    specs = launch.launch_specs

    def without_kernels(*args, **kwargs):
        # launch_specs' launches with a kernel that does nothing: launch._launch runs as it
        # is, and conftest.plans_used (which wraps this) records the plans and constexprs
        out, scratch = specs(*args, **kwargs)
        return [(_NO_KERNEL, grid, a, kw) for _, grid, a, kw in out], scratch

    monkeypatch.setattr(launch, "launch_specs", without_kernels)
    seen = set()

    def run_once(case: Case) -> None:
        sig = _signature(case)
        if sig not in seen:
            seen.add(sig)
            case(backend="triton")

    monkeypatch.setattr(G, "on_gpu", lambda case: case)
    monkeypatch.setattr(G, "as_f64", lambda case: lambda **kwargs: ())
    monkeypatch.setattr(G, "reference", lambda case: ())
    # constant inputs: nothing here reads a value (the launcher's host path never does)
    monkeypatch.setattr(rollouts, "RANDOM_VALUES", False)
    monkeypatch.setattr(G, "_compare", lambda case, ref, what: run_once(case))
    monkeypatch.setattr(G, "_compare_time_major", lambda case, ref, what: run_once(to_time_major(case)))
    monkeypatch.setattr(G, "_compare_nonfinite",
                        lambda case, ref, time_major, what: run_once(to_time_major(case) if time_major else case))
    launch.clear_caches()
    yield
    launch.clear_caches()  # (before monkeypatch restores the settings: no plan of these stays cached)


def _dry(test):
    """``test`` (a test of test_gpu.py) with its parameters, collected here."""
    @functools.wraps(test)
    def run(*args, **kwargs):
        return test(*args, **kwargs)

    run.pytestmark = [m for m in getattr(test, "pytestmark", []) if m.name == "parametrize"]
    return run


# every test of test_gpu.py that asserts a plan or a constexpr and needs no GPU to choose it
# (the cooperative split asks the compiled kernel's occupancy; replays, graphs and the
# vector loads' misaligned replay are GPU-only)
test_time_major_tiles = _dry(G.test_time_major_tiles_on_gpu)
test_tm_deep_and_wide = _dry(G.test_tm_deep_and_wide)
test_segment_map_forward_long_rows = _dry(G.test_segment_map_forward_long_rows)
test_group_scan = _dry(G.test_group_scan)
test_group_scan_flat = _dry(G.test_group_scan_flat)
test_lane_tiles = _dry(G.test_lane_tiles)
test_lane_tiles_tiny = _dry(G.test_lane_tiles_tiny)
test_tm_lanes_tiles = _dry(G.test_tm_lanes_tiles)
test_row_div = _dry(G.test_row_div)
test_tiny_tiles = _dry(G.test_tiny_tiles)
test_desc_tiles = _dry(G.test_desc_tiles)
test_tm_div = _dry(G.test_tm_div)
test_loop_registers = _dry(G.test_loop_registers)
test_whole_row_registers = _dry(G.test_whole_row_registers)
test_whole_row_plans = _dry(G.test_whole_row_plans)
test_whole_row_4k_warps = _dry(G.test_whole_row_4k_warps)
test_tm_lanes_registers = _dry(G.test_tm_lanes_registers)
test_lanes_registers = _dry(G.test_lanes_registers)
test_one_chunk_rows = _dry(G.test_one_chunk_rows)
test_loop_tiles = _dry(G.test_loop_tiles)
test_edge_carry = _dry(G.test_edge_carry)
test_dr_tm_lanes_any = _dry(G.test_dr_tm_lanes_any)
test_tm_lanes_narrow_128 = _dry(G.test_tm_lanes_narrow_128)
test_tm_lanes_lagged_128 = _dry(G.test_tm_lanes_lagged_128)
test_tm_small_tiles = _dry(G.test_tm_small_tiles)
test_tm_small_long_tiles = _dry(G.test_tm_small_long_tiles)
test_tm_small_split = _dry(G.test_tm_small_split)
test_tm_long_tiles = _dry(G.test_tm_long_tiles)
test_tm_sub_tiles = _dry(G.test_tm_sub_tiles)
test_dr_short_tiles = _dry(G.test_dr_short_tiles)
test_td_wide_lanes = _dry(G.test_td_wide_lanes)
test_exact_t = _dry(G.test_exact_t)
test_exact_t_more = _dry(G.test_exact_t_more)
test_lookback_split = _dry(G.test_lookback_split)
test_carry_products_split = _dry(G.test_carry_products_split)
test_seg_flip_split = _dry(G.test_seg_flip_split)
test_time_major_few_rows = _dry(G.test_time_major_few_rows)


def test_dry_runs_see_the_plan(monkeypatch):
    """The dry run sees what the launcher chose: test_group_scan's settings without its
    ``_DESC_MAX_T = 0`` give rows of 7 steps the descending tiles (``GROUP_TILES = 6``), the
    stale expectation the whole GPU suite of session 26 found; with it, the group form."""
    from rltriton.kernels import launch

    settings = {"_GROUP_SCAN": True, "_GROUP_SCAN_MIN_T": 4, "_GROUP_SCAN_LOOP": frozenset(launch._FORMS),
                "_GROUP_SCAN_FLAT": False, "_GROUP_TILES": False, "_ROW_LANES": False}
    record = lambda pl, kw: kw["GROUP_TILES"]  # noqa: E731
    assert G._forced(monkeypatch, settings, "gae", (300, 7), 10, "group scan", record) == [6]
    # (299 rows: a call of 300 x 7 again would be taken for a replay and skipped)
    assert G._forced(monkeypatch, {**settings, "_DESC_MAX_T": 0}, "gae", (299, 7), 10, "group scan", record) == [2]


@pytest.mark.parametrize("layout,shape", N.TIME_SPLIT_CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("name", rollouts.ESTIMATORS)
def test_native_time_split_plans(name, layout, shape, monkeypatch):
    """test_native.py::test_serves_time_split's premise, dry: each of its calls splits in time
    on the H200 under its settings (a split is what it checks the compiled replay serves; a
    plan change that ran one of them in one pass left that GPU test failing, found sessions
    later)."""
    from rltriton.kernels import launch

    N.time_split_settings(monkeypatch)
    launch.clear_caches()
    seen = plans_used(monkeypatch, launch, lambda pl, kw: pl.segments)
    case = make_case(name, shape, seed=0)
    (to_time_major(case) if layout == "time-major" else case)(backend="triton")
    assert seen and max(seen) > 1, (name, layout, shape, seen)
