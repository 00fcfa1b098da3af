"""The interpreter's scans as tests/conftest.py computes them (``_column_scan``: a column
of the tile at a time) against Triton's own ``ScanOps.generic_scan`` (an element at a
time), bit for bit, on every scan the kernels make: each combine function of
rltriton/kernels/scan.py, on 2-d tiles along axis 1 and on 3-d ones along axes 1 and 2,
float32, float64 and int32 operands. (A run of the whole suite with every scan computed
both ways found no difference in 20995 scans; this keeps one case of each.) Likewise the
reductions (``_column_reduce`` against ``ReduceOps.generic_reduce``): the kernels' one
``tl.reduce`` of a combine function of their own, and every packing of a reduction.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

from rltriton.kernels import launch
from rltriton.kernels.scan import _product
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


@pytest.fixture
def both_reduces(monkeypatch, poisoned):
    """Every interpreted ``tl.reduce`` of a combine function of the kernels' own computed
    both ways (tests/conftest.py's ``_column_reduce`` and Triton's ``generic_reduce``) and
    compared; yields the set of (combine function, tile rank, axis, dtype) seen."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    from triton.runtime import interpreter

    ops = interpreter.ReduceOps
    if not hasattr(ops, "element_reduce"):
        pytest.skip("the interpreter's reductions are Triton's own (RLTRITON_PLAIN_INTERPRETER=1)")
    import numpy as np

    column, element = ops.generic_reduce, ops.element_reduce
    seen = set()

    def checked(self, input):
        got, want = column(self, input), element(self, input)
        assert len(got) == len(want)
        key = (self.combine_fn.fn.__name__, input[0].handle.data.ndim, self.axis, str(input[0].handle.data.dtype))
        for g, w in zip(got, want):
            gd, wd = np.asarray(g.handle.data), np.asarray(w.handle.data)
            assert gd.dtype == wd.dtype and gd.shape == wd.shape and g.type == w.type, key
            assert np.array_equal(_bits(gd), _bits(wd)), (key, gd, wd)
        seen.add(key)
        return got

    monkeypatch.setattr(ops, "generic_reduce", checked)
    yield seen
    poisoned.clear_caches()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_column_reduces_are_triton_reduces(dtype, both_reduces, monkeypatch, poisoned):
    """The one ``tl.reduce`` of the kernels (``scan._product``: PHASE 2's carry-in takes the
    product of the summaries' coefficients, launch._CARRY_PRODUCTS) on rows split into
    segments, computed both ways bit for bit. (Every reduction of test_carry_products,
    test_exact_t and test_one_chunk_rows computed both ways, 11832 of them, found no
    difference.)"""
    use_small_tiles(monkeypatch, poisoned, split=True)
    monkeypatch.setattr(poisoned, "_CARRY_PRODUCTS", True)
    monkeypatch.setattr(poisoned, "_CARRY_FOLD_INIT", frozenset())
    monkeypatch.setattr(poisoned, "_MAX_SEGMENTS", 8)
    monkeypatch.setattr(poisoned, "_SEG_STEPS", 16)
    poisoned.clear_caches()
    _run("td_lambda", (3, 40), dtype=dtype)
    assert ("_product", 2, 1, str(dtype).removeprefix("torch.")) in both_reduces, both_reduces


@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("keep", [False, True])
def test_column_reduce_packs_as_triton(axis, keep, monkeypatch):
    """``_column_reduce`` against Triton's ``generic_reduce`` in a kernel of its own, on the
    packings the kernels never ask for (either axis, ``axis=None``, kept dimensions)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    from triton.runtime import interpreter

    ops = interpreter.ReduceOps
    if not hasattr(ops, "element_reduce"):
        pytest.skip("the interpreter's reductions are Triton's own (RLTRITON_PLAIN_INTERPRETER=1)")
    x = torch.rand(4, 8, generator=torch.Generator().manual_seed(1)) + 0.5
    ax = -1 if axis is None else axis
    got = torch.full((8,), float("nan"))
    _reduce_kernel[(1,)](x, got, AXIS=ax, KEEP=keep)
    want = torch.full((8,), float("nan"))
    monkeypatch.setattr(ops, "generic_reduce", ops.element_reduce)
    _reduce_kernel[(1,)](x, want, AXIS=ax, KEEP=keep)
    n = {0: 8, 1: 4, None: 1}[axis]
    assert torch.equal(got[:n].view(torch.int32), want[:n].view(torch.int32)), (got, want)
    assert got[n:].isnan().all() and want[:n].isfinite().all()
    expect = x.double().prod(dim=axis) if axis is not None else x.double().prod()
    # (a product of at most 32 float32 factors near 1: a few ulps apart from float64's)
    assert torch.allclose(got[:n].double(), expect.reshape(-1), rtol=1e-5, atol=0)


@triton.jit
def _reduce_kernel(x_ptr, out_ptr, AXIS: tl.constexpr, KEEP: tl.constexpr):
    rows = tl.arange(0, 4)
    cols = tl.arange(0, 8)
    x = tl.load(x_ptr + rows[:, None] * 8 + cols[None, :])
    if AXIS == 0:
        r = tl.reduce(x, 0, _product, keep_dims=KEEP)
        tl.store(out_ptr + (cols[None, :] if KEEP else cols), r)
    elif AXIS == 1:
        r = tl.reduce(x, 1, _product, keep_dims=KEEP)
        tl.store(out_ptr + (rows[:, None] if KEEP else rows), r)
    else:
        r = tl.reduce(x, None, _product, keep_dims=KEEP)
        if KEEP:
            tl.store(out_ptr + tl.arange(0, 1)[:, None], r)
        else:
            tl.store(out_ptr, r)


def _tritons_own(monkeypatch) -> None:
    """Triton's own semantic type checks, tensor and block-type constructors in place of
    tests/conftest.py's shortcuts (skips where the shortcuts are off)."""
    from triton.language.semantic import TritonSemantic

    if not hasattr(TritonSemantic, "element_type_checking"):
        pytest.skip("the interpreter's semantics are Triton's own (RLTRITON_PLAIN_INTERPRETER=1)")
    monkeypatch.setattr(TritonSemantic, "binary_op_type_checking_impl", TritonSemantic.element_type_checking)
    monkeypatch.setattr(tl.tensor, "__init__", tl.tensor.element_init)
    monkeypatch.setattr(tl.block_type, "__init__", tl.block_type.element_init)


@pytest.mark.parametrize(("name", "dtype", "time_major"), [
    ("gae", torch.float32, False), ("td_lambda", torch.float64, False), ("vtrace", torch.bfloat16, False),
    ("retrace_av", torch.float32, False), ("traces", torch.float32, True), ("prefix_sum", torch.float64, True)])
def test_semantic_shortcuts_are_tritons(name, dtype, time_major, monkeypatch, poisoned):
    """tests/conftest.py's shortcuts in the semantic layer (``_same_type_operands``,
    ``_tensor_init``, ``_block_type_init``) against Triton's own: the same kernels, split
    in time on small tiles, give the same output bits either way (float32, float64 and bf16
    inputs, time-major too)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    use_small_tiles(monkeypatch, poisoned, split=True)
    poisoned.clear_caches()
    case = make_case(name, (3, 40), bootstrap="bootstrap_values", flags="both", seed=4, time_major=time_major,
                     dtype=dtype)
    got = [o.clone() for o in case(backend="triton")]
    with monkeypatch.context() as m:
        _tritons_own(m)
        poisoned.clear_caches()
        want = [o.clone() for o in case(backend="triton")]
    poisoned.clear_caches()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        as_int = {2: torch.int16, 4: torch.int32, 8: torch.int64}[g.element_size()]
        assert torch.equal(g.contiguous().view(as_int), w.contiguous().view(as_int)), name


def test_semantic_shortcut_attributes(monkeypatch):
    """The shortcuts' types, tensors and operand checks hold what Triton's make: block types
    of every element type and shape (a list, a tl.tuple, constexprs), tensors of them and of
    scalars, and the operands of binary operations on one type (returned as they are) and on
    two (cast and broadcast by Triton's own rules)."""
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    import numpy as np
    from triton.language.semantic import TritonSemantic
    from triton.runtime import interpreter

    if not hasattr(TritonSemantic, "element_type_checking"):
        pytest.skip("the interpreter's semantics are Triton's own (RLTRITON_PLAIN_INTERPRETER=1)")
    sem = interpreter.interpreter_semantic

    def described(ty):
        if not ty.is_block():
            return (ty.name,)
        return (ty.name, type(ty.shape).__name__, list(ty.shape), ty.numel, ty.element_ty.name)

    def tensor_described(t):
        return (described(t.type), t.dtype.name, type(t.shape).__name__, [type(d).__name__ for d in t.shape],
                [d.value for d in t.shape], t.numel.value, t.handle is not None)

    types = []
    for element in (tl.float32, tl.float64, tl.bfloat16, tl.int32, tl.int1, tl.pointer_type(tl.float32)):
        for shape in ([4], [2, 8], tl.core.tuple([tl.constexpr(4), tl.constexpr(2)]), [tl.constexpr(16)]):
            for _ in range(2):  # (the second from the cache)
                fast = tl.block_type(element, shape)
                with monkeypatch.context() as m:
                    m.setattr(tl.block_type, "__init__", tl.block_type.element_init)
                    slow = tl.block_type(element, shape)
                assert described(fast) == described(slow) and fast == slow, (element, shape)
            types.append(fast)
    with pytest.raises(ValueError):
        tl.block_type(tl.float32, [3])  # (not a power of two: Triton's error)
    with pytest.raises(AssertionError):
        tl.block_type(tl.float32, (4,))  # (a builtin tuple: Triton's assertion)

    def tensor_of(ty, own: bool):
        shape = list(ty.shape) if ty.is_block() else [1]
        np_dtype = np.uint64 if ty.scalar.is_ptr() else interpreter._get_np_dtype(ty.scalar)
        handle = interpreter.TensorHandle(np.zeros(shape, dtype=np_dtype), ty.scalar)
        with monkeypatch.context() as m:
            if own:
                m.setattr(tl.tensor, "__init__", tl.tensor.element_init)
            return tl.tensor(handle, ty)

    for ty in types + [tl.float32, tl.int32, tl.bfloat16]:
        assert tensor_described(tensor_of(ty, False)) == tensor_described(tensor_of(ty, True)), ty
    pairs = [(a, b) for a in types + [tl.float32] for b in types + [tl.float32]
             if not a.scalar.is_ptr() and not b.scalar.is_ptr()
             and (not a.is_block() or not b.is_block() or list(a.shape) == list(b.shape) or a.numel == 1)]
    for a, b in pairs:
        for div in (False, True):
            x, y = tensor_of(a, False), tensor_of(b, False)
            try:
                want = TritonSemantic.element_type_checking(sem, x, y, div_or_mod=div)
            except (TypeError, ValueError) as e:
                with pytest.raises(type(e)):
                    sem.binary_op_type_checking_impl(x, y, div_or_mod=div)
                continue
            got = sem.binary_op_type_checking_impl(x, y, div_or_mod=div)
            assert [tensor_described(t) for t in got] == [tensor_described(t) for t in want], (a, b, div)
            if a.name == b.name and not (div and a.scalar in (tl.float16, tl.bfloat16)):
                assert got[0] is x and got[1] is y and want[0] is x and want[1] is y, (a, b, div)
