"""Retrace(lambda) (Munos et al., 2016)."""

from __future__ import annotations

import torch
from torch import Tensor

from rltriton import reference
from rltriton.assigner import Coef, CreditAssigner, Problem, check_threshold, check_unit, instance, is_tensordict
from rltriton.backends.torch_backend import affine_scan
from rltriton.estimators._shift import shift_next
from rltriton.results import RetraceResult


def _retrace_torch(p: Problem, q: Tensor, v: Tensor, log_rhos: Tensor, c_bar: float) -> tuple[Tensor, Tensor]:
    """D_t = r_t + g_t (1-term_t) nv_t - Q_t + g_t (1-done_t) c_{t+1} D_{t+1}; c_T = 0."""
    r = p.tensors["rewards"].to(p.dtype)
    g, lm = p.coef(p.gamma), p.coef(p.lam)
    gnv = p.discount() * p.next_state_values(v)
    c = lm * torch.clamp(torch.exp(log_rhos.to(p.dtype)), max=c_bar)
    beta = p.cut(g * shift_next(c))
    q = q.to(p.dtype)
    q_targets = q + affine_scan(r + gnv - q, beta, reverse=True)
    return q_targets, q_targets - v.to(p.dtype)


class Retrace(CreditAssigner):
    r"""Retrace(lambda) targets for state-action values.

    With ``Q_t = Q(s_t, a_t)``, ``v_t = E_{a~pi(.|s_t)} Q(s_t, a)`` (``state_values``) and
    ``c_t = l_t min(c_bar, e^{lr_t})`` (``lr = log pi(a_t|s_t) - log mu(a_t|s_t)``),
    backward with ``D_T = 0`` and ``c_T = 0``::

        delta_t = r_t + g_t (1 - term_t) nv_t - Q_t
        D_t     = delta_t + g_t (1 - done_t) c_{t+1} D_{t+1}

    ``rewards``, ``q_values``, ``state_values``, ``log_rhos`` and the optional per-step
    tensors are ``[*B, T]``, ``last_value`` is ``[*B]``. Outputs ``q_targets = Q + D`` and
    ``advantages = q_targets - v``, ``[*B, T]``. Boundary rule:
    ``nv_t = v_{t+1}`` by SPEC.md section 2, so ``bootstrap_values`` / ``last_value`` hold
    ``E_pi Q(s_{t+1}, .)``. Note the indices: the trace uses ``c_{t+1}`` and the expectation
    uses pi at ``s_{t+1}``. With pi = mu and ``c_bar >= 1`` it gives the Q(lambda) targets.

    Example::

        >>> import torch, rltriton as rt
        >>> z = torch.zeros(1, 2)
        >>> rt.Retrace(gamma=1.0)(torch.ones(1, 2), z, z, z).q_targets
        tensor([[2., 1.]])
    """

    output_names = ("q_targets", "advantages")
    output_keys = ("q_target", "advantage")

    def __init__(
        self,
        gamma: Coef,
        lam: Coef = 1.0,
        c_bar: float = 1.0,
        *,
        time_dim: int | None = None,
        backend: str = "auto",
    ) -> None:
        super().__init__(time_dim=time_dim, backend=backend)
        self.gamma = check_unit("gamma", gamma)
        self.lam = check_unit("lam", lam)
        self.c_bar = check_threshold("c_bar", c_bar)

    def __call__(
        self,
        rewards,
        q_values: Tensor | None = None,
        state_values: Tensor | None = None,
        log_rhos: Tensor | None = None,
        *,
        terminated: Tensor | None = None,
        truncated: Tensor | None = None,
        next_values: Tensor | None = None,
        bootstrap_values: Tensor | None = None,
        last_value: Tensor | None = None,
        time_dim: int | None = None,
        backend: str | None = None,
    ):
        """Q targets and advantages of a ``[*B, T]`` rollout (or a TensorDict)."""
        if is_tensordict(rewards):
            return self._call_tensordict(
                rewards, time_dim, backend,
                q_values=q_values,
                state_values=state_values,
                log_rhos=log_rhos,
                terminated=terminated,
                truncated=truncated,
                next_values=next_values,
                bootstrap_values=bootstrap_values,
                last_value=last_value,
            )
        if torch.compiler.is_compiling():
            return RetraceResult(*self._compiled("retrace", dict(
                rewards=rewards, q_values=q_values, state_values=state_values, log_rhos=log_rhos,
                terminated=terminated, truncated=truncated, next_values=next_values,
                bootstrap_values=bootstrap_values, last_value=last_value), time_dim, backend))
        tensors = (rewards, q_values, state_values, log_rhos, terminated, truncated, next_values, bootstrap_values,
                   last_value)
        outs, key = self._replay(tensors, time_dim, backend)
        if outs is not None:
            return RetraceResult(*outs)
        for name, x in (("q_values", q_values), ("state_values", state_values), ("log_rhos", log_rhos)):
            if x is None:
                raise TypeError(f"{name}: expected a torch.Tensor, got NoneType")
        p = self._problem(
            {"rewards": rewards, "q_values": q_values, "state_values": state_values, "log_rhos": log_rhos},
            flags={"terminated": terminated, "truncated": truncated},
            gamma=self.gamma, lam=self.lam, next_values=next_values,
            bootstrap_values=bootstrap_values, last_value=last_value, time_dim=time_dim,
        )
        return RetraceResult(*self._run(p, backend, key, tensors))

    def from_action_values(
        self,
        rewards: Tensor,
        action_values: Tensor,
        target_probs: Tensor,
        actions: Tensor,
        behavior_log_probs: Tensor,
        *,
        terminated: Tensor | None = None,
        truncated: Tensor | None = None,
        bootstrap_values: Tensor | None = None,
        last_value: Tensor | None = None,
        time_dim: int | None = None,
        backend: str | None = None,
    ) -> RetraceResult:
        """Retrace from per-action values ``[*B, T, A]``, target probabilities ``[*B, T, A]``,
        integer actions ``[*B, T]`` (in ``[0, A)``) and behaviour log-probabilities ``[*B, T]``.

        ``Q_t = action_values[t, a_t]``, ``v_t = sum_a target_probs[t, a] action_values[t, a]``,
        ``log rho_t = log target_probs[t, a_t] - behavior_log_probs[t]``; then the recursion
        of the class. ``nv_t = v_{t+1}`` uses pi at ``s_{t+1}``.
        """
        if torch.compiler.is_compiling():
            return RetraceResult(*self._compiled("retrace_av", dict(
                rewards=rewards, action_values=action_values, target_probs=target_probs, actions=actions,
                behavior_log_probs=behavior_log_probs, terminated=terminated, truncated=truncated,
                bootstrap_values=bootstrap_values, last_value=last_value), time_dim, backend))
        tensors = (rewards, action_values, target_probs, actions, behavior_log_probs, terminated, truncated,
                   bootstrap_values, last_value)
        outs, key = self._replay(tensors, time_dim, backend)
        if outs is not None:
            return RetraceResult(*outs)
        p = self._problem(
            {"rewards": rewards, "behavior_log_probs": behavior_log_probs},
            flags={"terminated": terminated, "truncated": truncated},
            gamma=self.gamma, lam=self.lam, bootstrap_values=bootstrap_values, last_value=last_value,
            extra={
                "action_values": (action_values, "float", 1),
                "target_probs": (target_probs, "float", 1),
                "actions": (actions, "int", 0),
            },
            time_dim=time_dim,
        )
        av, tp = p.tensors["action_values"], p.tensors["target_probs"]
        if tp.shape != av.shape:
            raise ValueError(
                f"target_probs: expected the shape of action_values {tuple(av.shape)}, got {tuple(tp.shape)}"
            )
        if av.shape[-1] == 0:
            raise ValueError("action_values: expected at least one action, got an empty action axis")
        return RetraceResult(*self._run(p, backend, key, tensors))

    def _is_action_form(self, p: Problem) -> bool:
        return "action_values" in p.tensors

    def _action_form_inputs(self, p: Problem) -> tuple[Tensor, Tensor, Tensor]:
        """(Q_t, v_t, log rho_t) of the action-value form, in ``p.dtype``."""
        av = p.tensors["action_values"].to(p.dtype)
        pi = p.tensors["target_probs"].to(p.dtype)
        idx = p.tensors["actions"].long().unsqueeze(-1)
        q = av.gather(-1, idx).squeeze(-1)
        v = (pi * av).sum(-1)
        log_rhos = torch.log(pi.gather(-1, idx).squeeze(-1)) - p.tensors["behavior_log_probs"].to(p.dtype)
        return q, v, log_rhos

    def _torch(self, p: Problem) -> tuple[Tensor, Tensor]:
        if self._is_action_form(p):
            q, v, lr = self._action_form_inputs(p)
        else:
            q, v, lr = p.tensors["q_values"], p.tensors["state_values"], p.tensors["log_rhos"]
        return _retrace_torch(p, q, v, lr, self.c_bar)

    def _reference(self, p: Problem) -> tuple[Tensor, Tensor]:
        t = p.tensors
        common = dict(
            gamma=p.gamma, lam=p.lam, c_bar=self.c_bar, terminated=p.terminated, truncated=p.truncated,
            bootstrap_values=p.bootstrap_values, last_value=p.last_value,
        )
        if self._is_action_form(p):
            return reference.retrace_from_action_values(
                t["rewards"], t["action_values"], t["target_probs"], t["actions"], t["behavior_log_probs"], **common
            )
        return reference.retrace(
            t["rewards"], t["q_values"], t["state_values"], t["log_rhos"], next_values=p.next_values, **common
        )

    def _triton(self, p: Problem) -> tuple[Tensor, Tensor]:
        from rltriton.kernels.launch import run_backward

        return run_backward("retrace", p, self)

    def _hparams(self) -> str:
        return f"gamma={self.gamma!r}, lam={self.lam!r}, c_bar={self.c_bar!r}"


def retrace(
    rewards: Tensor,
    q_values: Tensor,
    state_values: Tensor,
    log_rhos: Tensor,
    *,
    gamma: Coef,
    lam: Coef = 1.0,
    c_bar: float = 1.0,
    terminated: Tensor | None = None,
    truncated: Tensor | None = None,
    next_values: Tensor | None = None,
    bootstrap_values: Tensor | None = None,
    last_value: Tensor | None = None,
    time_dim: int = -1,
    backend: str = "auto",
) -> RetraceResult:
    """Retrace(lambda) (see :class:`rltriton.Retrace`)::

        D_t = r_t + g_t (1 - term_t) nv_t - Q_t + g_t (1 - done_t) c_{t+1} D_{t+1},   c_T = 0

    Tensors are ``[*B, T]`` (``last_value`` ``[*B]``). Returns
    ``RetraceResult(q_targets, advantages)``.

    Example::

        >>> import torch, rltriton as rt
        >>> z = torch.zeros(1, 3)
        >>> rt.retrace(torch.ones(1, 3), z, z, z, gamma=0.5).q_targets
        tensor([[1.7500, 1.5000, 1.0000]])
    """
    est = instance(Retrace, gamma, lam, c_bar)
    if est._native is not None:
        # a repeated call: the compiled replay's table (CreditAssigner._replay), the tensors in
        # the order the estimator's __call__ gives them
        out = est._native.call((rewards, q_values, state_values, log_rhos, terminated, truncated, next_values,
                                bootstrap_values, last_value), time_dim, backend, RetraceResult)
        if out:
            return out
    return est(
        rewards, q_values, state_values, log_rhos, terminated=terminated, truncated=truncated,
        next_values=next_values, bootstrap_values=bootstrap_values, last_value=last_value,
        time_dim=time_dim, backend=backend,
    )


def retrace_from_action_values(
    rewards: Tensor,
    action_values: Tensor,
    target_probs: Tensor,
    actions: Tensor,
    behavior_log_probs: Tensor,
    *,
    gamma: Coef,
    lam: Coef = 1.0,
    c_bar: float = 1.0,
    terminated: Tensor | None = None,
    truncated: Tensor | None = None,
    bootstrap_values: Tensor | None = None,
    last_value: Tensor | None = None,
    time_dim: int = -1,
    backend: str = "auto",
) -> RetraceResult:
    """Retrace(lambda) from per-action values (see :meth:`rltriton.Retrace.from_action_values`)::

        D_t = r_t + g_t (1 - term_t) v_{t+1} - Q(s_t, a_t) + g_t (1 - done_t) c_{t+1} D_{t+1}

    ``action_values`` and ``target_probs`` are ``[*B, T, A]``; ``actions`` is an integer
    ``[*B, T]``; ``behavior_log_probs`` is ``[*B, T]``. The expectation over actions and
    the importance ratios are formed inside the kernel. ``time_dim`` counts in ``[*B, T]``.

    Example::

        >>> import torch, rltriton as rt
        >>> q = torch.tensor([[[1.0, 3.0], [0.0, 2.0]]])      # [1, T=2, A=2]
        >>> pi = torch.full((1, 2, 2), 0.5)
        >>> a = torch.tensor([[1, 0]])
        >>> mu = torch.log(torch.full((1, 2), 0.5))
        >>> rt.retrace_from_action_values(torch.zeros(1, 2), q, pi, a, mu, gamma=1.0).q_targets
        tensor([[1., 0.]])
    """
    est = instance(Retrace, gamma, lam, c_bar)
    if est._native is not None:
        # a repeated call: the compiled replay's table (CreditAssigner._replay), the tensors in
        # the order the estimator's from_action_values gives them
        out = est._native.call((rewards, action_values, target_probs, actions, behavior_log_probs, terminated,
                                truncated, bootstrap_values, last_value), time_dim, backend, RetraceResult)
        if out:
            return out
    return est.from_action_values(
        rewards, action_values, target_probs, actions, behavior_log_probs, terminated=terminated,
        truncated=truncated, bootstrap_values=bootstrap_values, last_value=last_value,
        time_dim=time_dim, backend=backend,
    )
