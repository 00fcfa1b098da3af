"""Mathematical identities between the estimators (SPEC.md sections 1-3), on random rollouts.

Every identity is checked for ``backend="torch"`` and ``backend="reference"`` on randn
rewards/values (never zeros), with terminations and truncations drawn at random, on a short
row (T = 23: the torch backend's plain sequential scan) and a long one (T = 90: its chunked
scan, sqrt(T)-sized chunks plus a carry fix-up).

Tolerances
----------
``tests.rollouts.tolerance`` bounds how far ONE float32 (float64) computation may be from
the exact value of its output: a sum of at most T terms, each a product of up to T
coefficients, so a relative error of a few T * eps on the sum of magnitudes, bounded by
``8 (T + 8) eps (max|out| + 4)``. Most identities here compare two such computations of the
same exact quantity (e.g. GAE advantages + values against TD(lambda) returns, both computed in
float32), so by the triangle inequality they may differ by twice that bound
(:func:`_close`, ``sides=2``). An identity against a float64 loop written in this file has
one float32 side only (``sides=1``). Nothing is loosened beyond that.

Where an output must not change at all (steps before a cut do not depend on anything after
it), equality is exact: the dependence is through a factor that is exactly 0.0, and
``0.0 * finite == 0.0`` and ``a + 0.0 == a`` hold exactly in IEEE arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import rltriton as rt
from tests.rollouts import BOOTSTRAP_FORMS, Case, make_case, tolerance

F64 = torch.float64
BACKENDS = ("torch", "reference")
SHAPES = ((4, 23), (3, 90))  # sequential torch scan (T <= 64) and the chunked one
DTYPES = (torch.float32, torch.float64)
BACKWARD = ("gae", "td_lambda", "discounted_returns", "vtrace", "retrace", "retrace_av")
FORWARD = ("traces", "prefix_sum")
ALL = BACKWARD + FORWARD
# exactly representable in binary, so a float gamma and a float32 gamma tensor hold the same number
GAMMA, LAM = 0.9375, 0.875

# names of the positional arguments of each estimator (to know what a tensor means)
ARG_NAMES = {
    "gae": ("rewards", "values"),
    "td_lambda": ("rewards", "values"),
    "discounted_returns": ("rewards",),
    "vtrace": ("rewards", "values", "log_rhos"),
    "retrace": ("rewards", "q_values", "state_values", "log_rhos"),
    "retrace_av": ("rewards", "action_values", "target_probs", "actions", "behavior_log_probs"),
    "traces": ("x",),
    "prefix_sum": ("x", "dones"),
}
ROW_KEYS = ("last_value", "initial")  # [*B] / [*B, *F]: no time axis


# --------------------------------------------------------------------------- helpers


def _atol(expected: torch.Tensor, dtype: torch.dtype, T: int) -> float:
    """``tests.rollouts.tolerance`` for an output of a length-T row."""
    return tolerance(T, expected.double(), dtype)


def _close(out: torch.Tensor, expected: torch.Tensor, what: str = "", *, sides: int = 2, T: int | None = None) -> None:
    """``out`` and ``expected`` approximate the same exact quantity; ``sides`` of them carry
    float32 (float64) rounding of a computation over a row of T steps (default: the last axis),
    each within ``tolerance`` of the exact value (module docstring)."""
    assert out.shape == expected.shape, f"{what}: shape {tuple(out.shape)} vs {tuple(expected.shape)}"
    assert torch.isfinite(out).all(), f"{what}: non-finite output"
    dtype = torch.float32 if torch.float32 in (out.dtype, expected.dtype) else F64
    atol = sides * _atol(expected, dtype, expected.shape[-1] if T is None else T)
    err = float((out.double() - expected.double()).abs().max()) if out.numel() else 0.0
    assert err <= atol, f"{what}: max abs error {err:.3g} > {atol:.3g}"


def _outs(case: Case, backend: str, **overrides: Any) -> tuple[torch.Tensor, ...]:
    return case(backend=backend, **overrides)


def _flag(x: torch.Tensor | None, like: torch.Tensor) -> torch.Tensor:
    """Flags as float64 0/1."""
    if x is None:
        return torch.zeros(like.shape, dtype=F64)
    return (x != 0).to(F64)


def _coef(c: float | torch.Tensor, shape: torch.Size) -> torch.Tensor:
    if isinstance(c, torch.Tensor):
        return c.to(F64).expand(shape)
    return torch.full(shape, float(c), dtype=F64)


def _map_time(case: Case, nb: int, T: int, fn: Callable[[str, torch.Tensor], torch.Tensor]) -> Case:
    """Apply ``fn(name, tensor)`` to every tensor of ``case`` with a time axis at ``nb``."""

    def f(name: str, x: Any) -> Any:
        if name in ROW_KEYS or not isinstance(x, torch.Tensor) or x.dim() <= nb or x.shape[nb] != T:
            return x
        return fn(name, x)

    args = tuple(f(n, a) for n, a in zip(ARG_NAMES[case.name], case.args))
    kwargs = {k: f(k, v) for k, v in case.kwargs.items()}
    return Case(case.name, args, kwargs)


def _slice(case: Case, nb: int, T: int, sl: slice, **set_kwargs: Any) -> Case:
    """The steps ``sl`` of every per-step tensor; ``set_kwargs`` replace (None: drop) keywords."""
    out = _map_time(case, nb, T, lambda _n, x: x[(slice(None),) * nb + (sl,)])
    for k, v in set_kwargs.items():
        if v is None:
            out.kwargs.pop(k, None)
        else:
            out.kwargs[k] = v
    return out


def _set_flag(case: Case, name: str, value: torch.Tensor) -> Case:
    """Replace a flag tensor (``dones`` of prefix sums is positional)."""
    if case.name == "prefix_sum" and name == "dones":
        return Case(case.name, (case.args[0], value), dict(case.kwargs))
    return Case(case.name, case.args, {**case.kwargs, name: value})


def _get_flag(case: Case, name: str) -> torch.Tensor | None:
    if case.name == "prefix_sum" and name == "dones":
        return case.args[1]
    return case.kwargs.get(name)


def _as_bool(flag: torch.Tensor | None, shape: tuple[int, ...]) -> torch.Tensor:
    """A fresh bool copy of a flag (all clear when absent)."""
    return torch.zeros(shape, dtype=torch.bool) if flag is None else (flag != 0).clone()


def _with_flag_at(flag: torch.Tensor | None, shape: tuple[int, ...], t: int, value: bool) -> torch.Tensor:
    f = _as_bool(flag, shape)
    f[..., t] = value
    return f


def _shift_values(values: torch.Tensor) -> torch.Tensor:
    """V_{t+1} (0 at the window edge), float64."""
    nv = torch.zeros(values.shape, dtype=F64)
    nv[..., :-1] = values[..., 1:].to(F64)
    return nv


def _nv(values: torch.Tensor | None, kw: dict[str, Any]) -> torch.Tensor:
    """nv_t of SPEC.md section 2 in float64, written independently of the library."""
    shape = kw["_shape"]
    if kw.get("next_values") is not None:
        return kw["next_values"].to(F64)
    trunc = _flag(kw.get("truncated"), torch.empty(shape))
    nv = torch.zeros(shape, dtype=F64) if values is None else _shift_values(values) * (1 - trunc)
    if kw.get("bootstrap_values") is not None:
        use = trunc.clone()
        use[..., -1] = 1
        return torch.where(use != 0, kw["bootstrap_values"].to(F64), nv)
    nv[..., -1] = 0.0 if kw.get("last_value") is None else kw["last_value"].to(F64)
    return nv


def _consistent_next_values(values: torch.Tensor, kw: dict[str, Any], gen: torch.Generator) -> torch.Tensor:
    """Dense next values with nv_t = V_{t+1} inside episodes and arbitrary (random) values at
    done steps and at t = T-1 (bootstraps at truncations and the edge, ignored at terminations)."""
    shape = values.shape
    done = torch.maximum(_flag(kw.get("terminated"), values), _flag(kw.get("truncated"), values))
    inside = done == 0
    inside[..., -1] = False
    other = torch.randn(shape, generator=gen, dtype=F64)
    return torch.where(inside, _shift_values(values), other).to(values.dtype)


def _gae_case(shape, bootstrap, dtype, per_step, seed, flags="both", **kw) -> Case:
    return make_case("gae", shape, bootstrap=bootstrap, dtype=dtype, per_step=per_step, seed=seed,
                     flags=flags, gamma=GAMMA, lam=LAM, **kw)


# --------------------------------------------------------------------------- GAE(lam=1) = returns - V


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("bootstrap", ("none", "last_value", "bootstrap_values"))
@pytest.mark.parametrize("flags", ("terminated", "both"))
@pytest.mark.parametrize("per_step", (False, True))
def test_gae_lambda_one_is_discounted_returns_minus_values(backend, shape, bootstrap, flags, per_step):
    """With lam = 1, A_t + V_t = r_t + g_t (1 - term_t) [V_{t+1} + A_{t+1}] inside an episode and
    r_t + g_t (1 - term_t) nv_t at a done step or t = T-1: the reward-to-go, cut at terminations
    and bootstrapped where discounted_returns bootstraps (last_value at the edge; with
    truncations, bootstrap_values at truncated steps; 0 where neither is given)."""
    case = _gae_case(shape, bootstrap, torch.float32, per_step, seed=11, flags=flags)
    r, v = case.args
    kw = {k: x for k, x in case.kwargs.items() if k not in ("lam",)}
    adv, target = _outs(case, backend, lam=1.0)
    ret = rt.discounted_returns(r, **kw, backend=backend)
    _close(target, ret, "value_targets vs discounted_returns")
    _close(adv, ret - v, "advantages vs discounted_returns - values")
    if per_step:  # a per-step lam tensor of ones is lam = 1
        adv2, _ = _outs(case, backend, lam=torch.ones(shape))
        _close(adv2, adv, "lam=ones tensor")


# --------------------------------------------------------------------------- TD(lambda) = GAE + V


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("bootstrap", BOOTSTRAP_FORMS)
@pytest.mark.parametrize("per_step", (False, True))
@pytest.mark.parametrize("dtype", DTYPES)
def test_td_lambda_is_gae_plus_values(backend, shape, bootstrap, per_step, dtype):
    """G_t = r_t + g_t (1 - term_t) [(1 - l_t) nv_t + l_t X_t] and A_t + V_t agree when
    nv_t = V_{t+1} inside episodes: always on the ``values`` path (the rule of section 2), and
    with ``next_values`` when they are built consistent (arbitrary at done steps and the edge)."""
    case = _gae_case(shape, bootstrap, dtype, per_step, seed=12)
    r, v = case.args
    kw = dict(case.kwargs)
    if bootstrap == "next_values":
        kw["next_values"] = _consistent_next_values(v, kw, torch.Generator().manual_seed(5))
    adv, target = rt.gae(r, v, **kw, backend=backend)
    ret = rt.td_lambda(r, v, **kw, backend=backend)
    _close(ret, target, "td_lambda vs gae value_targets")
    _close(ret - v, adv, "td_lambda - values vs gae advantages")
    if bootstrap == "next_values":  # values=None is allowed with next_values: same returns
        ret_nv = rt.td_lambda(r, **kw, backend=backend)
        _close(ret_nv, target, "td_lambda(values=None, next_values) vs gae value_targets")


# --------------------------------------------------------------------------- V-trace on-policy


def _vtrace_q(r, vs, kw, shape) -> torch.Tensor:
    """q_t of SPEC.md section 3 (V-trace) in float64 from given value targets vs."""
    T = shape[-1]
    g, lm = _coef(kw["gamma"], shape), _coef(kw["lam"], shape)
    term = _flag(kw.get("terminated"), r)
    done = torch.maximum(term, _flag(kw.get("truncated"), r))
    nv = _nv(kw.get("values"), {**kw, "_shape": shape})
    r, vs = r.to(F64), vs.to(F64)
    q = r + g * (1 - term) * nv
    if T > 1:
        inside = r[..., :-1] + g[..., :-1] * (1 - term[..., :-1]) * (
            lm[..., :-1] * vs[..., 1:] + (1 - lm[..., :-1]) * nv[..., :-1]
        )
        q[..., :-1] = torch.where(done[..., :-1] != 0, q[..., :-1], inside)
    return q


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("bootstrap", BOOTSTRAP_FORMS)
@pytest.mark.parametrize("per_step", (False, True))
@pytest.mark.parametrize("bars", ((1.0, 1.0, None), (2.5, 1.5, None), (1.0, 3.0, 1.0)))
def test_vtrace_on_policy(backend, shape, bootstrap, per_step, bars):
    """log_rhos = 0 and clip thresholds >= 1: rho_t = 1 and c_t = l_t, so D_t is the GAE
    recursion and vs = GAE value targets (= TD(lambda) returns when next values are consistent);
    pg = q - V with q of SPEC (and, with consistent next values, q_t = G_t: pg = GAE advantages)."""
    rho_bar, c_bar, pg_rho_bar = bars
    case = _gae_case(shape, bootstrap, torch.float32, per_step, seed=13)
    r, v = case.args
    kw = dict(case.kwargs)
    zeros = torch.zeros(shape)
    vs, pg = rt.vtrace(r, v, zeros, **kw, rho_bar=rho_bar, c_bar=c_bar, pg_rho_bar=pg_rho_bar, backend=backend)
    adv, target = rt.gae(r, v, **kw, backend=backend)
    _close(vs, target, "vs vs gae value_targets")
    q = _vtrace_q(r, vs, {**kw, "values": v if bootstrap != "next_values" else None}, shape)
    _close(pg, (q - v.double()).float(), "pg vs q - V (q from vs)")
    if bootstrap != "next_values":  # the values path: next values consistent by construction
        _close(vs, rt.td_lambda(r, v, **kw, backend=backend), "vs vs td_lambda")
        _close(pg, adv, "pg vs gae advantages")
    # consistent next_values: the same three identities
    kw2 = {k: x for k, x in kw.items() if k not in ("last_value", "bootstrap_values", "next_values")}
    kw2["next_values"] = _consistent_next_values(v, kw, torch.Generator().manual_seed(6))
    vs2, pg2 = rt.vtrace(r, v, zeros, **kw2, rho_bar=rho_bar, c_bar=c_bar, pg_rho_bar=pg_rho_bar, backend=backend)
    adv2, _ = rt.gae(r, v, **kw2, backend=backend)
    _close(vs2, rt.td_lambda(r, v, **kw2, backend=backend), "vs vs td_lambda (consistent next_values)")
    _close(pg2, adv2, "pg vs gae advantages (consistent next_values)")


# --------------------------------------------------------------------------- Retrace on-policy = Q(lambda)


def _q_lambda(r, q, kw, shape, values) -> torch.Tensor:
    """Q(lambda) targets, float64: G_t = r_t + g_t (1 - term_t) nv_t at a done step or t = T-1,
    else G_t = r_t + g_t [nv_t + l_{t+1} (G_{t+1} - Q_{t+1})]."""
    T = shape[-1]
    g, lm = _coef(kw["gamma"], shape), _coef(kw["lam"], shape)
    term = _flag(kw.get("terminated"), r)
    done = torch.maximum(term, _flag(kw.get("truncated"), r))
    nv = _nv(values, {**kw, "_shape": shape})
    r, q = r.to(F64), q.to(F64)
    out = torch.zeros(shape, dtype=F64)
    for t in range(T - 1, -1, -1):
        base = r[..., t] + g[..., t] * (1 - term[..., t]) * nv[..., t]
        if t < T - 1:
            more = g[..., t] * lm[..., t + 1] * (out[..., t + 1] - q[..., t + 1])
            out[..., t] = torch.where(done[..., t] != 0, base, base + more)
        else:
            out[..., t] = base
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("bootstrap", BOOTSTRAP_FORMS)
@pytest.mark.parametrize("per_step", (False, True))
@pytest.mark.parametrize("c_bar", (1.0, 2.0))
def test_retrace_on_policy_is_q_lambda(backend, shape, bootstrap, per_step, c_bar):
    """pi = mu (log_rhos = 0), c_bar >= 1: c_t = l_t and Retrace is Q(lambda) (loop above)."""
    case = make_case("retrace", shape, bootstrap=bootstrap, per_step=per_step, seed=14, gamma=GAMMA, lam=LAM)
    r, q, v, _ = case.args
    kw = {k: x for k, x in case.kwargs.items() if k != "c_bar"}
    qt, adv = rt.retrace(r, q, v, torch.zeros(shape), **kw, c_bar=c_bar, backend=backend)
    expected = _q_lambda(r, q, kw, shape, v)
    _close(qt, expected, "q_targets vs Q(lambda)", sides=1)
    _close(adv, expected - v.double(), "advantages vs Q(lambda) - v", sides=1)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("bootstrap", ("none", "last_value", "bootstrap_values"))
@pytest.mark.parametrize("per_step", (False, True))
def test_retrace_from_action_values_on_policy(backend, shape, bootstrap, per_step):
    """behavior_log_probs = log pi(a_t|s_t): the same as retrace with q = Q(s_t, a_t),
    v = sum_a pi(a|s_t) Q(s_t, a), log_rhos = 0, and as the Q(lambda) loop."""
    case = make_case("retrace_av", shape, bootstrap=bootstrap, per_step=per_step, seed=15, gamma=GAMMA, lam=LAM)
    r, av, pi, actions, _ = case.args
    kw = dict(case.kwargs)
    pi_a = pi.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    blp = torch.log(pi_a.double()).float()
    qt, adv = rt.retrace_from_action_values(r, av, pi, actions, blp, **kw, backend=backend)
    q = av.double().gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    v = (pi.double() * av.double()).sum(-1)
    qt2, adv2 = rt.retrace(r, q.float(), v.float(), torch.zeros(shape), **kw, backend=backend)
    _close(qt, qt2, "q_targets vs retrace")
    _close(adv, adv2, "advantages vs retrace")
    expected = _q_lambda(r, q, kw, shape, v)
    _close(qt, expected, "q_targets vs Q(lambda)", sides=1)
    _close(adv, expected - v, "advantages vs Q(lambda) - v", sides=1)


# --------------------------------------------------------------------------- a termination splits a row


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("bootstrap", BOOTSTRAP_FORMS)
@pytest.mark.parametrize("k", (0, 37, 88))
def test_termination_splits_row(backend, name, bootstrap, k):
    """A row cut at a terminated step k is two independent calls: steps 0..k (terminated at its
    end, no continuation needed) and steps k+1..T-1 (with the row's own window-edge bootstrap).
    Forward estimators: a done at k (ends_at) / at k+1 (starts_at) restarts the recursion, so the
    second part is a fresh call without ``initial``."""
    N, T = 3, 90
    case = make_case(name, (N, T), bootstrap=bootstrap, seed=16 + k, n_features=(2,) if name == "traces" else ())
    nb = 1
    if name in BACKWARD:
        case = _set_flag(case, "terminated", _with_flag_at(_get_flag(case, "terminated"), (N, T), k, True))
        case = _set_flag(case, "truncated", _with_flag_at(_get_flag(case, "truncated"), (N, T), k, False))
        first = _slice(case, nb, T, slice(0, k + 1), last_value=None)
        second = _slice(case, nb, T, slice(k + 1, T))
    else:
        at = k + 1 if case.kwargs.get("boundary") == "starts_at" else k
        case = _set_flag(case, "dones", _with_flag_at(_get_flag(case, "dones"), (N, T), at, True))
        first = _slice(case, nb, T, slice(0, k + 1))
        second = _slice(case, nb, T, slice(k + 1, T), initial=None)
    full = _outs(case, backend)
    for i, (o, a, b) in enumerate(zip(full, _outs(first, backend), _outs(second, backend))):
        _close(o[:, : k + 1], a, f"output {i}, steps 0..k", T=T)
        _close(o[:, k + 1 :], b, f"output {i}, steps k+1..", T=T)


# --------------------------------------------------------------------------- truncation bootstraps


def _truncated_at(case: Case, shape, k: int, *, clear_before: bool) -> Case:
    """Truncated (not terminated) at step k; with ``clear_before`` no other truncation before k."""
    trunc = _with_flag_at(_get_flag(case, "truncated"), shape, k, True)
    if clear_before:
        trunc[..., :k] = False
    case = _set_flag(case, "truncated", trunc)
    return _set_flag(case, "terminated", _with_flag_at(_get_flag(case, "terminated"), shape, k, False))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", BACKWARD)
@pytest.mark.parametrize("form", ("last_value", "bootstrap_values", "next_values"))
@pytest.mark.parametrize("k", (0, 20, 70))
def test_truncation_bootstraps_from_supplied_value(backend, name, form, k):
    """Truncated at k with bootstrap b: steps 0..k are a separate call on 0..k whose
    continuation is b (``last_value=b`` when k is the only truncation before the edge of the
    part; the sliced ``bootstrap_values`` / ``next_values`` otherwise), never the next episode."""
    if form == "next_values" and name in ("discounted_returns", "retrace_av"):
        pytest.skip("no next_values argument")
    N, T = 3, 90
    shape = (N, T)
    case = make_case(name, shape, bootstrap="bootstrap_values" if form == "last_value" else form, seed=17 + k)
    case = _truncated_at(case, shape, k, clear_before=form == "last_value")
    if form == "last_value":
        b = case.kwargs["bootstrap_values"][:, k]
        part = _slice(case, 1, T, slice(0, k + 1), bootstrap_values=None, last_value=b)
    else:
        part = _slice(case, 1, T, slice(0, k + 1))
    for i, (o, p) in enumerate(zip(_outs(case, backend), _outs(part, backend))):
        _close(o[:, : k + 1], p, f"output {i}, steps 0..k", T=T)


def _perturb_after(case: Case, k: int, gen: torch.Generator) -> Case:
    """Fresh random data at every step > k (rewards, values, log-ratios, per-action tensors,
    flags, per-step gamma/lam, bootstraps) and a fresh last_value."""

    def fresh(name: str, x: torch.Tensor) -> torch.Tensor:
        s = x[:, k + 1 :].shape
        if name in ("terminated", "truncated", "dones"):
            new = (torch.rand(s, generator=gen) < 0.3).to(x.dtype)
        elif name == "actions":
            new = torch.randint(0, case.args[1].shape[-1], s, generator=gen)
        elif name == "target_probs":
            new = torch.softmax(torch.randn(s, generator=gen, dtype=F64), -1)
        elif name in ("gamma", "lam"):
            new = torch.rand(s, generator=gen, dtype=F64)
        elif name == "behavior_log_probs":
            new = torch.log(0.1 + 0.9 * torch.rand(s, generator=gen, dtype=F64))
        else:
            new = 3.0 * torch.randn(s, generator=gen, dtype=F64)
        y = x.clone()
        y[:, k + 1 :] = new.to(x.dtype)
        return y

    out = _map_time(case, 1, case.args[0].shape[1], fresh)
    if "last_value" in out.kwargs:
        lv = out.kwargs["last_value"]
        out.kwargs["last_value"] = lv + 1.0 + torch.rand(lv.shape, generator=gen).to(lv.dtype)
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", BACKWARD)
@pytest.mark.parametrize("form", BOOTSTRAP_FORMS)
@pytest.mark.parametrize("k", (0, 30, 88))
def test_truncation_hides_the_next_episode(backend, name, form, k):
    """Nothing after a truncation at k reaches steps 0..k: new rewards, values, ratios, flags,
    discounts and bootstraps after k leave those outputs bit-for-bit unchanged (the only path is
    through the factor (1 - done_k) = 0, see module docstring). gamma/lam are per-step tensors,
    so new discounts after k are part of the perturbation."""
    shape = (3, 90)
    case = _truncated_at(make_case(name, shape, bootstrap=form, per_step=True, seed=18 + k), shape, k,
                         clear_before=False)
    other = _perturb_after(case, k, torch.Generator().manual_seed(100 + k))
    for i, (a, b) in enumerate(zip(_outs(case, backend), _outs(other, backend))):
        assert torch.equal(a[:, : k + 1], b[:, : k + 1]), f"output {i} changed at steps <= k"
        if k < shape[1] - 1:  # the perturbation is real
            assert not torch.equal(a[:, k + 1 :], b[:, k + 1 :])


# --------------------------------------------------------------------------- time_dim


def _move_case(case: Case, nb: int, T: int, dest: int, contiguous: bool) -> Case:
    out = _map_time(case, nb, T, lambda _n, x: (x.movedim(nb, dest).contiguous() if contiguous
                                                else x.movedim(nb, dest)))
    out.kwargs["time_dim"] = dest
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("contiguous", (True, False))
@pytest.mark.parametrize("per_step", (False, True))
def test_time_major(backend, name, shape, contiguous, per_step):
    """[T, N] with time_dim=0 (contiguous time-major storage, as CleanRL, or a transposed view)
    gives the [N, T] results transposed."""
    nf = (3,) if name in FORWARD else ()
    case = make_case(name, shape, per_step=per_step, seed=19, n_features=nf)
    moved = _move_case(case, 1, shape[1], 0, contiguous)
    if contiguous:
        assert moved.args[0].is_contiguous()
    else:
        assert not moved.args[0].is_contiguous() or shape[0] == 1
    for i, (o, m) in enumerate(zip(_outs(case, backend), _outs(moved, backend))):
        assert m.shape == (shape[1], shape[0], *nf), f"output {i}: time-major shape {tuple(m.shape)}"
        _close(m.movedim(0, 1), o, f"output {i}", T=shape[1])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("T", (23, 90))
@pytest.mark.parametrize("per_step", (False, True))
def test_time_dim_middle_of_3d(backend, name, T, per_step):
    """[B1, T, B2] with time_dim=1 (last_value / initial stay [B1, B2] / [B1, B2, *F]) gives the
    [B1, B2, T] results with time moved to axis 1."""
    nf = (2,) if name in FORWARD else ()
    case = make_case(name, (2, 3, T), per_step=per_step, seed=20, n_features=nf)
    moved = _move_case(case, 2, T, 1, contiguous=False)
    for i, (o, m) in enumerate(zip(_outs(case, backend), _outs(moved, backend))):
        assert m.shape == (2, T, 3, *nf), f"output {i}: shape {tuple(m.shape)}"
        _close(m.movedim(1, 2), o, f"output {i}", T=T)


# --------------------------------------------------------------------------- broadcast gamma


WITH_LAM = ("gae", "td_lambda", "vtrace", "retrace", "retrace_av", "traces")
GAMMA_USERS = BACKWARD + ("traces",)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", GAMMA_USERS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("bshape", ("full", "time", "batch", "scalar"))
def test_constant_gamma_tensor_is_float_gamma(backend, name, shape, bshape):
    """A gamma (and lam) tensor holding one constant, of shape [N, T], [T], [N, 1] or [], gives
    the float-gamma result."""
    N, T = shape
    case = make_case(name, shape, seed=21, gamma=GAMMA, lam=LAM, n_features=(2,) if name == "traces" else ())
    size = {"full": (N, T), "time": (T,), "batch": (N, 1), "scalar": ()}[bshape]
    over = {"gamma": torch.full(size, GAMMA)}
    if name in WITH_LAM:
        over["lam"] = torch.full(size, LAM)
    for i, (o, p) in enumerate(zip(_outs(case, backend), _outs(case, backend, **over))):
        _close(p, o, f"output {i}", T=T)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", GAMMA_USERS)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("bootstrap", BOOTSTRAP_FORMS)
def test_zero_gamma_is_termination(backend, name, shape, bootstrap):
    """A per-step gamma of 0 at the steps S behaves like ``terminated`` at S (SPEC section 2).
    For traces, whose coefficient g_t l_t links step t-1 to t, gamma_t = 0 is a done at t-1."""
    N, T = shape
    nf = (2,) if name == "traces" else ()
    case = make_case(name, shape, bootstrap=bootstrap, per_step=True, seed=22, n_features=nf)
    gen = torch.Generator().manual_seed(23)
    s = torch.rand(shape, generator=gen) < 0.2
    if name == "traces":
        s[:, 0] = False  # gamma_0 only scales ``initial``
    g = case.kwargs["gamma"]
    zeroed = _outs(case, backend, gamma=torch.where(s, torch.zeros_like(g), g))
    if name == "traces":
        d = _as_bool(case.kwargs.get("dones"), shape)
        d[:, :-1] |= s[:, 1:]
        flagged = _outs(_set_flag(case, "dones", d), backend)
    else:
        term = _as_bool(case.kwargs.get("terminated"), shape) | s
        trunc = _as_bool(case.kwargs.get("truncated"), shape) & ~s
        flagged = _outs(_set_flag(_set_flag(case, "terminated", term), "truncated", trunc), backend)
    for i, (z, f) in enumerate(zip(zeroed, flagged)):
        _close(z, f, f"output {i}", T=T)


# --------------------------------------------------------------------------- named results

RESULT_TYPES = {"gae": (rt.GAEResult, ("advantages", "value_targets")),
                "vtrace": (rt.VTraceResult, ("value_targets", "advantages")),
                "retrace": (rt.RetraceResult, ("q_targets", "advantages")),
                "retrace_av": (rt.RetraceResult, ("q_targets", "advantages"))}


@pytest.mark.parametrize("name", sorted(RESULT_TYPES))
def test_named_results(name):
    """SPEC section 4: results with two outputs are named tuples with the fields of the
    signature, from every backend and from ``rt.reference``'s loops alike; the fields are the
    same tensors as the positions."""
    cls, fields = RESULT_TYPES[name]
    case = make_case(name, (3, 9), seed=91)
    assert cls._fields == fields
    outs = [case.fn()(*case.args, **case.kwargs, backend=b) for b in BACKENDS]
    fn = {"retrace_av": rt.reference.retrace_from_action_values}.get(name) or getattr(rt.reference, name)
    outs.append(fn(*case.args, **{k: v for k, v in case.kwargs.items() if k not in ("time_dim", "backend")}))
    for out in outs:
        assert type(out) is cls, type(out)
        for i, field in enumerate(fields):
            assert getattr(out, field) is out[i]
