"""The interpreter's scans as tests/conftest.py computes them (``_column_scan``: a column
of the tile at a time) against Triton's own ``ScanOps.generic_scan`` (an element at a
time), bit for bit, on every scan the kernels make: each combine function of
rltriton/kernels/scan.py, on 2-d tiles along axis 1 and on 3-d ones along axes 1 and 2,
float32, float64 and int32 operands. (A run of the whole suite with every scan computed
both ways found no difference in 20995 scans; this keeps one case of each.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from rltriton.kernels import launch
from tests.conftest import INTERPRET, use_small_tiles
from tests.rollouts import assert_matches, make_case, tm_lanes_tiles

ROOT = Path(__file__).resolve().parents[1]


def _bits(a):
    import numpy as np

    a = np.ascontiguousarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]) if a.dtype.kind == "f" else a


@pytest.fixture
def both_scans(monkeypatch, poisoned):
    """Every interpreted scan computed both ways and compared; yields the set of
    (combine function, tile rank, axis, dtype) seen."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    from triton.runtime import interpreter

    ops = interpreter.ScanOps
    if not hasattr(ops, "element_scan"):
        pytest.skip("the interpreter's scans are Triton's own (RLTRITON_PLAIN_INTERPRETER=1)")
    import numpy as np

    column, element = ops.generic_scan, ops.element_scan
    seen = set()

    def checked(self, input):
        got, want = column(self, input), element(self, input)
        assert len(got) == len(want)
        key = (self.combine_fn.fn.__name__, input[0].handle.data.ndim, self.axis, str(input[0].handle.data.dtype))
        for g, w in zip(got, want):
            gd, wd = g.handle.data, w.handle.data
            assert gd.dtype == wd.dtype and gd.shape == wd.shape and g.type == w.type, key
            assert np.array_equal(_bits(gd), _bits(wd)), (key, gd, wd)
        seen.add(key)
        return got

    monkeypatch.setattr(ops, "generic_scan", checked)
    yield seen
    poisoned.clear_caches()


def _run(name, shape, time_major=False, dtype=torch.float32):
    case = make_case(name, shape, bootstrap="bootstrap_values", flags="both", seed=3, time_major=time_major,
                     dtype=dtype)
    ref = case(backend="reference")
    out = case(backend="triton")
    for i, (o, r) in enumerate(zip(out, ref)):
        assert_matches(o, r, case, f"{name}[{i}]")


# GAE's and TD(lambda)'s time-major lanes tiles of 8 to 64 steps on any number of programs
_TM_TILES = tm_lanes_tiles(launch, (8, 16, 32, 64), forms=("gae", "td_lambda"))
# (launch settings, estimator, shape, time-major, dtype) -> the scans it must make
CASES = {
    "time-order": ({"_GROUP_TILES": False, "_GROUP_SCAN": False}, "gae", (3, 40), False, torch.float32,
                   {("affine_combine", 2, 1, "float32")}),
    "time-order-cut-f64": ({"_GROUP_TILES": False, "_GROUP_SCAN": False}, "td_lambda", (3, 40), False, torch.float64,
                           {("affine_combine_cut", 2, 1, "float64")}),
    "lagged": ({"_GROUP_TILES": False, "_GROUP_SCAN": False}, "vtrace", (3, 40), False, torch.float32,
               {("affine_combine_lagged", 2, 1, "float32")}),
    "group-scan-cut": ({"_GROUP_TILES": False, "_GROUP_SCAN": True, "_GROUP_SCAN_MIN_T": 4,
                        "_GROUP_SCAN_FLAT": False}, "td_lambda", (3, 40), False, torch.float32,
                       {("affine_combine_lagged_cut", 2, 1, "float32")}),
    "flat-segmented": ({"_TILE": 128, "_GROUP_TILES": False, "_GROUP_SCAN_FLAT": True, "_FLAT_SEGMENTED": True},
                       "gae", (9, 16), False, torch.float32, {("affine_combine_lagged_seg", 2, 1, "int32")}),
    # (PHASE 1 on the scan: launch._MAP_REDUCE's reductions take TD(lambda)'s by default)
    "segment-map": ({"_GROUP_TILES": False, "_GROUP_SCAN": False, "_SEGMENT_MAP_FORWARD": True,
                     "_MAP_REDUCE": frozenset()}, "gae", (3, 63),
                    False, torch.float32, {("affine_after", 2, 1, "float32")}),
    "segment-map-cut": ({"_GROUP_TILES": False, "_GROUP_SCAN": False, "_SEGMENT_MAP_FORWARD": True,
                         "_MAP_REDUCE": frozenset()}, "td_lambda",
                        (3, 63), False, torch.float32, {("affine_after_cut", 2, 1, "float32")}),
    "lanes": ({"_ROW_LANES": True, "_ROW_LANES_MIN_PROGRAMS": 0, "_ROW_LANES_MAX_T": {"gae": 64, "td_lambda": 64}},
              "gae", (9, 32), False, torch.float32, {("affine_combine_lagged", 3, 2, "float32")}),
    "lanes-cut": ({"_ROW_LANES": True, "_ROW_LANES_MIN_PROGRAMS": 0,
                   "_ROW_LANES_MAX_T": {"gae": 64, "td_lambda": 64}}, "td_lambda", (9, 32), False, torch.float32,
                  {("affine_combine_lagged_cut", 3, 2, "float32")}),
    "tm-lanes": ({"_TM_LANES": True, "_TM_LANES_TILES": _TM_TILES},
                 "gae", (20, 16), True, torch.float32, {("affine_combine_lagged", 3, 1, "float32")}),
    "tm-lanes-cut": ({"_TM_LANES": True, "_TM_LANES_TILES": _TM_TILES}, "td_lambda", (20, 16), True, torch.float32,
                     {("affine_combine_lagged_cut", 3, 1, "float32")}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_column_scans_are_triton_scans(case, both_scans, monkeypatch, poisoned):
    settings, name, shape, time_major, dtype, scans = CASES[case]
    use_small_tiles(monkeypatch, poisoned, split=case.startswith("segment-map"))
    for key, value in settings.items():
        monkeypatch.setattr(poisoned, key, value)
    poisoned.clear_caches()
    _run(name, shape, time_major, dtype)
    assert scans <= both_scans, both_scans


def test_cases_take_every_combine_function():
    """The cases above make a scan with every combine function the kernels pass to
    ``tl.associative_scan``."""
    named = set(re.findall(r"combine_fn=(\w+)", (ROOT / "rltriton" / "kernels" / "scan.py").read_text()))
    assert named == {fn for *_, scans in CASES.values() for fn, *_ in scans}, named
