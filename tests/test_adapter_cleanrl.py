"""``rltriton.adapters.cleanrl`` against CleanRL's loops, written out here.

CleanRL's GAE loop (``cleanrl/ppo.py``) is copied in spirit below (``cleanrl_gae``): buffers
``[num_steps, num_envs]``, ``dones[t]`` marks that obs t starts an episode, ``next_value`` is
``[1, num_envs]``. The other loops extend it the obvious way (returns: CleanRL's old non-GAE
branch; truncation: bootstrap from the final observation's value; V-trace: the IMPALA
recursion with rlax's lambda). Float64 buffers must agree to float64 rounding.
"""

from __future__ import annotations

import pytest
import torch

import rltriton as rt
from rltriton.adapters import cleanrl as crl

GAMMA, LAM = 0.97, 0.9


# --------------------------------------------------------------------------------------
# loops (the peers)
# --------------------------------------------------------------------------------------


def cleanrl_gae(rewards, values, dones, next_value, next_done, gamma, gae_lambda):
    num_steps = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    lastgaelam = 0
    for t in reversed(range(num_steps)):
        if t == num_steps - 1:
            nextnonterminal = 1.0 - next_done
            nextvalues = next_value
        else:
            nextnonterminal = 1.0 - dones[t + 1]
            nextvalues = values[t + 1]
        delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
        advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
    return advantages, advantages + values


def cleanrl_returns(rewards, dones, next_value, next_done, gamma):
    num_steps = rewards.shape[0]
    returns = torch.zeros_like(rewards)
    for t in reversed(range(num_steps)):
        if t == num_steps - 1:
            nextnonterminal = 1.0 - next_done
            next_return = next_value.reshape(-1)
        else:
            nextnonterminal = 1.0 - dones[t + 1]
            next_return = returns[t + 1]
        returns[t] = rewards[t] + gamma * nextnonterminal * next_return
    return returns


def _next(values, next_value, t):
    return next_value.reshape(-1) if t == values.shape[0] - 1 else values[t + 1]


def td_lambda_loop(rewards, values, dones, next_value, next_done, gamma, lam):
    T = rewards.shape[0]
    G = torch.zeros_like(rewards)
    for t in reversed(range(T)):
        nnt = 1.0 - (next_done if t == T - 1 else dones[t + 1])
        nv = _next(values, next_value, t)
        nxt = nv if t == T - 1 else G[t + 1]
        G[t] = rewards[t] + gamma * nnt * ((1 - lam) * nv + lam * nxt)
    return G


def vtrace_loop(rewards, values, dones, next_value, next_done, blp, tlp, gamma, lam, rho_bar, c_bar, pg_rho_bar):
    T = rewards.shape[0]
    rho = torch.exp(tlp - blp)
    crho, c, pgrho = rho.clamp(max=rho_bar), lam * rho.clamp(max=c_bar), rho.clamp(max=pg_rho_bar)
    vs = torch.zeros_like(rewards)
    acc = torch.zeros_like(rewards[0])
    for t in reversed(range(T)):
        nnt = 1.0 - (next_done if t == T - 1 else dones[t + 1])
        nv = _next(values, next_value, t)
        acc = crho[t] * (rewards[t] + gamma * nnt * nv - values[t]) + gamma * nnt * c[t] * acc
        vs[t] = values[t] + acc
    pg = torch.zeros_like(rewards)
    for t in range(T):
        nnt = 1.0 - (next_done if t == T - 1 else dones[t + 1])
        nv = _next(values, next_value, t)
        vs_next = nv if t == T - 1 else vs[t + 1]
        q = rewards[t] + gamma * nnt * (lam * vs_next + (1 - lam) * nv)
        pg[t] = pgrho[t] * (q - values[t])
    return vs, pg


def truncation_gae_loop(rewards, values, term, trunc, final_values, next_value, gamma, lam):
    """GAE where a truncated step bootstraps from V(final obs) and both flags cut."""
    T = rewards.shape[0]
    adv = torch.zeros_like(rewards)
    last = torch.zeros_like(rewards[0])
    for t in reversed(range(T)):
        nv = torch.where(trunc[t] != 0, final_values[t], _next(values, next_value, t))
        cont = 1.0 - ((term[t] != 0) | (trunc[t] != 0)).to(rewards.dtype)
        delta = rewards[t] + gamma * nv * (1.0 - term[t].to(rewards.dtype)) - values[t]
        adv[t] = last = delta + gamma * lam * cont * last
    return adv, adv + values


# --------------------------------------------------------------------------------------
# rollouts in CleanRL's layout
# --------------------------------------------------------------------------------------


def cleanrl_rollout(T, N, dtype=torch.float64, seed=0, p_done=0.1):
    g = torch.Generator().manual_seed(seed)
    rewards = torch.randn(T, N, generator=g, dtype=dtype)
    values = torch.randn(T, N, generator=g, dtype=dtype)
    dones = (torch.rand(T, N, generator=g) < p_done).to(dtype)  # CleanRL stores float flags
    next_done = (torch.rand(N, generator=g) < 0.3).to(dtype)
    next_value = torch.randn(1, N, generator=g, dtype=dtype)  # agent.get_value(next_obs).reshape(1, -1)
    return rewards, values, dones, next_value, next_done


def truncation_rollout(T, N, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    rewards = torch.randn(T, N, generator=g, dtype=dtype)
    values = torch.randn(T, N, generator=g, dtype=dtype)
    term = torch.rand(T, N, generator=g) < 0.1
    trunc = (torch.rand(T, N, generator=g) < 0.1) & ~term
    trunc[-1, 0], term[-1, 0] = True, False  # a time limit at the window edge
    final_values = torch.where(trunc, torch.randn(T, N, generator=g, dtype=dtype), torch.zeros((), dtype=dtype))
    next_value = torch.randn(N, generator=g, dtype=dtype)
    return rewards, values, term, trunc, final_values, next_value


def _tol(dtype):
    return dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------------------
# compute_gae == CleanRL's loop
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("T", [1, 7, 130])
def test_compute_gae_matches_cleanrl_loop(dtype, T):
    roll = cleanrl_rollout(T, 5, dtype=dtype, seed=T)
    adv_ref, ret_ref = cleanrl_gae(*roll, GAMMA, LAM)
    adv, ret = crl.compute_gae(*roll, GAMMA, LAM)
    assert adv.shape == ret.shape == (T, 5) and adv.dtype == dtype
    torch.testing.assert_close(adv, adv_ref, **_tol(dtype))
    torch.testing.assert_close(ret, ret_ref, **_tol(dtype))


def test_compute_gae_accepts_flat_rows_and_bool_flags():
    rewards, values, dones, next_value, next_done = cleanrl_rollout(9, 4)
    ref = crl.compute_gae(rewards, values, dones, next_value, next_done, GAMMA, LAM)
    out = crl.compute_gae(rewards, values, dones.bool(), next_value.reshape(-1), next_done.bool(), GAMMA, LAM)
    torch.testing.assert_close(out.advantages, ref.advantages, rtol=0, atol=0)
    torch.testing.assert_close(out.returns, ref.returns, rtol=0, atol=0)


def test_compute_gae_does_not_touch_the_buffers():
    roll = cleanrl_rollout(11, 3)
    before = [x.clone() for x in roll]
    crl.compute_gae(*roll, GAMMA, LAM)
    for a, b in zip(roll, before):
        assert torch.equal(a, b)


def test_compute_gae_on_strided_buffers():
    """Time-major views of env-major storage (or column slices) are read as they are."""
    rewards, values, dones, next_value, next_done = cleanrl_rollout(12, 6)
    views = [x.t().contiguous().t() for x in (rewards, values, dones)]
    assert not views[0].is_contiguous()
    ref = crl.compute_gae(rewards, values, dones, next_value, next_done, GAMMA, LAM)
    out = crl.compute_gae(*views, next_value, next_done, GAMMA, LAM)
    torch.testing.assert_close(out.advantages, ref.advantages, rtol=0, atol=0)


@pytest.mark.parametrize("backend", ["torch", "reference"])
def test_compute_gae_backends(backend):
    roll = cleanrl_rollout(20, 3)
    ref = cleanrl_gae(*roll, GAMMA, LAM)
    out = crl.compute_gae(*roll, GAMMA, LAM, backend=backend)
    torch.testing.assert_close(out.advantages, ref[0], rtol=1e-12, atol=1e-12)


def test_compute_gae_multi_dim_envs():
    """[num_steps, *B] buffers (e.g. [T, n_agents, n_envs]) work like [T, N]."""
    rewards, values, dones, next_value, next_done = cleanrl_rollout(8, 6)
    shape = (8, 2, 3)
    out = crl.compute_gae(
        rewards.reshape(shape), values.reshape(shape), dones.reshape(shape), next_value.reshape(1, 2, 3),
        next_done.reshape(2, 3), GAMMA, LAM,
    )
    ref = crl.compute_gae(rewards, values, dones, next_value, next_done, GAMMA, LAM)
    torch.testing.assert_close(out.advantages.reshape(8, 6), ref.advantages, rtol=0, atol=0)


# --------------------------------------------------------------------------------------
# returns, TD(lambda), V-trace
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("T", [1, 9, 70])
def test_compute_returns_matches_cleanrl_loop(T):
    rewards, values, dones, next_value, next_done = cleanrl_rollout(T, 4, seed=T)
    ref = cleanrl_returns(rewards, dones, next_value, next_done, GAMMA)
    out = crl.compute_returns(rewards, dones, next_value, next_done, GAMMA)
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("T", [1, 9, 70])
def test_compute_td_lambda_matches_loop_and_gae_returns(T):
    roll = cleanrl_rollout(T, 4, seed=T + 1)
    ref = td_lambda_loop(*roll, GAMMA, LAM)
    out = crl.compute_td_lambda(*roll, GAMMA, LAM)
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out, crl.compute_gae(*roll, GAMMA, LAM).returns, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("lam,rho_bar,c_bar,pg_rho_bar", [(1.0, 1.0, 1.0, None), (0.9, 2.0, 0.8, 1.5)])
@pytest.mark.parametrize("T", [1, 9, 70])
def test_compute_vtrace_matches_loop(T, lam, rho_bar, c_bar, pg_rho_bar):
    rewards, values, dones, next_value, next_done = cleanrl_rollout(T, 4, seed=T + 2)
    g = torch.Generator().manual_seed(T)
    blp = -torch.rand(T, 4, generator=g, dtype=torch.float64)
    tlp = -torch.rand(T, 4, generator=g, dtype=torch.float64)
    ref = vtrace_loop(
        rewards, values, dones, next_value, next_done, blp, tlp, GAMMA, lam, rho_bar, c_bar,
        rho_bar if pg_rho_bar is None else pg_rho_bar,
    )
    vs, pg = crl.compute_vtrace(
        rewards, values, dones, next_value, next_done, blp, tlp, GAMMA, vtrace_lambda=lam, rho_bar=rho_bar,
        c_bar=c_bar, pg_rho_bar=pg_rho_bar,
    )
    torch.testing.assert_close(vs, ref[0], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(pg, ref[1], rtol=1e-12, atol=1e-12)


def test_compute_vtrace_on_policy_is_td_lambda():
    roll = cleanrl_rollout(15, 3, seed=5)
    lp = -torch.rand(15, 3, dtype=torch.float64)
    vs, _ = crl.compute_vtrace(*roll[:5], lp, lp, GAMMA, vtrace_lambda=LAM)
    torch.testing.assert_close(vs, crl.compute_td_lambda(*roll, GAMMA, LAM), rtol=1e-10, atol=1e-10)


# --------------------------------------------------------------------------------------
# truncation-aware variants
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("T", [1, 10, 90])
def test_gae_with_truncation_matches_loop(T):
    roll = truncation_rollout(T, 5, seed=T)
    ref = truncation_gae_loop(*roll, GAMMA, LAM)
    out = crl.compute_gae_with_truncation(*roll, GAMMA, LAM)
    torch.testing.assert_close(out.advantages, ref[0], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out.returns, ref[1], rtol=1e-12, atol=1e-12)


def test_gae_with_truncation_is_rt_gae_with_bootstrap_values():
    rewards, values, term, trunc, final_values, next_value = truncation_rollout(12, 4, seed=3)
    boot = final_values.clone()
    boot[-1] = torch.where(trunc[-1], final_values[-1], next_value)
    ref = rt.gae(rewards, values, gamma=GAMMA, lam=LAM, terminated=term, truncated=trunc, bootstrap_values=boot,
                 time_dim=0)
    out = crl.compute_gae_with_truncation(rewards, values, term, trunc, final_values, next_value, GAMMA, LAM)
    torch.testing.assert_close(out.advantages, ref.advantages, rtol=0, atol=0)


def test_gae_with_truncation_without_truncations_is_compute_gae():
    """With no time limits the variant equals CleanRL's GAE (dones shifted by one step)."""
    rewards, values, term, _, _, next_value = truncation_rollout(14, 4, seed=4)
    no_trunc = torch.zeros_like(term)
    out = crl.compute_gae_with_truncation(
        rewards, values, term, no_trunc, torch.zeros_like(values), next_value, GAMMA, LAM
    )
    dones = torch.cat([torch.zeros(1, 4, dtype=torch.float64), term[:-1].double()])
    ref = cleanrl_gae(rewards, values, dones, next_value.reshape(1, -1), term[-1].double(), GAMMA, LAM)
    torch.testing.assert_close(out.advantages, ref[0], rtol=1e-12, atol=1e-12)


def test_truncation_at_the_window_edge_uses_final_value():
    rewards, values = torch.zeros(2, 1, dtype=torch.float64), torch.zeros(2, 1, dtype=torch.float64)
    term, trunc = torch.zeros(2, 1, dtype=torch.bool), torch.tensor([[False], [True]])
    final_values = torch.tensor([[0.0], [10.0]], dtype=torch.float64)
    out = crl.compute_gae_with_truncation(
        rewards, values, term, trunc, final_values, torch.tensor([100.0], dtype=torch.float64), 0.5, 1.0
    )
    assert out.advantages[:, 0].tolist() == [2.5, 5.0]  # V(final obs) = 10, never next_value = 100


def test_truncation_variants_of_returns_td_lambda_vtrace():
    rewards, values, term, trunc, final_values, next_value = truncation_rollout(16, 3, seed=8)
    boot = final_values.clone()
    boot[-1] = torch.where(trunc[-1], final_values[-1], next_value)
    common = dict(terminated=term, truncated=trunc, bootstrap_values=boot, time_dim=0)
    torch.testing.assert_close(
        crl.compute_returns_with_truncation(rewards, term, trunc, final_values, next_value, GAMMA),
        rt.discounted_returns(rewards, gamma=GAMMA, **common), rtol=0, atol=0,
    )
    torch.testing.assert_close(
        crl.compute_td_lambda_with_truncation(rewards, values, term, trunc, final_values, next_value, GAMMA, LAM),
        rt.td_lambda(rewards, values, gamma=GAMMA, lam=LAM, **common), rtol=0, atol=0,
    )
    blp, tlp = -torch.rand(16, 3, dtype=torch.float64), -torch.rand(16, 3, dtype=torch.float64)
    out = crl.compute_vtrace_with_truncation(
        rewards, values, term, trunc, final_values, next_value, blp, tlp, GAMMA, vtrace_lambda=LAM, rho_bar=1.2
    )
    ref = rt.vtrace(rewards, values, tlp - blp, gamma=GAMMA, lam=LAM, rho_bar=1.2, **common)
    torch.testing.assert_close(out.vs, ref.value_targets, rtol=0, atol=0)
    torch.testing.assert_close(out.pg_advantages, ref.advantages, rtol=0, atol=0)


def test_next_step_autoreset_helpers():
    """Gymnasium NEXT_STEP: the final obs is the next stored obs; the step after a done is
    fake and is masked by CleanRL's observation-aligned dones."""
    rewards, values, term, trunc, _, next_value = truncation_rollout(10, 3, seed=9)
    fv = crl.next_step_final_values(values, next_value)
    assert torch.equal(fv[:-1], values[1:]) and torch.equal(fv[-1], next_value)
    out = crl.compute_gae_with_truncation(rewards, values, term, trunc, fv, next_value, GAMMA, LAM)
    ref = truncation_gae_loop(rewards, values, term, trunc, fv, next_value, GAMMA, LAM)
    torch.testing.assert_close(out.advantages, ref[0], rtol=1e-12, atol=1e-12)
    dones = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
    assert crl.next_step_valid_mask(dones).tolist() == [[True, False], [False, True]]


# --------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------


def test_errors_name_the_argument():
    rewards, values, dones, next_value, next_done = cleanrl_rollout(6, 4)
    with pytest.raises(ValueError, match="dones: expected shape"):
        crl.compute_gae(rewards, values, dones[:-1], next_value, next_done, GAMMA, LAM)
    with pytest.raises(ValueError, match="next_value: expected shape"):
        crl.compute_gae(rewards, values, dones, next_value[:, :2], next_done, GAMMA, LAM)
    with pytest.raises(ValueError, match="next_done: expected shape"):
        crl.compute_gae(rewards, values, dones, next_value, next_done[:3], GAMMA, LAM)
    with pytest.raises(TypeError, match="rewards: expected a torch.Tensor"):
        crl.compute_gae(rewards.numpy(), values, dones, next_value, next_done, GAMMA, LAM)
    with pytest.raises(ValueError, match="values"):
        crl.compute_gae(rewards, values[:, :2], dones, next_value, next_done, GAMMA, LAM)
    with pytest.raises(ValueError, match="gamma"):
        crl.compute_gae(rewards, values, dones, next_value, next_done, 1.5, LAM)
    r, v, term, trunc, fv, nv = truncation_rollout(6, 4)
    with pytest.raises(ValueError, match="final_values: expected shape"):
        crl.compute_gae_with_truncation(r, v, term, trunc, fv[:, :1], nv, GAMMA, LAM)
    with pytest.raises(ValueError, match="truncations: expected shape"):
        crl.compute_gae_with_truncation(r, v, term, trunc[:2], fv, nv, GAMMA, LAM)
    with pytest.raises(ValueError, match="behavior_logprobs: expected shape"):
        crl.compute_vtrace(rewards, values, dones, next_value, next_done, rewards[:1], rewards, GAMMA)
