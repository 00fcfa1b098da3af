"""Timing utilities and the streaming floor shared by the benchmark scripts.

Method (BENCHMARKS.md): candidates are timed in one process, interleaved; two figures:

* full call: CUDA events around one Python call after a synchronize, median over
  ``calls`` calls per trial, minimum over ``trials`` trials, after 20 warm-up calls;
* device: ``graph_calls`` calls captured in one CUDA graph, replayed; time per call is
  the median replay time divided by ``graph_calls``.

The floor is a streaming Triton kernel that reads every per-step input and writes every
output of the estimator once (no scan): the bytes an estimator cannot avoid moving.
"""

from __future__ import annotations

import statistics
import warnings
from collections.abc import Callable

import torch
import triton
import triton.language as tl

_MAX_IN = 8  # inputs one launch of the stream kernel reads


@triton.jit
def _stream_kernel(i0, i1, i2, i3, i4, i5, i6, i7, o0, o1, n, N_IN: tl.constexpr, N_OUT: tl.constexpr,
                   BLOCK: tl.constexpr):
    """Reads ``N_IN`` inputs and writes their sum to ``N_OUT`` outputs (1-2); with
    ``N_OUT = 0`` it only reads: it stores where the sum is NaN (never, for finite inputs),
    so the loads stay and no bytes are written."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    acc = tl.load(i0 + offs, mask=m, other=0).to(tl.float32)
    if N_IN > 1:
        acc += tl.load(i1 + offs, mask=m, other=0).to(tl.float32)
    if N_IN > 2:
        acc += tl.load(i2 + offs, mask=m, other=0).to(tl.float32)
    if N_IN > 3:
        acc += tl.load(i3 + offs, mask=m, other=0).to(tl.float32)
    if N_IN > 4:
        acc += tl.load(i4 + offs, mask=m, other=0).to(tl.float32)
    if N_IN > 5:
        acc += tl.load(i5 + offs, mask=m, other=0).to(tl.float32)
    if N_IN > 6:
        acc += tl.load(i6 + offs, mask=m, other=0).to(tl.float32)
    if N_IN > 7:
        acc += tl.load(i7 + offs, mask=m, other=0).to(tl.float32)
    if N_OUT == 0:
        tl.store(o0 + offs, acc, mask=m & (acc != acc))
    else:
        tl.store(o0 + offs, acc, mask=m)
    if N_OUT > 1:
        tl.store(o1 + offs, acc * 2.0, mask=m)


def stream_floor(inputs: list[torch.Tensor], outputs: list[torch.Tensor]) -> Callable[[], None]:
    """A call that streams ``inputs`` (same numel, any number) into ``outputs`` (1-2): one
    launch per 8 inputs, the first writing the outputs, any further one only reading (the
    action form of Retrace with truncations reads 10)."""
    ins = [x.reshape(-1) for x in inputs]
    outs = [x.reshape(-1) for x in outputs]
    n = ins[0].numel()
    assert ins and all(x.numel() == n for x in ins + outs) and 1 <= len(outs) <= 2
    groups = [ins[k:k + _MAX_IN] for k in range(0, len(ins), _MAX_IN)]
    pad_out = outs + [outs[0]] * (2 - len(outs))
    launches = [(g + [g[0]] * (_MAX_IN - len(g)), len(g), len(outs) if k == 0 else 0) for k, g in enumerate(groups)]
    block = 2048
    grid = (triton.cdiv(n, block),)

    def run() -> None:
        for pad_in, n_in, n_out in launches:
            _stream_kernel[grid](*pad_in, *pad_out, n, N_IN=n_in, N_OUT=n_out, BLOCK=block, num_warps=8)

    return run


def per_step_inputs(tensors: list[object], shape: tuple[int, int]) -> list[torch.Tensor]:
    """The tensors among ``tensors`` that an estimator reads per step, as ``[N, T]`` tensors
    for :func:`stream_floor`: ``[N, T]`` ones as they are, and an ``[N, T, A]`` one (A even:
    the action form's action values and probabilities) as A/2 float64 copies of its bytes
    (made once, outside the timing), so the floor moves those bytes too."""
    out = []
    for x in tensors:
        if not isinstance(x, torch.Tensor):
            continue
        if tuple(x.shape) == tuple(shape):
            out.append(x)
        elif x.dim() == 3 and tuple(x.shape[:2]) == tuple(shape) and x.shape[2] % 2 == 0 and x.element_size() == 4:
            wide = x.contiguous().view(torch.float64)
            out.extend(wide[..., i].contiguous() for i in range(wide.shape[-1]))
    return out


def estimator_plan(name: str, shape: tuple[int, int], time_major: bool = False, plan_for=None,
                   device: str = "cuda"):
    """The plan the launcher takes for one call of estimator ``name`` (a ``tests.rollouts``
    name, terminations as flags, seed 0: the case ``sweep.py`` and ``ncu_case.py`` time) at
    ``shape`` ([R, T]; stored [T, R] with ``time_major``) on ``device``: the call is made with
    ``launch.plan_for`` (or ``plan_for``, e.g. the original of a monkeypatched one) wrapped to
    record its answer and stop the call there, so no kernel runs and the plan is the one
    ``run_backward``/``run_forward`` ask for with every argument they pass (the short tiles,
    wide lanes and time-major edge bounds of TD(lambda)'s kernel among them). The replay cache
    is cleared before and after (a replayed call asks for no plan)."""
    from rltriton.kernels import launch
    from tests.rollouts import make_case, on_gpu

    class _Stop(Exception):
        pass

    inner = plan_for or launch.plan_for
    got: list = []

    def spy(*a, **k):
        got.append(inner(*a, **k))
        raise _Stop

    case = make_case(name, shape, flags="terminated", seed=0, time_major=time_major)
    if torch.device(device).type == "cuda":
        case = on_gpu(case)
    saved = launch.plan_for
    launch.plan_for = spy
    launch.clear_caches()
    try:
        case(backend="triton")
    except _Stop:
        pass
    finally:
        launch.plan_for = saved
        launch.clear_caches()
    if not got:
        raise RuntimeError(f"{name} {shape}: the call asked for no plan")
    return got[0]


def apply_launch_settings(settings: list[str], time_major: bool = False):
    """Set ``rltriton.kernels.launch`` settings from ``NAME=VALUE`` arguments (a Python
    literal, or ``frozenset(...)`` of one for the form-set settings such as ``_MAP_REDUCE``),
    and force ``plan=BN,BT,WARPS,SEGMENTS,SEG_LEN[,STAGES]`` (on the storage's tiles:
    time-major ones with ``time_major``), or ``tmplan=BN,BT,WARPS[,SEGMENTS]`` (a time-major
    lanes tile, one chunk a segment), as ``launch.plan_for``'s answer. Returns the forced
    plan, or None. Used by the scripts that profile one call (``ncu_case.py``,
    ``phase_times.py``, ``profile_kernels.py``)."""
    import ast

    from rltriton.kernels import launch

    forced = None
    for setting in settings:
        key, value = setting.split("=", 1)
        if key == "plan":
            f = [int(x) for x in value.split(",")]
            forced = launch.Plan(*f[:5], False, time_major, f[5] if len(f) > 5 else 1)
        elif key == "tmplan":
            # a time-major lanes tile (launch.Plan's tm_lanes): BN rows of BT steps on WARPS
            # warps, one chunk a segment of SEGMENTS (default 1: whole rows of BT steps)
            bn, bt, warps, *segs = (int(x) for x in value.split(","))
            forced = launch.Plan(bn, bt, warps, segs[0] if segs else 1, bt, False, True, tm_lanes=True)
        elif value.startswith("frozenset(") and value.endswith(")"):
            setattr(launch, key, frozenset(ast.literal_eval(value[len("frozenset("):-1] or "()")))
        else:
            setattr(launch, key, ast.literal_eval(value))
    if forced is not None:
        launch.plan_for = lambda *a, _p=forced, **k: _p
    return forced


def device_time_us(fn: Callable[[], object], graph_calls: int = 50, replays: int = 10) -> float:
    """Per-call device time from a CUDA graph of ``graph_calls`` calls (median replay). Raises
    RuntimeError when the capture recorded nothing (``run.py`` then reports no device figure)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with torch.cuda.graph(g):
            for _ in range(graph_calls):
                fn()
    if any("graph is empty" in str(w.message).lower() for w in caught):
        # the call launched its kernels outside the capture stream (e.g. on the legacy default
        # stream, as PufferLib's op does): a replay would time nothing
        raise RuntimeError("CUDA-graph capture recorded no kernel: the call does not launch on the current stream")
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / graph_calls)
    return statistics.median(times)


def full_call_us(fn: Callable[[], object], calls: int = 50, trials: int = 5, warmup: int = 20) -> float:
    """Full-call time: events around one call after a synchronize; median per trial, min over trials."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(trials):
        ts = []
        for _ in range(calls):
            torch.cuda.synchronize()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1e3)
        best = min(best, statistics.median(ts))
    return best


def perf_counter_us(fn: Callable[[], object], calls: int = 20, trials: int = 3, warmup: int = 2) -> float:
    """CPU stand-in for :func:`full_call_us` (``--smoke``): wall time of one call, median per
    trial, minimum over trials. Synchronises CUDA around each call when CUDA is in use."""
    import time

    sync = torch.cuda.synchronize if torch.cuda.is_available() and torch.cuda.is_initialized() else (lambda: None)
    for _ in range(warmup):
        fn()
    sync()
    best = float("inf")
    for _ in range(trials):
        ts = []
        for _ in range(calls):
            a = time.perf_counter()
            fn()
            sync()
            ts.append((time.perf_counter() - a) * 1e6)
        best = min(best, statistics.median(ts))
    return best


def bare_launch(fn: Callable[[], object]) -> Callable[[], None]:
    """A closure re-issuing the Triton kernel launches of one call of ``fn`` (an rltriton
    call on the Triton backend) straight through ``kernel[grid](*args, **constexprs)``,
    with the arguments that call recorded (scratch buffers of a time split included, made
    once): the "bare Triton launch of the same kernel" of BENCHMARKS.md's full-call goal.
    Replays are cleared first, so the call goes through ``launch._launch``."""
    from rltriton.kernels import launch

    recorded = []
    orig = launch._launch

    def record(kernel, lanes, T, pl, args, meta, dtype, device):
        recorded.append(launch.launch_specs(kernel, lanes, T, pl, list(args), dict(meta), dtype, device)[0])
        return orig(kernel, lanes, T, pl, args, meta, dtype, device)

    launch.clear_caches()
    launch._launch = record
    try:
        fn()
    finally:
        launch._launch = orig
    if len(recorded) != 1:
        raise RuntimeError(f"bare_launch: expected one launch record, got {len(recorded)}")
    specs = recorded[0]

    def bare() -> None:
        for kernel, grid, args, kw in specs:
            kernel[grid](*args, **kw)

    return bare

