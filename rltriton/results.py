"""The named results of the estimators with two outputs (shared by the public functions
and :mod:`rltriton.reference`, whose loops return the same types)."""

from __future__ import annotations

from typing import NamedTuple

from torch import Tensor

__all__ = ["GAEResult", "RetraceResult", "VTraceResult"]


class GAEResult(NamedTuple):
    """Outputs of GAE, both ``[*B, T]`` in the caller's layout.

    ``advantages``: A_t = delta_t + g_t l_t (1 - done_t) A_{t+1}; ``value_targets``: A_t + V_t.

    Example::

        >>> import torch, rltriton as rt
        >>> out = rt.gae(torch.ones(1, 2), torch.ones(1, 2), gamma=1.0, lam=1.0)
        >>> out.advantages, out.value_targets
        (tensor([[1., 0.]]), tensor([[2., 1.]]))
    """

    advantages: Tensor
    value_targets: Tensor


class VTraceResult(NamedTuple):
    """Outputs of V-trace, both ``[*B, T]``: ``value_targets`` vs_t = V_t + D_t with
    D_t = delta_t + g_t (1 - done_t) c_t D_{t+1}, and policy-gradient ``advantages``.

    Example::

        >>> import torch, rltriton as rt
        >>> z = torch.zeros(1, 2)
        >>> rt.vtrace(torch.ones(1, 2), z, z, gamma=1.0).value_targets
        tensor([[2., 1.]])
    """

    value_targets: Tensor
    advantages: Tensor


class RetraceResult(NamedTuple):
    """Outputs of Retrace, both ``[*B, T]``: ``q_targets`` Q_t + D_t with
    D_t = delta_t + g_t (1 - done_t) c_{t+1} D_{t+1}, and ``advantages = q_targets - v``.

    Example::

        >>> import torch, rltriton as rt
        >>> z = torch.zeros(1, 2)
        >>> rt.retrace(torch.ones(1, 2), z, z, z, gamma=1.0).advantages
        tensor([[2., 1.]])
    """

    q_targets: Tensor
    advantages: Tensor

