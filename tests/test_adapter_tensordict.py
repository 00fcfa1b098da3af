"""``rltriton.adapters.tensordict``: ``estimator(td)`` with TorchRL's keys.

Checked against the tensor API on the same tensors (the contract of SPEC.md sections 2-3),
and, when torchrl is installed, against TorchRL's functional and module outputs on the same
TensorDicts, truncated steps included. Missing keys and bad ``set_keys`` calls must fail
with a ``KeyError`` naming the key.
"""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

import rltriton as rt
from rltriton.adapters.tensordict import autograd_backend, keys_of, resolve_flags

B, T, A = 3, 13, 4
GAMMA, LAM = 0.95, 0.9
EXACT = dict(rtol=0, atol=0)
CLOSE = dict(rtol=1e-5, atol=1e-5)


def rollout(seed: int = 0, *, trailing: bool = True, next_value: bool = True, bootstrap: bool = False) -> TensorDict:
    """A TorchRL-style rollout ``[B, T]`` with terminations, truncations (also at t = T-1)
    and dense next values consistent with the values inside episodes."""
    g = torch.Generator().manual_seed(seed)
    term = torch.rand(B, T, generator=g) < 0.15
    trunc = (torch.rand(B, T, generator=g) < 0.15) & ~term
    trunc[0, -1], term[0, -1] = True, False
    term[1, -1] = True
    done = term | trunc
    v = torch.randn(B, T, generator=g)
    nv = torch.empty(B, T)
    nv[:, :-1] = v[:, 1:]
    edge = torch.zeros(B, T, dtype=torch.bool)
    edge[:, -1] = True
    fresh = torch.randn(B, T, generator=g)  # V(final obs) / V(s_T); junk after terminations
    nv = torch.where(trunc | term | edge, fresh, nv)
    sq = (lambda x: x.unsqueeze(-1)) if trailing else (lambda x: x)
    nxt = {"reward": sq(torch.randn(B, T, generator=g)), "done": sq(done), "terminated": sq(term),
           "truncated": sq(trunc)}
    if next_value:
        nxt["state_value"] = sq(nv)
    if bootstrap:
        nxt["bootstrap_value"] = sq(torch.where(trunc | edge, nv, torch.zeros(())))
    return TensorDict(
        {
            "state_value": sq(v),
            "sample_log_prob": -torch.rand(B, T, generator=g),
            "target_log_prob": -torch.rand(B, T, generator=g),
            "state_action_value": sq(torch.randn(B, T, generator=g)),
            "next": nxt,
        },
        batch_size=[B, T],
    )


def flat(td: TensorDict, key) -> torch.Tensor:
    x = td.get(key)
    return x.squeeze(-1) if x.dim() == td.batch_dims + 1 and x.shape[-1] == 1 else x


def tensors(td: TensorDict) -> dict:
    return dict(
        r=flat(td, ("next", "reward")), v=flat(td, "state_value"), term=flat(td, ("next", "terminated")),
        trunc=flat(td, ("next", "truncated")), nv=flat(td, ("next", "state_value")),
        lr=flat(td, "target_log_prob") - flat(td, "sample_log_prob"), q=flat(td, "state_action_value"),
    )


# --------------------------------------------------------------------------------------
# every estimator == the tensor API on the same tensors
# --------------------------------------------------------------------------------------


def test_gae_td_lambda_vtrace_retrace_match_the_tensor_api():
    td = rollout(1)
    x = tensors(td)
    kw = dict(terminated=x["term"], truncated=x["trunc"], next_values=x["nv"], backend="torch")
    rt.GAE(GAMMA, LAM)(td, backend="torch")
    adv, target = rt.gae(x["r"], x["v"], gamma=GAMMA, lam=LAM, **kw)
    torch.testing.assert_close(td["advantage"], adv.unsqueeze(-1), **EXACT)
    torch.testing.assert_close(td["value_target"], target.unsqueeze(-1), **EXACT)

    rt.TDLambda(GAMMA, LAM)(td, backend="torch")
    torch.testing.assert_close(td["value_target"].squeeze(-1), rt.td_lambda(x["r"], x["v"], gamma=GAMMA, lam=LAM, **kw),
                               **EXACT)

    rt.VTrace(GAMMA, LAM, rho_bar=1.3, c_bar=0.9)(td, backend="torch")
    vs, pg = rt.vtrace(x["r"], x["v"], x["lr"], gamma=GAMMA, lam=LAM, rho_bar=1.3, c_bar=0.9, **kw)
    torch.testing.assert_close(td["value_target"].squeeze(-1), vs, **EXACT)
    torch.testing.assert_close(td["advantage"].squeeze(-1), pg, **EXACT)

    # Retrace writes only "q_target" (SPEC section 5): V-trace's advantage above stays
    rt.Retrace(GAMMA, LAM, c_bar=1.1)(td, backend="torch")
    qt, radv = rt.retrace(x["r"], x["q"], x["v"], x["lr"], gamma=GAMMA, lam=LAM, c_bar=1.1, **kw)
    torch.testing.assert_close(td["q_target"].squeeze(-1), qt, **EXACT)
    torch.testing.assert_close(td["advantage"].squeeze(-1), pg, **EXACT)
    rt.Retrace(GAMMA, LAM, c_bar=1.1).set_keys(advantage="retrace_advantage")(td, backend="torch")
    torch.testing.assert_close(td["retrace_advantage"].squeeze(-1), radv, **EXACT)
    torch.testing.assert_close(td["advantage"].squeeze(-1), pg, **EXACT)


def test_discounted_return_reads_only_the_bootstrap_key():
    td = rollout(2, bootstrap=False)
    x = tensors(td)
    rt.DiscountedReturn(GAMMA)(td)
    ref = rt.discounted_returns(x["r"], gamma=GAMMA, terminated=x["term"], truncated=x["trunc"])
    torch.testing.assert_close(td["value_target"].squeeze(-1), ref, **EXACT)  # ("next", "state_value") unused
    td = rollout(2, next_value=False, bootstrap=True)
    rt.DiscountedReturn(GAMMA)(td)
    ref = rt.discounted_returns(x["r"], gamma=GAMMA, terminated=x["term"], truncated=x["trunc"],
                                bootstrap_values=flat(td, ("next", "bootstrap_value")))
    torch.testing.assert_close(td["value_target"].squeeze(-1), ref, **EXACT)


def test_traces_and_prefix_sums():
    td = rollout(3)
    x = flat(td, ("next", "reward"))
    done = flat(td, ("next", "done"))
    rt.EligibilityTrace(GAMMA, LAM)(td)
    rt.EpisodicPrefixSum()(td)
    torch.testing.assert_close(td["trace"].squeeze(-1), rt.eligibility_traces(x, gamma=GAMMA, lam=LAM, dones=done),
                               **EXACT)
    torch.testing.assert_close(td["prefix_sum"].squeeze(-1), rt.episodic_prefix_sum(x, done), **EXACT)


@pytest.mark.parametrize("with_done", [True, False])
def test_traces_feature_dims(with_done):
    """A source with feature dims ([B, T, F], F > 1): the TensorDict's batch dims say where
    time is, with or without a done entry (without one the tensor API, which learns
    [*B, T] from the flags, gets all-clear flags), against the float64 reference."""
    gen = torch.Generator().manual_seed(41)
    B, T, F = 3, 7, 2
    x = torch.randn(B, T, F, generator=gen)
    done = torch.rand(B, T, generator=gen) < 0.3
    nxt = {"reward": x, **({"done": done} if with_done else {})}
    td = TensorDict({"next": TensorDict(nxt, [B, T])}, [B, T])
    rt.EligibilityTrace(GAMMA, LAM)(td)
    flags = done if with_done else torch.zeros(B, T)
    ref = rt.reference.eligibility_traces(x, gamma=GAMMA, lam=LAM, dones=flags, n_feature_dims=1)
    assert td["trace"].shape == (B, T, F)
    torch.testing.assert_close(td["trace"].double(), ref, rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------------------
# next values and the bootstrap
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [rt.GAE, rt.TDLambda, rt.VTrace])
def test_bootstrap_key_equals_dense_next_values(cls):
    """values shifted + ("next", "bootstrap_value") at truncated steps and t = T-1 gives the
    same result as the dense ("next", "state_value") when they are consistent."""
    est = cls(GAMMA, LAM)
    dense = est(rollout(4))
    sparse = est(rollout(4, next_value=False, bootstrap=True))
    for key in ("advantage", "value_target"):
        if key in dense.keys():
            torch.testing.assert_close(sparse[key], dense[key], **CLOSE)


def test_no_next_value_means_no_bootstrap():
    td = rollout(5, next_value=False)
    x = tensors(rollout(5))
    rt.GAE(GAMMA, LAM)(td)
    adv, _ = rt.gae(x["r"], x["v"], gamma=GAMMA, lam=LAM, terminated=x["term"], truncated=x["trunc"])
    torch.testing.assert_close(td["advantage"].squeeze(-1), adv, **EXACT)


def test_next_value_and_bootstrap_together_is_an_error():
    td = rollout(6, bootstrap=True)
    with pytest.raises(ValueError, match="bootstrap_value"):
        rt.GAE(GAMMA, LAM)(td)


def test_td_lambda_needs_no_values_with_dense_next_values():
    td = rollout(7)
    ref = rt.TDLambda(GAMMA, LAM)(td.clone())["value_target"]
    del td["state_value"]
    torch.testing.assert_close(rt.TDLambda(GAMMA, LAM)(td)["value_target"], ref, **EXACT)


# --------------------------------------------------------------------------------------
# flags
# --------------------------------------------------------------------------------------


def test_flag_resolution():
    d = torch.tensor([1, 1, 1, 0, 0])
    te = torch.tensor([1, 0, 0, 0, 1])
    tr = torch.tensor([0, 1, 0, 0, 1])
    term, trunc = resolve_flags(d, te, tr)
    assert term.tolist() == [True, False, False, False, True]
    assert trunc.tolist() == [False, True, True, False, False]  # done & ~terminated is a truncation
    term, trunc = resolve_flags(d, None, None)
    assert term.tolist() == [True, True, True, False, False] and trunc is None
    term, trunc = resolve_flags(d, te, None)
    assert term.tolist() == te.bool().tolist() and trunc.tolist() == [False, True, True, False, False]
    term, trunc = resolve_flags(d, None, tr)  # SPEC section 5: terminated = done when absent
    assert term.tolist() == d.bool().tolist()
    assert trunc.tolist() == [False, False, False, False, True]  # a truncation that is not done
    term, trunc = resolve_flags(None, None, tr)
    assert term is None and trunc.tolist() == tr.bool().tolist()
    with pytest.raises(KeyError, match="done"):
        resolve_flags(None, None, None)


@pytest.mark.parametrize("present", [("done",), ("done", "terminated"), ("done", "truncated"),
                                     ("terminated", "truncated"), ("done", "terminated", "truncated")])
def test_flags_present_in_any_combination(present):
    full = rollout(8)
    td = full.clone()
    for f in ("done", "terminated", "truncated"):
        if f not in present:
            del td["next", f]
    x = tensors(full)
    if present in (("done",), ("done", "truncated")):
        # SPEC section 5 (TorchRL too): terminated defaults to done
        term, trunc = x["term"] | x["trunc"], None
    else:
        term, trunc = x["term"], x["trunc"]
    rt.GAE(GAMMA, LAM)(td)
    adv, _ = rt.gae(x["r"], x["v"], gamma=GAMMA, lam=LAM, terminated=term, truncated=trunc, next_values=x["nv"])
    torch.testing.assert_close(td["advantage"].squeeze(-1), adv, **EXACT)


def test_float_and_integer_flags():
    td = rollout(9)
    ref = rt.GAE(GAMMA, LAM)(td.clone())["advantage"]
    for f in ("done", "terminated", "truncated"):
        td["next", f] = td["next", f].float() if f != "done" else td["next", f].long()
    torch.testing.assert_close(rt.GAE(GAMMA, LAM)(td)["advantage"], ref, **EXACT)


# --------------------------------------------------------------------------------------
# layout: trailing dims, time_dim, in place
# --------------------------------------------------------------------------------------


def test_trailing_singleton_dims_are_kept_or_not():
    with_dim = rt.GAE(GAMMA, LAM)(rollout(10, trailing=True))
    without = rt.GAE(GAMMA, LAM)(rollout(10, trailing=False))
    assert with_dim["advantage"].shape == (B, T, 1) and without["advantage"].shape == (B, T)
    torch.testing.assert_close(with_dim["advantage"].squeeze(-1), without["advantage"], **EXACT)


def test_time_dim_argument_constructor_and_name():
    td = rollout(11)
    ref = rt.GAE(GAMMA, LAM)(td.clone())["advantage"]
    tm = td.clone().transpose(0, 1).contiguous()  # [T, B]
    torch.testing.assert_close(rt.GAE(GAMMA, LAM)(tm.clone(), time_dim=0)["advantage"].transpose(0, 1), ref, **EXACT)
    torch.testing.assert_close(rt.GAE(GAMMA, LAM, time_dim=0)(tm.clone())["advantage"].transpose(0, 1), ref, **EXACT)
    torch.testing.assert_close(rt.GAE(GAMMA, LAM)(tm.clone(), time_dim=-2)["advantage"].transpose(0, 1), ref, **EXACT)
    named = tm.clone()
    named.names = ["time", None]
    torch.testing.assert_close(rt.GAE(GAMMA, LAM)(named)["advantage"].transpose(0, 1), ref, **EXACT)


def test_more_batch_dims():
    td = rollout(12)
    ref = rt.VTrace(GAMMA)(td.clone())
    big = torch.stack([td, td], 0)  # [2, B, T]
    out = rt.VTrace(GAMMA)(big)
    torch.testing.assert_close(out["advantage"][1], ref["advantage"], **EXACT)


def test_outputs_written_in_place():
    td = rollout(13)
    td["advantage"] = torch.zeros(B, T, 1)
    adv_before = td["advantage"]
    out = rt.GAE(GAMMA, LAM)(td)
    assert out is td
    assert not torch.equal(td["advantage"], adv_before)
    assert "value_target" in td.keys()


def test_gradients_flow_through_the_torch_backend():
    td = rollout(14)
    r = td["next", "reward"].clone().requires_grad_(True)
    td["next", "reward"] = r
    est = rt.GAE(GAMMA, LAM)
    assert autograd_backend(est, None, r) == "torch"
    assert autograd_backend(est, "reference", r) == "reference"
    with torch.no_grad():
        assert autograd_backend(est, None, r) is None
    est(td)["advantage"].sum().backward()
    assert r.grad is not None and r.grad.abs().sum() > 0


# --------------------------------------------------------------------------------------
# keys: set_keys, V-trace and Retrace keys
# --------------------------------------------------------------------------------------


def test_set_keys_renames_every_key_and_next_value_follows_value():
    td = rollout(15)
    ref = rt.GAE(GAMMA, LAM)(td.clone())
    renamed = TensorDict(
        {
            "critic": td["state_value"],
            "transition": {
                "r": td["next", "reward"], "d": td["next", "done"], "te": td["next", "terminated"],
                "tr": td["next", "truncated"],
            },
            "next": {"critic": td["next", "state_value"]},
        },
        batch_size=[B, T],
    )
    est = rt.GAE(GAMMA, LAM).set_keys(
        value="critic", reward=("transition", "r"), done=("transition", "d"), terminated=("transition", "te"),
        truncated=("transition", "tr"), advantage=("out", "adv"), value_target="vt",
    )
    assert keys_of(est)["next_value"] == ("next", "critic")
    est(renamed)
    torch.testing.assert_close(renamed["out", "adv"], ref["advantage"], **EXACT)
    torch.testing.assert_close(renamed["vt"], ref["value_target"], **EXACT)


@pytest.mark.parametrize("cls", [rt.GAE, rt.VTrace, rt.Retrace, rt.TDLambda, rt.DiscountedReturn])
def test_set_keys_unknown_name_is_a_key_error_naming_it(cls):
    est = cls(GAMMA) if cls in (rt.DiscountedReturn, rt.VTrace, rt.Retrace) else cls(GAMMA, LAM)
    with pytest.raises(KeyError, match="unknown_key"):
        est.set_keys(unknown_key="x")
    with pytest.raises(TypeError, match="nested key"):
        est.set_keys(reward=3)
    with pytest.raises(TypeError, match="nested key"):
        est.set_keys(reward=())


def test_vtrace_target_key_and_torchrl_log_prob_name():
    td = rollout(16)
    ref = rt.VTrace(GAMMA)(td.clone())
    moved = td.clone()
    moved["pi_logp"] = moved.pop("target_log_prob")
    out = rt.VTrace(GAMMA).set_keys(target_log_prob="pi_logp")(moved)
    torch.testing.assert_close(out["advantage"], ref["advantage"], **EXACT)
    # TorchRL >= 0.8 writes "action_log_prob": read when "sample_log_prob" is absent
    torchrl_named = td.clone()
    torchrl_named["action_log_prob"] = torchrl_named.pop("sample_log_prob")
    torch.testing.assert_close(rt.VTrace(GAMMA)(torchrl_named)["advantage"], ref["advantage"], **EXACT)
    # ... but not when the user renamed the behaviour key
    with pytest.raises(KeyError, match="'mu'"):
        rt.VTrace(GAMMA).set_keys(sample_log_prob="mu")(torchrl_named)


def _action_td(seed: int, action_form: str) -> tuple[TensorDict, dict]:
    g = torch.Generator().manual_seed(seed)
    av, nav = torch.randn(B, T, A, generator=g), torch.randn(B, T, A, generator=g)
    tp = torch.softmax(torch.randn(B, T, A, generator=g), -1)
    ntp = torch.softmax(torch.randn(B, T, A, generator=g), -1)
    a = torch.randint(0, A, (B, T), generator=g)
    mu = -torch.rand(B, T, generator=g)
    base = rollout(seed)
    action = {"int": a, "int1": a.unsqueeze(-1), "onehot": torch.nn.functional.one_hot(a, A)}[action_form]
    td = TensorDict(
        {"action_value": av, "target_probs": tp, "action": action, "sample_log_prob": mu,
         "next": {k: base["next", k] for k in ("reward", "done", "terminated", "truncated")}},
        batch_size=[B, T],
    )
    td["next", "action_value"], td["next", "target_probs"] = nav, ntp
    x = tensors(base)
    return td, dict(r=x["r"], av=av, tp=tp, a=a, mu=mu, term=x["term"], trunc=x["trunc"], boot=(ntp * nav).sum(-1))


@pytest.mark.parametrize("action_form", ["int", "int1", "onehot"])
def test_retrace_action_value_form(action_form):
    td, x = _action_td(17, action_form)
    rt.Retrace(GAMMA, LAM, c_bar=1.2).set_keys(advantage="advantage")(td)
    ref = rt.retrace_from_action_values(
        x["r"], x["av"], x["tp"], x["a"], x["mu"], gamma=GAMMA, lam=LAM, c_bar=1.2, terminated=x["term"],
        truncated=x["trunc"], bootstrap_values=x["boot"],
    )
    torch.testing.assert_close(td["q_target"].squeeze(-1), ref.q_targets, **EXACT)
    torch.testing.assert_close(td["advantage"].squeeze(-1), ref.advantages, **EXACT)


def test_retrace_action_value_form_keys_and_bootstrap():
    td, x = _action_td(18, "int")
    del td["next", "action_value"]
    td["next", "bootstrap_value"] = x["boot"]  # the same continuation, stored directly
    renamed = td.clone()
    renamed["q"] = renamed.pop("action_value")
    renamed["pi"] = renamed.pop("target_probs")
    rt.Retrace(GAMMA).set_keys(action_value="q", target_probs="pi", q_target="qt")(renamed)
    ref = rt.retrace_from_action_values(x["r"], x["av"], x["tp"], x["a"], x["mu"], gamma=GAMMA,
                                        terminated=x["term"], truncated=x["trunc"], bootstrap_values=x["boot"])
    torch.testing.assert_close(renamed["qt"].squeeze(-1), ref.q_targets, **EXACT)
    td, _ = _action_td(18, "int")
    td["next", "bootstrap_value"] = x["boot"]
    with pytest.raises(ValueError, match="at most one"):
        rt.Retrace(GAMMA)(td)


# --------------------------------------------------------------------------------------
# missing keys
# --------------------------------------------------------------------------------------

MISSING = [
    (lambda: rt.GAE(GAMMA, LAM), "state_value", "'state_value'"),
    (lambda: rt.GAE(GAMMA, LAM), ("next", "reward"), "'next', 'reward'"),
    (lambda: rt.VTrace(GAMMA), "target_log_prob", "'target_log_prob'"),
    (lambda: rt.VTrace(GAMMA), "sample_log_prob", "'sample_log_prob'"),
    (lambda: rt.VTrace(GAMMA), "state_value", "'state_value'"),
    (lambda: rt.Retrace(GAMMA), "state_action_value", "'action_value'"),
    (lambda: rt.Retrace(GAMMA), "target_log_prob", "'target_log_prob'"),
    (lambda: rt.TDLambda(GAMMA, LAM), ("next", "reward"), "'next', 'reward'"),
    (lambda: rt.EligibilityTrace(GAMMA, LAM), ("next", "reward"), "'next', 'reward'"),
]


@pytest.mark.parametrize("make,key,text", MISSING)
def test_missing_key_is_a_key_error_naming_it(make, key, text):
    td = rollout(19)
    del td[key]
    with pytest.raises(KeyError) as ei:
        make()(td)
    assert text in ei.value.args[0]


def test_missing_flags_and_action_keys():
    td = rollout(20)
    for f in ("done", "terminated", "truncated"):
        del td["next", f]
    with pytest.raises(KeyError, match="'next', 'done'"):
        rt.GAE(GAMMA, LAM)(td)
    with pytest.raises(KeyError, match="'next', 'done'"):
        rt.EpisodicPrefixSum()(rollout(20).exclude(("next", "done")))
    td, _ = _action_td(21, "int")
    with pytest.raises(KeyError, match="'action'"):
        rt.Retrace(GAMMA)(td.exclude("action"))
    with pytest.raises(KeyError, match="'target_probs'"):
        rt.Retrace(GAMMA)(td.exclude("target_probs"))


def test_not_a_batched_tensordict():
    with pytest.raises(ValueError, match="batch dims"):
        rt.GAE(GAMMA, LAM)(TensorDict({"x": torch.zeros(3)}, batch_size=[]))


# --------------------------------------------------------------------------------------
# against TorchRL on the same TensorDicts (truncated steps included)
# --------------------------------------------------------------------------------------


def _torchrl_inputs(td):
    n = td["next"]
    return td["state_value"], n["state_value"], n["reward"], n["done"], n["terminated"]


@pytest.mark.parametrize("vectorized", [False, True])
def test_gae_matches_torchrl_module_and_functional(vectorized):
    pytest.importorskip("torchrl")
    from torchrl.objectives.value import GAE as TorchRLGAE
    from torchrl.objectives.value.functional import generalized_advantage_estimate

    td = rollout(22)
    theirs = TorchRLGAE(gamma=GAMMA, lmbda=LAM, value_network=None, vectorized=vectorized)(td.clone())
    ours = rt.GAE(GAMMA, LAM)(td.clone())
    torch.testing.assert_close(ours["advantage"], theirs["advantage"], **CLOSE)
    torch.testing.assert_close(ours["value_target"], theirs["value_target"], **CLOSE)
    adv, target = generalized_advantage_estimate(GAMMA, LAM, *_torchrl_inputs(td))
    torch.testing.assert_close(ours["advantage"], adv, **CLOSE)
    torch.testing.assert_close(ours["value_target"], target, **CLOSE)


def test_td_lambda_and_td1_match_torchrl():
    pytest.importorskip("torchrl")
    from torchrl.objectives.value import TD1Estimator, TDLambdaEstimator
    from torchrl.objectives.value.functional import td_lambda_return_estimate

    td = rollout(23)
    theirs = TDLambdaEstimator(gamma=GAMMA, lmbda=LAM, value_network=None)(td.clone())
    torch.testing.assert_close(rt.TDLambda(GAMMA, LAM)(td.clone())["value_target"], theirs["value_target"], **CLOSE)
    v, nv, r, d, te = _torchrl_inputs(td)
    ref = td_lambda_return_estimate(GAMMA, LAM, nv, r, d, te)
    torch.testing.assert_close(rt.TDLambda(GAMMA, LAM)(td.clone())["value_target"], ref, **CLOSE)
    theirs = TD1Estimator(gamma=GAMMA, value_network=None)(td.clone())
    torch.testing.assert_close(rt.TDLambda(GAMMA, 1.0)(td.clone())["value_target"], theirs["value_target"], **CLOSE)


def test_vtrace_matches_torchrl_functional():
    """Same TensorDict (with truncated steps): the target log-prob TorchRL's VTrace would get
    from its actor is read from "target_log_prob"."""
    pytest.importorskip("torchrl")
    from torchrl.objectives.value.functional import vtrace_advantage_estimate

    td = rollout(24)
    v, nv, r, d, te = _torchrl_inputs(td)
    log_pi, log_mu = td["target_log_prob"].unsqueeze(-1), td["sample_log_prob"].unsqueeze(-1)
    adv, vs = vtrace_advantage_estimate(GAMMA, log_pi, log_mu, v, nv, r, d, te, rho_thresh=1.4, c_thresh=0.9)
    ours = rt.VTrace(GAMMA, rho_bar=1.4, c_bar=0.9)(td.clone())
    torch.testing.assert_close(ours["value_target"], vs, **CLOSE)
    torch.testing.assert_close(ours["advantage"], adv, **CLOSE)


def test_discounted_return_matches_torchrl_reward2go():
    pytest.importorskip("torchrl")
    from torchrl.objectives.value.functional import reward2go

    td = rollout(25, next_value=False)
    ref = reward2go(td["next", "reward"], td["next", "done"], GAMMA)
    torch.testing.assert_close(rt.DiscountedReturn(GAMMA)(td)["value_target"], ref, **CLOSE)
