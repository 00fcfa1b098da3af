"""Test configuration.

Without a GPU, Triton kernels run on CPU tensors through the interpreter: the variable
must be set before the kernels are defined (``triton.jit`` reads it then), so it is set
here, before any test imports :mod:`rltriton.kernels`. On a GPU machine the ``gpu``-marked
tests run the compiled kernels instead (``pytest -m gpu``). Seven shortcuts make the
interpreter several times faster without changing what it computes
(:func:`_faster_interpreter`).
"""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"


def _column_scan(self, input):
    """``tl.associative_scan`` under the interpreter, one column at a time: the combine
    function applied to whole slices across the scanned axis (every other element of the
    tile at once) in place of Triton's ``ScanOps.generic_scan``, which calls it once per
    element of the tile (more than half the interpreter's time in the kernel tests). Each
    element sees the same operations in the same order (the accumulated value at the step
    before, combined with the element's own), so the results are the same bits: the
    combine functions are elementwise (arithmetic and selects). tests/test_interpreter_scan.py
    compares the two on a scan of every combine function of the kernels."""
    import math

    import numpy as np
    import triton.language as tl

    axis = self.axis
    data = [arg.handle.data for arg in input]
    out = [np.zeros(d.shape, dtype=d.dtype) for d in data]
    n = data[0].shape[axis]
    lead = (slice(None),) * axis
    if n:
        for o, d in zip(out, data):
            o[(*lead, 0)] = d[(*lead, 0)]
    for k in range(1, n):
        acc = tuple(self.to_tensor(o[(*lead, k - 1)], arg.dtype) for o, arg in zip(out, input))
        new = tuple(self.to_tensor(d[(*lead, k)], arg.dtype) for d, arg in zip(data, input))
        ret = self.combine_fn.fn(*acc, *new)
        for o, r in zip(out, ret if isinstance(ret, tuple) else (ret,)):
            val = r.handle.data if isinstance(r, tl.core.tensor) else r
            shape = np.shape(o[(*lead, k)])
            o[(*lead, k)] = np.reshape(val, shape) if np.size(val) == math.prod(shape) else val
    return [self.to_tensor(o, arg.dtype) for o, arg in zip(out, input)]


def _column_reduce(self, input):
    """``tl.reduce`` with a combine function of the kernels' own (``scan._product``) under
    the interpreter, a column at a time, in place of Triton's ``ReduceOps.generic_reduce``,
    which calls the combine function once per element: every output element is folded in the
    same order (the accumulated value, combined with the next element along the axis), so
    the results are the same bits, as in :func:`_column_scan`. The output is packed as
    Triton packs it (kept dimensions, a scalar for ``axis=None``);
    tests/test_interpreter_scan.py compares the two."""
    import math

    import numpy as np
    import triton.language as tl

    original_axis = self.axis
    input, axis = self.unravel(input, self.axis)
    data = [arg.handle.data for arg in input]
    shape = data[0].shape
    out = [np.zeros(shape[:axis] + shape[axis + 1:], dtype=d.dtype) for d in data]
    lead = (slice(None),) * axis
    if shape[axis]:
        for o, d in zip(out, data):
            o[...] = d[(*lead, 0)]
    for k in range(1, shape[axis]):
        acc = tuple(self.to_tensor(o.copy(), arg.dtype) for o, arg in zip(out, input))
        new = tuple(self.to_tensor(d[(*lead, k)], arg.dtype) for d, arg in zip(data, input))
        ret = self.combine_fn.fn(*acc, *new)
        for o, r in zip(out, ret if isinstance(ret, tuple) else (ret,)):
            val = r.handle.data if isinstance(r, tl.core.tensor) else r
            o[...] = np.reshape(val, o.shape) if np.size(val) == math.prod(o.shape) else val
    ret = []
    for o, arg in zip(out, input):
        if self.keep_dims:
            o = np.expand_dims(o, axis) if original_axis is not None else o.reshape((1,) * len(shape))
        elif original_axis is None:
            o = o.item()
        ret.append(self.to_tensor(o, arg.dtype))
    return ret


def _cached_np_dtype(np_dtype, tl):
    """The interpreter's ``_get_np_dtype`` (a pure function of the dtype that builds a
    19-entry table at each of its calls: a sixth of the kernel tests' time), looked up once
    a dtype: a block type's numpy dtype is its element type's (a pointer's: uint64), and
    scalar dtypes hash and compare by name (block and pointer types do not hash)."""
    import numpy as np

    seen: dict = {}
    pointer = np.dtype(np.uint64)

    def cached(tt_dtype):
        key = tt_dtype.element_ty if isinstance(tt_dtype, tl.block_type) else tt_dtype
        if isinstance(key, tl.pointer_type):
            return pointer
        try:
            return seen[key]
        except KeyError:
            got = seen[key] = np_dtype(key)
            return got
        except TypeError:  # (an unhashable kind of dtype: as Triton computes it)
            return np_dtype(tt_dtype)

    return cached


def _same_type_operands(check, tl):
    """The semantic layer's ``binary_op_type_checking_impl`` (the implicit casts and
    broadcasts of every binary operation: a seventh of the kernel tests' time), returning
    its operands at once where it would return them unchanged: two tensors of one type,
    neither a pointer, not a division of half floats (``/`` and ``%`` of fp16 and bf16
    compute in float32). Triton's own rules give that: one scalar type promotes to
    itself, a cast to its own type is the input, and equal block shapes broadcast to
    themselves."""
    tensor = tl.tensor
    halves = (tl.float16, tl.bfloat16)

    def checked(self, lhs, rhs, allow_lhs_ptr=False, allow_rhs_ptr=False, arithmetic_check=True,
                div_or_mod=False):
        if type(lhs) is tensor and type(rhs) is tensor:
            ty = lhs.type
            # (a type's name is its element type's and block shape's, so names equal where the
            # types are: ``==`` compares the shapes as tl.tuples, a tenth of the time again)
            if ty is rhs.type or ty.name == rhs.type.name:
                scalar = ty.scalar
                if not scalar.is_ptr() and not (div_or_mod and scalar in halves):
                    return lhs, rhs
        return check(self, lhs, rhs, allow_lhs_ptr, allow_rhs_ptr, arithmetic_check, div_or_mod)

    return checked


def _tensor_init(tl):
    """``tl.tensor.__init__`` (every value the interpreter makes: a seventh of the kernel
    tests' time) with what a block shape gives made once a shape: the same attributes,
    ``shape`` a new ``tl.tuple`` of a ``constexpr`` a dimension (the constexprs and the
    tuple's type shared by the tensors of that shape: Triton never changes either in place)
    and ``numel`` the product's ``constexpr``."""
    import math

    core = tl.core
    constexpr, shape_tuple = core.constexpr, core.tuple
    shapes: dict = {}
    empty = shape_tuple([]).type  # (a scalar's shape: the empty tl.tuple's type)
    one = constexpr(1)

    def init(self, handle, type):
        self.handle = handle
        self.type = type
        self.dtype = type.scalar
        if type.is_block():
            key = type.name  # (its element type's and shape's: a tl.tuple hashes slowly)
            held = shapes.get(key)
            if held is None:
                dims = shape_tuple([constexpr(d) for d in type.shape])
                held = shapes[key] = (dims.values, dims.type, constexpr(math.prod(type.shape)))
            self.shape, self.numel = shape_tuple(held[0], held[1]), held[2]
        else:
            self.shape, self.numel = shape_tuple([], empty), one

    return init


def _block_type_init(init, tl):
    """``tl.block_type.__init__`` (a new type at nearly every operation the interpreter
    runs: a seventh of the kernel tests' time once :func:`_tensor_init` is in) computing a
    shape's attributes once an element type and shape: ``shape`` (a tl.tuple of ints),
    ``numel`` and ``name`` taken from the first type of that shape, shared (Triton never
    changes a type in place). Shapes Triton's own rejects, or of anything but ints and
    constexprs of ints, go to Triton's, which raises as before."""
    core = tl.core
    constexpr, shape_tuple = core.constexpr, core.tuple
    seen: dict = {}

    def cached(self, element_ty, shape):
        kind = type(shape)
        values = shape if kind is list else shape.values if kind is shape_tuple else None
        if values is not None:
            dims = [d.value if type(d) is constexpr else d for d in values]
            if all(type(d) is int for d in dims):
                key = (element_ty.name, *dims)
                held = seen.get(key)
                if held is not None:
                    self.element_ty = element_ty
                    self.shape, self.numel, self.name = held
                    return
                init(self, element_ty, shape)
                seen[key] = (self.shape, self.numel, self.name)
                return
        init(self, element_ty, shape)

    return cached


def _faster_interpreter() -> None:
    """Seven shortcuts in Triton's interpreter (``RLTRITON_PLAIN_INTERPRETER=1``: none),
    each computing exactly what it replaces: :func:`_column_scan` for its scans,
    :func:`_column_reduce` for its reductions of a combine function of the kernels' own
    (the carry-in's product: a third of the split tests' time), :func:`_cached_np_dtype`
    for its dtype table, three in the semantic layer that every operation goes through
    (:func:`_same_type_operands`, :func:`_tensor_init`, :func:`_block_type_init`: together
    they took the kernel tests from 24 s to 10 s on two of them; tests/test_interpreter_scan.py
    compares them with Triton's), and one ``_patch_lang`` a launch. The interpreter maps
    ``triton.language``'s builtins to its own when a launch starts (undoing it when the
    launch ends) and again at every call of a ``@triton.jit`` function inside it (about half
    the kernel tests' time once the scans are columns): those calls find the same modules
    already mapped, so they are skipped."""
    if os.environ.get("RLTRITON_PLAIN_INTERPRETER", "0") == "1":
        return
    import triton.language as tl
    from triton.runtime import interpreter

    ops = getattr(interpreter, "ScanOps", None)
    if ops is not None and hasattr(ops, "generic_scan") and hasattr(ops, "to_tensor"):
        ops.element_scan = ops.generic_scan  # Triton's, for tests/test_interpreter_scan.py
        ops.generic_scan = _column_scan
    reduce_ops = getattr(interpreter, "ReduceOps", None)
    if reduce_ops is not None and hasattr(reduce_ops, "generic_reduce") and hasattr(reduce_ops, "unravel"):
        reduce_ops.element_reduce = reduce_ops.generic_reduce  # Triton's, for tests/test_interpreter_scan.py
        reduce_ops.generic_reduce = _column_reduce
    semantic = getattr(interpreter, "TritonSemantic", None)
    check = getattr(semantic, "binary_op_type_checking_impl", None)
    if check is not None and hasattr(tl, "tensor") and hasattr(tl, "bfloat16"):
        semantic.element_type_checking = check  # Triton's, for tests/test_interpreter_scan.py
        semantic.binary_op_type_checking_impl = _same_type_operands(check, tl)
    block_init = tl.block_type.__init__
    if block_init.__code__.co_varnames[:3] == ("self", "element_ty", "shape"):
        tl.block_type.element_init = block_init  # Triton's, for tests/test_interpreter_scan.py
        tl.block_type.__init__ = _block_type_init(block_init, tl)
    init = tl.tensor.__init__
    if init.__code__.co_varnames[:3] == ("self", "handle", "type"):
        tl.tensor.element_init = init  # Triton's, for tests/test_interpreter_scan.py
        tl.tensor.__init__ = _tensor_init(tl)
    np_dtype = getattr(interpreter, "_get_np_dtype", None)
    if np_dtype is not None and hasattr(tl, "block_type") and hasattr(tl, "pointer_type"):
        interpreter._get_np_dtype = _cached_np_dtype(np_dtype, tl)
    grid, patch_lang = getattr(interpreter, "GridExecutor", None), getattr(interpreter, "_patch_lang", None)
    if grid is None or patch_lang is None or not hasattr(interpreter, "_LangPatchScope"):
        return
    patched = [None]  # the language modules the running launch has mapped (None: no launch runs)

    modules: dict = {}  # id(globals) -> (globals, the language modules bound there)

    def once_a_launch(fn):
        # (the language modules a function's module binds, read once a module: modules bind
        # triton.language at import, and the scan over every global at each call of a jit
        # function took 2% of the kernel tests' time; the dict is kept so its id stays its own)
        g = fn.__globals__
        held = modules.get(id(g))
        if held is None or held[0] is not g:
            held = modules[id(g)] = (g, frozenset(id(v) for v in g.values() if v is tl or v is tl.core))
        langs = held[1]
        if patched[0] is not None and langs and langs <= patched[0]:
            return interpreter._LangPatchScope()  # (nothing to undo: calls inside a launch never do)
        scope = patch_lang(fn)
        if patched[0] is not None:
            patched[0] |= langs
        return scope

    launch = grid.__call__

    def launch_patching_once(self, *args, **kwargs):
        outer, patched[0] = patched[0], set()
        try:
            return launch(self, *args, **kwargs)
        finally:
            patched[0] = outer

    interpreter._patch_lang = once_a_launch
    grid.__call__ = launch_patching_once


if INTERPRET:
    _faster_interpreter()


def _nan_empty_like(x, *args, **kwargs):
    return torch.empty_like(x, *args, **kwargs).fill_(float("nan"))


def _nan_empty(*args, **kwargs):
    return torch.empty(*args, **kwargs).fill_(float("nan"))


@pytest.fixture
def poisoned(monkeypatch):
    """Kernel outputs start NaN-filled: an element a kernel does not write fails the test."""
    from rltriton.kernels import launch, native

    monkeypatch.setattr(launch, "empty_like", _nan_empty_like)
    monkeypatch.setattr(launch, "empty", _nan_empty)
    native.set_poison(True)  # the compiled replay's outputs too, where it is loaded
    yield launch
    native.set_poison(False)


def use_small_tiles(monkeypatch, launch, split: bool, lookback: bool = False, coop: bool = False) -> None:
    """Tiny tiles (BLOCK_T <= 16, 64 elements; time-major: 4 x 4) so small shapes span
    several time chunks and several row programs. ``split`` also cuts every multi-chunk row
    into time segments (the two-phase path the GPU takes for long rows; with ``lookback``,
    the single-pass decoupled look-back instead, with ``coop`` the cooperative single pass,
    here its interpreter form, PHASE 5 launched twice; time-major tiles always split in two
    passes); otherwise one pass per row."""
    monkeypatch.setattr(launch, "_MAX_BLOCK_T", 16)
    monkeypatch.setattr(launch, "_TILE", 64)
    monkeypatch.setattr(launch, "_SPLIT_MIN_ELEMS", 0 if split else 1 << 62)
    monkeypatch.setattr(launch, "_TM_SPLIT_MIN_ELEMS", 0 if split else 1 << 62)
    monkeypatch.setattr(launch, "_MAX_SEGMENTS", 3)
    monkeypatch.setattr(launch, "_SPLIT_MIN_CHUNKS", 2)
    monkeypatch.setattr(launch, "_SEG_STEPS", 32)
    monkeypatch.setattr(launch, "_LOOKBACK", lookback)
    monkeypatch.setattr(launch, "_COOP", coop)
    # rows longer than the tiny _MAX_BLOCK_T stand for long rows: never one chunk a row
    monkeypatch.setattr(launch, "_ONE_CHUNK", False)
    # time-major storage takes its own tiles from one row on: 4 rows by 4 steps on 2 warps,
    # so T = 63 spans 16 chunks (and 3 segments when split; unsplit, the tiles are kept
    # however few the row programs), never the one-chunk tiles of short rows
    monkeypatch.setattr(launch, "_TM_MIN_ROWS", 1)
    monkeypatch.setattr(launch, "_TM_MIN_STEPS", 2)
    monkeypatch.setattr(launch, "_TM_SPLIT_BELOW", 1 << 30 if split else 0)
    monkeypatch.setattr(launch, "_TM_PROGRAMS_PER_SM", 1)
    monkeypatch.setattr(launch, "_TM_ONE_CHUNK_T", 0)
    monkeypatch.setattr(launch, "_TM_ROWS", 4)
    monkeypatch.setattr(launch, "_TM_STEPS", 4)
    monkeypatch.setattr(launch, "_TM_WARPS", 2)
    monkeypatch.setattr(launch, "_TM_MAX_SEGMENTS", 3)
    monkeypatch.setattr(launch, "_TM_NARROW_MIN_T", 1 << 30)  # keep _TM_ROWS
    launch.clear_caches()


def tm_coop_settings(launch) -> dict:
    """The ``launch`` settings under which every kernel form's time-major calls of 128-255
    rows of 513-1024 steps split into 128-step one-chunk segments of [8, 128] on 2 warps, as
    one cooperative pass (``launch._TM_COOP``; the time-major lanes tiles off): what
    ``tests/test_gpu.py::test_tm_coop`` and ``::test_tm_coop_graph`` force, and
    ``tests/test_backends.py::test_tm_coop_plan`` checks the plans of."""
    forms = [*launch._FORMS, "forward"]
    return {"_TM_COOP": frozenset(forms), "_TM_LANES": False,
            "_TM_SMALL_SPLIT": dict.fromkeys(forms, ((128, 256, 512, 0, 8, 2),)),
            "_TM_SMALL_LONG_ELEMS": dict.fromkeys(forms, 1 << 18)}


def plans_used(monkeypatch, launch, what=lambda pl, kw: pl) -> list:
    """Record the plan (or ``what(plan, kwargs)``, with ``kwargs`` the constexprs and launch
    options of the call's first kernel launch, as ``launch.launch_specs`` made them) of every
    launch the Triton backend makes."""
    used = []
    specs = launch.launch_specs

    def spy(kernel, lanes, T, pl, *rest):
        out = specs(kernel, lanes, T, pl, *rest)
        used.append(what(pl, out[0][0][3]))
        return out

    monkeypatch.setattr(launch, "launch_specs", spy)
    return used


def tm_long_tile_record(launch, name: str, T: int, tile: tuple[int, int]) -> tuple:
    """What ``test_tm_long_tiles`` (``tests/test_backends.py``, ``tests/test_gpu.py``) records for
    a call of estimator ``name`` on rows of T steps that takes the narrow time-major lanes tile
    ``tile`` (its steps, steps a thread): ``(tm_lanes, steps, steps a thread, rows a program,
    warps, EXACT_T)``, with EXACT_T on rows of exactly the tile's length where the kernel form
    is in ``launch._EXACT_T_TM_LANES`` or the tile is ``exact``."""
    bt, k = tile
    form = "forward" if name in ("traces", "prefix_sum") else name
    exact = T == bt and (form in launch._EXACT_T_TM_LANES or launch._TM_LANES_TILES[form][bt].exact)
    return (True, bt, k, 32, bt // k, exact)


def launches_used(monkeypatch, launch) -> list:
    """Record, for every call the Triton backend makes, its kernel launches as
    ``launch.launch_specs`` made them: a list of ``(kernel, grid, args, kwargs)`` per call
    (one launch, or the two passes of a split)."""
    used = []
    specs = launch.launch_specs

    def spy(*a, **k):
        out = specs(*a, **k)
        used.append(out[0])
        return out

    monkeypatch.setattr(launch, "launch_specs", spy)
    return used


def split_passes(used) -> list[dict]:
    """The settings of the two passes of a time split (PHASE 1 and 2) among the launches
    recorded by :func:`launches_used`."""
    return [kw for launches in used for _k, _g, _a, kw in launches if kw.get("PHASE") in (1, 2)]


def assert_same_non_finite(outs, others) -> None:
    """Two runs' outputs of a call with NaN or inf inputs, a setting on and off: the same
    non-finite elements (NaN where NaN), the others within float32 rounding of the two
    summation orders; and the poison reached some of the first output."""
    for a, b in zip(outs, others):
        assert torch.equal(a.isfinite(), b.isfinite())
        fin = a.isfinite()
        assert torch.equal(a[~fin].isnan(), b[~fin].isnan())
        assert torch.allclose(a[fin], b[fin], rtol=1e-5, atol=1e-5)
    assert not outs[0].isfinite().all()


@pytest.fixture
def small_tiles(monkeypatch, poisoned):
    """Small tiles with the time split (see :func:`use_small_tiles`)."""
    use_small_tiles(monkeypatch, poisoned, split=True)
    yield poisoned
    poisoned.clear_caches()
