"""``rltriton.adapters.torchrl`` against TorchRL's own estimators (skipped without torchrl).

* TorchRL's estimator tests that are parametrised over the estimator classes
  (``test/objectives/test_values.py::TestAdv``: dispatch, differentiable rewards,
  non-differentiable mode, time_dim, skip_existing, set_keys), re-expressed against our
  subclasses, each also comparing the outputs with TorchRL's class on the same input;
* module and functional outputs on the same TensorDicts, truncated steps included;
* a ``ClipPPOLoss`` trained with our GAE follows the same parameters as with TorchRL's;
* the V-trace truncated-step semantics (TorchRL <= 0.13 vs SPEC.md).
"""

from __future__ import annotations

import copy
import functools

import pytest
import torch

pytest.importorskip("torchrl")

from tensordict import TensorDict, assert_allclose_td  # noqa: E402
from tensordict.nn import TensorDictModule, set_composite_lp_aggregate  # noqa: E402
from torch import nn  # noqa: E402
from torchrl.modules import OneHotCategorical, ProbabilisticActor, ValueOperator  # noqa: E402
from torchrl.objectives import ClipPPOLoss  # noqa: E402
from torchrl.objectives.utils import ValueEstimators  # noqa: E402
from torchrl.objectives.value import GAE as TorchRLGAE  # noqa: E402
from torchrl.objectives.value import TD1Estimator as TorchRLTD1  # noqa: E402
from torchrl.objectives.value import TDLambdaEstimator as TorchRLTDLambda  # noqa: E402
from torchrl.objectives.value import VTrace as TorchRLVTrace  # noqa: E402
from torchrl.objectives.value import functional as trl_f  # noqa: E402

import rltriton  # noqa: E402
from rltriton.adapters import torchrl as ours  # noqa: E402

CLOSE = dict(rtol=1e-5, atol=1e-5)

# (our class, TorchRL's class, extra constructor kwargs) -- TorchRL's TestAdv parametrisation
PAIRS = [
    pytest.param(ours.GAE, TorchRLGAE, {"lmbda": 0.95}, id="GAE"),
    pytest.param(ours.TD1Estimator, TorchRLTD1, {}, id="TD1"),
    pytest.param(ours.TDLambdaEstimator, TorchRLTDLambda, {"lmbda": 0.95}, id="TDLambda"),
    pytest.param(ours.VTrace, TorchRLVTrace, {}, id="VTrace"),
]


@pytest.fixture(autouse=True, scope="module")
def _composite_log_prob():
    """As TorchRL's TestAdv: the behaviour log-prob lives under "action_log_prob"."""
    setter = set_composite_lp_aggregate(False)
    setter.set()
    yield
    setter.unset()


def value_net(out_key: str = "state_value", seed: int = 0) -> TensorDictModule:
    torch.manual_seed(seed)
    return TensorDictModule(nn.Linear(3, 1), in_keys=["obs"], out_keys=[out_key])


def actor_net(seed: int = 1) -> ProbabilisticActor:
    torch.manual_seed(seed)
    return ProbabilisticActor(
        module=TensorDictModule(nn.Linear(3, 4), in_keys=["obs"], out_keys=["logits"]),
        in_keys=["logits"],
        out_keys=["action"],
        distribution_class=OneHotCategorical,
        return_log_prob=True,
    )


def build(cls, extra, *, value_network, actor=None, **kwargs):
    if cls in (ours.VTrace, TorchRLVTrace):
        kwargs["actor_network"] = actor if actor is not None else actor_net()
    return cls(gamma=0.98, value_network=value_network, **extra, **kwargs)


def small_td(cls, *, reward_grad=False, names=None, terminated=True, B=1, T=10, seed=0, truncated=False):
    """TorchRL's TestAdv TensorDict: obs [B, T, 3], next obs/reward/done(/terminated)."""
    g = torch.Generator().manual_seed(seed)
    done = torch.zeros(B, T, 1, dtype=torch.bool)
    term = torch.zeros(B, T, 1, dtype=torch.bool)
    if truncated:
        done[:, 3] = True  # a time limit inside the window
        done[:, 6] = term[:, 6] = True  # a termination
    nxt = {
        "obs": torch.randn(B, T, 3, generator=g),
        "reward": torch.randn(B, T, 1, generator=g).requires_grad_(reward_grad),
        "done": done,
    }
    if terminated:
        nxt["terminated"] = term
    data = {"obs": torch.randn(B, T, 3, generator=g), "next": nxt}
    if cls in (ours.VTrace, TorchRLVTrace):
        data["action_log_prob"] = torch.log(torch.rand(B, T, 1, generator=g))
    return TensorDict(data, [B, T], names=names)


def assert_same_outputs(a: TensorDict, b: TensorDict) -> None:
    for key in ("advantage", "value_target"):
        torch.testing.assert_close(a[key], b[key], **CLOSE)


# --------------------------------------------------------------------------------------
# TorchRL's TestAdv, against our subclasses
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls,theirs,extra", PAIRS)
def test_subclass_of_torchrl(cls, theirs, extra):
    assert issubclass(cls, theirs)
    est = build(cls, extra, value_network=value_net())
    assert est.backend == "auto"


@pytest.mark.parametrize("cls,theirs,extra", PAIRS)
def test_dispatch(cls, theirs, extra):
    """Keyword-tensor calls (``dispatch``) return ``(advantage, value_target)``."""
    vnet, actor = value_net(), actor_net()
    kwargs = {
        "obs": torch.randn(1, 10, 3),
        "next_reward": torch.randn(1, 10, 1, requires_grad=True),
        "next_done": torch.zeros(1, 10, 1, dtype=torch.bool),
        "next_terminated": torch.zeros(1, 10, 1, dtype=torch.bool),
        "next_obs": torch.randn(1, 10, 3),
    }
    if cls is ours.VTrace:
        kwargs["action_log_prob"] = torch.log(torch.rand(1, 10, 1))
    advantage, value_target = build(cls, extra, value_network=vnet, actor=actor, differentiable=False)(**kwargs)
    assert advantage.shape == value_target.shape == torch.Size([1, 10, 1])
    adv_ref, vt_ref = build(theirs, extra, value_network=vnet, actor=actor, differentiable=False)(**kwargs)
    torch.testing.assert_close(advantage, adv_ref, **CLOSE)
    torch.testing.assert_close(value_target, vt_ref, **CLOSE)


@pytest.mark.parametrize("cls,theirs,extra", PAIRS)
def test_diff_reward(cls, theirs, extra):
    """differentiable=True: the advantage backpropagates to the reward (as TorchRL's, same
    gradient) and never to the value network's parameters."""
    vnet, actor = value_net(), actor_net()
    grads = []
    for c in (cls, theirs):
        td = small_td(cls, reward_grad=True, terminated=cls is ours.VTrace)
        out = build(c, extra, value_network=vnet, actor=actor, differentiable=True)(td.clone(False))
        out["advantage"].sum().backward()
        for p in vnet.parameters():
            assert p.grad is None or (p.grad == 0).all()
        grads.append(td["next", "reward"].grad)
    assert grads[0].norm() > 0
    torch.testing.assert_close(grads[0], grads[1], **CLOSE)


@pytest.mark.parametrize("shifted", [True, False])
@pytest.mark.parametrize("cls,theirs,extra", PAIRS)
def test_non_differentiable(cls, theirs, extra, shifted):
    vnet, actor = value_net(), actor_net()
    td = small_td(cls, reward_grad=True, names=[None, "time"], terminated=cls is ours.VTrace)
    out = build(cls, extra, value_network=vnet, actor=actor, differentiable=False, shifted=shifted)(td.clone(False))
    assert out["advantage"].is_leaf
    ref = build(theirs, extra, value_network=vnet, actor=actor, differentiable=False, shifted=shifted)(td.clone(False))
    assert_same_outputs(out, ref)


@pytest.mark.parametrize("cls,theirs,extra", PAIRS)
def test_time_dim(cls, theirs, extra):
    vnet, actor = value_net(), actor_net()
    make = functools.partial(build, cls, extra, value_network=vnet, actor=actor, differentiable=False, shifted=True)
    td = small_td(cls, reward_grad=True, names=[None, "time"], terminated=cls is ours.VTrace)
    module_none, module_0, module_1 = make(time_dim=None), make(time_dim=0), make(time_dim=1)
    td_none = module_none(td.clone(False))
    td_1 = module_1(td.clone(False))
    td_0 = module_0(td.transpose(0, 1).clone(False))
    assert_allclose_td(td_none, td_1)
    assert_allclose_td(td_none, td_0.transpose(0, 1))
    ref = build(theirs, extra, value_network=vnet, actor=actor, differentiable=False, shifted=True)(td.clone(False))
    assert_same_outputs(td_none, ref)
    if cls is not ours.VTrace:
        vt = module_none.value_estimate(td.clone(False))
        torch.testing.assert_close(vt, module_0.value_estimate(td.clone(False), time_dim=1))
        torch.testing.assert_close(vt, module_0.value_estimate(td.clone(False), time_dim=-1))


@pytest.mark.parametrize("cls,theirs,extra", PAIRS)
@pytest.mark.parametrize("has_value_net", [True, False])
@pytest.mark.parametrize("skip_existing", [True, False, None])
@pytest.mark.parametrize("shifted", [True, False])
def test_skip_existing(cls, theirs, extra, has_value_net, skip_existing, shifted):
    vnet = (
        TensorDictModule(lambda x: torch.zeros(*x.shape[:-1], 1), in_keys=["obs"], out_keys=["state_value"])
        if has_value_net
        else None
    )
    td = small_td(cls, reward_grad=True, names=[None, "time"])
    td["state_value"] = torch.ones(1, 10, 1)
    td["next", "state_value"] = torch.ones(1, 10, 1)
    out = build(cls, extra, value_network=vnet, differentiable=True, shifted=shifted,
                skip_existing=skip_existing)(td.clone(False))
    exp_val = 0 if has_value_net and not skip_existing else 1
    assert (out["state_value"] == exp_val).all()


@pytest.mark.parametrize("value", ["state_value", "state_value_test"])
@pytest.mark.parametrize("cls,theirs,extra", PAIRS)
def test_set_keys(cls, theirs, extra, value):
    vnet = value_net(out_key=value)
    module = build(cls, extra, value_network=vnet)
    module.set_keys(value=value)
    assert module.tensor_keys.value == value
    with pytest.raises(KeyError, match="unknown_key"):
        module.set_keys(unknown_key="unknown_value")
    # the renamed keys are the ones read and written
    module.set_keys(advantage="adv", value_target=("targets", "vt"))
    td = small_td(cls, terminated=True)
    out = module(td.clone(False))
    assert "adv" in out.keys() and ("targets", "vt") in out.keys(True) and value in out.keys()
    ref = build(theirs, extra, value_network=vnet, actor=module.actor_network if cls is ours.VTrace else None)
    ref.set_keys(value=value)
    ref = ref(td.clone(False))
    torch.testing.assert_close(out["adv"], ref["advantage"], **CLOSE)


@pytest.mark.parametrize("cls,theirs,extra", PAIRS)
def test_set_deprecated_keys(cls, theirs, extra):
    with pytest.raises(RuntimeError, match="via constructor is deprecated"):
        build(cls, extra, value_network=value_net(out_key="test_value"), value_key="test_value")


# --------------------------------------------------------------------------------------
# rltriton does the computing
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls,theirs,extra", PAIRS)
def test_recursion_runs_in_rltriton(cls, theirs, extra, monkeypatch):
    name = {ours.GAE: "gae", ours.VTrace: "vtrace"}.get(cls, "td_lambda")
    calls = []
    real = getattr(rltriton, name)

    def spy(*args, **kwargs):
        calls.append(kwargs["backend"])
        return real(*args, **kwargs)

    monkeypatch.setattr(rltriton, name, spy)
    build(cls, extra, value_network=value_net())(small_td(cls))
    assert calls == ["auto"]
    build(cls, extra, value_network=value_net(), backend="reference")(small_td(cls))
    assert calls == ["auto", "reference"]
    out = build(cls, extra, value_network=value_net(), differentiable=True)(small_td(cls, reward_grad=True))
    assert calls[-1] == "torch" and out["advantage"].requires_grad  # autograd needs the torch backend


# --------------------------------------------------------------------------------------
# same TensorDicts as TorchRL, truncated steps included
# --------------------------------------------------------------------------------------


def rollout(B=3, T=12, seed=0, *, next_values=True, dtype=torch.float32) -> TensorDict:
    """[B, T] rollout with terminations, time limits (also at the window edge) and, at a
    truncated step, ("next", "state_value") = V(final obs) (not the next row's value)."""
    g = torch.Generator().manual_seed(seed)
    term = torch.rand(B, T, 1, generator=g) < 0.15
    trunc = (torch.rand(B, T, 1, generator=g) < 0.15) & ~term
    trunc[0, -1], term[0, -1] = True, False
    data = {
        "obs": torch.randn(B, T, 3, generator=g),
        "state_value": torch.randn(B, T, 1, generator=g, dtype=dtype),
        "action_log_prob": -torch.rand(B, T, 1, generator=g),
        "next": {
            "obs": torch.randn(B, T, 3, generator=g),
            "reward": torch.randn(B, T, 1, generator=g, dtype=dtype),
            "done": term | trunc,
            "terminated": term,
            "truncated": trunc,
        },
    }
    if next_values:
        data["next"]["state_value"] = torch.randn(B, T, 1, generator=g, dtype=dtype)
    return TensorDict(data, [B, T])


MODULE_CASES = [
    pytest.param(ours.GAE, TorchRLGAE, {"lmbda": 0.9}, id="GAE"),
    pytest.param(ours.GAE, TorchRLGAE, {"lmbda": 0.9, "vectorized": True}, id="GAE-vectorized"),
    pytest.param(ours.GAE, TorchRLGAE, {"lmbda": 0.9, "average_gae": True}, id="GAE-average"),
    pytest.param(ours.GAE, TorchRLGAE, {"lmbda": 0.9, "auto_reset_env": True}, id="GAE-auto_reset_env"),
    pytest.param(ours.TD1Estimator, TorchRLTD1, {}, id="TD1"),
    pytest.param(ours.TD1Estimator, TorchRLTD1, {"average_rewards": True}, id="TD1-average"),
    pytest.param(ours.TDLambdaEstimator, TorchRLTDLambda, {"lmbda": 0.9}, id="TDLambda"),
    pytest.param(ours.TDLambdaEstimator, TorchRLTDLambda, {"lmbda": 0.9, "vectorized": False}, id="TDLambda-loop"),
    pytest.param(ours.VTrace, TorchRLVTrace, {"rho_thresh": 1.5, "c_thresh": 0.7}, id="VTrace"),
    pytest.param(ours.VTrace, TorchRLVTrace, {"average_adv": True}, id="VTrace-average"),
]


@pytest.mark.parametrize("cls,theirs,extra", MODULE_CASES)
@pytest.mark.parametrize("source", ["tensordict", "value_network"])
def test_module_outputs_match_torchrl(cls, theirs, extra, source):
    vnet = value_net() if source == "value_network" else None
    actor = actor_net()
    td = rollout(seed=3, next_values=source == "tensordict")
    if vnet is not None:
        del td["state_value"]  # the value network writes both
    out = build(cls, extra, value_network=vnet, actor=actor)(td.clone())
    ref = build(theirs, extra, value_network=vnet, actor=actor)(td.clone())
    assert_same_outputs(out, ref)
    if "average_rewards" in extra:  # written back, as TorchRL does
        torch.testing.assert_close(out["next", "reward"], ref["next", "reward"], **CLOSE)


@pytest.mark.parametrize("cls,theirs,extra", MODULE_CASES[:1] + MODULE_CASES[6:7])
def test_done_and_truncated_without_terminated(cls, theirs, extra):
    """No ("next", "terminated") entry: terminated defaults to done (SPEC section 5), as in
    TorchRL's estimators, so time-limit steps do not bootstrap either."""
    td = rollout(seed=7)
    del td["next", "terminated"]
    out = build(cls, extra, value_network=None)(td.clone())
    ref = build(theirs, extra, value_network=None)(td.clone())
    assert_same_outputs(out, ref)


@pytest.mark.parametrize("cls,theirs,extra", PAIRS)
def test_steps_to_next_obs(cls, theirs, extra):
    """Multi-step transitions: gamma ** steps_to_next_obs per step."""
    td = rollout(seed=4)
    td["steps_to_next_obs"] = torch.randint(1, 4, (3, 12, 1))
    actor = actor_net()
    out = build(cls, extra, value_network=None, actor=actor)(td.clone())
    ref = build(theirs, extra, value_network=None, actor=actor)(td.clone())
    assert_same_outputs(out, ref)


@pytest.mark.parametrize("cls,theirs,extra", PAIRS)
def test_float64(cls, theirs, extra):
    """Outputs keep the values' dtype. TorchRL rounds gamma to float32 on its way through
    ``gamma * (~done).int()``, hence the float32-level tolerance."""
    td = rollout(seed=5, dtype=torch.float64)
    actor = actor_net()
    out = build(cls, extra, value_network=None, actor=actor)(td.clone())
    ref = build(theirs, extra, value_network=None, actor=actor)(td.clone())
    assert out["advantage"].dtype == out["value_target"].dtype == torch.float64
    torch.testing.assert_close(out["advantage"], ref["advantage"], rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(out["value_target"], ref["value_target"], rtol=1e-6, atol=1e-6)


def test_shifted_with_internal_truncations_matches_torchrl():
    vnet = value_net()
    td = small_td(ours.GAE, truncated=True, B=2, T=10, names=[None, "time"])
    for budget in (1, 2):
        out = ours.GAE(gamma=0.98, lmbda=0.9, value_network=vnet, shifted=True, shifted_budget=budget)(td.clone())
        ref = TorchRLGAE(gamma=0.98, lmbda=0.9, value_network=vnet, shifted=True, shifted_budget=budget)(td.clone())
        assert_same_outputs(out, ref)
        assert torch.equal(out["shifted_valid"], ref["shifted_valid"])


@pytest.mark.parametrize("cls,theirs,extra", PAIRS[:3])
def test_value_estimate_matches_torchrl(cls, theirs, extra):
    vnet = value_net()
    td = rollout(seed=5, next_values=False).exclude("state_value")
    out = build(cls, extra, value_network=vnet).value_estimate(td.clone())
    ref = build(theirs, extra, value_network=vnet).value_estimate(td.clone())
    torch.testing.assert_close(out, ref, **CLOSE)


# --------------------------------------------------------------------------------------
# functionals
# --------------------------------------------------------------------------------------


def fn_inputs(shape=(3, 20, 2), dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    term = torch.rand(shape, generator=g) < 0.1
    done = term | (torch.rand(shape, generator=g) < 0.1)
    v, nv, r = (torch.randn(shape, generator=g, dtype=dtype) for _ in range(3))
    return v, nv, r, done, term


@pytest.mark.parametrize("time_dim", [-2, 1, 0])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_functionals_match_torchrl(time_dim, dtype):
    v, nv, r, done, term = fn_inputs(dtype=dtype)
    if time_dim == 0:
        v, nv, r, done, term = (x.transpose(0, 1) for x in (v, nv, r, done, term))
    # float64: TorchRL rounds gamma to float32 (``gamma * (~done).int()`` is float32)
    tol = dict(rtol=1e-6, atol=1e-6) if dtype == torch.float64 else CLOSE
    for f_ours, f_theirs in [
        (ours.generalized_advantage_estimate, trl_f.generalized_advantage_estimate),
        (ours.vec_generalized_advantage_estimate, trl_f.vec_generalized_advantage_estimate),
    ]:
        got = f_ours(0.97, 0.9, v, nv, r, done, term, time_dim=time_dim)
        ref = f_theirs(0.97, 0.9, v, nv, r, done, term, time_dim=time_dim)
        for a, b in zip(got, ref):
            assert a.dtype == dtype
            torch.testing.assert_close(a, b, **tol)
    got = ours.td_lambda_return_estimate(0.97, 0.9, nv, r, done, term, time_dim=time_dim)
    torch.testing.assert_close(got, trl_f.td_lambda_return_estimate(0.97, 0.9, nv, r, done, term, time_dim=time_dim),
                               **tol)
    got = ours.td1_return_estimate(0.97, nv, r, done, term, time_dim=time_dim)
    torch.testing.assert_close(got, trl_f.td1_return_estimate(0.97, nv, r, done, term, time_dim=time_dim), **tol)
    lp, lm = -torch.rand_like(v), -torch.rand_like(v)
    got = ours.vtrace_advantage_estimate(0.97, lp, lm, v, nv, r, done, term, 1.3, 0.8, time_dim=time_dim)
    ref = trl_f.vtrace_advantage_estimate(0.97, lp, lm, v, nv, r, done, term, 1.3, 0.8, time_dim=time_dim)
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, **tol)


def test_functionals_with_tensor_gamma_and_lambda():
    v, nv, r, done, term = fn_inputs()
    g = torch.rand_like(v) * 0.5 + 0.5
    lm = torch.rand_like(v)
    tol = dict(rtol=1e-10, atol=1e-10)  # float64 gamma tensors: no float32 rounding on either side
    torch.testing.assert_close(ours.generalized_advantage_estimate(g, lm, v, nv, r, done, term)[0],
                               trl_f.generalized_advantage_estimate(g, lm, v, nv, r, done, term)[0], **tol)
    torch.testing.assert_close(ours.td_lambda_return_estimate(g, lm, nv, r, done, term),
                               trl_f.td_lambda_return_estimate(g, lm, nv, r, done, term), **tol)
    with pytest.raises(NotImplementedError, match="rolling_gamma"):
        ours.td_lambda_return_estimate(g, lm, nv, r, done, term, rolling_gamma=False)
    with pytest.raises(RuntimeError, match="unique shape"):
        ours.generalized_advantage_estimate(0.9, 0.9, v, nv[:, :-1], r, done, term)


def test_vtrace_truncated_steps_follow_spec():
    """TorchRL <= 0.13 took the advantage of a truncated step from vs[t+1], the first state
    of the next episode. Ours bootstraps from next_state_value there (SPEC.md), as TorchRL
    0.14 does; the two formulas differ exactly at truncated steps inside the window."""
    v, nv, r, done, term = fn_inputs(shape=(4, 30, 1), seed=7)
    lp, lm = -torch.rand_like(v), -torch.rand_like(v)
    adv, vs = ours.vtrace_advantage_estimate(0.97, lp, lm, v, nv, r, done, term)
    ref_adv, ref_vs = trl_f.vtrace_advantage_estimate(0.97, lp, lm, v, nv, r, done, term)
    torch.testing.assert_close(adv, ref_adv, rtol=1e-6, atol=1e-6)  # TorchRL's float32 gamma
    torch.testing.assert_close(vs, ref_vs, rtol=1e-6, atol=1e-6)
    # TorchRL 0.13's advantage, written out
    rho = (lp - lm).exp().clamp(max=1.0)
    vs_next = torch.cat([vs[:, 1:], nv[:, -1:]], dim=1)
    old_adv = rho * (r + 0.97 * (~term).double() * vs_next - v)
    differs = (adv - old_adv).abs() > 1e-6
    inside = torch.ones_like(done)
    inside[:, -1] = False
    assert torch.equal(differs, done & ~term & inside)  # truncated steps, and only them


# --------------------------------------------------------------------------------------
# PPO trains exactly as with TorchRL's estimator
# --------------------------------------------------------------------------------------


def ppo_batch(seed=0, B=4, T=16):
    td = rollout(B=B, T=T, seed=seed, next_values=False)
    del td["state_value"]
    with torch.no_grad():
        actor_net(seed=11)(td)  # action and its log-prob under the behaviour policy
    return td


def train(loss, data, steps=3):
    opt = torch.optim.SGD(loss.parameters(), lr=0.1)
    for _ in range(steps):
        out = loss(data.clone())
        total = sum(v for k, v in out.items() if k.startswith("loss_"))
        opt.zero_grad()
        total.backward()
        opt.step()
    return [p.detach().clone() for p in loss.parameters()]


@pytest.mark.parametrize("how", ["instance", "class"])
def test_clip_ppo_trains_exactly_as_with_torchrl(how):
    data = ppo_batch()
    actor = actor_net(seed=11)
    torch.manual_seed(12)
    critic = ValueOperator(nn.Linear(3, 1), in_keys=["obs"])

    theirs = ClipPPOLoss(copy.deepcopy(actor), copy.deepcopy(critic), entropy_coeff=0.01)
    theirs.make_value_estimator(ValueEstimators.GAE, gamma=0.97, lmbda=0.9)
    ours_loss = ClipPPOLoss(copy.deepcopy(actor), copy.deepcopy(critic), entropy_coeff=0.01)
    # (``loss.value_estimator = est`` is silently ignored by torchrl 0.14 for any estimator:
    # nn.Module.__setattr__ registers the module before the property setter could run)
    if how == "instance":
        ours_loss.make_value_estimator(ours.GAE(gamma=0.97, lmbda=0.9, value_network=ours_loss.critic_network))
    else:
        ours_loss.make_value_estimator(ours.GAE, gamma=0.97, lmbda=0.9, value_network=ours_loss.critic_network)
    assert isinstance(ours_loss.value_estimator, ours.GAE)

    first_ours, first_theirs = ours_loss(data.clone()), theirs(data.clone())
    for key in ("loss_objective", "loss_critic", "loss_entropy"):
        torch.testing.assert_close(first_ours[key], first_theirs[key], **CLOSE)
    for a, b in zip(train(ours_loss, data), train(theirs, data)):
        torch.testing.assert_close(a, b, **CLOSE)


def test_vtrace_estimator_in_ppo_matches_torchrl():
    data = ppo_batch(seed=1)
    actor = actor_net(seed=11)
    torch.manual_seed(12)
    critic = ValueOperator(nn.Linear(3, 1), in_keys=["obs"])
    losses = []
    for vt_cls in (ours.VTrace, TorchRLVTrace):
        loss = ClipPPOLoss(copy.deepcopy(actor), copy.deepcopy(critic))
        loss.make_value_estimator(vt_cls(gamma=0.97, value_network=loss.critic_network,
                                         actor_network=loss.actor_network))
        losses.append(loss)
    for a, b in zip(train(losses[0], data, steps=2), train(losses[1], data, steps=2)):
        torch.testing.assert_close(a, b, **CLOSE)


# --------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls,theirs,extra", PAIRS)
def test_missing_values_without_value_network(cls, theirs, extra):
    td = rollout(seed=8, next_values=False)
    with pytest.raises(ValueError, match="'next', 'state_value'"):
        build(cls, extra, value_network=None)(td)
    del td["state_value"]
    with pytest.raises(ValueError, match="state_value is missing"):
        build(cls, extra, value_network=None)(td)


@pytest.mark.parametrize("cls,theirs,extra", PAIRS)
def test_missing_reward(cls, theirs, extra):
    td = rollout(seed=9)
    del td["next", "reward"]
    with pytest.raises(KeyError, match="'next', 'reward'"):
        build(cls, extra, value_network=None)(td)
    td = rollout(seed=9)
    del td["next", "done"]
    with pytest.raises(KeyError, match="'next', 'done'"):
        build(cls, extra, value_network=None)(td)


def test_bad_backend():
    with pytest.raises(ValueError, match="backend"):
        ours.GAE(gamma=0.9, lmbda=0.9, value_network=None, backend="cuda")
