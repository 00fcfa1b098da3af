"""The compiled replay of repeated calls (``rltriton.kernels.native``).

On the CPU (CI): the C++ source compiles against the installed torch and its table behaves
(declines CPU tensors, pickles empty). With ``-m gpu`` (the H200): repeated calls of every
estimator are served by it, batch- and time-major, time splits with their scratch buffers
too, each call's outputs NaN-poisoned and checked against the float64 reference; it
declines to the Python path where that path must decide (a misaligned view, a launch hook,
replays forgotten by ``launch.clear_caches``); it launches on the current stream; an
estimator object keeps one entry per signature.
"""

from __future__ import annotations

import copy
import pickle

import pytest
import torch

from rltriton.kernels import launch, native
from tests.rollouts import ESTIMATORS, Case, assert_matches, make_case, misaligned, on_gpu, to_time_major


@pytest.fixture(scope="module")
def built():
    """The compiled module's path (built once into the cache when missing: ~20-40 s)."""
    try:
        return native.build()
    except RuntimeError as e:  # no C++ compiler on this machine
        pytest.skip(str(e))


def test_source_compiles_and_table_declines_cpu(built):
    """The source compiles against this torch; a table declines what is not a CUDA call and
    copies and pickles as an empty table."""
    mod = native.import_built(built)
    table = mod.Table()
    x = torch.zeros(3, 4)
    assert len(table) == 0
    assert table.call((x, x, None), None, None) is None  # empty: a miss
    assert table.add((x, x, None), None, None, [], []) is False  # CPU tensors: never armed
    assert table.add((x, 1.5), None, None, [], []) is False  # not a tensor
    with pytest.raises(TypeError, match="expected"):
        table.call([x], None, None)
    with pytest.raises(TypeError, match="result is None, 1 or a tuple subclass"):
        table.call((x,), None, None, "named")
    assert len(pickle.loads(pickle.dumps(table))) == 0
    assert len(copy.deepcopy(table)) == 0
    assert mod.param_sizes(0) in (None, [])  # no function at address 0


def test_off_by_environment(monkeypatch):
    """``RLTRITON_NATIVE=0`` keeps every call on the Python replay."""
    monkeypatch.setattr(native, "_tried", False)
    monkeypatch.setattr(native, "_module", None)
    monkeypatch.setenv("RLTRITON_NATIVE", "0")
    assert native.load() is None


def _fresh_load(monkeypatch, tmp_path, mode: str | None) -> None:
    """Make the next ``native.load()`` start over, with CUDA reported present and an empty
    cache directory."""
    monkeypatch.setattr(native, "_tried", False)
    monkeypatch.setattr(native, "_module", None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("RLTRITON_CACHE_DIR", str(tmp_path))
    if mode is None:
        monkeypatch.delenv("RLTRITON_NATIVE", raising=False)
    else:
        monkeypatch.setenv("RLTRITON_NATIVE", mode)


def test_build_failure_warns_once(monkeypatch, tmp_path):
    """By default a missing module is built on first use; where that fails (here: no such
    compiler) the load warns once and every call takes the Python replay."""
    import warnings

    _fresh_load(monkeypatch, tmp_path, None)
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    with pytest.warns(RuntimeWarning, match="compiled replay of repeated calls is not available"):
        assert native.load() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert native.load() is None  # tried once a process: no second build, no second warning
    assert not native.module_path().exists()


def test_prebuilt_only_loads(monkeypatch, tmp_path):
    """``RLTRITON_NATIVE=prebuilt`` never compiles: with nothing built, nothing loads."""
    import warnings

    _fresh_load(monkeypatch, tmp_path, "prebuilt")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert native.load() is None
    assert not any(tmp_path.iterdir())


# --- GPU ------------------------------------------------------------------------------------


@pytest.fixture
def loaded(built, poisoned, monkeypatch):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    if native.loaded() is None:
        monkeypatch.setattr(native, "_tried", False)
        monkeypatch.delenv("RLTRITON_NATIVE", raising=False)
        assert native.load() is not None
    native.set_poison(True)
    launch.clear_caches()
    yield native.loaded()
    launch.clear_caches()


def _forbid_python_replay(monkeypatch) -> None:
    """From here on a call the compiled replay does not serve fails the test."""

    def boom(self, tensors):
        raise AssertionError("the Python replay ran: the compiled replay did not serve the call")

    monkeypatch.setattr(launch.Replay, "__call__", boom)


def _check(case: Case, ref: tuple, what: str, time_major: bool) -> type:
    """Call ``case`` and compare with ``ref``; returns the type the call returned."""
    raw = case.fn()(*case.args, **{**case.kwargs, "backend": "triton"})
    out = tuple(raw) if isinstance(raw, tuple) else (raw,)
    for i, (o, r) in enumerate(zip(out, ref)):
        assert o.is_cuda
        got = o.movedim(0, -1) if time_major else o
        assert_matches(got.cpu(), r.cpu(), case, f"{what}[{i}]")
    return type(raw)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["batch-major", "time-major"])
@pytest.mark.parametrize("shape", [(300, 77), (32768, 8), (4096, 64), (5, 3)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name", ESTIMATORS)
def test_serves_repeated_calls(name, shape, layout, loaded, monkeypatch):
    """Calls 1-2 record and arm; calls 3-5 (fresh inputs each time) must come from the
    compiled replay, poisoned outputs, each against the float64 reference."""
    tm = layout == "time-major"
    # even seeds: prefix sums take their boundary from the seed's parity (one instance)
    for seed in range(0, 10, 2):
        if seed == 4:
            _forbid_python_replay(monkeypatch)
        case = make_case(name, shape, seed=seed)
        ref = case(backend="reference")
        g = on_gpu(to_time_major(case) if tm else case)
        kind = _check(g, ref, f"{name} {shape} {layout} call {seed}", tm)
        if seed == 0:
            first = kind
        assert kind is first, f"the compiled replay returned {kind}, the Python path {first}"
    assert first is not tuple  # a named result, or the one output tensor


# the calls of test_serves_time_split, each split in time on the H200 under
# time_split_settings (tests/test_gpu_plans.py::test_native_time_split_plans checks that on the CPU)
TIME_SPLIT_CASES = [("time-major", (512, 512)), ("time-major", (300, 1000)), ("batch-major", (4, 65536))]


def time_split_settings(monkeypatch) -> None:
    """The launcher's settings under which TIME_SPLIT_CASES split: since session 48 TD(lambda)'s
    kernel runs whole time-major 512-step rows of a call of 2^18 elements in one pass
    (launch._TM_SMALL_LONG_ELEMS), and since session 59 every form but Retrace's runs whole
    512-step rows of calls of few rows on tiles of 8 or 16 rows (launch._TM_SUB_TILES), so both
    are off."""
    monkeypatch.setattr(launch, "_TM_SMALL_LONG_ELEMS", {})
    monkeypatch.setattr(launch, "_TM_SUB", False)


@pytest.mark.gpu
@pytest.mark.parametrize("layout,shape", TIME_SPLIT_CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("pdl", [False, True, "late"], ids=["plain", "pdl", "pdl-late"])
def test_serves_time_split(name, layout, shape, pdl, loaded, monkeypatch):
    """A time split (two launches and two scratch buffers of segment summaries, which the
    table makes per call) is served by the compiled replay too: time-major rows of 512 and
    1000 steps (the time-major tiles' two passes) and 4 batch-major rows of 65536 steps; calls
    3-5 (fresh inputs each time) must come from it, poisoned outputs, against the float64
    reference. ``pdl``: launch._PDL on and off (PHASE 2 through cuLaunchKernelEx with the
    programmatic stream serialisation attribute), and on with launch._PDL_LATE."""
    from tests.conftest import plans_used

    if pdl and torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("programmatic dependent launch needs sm_90")
    monkeypatch.setattr(launch, "_PDL", bool(pdl))
    monkeypatch.setattr(launch, "_PDL_LATE", pdl == "late")
    time_split_settings(monkeypatch)
    launch.clear_caches()
    tm = layout == "time-major"
    seen = plans_used(monkeypatch, launch, lambda pl, kw: pl.segments)
    for seed in range(0, 10, 2):  # even seeds: one prefix-sum instance (make_case)
        if seed == 4:
            assert seen and seen[-1] > 1, f"{name} {shape} {layout}: no time split ({seen})"
            _forbid_python_replay(monkeypatch)
        case = make_case(name, shape, seed=seed)
        ref = case(backend="reference")
        g = on_gpu(to_time_major(case) if tm else case)
        _check(g, ref, f"{name} {shape} {layout} split call {seed}", tm)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ESTIMATORS)
def test_declines_to_python(name, loaded, monkeypatch):
    """The compiled replay hands these calls to the Python path: a view whose base address
    is not 16-byte aligned (the kernel was specialised aligned), a call while a Triton launch
    hook is set (the hook sees it), and an entry armed before ``launch.clear_caches()``."""
    import triton

    shape = (300, 77)
    for seed in (0, 2, 4):  # even seeds: one prefix-sum instance (make_case)
        case = on_gpu(make_case(name, shape, seed=seed))
        _check(case, case(backend="reference"), f"{name} arm {seed}", False)

    calls = []
    real = launch.Replay.__call__

    def counted(self, tensors):
        calls.append(1)
        return real(self, tensors)

    monkeypatch.setattr(launch.Replay, "__call__", counted)

    odd = misaligned(on_gpu(make_case(name, shape, seed=10)))
    _check(odd, odd(backend="reference"), f"{name} misaligned", False)
    assert calls, "a misaligned call was not handed to the Python replay"

    calls.clear()
    seen = []
    knobs = triton.knobs.runtime
    old = knobs.launch_enter_hook
    knobs.launch_enter_hook = lambda meta: seen.append(1)
    try:
        case = on_gpu(make_case(name, shape, seed=12))
        _check(case, case(backend="reference"), f"{name} hook", False)
    finally:
        knobs.launch_enter_hook = old
    assert calls and seen, "a call with a launch hook set was not handed to the Python path"

    calls.clear()
    case = on_gpu(make_case(name, shape, seed=14))
    _check(case, case(backend="reference"), f"{name} served", False)
    assert not calls, "an aligned call with no hook was not served by the compiled replay"
    launch.clear_caches()
    case = on_gpu(make_case(name, shape, seed=16))
    _check(case, case(backend="reference"), f"{name} after clear_caches", False)
    assert not calls  # forgotten by both: this call records afresh, no replay of either kind


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["gae", "vtrace", "retrace_av"])
def test_current_stream(name, loaded):
    """The launch goes on the current stream: inputs written on a side stream just before
    the call (behind a long sleep there) are the ones the kernel reads."""
    shape = (4096, 32)
    for seed in range(3):
        case = on_gpu(make_case(name, shape, seed=seed))
        _check(case, case(backend="reference"), f"{name} arm {seed}", False)
    new = make_case(name, shape, seed=20)
    ref = new(backend="reference")
    g = on_gpu(make_case(name, shape, seed=21))  # stale inputs of the same signature
    src = on_gpu(new)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(20_000_000)  # ~10 ms: a kernel on the wrong stream would read stale data
        for a, b in zip(g.args, src.args):
            if isinstance(a, torch.Tensor):
                a.copy_(b)
        for k, v in g.kwargs.items():
            if isinstance(v, torch.Tensor):
                v.copy_(src.kwargs[k])
        out = g(backend="triton")
    side.synchronize()
    for i, (o, r) in enumerate(zip(out, ref)):
        assert_matches(o.cpu(), r.cpu(), g, f"{name} side stream[{i}]")


@pytest.mark.gpu
def test_estimator_instance(loaded, monkeypatch):
    """An estimator object (not the functional API) arms its own table, one entry per
    signature; batch- and time-major calls of it are two signatures, both served."""
    import rltriton as rt

    est = rt.GAE(0.97, 0.9)  # make_case's gamma and lam
    shape = (300, 77)

    def run(seed, tm):
        case = make_case("gae", shape, seed=seed)
        ref = case(backend="reference")
        g = on_gpu(to_time_major(case) if tm else case)
        kw = {k: x for k, x in g.kwargs.items() if k not in ("gamma", "lam")}
        out = est(*g.args, **kw)
        for i, (o, x) in enumerate(zip(out, ref)):
            assert_matches((o.movedim(0, -1) if tm else o).cpu(), x.cpu(), case, f"instance {seed} {tm}[{i}]")

    for seed in range(2):
        run(seed, False)
        run(seed, True)
    assert est._native is not None and len(est._native) == 2
    _forbid_python_replay(monkeypatch)
    for seed in range(2, 4):
        run(seed, False)
        run(seed, True)
