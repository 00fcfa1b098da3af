"""Shifts along the last (time) axis for the torch backend."""

from __future__ import annotations

import torch
from torch import Tensor


def shift_next(x: Tensor, fill: float = 0.0) -> Tensor:
    """``y[..., t] = x[..., t+1]``, ``y[..., T-1] = fill``."""
    return torch.nn.functional.pad(x[..., 1:], (0, 1), value=fill)


def shift_prev(x: Tensor, fill: float = 0.0) -> Tensor:
    """``y[..., t] = x[..., t-1]``, ``y[..., 0] = fill``."""
    return torch.nn.functional.pad(x[..., :-1], (1, 0), value=fill)


def inside_mask(keep_done: Tensor | None, shape: torch.Size, dtype: torch.dtype, device: torch.device) -> Tensor:
    """1 where step t continues into t+1 inside the window (t < T-1 and not done_t), else 0."""
    cont = torch.ones(shape, dtype=dtype, device=device) if keep_done is None else keep_done.clone()
    cont[..., -1] = 0.0
    return cont
