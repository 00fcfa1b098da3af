"""Forward recurrences: accumulating eligibility traces and episodic prefix sums."""

from __future__ import annotations

import torch
from torch import Tensor

from rltriton import reference
from rltriton.assigner import Coef, CreditAssigner, Problem, check_unit, instance, is_tensordict
from rltriton.backends.torch_backend import affine_scan
from rltriton.estimators._shift import shift_prev

_BOUNDARIES = ("ends_at", "starts_at")


def _forward_problem(
    assigner: CreditAssigner,
    x: Tensor,
    dones: Tensor | None,
    initial: Tensor | None,
    time_dim: int | None,
    gamma: Coef = 1.0,
    lam: Coef = 1.0,
) -> Problem:
    """``x`` is ``[*B, T, *F]``; ``[*B, T]`` is the shape of ``dones`` when given (the
    feature dims are what ``x`` has beyond it), else ``x`` has no feature dims."""
    n_feat = 0
    if isinstance(x, Tensor) and isinstance(dones, Tensor):
        n_feat = x.dim() - dones.dim()
        if n_feat < 0:
            raise ValueError(
                f"x: expected shape {tuple(dones.shape)} + feature dims (the shape of dones), got {tuple(x.shape)}"
            )
    try:
        return assigner._problem(
            {}, flags={"dones": dones}, gamma=gamma, lam=lam, features={"x": x}, row_tensors={"initial": initial},
            time_dim=time_dim, n_feature_dims=n_feat,
        )
    except ValueError as exc:
        if dones is None and isinstance(x, Tensor) and x.dim() > 1 and (initial is not None or isinstance(
                gamma, Tensor) or isinstance(lam, Tensor)):
            # the likely cause: feature dims on x, which only dones can reveal
            raise ValueError(f"{exc} (without dones, x is read as [*B, T] with no feature dims: pass dones, "
                             "all False if no episode ends, to give x [*B, T, *F])") from None
        raise


def _forward_scan_torch(p: Problem, beta: Tensor) -> Tensor:
    """z_t = x_t + beta_t z_{t-1} from z_{-1} = initial; beta is ``[*B, T]``, x ``[*B, T, *F]``."""
    nb = len(p.batch_shape)
    x = p.tensors["x"].to(p.dtype).movedim(nb, -1)  # [*B, *F, T]
    beta = beta.reshape(p.batch_shape + (1,) * p.n_feature_dims + (p.T,))
    init = p.tensors.get("initial")
    out = affine_scan(x, beta, reverse=False, init=None if init is None else init.to(p.dtype))
    return out.movedim(-1, nb)


class EligibilityTrace(CreditAssigner):
    r"""Accumulating eligibility traces (forward).

    Recursion, from ``z_{-1} = initial`` (default 0) and ``d_{-1} = 0``::

        z_t = x_t + g_t l_t (1 - d_{t-1}) z_{t-1}

    ``x`` is ``[*B, T, *F]`` (trailing feature dims allowed, e.g. one trace per parameter);
    the coefficient is per step. Boundary rule: ``dones[t]`` marks the last step of an
    episode, so the trace restarts at step t+1. ``[*B, T]`` is the shape of ``dones`` when
    given; without ``dones`` ``x`` is ``[*B, T]``.

    Example::

        >>> import torch, rltriton as rt
        >>> rt.EligibilityTrace(0.5, 1.0)(torch.ones(1, 3), dones=torch.tensor([[0, 1, 0]]))
        tensor([[1.0000, 1.5000, 1.0000]])
    """

    output_names = ("traces",)
    output_keys = ("trace",)

    def __init__(self, gamma: Coef, lam: Coef, *, time_dim: int | None = None, backend: str = "auto") -> None:
        super().__init__(time_dim=time_dim, backend=backend)
        self.gamma = check_unit("gamma", gamma)
        self.lam = check_unit("lam", lam)

    def __call__(
        self,
        x,
        *,
        dones: Tensor | None = None,
        initial: Tensor | None = None,
        time_dim: int | None = None,
        backend: str | None = None,
    ):
        """Traces of ``x`` (``[*B, T, *F]``), or of a TensorDict."""
        if is_tensordict(x):
            return self._call_tensordict(x, time_dim, backend, dones=dones, initial=initial)
        if torch.compiler.is_compiling():
            return self._compiled("traces", dict(x=x, dones=dones, initial=initial), time_dim, backend)[0]
        tensors = (x, dones, initial)
        outs, key = self._replay(tensors, time_dim, backend)
        if outs is not None:
            return outs[0]
        p = _forward_problem(self, x, dones, initial, time_dim, self.gamma, self.lam)
        return self._run(p, backend, key, tensors)[0]

    def _feature_shape(self, p: Problem) -> torch.Size:
        return p.tensors["x"].shape[len(p.shape) :]

    def _torch(self, p: Problem) -> tuple[Tensor]:
        g, lm = p.coef(p.gamma), p.coef(p.lam)
        beta = (g * lm) * torch.ones(p.shape, dtype=p.dtype, device=p.device)
        if p.tensors.get("dones") is not None:
            beta = beta * shift_prev((p.tensors["dones"] == 0).to(p.dtype), fill=1.0)
        return (_forward_scan_torch(p, beta),)

    def _reference(self, p: Problem) -> tuple[Tensor]:
        t = p.tensors
        return (
            reference.eligibility_traces(
                t["x"], gamma=p.gamma, lam=p.lam, dones=t.get("dones"), initial=t.get("initial"),
                n_feature_dims=p.n_feature_dims,
            ),
        )

    def _triton(self, p: Problem) -> tuple[Tensor]:
        from rltriton.kernels.launch import run_forward

        return run_forward("traces", p, self)

    def _hparams(self) -> str:
        return f"gamma={self.gamma!r}, lam={self.lam!r}"


class EpisodicPrefixSum(CreditAssigner):
    r"""Segmented (per-episode) prefix sums (forward).

    Recursion, from ``C_{-1} = initial`` (default 0)::

        boundary="ends_at":   C_t = x_t + (1 - d_{t-1}) C_{t-1}   (d marks the last step of a segment)
        boundary="starts_at": C_t = x_t + (1 - d_t) C_{t-1}       (d marks the first step of a segment)

    ``ends_at`` matches ``terminated | truncated`` flags; ``starts_at`` matches CleanRL's
    and SB3's ``dones`` / ``episode_starts``. ``x`` is ``[*B, T, *F]`` (trailing feature
    dims allowed), ``dones`` ``[*B, T]``, ``initial`` ``[*B, *F]``.

    Example::

        >>> import torch, rltriton as rt
        >>> rt.EpisodicPrefixSum()(torch.ones(1, 4), torch.tensor([[0, 1, 0, 0]]))
        tensor([[1., 2., 1., 2.]])
    """

    output_names = ("sums",)
    output_keys = ("prefix_sum",)

    def __init__(self, boundary: str = "ends_at", *, time_dim: int | None = None, backend: str = "auto") -> None:
        super().__init__(time_dim=time_dim, backend=backend)
        if boundary not in _BOUNDARIES:
            raise ValueError(f"boundary: expected one of {_BOUNDARIES}, got {boundary!r}")
        self.boundary = boundary

    def __call__(
        self,
        x,
        dones: Tensor | None = None,
        *,
        initial: Tensor | None = None,
        time_dim: int | None = None,
        backend: str | None = None,
    ):
        """Segmented prefix sums of ``x`` (``[*B, T, *F]``) with flags ``dones`` (``[*B, T]``)."""
        if is_tensordict(x):
            return self._call_tensordict(x, time_dim, backend, dones=dones, initial=initial)
        if torch.compiler.is_compiling():
            return self._compiled("prefix_sum", dict(x=x, dones=dones, initial=initial), time_dim, backend)[0]
        if dones is None:
            raise TypeError("dones: expected a torch.Tensor, got NoneType")
        tensors = (x, dones, initial)
        outs, key = self._replay(tensors, time_dim, backend)
        if outs is not None:
            return outs[0]
        p = _forward_problem(self, x, dones, initial, time_dim)
        return self._run(p, backend, key, tensors)[0]

    def _feature_shape(self, p: Problem) -> torch.Size:
        return p.tensors["x"].shape[len(p.shape) :]

    def _torch(self, p: Problem) -> tuple[Tensor]:
        keep = (p.tensors["dones"] == 0).to(p.dtype)
        beta = shift_prev(keep, fill=1.0) if self.boundary == "ends_at" else keep
        return (_forward_scan_torch(p, beta),)

    def _reference(self, p: Problem) -> tuple[Tensor]:
        t = p.tensors
        return (
            reference.episodic_prefix_sum(
                t["x"], t["dones"], boundary=self.boundary, initial=t.get("initial"),
                n_feature_dims=p.n_feature_dims,
            ),
        )

    def _triton(self, p: Problem) -> tuple[Tensor]:
        from rltriton.kernels.launch import run_forward

        return run_forward("prefix_sum", p, self)

    def _hparams(self) -> str:
        return f"boundary={self.boundary!r}"


def eligibility_traces(
    x: Tensor,
    *,
    gamma: Coef,
    lam: Coef,
    dones: Tensor | None = None,
    initial: Tensor | None = None,
    time_dim: int = -1,
    backend: str = "auto",
) -> Tensor:
    """Accumulating eligibility traces (see :class:`rltriton.EligibilityTrace`)::

        z_t = x_t + g_t l_t (1 - d_{t-1}) z_{t-1},   z_{-1} = initial

    ``x`` is ``[*B, T, *F]`` with ``dones`` ``[*B, T]`` (without ``dones``, ``x`` is
    ``[*B, T]``); ``initial`` is ``[*B, *F]``.

    Example::

        >>> import torch, rltriton as rt
        >>> rt.eligibility_traces(torch.ones(1, 3), gamma=0.5, lam=1.0)
        tensor([[1.0000, 1.5000, 1.7500]])
    """
    est = instance(EligibilityTrace, gamma, lam)
    if est._native is not None:
        # a repeated call: the compiled replay's table (CreditAssigner._replay), the tensors in
        # the order the estimator's __call__ gives them
        out = est._native.call((x, dones, initial), time_dim, backend, 1)
        if out is not None and out is not False:
            return out
    return est(x, dones=dones, initial=initial, time_dim=time_dim, backend=backend)


def episodic_prefix_sum(
    x: Tensor,
    dones: Tensor,
    *,
    boundary: str = "ends_at",
    initial: Tensor | None = None,
    time_dim: int = -1,
    backend: str = "auto",
) -> Tensor:
    """Segmented prefix sums (see :class:`rltriton.EpisodicPrefixSum`)::

        ends_at:   C_t = x_t + (1 - d_{t-1}) C_{t-1}
        starts_at: C_t = x_t + (1 - d_t) C_{t-1}

    ``x`` is ``[*B, T, *F]``, ``dones`` ``[*B, T]``, ``initial`` ``[*B, *F]``.

    Example::

        >>> import torch, rltriton as rt
        >>> rt.episodic_prefix_sum(torch.ones(1, 4), torch.tensor([[0, 1, 0, 0]]), boundary="starts_at")
        tensor([[1., 1., 2., 3.]])
    """
    est = instance(EpisodicPrefixSum, boundary)
    if est._native is not None:
        # a repeated call: the compiled replay's table (CreditAssigner._replay), the tensors in
        # the order the estimator's __call__ gives them
        out = est._native.call((x, dones, initial), time_dim, backend, 1)
        if out is not None and out is not False:
            return out
    return est(x, dones, initial=initial, time_dim=time_dim, backend=backend)
