"""The vectorised torch backend's scan.

Solves ``A_t = alpha_t + beta_t A_{t+1}`` (``reverse=True``) or
``z_t = alpha_t + beta_t z_{t-1}`` (``reverse=False``) along the last axis, vectorised
over every other axis. Python steps are needed along time, so the axis is cut into
chunks of about sqrt(T) steps: a sequential pass inside all chunks at once (carry 0), a
sequential pass over the chunk summaries, and one vectorised fix-up. That is about
3 sqrt(T) tensor operations instead of T, with the rounding behaviour of a sequential
loop (no repeated squaring of coefficients as in a doubling scan).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

_SEQUENTIAL_MAX_T = 64


def _times(b: Tensor, x: Tensor, cut: bool) -> Tensor:
    """b * x; with ``cut``, 0 where b is 0 whatever x is (see ``affine_scan``)."""
    return torch.where(b == 0, torch.zeros_like(x), b * x) if cut else b * x


def _sequential(alpha: Tensor, beta: Tensor, init: Tensor | None, cut: bool = False) -> tuple[Tensor, Tensor]:
    """Forward scan with its running product of beta (for chunk summaries)."""
    T = alpha.shape[-1]
    out = torch.empty_like(alpha)
    prod = torch.empty_like(alpha)
    z = init
    p = None
    for t in range(T):
        a, b = alpha[..., t], beta[..., t]
        z = a if z is None else a + _times(b, z, cut)
        p = b if p is None else b * p
        out[..., t] = z
        prod[..., t] = p
    return out, prod


def affine_scan(alpha: Tensor, beta: Tensor, *, reverse: bool, init: Tensor | None = None,
                cut: bool = False) -> Tensor:
    """The affine recurrence along the last axis. ``beta`` broadcasts to ``alpha``;
    ``init`` (broadcastable to ``alpha.shape[:-1]``) is the carry entering the first
    step in scan order (``A_T`` for reverse, ``z_{-1}`` for forward); default 0.
    ``cut``: where beta is 0 the state does not depend on the one before it in scan order at
    all (a NaN or inf there does not pass: TD(lambda)'s X_t = nv_t), where IEEE arithmetic
    would give 0 * NaN = NaN."""
    beta = beta.expand_as(alpha)
    if reverse:
        alpha, beta = alpha.flip(-1), beta.flip(-1)
    if init is not None:
        init = init.to(alpha.dtype).expand(alpha.shape[:-1])
    T = alpha.shape[-1]
    if T <= _SEQUENTIAL_MAX_T:
        out, _ = _sequential(alpha, beta, init, cut)
    else:
        k = int(math.isqrt(T))
        chunks = -(-T // k)
        pad = chunks * k - T
        if pad:
            # identity steps after the end do not change any earlier result
            alpha = torch.nn.functional.pad(alpha, (0, pad), value=0.0)
            beta = torch.nn.functional.pad(beta, (0, pad), value=1.0)
        a = alpha.reshape(*alpha.shape[:-1], chunks, k)
        b = beta.reshape(*beta.shape[:-1], chunks, k)
        local, prod = _sequential(a, b, None, cut)
        # the carry entering each chunk, from the chunk summaries
        carries = torch.empty(local.shape[:-1], dtype=alpha.dtype, device=alpha.device)
        c = init if init is not None else torch.zeros(alpha.shape[:-1], dtype=alpha.dtype, device=alpha.device)
        for j in range(chunks):
            carries[..., j] = c
            c = local[..., j, -1] + _times(prod[..., j, -1], c, cut)
        out = (local + _times(prod, carries.unsqueeze(-1), cut)).reshape(*alpha.shape[:-1], chunks * k)[..., :T]
    return out.flip(-1) if reverse else out
