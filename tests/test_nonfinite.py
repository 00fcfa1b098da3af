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

from tests.conftest import INTERPRET, use_small_tiles
from tests.rollouts import ESTIMATORS, Case, make_case, tolerance

# SPEC.md writes TD(lambda)'s and discounted returns' cut as a choice (X_t = nv_t at done_t),
# so a non-finite G_{t+1} does not reach G_t there; the torch and Triton backends scan
# x -> a + b x with b = 0 at the cut, and 0 * NaN = NaN carries it into the earlier episode
KNOWN_LEAK = ("td_lambda", "discounted_returns")
# Retrace's action form runs LAGGED by default (launch._RETRACE_LAGGED): D_t from
# H_{t+1} = v_{t+1} + c_{t+1} D_{t+1} with the episode ends as selects, a different algebra
# from section 3's, so its NaN/inf pattern differs; the direct form is tested here
DIRECT_ONLY = ("retrace_av",)


def _poisoned_inputs(name: str) -> Case:
    case = make_case(name, (4, 23), seed=41)
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in case.args]
    x = args[0]
    x[0, 7] = float("nan")
    x[1, 3] = float("inf")
    if name in ("vtrace", "retrace"):
        args[-1][2, 10] = float("nan")  # a log-ratio
    if name == "retrace_av":
        args[4][2, 10] = float("nan")  # a behaviour log-probability
    return Case(case.name, tuple(args), case.kwargs, case.T)


def _same_nonfinite(out: torch.Tensor, ref: torch.Tensor, case: Case, what: str) -> None:
    out, ref = out.double().cpu(), ref.double().cpu()
    for kind, f in (("NaN", torch.isnan), ("+inf", torch.isposinf), ("-inf", torch.isneginf)):
        diff = (f(out) != f(ref)).nonzero().tolist()
        assert not diff, f"{what}: {kind} at {diff[:5]} in one of output / reference only"
    fin = torch.isfinite(ref)
    err = float((out[fin] - ref[fin]).abs().max()) if fin.any() else 0.0
    assert err <= tolerance(case.T, ref[fin], torch.float32), f"{what}: max abs error {err:.3g}"


def _backends() -> list[str]:
    return ["torch", "triton"] if INTERPRET else ["torch"]


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason="known deviation: the affine scan carries "
                                            "0 * NaN across TD(lambda)'s cut")) if n in KNOWN_LEAK else n
    for n in ESTIMATORS
])
def test_nonfinite_inputs_pass_through(name, monkeypatch, poisoned):
    if name in DIRECT_ONLY:
        monkeypatch.setattr(poisoned, "_RETRACE_LAGGED", frozenset())
    case = _poisoned_inputs(name)
    ref = case(backend="reference")
    assert any(torch.isnan(r).any() for r in ref), "the case must produce a NaN somewhere"
    for backend in _backends():
        for split in (False, True):
            if backend == "triton":
                use_small_tiles(monkeypatch, poisoned, split=split)
            elif split:
                continue
            out = case(backend=backend)
            for i, (o, r) in enumerate(zip(out, ref)):
                _same_nonfinite(o, r, case, f"{name}[{i}] {backend} split={split}")
    poisoned.clear_caches()


@pytest.mark.xfail(strict=True, reason="known deviation: the lagged action form's algebra (DIRECT_ONLY above)")
def test_nonfinite_retrace_action_form_lagged(poisoned):
    if not INTERPRET:
        pytest.skip("needs TRITON_INTERPRET=1")
    case = _poisoned_inputs("retrace_av")
    ref = case(backend="reference")
    for i, (o, r) in enumerate(zip(case(backend="triton"), ref)):
        _same_nonfinite(o, r, case, f"retrace_av[{i}] lagged")
