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


def _run_file(path, started, rows, gpu="NVIDIA H200", **args):
    """A results file of benchmarks/run.py with these rows: (estimator, shape, ours, floor, tm)."""
    import json

    out = []
    for est, shape, ours, floor, tm in rows:
        cands = {"rltriton": {"device_us": ours, "full_us": 20.0, "ok": True}}
        if tm is not None:
            cands["rltriton(tm)"] = {"device_us": tm, "full_us": 20.0, "ok": True}
        out.append({"estimator": est, "shape": list(shape), "category": "classic", "candidates": cands,
                    "skipped": {}, "floor": {"device_us": floor, "full_us": 18.0}, "bw_floor_us": floor})
    meta = {"date": started[:10], "started": started, "gpu": gpu, "grid": "custom", "truncations": False,
            "args": {"dtype": "fp32", **args}, "git": {"commit": path.stem}}
    path.write_text(json.dumps({"meta": meta, "rows": out}))
    return path


def test_standing_takes_the_newest_verdict_of_each_row(tmp_path):
    """``benchmarks/standing.py``: each (row, goal) verdict comes from the newest run that
    gives one, whatever the order of the files; runs of bf16 inputs, truncations, another GPU
    and files that are not run.py's do not count; rows off the grids count only when asked,
    and a shape of two grids (4096 x 128) counts in both."""
    standing = pytest.importorskip("benchmarks.standing")
    old = _run_file(tmp_path / "old.json", "2026-12-01T10:00:00",
                    [("gae", (512, 4096), 10.0, 5.0, 30.0),     # 2.0x: the newer run overrides it
                     ("gae", (4096, 128), 3.0, 2.0, 3.0),       # 1.5x, and no newer verdict: stands
                     ("gae", (512, 2048), 4.0, 3.9, 4.0)])      # 1.03x, no newer verdict: stands
    new = _run_file(tmp_path / "new.json", "2026-12-03T09:00:00",
                    [("gae", (512, 4096), 6.0, 5.0, None),      # 1.2x, no time-major figure
                     ("gae", (1, 8192), 9.0, 3.0, None)])       # off the grids
    ignored = [_run_file(tmp_path / "bf16.json", "2026-12-04T00:00:00", [("gae", (512, 4096), 99.0, 5.0, None)],
                         dtype="bf16"),
               _run_file(tmp_path / "trunc.json", "2026-12-04T00:00:00", [("gae", (512, 4096), 99.0, 5.0, None)],
                         truncations=True),
               _run_file(tmp_path / "a100.json", "2026-12-04T00:00:00", [("gae", (512, 4096), 99.0, 5.0, None)],
                         gpu="NVIDIA A100")]
    notes = tmp_path / "notes.json"
    notes.write_text('{"sweep": [1, 2]}')
    assert standing.load_run(notes) is None
    runs = [standing.load_run(p) for p in (new, *ignored, old, notes)]
    best = standing.verdicts([r for r in runs if r is not None and standing.counts(r["meta"], "H200")])
    floor_goal, tm_goal = "device <= 1.25 x floor", "time-major device <= 1.25 x batch-major"
    v = best[("gae 512x4096", floor_goal)]
    assert v["pass"] and v["file"] == "new.json" and v["commit"] == "new", v
    v = best[("gae 512x4096", tm_goal)]  # the newer run has no time-major figure: the older one decides
    assert not v["pass"] and v["file"] == "old.json", v
    assert best[("gae 4096x128", floor_goal)]["grids"] == ["classic", "massive"]
    assert ("gae 1x8192", floor_goal) not in best
    text = standing.report([r for r in runs if r is not None], "H200")
    assert f"| {floor_goal} | 2 of 3 | 0 of 1 | — |" in text, text
    assert "| gae 4096x128 | classic, massive | 1.50x | `old.json` | `old` |" in text, text
    assert "99" not in text and "1x8192" not in text
    text = standing.report([r for r in runs if r is not None], "H200", all_rows=True)
    assert f"| {floor_goal} | 2 of 3 | 0 of 1 | — | 0 of 1 |" in text, text


@pytest.mark.parametrize("setting, want", [
    ("plan=8,16,2,4,32", dict(block_n=8, block_t=16, num_warps=2, segments=4, seg_len=32, time_major=True,
                              tm_lanes=False)),
    # a time-major lanes tile of 8 rows on 2 warps: 8 groups of 8 steps along time, 2 segments
    ("tmplan=8,64,2,2", dict(block_n=8, block_t=64, num_warps=2, segments=2, seg_len=64, time_major=True,
                             tm_lanes=True)),
    ("tmplan=16,128,4", dict(block_n=16, block_t=128, num_warps=4, segments=1, seg_len=128, time_major=True,
                             tm_lanes=True)),
])
def test_forced_plans(setting, want, monkeypatch, poisoned):
    """``common.apply_launch_settings``' forced plans (``plan=`` and ``tmplan=``, which the
    static and profiling scripts take, ``benchmarks/sass_counts.py`` among them) are the plan
    every call then gets, and a time-major call on them computes GAE right: NaN-poisoned
    outputs against the float64 reference, through the interpreter, with the lanes tile's
    thread groups along time (``TM_W``) as ``launch._tm_groups`` gives them."""
    from tests.conftest import INTERPRET, plans_used
    from tests.rollouts import assert_matches, make_case

    launch = poisoned
    monkeypatch.setattr(launch, "plan_for", launch.plan_for)  # put back after the test
    forced = common.apply_launch_settings([setting], time_major=True)
    assert {k: getattr(forced, k) for k in want} == want, forced
    assert launch.plan_for(21, 128, torch.device("cpu"), True) is forced
    if not INTERPRET:
        return
    seen = plans_used(monkeypatch, launch, lambda pl, kw: (pl, kw.get("TM_W", 0)))
    launch.clear_caches()
    try:
        T = forced.seg_len * forced.segments
        case = make_case("gae", (21, T), bootstrap="bootstrap_values", flags="both", seed=7, time_major=True)
        ref = case(backend="reference")
        for i, (o, r) in enumerate(zip(case(backend="triton"), ref)):
            assert_matches(o, r, case, f"gae[{i}] {setting}")
    finally:
        launch.clear_caches()
    groups = launch._tm_groups(forced) if forced.tm_lanes else 0
    assert seen and all(s == (forced, groups) for s in seen), seen
