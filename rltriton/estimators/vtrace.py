"""V-trace (Espeholt et al., 2018), with the lambda of rlax."""

from __future__ import annotations

import torch
from torch import Tensor

from rltriton import reference
from rltriton.assigner import Coef, CreditAssigner, Problem, check_threshold, check_unit, instance, is_tensordict
from rltriton.backends.torch_backend import affine_scan
from rltriton.estimators._shift import inside_mask, shift_next
from rltriton.results import VTraceResult


class VTrace(CreditAssigner):
    r"""V-trace off-policy value targets and policy-gradient advantages.

    With ``rho_t = min(rho_bar, e^{lr_t})`` and ``c_t = l_t min(c_bar, e^{lr_t})``
    (``lr = log_rhos = log pi(a_t|s_t) - log mu(a_t|s_t)``), backward with ``D_T = 0``::

        delta_t = rho_t (r_t + g_t (1 - term_t) nv_t - V_t)
        D_t     = delta_t + g_t (1 - done_t) c_t D_{t+1}
        vs_t    = V_t + D_t
        q_t     = r_t + g_t (1 - term_t) [l_t vs_{t+1} + (1 - l_t) nv_t]   inside an episode
        q_t     = r_t + g_t (1 - term_t) nv_t                              at done_t or t = T-1
        pg_t    = min(pg_rho_bar, e^{lr_t}) (q_t - V_t)

    ``rewards``, ``values``, ``log_rhos`` and the optional per-step tensors are ``[*B, T]``,
    ``last_value`` is ``[*B]``. Outputs ``value_targets = vs`` and ``advantages = pg``,
    ``[*B, T]``. Boundary rule: ``nv_t`` of
    SPEC.md section 2; at a truncated step the advantage bootstraps from ``nv_t``, never
    from the next episode's ``vs``. On-policy (``log_rhos = 0``, thresholds >= 1) ``vs``
    equals the TD(lambda) returns.

    Example::

        >>> import torch, rltriton as rt
        >>> r, v, lr = torch.ones(1, 2), torch.zeros(1, 2), torch.zeros(1, 2)
        >>> rt.VTrace(gamma=0.5)(r, v, lr, last_value=torch.zeros(1)).value_targets
        tensor([[1.5000, 1.0000]])

    Args:
        gamma: discount (a float in [0, 1] or a tensor).
        lam: trace lambda (a float in [0, 1] or a tensor).
        rho_bar: truncation threshold of the importance weight in delta (>= 0).
        c_bar: truncation threshold of the trace coefficient (>= 0).
        pg_rho_bar: threshold of the policy-gradient weight (defaults to ``rho_bar``).
    """

    output_names = ("value_targets", "advantages")
    output_keys = ("value_target", "advantage")

    def __init__(
        self,
        gamma: Coef,
        lam: Coef = 1.0,
        rho_bar: float = 1.0,
        c_bar: float = 1.0,
        pg_rho_bar: float | None = None,
        *,
        time_dim: int | None = None,
        backend: str = "auto",
    ) -> None:
        super().__init__(time_dim=time_dim, backend=backend)
        self.gamma = check_unit("gamma", gamma)
        self.lam = check_unit("lam", lam)
        self.rho_bar = check_threshold("rho_bar", rho_bar)
        self.c_bar = check_threshold("c_bar", c_bar)
        self.pg_rho_bar = self.rho_bar if pg_rho_bar is None else check_threshold("pg_rho_bar", pg_rho_bar)

    def __call__(
        self,
        rewards,
        values: Tensor | None = None,
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
        """Value targets and advantages of a ``[*B, T]`` rollout (or a TensorDict)."""
        if is_tensordict(rewards):
            return self._call_tensordict(
                rewards, time_dim, backend,
                values=values,
                log_rhos=log_rhos,
                terminated=terminated,
                truncated=truncated,
                next_values=next_values,
                bootstrap_values=bootstrap_values,
                last_value=last_value,
            )
        if torch.compiler.is_compiling():
            return VTraceResult(*self._compiled("vtrace", dict(
                rewards=rewards, values=values, log_rhos=log_rhos, terminated=terminated, truncated=truncated,
                next_values=next_values, bootstrap_values=bootstrap_values, last_value=last_value), time_dim, backend))
        tensors = (rewards, values, log_rhos, terminated, truncated, next_values, bootstrap_values, last_value)
        outs, key = self._replay(tensors, time_dim, backend)
        if outs is not None:
            return VTraceResult(*outs)
        for name, x in (("values", values), ("log_rhos", log_rhos)):
            if x is None:
                raise TypeError(f"{name}: expected a torch.Tensor, got NoneType")
        p = self._problem(
            {"rewards": rewards, "values": values, "log_rhos": log_rhos},
            flags={"terminated": terminated, "truncated": truncated},
            gamma=self.gamma, lam=self.lam, next_values=next_values,
            bootstrap_values=bootstrap_values, last_value=last_value, time_dim=time_dim,
        )
        return VTraceResult(*self._run(p, backend, key, tensors))

    def _torch(self, p: Problem) -> tuple[Tensor, Tensor]:
        r = p.tensors["rewards"].to(p.dtype)
        v = p.tensors["values"].to(p.dtype)
        ratio = torch.exp(p.tensors["log_rhos"].to(p.dtype))
        g, lm = p.coef(p.gamma), p.coef(p.lam)
        nv = p.next_state_values(p.tensors["values"])
        gk = p.discount()  # g_t (1 - term_t)
        beta = p.cut(g * lm * torch.clamp(ratio, max=self.c_bar))
        vs = v + affine_scan(torch.clamp(ratio, max=self.rho_bar) * (r + gk * nv - v), beta, reverse=True)
        inside = inside_mask(p.keep()[1], p.shape, p.dtype, p.device) != 0
        q_in = r + gk * (lm * shift_next(vs) + (1.0 - lm) * nv)
        q = torch.where(inside, q_in, r + gk * nv)
        return vs, torch.clamp(ratio, max=self.pg_rho_bar) * (q - v)

    def _reference(self, p: Problem) -> tuple[Tensor, Tensor]:
        t = p.tensors
        return reference.vtrace(
            t["rewards"], t["values"], t["log_rhos"], gamma=p.gamma, lam=p.lam, rho_bar=self.rho_bar,
            c_bar=self.c_bar, pg_rho_bar=self.pg_rho_bar, terminated=p.terminated, truncated=p.truncated,
            next_values=p.next_values, bootstrap_values=p.bootstrap_values, last_value=p.last_value,
        )

    def _triton(self, p: Problem) -> tuple[Tensor, Tensor]:
        from rltriton.kernels.launch import run_backward

        return run_backward("vtrace", p, self)

    def _hparams(self) -> str:
        return (
            f"gamma={self.gamma!r}, lam={self.lam!r}, rho_bar={self.rho_bar!r}, c_bar={self.c_bar!r}, "
            f"pg_rho_bar={self.pg_rho_bar!r}"
        )


def vtrace(
    rewards: Tensor,
    values: Tensor,
    log_rhos: Tensor,
    *,
    gamma: Coef,
    lam: Coef = 1.0,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
    pg_rho_bar: float | None = None,
    terminated: Tensor | None = None,
    truncated: Tensor | None = None,
    next_values: Tensor | None = None,
    bootstrap_values: Tensor | None = None,
    last_value: Tensor | None = None,
    time_dim: int = -1,
    backend: str = "auto",
) -> VTraceResult:
    """V-trace (see :class:`rltriton.VTrace`)::

        D_t  = rho_t (r_t + g_t (1 - term_t) nv_t - V_t) + g_t (1 - done_t) c_t D_{t+1}
        vs_t = V_t + D_t

    Tensors are ``[*B, T]`` (``last_value`` ``[*B]``). Returns
    ``VTraceResult(value_targets, advantages)``.

    Example::

        >>> import torch, rltriton as rt
        >>> out = rt.vtrace(torch.ones(1, 2), torch.zeros(1, 2), torch.zeros(1, 2), gamma=1.0)
        >>> out.advantages
        tensor([[2., 1.]])
    """
    est = instance(VTrace, gamma, lam, rho_bar, c_bar, pg_rho_bar)
    if est._native is not None:
        # a repeated call: the compiled replay's table (CreditAssigner._replay), the tensors in
        # the order the estimator's __call__ gives them
        out = est._native.call((rewards, values, log_rhos, terminated, truncated, next_values, bootstrap_values,
                                last_value), time_dim, backend, VTraceResult)
        if out:
            return out
    return est(
        rewards, values, log_rhos, terminated=terminated, truncated=truncated, next_values=next_values,
        bootstrap_values=bootstrap_values, last_value=last_value, time_dim=time_dim, backend=backend,
    )
