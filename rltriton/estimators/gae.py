"""Generalized Advantage Estimation (Schulman et al., 2016)."""

from __future__ import annotations

import torch
from torch import Tensor

from rltriton import reference
from rltriton.assigner import Coef, CreditAssigner, Problem, check_unit, instance, is_tensordict
from rltriton.backends.torch_backend import affine_scan
from rltriton.results import GAEResult


class GAE(CreditAssigner):
    r"""Generalized Advantage Estimation.

    Recursion (backward, ``A_T = 0``)::

        delta_t = r_t + g_t (1 - term_t) nv_t - V_t
        A_t     = delta_t + g_t l_t (1 - done_t) A_{t+1}

    Outputs ``advantages = A`` and ``value_targets = A + V``. Boundary rule: ``nv_t`` is the
    next-state value of SPEC.md section 2 (``next_values``, else ``values[t+1]`` inside the
    window, ``bootstrap_values`` at truncated steps and t = T-1, ``last_value`` at t = T-1,
    else 0); a terminated step ignores it, any done step cuts the recursion. The window-edge
    bootstrap enters ``delta_{T-1}`` only; the carry is never seeded with V(s_T).

    Special cases: ``lam = 1`` gives discounted returns minus values; ``lam = 0`` gives the
    one-step TD errors.

    Example::

        >>> import torch, rltriton as rt
        >>> r, v = torch.ones(2, 4), torch.zeros(2, 4)
        >>> adv, target = rt.GAE(gamma=0.5, lam=1.0)(r, v, last_value=torch.zeros(2))
        >>> adv[0]
        tensor([1.8750, 1.7500, 1.5000, 1.0000])

    Args:
        gamma: discount, a float in [0, 1] or a tensor broadcastable to ``[*B, T]``.
        lam: GAE lambda, likewise.
        time_dim: default time axis for calls (``-1``).
        backend: default backend for calls (``"auto"``).
    """

    output_names = ("advantages", "value_targets")
    output_keys = ("advantage", "value_target")

    def __init__(self, gamma: Coef, lam: Coef, *, time_dim: int | None = None, backend: str = "auto") -> None:
        super().__init__(time_dim=time_dim, backend=backend)
        self.gamma = check_unit("gamma", gamma)
        self.lam = check_unit("lam", lam)

    def __call__(
        self,
        rewards,
        values: Tensor | None = None,
        *,
        terminated: Tensor | None = None,
        truncated: Tensor | None = None,
        next_values: Tensor | None = None,
        bootstrap_values: Tensor | None = None,
        last_value: Tensor | None = None,
        time_dim: int | None = None,
        backend: str | None = None,
    ):
        """Advantages and value targets of a ``[*B, T]`` rollout (or a TensorDict)."""
        if is_tensordict(rewards):
            return self._call_tensordict(
                rewards, time_dim, backend,
                values=values,
                terminated=terminated,
                truncated=truncated,
                next_values=next_values,
                bootstrap_values=bootstrap_values,
                last_value=last_value,
            )
        if torch.compiler.is_compiling():
            return GAEResult(*self._compiled("gae", dict(
                rewards=rewards, values=values, terminated=terminated, truncated=truncated, next_values=next_values,
                bootstrap_values=bootstrap_values, last_value=last_value), time_dim, backend))
        tensors = (rewards, values, terminated, truncated, next_values, bootstrap_values, last_value)
        outs, key = self._replay(tensors, time_dim, backend)
        if outs is not None:
            return GAEResult(*outs)
        if values is None:
            raise TypeError("values: expected a torch.Tensor, got NoneType")
        p = self._problem(
            {"rewards": rewards, "values": values},
            flags={"terminated": terminated, "truncated": truncated},
            gamma=self.gamma, lam=self.lam, next_values=next_values,
            bootstrap_values=bootstrap_values, last_value=last_value, time_dim=time_dim,
        )
        return GAEResult(*self._run(p, backend, key, tensors))

    def _torch(self, p: Problem) -> tuple[Tensor, Tensor]:
        r = p.tensors["rewards"].to(p.dtype)
        v = p.tensors["values"].to(p.dtype)
        gnv = p.discount() * p.next_state_values(p.tensors["values"])
        beta = p.cut(p.coef(p.gamma) * p.coef(p.lam))
        if not isinstance(beta, Tensor):
            beta = r.new_full((), beta)
        adv = affine_scan(r + gnv - v, beta, reverse=True)
        return adv, adv + v

    def _reference(self, p: Problem) -> tuple[Tensor, Tensor]:
        t = p.tensors
        return reference.gae(
            t["rewards"], t["values"], gamma=p.gamma, lam=p.lam, terminated=p.terminated,
            truncated=p.truncated, next_values=p.next_values, bootstrap_values=p.bootstrap_values,
            last_value=p.last_value,
        )

    def _triton(self, p: Problem) -> tuple[Tensor, Tensor]:
        from rltriton.kernels.launch import run_backward

        return run_backward("gae", p, self)

    def _hparams(self) -> str:
        return f"gamma={self.gamma!r}, lam={self.lam!r}"


def gae(
    rewards: Tensor,
    values: Tensor,
    *,
    gamma: Coef,
    lam: Coef,
    terminated: Tensor | None = None,
    truncated: Tensor | None = None,
    next_values: Tensor | None = None,
    bootstrap_values: Tensor | None = None,
    last_value: Tensor | None = None,
    time_dim: int = -1,
    backend: str = "auto",
) -> GAEResult:
    """Generalized Advantage Estimation (see :class:`rltriton.GAE`)::

        delta_t = r_t + g_t (1 - term_t) nv_t - V_t
        A_t     = delta_t + g_t l_t (1 - done_t) A_{t+1},   A_T = 0

    ``rewards``, ``values`` and the optional per-step tensors are ``[*B, T]`` with time at
    ``time_dim``; ``last_value`` is ``[*B]``. Returns ``GAEResult(advantages,
    value_targets)``, float32 (float64 if any input is float64).

    Example::

        >>> import torch, rltriton as rt
        >>> r, v = torch.ones(1, 3), torch.zeros(1, 3)
        >>> rt.gae(r, v, gamma=1.0, lam=1.0, terminated=torch.tensor([[0, 1, 0]])).advantages
        tensor([[2., 1., 1.]])
    """
    est = instance(GAE, gamma, lam)
    if est._native is not None:
        # a repeated call: the compiled replay's table (CreditAssigner._replay), the tensors in
        # the order the estimator's __call__ gives them
        out = est._native.call((rewards, values, terminated, truncated, next_values, bootstrap_values, last_value),
                               time_dim, backend, GAEResult)
        if out:
            return out
    return est(
        rewards, values, terminated=terminated, truncated=truncated, next_values=next_values,
        bootstrap_values=bootstrap_values, last_value=last_value, time_dim=time_dim, backend=backend,
    )
