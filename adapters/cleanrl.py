"""CleanRL's PPO loop (and IMPALA-style scripts) with rltriton doing the credit assignment.

The one-line switch in ``cleanrl/ppo.py`` (and ``ppo_continuous_action.py``, ``ppo_atari.py``,
...): replace the block from ``advantages = torch.zeros_like(rewards)`` to ``returns =
advantages + values`` by::

    from rltriton.adapters.cleanrl import compute_gae

    advantages, returns = compute_gae(rewards, values, dones, next_value, next_done, args.gamma, args.gae_lambda)

It returns the same ``[num_steps, num_envs]`` tensors as CleanRL's loop (equal to float64
rounding; float32 buffers give float32 rounding), reading the time-major buffers in place
(``time_dim=0``, no transpose or copy of rewards and values; the transitions' flags, ``dones``
shifted by one with ``next_done`` appended, are one new ``[T, N]`` tensor).

CleanRL's conventions (kept by the ``compute_*`` functions)
-----------------------------------------------------------
* Buffers are time-major ``[num_steps, num_envs]`` (any ``[num_steps, *B]`` works).
* ``dones[t]`` is the done flag that came *with* observation t: obs t is the first of an
  episode. The transition t -> t+1 therefore ends an episode when ``dones[t + 1]`` is set
  (``next_done`` for the last step). rltriton's flags are per transition, so the adapter
  reads ``terminated[t] = dones[t + 1]`` (``next_done`` at t = T-1).
* ``next_done = terminations | truncations``: a time limit is treated as a death (no
  bootstrap); ``next_value`` (``[num_envs]`` or CleanRL's ``[1, num_envs]``) is V(next_obs),
  the continuation at the window edge, ignored where ``next_done`` is set.

Truncation-aware variants (``*_with_truncation``)
-------------------------------------------------
Treating a time limit as a death biases the value of states near the limit. The variants
take instead, per transition t (as ``envs.step`` returns them, *not* shifted like
``dones``):

* ``terminations[t]``, ``truncations[t]`` -- the two flags of step t (bool, int or float);
* ``final_values[t]`` -- V(s_{t+1}) of the true next state of a truncated step, read only
  where ``truncations[t]`` is set (fill the rest with anything finite, e.g. 0). With
  Gymnasium 0.29 (CleanRL's pin) or ``autoreset_mode=SAME_STEP`` the env has already reset
  when step t returns, so this is V(``infos["final_observation"]`` / ``infos["final_obs"]``);
* ``next_value`` -- V(next_obs) at the window edge, as in CleanRL (a step truncated at
  t = T-1 uses ``final_values[T-1]`` instead; a terminated one uses nothing).

A terminated step has no bootstrap; a truncated step bootstraps from ``final_values[t]``;
both cut the recursion (SPEC.md section 2).

Gymnasium >= 1.0 defaults to ``autoreset_mode=NEXT_STEP``: the step after a done returns
the reset observation with reward 0 and both flags False, ignoring the action. Then the true
final observation *is* the next stored observation, so pass
``final_values=next_step_final_values(values, next_value)`` (``values[t + 1]``, and
``next_value`` at the edge), and drop the fake "final obs -> reset obs" transitions from
every loss and statistic with ``next_step_valid_mask(dones)`` (they are exactly the steps
whose observation CleanRL marks with ``dones[t]``). The fake step cannot leak into real
ones: the step before it is done, which cuts the recursion.

Counterparts for other scripts
------------------------------
* :func:`compute_returns` -- CleanRL's non-GAE branch (discounted returns bootstrapped with
  ``next_value``); :func:`compute_td_lambda` -- lambda-returns (equal to GAE's ``returns``);
* :func:`compute_vtrace` -- V-trace value targets ``vs`` and policy-gradient advantages for
  IMPALA-style learners (``behavior_logprobs`` from the actors, ``target_logprobs`` from the
  learner's policy; rlax's ``lambda``, clipping thresholds ``rho_bar``, ``c_bar``,
  ``pg_rho_bar``);

each with a ``*_with_truncation`` variant. Every function takes keyword ``backend``
(``"auto"``: Triton on CUDA, torch elsewhere). Outputs are float32 (float64 when an input
is float64), in the buffers' ``[num_steps, num_envs]`` layout.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

import rltriton as rt

__all__ = [
    "GAEReturns",
    "VTraceReturns",
    "compute_gae",
    "compute_gae_with_truncation",
    "compute_returns",
    "compute_returns_with_truncation",
    "compute_td_lambda",
    "compute_td_lambda_with_truncation",
    "compute_vtrace",
    "compute_vtrace_with_truncation",
    "next_step_final_values",
    "next_step_valid_mask",
]


class GAEReturns(NamedTuple):
    """``advantages`` and ``returns = advantages + values`` (CleanRL's names)."""

    advantages: Tensor
    returns: Tensor


class VTraceReturns(NamedTuple):
    """V-trace value targets ``vs`` and policy-gradient advantages."""

    vs: Tensor
    pg_advantages: Tensor


def _tensor(name: str, x: object) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    return x


def _buffer(name: str, x: object, like: Tensor) -> Tensor:
    x = _tensor(name, x)
    if x.shape != like.shape:
        raise ValueError(f"{name}: expected shape {tuple(like.shape)} (like rewards), got {tuple(x.shape)}")
    return x


def _row(name: str, x: object, rewards: Tensor) -> Tensor:
    """``next_value`` / ``next_done``: ``[*B]`` or CleanRL's ``[1, *B]`` -> ``[*B]``."""
    x = _tensor(name, x)
    row = rewards.shape[1:]
    if x.shape == row:
        return x
    if x.shape == (1, *row):
        return x.reshape(row)
    raise ValueError(f"{name}: expected shape {tuple(row)} or {(1, *row)}, got {tuple(x.shape)}")


def _check_rollout(rewards: object) -> Tensor:
    rewards = _tensor("rewards", rewards)
    if rewards.dim() == 0:
        raise ValueError("rewards: expected a [num_steps, num_envs] tensor, got a 0-d tensor")
    return rewards


def _transition_dones(dones: object, next_done: object, rewards: Tensor) -> Tensor:
    """CleanRL's observation-aligned ``dones`` as per-transition flags: ``dones[t + 1]``,
    and ``next_done`` at t = T-1."""
    dones = _buffer("dones", dones, rewards)
    nd = _row("next_done", next_done, rewards)
    if nd.dtype != dones.dtype:
        nd = nd.to(dones.dtype)
    return torch.cat([dones[1:], nd.unsqueeze(0)], dim=0)


def _bootstrap(truncations: Tensor, final_values: object, next_value: Tensor, rewards: Tensor) -> Tensor:
    """``final_values`` with the last row replaced by ``next_value`` where step T-1 is not
    truncated: the ``bootstrap_values`` of SPEC.md section 2."""
    fv = _buffer("final_values", final_values, rewards)
    last_trunc = truncations[-1] if truncations.dtype == torch.bool else truncations[-1] != 0
    last = torch.where(last_trunc, fv[-1], next_value.to(fv.dtype))
    return torch.cat([fv[:-1], last.unsqueeze(0)], dim=0)


# --------------------------------------------------------------------------------------
# GAE
# --------------------------------------------------------------------------------------


def compute_gae(
    rewards: Tensor,
    values: Tensor,
    dones: Tensor,
    next_value: Tensor,
    next_done: Tensor,
    gamma: float,
    gae_lambda: float,
    *,
    backend: str = "auto",
) -> GAEReturns:
    """CleanRL's GAE loop: ``(advantages, returns)`` of ``[num_steps, num_envs]`` buffers.

    Equivalent to::

        for t in reversed(range(T)):
            nextnonterminal = 1 - (next_done if t == T - 1 else dones[t + 1])
            nextvalues = next_value if t == T - 1 else values[t + 1]
            delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
            advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
        returns = advantages + values
    """
    rewards = _check_rollout(rewards)
    term = _transition_dones(dones, next_done, rewards)
    nv = _row("next_value", next_value, rewards)
    adv, ret = rt.gae(
        rewards, values, gamma=gamma, lam=gae_lambda, terminated=term, last_value=nv, time_dim=0, backend=backend
    )
    return GAEReturns(adv, ret)


def compute_gae_with_truncation(
    rewards: Tensor,
    values: Tensor,
    terminations: Tensor,
    truncations: Tensor,
    final_values: Tensor,
    next_value: Tensor,
    gamma: float,
    gae_lambda: float,
    *,
    backend: str = "auto",
) -> GAEReturns:
    """GAE that bootstraps time limits: per-step ``terminations`` / ``truncations`` (as
    returned by ``envs.step``) and ``final_values[t]`` = V(true next state) at truncated
    steps. See the module docstring (and :func:`next_step_final_values` for Gymnasium's
    NEXT_STEP autoreset)."""
    rewards = _check_rollout(rewards)
    term = _buffer("terminations", terminations, rewards)
    trunc = _buffer("truncations", truncations, rewards)
    nv = _row("next_value", next_value, rewards)
    adv, ret = rt.gae(
        rewards, values, gamma=gamma, lam=gae_lambda, terminated=term, truncated=trunc,
        bootstrap_values=_bootstrap(trunc, final_values, nv, rewards), time_dim=0, backend=backend,
    )
    return GAEReturns(adv, ret)


# --------------------------------------------------------------------------------------
# returns and TD(lambda)
# --------------------------------------------------------------------------------------


def compute_returns(
    rewards: Tensor,
    dones: Tensor,
    next_value: Tensor,
    next_done: Tensor,
    gamma: float,
    *,
    backend: str = "auto",
) -> Tensor:
    """CleanRL's non-GAE returns (``advantages = returns - values`` in its old ``ppo.py``)::

        returns[t] = rewards[t] + gamma * nextnonterminal * (next_value if t == T - 1 else returns[t + 1])
    """
    rewards = _check_rollout(rewards)
    term = _transition_dones(dones, next_done, rewards)
    nv = _row("next_value", next_value, rewards)
    return rt.discounted_returns(rewards, gamma=gamma, terminated=term, last_value=nv, time_dim=0, backend=backend)


def compute_returns_with_truncation(
    rewards: Tensor,
    terminations: Tensor,
    truncations: Tensor,
    final_values: Tensor,
    next_value: Tensor,
    gamma: float,
    *,
    backend: str = "auto",
) -> Tensor:
    """Discounted returns cut at every done, bootstrapped from ``final_values`` at truncated
    steps and from ``next_value`` at the window edge."""
    rewards = _check_rollout(rewards)
    term = _buffer("terminations", terminations, rewards)
    trunc = _buffer("truncations", truncations, rewards)
    nv = _row("next_value", next_value, rewards)
    return rt.discounted_returns(
        rewards, gamma=gamma, terminated=term, truncated=trunc,
        bootstrap_values=_bootstrap(trunc, final_values, nv, rewards), time_dim=0, backend=backend,
    )


def compute_td_lambda(
    rewards: Tensor,
    values: Tensor,
    dones: Tensor,
    next_value: Tensor,
    next_done: Tensor,
    gamma: float,
    td_lambda: float,
    *,
    backend: str = "auto",
) -> Tensor:
    """Lambda-returns with CleanRL's conventions (``= compute_gae(...).returns`` up to rounding)::

        G[t] = rewards[t] + gamma * nextnonterminal * ((1 - lambda) * nextvalues + lambda * G[t + 1])

    with ``G[t + 1]`` replaced by ``next_value`` at t = T-1.
    """
    rewards = _check_rollout(rewards)
    term = _transition_dones(dones, next_done, rewards)
    nv = _row("next_value", next_value, rewards)
    return rt.td_lambda(
        rewards, values, gamma=gamma, lam=td_lambda, terminated=term, last_value=nv, time_dim=0, backend=backend
    )


def compute_td_lambda_with_truncation(
    rewards: Tensor,
    values: Tensor,
    terminations: Tensor,
    truncations: Tensor,
    final_values: Tensor,
    next_value: Tensor,
    gamma: float,
    td_lambda: float,
    *,
    backend: str = "auto",
) -> Tensor:
    """Lambda-returns that bootstrap time limits from ``final_values``."""
    rewards = _check_rollout(rewards)
    term = _buffer("terminations", terminations, rewards)
    trunc = _buffer("truncations", truncations, rewards)
    nv = _row("next_value", next_value, rewards)
    return rt.td_lambda(
        rewards, values, gamma=gamma, lam=td_lambda, terminated=term, truncated=trunc,
        bootstrap_values=_bootstrap(trunc, final_values, nv, rewards), time_dim=0, backend=backend,
    )


# --------------------------------------------------------------------------------------
# V-trace
# --------------------------------------------------------------------------------------


def compute_vtrace(
    rewards: Tensor,
    values: Tensor,
    dones: Tensor,
    next_value: Tensor,
    next_done: Tensor,
    behavior_logprobs: Tensor,
    target_logprobs: Tensor,
    gamma: float,
    *,
    vtrace_lambda: float = 1.0,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
    pg_rho_bar: float | None = None,
    backend: str = "auto",
) -> VTraceReturns:
    """V-trace on CleanRL-style buffers: ``(vs, pg_advantages)``.

    ``behavior_logprobs[t]`` = log mu(a_t|s_t) of the acting policy (CleanRL's ``logprobs``
    buffer), ``target_logprobs[t]`` = log pi(a_t|s_t) of the learner's policy. The
    recursion is :class:`rltriton.VTrace` (rlax's lambda: ``c_t = lambda min(c_bar, rho_t)``)
    with ``terminated[t] = dones[t + 1]`` and ``next_value`` at the window edge.
    """
    rewards = _check_rollout(rewards)
    term = _transition_dones(dones, next_done, rewards)
    nv = _row("next_value", next_value, rewards)
    log_rhos = _buffer("target_logprobs", target_logprobs, rewards) - _buffer(
        "behavior_logprobs", behavior_logprobs, rewards
    )
    vs, pg = rt.vtrace(
        rewards, values, log_rhos, gamma=gamma, lam=vtrace_lambda, rho_bar=rho_bar, c_bar=c_bar,
        pg_rho_bar=pg_rho_bar, terminated=term, last_value=nv, time_dim=0, backend=backend,
    )
    return VTraceReturns(vs, pg)


def compute_vtrace_with_truncation(
    rewards: Tensor,
    values: Tensor,
    terminations: Tensor,
    truncations: Tensor,
    final_values: Tensor,
    next_value: Tensor,
    behavior_logprobs: Tensor,
    target_logprobs: Tensor,
    gamma: float,
    *,
    vtrace_lambda: float = 1.0,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
    pg_rho_bar: float | None = None,
    backend: str = "auto",
) -> VTraceReturns:
    """V-trace that bootstraps time limits from ``final_values`` (value targets *and*
    policy-gradient advantages: a truncated step never looks at the next episode)."""
    rewards = _check_rollout(rewards)
    term = _buffer("terminations", terminations, rewards)
    trunc = _buffer("truncations", truncations, rewards)
    nv = _row("next_value", next_value, rewards)
    log_rhos = _buffer("target_logprobs", target_logprobs, rewards) - _buffer(
        "behavior_logprobs", behavior_logprobs, rewards
    )
    vs, pg = rt.vtrace(
        rewards, values, log_rhos, gamma=gamma, lam=vtrace_lambda, rho_bar=rho_bar, c_bar=c_bar,
        pg_rho_bar=pg_rho_bar, terminated=term, truncated=trunc,
        bootstrap_values=_bootstrap(trunc, final_values, nv, rewards), time_dim=0, backend=backend,
    )
    return VTraceReturns(vs, pg)


# --------------------------------------------------------------------------------------
# Gymnasium NEXT_STEP autoreset helpers
# --------------------------------------------------------------------------------------


def next_step_final_values(values: Tensor, next_value: Tensor) -> Tensor:
    """``final_values`` under Gymnasium's NEXT_STEP autoreset: the true final observation of
    step t is the next stored observation, so V(s_{t+1}) = ``values[t + 1]``, and
    ``next_value`` at t = T-1."""
    values = _check_rollout(values)
    nv = _row("next_value", next_value, values)
    return torch.cat([values[1:], nv.to(values.dtype).unsqueeze(0)], dim=0)


def next_step_valid_mask(dones: Tensor) -> Tensor:
    """Under NEXT_STEP autoreset, the real transitions: ``dones[t] == 0`` (CleanRL's
    observation-aligned flags). A step whose observation came with a done is the fake
    "final obs -> reset obs" step (action ignored, reward 0): weight it out of the losses."""
    dones = _tensor("dones", dones)
    return dones == 0
