"""Property tests: ``backend="torch"`` against the float64 oracle ``rt.reference`` on
hypothesis-drawn rollouts, for every estimator.

Drawn: batch shape ([T], [N, T] or [N, 2, T] with N in 1..6), T in 1..70 (both sides of the
torch backend's switch from a sequential to a chunked scan at T = 64), termination and
truncation densities from none to every step, the flag dtype, the bootstrap form of SPEC.md
section 2, float or per-step gamma/lam (including gamma/lam of exactly 0 and 1, and per-step
zeros), clip thresholds below and above 1, feature dims for the forward estimators,
time-major layout, and float32/float64 inputs.

The tolerance is ``tests.rollouts.tolerance`` (via ``assert_matches``): a float32 (float64)
computation over T steps against the float64 oracle, ``8 (T + 8) eps (max|ref| + 4)``; see
its docstring. ``derandomize=True`` makes the examples the same on every run (CI is
deterministic); hypothesis' example database is not used.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rltriton import reference
from tests.rollouts import BOOTSTRAP_FORMS, ESTIMATORS, Case, assert_matches, make_case, to_time_major

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

ORACLE = {
    "gae": reference.gae,
    "td_lambda": reference.td_lambda,
    "discounted_returns": reference.discounted_returns,
    "vtrace": reference.vtrace,
    "retrace": reference.retrace,
    "retrace_av": reference.retrace_from_action_values,
    "traces": reference.eligibility_traces,
    "prefix_sum": reference.episodic_prefix_sum,
}
FORWARD = ("traces", "prefix_sum")
DENSITIES = (0.0, 0.05, 0.15, 0.5, 1.0)
UNIT = (0.0, 0.5, 0.9, 0.99, 1.0)


def _redraw_flags(case: Case, shape: tuple[int, ...], p_term: float, p_trunc: float, gen, flag_dtype) -> Case:
    """Replace the flags of ``case`` by ones of the drawn densities (a step is terminated or
    truncated, not both, as Gymnasium reports; forward estimators get dones of density p_term)."""
    term = torch.rand(shape, generator=gen) < p_term
    trunc = (torch.rand(shape, generator=gen) < p_trunc) & ~term
    as_flag = lambda f: f.to(flag_dtype)  # noqa: E731
    args, kwargs = case.args, dict(case.kwargs)
    if case.name == "prefix_sum":
        args = (args[0], as_flag(term))
    elif case.name == "traces":
        if "dones" in kwargs or p_term > 0:
            kwargs["dones"] = as_flag(term)
    else:
        for name, f, p in (("terminated", term, p_term), ("truncated", trunc, p_trunc)):
            if p > 0 or name in kwargs:
                kwargs[name] = as_flag(f)
    return Case(case.name, args, kwargs)


def _unbatch(case: Case) -> Case:
    """The only row of a ``[1, T]`` case as a ``[T]`` problem (``last_value`` 0-d)."""
    f = lambda x: x[0] if isinstance(x, torch.Tensor) else x  # noqa: E731
    return Case(case.name, tuple(f(a) for a in case.args), {k: f(v) for k, v in case.kwargs.items()})


@st.composite
def cases(draw: st.DrawFn, name: str) -> tuple[Case, Case, tuple[int, ...], int]:
    """A drawn case for the torch backend, the same problem in the oracle's time-last layout
    (with ``n_feature_dims``), the [*B, T] shape and the number of feature dims."""
    N = draw(st.integers(1, 6))
    # half the draws past T = 64, where the torch backend switches to its chunked scan
    T = draw(st.one_of(st.integers(1, 64), st.integers(65, 70)))
    batch = draw(st.sampled_from(((), (N,), (N, 2))))
    shape = (*batch, T)
    dtype = draw(st.sampled_from((torch.float32, torch.float64)))
    bootstrap = draw(st.sampled_from(BOOTSTRAP_FORMS))
    per_step = draw(st.booleans())
    gamma = draw(st.sampled_from(UNIT))
    lam = draw(st.sampled_from(UNIT))
    seed = draw(st.integers(0, 2**31 - 1))
    n_features = draw(st.sampled_from(((), (3,), (2, 2)))) if name in FORWARD else ()
    case = make_case(
        name, shape if batch else (1, T), bootstrap=bootstrap, dtype=dtype, per_step=per_step, gamma=gamma,
        lam=lam, seed=seed, n_features=n_features,
    )
    if not batch:  # an unbatched [T] row: make_case draws [*B] tensors with B non-empty only
        case = _unbatch(case)
    gen = torch.Generator().manual_seed(seed ^ 0x5EED)
    p_term = draw(st.sampled_from(DENSITIES))
    p_trunc = draw(st.sampled_from(DENSITIES))
    flag_dtype = draw(st.sampled_from((torch.bool, torch.int32, torch.float32)))
    case = _redraw_flags(case, shape, p_term, p_trunc, gen, flag_dtype)
    kw = dict(case.kwargs)
    if per_step and name != "prefix_sum" and draw(st.booleans()):
        g = kw["gamma"]
        kw["gamma"] = torch.where(torch.rand(shape, generator=gen) < 0.1, torch.zeros_like(g), g)
    if name == "vtrace":
        kw["rho_bar"] = draw(st.sampled_from((0.5, 1.0, 2.0)))
        kw["c_bar"] = draw(st.sampled_from((0.5, 1.0, 2.0)))
        kw["pg_rho_bar"] = draw(st.sampled_from((None, 0.8, 1.5)))
    if name in ("retrace", "retrace_av"):
        kw["c_bar"] = draw(st.sampled_from((0.5, 1.0, 2.0)))
    case = Case(name, case.args, kw)
    oracle = Case(name, case.args, {**kw, "n_feature_dims": len(n_features)} if name in FORWARD else kw)
    if len(shape) > 1 and draw(st.booleans()):
        case = to_time_major(case)  # contiguous [T, *B] storage, time_dim=0
    return case, oracle, shape, len(n_features)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_torch_backend_matches_reference(name: str) -> None:
    @SETTINGS
    @given(cases(name))
    def prop(drawn: tuple[Case, Case, tuple[int, ...], int]) -> None:
        case, oracle, shape, n_feat = drawn
        outs = case(backend="torch")
        refs = ORACLE[name](*oracle.args, **oracle.kwargs)
        refs = tuple(refs) if isinstance(refs, tuple) else (refs,)
        assert len(outs) == len(refs)
        nb = len(shape) - 1
        for i, (out, ref) in enumerate(zip(outs, refs)):
            if case.kwargs.get("time_dim") == 0:
                out = out.movedim(0, nb)
            # assert_matches reads T from the last axis: put time last (features before it)
            if n_feat:
                out, ref = out.movedim(nb, -1), ref.movedim(nb, -1)
            assert_matches(out, ref, case, f"{name} output {i}")

    prop()
