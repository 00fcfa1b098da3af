"""Rollouts, the rltriton candidates, the float64 oracle and the peer adapters of ``run.py``.

Every candidate is a zero-argument call on inputs prepared once, outside the timed region,
in the layout and dtypes its library takes (the buffers a training loop would already hold),
plus a function mapping its result back to named ``[N, T]`` outputs for the correctness check.

Peers and how each is mapped onto our semantics (see benchmarks/README.md for the table):

* ``torch.compile``: our own Hillis-Steele doubling scan of the affine recurrence, every
  estimator's coefficients built in torch, the whole function compiled (``dynamic=False``).
* ``torchrl``: ``vec_generalized_advantage_estimate`` (GAE) and ``vec_td_lambda_return_estimate``
  (TD(lambda)) on ``[N, T, 1]`` tensors, ``next_state_value`` = our next-state value rule,
  ``done = terminated | truncated``, ``terminated``.
* ``cleanrl``: the PPO GAE loop over time-major ``[T, N]`` buffers (``dones`` shifted by one,
  ``next_done``/``next_value`` for the window edge); truncations are folded in the
  Stable-Baselines3 way (``r += gamma * V(s_{t+1})`` at truncated steps, then treated as done).
* ``rl-triton`` 0.1.3 (source in ``/.peers/rl_triton``, not installed): ``compute_gae``,
  ``compute_lambda_returns``, ``compute_discounted_returns``, ``compute_vtrace`` (lambda = 1),
  ``compute_retrace`` (q targets only), ``compute_eligibility_traces``,
  ``compute_episodic_prefix_sum``, float32 flags, ``bootstrap_values`` zero except at
  truncated steps and the last column.
* ``pufferlib``: ``torch.ops.pufferlib.compute_puff_advantage`` on ``[N, T+1]`` rows (rewards
  and dones shifted by one, ``values[:, T]`` = the window-edge value, importance 1), GAE only;
  from an installed ``pufferlib``, else built with nvcc from PufferLib's source in
  ``/.peers/pufferlib`` (not in the repository).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

import rltriton as rt
from benchmarks import common

ROOT = Path(__file__).resolve().parents[1]
PEERS_DIR = ROOT / ".peers"

ESTIMATORS = ("gae", "td_lambda", "discounted_returns", "vtrace", "retrace", "retrace_av", "traces", "prefix_sum")
OUTPUT_NAMES = {
    "gae": ("advantages", "value_targets"),
    "td_lambda": ("returns",),
    "discounted_returns": ("returns",),
    "vtrace": ("value_targets", "advantages"),
    "retrace": ("q_targets", "advantages"),
    "retrace_av": ("q_targets", "advantages"),
    "traces": ("traces",),
    "prefix_sum": ("sums",),
}
RT_FN = {
    "gae": "gae",
    "td_lambda": "td_lambda",
    "discounted_returns": "discounted_returns",
    "vtrace": "vtrace",
    "retrace": "retrace",
    "retrace_av": "retrace_from_action_values",
    "traces": "eligibility_traces",
    "prefix_sum": "episodic_prefix_sum",
}
N_ACTIONS = 4  # Retrace: action count of the rl-triton inputs


class Skip(Exception):
    """A candidate that does not apply here (the message says why)."""


@dataclass
class Candidate:
    name: str
    fn: Callable[[], Any]
    outputs: Callable[[Any], dict[str, Tensor]]
    capturable: bool = True
    note: str = ""


# --------------------------------------------------------------------------------------------
# Rollouts
# --------------------------------------------------------------------------------------------


@dataclass
class Rollout:
    est: str
    N: int
    T: int
    device: torch.device
    gamma: float
    lam: float
    truncations: bool
    t: dict[str, Tensor] = field(default_factory=dict)

    def __getitem__(self, k: str) -> Tensor:
        return self.t[k]

    def get(self, k: str) -> Tensor | None:
        return self.t.get(k)

    @property
    def done(self) -> Tensor:
        d = self.t["terminated"]
        return d | self.t["truncated"] if self.truncations else d


def make_rollout(est: str, N: int, T: int, *, device: torch.device | str, truncations: bool, gamma: float,
                 lam: float, seed: int) -> Rollout:
    """Fresh random inputs: randn rewards/values, 5% terminations (and 5% truncations with
    ``bootstrap_values`` when asked; a step is never both), a ``last_value``."""
    g = torch.Generator().manual_seed(seed)
    shape = (N, T)

    def randn(*s: int, scale: float = 1.0) -> Tensor:
        return torch.randn(s, generator=g) * scale

    t: dict[str, Tensor] = {}
    t["rewards"] = randn(*shape)
    t["values"] = randn(*shape)
    term = torch.rand(shape, generator=g) < 0.05
    t["terminated"] = term
    t["last_value"] = randn(N)
    if truncations:
        t["truncated"] = (torch.rand(shape, generator=g) < 0.05) & ~term
        bv = randn(*shape)
        bv[:, -1] = t["last_value"]  # the window-edge value (bootstrap_values excludes last_value)
        t["bootstrap_values"] = bv
    if est == "vtrace":
        t["log_pi_behavior"] = torch.log(torch.rand(shape, generator=g) * 0.9 + 0.1)
        t["log_pi_target"] = t["log_pi_behavior"] + randn(*shape, scale=0.5)
        t["log_rhos"] = t["log_pi_target"] - t["log_pi_behavior"]
    elif est in ("retrace", "retrace_av"):
        t["q_values"] = randn(*shape)
        t["state_values"] = t.pop("values")
        pi = torch.softmax(randn(N, T, N_ACTIONS), -1)
        actions = torch.randint(0, N_ACTIONS, shape, generator=g)
        mu = torch.rand(shape, generator=g) * 0.9 + 0.1  # behaviour prob of the taken action
        t["target_probs"] = pi
        t["actions"] = actions
        t["behavior_probs"] = mu
        t["log_rhos"] = torch.log(pi.gather(-1, actions[..., None])[..., 0]) - torch.log(mu)
        if est == "retrace_av":  # the action form: Q and v come from per-action values
            av = randn(N, T, N_ACTIONS)
            t["action_values"] = av
            t["q_values"] = av.gather(-1, actions[..., None])[..., 0]
            t["state_values"] = (pi * av).sum(-1)
            t["behavior_log_probs"] = torch.log(mu)
    elif est in ("traces", "prefix_sum"):
        t.pop("values")
        t.pop("rewards")
        t["x"] = randn(*shape)
        t["initial"] = randn(N)
    dev = torch.device(device)
    return Rollout(est, N, T, dev, gamma, lam, truncations, {k: v.to(dev) for k, v in t.items()})


def _boundary_kwargs(ro: Rollout) -> dict[str, Tensor]:
    if ro.truncations:
        return {"terminated": ro["terminated"], "truncated": ro["truncated"],
                "bootstrap_values": ro["bootstrap_values"]}
    return {"terminated": ro["terminated"], "last_value": ro["last_value"]}


def our_args(ro: Rollout) -> tuple[tuple, dict[str, Any]]:
    """Positional and keyword arguments of ``rt.<estimator>`` (and of ``rt.reference``)."""
    e = ro.est
    if e in ("gae", "td_lambda"):
        return (ro["rewards"], ro["values"]), {"gamma": ro.gamma, "lam": ro.lam, **_boundary_kwargs(ro)}
    if e == "discounted_returns":
        return (ro["rewards"],), {"gamma": ro.gamma, **_boundary_kwargs(ro)}
    if e == "vtrace":
        # lam = 1 (IMPALA's V-trace, what rl-triton computes); pg_rho_bar defaults to rho_bar
        return (ro["rewards"], ro["values"], ro["log_rhos"]), {
            "gamma": ro.gamma, "lam": 1.0, "rho_bar": 1.0, "c_bar": 1.0, **_boundary_kwargs(ro)}
    if e == "retrace":
        return (ro["rewards"], ro["q_values"], ro["state_values"], ro["log_rhos"]), {
            "gamma": ro.gamma, "lam": ro.lam, "c_bar": 1.0, **_boundary_kwargs(ro)}
    if e == "retrace_av":
        return (ro["rewards"], ro["action_values"], ro["target_probs"], ro["actions"], ro["behavior_log_probs"]), {
            "gamma": ro.gamma, "lam": ro.lam, "c_bar": 1.0, **_boundary_kwargs(ro)}
    if e == "traces":
        return (ro["x"],), {"gamma": ro.gamma, "lam": ro.lam, "dones": ro.done, "initial": ro["initial"]}
    if e == "prefix_sum":
        return (ro["x"], ro.done), {"boundary": "ends_at", "initial": ro["initial"]}
    raise ValueError(e)


def floor_io(ro: Rollout) -> list[Tensor]:
    """The per-step inputs our estimator reads (what the streaming floor reads), as ``[N, T]``
    tensors (``common.per_step_inputs``: an ``[N, T, A]`` float32 tensor of the action form
    counts as A/2 float64 ones of the same bytes)."""
    args, kw = our_args(ro)
    return common.per_step_inputs(list(args) + list(kw.values()), (ro.N, ro.T))


def _named(est: str, out: Any) -> dict[str, Tensor]:
    out = tuple(out) if isinstance(out, tuple) else (out,)
    return dict(zip(OUTPUT_NAMES[est], out))


def rltriton_candidate(ro: Rollout, backend: str, name: str = "rltriton") -> Candidate:
    fn = getattr(rt, RT_FN[ro.est])
    args, kw = our_args(ro)
    return Candidate(name, lambda: fn(*args, **kw, backend=backend), lambda o: _named(ro.est, o),
                     note=f"backend={backend}")


def rltriton_time_major_candidate(ro: Rollout, backend: str) -> Candidate:
    """rltriton on CleanRL's layout: every [N, T] tensor stored time-major ([T, N] contiguous)
    and read in place with ``time_dim=0``; outputs come back [T, N] (transposed for the check)."""
    fn = getattr(rt, RT_FN[ro.est])
    args, kw = our_args(ro)

    def tm(x: Any) -> Any:
        if isinstance(x, Tensor) and x.dim() >= 2 and tuple(x.shape[:2]) == (ro.N, ro.T):
            return x.transpose(0, 1).contiguous()  # [T, N] (and [T, N, A] for the action form)
        return x

    targs = tuple(tm(a) for a in args)
    tkw = {k: tm(v) for k, v in kw.items()}
    return Candidate("rltriton(tm)", lambda: fn(*targs, **tkw, time_dim=0, backend=backend),
                     lambda o: {k: v.t() for k, v in _named(ro.est, o).items()},
                     note="time-major [T, N] storage, time_dim=0")


def rltriton_logp_candidate(ro: Rollout, backend: str) -> Candidate:
    """V-trace from the two log-prob tensors rl-triton takes (the subtraction is timed)."""
    if ro.est != "vtrace":
        raise Skip("only for vtrace")
    args, kw = our_args(ro)
    r, v, _ = args
    lpt, lpb = ro["log_pi_target"], ro["log_pi_behavior"]
    return Candidate("rltriton(lp)", lambda: rt.vtrace(r, v, lpt - lpb, **kw, backend=backend),
                     lambda o: _named("vtrace", o), note="log_rhos = log_pi_target - log_pi_behavior inside the call")


def reference_outputs(ro: Rollout, oracle: str) -> dict[str, Tensor]:
    """Float64 outputs on the CPU: ``rt.reference`` (``oracle="reference"``), or rltriton's torch
    backend run in float64 on the rollout's device (``oracle="torch64"``, for long rows)."""
    args, kw = our_args(ro)

    def up(x: Any, dev: torch.device) -> Any:
        if isinstance(x, Tensor):
            x = x.to(dev)
            return x.double() if x.is_floating_point() else x
        return x

    if oracle == "reference":
        cpu = torch.device("cpu")
        fn = getattr(rt.reference, RT_FN[ro.est])
        out = fn(*(up(a, cpu) for a in args), **{k: up(v, cpu) for k, v in kw.items()})
    else:
        out = getattr(rt, RT_FN[ro.est])(*(up(a, ro.device) for a in args),
                                          **{k: up(v, ro.device) for k, v in kw.items()}, backend="torch")
    return {k: v.double().cpu() for k, v in _named(ro.est, out).items()}


def next_state_values(ro: Rollout, values: Tensor | None = None) -> Tensor:
    """nv_t of our boundary rule for the rollout (values[t+1]; bootstrap at truncated steps and
    at T-1; last_value at T-1), with ``values`` defaulting to the rollout's values."""
    v = values if values is not None else ro.get("values") if ro.get("values") is not None else ro["state_values"]
    if ro.truncations:
        bv = ro["bootstrap_values"]
        nv = torch.cat([v[:, 1:], bv[:, -1:]], 1)
        return torch.where(ro["truncated"], bv, nv)
    return torch.cat([v[:, 1:], ro["last_value"][:, None]], 1)


# --------------------------------------------------------------------------------------------
# torch.compile doubling scan (our own baseline)
# --------------------------------------------------------------------------------------------


def _scan_backward(a: Tensor, b: Tensor) -> Tensor:
    """Hillis-Steele doubling scan of A_t = a_t + b_t A_{t+1}, A_T = 0, along the last axis.
    After the step with shift d, (a_t, b_t) is the composed map A_t = a_t + b_t A_{t+2d}."""
    T = a.shape[-1]
    d = 1
    while d < T:
        a = a + b * F.pad(a[..., d:], (0, d))
        b = b * F.pad(b[..., d:], (0, d))
        d *= 2
    return a


def _scan_forward(a: Tensor, b: Tensor) -> Tensor:
    """Doubling scan of z_t = a_t + b_t z_{t-1}, z_{-1} = 0 (fold an initial value into a_0)."""
    T = a.shape[-1]
    d = 1
    while d < T:
        a = a + b * F.pad(a[..., :-d], (d, 0))
        b = b * F.pad(b[..., :-d], (d, 0))
        d *= 2
    return a


def _nv_torch(v: Tensor | None, like: Tensor, trunc: Tensor | None, bv: Tensor | None, lv: Tensor) -> Tensor:
    base = v if v is not None else torch.zeros_like(like)
    if bv is None:
        return torch.cat([base[:, 1:], lv[:, None]], 1)
    nv = torch.cat([base[:, 1:], bv[:, -1:]], 1)
    return torch.where(trunc, bv, nv)


def _inside(done: Tensor) -> Tensor:
    """Steps whose successor is in the window and in the same episode (t < T-1, not done)."""
    T = done.shape[-1]
    return (~done) & (torch.arange(T, device=done.device) < T - 1)


def _torch_gae(r, v, term, trunc, bv, lv, gamma: float, lam: float):
    nv = _nv_torch(v, r, trunc, bv, lv)
    done = term if trunc is None else term | trunc
    delta = r + gamma * (~term).to(r.dtype) * nv - v
    adv = _scan_backward(delta, gamma * lam * (~done).to(r.dtype))
    return adv, adv + v


def _torch_td_lambda(r, v, term, trunc, bv, lv, gamma: float, lam: float):
    nv = _nv_torch(v, r, trunc, bv, lv)
    done = term if trunc is None else term | trunc
    nt = (~term).to(r.dtype)
    c = _inside(done).to(r.dtype)
    return _scan_backward(r + gamma * nt * nv * (1 - lam * c), gamma * nt * lam * c)


def _torch_discounted(r, term, trunc, bv, lv, gamma: float):
    nv = _nv_torch(None, r, trunc, bv, lv)
    done = term if trunc is None else term | trunc
    nt = (~term).to(r.dtype)
    c = _inside(done).to(r.dtype)
    return _scan_backward(r + gamma * nt * (1 - c) * nv, gamma * nt * c)


def _torch_vtrace(r, v, lr, term, trunc, bv, lv, gamma: float, lam: float, rho_bar: float, c_bar: float):
    nv = _nv_torch(v, r, trunc, bv, lv)
    done = term if trunc is None else term | trunc
    nt = (~term).to(r.dtype)
    ratio = torch.exp(lr)
    rho = torch.clamp(ratio, max=rho_bar)
    c = lam * torch.clamp(ratio, max=c_bar)
    vs = v + _scan_backward(rho * (r + gamma * nt * nv - v), gamma * (~done).to(r.dtype) * c)
    vs_next = F.pad(vs[:, 1:], (0, 1))
    q = torch.where(_inside(done), r + gamma * nt * (lam * vs_next + (1 - lam) * nv), r + gamma * nt * nv)
    return vs, rho * (q - v)


def _torch_retrace(r, q, sv, lr, term, trunc, bv, lv, gamma: float, lam: float, c_bar: float):
    nv = _nv_torch(sv, r, trunc, bv, lv)
    done = term if trunc is None else term | trunc
    nt = (~term).to(r.dtype)
    c = lam * torch.clamp(torch.exp(lr), max=c_bar)
    c_next = F.pad(c[:, 1:], (0, 1))
    qt = q + _scan_backward(r + gamma * nt * nv - q, gamma * (~done).to(r.dtype) * c_next)
    return qt, qt - sv


def _torch_retrace_av(r, av, pi, actions, blp, term, trunc, bv, lv, gamma: float, lam: float, c_bar: float):
    q = av.gather(-1, actions[..., None])[..., 0]
    sv = (pi * av).sum(-1)
    lr = torch.log(pi.gather(-1, actions[..., None])[..., 0]) - blp
    return _torch_retrace(r, q, sv, lr, term, trunc, bv, lv, gamma, lam, c_bar)


def _torch_traces(x, dones, init, gamma: float, lam: float):
    keep = F.pad((~dones[:, :-1]).to(x.dtype), (1, 0), value=1.0)
    b = gamma * lam * keep
    a = torch.cat([x[:, :1] + b[:, :1] * init[:, None], x[:, 1:]], 1)
    return _scan_forward(a, b)


def _torch_prefix_sum(x, dones, init):
    b = F.pad((~dones[:, :-1]).to(x.dtype), (1, 0), value=1.0)
    a = torch.cat([x[:, :1] + init[:, None], x[:, 1:]], 1)
    return _scan_forward(a, b)


_COMPILED: dict[str, Callable] = {}


def _compiled(name: str, fn: Callable, enabled: bool) -> Callable:
    if not enabled:
        return fn
    if name not in _COMPILED:
        import torch._dynamo as dynamo

        for k in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                  "accumulated_recompile_limit"):
            if hasattr(dynamo.config, k):
                setattr(dynamo.config, k, max(getattr(dynamo.config, k), 1024))
        if hasattr(dynamo.config, "automatic_dynamic_shapes"):
            dynamo.config.automatic_dynamic_shapes = False
        _COMPILED[name] = torch.compile(fn, dynamic=False)
    return _COMPILED[name]


def torch_compile_candidate(ro: Rollout, *, compile: bool = True) -> Candidate:
    e = ro.est
    fn = _compiled(e, {"gae": _torch_gae, "td_lambda": _torch_td_lambda, "discounted_returns": _torch_discounted,
                       "vtrace": _torch_vtrace, "retrace": _torch_retrace, "retrace_av": _torch_retrace_av,
                       "traces": _torch_traces, "prefix_sum": _torch_prefix_sum}[e], compile)
    trunc = ro.get("truncated") if ro.truncations else None
    bv = ro.get("bootstrap_values") if ro.truncations else None
    term, lv, g, lm = ro.get("terminated"), ro.get("last_value"), ro.gamma, ro.lam
    if e in ("gae", "td_lambda"):
        args = (ro["rewards"], ro["values"], term, trunc, bv, lv, g, lm)
    elif e == "discounted_returns":
        args = (ro["rewards"], term, trunc, bv, lv, g)
    elif e == "vtrace":
        args = (ro["rewards"], ro["values"], ro["log_rhos"], term, trunc, bv, lv, g, 1.0, 1.0, 1.0)
    elif e == "retrace":
        args = (ro["rewards"], ro["q_values"], ro["state_values"], ro["log_rhos"], term, trunc, bv, lv, g, lm, 1.0)
    elif e == "retrace_av":
        args = (ro["rewards"], ro["action_values"], ro["target_probs"], ro["actions"], ro["behavior_log_probs"],
                term, trunc, bv, lv, g, lm, 1.0)
    elif e == "traces":
        args = (ro["x"], ro.done, ro["initial"], g, lm)
    else:
        args = (ro["x"], ro.done, ro["initial"])
    name = "torch.compile" if compile else "torch-doubling"
    return Candidate(name, lambda: fn(*args), lambda o: _named(e, o),
                     note="Hillis-Steele doubling scan, torch.compile(dynamic=False)" if compile else "eager")


# --------------------------------------------------------------------------------------------
# TorchRL
# --------------------------------------------------------------------------------------------


def torchrl_status() -> tuple[bool, str]:
    try:
        import torchrl  # noqa: F401
        from torchrl.objectives.value import functional  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
        return False, f"import torchrl failed: {type(exc).__name__}: {exc}"
    return True, f"torchrl {getattr(torchrl, '__version__', '?')}"


def torchrl_candidate(ro: Rollout) -> Candidate:
    if ro.est not in ("gae", "td_lambda"):
        raise Skip("TorchRL adapter covers gae (vec GAE) and td_lambda (vec TD(lambda)) only")
    from torchrl.objectives.value import functional as trl

    nv = next_state_values(ro)[..., None].contiguous()
    rew = ro["rewards"][..., None].contiguous()
    done = ro.done[..., None].contiguous()
    term = ro["terminated"][..., None].contiguous()
    g, lm = ro.gamma, ro.lam
    note = "calls .item() and data-dependent boolean indexing (host syncs)"
    if ro.est == "gae":
        sv = ro["values"][..., None].contiguous()
        f = trl.vec_generalized_advantage_estimate
        return Candidate("torchrl", lambda: f(g, lm, sv, nv, rew, done, term, time_dim=-2),
                         lambda o: {"advantages": o[0][..., 0], "value_targets": o[1][..., 0]},
                         capturable=False, note=note)
    f = trl.vec_td_lambda_return_estimate
    return Candidate("torchrl", lambda: f(g, lm, nv, rew, done, term, time_dim=-2),
                     lambda o: {"returns": o[..., 0]}, capturable=False, note=note)


# --------------------------------------------------------------------------------------------
# CleanRL-style loop
# --------------------------------------------------------------------------------------------

CLEANRL_MAX_T = 512
CLEANRL_MAX_NT = 2**21


def _cleanrl_gae(rewards, values, dones, next_done, next_value, gamma: float, lam: float):
    """The PPO loop over time-major [T, N] buffers (dones[t]: the done flag that came with obs t)."""
    T = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    lastgaelam = 0
    for t in reversed(range(T)):
        if t == T - 1:
            nextnonterminal = 1.0 - next_done
            nextvalues = next_value
        else:
            nextnonterminal = 1.0 - dones[t + 1]
            nextvalues = values[t + 1]
        delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
        advantages[t] = lastgaelam = delta + gamma * lam * nextnonterminal * lastgaelam
    return advantages, advantages + values


def _folded_rewards(ro: Rollout) -> Tensor:
    """Stable-Baselines3's truncation fold: r_t + gamma * V(s_{t+1}) at truncated steps."""
    r = ro["rewards"]
    if not ro.truncations:
        return r
    return torch.where(ro["truncated"], r + ro.gamma * ro["bootstrap_values"], r)


def cleanrl_candidate(ro: Rollout) -> Candidate:
    if ro.est != "gae":
        raise Skip("GAE only")
    if ro.T > CLEANRL_MAX_T or ro.N * ro.T > CLEANRL_MAX_NT:
        raise Skip(f"loop over T only where T <= {CLEANRL_MAX_T} and N*T <= 2**21")
    done = ro.done.float()
    r_tm = _folded_rewards(ro).t().contiguous()
    v_tm = ro["values"].t().contiguous()
    dones_tm = F.pad(done[:, :-1], (1, 0)).t().contiguous()  # flag that came with obs t = done_{t-1}
    next_done = done[:, -1].contiguous()
    next_value = (ro["bootstrap_values"][:, -1] if ro.truncations else ro["last_value"]).contiguous()
    g, lm = ro.gamma, ro.lam
    return Candidate("cleanrl", lambda: _cleanrl_gae(r_tm, v_tm, dones_tm, next_done, next_value, g, lm),
                     lambda o: {"advantages": o[0].t(), "value_targets": o[1].t()},
                     note="Python loop over T, time-major [T, N]")


def _origin(name: str) -> str:
    """Where a peer's source in .peers came from (its ``NAME.COMMIT`` file)."""
    f = PEERS_DIR / f"{name}.COMMIT"
    return f.read_text().strip() if f.exists() else "source of unknown origin"


# --------------------------------------------------------------------------------------------
# rl-triton 0.1.3 (source under /.peers/rl_triton, imported from there)
# --------------------------------------------------------------------------------------------


class _NoAssertLoader(importlib.machinery.SourceFileLoader):
    """Compiles with asserts stripped (``--smoke`` only: rl-triton asserts ``is_cuda``, and the
    smoke run feeds CPU tensors to its kernels through the Triton interpreter). Never caches."""

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        return compile(self.get_data(path), path, "exec", dont_inherit=True, optimize=1)


class _NoAssertFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname != "rl_triton" and not fullname.startswith("rl_triton."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path or [str(PEERS_DIR)])
        if spec is not None and spec.origin and spec.origin.endswith(".py"):
            spec.loader = _NoAssertLoader(fullname, spec.origin)
        return spec


_RLT: Any = None


def rl_triton_status(strip_asserts: bool = False) -> tuple[bool, str]:
    global _RLT
    if _RLT is not None:
        return True, f"rl-triton {_RLT.__version__}"
    if not (PEERS_DIR / "rl_triton" / "__init__.py").exists():
        return False, f"rl-triton not found under {PEERS_DIR}/rl_triton (it is not on PyPI; see benchmarks/README.md)"
    try:
        if strip_asserts:
            sys.meta_path.insert(0, _NoAssertFinder())
        elif str(PEERS_DIR) not in sys.path:
            sys.path.insert(0, str(PEERS_DIR))
        import rl_triton

        _RLT = rl_triton
    except Exception as exc:  # noqa: BLE001
        return False, f"import rl_triton failed: {type(exc).__name__}: {exc}"
    return True, f"rl-triton {rl_triton.__version__} ({_origin('rl_triton')})"


def _rl_bootstrap(ro: Rollout) -> Tensor:
    """rl-triton's bootstrap_values: V(s_{t+1}) at truncated steps and at T-1, zero elsewhere."""
    bv = ro["bootstrap_values"]
    last = torch.zeros_like(ro["truncated"])
    last[:, -1] = True
    return torch.where(ro["truncated"] | last, bv, torch.zeros_like(bv)).contiguous()


def _edge_column(ro: Rollout) -> Tensor:
    """A [N, T] tensor whose last column is the window-edge value (rl-triton reads only that column
    when there are no truncations)."""
    out = torch.zeros_like(ro["rewards"] if ro.get("rewards") is not None else ro["x"])
    out[:, -1] = ro["last_value"]
    return out


def rl_triton_candidate(ro: Rollout) -> Candidate:
    rlt = _RLT
    assert rlt is not None
    e, g, lm = ro.est, ro.gamma, ro.lam
    term_f = ro["terminated"].float()
    trunc_f = ro["truncated"].float() if ro.truncations else None
    flat_max = 131072
    if e == "gae":
        r, v = ro["rewards"], ro["values"]
        if ro.truncations:
            bv = _rl_bootstrap(ro)
            fn = lambda: rlt.compute_gae(r, v, term_f, trunc_f, g, lm, bootstrap_values=bv)  # noqa: E731
        else:
            lv = ro["last_value"]
            fn = lambda: rlt.compute_gae(r, v, term_f, None, g, lm, last_value=lv)  # noqa: E731
        return Candidate("rl-triton", fn, lambda o: {"advantages": o}, note="compute_gae (advantages only)")
    if e == "td_lambda":
        r = ro["rewards"]
        nv = next_state_values(ro)
        if ro.truncations:
            nv = torch.where(ro["truncated"], torch.zeros_like(nv), nv).contiguous()  # its contract
            bv = _rl_bootstrap(ro)
        else:
            bv = _edge_column(ro)
        return Candidate("rl-triton",
                         lambda: rlt.compute_lambda_returns(r, nv, term_f, trunc_f, g, lm, bootstrap_values=bv),
                         lambda o: {"returns": o}, note="compute_lambda_returns(next_values zeroed at truncations)")
    if e == "discounted_returns":
        r = ro["rewards"]
        bv = _rl_bootstrap(ro) if ro.truncations else _edge_column(ro)
        return Candidate("rl-triton",
                         lambda: rlt.compute_discounted_returns(r, term_f, trunc_f, g, bootstrap_values=bv),
                         lambda o: {"returns": o}, note="compute_discounted_returns")
    if e == "vtrace":
        r, v, lpt, lpb = ro["rewards"], ro["values"], ro["log_pi_target"], ro["log_pi_behavior"]
        if ro.truncations:
            bv = _rl_bootstrap(ro)
            fn = lambda: rlt.compute_vtrace(lpt, lpb, v, r, term_f, trunc_f, g, 1.0, 1.0, bootstrap_values=bv)  # noqa: E731
        else:
            lv = ro["last_value"]
            fn = lambda: rlt.compute_vtrace(lpt, lpb, v, r, term_f, None, g, 1.0, 1.0, last_value=lv)  # noqa: E731
        return Candidate("rl-triton", fn, lambda o: {"value_targets": o[0], "advantages": o[1]},
                         note="compute_vtrace (lambda = 1; reads log_pi_target and log_pi_behavior)")
    if e == "retrace":
        r, q = ro["rewards"], ro["q_values"]
        pi, mu, actions = ro["target_probs"], ro["behavior_probs"], ro["actions"]
        # its delta uses sum_a pi(a|s_t) Q(s_{t+1}, a): with Q(s_{t+1}, .) constant over actions and
        # equal to our nv_t, that expectation is nv_t whatever pi(.|s_t) is
        nq = next_state_values(ro)[..., None].expand(ro.N, ro.T, N_ACTIONS).contiguous()
        tr = trunc_f if trunc_f is not None else torch.zeros_like(term_f)
        return Candidate("rl-triton",
                         lambda: rlt.compute_retrace(pi, mu, q, nq, actions, r, term_f, tr, g, lm, 1.0, 1.0),
                         lambda o: {"q_targets": o[0]},
                         note="compute_retrace: q targets only (its advantage is rho*(r + g Q_ret[t+1]) - Q, "
                              "not ours); next_q_values_all = nv_t broadcast over actions")
    if e == "retrace_av":
        raise Skip("rl-triton's compute_retrace is timed on the q-form row (retrace)")
    if e in ("traces", "prefix_sum"):
        if ro.T > flat_max:
            raise Skip(f"rl-triton's forward scans are limited to seq_len <= {flat_max}")
        x, init = ro["x"], ro["initial"]
        d = ro.done.float()
        if e == "traces":
            return Candidate("rl-triton", lambda: rlt.compute_eligibility_traces(x, d, g, lm, seed_values=init),
                             lambda o: {"traces": o}, note="compute_eligibility_traces")
        return Candidate("rl-triton",
                         lambda: rlt.compute_episodic_prefix_sum(x, d, seed_values=init, boundary="ends_at"),
                         lambda o: {"sums": o}, note="compute_episodic_prefix_sum(boundary='ends_at')")
    raise Skip(e)


# --------------------------------------------------------------------------------------------
# PufferLib
# --------------------------------------------------------------------------------------------

_PUFF: Any = None
# PufferLib's op built from its own source on the benchmark machine: PyPI has no Linux build
# of it (see pufferlib_status). The two files of its extension (the op's schema and CPU
# kernel, and its CUDA kernel) sit unchanged in the git-ignored .peers/pufferlib, with their
# origin in .peers/pufferlib.COMMIT; nvcc builds them into a library that registers
# torch.ops.pufferlib.compute_puff_advantage, as PufferLib's own ``pufferlib._C`` does.
PUFFER_SRC = PEERS_DIR / "pufferlib"
PUFFER_BUILD = Path("/tmp/rltriton-pufferlib-build")


def _build_pufferlib() -> str:
    """Build and load .peers/pufferlib's op (with its CUDA kernel when a GPU is present); a
    note on what was loaded. Raises on any failure (no compiler, a build error)."""
    from torch.utils import cpp_extension

    sources = [str(PUFFER_SRC / "pufferlib.cpp")]
    if torch.cuda.is_available():
        sources.append(str(PUFFER_SRC / "cuda" / "pufferlib.cu"))
    PUFFER_BUILD.mkdir(parents=True, exist_ok=True)
    cpp_extension.load(name="rltriton_pufferlib_peer", sources=sources, build_directory=str(PUFFER_BUILD),
                       is_python_module=False, verbose=False)
    kernels = "its CPU and CUDA kernels" if len(sources) == 2 else "its CPU kernel only (no GPU)"
    return f"PufferLib's op built here from .peers/pufferlib, {kernels} ({_origin('pufferlib')})"


def pufferlib_status() -> tuple[bool, str]:
    global _PUFF
    note = ""
    try:
        import pufferlib

        try:
            from pufferlib import _C  # noqa: F401  (registers torch.ops.pufferlib)
        except Exception:  # noqa: BLE001
            pass
        note = f"pufferlib {getattr(pufferlib, '__version__', '?')}"
    except Exception as exc:  # noqa: BLE001
        note = (f"import pufferlib failed: {type(exc).__name__}: {exc}. PyPI has no Linux build of "
                "the CUDA op (checked 2026-11-30: pufferlib 2.0.2's Linux wheel has a CPU GAE only, "
                "pufferlib-core 3.0.9 a macOS binary and the CPU source)")
    if not hasattr(torch.ops.pufferlib, "compute_puff_advantage"):
        if not (PUFFER_SRC / "pufferlib.cpp").exists():
            return False, note + "; no PufferLib source in .peers/pufferlib to build it from (benchmarks/README.md)"
        try:
            note = _build_pufferlib()
        except Exception as exc:  # noqa: BLE001
            return False, f"{note}; building .peers/pufferlib failed: {type(exc).__name__}: {str(exc)[:300]}"
    try:
        _PUFF = torch.ops.pufferlib.compute_puff_advantage
    except Exception as exc:  # noqa: BLE001
        return False, f"{note}; pufferlib's compiled op did not load: {type(exc).__name__}: {exc}"
    return True, note


def pufferlib_candidate(ro: Rollout) -> Candidate:
    if ro.est != "gae":
        raise Skip("GAE only")
    op = _PUFF
    N, T = ro.N, ro.T
    dev = ro.device
    edge = ro["bootstrap_values"][:, -1:] if ro.truncations else ro["last_value"][:, None]
    values = torch.cat([ro["values"], edge], 1).contiguous()
    zeros = torch.zeros(N, 1, device=dev)
    rewards = torch.cat([zeros, _folded_rewards(ro)], 1).contiguous()  # rewards[t+1] = reward of action t
    dones = torch.cat([zeros, ro.done.float()], 1).contiguous()
    importance = torch.ones(N, T + 1, device=dev)
    adv = torch.zeros(N, T + 1, device=dev)
    g, lm = ro.gamma, ro.lam

    def fn():
        op(values, rewards, dones, importance, adv, g, lm, 1.0, 1.0)
        return adv

    # its CUDA kernel is launched on the legacy default stream, not the current one, so a CUDA
    # graph captures nothing: only its full call is timed
    return Candidate("pufferlib", fn, lambda o: {"advantages": o[:, :T]}, capturable=False,
                     note="compute_puff_advantage on [N, T+1] (shifted rewards/dones, importance 1); "
                          "launches on the legacy default stream: no CUDA-graph device time")


def tolerance(T: int, ref: Tensor) -> float:
    """Absolute float32 tolerance against the float64 oracle (the formula of tests/rollouts.py)."""
    eps = torch.finfo(torch.float32).eps
    scale = float(ref.abs().max()) if ref.numel() else 1.0
    return 8.0 * (min(max(T, 1), 512) + 8) * eps * (scale + 4.0)


def check(out: dict[str, Tensor], ref: dict[str, Tensor], T: int) -> dict[str, Any]:
    """Max abs error of every output the candidate returns that the oracle has; pass/fail."""
    per: dict[str, Any] = {}
    ok = True
    worst = 0.0
    for k, o in out.items():
        if k not in ref:
            continue
        r = ref[k]
        o64 = o.detach().double().cpu()
        if tuple(o64.shape) != tuple(r.shape):
            per[k] = {"err": None, "tol": None, "ok": False, "why": f"shape {tuple(o64.shape)} vs {tuple(r.shape)}"}
            ok = False
            continue
        err = float((o64 - r).abs().max()) if r.numel() else 0.0
        tol = tolerance(T, r)
        good = math.isfinite(err) and err <= tol
        per[k] = {"err": err, "tol": tol, "ok": good}
        ok &= good
        worst = max(worst, err) if math.isfinite(err) else float("inf")
    if not per:
        return {"ok": False, "max_abs_err": None, "outputs": {}, "why": "no comparable output"}
    return {"ok": ok, "max_abs_err": worst, "outputs": per}
