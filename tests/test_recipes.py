"""Recipes of docs/semantics.md for rollouts encoded the way other libraries encode them,
checked against loops written from PEERS.md's description of those libraries.

verl (``compute_gae_advantage_return``): token-level ``[batch, length]`` rows with a
``response_mask``; masked tokens are skipped, the GAE carry and the next value passing
through them unchanged, and nothing is bootstrapped past the last token. rltriton gets the
same advantages from one ``rt.discounted_returns`` (the value of the next unmasked token, a
first-order recurrence itself) and one ``rt.gae`` with gamma = lam = 1 on masked tokens.

PufferLib 3 (``compute_puff_advantage``): GAE with V-trace's clipped importance weights on
rows whose rewards and dones are shifted by one; rltriton's V-trace on the unshifted columns
gives the same advantages (its value targets minus the values).
"""

from __future__ import annotations

import pytest
import torch

import rltriton as rt
from tests.conftest import INTERPRET
from tests.rollouts import tolerance

GAMMA, LAM = 0.97, 0.9


def verl_loop(r: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, gamma: float, lam: float) -> torch.Tensor:
    """verl's masked GAE as PEERS.md describes it, one step at a time in float64 (before its
    whitening): at a masked token the carry and the next value are passed on unchanged."""
    r, v, m = r.double(), v.double(), mask.double()
    B, L = r.shape
    adv = torch.empty_like(r)
    next_v = torch.zeros(B, dtype=torch.float64)
    carry = torch.zeros(B, dtype=torch.float64)
    for t in reversed(range(L)):
        new = r[:, t] + gamma * next_v - v[:, t] + gamma * lam * carry
        next_v = m[:, t] * v[:, t] + (1 - m[:, t]) * next_v
        carry = m[:, t] * new + (1 - m[:, t]) * carry
        adv[:, t] = carry
    return adv


def verl_recipe(r, v, mask, gamma, lam, backend="auto"):
    """The recipe of docs/semantics.md."""
    m = mask.to(r.dtype)
    # the value of the next unmasked token: z_t = m_t v_t + (1 - m_t) z_{t+1}, shifted by one
    z = rt.discounted_returns(v * m, gamma=1 - m, backend=backend)
    next_valid = torch.cat([z[:, 1:], torch.zeros_like(z[:, :1])], dim=1)
    one = torch.ones((), dtype=r.dtype)
    g = torch.where(mask, torch.tensor(gamma, dtype=r.dtype), one)
    lm = torch.where(mask, torch.tensor(lam, dtype=r.dtype), one)
    return rt.gae(r * m, v * m, gamma=g, lam=lm, next_values=next_valid * m, backend=backend).advantages


def _rollout(B: int, L: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    r = torch.randn(B, L, generator=gen, dtype=torch.float64)
    v = torch.randn(B, L, generator=gen, dtype=torch.float64)
    mask = torch.rand(B, L, generator=gen) < 0.7  # masked tokens inside the response too
    mask[:, :3] = False  # left padding
    mask[0, L - 5 :] = False  # right padding
    mask[1] = False  # a row with no response token
    return r, v, mask


@pytest.mark.parametrize("shape", [(4, 1), (4, 3), (5, 37), (3, 257)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_verl_masked_gae(shape):
    r, v, mask = _rollout(*shape, seed=shape[1])
    ref = verl_loop(r, v, mask, GAMMA, LAM)
    for backend in ("torch", "reference"):
        torch.testing.assert_close(verl_recipe(r, v, mask, GAMMA, LAM, backend), ref, rtol=0, atol=1e-12)
    # float32 inputs (float32 arithmetic): the rounding bound of tests/rollouts.py
    out = verl_recipe(r.float(), v.float(), mask, GAMMA, LAM, "torch")
    assert out.dtype == torch.float32
    assert float((out.double() - ref).abs().max()) <= tolerance(shape[1], ref, torch.float32)


@pytest.mark.skipif(not INTERPRET, reason="needs TRITON_INTERPRET=1")
def test_verl_masked_gae_triton():
    r, v, mask = _rollout(3, 37, seed=5)
    out = verl_recipe(r.float(), v.float(), mask, GAMMA, LAM, "triton")
    ref = verl_loop(r, v, mask, GAMMA, LAM)
    assert float((out.double() - ref).abs().max()) <= tolerance(37, ref, torch.float32)


def puffer_loop(values, rewards, dones, importance, gamma, lam, rho_clip, c_clip):
    """PufferLib 3's advantage op as docs/semantics.md states it (rewards and dones shifted by
    one, V-trace-clipped importance weights, no advantage in the last column), in float64."""
    v, r, d, w = (x.double() for x in (values, rewards, dones, importance))
    H = v.shape[1]
    adv = torch.zeros_like(v)
    carry = torch.zeros(v.shape[0], dtype=torch.float64)
    for t in range(H - 2, -1, -1):
        live = 1.0 - d[:, t + 1]
        rho, c = w[:, t].clamp(max=rho_clip), w[:, t].clamp(max=c_clip)
        carry = rho * (r[:, t + 1] + gamma * v[:, t + 1] * live - v[:, t]) + gamma * lam * c * carry * live
        adv[:, t] = carry
    return adv


@pytest.mark.parametrize("clips", [(1.0, 1.0), (1.3, 0.8)])
def test_pufferlib_advantage(clips):
    gen = torch.Generator().manual_seed(7)
    S, H = 5, 33
    values = torch.randn(S, H, generator=gen, dtype=torch.float64)
    rewards = torch.randn(S, H, generator=gen, dtype=torch.float64)
    dones = (torch.rand(S, H, generator=gen) < 0.1).double()
    importance = torch.exp(0.5 * torch.randn(S, H, generator=gen, dtype=torch.float64))
    ref = puffer_loop(values, rewards, dones, importance, GAMMA, LAM, *clips)
    for backend in ("torch", "reference"):
        vs = rt.vtrace(rewards[:, 1:], values[:, :-1], importance[:, :-1].log(), gamma=GAMMA, lam=LAM,
                       rho_bar=clips[0], c_bar=clips[1], terminated=dones[:, 1:], last_value=values[:, -1],
                       backend=backend)
        torch.testing.assert_close(vs.value_targets - values[:, :-1], ref[:, :-1], rtol=0, atol=1e-12)
