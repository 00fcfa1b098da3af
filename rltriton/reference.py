"""Float64 sequential oracles, written straight from SPEC.md section 3.

Every other backend is tested against these functions. They are deliberately naive:
one Python step per time index (vectorised only across the batch), all arithmetic in
float64, the next-state value rule of SPEC.md section 2 spelled out case by case. They
share no code with the fast paths, so a boundary bug in the shared normalisation of
:class:`rltriton.CreditAssigner` cannot hide from them.

Conventions of this module (the public functions of :mod:`rltriton` move ``time_dim``
into place before calling it):

* per-step tensors are ``[*B, T]`` with time on the **last** axis;
* ``last_value`` is ``[*B]``;
* ``action_values`` / ``target_probs`` of Retrace are ``[*B, T, A]``;
* ``x`` of the forward estimators is ``[*B, T, *F]`` with ``n_feature_dims`` trailing
  feature axes, and ``initial`` is ``[*B, *F]``;
* ``gamma`` / ``lam`` are Python floats or tensors broadcastable to ``[*B, T]``;
* flags are any dtype, nonzero meaning set.

Every function returns float64 tensors (named tuples where the estimator has two
outputs). The loops run on the CPU whatever device the inputs are on (a Python step per
time index is faster there than as small GPU kernels); results come back on the device
of the first tensor argument. ``rltriton``'s ``backend="reference"`` calls these and casts the results to
the dtype the other backends return. Each loop is the recursion of its estimator, e.g.
GAE's::

    A_t = r_t + g_t (1 - term_t) nv_t - V_t + g_t l_t (1 - done_t) A_{t+1}

Example::

    >>> import torch
    >>> from rltriton import reference
    >>> reference.discounted_returns(torch.ones(1, 3), gamma=0.5).dtype
    torch.float64
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from rltriton.results import GAEResult, RetraceResult, VTraceResult

__all__ = [
    "gae",
    "td_lambda",
    "discounted_returns",
    "vtrace",
    "retrace",
    "retrace_from_action_values",
    "eligibility_traces",
    "episodic_prefix_sum",
]

_F64 = torch.float64


def _on_cpu(fn):
    """Run ``fn`` on CPU copies of its tensor arguments; return its outputs on the device of
    the first tensor argument (inputs on several devices are the caller's error, as in torch)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
        device = tensors[0].device if tensors else torch.device("cpu")
        if device.type == "cpu":
            return fn(*args, **kwargs)

        def cpu(a):
            return a.cpu() if isinstance(a, Tensor) else a

        out = fn(*(cpu(a) for a in args), **{k: cpu(v) for k, v in kwargs.items()})
        if isinstance(out, tuple):
            return type(out)(*(o.to(device) for o in out))
        return out.to(device)

    return wrapper


def _f(x: Tensor | float, shape: torch.Size) -> Tensor:
    """A float64 copy of ``x`` broadcast to ``shape``."""
    if isinstance(x, Tensor):
        return x.to(_F64).expand(shape).clone()
    return torch.full(shape, float(x), dtype=_F64)


def _flag(x: Tensor | None, shape: torch.Size) -> Tensor:
    """Flags as float64 0/1 (nonzero = set); absent flags are all clear."""
    if x is None:
        return torch.zeros(shape, dtype=_F64)
    return (x != 0).to(_F64).expand(shape).clone()


def _next_state_values(
    shape: torch.Size,
    values: Tensor | None,
    truncated: Tensor,
    next_values: Tensor | None,
    bootstrap_values: Tensor | None,
    last_value: Tensor | None,
) -> Tensor:
    """nv_t of SPEC.md section 2, one case at a time, in the order the spec lists them."""
    T = shape[-1]
    nv = torch.zeros(shape, dtype=_F64)
    for t in range(T):
        if next_values is not None:
            nv[..., t] = next_values[..., t].to(_F64)
            continue
        col = torch.zeros(shape[:-1], dtype=_F64)
        # lowest priority first, so later assignments win where the spec's earlier cases apply
        if values is not None and t < T - 1:
            inside = truncated[..., t] == 0
            col = torch.where(inside, values[..., t + 1].to(_F64), col)
        if t == T - 1 and last_value is not None:
            col = last_value.to(_F64).expand(shape[:-1]).clone()
        if bootstrap_values is not None:
            use_bv = truncated[..., t] != 0 if t < T - 1 else torch.ones(shape[:-1], dtype=torch.bool)
            col = torch.where(use_bv, bootstrap_values[..., t].to(_F64), col)
        nv[..., t] = col
    return nv


@_on_cpu
def gae(
    rewards: Tensor,
    values: Tensor,
    *,
    gamma: float | Tensor,
    lam: float | Tensor,
    terminated: Tensor | None = None,
    truncated: Tensor | None = None,
    next_values: Tensor | None = None,
    bootstrap_values: Tensor | None = None,
    last_value: Tensor | None = None,
) -> GAEResult:
    """GAE: delta_t = r_t + g_t (1 - term_t) nv_t - V_t; A_t = delta_t + g_t l_t (1 - done_t) A_{t+1}, A_T = 0.

    Returns ``(advantages, value_targets = advantages + values)`` in float64.
    """
    shape = rewards.shape
    T = shape[-1]
    r = rewards.to(_F64)
    v = values.to(_F64)
    g = _f(gamma, shape)
    lm = _f(lam, shape)
    term = _flag(terminated, shape)
    trunc = _flag(truncated, shape)
    done = torch.maximum(term, trunc)
    nv = _next_state_values(shape, values, trunc, next_values, bootstrap_values, last_value)
    adv = torch.zeros(shape, dtype=_F64)
    carry = torch.zeros(shape[:-1], dtype=_F64)
    for t in range(T - 1, -1, -1):
        delta = r[..., t] + g[..., t] * (1 - term[..., t]) * nv[..., t] - v[..., t]
        carry = delta + g[..., t] * lm[..., t] * (1 - done[..., t]) * carry
        adv[..., t] = carry
    return GAEResult(adv, adv + v)


@_on_cpu
def td_lambda(
    rewards: Tensor,
    values: Tensor | None = None,
    *,
    gamma: float | Tensor,
    lam: float | Tensor,
    terminated: Tensor | None = None,
    truncated: Tensor | None = None,
    next_values: Tensor | None = None,
    bootstrap_values: Tensor | None = None,
    last_value: Tensor | None = None,
) -> Tensor:
    """TD(lambda): G_t = r_t + g_t (1 - term_t) [(1 - l_t) nv_t + l_t X_t].

    X_t = G_{t+1} if t < T-1 and not done_t, else nv_t. Returns G in float64.
    """
    shape = rewards.shape
    T = shape[-1]
    r = rewards.to(_F64)
    g = _f(gamma, shape)
    lm = _f(lam, shape)
    term = _flag(terminated, shape)
    trunc = _flag(truncated, shape)
    done = torch.maximum(term, trunc)
    nv = _next_state_values(shape, values, trunc, next_values, bootstrap_values, last_value)
    out = torch.zeros(shape, dtype=_F64)
    following = torch.zeros(shape[:-1], dtype=_F64)  # G_{t+1}
    for t in range(T - 1, -1, -1):
        if t < T - 1:
            x = torch.where(done[..., t] != 0, nv[..., t], following)
        else:
            x = nv[..., t]
        g_t = r[..., t] + g[..., t] * (1 - term[..., t]) * ((1 - lm[..., t]) * nv[..., t] + lm[..., t] * x)
        out[..., t] = g_t
        following = g_t
    return out


@_on_cpu
def discounted_returns(
    rewards: Tensor,
    *,
    gamma: float | Tensor,
    terminated: Tensor | None = None,
    truncated: Tensor | None = None,
    bootstrap_values: Tensor | None = None,
    last_value: Tensor | None = None,
) -> Tensor:
    """Reward-to-go: G_t = r_t + g_t (1 - term_t) X_t, X_t = G_{t+1} inside an episode, else nv_t (0 if none)."""
    shape = rewards.shape
    T = shape[-1]
    r = rewards.to(_F64)
    g = _f(gamma, shape)
    term = _flag(terminated, shape)
    trunc = _flag(truncated, shape)
    done = torch.maximum(term, trunc)
    nv = _next_state_values(shape, None, trunc, None, bootstrap_values, last_value)
    out = torch.zeros(shape, dtype=_F64)
    following = torch.zeros(shape[:-1], dtype=_F64)
    for t in range(T - 1, -1, -1):
        inside = (done[..., t] == 0) if t < T - 1 else torch.zeros(shape[:-1], dtype=torch.bool)
        x = torch.where(inside, following, nv[..., t])
        following = r[..., t] + g[..., t] * (1 - term[..., t]) * x
        out[..., t] = following
    return out


@_on_cpu
def vtrace(
    rewards: Tensor,
    values: Tensor,
    log_rhos: Tensor,
    *,
    gamma: float | Tensor,
    lam: float | Tensor = 1.0,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
    pg_rho_bar: float | None = None,
    terminated: Tensor | None = None,
    truncated: Tensor | None = None,
    next_values: Tensor | None = None,
    bootstrap_values: Tensor | None = None,
    last_value: Tensor | None = None,
) -> VTraceResult:
    """V-trace with the rlax lambda. Returns ``(value_targets vs, pg advantages)`` in float64.

    rho_t = min(rho_bar, e^{lr_t}), c_t = l_t min(c_bar, e^{lr_t});
    D_t = rho_t (r_t + g_t (1-term_t) nv_t - V_t) + g_t (1-done_t) c_t D_{t+1};
    q_t = r_t + g_t (1-term_t) [l_t vs_{t+1} + (1-l_t) nv_t] inside an episode, else
    r_t + g_t (1-term_t) nv_t; pg_t = min(pg_rho_bar, e^{lr_t}) (q_t - V_t).
    """
    if pg_rho_bar is None:
        pg_rho_bar = rho_bar
    shape = rewards.shape
    T = shape[-1]
    r = rewards.to(_F64)
    v = values.to(_F64)
    ratio = torch.exp(log_rhos.to(_F64))
    g = _f(gamma, shape)
    lm = _f(lam, shape)
    term = _flag(terminated, shape)
    trunc = _flag(truncated, shape)
    done = torch.maximum(term, trunc)
    nv = _next_state_values(shape, values, trunc, next_values, bootstrap_values, last_value)
    rho = torch.clamp(ratio, max=rho_bar)
    c = lm * torch.clamp(ratio, max=c_bar)
    vs = torch.zeros(shape, dtype=_F64)
    pg = torch.zeros(shape, dtype=_F64)
    carry = torch.zeros(shape[:-1], dtype=_F64)
    for t in range(T - 1, -1, -1):
        delta = rho[..., t] * (r[..., t] + g[..., t] * (1 - term[..., t]) * nv[..., t] - v[..., t])
        new = delta + g[..., t] * (1 - done[..., t]) * c[..., t] * carry
        vs[..., t] = v[..., t] + new
        outside = r[..., t] + g[..., t] * (1 - term[..., t]) * nv[..., t]
        if t < T - 1:
            inside_q = r[..., t] + g[..., t] * (1 - term[..., t]) * (
                lm[..., t] * vs[..., t + 1] + (1 - lm[..., t]) * nv[..., t]
            )
            q = torch.where(done[..., t] != 0, outside, inside_q)
        else:
            q = outside
        pg[..., t] = torch.clamp(ratio[..., t], max=pg_rho_bar) * (q - v[..., t])
        carry = new
    return VTraceResult(vs, pg)


@_on_cpu
def retrace(
    rewards: Tensor,
    q_values: Tensor,
    state_values: Tensor,
    log_rhos: Tensor,
    *,
    gamma: float | Tensor,
    lam: float | Tensor = 1.0,
    c_bar: float = 1.0,
    terminated: Tensor | None = None,
    truncated: Tensor | None = None,
    next_values: Tensor | None = None,
    bootstrap_values: Tensor | None = None,
    last_value: Tensor | None = None,
) -> RetraceResult:
    """Retrace(lambda). Returns ``(q_targets, advantages = q_targets - state_values)`` in float64.

    nv_t = v_{t+1} by the rule of section 2 (with ``state_values`` as the values);
    c_t = l_t min(c_bar, e^{lr_t}); delta_t = r_t + g_t (1-term_t) nv_t - Q_t;
    D_t = delta_t + g_t (1-done_t) c_{t+1} D_{t+1}, c_T = 0, D_T = 0; q_targets = Q + D.
    """
    shape = rewards.shape
    T = shape[-1]
    r = rewards.to(_F64)
    q = q_values.to(_F64)
    v = state_values.to(_F64)
    g = _f(gamma, shape)
    lm = _f(lam, shape)
    term = _flag(terminated, shape)
    trunc = _flag(truncated, shape)
    done = torch.maximum(term, trunc)
    nv = _next_state_values(shape, state_values, trunc, next_values, bootstrap_values, last_value)
    c = lm * torch.clamp(torch.exp(log_rhos.to(_F64)), max=c_bar)
    out = torch.zeros(shape, dtype=_F64)
    carry = torch.zeros(shape[:-1], dtype=_F64)
    for t in range(T - 1, -1, -1):
        c_next = c[..., t + 1] if t < T - 1 else torch.zeros(shape[:-1], dtype=_F64)
        delta = r[..., t] + g[..., t] * (1 - term[..., t]) * nv[..., t] - q[..., t]
        carry = delta + g[..., t] * (1 - done[..., t]) * c_next * carry
        out[..., t] = q[..., t] + carry
    return RetraceResult(out, out - v)


@_on_cpu
def retrace_from_action_values(
    rewards: Tensor,
    action_values: Tensor,
    target_probs: Tensor,
    actions: Tensor,
    behavior_log_probs: Tensor,
    *,
    gamma: float | Tensor,
    lam: float | Tensor = 1.0,
    c_bar: float = 1.0,
    terminated: Tensor | None = None,
    truncated: Tensor | None = None,
    bootstrap_values: Tensor | None = None,
    last_value: Tensor | None = None,
) -> RetraceResult:
    """Retrace from per-action values: Q_t = Q(s_t, a_t), v_t = sum_a pi(a|s_t) Q(s_t, a),
    log rho_t = log pi(a_t|s_t) - log mu(a_t|s_t); then :func:`retrace`."""
    av = action_values.to(_F64)
    pi = target_probs.to(_F64)
    idx = actions.long().unsqueeze(-1)
    q = av.gather(-1, idx).squeeze(-1)
    v = (pi * av).sum(-1)
    log_rhos = torch.log(pi.gather(-1, idx).squeeze(-1)) - behavior_log_probs.to(_F64)
    return retrace(
        rewards, q, v, log_rhos, gamma=gamma, lam=lam, c_bar=c_bar, terminated=terminated,
        truncated=truncated, bootstrap_values=bootstrap_values, last_value=last_value,
    )


def _feature_view(coef: Tensor, n_feature_dims: int) -> Tensor:
    return coef.reshape(coef.shape + (1,) * n_feature_dims)


@_on_cpu
def eligibility_traces(
    x: Tensor,
    *,
    gamma: float | Tensor,
    lam: float | Tensor,
    dones: Tensor | None = None,
    initial: Tensor | None = None,
    n_feature_dims: int = 0,
) -> Tensor:
    """Accumulating traces: z_t = x_t + g_t l_t (1 - d_{t-1}) z_{t-1}, z_{-1} = initial, d_{-1} = 0."""
    bt = x.shape[: x.dim() - n_feature_dims]
    T = bt[-1]
    xs = x.to(_F64)
    coef = _f(gamma, bt) * _f(lam, bt)
    d = _flag(dones, bt)
    out = torch.zeros(x.shape, dtype=_F64)
    z = torch.zeros(bt[:-1] + x.shape[len(bt):], dtype=_F64)
    if initial is not None:
        z = z + initial.to(_F64)
    feat = [slice(None)] * n_feature_dims
    for t in range(T):
        keep = coef[..., t] * (1 - d[..., t - 1]) if t > 0 else coef[..., t]
        z = xs[(Ellipsis, t, *feat)] + _feature_view(keep, n_feature_dims) * z
        out[(Ellipsis, t, *feat)] = z
    return out


@_on_cpu
def episodic_prefix_sum(
    x: Tensor,
    dones: Tensor,
    *,
    boundary: str = "ends_at",
    initial: Tensor | None = None,
    n_feature_dims: int = 0,
) -> Tensor:
    """Segmented prefix sum. ``ends_at``: C_t = x_t + (1 - d_{t-1}) C_{t-1};
    ``starts_at``: C_t = x_t + (1 - d_t) C_{t-1}; C_{-1} = initial (default 0)."""
    bt = x.shape[: x.dim() - n_feature_dims]
    T = bt[-1]
    xs = x.to(_F64)
    d = _flag(dones, bt)
    out = torch.zeros(x.shape, dtype=_F64)
    c = torch.zeros(bt[:-1] + x.shape[len(bt):], dtype=_F64)
    if initial is not None:
        c = c + initial.to(_F64)
    feat = [slice(None)] * n_feature_dims
    for t in range(T):
        if boundary == "ends_at":
            keep = 1 - d[..., t - 1] if t > 0 else torch.ones(bt[:-1], dtype=_F64)
        else:
            keep = 1 - d[..., t]
        c = xs[(Ellipsis, t, *feat)] + _feature_view(keep, n_feature_dims) * c
        out[(Ellipsis, t, *feat)] = c
    return out
