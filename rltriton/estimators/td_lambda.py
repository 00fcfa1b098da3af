"""TD(lambda) returns and discounted returns (reward-to-go)."""

from __future__ import annotations

import torch
from torch import Tensor

from rltriton import reference
from rltriton.assigner import Coef, CreditAssigner, Problem, check_unit, instance, is_tensordict
from rltriton.backends.torch_backend import affine_scan
from rltriton.estimators._shift import inside_mask


def _lambda_returns_torch(p: Problem, values: Tensor | None, lam: Coef) -> Tensor:
    """G_t = alpha_t + beta_t G_{t+1} with, where step t continues inside the window
    (cont_t = t < T-1 and not done_t): alpha = r + g (1-term) (1-l) nv, beta = g l;
    elsewhere alpha = r + g (1-term) nv, beta = 0."""
    r = p.tensors["rewards"].to(p.dtype)
    g = p.coef(p.gamma)
    lm = p.coef(lam)
    cont = inside_mask(p.keep()[1], p.shape, p.dtype, p.device)
    gnv = p.discount() * p.next_state_values(values)
    alpha = r + gnv * (1.0 - lm * cont)
    # cut: where the recursion takes nv_t (beta = 0), a non-finite later return does not pass
    return affine_scan(alpha, (g * lm) * cont, reverse=True, cut=True)


class TDLambda(CreditAssigner):
    r"""TD(lambda) returns (lambda-returns).

    Recursion (backward)::

        G_t = r_t + g_t (1 - term_t) [ (1 - l_t) nv_t + l_t X_t ]
        X_t = G_{t+1} if t < T-1 and not done_t, else nv_t

    ``rewards``, ``values`` and the optional per-step tensors are ``[*B, T]``; ``last_value``
    is ``[*B]``. Output ``returns = G``, ``[*B, T]``. Boundary rule: ``nv_t`` as in SPEC.md section 2; at a done step
    or the window edge the return bootstraps from ``nv_t`` (0 after a termination). With
    consistent next values (nv_t = V_{t+1} inside episodes), ``G = GAE advantages + V``.
    ``lam = 1`` gives Monte-Carlo returns bootstrapped at the edges, ``lam = 0`` one-step
    TD targets. ``values`` may be omitted when ``next_values`` is given.

    Example::

        >>> import torch, rltriton as rt
        >>> rt.TDLambda(0.5, 1.0)(torch.ones(1, 3), torch.zeros(1, 3), last_value=torch.full((1,), 8.0))
        tensor([[2.7500, 3.5000, 5.0000]])
    """

    output_names = ("returns",)
    output_keys = ("value_target",)

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
        """TD(lambda) returns of a ``[*B, T]`` rollout (or a TensorDict)."""
        if is_tensordict(rewards):
            return self._call_tensordict(
                rewards, time_dim, backend, values=values, terminated=terminated, truncated=truncated,
                next_values=next_values, bootstrap_values=bootstrap_values, last_value=last_value,
            )
        if torch.compiler.is_compiling():
            return self._compiled("td_lambda", dict(
                rewards=rewards, values=values, terminated=terminated, truncated=truncated, next_values=next_values,
                bootstrap_values=bootstrap_values, last_value=last_value), time_dim, backend)[0]
        tensors = (rewards, values, terminated, truncated, next_values, bootstrap_values, last_value)
        outs, key = self._replay(tensors, time_dim, backend)
        if outs is not None:
            return outs[0]
        if values is None and next_values is None:
            raise ValueError("values: expected a tensor (or next_values), got neither")
        p = self._problem(
            {"rewards": rewards, "values": values},
            flags={"terminated": terminated, "truncated": truncated},
            gamma=self.gamma, lam=self.lam, next_values=next_values,
            bootstrap_values=bootstrap_values, last_value=last_value, time_dim=time_dim, optional=("values",),
        )
        return self._run(p, backend, key, tensors)[0]

    def _torch(self, p: Problem) -> tuple[Tensor]:
        return (_lambda_returns_torch(p, p.tensors.get("values"), p.lam),)

    def _reference(self, p: Problem) -> tuple[Tensor]:
        t = p.tensors
        return (
            reference.td_lambda(
                t["rewards"], t.get("values"), gamma=p.gamma, lam=p.lam, terminated=p.terminated,
                truncated=p.truncated, next_values=p.next_values, bootstrap_values=p.bootstrap_values,
                last_value=p.last_value,
            ),
        )

    def _triton(self, p: Problem) -> tuple[Tensor]:
        from rltriton.kernels.launch import run_backward

        return run_backward("td_lambda", p, self)

    def _hparams(self) -> str:
        return f"gamma={self.gamma!r}, lam={self.lam!r}"


class DiscountedReturn(CreditAssigner):
    r"""Discounted returns (reward-to-go): TD(lambda) with ``lam = 1`` and no values.

    Recursion (backward)::

        G_t = r_t + g_t (1 - term_t) X_t,   X_t = G_{t+1} inside an episode, else nv_t

    where ``nv_t`` comes from ``bootstrap_values`` (truncated steps and t = T-1) or
    ``last_value`` (t = T-1), and is 0 where neither is given. ``rewards`` and the flags are
    ``[*B, T]``, ``last_value`` is ``[*B]``; the output is ``[*B, T]``.

    Example::

        >>> import torch, rltriton as rt
        >>> rt.DiscountedReturn(0.5)(torch.ones(1, 3), terminated=torch.tensor([[0, 1, 0]]))
        tensor([[1.5000, 1.0000, 1.0000]])
    """

    output_names = ("returns",)
    output_keys = ("value_target",)

    def __init__(self, gamma: Coef, *, time_dim: int | None = None, backend: str = "auto") -> None:
        super().__init__(time_dim=time_dim, backend=backend)
        self.gamma = check_unit("gamma", gamma)
        self.lam = 1.0

    def __call__(
        self,
        rewards,
        *,
        terminated: Tensor | None = None,
        truncated: Tensor | None = None,
        bootstrap_values: Tensor | None = None,
        last_value: Tensor | None = None,
        time_dim: int | None = None,
        backend: str | None = None,
    ):
        """Discounted returns of a ``[*B, T]`` reward tensor (or a TensorDict)."""
        if is_tensordict(rewards):
            return self._call_tensordict(
                rewards, time_dim, backend, terminated=terminated, truncated=truncated,
                bootstrap_values=bootstrap_values, last_value=last_value,
            )
        if torch.compiler.is_compiling():
            return self._compiled("discounted_returns", dict(
                rewards=rewards, terminated=terminated, truncated=truncated, bootstrap_values=bootstrap_values,
                last_value=last_value), time_dim, backend)[0]
        tensors = (rewards, terminated, truncated, bootstrap_values, last_value)
        outs, key = self._replay(tensors, time_dim, backend)
        if outs is not None:
            return outs[0]
        p = self._problem(
            {"rewards": rewards},
            flags={"terminated": terminated, "truncated": truncated},
            gamma=self.gamma, bootstrap_values=bootstrap_values, last_value=last_value, time_dim=time_dim,
        )
        return self._run(p, backend, key, tensors)[0]

    def _torch(self, p: Problem) -> tuple[Tensor]:
        return (_lambda_returns_torch(p, None, 1.0),)

    def _reference(self, p: Problem) -> tuple[Tensor]:
        return (
            reference.discounted_returns(
                p.tensors["rewards"], gamma=p.gamma, terminated=p.terminated, truncated=p.truncated,
                bootstrap_values=p.bootstrap_values, last_value=p.last_value,
            ),
        )

    def _triton(self, p: Problem) -> tuple[Tensor]:
        from rltriton.kernels.launch import run_backward

        return run_backward("td_lambda", p, self)

    def _hparams(self) -> str:
        return f"gamma={self.gamma!r}"


def td_lambda(
    rewards: Tensor,
    values: Tensor | None = None,
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
) -> Tensor:
    """TD(lambda) returns (see :class:`rltriton.TDLambda`)::

        G_t = r_t + g_t (1 - term_t) [(1 - l_t) nv_t + l_t X_t]
        X_t = G_{t+1} if t < T-1 and not done_t, else nv_t

    Tensors are ``[*B, T]`` (``last_value`` ``[*B]``). ``values=None`` is allowed only with
    ``next_values``. Returns ``[*B, T]``.

    Example::

        >>> import torch, rltriton as rt
        >>> rt.td_lambda(torch.ones(1, 2), next_values=torch.full((1, 2), 2.0), gamma=0.5, lam=0.0)
        tensor([[2., 2.]])
    """
    est = instance(TDLambda, gamma, lam)
    if est._native is not None:
        # a repeated call: the compiled replay's table (CreditAssigner._replay), the tensors in
        # the order the estimator's __call__ gives them
        out = est._native.call((rewards, values, terminated, truncated, next_values, bootstrap_values, last_value),
                               time_dim, backend, 1)
        if out is not None and out is not False:
            return out
    return est(
        rewards, values, terminated=terminated, truncated=truncated, next_values=next_values,
        bootstrap_values=bootstrap_values, last_value=last_value, time_dim=time_dim, backend=backend,
    )


def discounted_returns(
    rewards: Tensor,
    *,
    gamma: Coef,
    terminated: Tensor | None = None,
    truncated: Tensor | None = None,
    bootstrap_values: Tensor | None = None,
    last_value: Tensor | None = None,
    time_dim: int = -1,
    backend: str = "auto",
) -> Tensor:
    """Discounted returns (reward-to-go; see :class:`rltriton.DiscountedReturn`)::

        G_t = r_t + g_t (1 - term_t) X_t,   X_t = G_{t+1} inside an episode, else nv_t

    ``rewards`` and the flags are ``[*B, T]``, ``last_value`` is ``[*B]``; returns ``[*B, T]``.

    Example::

        >>> import torch, rltriton as rt
        >>> rt.discounted_returns(torch.ones(1, 3), gamma=0.5, last_value=torch.tensor([4.0]))
        tensor([[2.2500, 2.5000, 3.0000]])
    """
    est = instance(DiscountedReturn, gamma)
    if est._native is not None:
        # a repeated call: the compiled replay's table (CreditAssigner._replay), the tensors in
        # the order the estimator's __call__ gives them
        out = est._native.call((rewards, terminated, truncated, bootstrap_values, last_value), time_dim, backend, 1)
        if out is not None and out is not False:
            return out
    return est(
        rewards, terminated=terminated, truncated=truncated, bootstrap_values=bootstrap_values,
        last_value=last_value, time_dim=time_dim, backend=backend,
    )
