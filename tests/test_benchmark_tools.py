"""The benchmark scripts' helpers that need no GPU: ``benchmarks/common.estimator_plan``, the
default plan ``sweep.py`` and ``ncu_case.py`` report, must be the plan the launcher takes."""

from __future__ import annotations

import pytest
import torch

common = pytest.importorskip("benchmarks.common")

# Triton 3.6's values of the settings launch.py derives from the installed version (the H200's)
TRITON_36 = {"_GROUP_TILES": False, "_ROW_LANES": True, "_TM_LANES_NARROW": True}


@pytest.fixture
def h200(monkeypatch):
    from rltriton.kernels import launch

    for k, v in TRITON_36.items():
        monkeypatch.setattr(launch, k, v)
    monkeypatch.setattr(launch, "_device_sms", lambda device: 132)
    launch.clear_caches()
    yield launch
    launch.clear_caches()


def test_estimator_plan_is_the_launchers(h200):
    """Discounted returns at 8192 x 128 take TD(lambda)'s kernel's 128-step lanes tiles, which
    only the call's own arguments (``wide_lanes``) admit: ``launch.plan_for`` asked with the
    estimator's kind alone names another plan, ``estimator_plan`` the one the call takes. The
    call stops at the plan (no kernel runs: 1M elements would take minutes in the interpreter),
    ``launch.plan_for`` is put back, and a second ask (a replay otherwise) gives it again."""
    launch = h200
    original = launch.plan_for
    pl = common.estimator_plan("discounted_returns", (8192, 128), device="cpu")
    assert launch.plan_for is original
    assert pl.lanes and (pl.block_n, pl.block_t, pl.num_warps) == (8, 128, launch._TD_WIDE_LANES_WARPS), pl
    bare = launch.plan_for(8192, 128, torch.device("cpu"), form="td_lambda")
    assert bare != pl, bare
    assert common.estimator_plan("discounted_returns", (8192, 128), device="cpu") == pl
    # time-major: the deep pipeline of a 16-row program walking 32 chunks (launch._tm_deep)
    tm = common.estimator_plan("traces", (16384, 512), time_major=True, device="cpu")
    assert tm.time_major and tm.block_n == launch._TM_NARROW_ROWS and tm.stages == launch._TM_DEEP_STAGES, tm
    # plan_for: the original of a monkeypatched one (sweep.py forces plans through launch.plan_for)
    seen = []
    assert common.estimator_plan("gae", (64, 512), device="cpu",
                                 plan_for=lambda *a, **k: seen.append(a) or original(*a, **k)) is not None
    assert seen and seen[0][:2] == (64, 512), seen
