"""The goal checks of ``benchmarks/run.py`` on hand-written figures (no timing happens
here): each BENCHMARKS.md goal gets its verdict from the right pair of numbers."""

from __future__ import annotations

import pytest

run = pytest.importorskip("benchmarks.run")


def _row(shape, category, ours, bare=None, floor=(2.5, 30.0), bw=2.0, peer=None, tm=None):
    cands = {"rltriton": {"device_us": ours[0], "full_us": ours[1], "ok": True}}
    if tm is not None:
        cands["rltriton(tm)"] = {"device_us": tm, "full_us": ours[1], "ok": True}
    if bare is not None:
        cands["rltriton(bare)"] = {"device_us": None, "full_us": bare}
    if peer is not None:
        cands["rl-triton"] = {"device_us": peer[0], "full_us": peer[1], "ok": True}
    return {"estimator": "gae", "shape": list(shape), "category": category, "candidates": cands, "skipped": {},
            "floor": {"device_us": floor[0], "full_us": floor[1]}, "bw_floor_us": bw}


def _verdicts(row) -> dict[str, bool]:
    return {c["goal"]: c["pass"] for c in run.goal_checks([row])}


def _info(row) -> set[str]:
    """The checks shown but not counted (not goals of BENCHMARKS.md)."""
    return {c["goal"] for c in run.goal_checks([row]) if c.get("info")}


def test_full_call_against_the_bare_launch_of_the_same_kernels():
    """BENCHMARKS.md: full call <= bare Triton launch of the same kernel + 5 us; the floor
    kernel's own launch is reported beside it, not counted."""
    row = _row((4096, 128), "classic", (3.0, 44.0), bare=40.0)
    v = _verdicts(row)
    assert v["full call <= bare launch of the same kernels + 5 us"] is True
    assert v["full call - floor kernel's full call (not a goal)"] is False  # 44 against 30
    assert _info(row) == {"full call - floor kernel's full call (not a goal)"}
    v = _verdicts(_row((4096, 128), "classic", (3.0, 46.0), bare=40.0))
    assert v["full call <= bare launch of the same kernels + 5 us"] is False
    assert "full call <= bare launch of the same kernels + 5 us" not in _verdicts(
        _row((4096, 128), "classic", (3.0, 44.0)))  # no bare figure: no verdict


def test_device_goals_by_category():
    v = _verdicts(_row((4096, 128), "classic", (3.1, 44.0)))
    assert v["device <= 1.25 x floor"] is True  # 3.1 / 2.5 = 1.24
    v = _verdicts(_row((4096, 128), "massive", (3.2, 44.0)))
    assert v["device <= 1.25 x floor"] is False
    v = _verdicts(_row((16, 262144), "long", (40.0, 90.0), bw=19.0))
    assert v["device <= 2 x bandwidth floor"] is False  # 40 / 19 = 2.1
    v = _verdicts(_row((16, 262144), "long", (38.0, 90.0), bw=19.0))
    assert v["device <= 2 x bandwidth floor"] is True
    # BENCHMARKS.md names 16 x 262144 and 1 x 1048576: other long rows are shown, not counted
    row = _row((64, 65536), "long", (50.0, 90.0), bw=19.0)
    assert _verdicts(row)["device <= 2 x bandwidth floor (not a goal row)"] is False
    assert "device <= 2 x bandwidth floor (not a goal row)" in _info(row)


def test_time_major_goal():
    """The issue's goal: time-major [T, N] input within 1.25x of the batch-major device time;
    a wrong time-major output fails it."""
    assert _verdicts(_row((4096, 128), "classic", (3.0, 44.0), tm=3.7))["time-major device <= 1.25 x batch-major"]
    assert not _verdicts(_row((4096, 128), "classic", (3.0, 44.0), tm=3.8))["time-major device <= 1.25 x batch-major"]
    row = _row((4096, 128), "classic", (3.0, 44.0), tm=3.0)
    row["candidates"]["rltriton(tm)"]["ok"] = False
    assert not _verdicts(row)["time-major device <= 1.25 x batch-major"]
    assert "time-major device <= 1.25 x batch-major" not in _verdicts(_row((4096, 128), "classic", (3.0, 44.0)))


def test_ahead_of_a_peer_needs_device_and_full_call():
    v = _verdicts(_row((4096, 128), "classic", (3.0, 44.0), peer=(3.9, 42.9)))
    assert v["ahead of rl-triton (device and full call)"] is False  # slower full call
    v = _verdicts(_row((4096, 128), "classic", (3.0, 42.0), peer=(3.9, 42.9)))
    assert v["ahead of rl-triton (device and full call)"] is True


def test_floor_streams_the_action_form_bytes():
    """The floor of Retrace's action form moves its [N, T, A] inputs too: each float32 one
    as A/2 float64 [N, T] tensors holding the same bytes (the probe and the harness alike)."""
    import torch

    from benchmarks.common import per_step_inputs

    r = torch.randn(3, 5)
    av = torch.randn(3, 5, 4)
    act = torch.zeros(3, 5, dtype=torch.long)
    got = per_step_inputs([r, av, act, torch.ones(3), 0.99], (3, 5))
    assert [x.dtype for x in got] == [torch.float32, torch.float64, torch.float64, torch.int64]
    assert all(tuple(x.shape) == (3, 5) for x in got)
    assert sum(x.numel() * x.element_size() for x in got) == sum(
        x.numel() * x.element_size() for x in (r, av, act))
    assert torch.equal(torch.stack(got[1:3], -1).view(torch.float32).reshape(3, 5, 4), av)
