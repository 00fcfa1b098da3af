"""Argument checking and the input contract of SPEC.md section 4.

Every error path section 4 names, for every public function and class:

* non-tensor inputs, non-floating values, non-integer ``actions``, complex flags: TypeError;
* mismatched shapes / time lengths / devices, wrong ``last_value`` / ``initial`` shapes,
  ``gamma`` / ``lam`` tensors not broadcastable to ``[*B, T]``: ValueError;
* ``gamma`` / ``lam`` outside [0, 1] (floats and CPU tensors): ValueError, of a wrong type:
  TypeError; negative clip thresholds: ValueError;
* an unknown ``boundary`` or ``backend``, ``backend="triton"`` on CPU tensors without
  ``TRITON_INTERPRET=1``, an excluded pair of bootstrap arguments, ``td_lambda`` without
  ``values`` nor ``next_values``, ``time_dim`` out of range or not an int;
* every message says "expected ..., got ...".

And the non-error rules of the same section: an empty time axis, inputs never modified,
the output dtype rule, flags of any dtype, and the TensorDict key errors.

Everything runs on the CPU with ``backend="torch"`` and ``backend="reference"``; the
second device of the device-mismatch cases is ``meta`` (no data, no kernels needed).
The tensors are built here (not from ``tests/rollouts.py``) so that this file pins the
public API alone.
"""

from __future__ import annotations

import inspect
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
from tensordict import TensorDict

import rltriton as rt

B, T, A, F = 2, 3, 2, 4
BACKENDS = ("torch", "reference")
VIAS = ("fn", "cls")
BOUNDARY_FORMS = ("next_values", "bootstrap_values", "last_value")
FLAG_NAMES = ("terminated", "truncated", "dones")
ROW_NAMES = ("last_value", "initial")
ACTION_NAMES = ("action_values", "target_probs")


# --------------------------------------------------------------------------------------
# the public API as a table
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Est:
    name: str
    fn: Callable
    cls: type
    pos: tuple[str, ...]  # leading (positional) tensors, in order
    opt: tuple[str, ...]  # keyword tensors
    hyper: dict[str, Any]  # keyword hyper-parameters of the function = constructor kwargs
    n_out: int
    method: str | None = None  # class entry point other than __call__
    coefs: tuple[str, ...] = ("gamma", "lam")

    @property
    def boundaries(self) -> tuple[str, ...]:
        return tuple(n for n in BOUNDARY_FORMS if n in self.opt)

    @property
    def float_names(self) -> tuple[str, ...]:
        """Tensor arguments that must have a floating dtype."""
        return tuple(n for n in self.pos + self.opt if n not in FLAG_NAMES and n != "actions")

    @property
    def forward(self) -> bool:
        return self.pos[0] == "x"


_BACKWARD_OPT = ("terminated", "truncated", "next_values", "bootstrap_values", "last_value")
_NO_NEXT_OPT = ("terminated", "truncated", "bootstrap_values", "last_value")

ESTS: dict[str, Est] = {
    e.name: e
    for e in (
        Est("gae", rt.gae, rt.GAE, ("rewards", "values"), _BACKWARD_OPT, {"gamma": 0.9, "lam": 0.8}, 2),
        Est(
            "td_lambda", rt.td_lambda, rt.TDLambda, ("rewards", "values"), _BACKWARD_OPT, {"gamma": 0.9, "lam": 0.8}, 1
        ),
        Est(
            "discounted_returns",
            rt.discounted_returns,
            rt.DiscountedReturn,
            ("rewards",),
            _NO_NEXT_OPT,
            {"gamma": 0.9},
            1,
            coefs=("gamma",),
        ),
        Est(
            "vtrace",
            rt.vtrace,
            rt.VTrace,
            ("rewards", "values", "log_rhos"),
            _BACKWARD_OPT,
            {"gamma": 0.9, "lam": 0.8, "rho_bar": 1.0, "c_bar": 0.9, "pg_rho_bar": 0.8},
            2,
        ),
        Est(
            "retrace",
            rt.retrace,
            rt.Retrace,
            ("rewards", "q_values", "state_values", "log_rhos"),
            _BACKWARD_OPT,
            {"gamma": 0.9, "lam": 0.8, "c_bar": 0.9},
            2,
        ),
        Est(
            "retrace_from_action_values",
            rt.retrace_from_action_values,
            rt.Retrace,
            ("rewards", "action_values", "target_probs", "actions", "behavior_log_probs"),
            _NO_NEXT_OPT,
            {"gamma": 0.9, "lam": 0.8, "c_bar": 0.9},
            2,
            method="from_action_values",
        ),
        Est(
            "eligibility_traces",
            rt.eligibility_traces,
            rt.EligibilityTrace,
            ("x",),
            ("dones", "initial"),
            {"gamma": 0.9, "lam": 0.8},
            1,
        ),
        Est(
            "episodic_prefix_sum",
            rt.episodic_prefix_sum,
            rt.EpisodicPrefixSum,
            ("x", "dones"),
            ("initial",),
            {"boundary": "ends_at"},
            1,
            coefs=(),
        ),
    )
}
EST_NAMES = tuple(ESTS)
WITH_BOUNDARY = tuple(n for n, e in ESTS.items() if e.boundaries)


def make(
    name: str,
    bshape: tuple[int, ...] = (B,),
    t: int = T,
    dtype: torch.dtype = torch.float32,
    feats: tuple[int, ...] = (),
) -> torch.Tensor:
    """A deterministic tensor for argument ``name`` of a ``[*bshape, t]`` rollout."""
    g = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    step = (*bshape, t)
    if name in FLAG_NAMES:
        return torch.rand(step, generator=g) < 0.4
    if name == "actions":
        return torch.randint(0, A, step, generator=g)
    if name == "target_probs":
        return torch.softmax(torch.randn((*step, A), generator=g), -1).to(dtype)
    if name == "action_values":
        return torch.randn((*step, A), generator=g).to(dtype)
    if name == "last_value":
        return torch.randn(bshape, generator=g).to(dtype)
    if name == "initial":
        return torch.randn((*bshape, *feats), generator=g).to(dtype)
    if name == "x":
        return torch.randn((*step, *feats), generator=g).to(dtype)
    if name == "log_rhos":
        return (0.5 * torch.randn(step, generator=g)).to(dtype)
    if name == "behavior_log_probs":
        return torch.log(0.05 + 0.9 * torch.rand(step, generator=g)).to(dtype)
    return torch.randn(step, generator=g).to(dtype)


def inputs(
    est: Est,
    boundary: str | None = "default",
    *,
    bshape: tuple[int, ...] = (B,),
    t: int = T,
    dtype: torch.dtype = torch.float32,
    feats: tuple[int, ...] = (),
) -> dict[str, torch.Tensor]:
    """Every tensor of ``est``: the leading ones, the flags, ``initial`` and one bootstrap
    form (``boundary``; ``"default"`` = ``last_value`` where the estimator takes it)."""
    if boundary == "default":
        boundary = "last_value" if "last_value" in est.opt else None
    names = [n for n in est.pos + est.opt if n not in BOUNDARY_FORMS or n == boundary]
    return {n: make(n, bshape, t, dtype, feats if n in ("x", "initial") else ()) for n in names}


def call(
    est: Est,
    via: str,
    tensors: dict[str, Any],
    *,
    hyper: dict[str, Any] | None = None,
    ctor: dict[str, Any] | None = None,
    **kw: Any,
) -> tuple[torch.Tensor, ...]:
    """Call ``est`` as its function (``via="fn"``) or as an instance of its class
    (``"cls"``; ``ctor`` goes to the constructor only, e.g. ``time_dim`` or ``backend``)."""
    hp = {**est.hyper, **(hyper or {})}
    pos = [tensors.get(n) for n in est.pos]
    kwt = {n: x for n, x in tensors.items() if n not in est.pos}
    if via == "fn":
        assert not ctor
        out = est.fn(*pos, **kwt, **hp, **kw)
    else:
        obj = est.cls(**hp, **(ctor or {}))
        out = (getattr(obj, est.method) if est.method else obj)(*pos, **kwt, **kw)
    return tuple(out) if isinstance(out, tuple) else (out,)


COMBOS = tuple((via, backend) for via in VIAS for backend in BACKENDS)
# the heavier positive checks: both entry points and both backends, not all four pairs
COMBOS2 = (("fn", "torch"), ("cls", "reference"))


def raises(exc: type[Exception], ctx: object, func: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """``func(*args, **kwargs)`` raises ``exc`` (not another error, not nothing) and its
    message says "expected ..., got ..."; ``ctx`` names the variant in a failure."""
    with pytest.raises(exc, match="expected") as ei:
        try:
            func(*args, **kwargs)
        except exc:
            raise
        except Exception as e:  # a wrong error type: say which variant
            pytest.fail(f"{ctx}: expected {exc.__name__}, got {type(e).__name__}: {e}")
        else:
            pytest.fail(f"{ctx}: expected {exc.__name__}, nothing was raised")
    msg = str(ei.value)
    assert "got" in msg, f"{ctx}: {msg}"
    assert msg.index("expected") < msg.rindex("got"), f"{ctx}: {msg}"
    return msg


COEF_ESTS = tuple(e for e in EST_NAMES if ESTS[e].coefs)
FLAG_ESTS = tuple(e for e in EST_NAMES if any(n in FLAG_NAMES for n in ESTS[e].pos + ESTS[e].opt))


def _tensors_for(est: Est, name: str, **kw: Any) -> dict[str, torch.Tensor]:
    """The full input set, with ``name``'s bootstrap form chosen when ``name`` is one."""
    return inputs(est, name if name in BOUNDARY_FORMS else "default", **kw)


# --------------------------------------------------------------------------------------
# sanity: the baseline inputs are accepted, so each error test below fails only because
# of the one thing it breaks
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("est_name", EST_NAMES)
def test_baseline_inputs_are_accepted(est_name):
    est = ESTS[est_name]
    for boundary in (None, *est.boundaries):
        x = inputs(est, boundary)
        for via, backend in COMBOS:
            outs = call(est, via, x, backend=backend)
            assert len(outs) == est.n_out
            for o in outs:
                assert o.shape == x[est.pos[0]].shape and o.dtype == torch.float32
                assert torch.isfinite(o).all()


# --------------------------------------------------------------------------------------
# TypeError: non-tensors, non-floating values, integer actions, complex flags
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("est_name", EST_NAMES)
def test_non_tensor_input_is_type_error(est_name):
    est = ESTS[est_name]
    for name in est.pos + est.opt:
        x = _tensors_for(est, name)
        like = x[name]
        for bad in (like.tolist(), like.numpy(), 1.0, "x"):
            x[name] = bad
            for via, backend in COMBOS:
                msg = raises(TypeError, (name, type(bad).__name__, via, backend), call, est, via, x, backend=backend)
                assert name in msg


# ``None`` for a required leading tensor (only td_lambda's ``values`` may be None, and
# only with ``next_values``): these are dropped silently by CreditAssigner._problem and
# the call then fails with a KeyError / StopIteration without "expected ..., got ...".
NONE_CASES = [
    pytest.param(e, n)
    for e in EST_NAMES
    for n in ESTS[e].pos
    if (e, n) != ("td_lambda", "values")
]


@pytest.mark.parametrize("est_name,name", NONE_CASES)
def test_none_for_required_tensor_is_type_error(est_name, name):
    est = ESTS[est_name]
    x = inputs(est)
    x[name] = None
    for via, backend in COMBOS:
        raises(TypeError, (via, backend), call, est, via, x, backend=backend)


@pytest.mark.parametrize("est_name", EST_NAMES)
def test_non_floating_values_are_type_error(est_name):
    est = ESTS[est_name]
    for name in est.float_names:
        x = _tensors_for(est, name)
        good = x[name]
        for dtype in (torch.int64, torch.int32, torch.uint8, torch.bool, torch.complex64):
            x[name] = (good > 0).to(dtype)
            for via, backend in COMBOS:
                msg = raises(TypeError, (name, dtype, via, backend), call, est, via, x, backend=backend)
                assert name in msg


def test_traces_feature_dims_without_dones_hint():
    """Without dones, eligibility traces read x as [*B, T]: an initial carry (or a per-step
    coefficient) shaped for feature dims is a ValueError that names the way to give them."""
    x = torch.ones(2, 5, 3)  # meant as [B, T, F]
    with pytest.raises(ValueError, match=r"initial: expected .*got \(2, 3\).*pass dones"):
        rt.eligibility_traces(x, gamma=0.5, lam=1.0, initial=torch.zeros(2, 3))
    with pytest.raises(ValueError, match=r"gamma: expected .*pass dones"):
        rt.eligibility_traces(x, gamma=torch.full((2, 5), 0.5), lam=1.0)
    out = rt.eligibility_traces(x, gamma=0.5, lam=1.0, initial=torch.zeros(2, 3), dones=torch.zeros(2, 5))
    assert out.shape == (2, 5, 3)
    torch.testing.assert_close(out[:, :, 0], torch.tensor([[1.0, 1.5, 1.75, 1.875, 1.9375]] * 2))


def test_retrace_actions_must_be_integer():
    est = ESTS["retrace_from_action_values"]
    x = inputs(est)
    good = x["actions"]
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.bool, torch.complex64):
        x["actions"] = good.to(dtype)
        for via, backend in COMBOS:
            msg = raises(TypeError, (dtype, via, backend), call, est, via, x, backend=backend)
            assert "actions" in msg


def test_retrace_actions_any_integer_dtype():
    """Control for the test above: integer actions of any width give the same result."""
    est = ESTS["retrace_from_action_values"]
    x = inputs(est)
    for via, backend in COMBOS:
        ref = call(est, via, x, backend=backend)
        for dtype in (torch.int8, torch.int16, torch.int32, torch.uint8):
            got = call(est, via, {**x, "actions": x["actions"].to(dtype)}, backend=backend)
            for a, b in zip(got, ref):
                assert torch.equal(a, b), (dtype, via, backend)


@pytest.mark.parametrize("est_name", FLAG_ESTS)
def test_complex_flags_are_type_error(est_name):
    est = ESTS[est_name]
    for name in [n for n in est.pos + est.opt if n in FLAG_NAMES]:
        x = inputs(est)
        good = x[name]
        for dtype in (torch.complex64, torch.complex128):
            x[name] = good.to(dtype)
            for via, backend in COMBOS:
                msg = raises(TypeError, (name, dtype, via, backend), call, est, via, x, backend=backend)
                assert name in msg


# --------------------------------------------------------------------------------------
# ValueError: shapes and time lengths
# --------------------------------------------------------------------------------------


def _wrong_shapes(est: Est, name: str) -> list[tuple[int, ...]]:
    if name in ACTION_NAMES:  # [B, T, A]
        return [(B, T + 1, A), (B + 1, T, A), (B, T), (B, T, A, 1), (T, A)]
    if name in ROW_NAMES:  # [B] (x has no feature dims here)
        return [(B + 1,), (B, 1), (), (B, T), (1,)]
    if name == "x":  # dones fixes [*B, T]
        return [(B, T + 1), (B + 1, T), (T,)]
    if name == "dones" and est.name == "eligibility_traces":  # x is [B, T]
        return [(B, T + 1), (B + 1, T), (B, T, 1)]
    return [(B, T + 1), (B + 1, T), (T,), (B, T, 1), (1, T), (B, 1)]


def _resize(x: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """A tensor of ``shape`` with the dtype of ``x`` (values: anything valid)."""
    if x.dtype.is_floating_point:
        return torch.full(shape, 0.25, dtype=x.dtype)
    return torch.zeros(shape, dtype=x.dtype)


@pytest.mark.parametrize("est_name", EST_NAMES)
def test_mismatched_shapes_are_value_error(est_name):
    est = ESTS[est_name]
    for name in est.pos + est.opt:
        x = _tensors_for(est, name)
        for shape in _wrong_shapes(est, name):
            y = {**x, name: _resize(x[name], shape)}
            for via, backend in COMBOS:
                raises(ValueError, (name, shape, via, backend), call, est, via, y, backend=backend)


def test_action_values_target_probs_mismatch():
    """Same [*B, T] but a different number of actions."""
    est = ESTS["retrace_from_action_values"]
    x = inputs(est)
    for which in ("target_probs", "action_values"):
        y = {**x, which: torch.full((B, T, A + 1), 1.0 / (A + 1))}
        for via, backend in COMBOS:
            raises(ValueError, (which, via, backend), call, est, via, y, backend=backend)


@pytest.mark.parametrize("est_name", ("eligibility_traces", "episodic_prefix_sum"))
def test_wrong_shapes_with_features(est_name):
    """x [B, T, F], dones [B, T], initial [B, F]."""
    est = ESTS[est_name]
    x = inputs(est, feats=(F,))
    cases = [("initial", s) for s in ((B,), (B, F + 1), (F,), (B, T, F), (B, 1, F), (B + 1, F))]
    cases += [("x", (B, T + 1, F)), ("x", (B + 1, T, F)), ("x", (B,)), ("dones", (B, T + 1)), ("dones", (B, T, F, 1))]
    for via, backend in COMBOS:
        outs = call(est, via, x, backend=backend)  # the baseline is accepted
        assert outs[0].shape == (B, T, F)
        for name, shape in cases:
            y = {**x, name: _resize(x[name], shape)}
            msg = raises(ValueError, (name, shape, via, backend), call, est, via, y, backend=backend)
            if name == "initial":
                assert "initial" in msg


@pytest.mark.parametrize("est_name", EST_NAMES)
def test_zero_dim_inputs_are_value_error(est_name):
    """0-d per-step tensors have no time axis."""
    est = ESTS[est_name]
    x = {n: v.reshape(-1)[0] for n, v in inputs(est, None).items() if n not in ROW_NAMES}
    x.update({n: torch.full((A,), 0.5) for n in est.pos if n in ACTION_NAMES})
    for via, backend in COMBOS:
        raises(ValueError, (via, backend), call, est, via, x, backend=backend)


# --------------------------------------------------------------------------------------
# gamma / lam
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("est_name", COEF_ESTS)
def test_coef_tensor_not_broadcastable(est_name):
    est = ESTS[est_name]
    for coef in est.coefs:
        x = inputs(est)
        for shape in ((B + 1, T), (T + 1,), (B, T, 1), (B, 1, T), (1, B, T), (B,), (T, B)):
            c = torch.full(shape, 0.5)
            for via, backend in COMBOS:
                msg = raises(
                    ValueError, (coef, shape, via, backend), call, est, via, x, hyper={coef: c}, backend=backend
                )
                assert coef in msg


@pytest.mark.parametrize("est_name", COEF_ESTS)
def test_coef_tensor_broadcastable_equals_float(est_name):
    """Control for the test above: a constant tensor of any broadcastable shape equals the float."""
    est = ESTS[est_name]
    for coef in est.coefs:
        x = inputs(est)
        value = est.hyper[coef]
        for via, backend in COMBOS2:
            ref = call(est, via, x, backend=backend)
            for shape in ((), (T,), (1, T), (B, 1), (B, T)):
                got = call(est, via, x, hyper={coef: torch.full(shape, value)}, backend=backend)
                for a, b in zip(got, ref):
                    torch.testing.assert_close(a, b, msg=lambda m, ctx=(coef, shape, via, backend): f"{ctx}: {m}")


@pytest.mark.parametrize("est_name", COEF_ESTS)
def test_coef_float_out_of_range(est_name):
    est = ESTS[est_name]
    for coef in est.coefs:
        x = inputs(est)
        for value in (-0.1, 1.1, -1e-6, 1.0 + 1e-6, 2, -1, float("inf"), float("-inf")):
            for via, backend in COMBOS:
                msg = raises(
                    ValueError, (coef, value, via, backend), call, est, via, x, hyper={coef: value}, backend=backend
                )
                assert coef in msg


@pytest.mark.parametrize("est_name", COEF_ESTS)
def test_coef_range_is_closed(est_name):
    """Control: the end points 0 and 1 (int or float, float or tensor) are accepted."""
    est = ESTS[est_name]
    for coef in est.coefs:
        x = inputs(est)
        for value in (0, 1, 0.0, 1.0, torch.zeros(B, T), torch.ones(B, T)):
            for via, backend in COMBOS:
                for o in call(est, via, x, hyper={coef: value}, backend=backend):
                    assert torch.isfinite(o).all()


def _bad_coef_tensors() -> list[torch.Tensor]:
    above = torch.full((B, T), 0.5)
    above[1, 2] = 1.5
    below = torch.full((B, T), 0.5)
    below[0, 0] = -0.25
    return [above, below, torch.tensor(1.01), torch.tensor([[0.9], [-0.9]]), torch.tensor([0.5, float("inf"), 0.5])]


@pytest.mark.parametrize("est_name", COEF_ESTS)
def test_coef_cpu_tensor_out_of_range(est_name):
    est = ESTS[est_name]
    for coef in est.coefs:
        x = inputs(est)
        for dtype in (torch.float32, torch.float64, torch.float16):
            for bad in _bad_coef_tensors():
                c = bad.to(dtype)
                for via, backend in COMBOS:
                    msg = raises(
                        ValueError, (coef, c, via, backend), call, est, via, x, hyper={coef: c}, backend=backend
                    )
                    assert coef in msg


@pytest.mark.parametrize("est_name", COEF_ESTS)
def test_coef_wrong_type(est_name):
    est = ESTS[est_name]
    for coef in est.coefs:
        x = inputs(est)
        for value in (
            "0.9",
            None,
            [0.9],
            (0.9,),
            0.9j,
            np.array([0.9]),
            torch.ones((B, T), dtype=torch.int64),
            torch.ones((B, T), dtype=torch.complex64),
        ):
            for via, backend in COMBOS:
                msg = raises(
                    TypeError,
                    (coef, type(value).__name__, via, backend),
                    call,
                    est,
                    via,
                    x,
                    hyper={coef: value},
                    backend=backend,
                )
                assert coef in msg


THRESHOLDS = {
    "vtrace": ("rho_bar", "c_bar", "pg_rho_bar"),
    "retrace": ("c_bar",),
    "retrace_from_action_values": ("c_bar",),
}
THRESHOLD_ESTS = tuple(THRESHOLDS)


@pytest.mark.parametrize("est_name", THRESHOLD_ESTS)
def test_negative_threshold(est_name):
    est = ESTS[est_name]
    for name in THRESHOLDS[est_name]:
        x = inputs(est)
        for value in (-0.5, -1, -1e-12, float("-inf")):
            for via, backend in COMBOS:
                msg = raises(
                    ValueError, (name, value, via, backend), call, est, via, x, hyper={name: value}, backend=backend
                )
                assert name in msg


@pytest.mark.parametrize("est_name", THRESHOLD_ESTS)
def test_non_negative_threshold_accepted(est_name):
    est = ESTS[est_name]
    for name in THRESHOLDS[est_name]:
        x = inputs(est)
        for value in (0, 0.0, 0.5, 3, float("inf")):
            for via, backend in COMBOS:
                for o in call(est, via, x, hyper={name: value}, backend=backend):
                    assert not torch.isnan(o).any()


@pytest.mark.parametrize("est_name", THRESHOLD_ESTS)
def test_threshold_wrong_type(est_name):
    est = ESTS[est_name]
    for name in THRESHOLDS[est_name]:
        x = inputs(est)
        for value in ("1.0", [1.0]):
            for via, backend in COMBOS:
                raises(TypeError, (name, value, via, backend), call, est, via, x, hyper={name: value}, backend=backend)


# --------------------------------------------------------------------------------------
# devices (the second device is 'meta': no data, so nothing runs there)
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("est_name", EST_NAMES)
def test_mismatched_device_is_value_error(est_name):
    est = ESTS[est_name]
    for name in est.pos + est.opt:
        x = _tensors_for(est, name)
        x[name] = x[name].to("meta")
        for via, backend in COMBOS:
            msg = raises(ValueError, (name, via, backend), call, est, via, x, backend=backend)
            assert "meta" in msg and "cpu" in msg


@pytest.mark.parametrize("est_name", COEF_ESTS)
def test_coef_tensor_on_other_device(est_name):
    est = ESTS[est_name]
    for coef in est.coefs:
        x = inputs(est)
        for shape in ((), (B, T)):
            c = torch.full(shape, 0.5, device="meta")
            for via, backend in COMBOS:
                msg = raises(ValueError, (coef, via, backend), call, est, via, x, hyper={coef: c}, backend=backend)
                assert coef in msg and "meta" in msg


@pytest.mark.parametrize("est_name", EST_NAMES)
def test_all_meta_is_no_device_mismatch(est_name):
    """Control for the device tests: with every tensor on 'meta' the checks pass (the torch
    backend then only propagates shapes), so the errors above come from the mismatch."""
    est = ESTS[est_name]
    for boundary in (None, *est.boundaries):
        x = {n: v.to("meta") for n, v in inputs(est, boundary).items()}
        for via in VIAS:
            outs = call(est, via, x, backend="torch")
            assert all(o.device.type == "meta" and o.shape == x[est.pos[0]].shape for o in outs)


# --------------------------------------------------------------------------------------
# boundary, backend, excluded pairs, td_lambda without values, time_dim
# --------------------------------------------------------------------------------------


def test_unknown_boundary():
    est = ESTS["episodic_prefix_sum"]
    x = inputs(est)
    for boundary in ("end_at", "starts", "", "ENDS_AT", "ends_at ", None, 0):
        for via, backend in COMBOS:
            msg = raises(
                ValueError, (boundary, via, backend), call, est, via, x, hyper={"boundary": boundary}, backend=backend
            )
            assert "boundary" in msg


def test_known_boundaries():
    """Control: both known boundaries are accepted and mean what SPEC section 3 says."""
    est = ESTS["episodic_prefix_sum"]
    x = {
        "x": torch.ones(B, T),
        "dones": torch.tensor([[False, True, False], [True, False, False]]),
        "initial": torch.zeros(B),
    }
    want = {"ends_at": [[1.0, 2.0, 1.0], [1.0, 1.0, 2.0]], "starts_at": [[1.0, 1.0, 2.0], [1.0, 2.0, 3.0]]}
    for boundary, w in want.items():
        for via, backend in COMBOS:
            (out,) = call(est, via, x, hyper={"boundary": boundary}, backend=backend)
            torch.testing.assert_close(out, torch.tensor(w))


@pytest.mark.parametrize("est_name", EST_NAMES)
def test_unknown_backend(est_name):
    est = ESTS[est_name]
    x = inputs(est)
    for bad in ("cuda", "Torch", "triton ", "", "numpy", 1):
        for via in (*VIAS, "ctor"):
            if via == "ctor":
                msg = raises(ValueError, (bad, via), call, est, "cls", x, ctor={"backend": bad})
            else:
                msg = raises(ValueError, (bad, via), call, est, via, x, backend=bad)
            assert "backend" in msg


@pytest.mark.parametrize("env", (None, "0", ""))
@pytest.mark.parametrize("est_name", EST_NAMES)
def test_triton_backend_on_cpu_without_interpreter(est_name, env, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    if env is not None:
        monkeypatch.setenv("TRITON_INTERPRET", env)
    est = ESTS[est_name]
    for t in (T, 0):  # also when there is nothing to compute
        x = inputs(est, t=t)
        for via in (*VIAS, "ctor"):
            if via == "ctor":
                msg = raises(ValueError, (t, via), call, est, "cls", x, ctor={"backend": "triton"})
            else:
                msg = raises(ValueError, (t, via), call, est, via, x, backend="triton")
            assert "triton" in msg.lower()


EXCLUDED = (
    ("next_values", "bootstrap_values"),
    ("next_values", "last_value"),
    ("bootstrap_values", "last_value"),
    ("next_values", "bootstrap_values", "last_value"),
)


@pytest.mark.parametrize("est_name", EST_NAMES)
def test_signature_matches_spec(est_name):
    """SPEC section 4: the leading tensors, then keyword-only arguments with ``time_dim=-1``
    and ``backend="auto"`` (this also checks the table the tests above are built from)."""
    est = ESTS[est_name]
    params = inspect.signature(est.fn).parameters
    assert list(params)[: len(est.pos)] == list(est.pos)
    assert all(params[n].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for n in est.pos)
    rest = set(est.opt) | set(est.hyper) | {"time_dim", "backend"}
    assert set(params) == set(est.pos) | rest
    assert all(params[n].kind is inspect.Parameter.KEYWORD_ONLY for n in rest)
    assert params["time_dim"].default == -1 and params["backend"].default == "auto"
    assert all(params[n].default is None for n in est.opt)


@pytest.mark.parametrize("est_name", WITH_BOUNDARY)
def test_excluded_bootstrap_pairs(est_name):
    est = ESTS[est_name]
    pairs = [p for p in EXCLUDED if set(p) <= set(est.boundaries)]
    assert pairs  # discounted_returns and retrace_from_action_values: bootstrap_values + last_value
    for pair in pairs:
        x = inputs(est, None)
        for n in pair:
            x[n] = make(n)
        for via, backend in COMBOS:
            raises(ValueError, (pair, via, backend), call, est, via, x, backend=backend)


def test_td_lambda_without_values_nor_next_values():
    est = ESTS["td_lambda"]
    for boundary in (None, "bootstrap_values", "last_value"):
        x = inputs(est, boundary)
        x["values"] = None
        for via, backend in COMBOS:
            msg = raises(ValueError, (boundary, via, backend), call, est, via, x, backend=backend)
            assert "values" in msg


def test_td_lambda_without_values_with_next_values():
    """Control: values=None is allowed with next_values (and then unused)."""
    est = ESTS["td_lambda"]
    x = inputs(est, "next_values")
    for via, backend in COMBOS:
        with_v = call(est, via, x, backend=backend)
        torch.testing.assert_close(call(est, via, {**x, "values": None}, backend=backend), with_v)


TIME_DIM_CASES = [
    pytest.param(e, f, id=f"{e}-{'features' if f else 'plain'}")
    for e in EST_NAMES
    for f in ((), (F,))
    if not f or ESTS[e].forward
]


def _call_time_dim(est: Est, via: str, x: dict[str, Any], td: Any, backend: str) -> tuple[torch.Tensor, ...]:
    if via == "ctor":
        return call(est, "cls", x, ctor={"time_dim": td}, backend=backend)
    return call(est, via, x, time_dim=td, backend=backend)


@pytest.mark.parametrize("est_name,feats", TIME_DIM_CASES)
def test_time_dim_out_of_range(est_name, feats):
    """``time_dim`` counts in [*B, T] (2-d here), also when x / action_values carry more dims."""
    est = ESTS[est_name]
    x = inputs(est, feats=feats)
    for td in (2, -3, 3, 100, -100):
        for via in (*VIAS, "ctor"):
            for backend in BACKENDS:
                msg = raises(ValueError, (td, via, backend), _call_time_dim, est, via, x, td, backend)
                assert "time_dim" in msg


@pytest.mark.parametrize("est_name", EST_NAMES)
def test_time_dim_not_an_int(est_name):
    est = ESTS[est_name]
    x = inputs(est)
    for td in (1.0, "0", [0], 0.5, torch.tensor(0)):
        for via in (*VIAS, "ctor"):
            for backend in BACKENDS:
                msg = raises(TypeError, (td, via, backend), _call_time_dim, est, via, x, td, backend)
                assert "time_dim" in msg


def _time_major(est: Est, x: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The same problem with time on axis 0 (strided views of the [B, T] tensors)."""
    return {n: v if n in ROW_NAMES or v is None else v.transpose(0, 1) for n, v in x.items()}


@pytest.mark.parametrize("est_name,feats", TIME_DIM_CASES)
def test_time_dim_in_range_accepted(est_name, feats):
    """Control for the time_dim errors: time on axis 0 gives the transposed outputs."""
    est = ESTS[est_name]
    x = inputs(est, feats=feats)
    xt = _time_major(est, x)
    for backend in BACKENDS:
        ref = call(est, "fn", x, backend=backend)
        for td in (0, -2):
            for via in (*VIAS, "ctor"):
                for a, b in zip(_call_time_dim(est, via, xt, td, backend), ref):
                    torch.testing.assert_close(a, b.transpose(0, 1))


# --------------------------------------------------------------------------------------
# empty time axis
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("est_name,feats", TIME_DIM_CASES)
def test_empty_time_axis(est_name, feats):
    est = ESTS[est_name]
    for boundary in (None, *est.boundaries):
        for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
            want_dtype = torch.float64 if dtype == torch.float64 else torch.float32
            for layout in ("batch_major", "time_major"):
                x = inputs(est, boundary, bshape=(3,), t=0, dtype=dtype, feats=feats)
                kw: dict[str, Any] = {}
                if layout == "time_major":
                    x = _time_major(est, x)
                    kw["time_dim"] = 0
                want_shape = x[est.pos[0]].shape
                assert 0 in want_shape
                for via, backend in COMBOS:
                    ctx = (boundary, dtype, layout, via, backend)
                    outs = call(est, via, x, backend=backend, **kw)
                    assert len(outs) == est.n_out, ctx
                    for o in outs:
                        assert isinstance(o, torch.Tensor), ctx
                        assert o.shape == want_shape, (ctx, o.shape)
                        assert o.dtype == want_dtype and o.device.type == "cpu", (ctx, o.dtype)


# --------------------------------------------------------------------------------------
# inputs are never modified
# --------------------------------------------------------------------------------------


def _bits(x: torch.Tensor) -> torch.Tensor:
    return x.detach().contiguous().reshape(-1).view(torch.uint8).clone()


def _layout(x: torch.Tensor) -> tuple:
    return x.shape, x.stride(), x.dtype, x.storage_offset(), x.device


@pytest.mark.parametrize("est_name,feats", TIME_DIM_CASES)
def test_inputs_are_not_modified(est_name, feats):
    """Every optional tensor given (each bootstrap form in turn), per-step gamma/lam tensors,
    flags set; the inputs are bitwise unchanged and the outputs share no storage with them."""
    est = ESTS[est_name]
    for boundary in est.boundaries or (None,):
        for dtype in (torch.float32, torch.float16, torch.float64):
            for layout in ("batch_major", "time_major"):
                x = inputs(est, boundary, dtype=dtype, feats=feats)
                for n in ("terminated", "truncated", "dones"):
                    if n in x:
                        x[n][0, 1] = True
                hyper: dict[str, Any] = {}
                if "gamma" in est.coefs:
                    hyper["gamma"] = torch.linspace(0.5, 1.0, B * T).reshape(B, T).to(dtype)
                if "lam" in est.coefs:
                    hyper["lam"] = torch.tensor([[0.9], [0.3]], dtype=dtype)
                kw: dict[str, Any] = {}
                if layout == "time_major":
                    x = _time_major(est, x)
                    hyper = {n: v.transpose(0, 1) for n, v in hyper.items()}
                    kw["time_dim"] = 0
                originals = {**x, **hyper}
                clones = {n: (_layout(v), v.clone()) for n, v in originals.items()}
                for via, backend in COMBOS2:
                    ctx = (boundary, dtype, layout, via, backend)
                    outs = call(est, via, x, hyper=hyper, backend=backend, **kw)
                    assert len(outs) == est.n_out
                    for n, v in originals.items():
                        assert _layout(v) == clones[n][0], (n, ctx)
                        assert torch.equal(_bits(v), _bits(clones[n][1])), (f"{n} was modified", ctx)
                    for o in outs:
                        for n, v in originals.items():
                            assert o.untyped_storage().data_ptr() != v.untyped_storage().data_ptr(), (n, ctx)


# --------------------------------------------------------------------------------------
# dtype rules
# --------------------------------------------------------------------------------------


def _cast_floats(est: Est, x: dict[str, torch.Tensor], dtype: torch.dtype) -> dict[str, torch.Tensor]:
    return {n: v.to(dtype) if n in est.float_names else v for n, v in x.items()}


@pytest.mark.parametrize("est_name", EST_NAMES)
def test_low_precision_inputs_give_float32(est_name):
    """float16/bfloat16/float32 inputs (also mixed): float32 outputs, computed in float32
    (equal to the outputs for the same values upcast to float32)."""
    est = ESTS[est_name]
    for boundary in est.boundaries or (None,):
        x = inputs(est, boundary)
        variants = {d: _cast_floats(est, x, d) for d in (torch.float16, torch.bfloat16, torch.float32)}
        variants["mixed"] = {
            n: v.to(torch.float16 if i % 2 else torch.bfloat16) if n in est.float_names else v
            for i, (n, v) in enumerate(x.items())
        }
        for kind, low in variants.items():
            up = _cast_floats(est, low, torch.float32)
            for via, backend in COMBOS2:
                got = call(est, via, low, backend=backend)
                want = call(est, via, up, backend=backend)
                for g, w in zip(got, want):
                    assert g.dtype == torch.float32, (kind, boundary, via, backend)
                    torch.testing.assert_close(g, w, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("est_name", EST_NAMES)
def test_float64_inputs_give_float64(est_name):
    est = ESTS[est_name]
    for boundary in est.boundaries or (None,):
        x = _cast_floats(est, inputs(est, boundary), torch.float64)
        for via, backend in COMBOS:
            for o in call(est, via, x, backend=backend):
                assert o.dtype == torch.float64, (boundary, via, backend)


@pytest.mark.parametrize("est_name", EST_NAMES)
def test_any_float64_input_gives_float64(est_name):
    """One float64 tensor (any float input, or a gamma / lam tensor) among low-precision ones."""
    est = ESTS[est_name]
    for name in est.float_names + est.coefs:
        for base in (torch.float32, torch.bfloat16):
            x = _cast_floats(est, _tensors_for(est, name), base)
            hyper: dict[str, Any] = {}
            if name in est.coefs:
                hyper[name] = torch.full((B, T), est.hyper[name], dtype=torch.float64)
            else:
                x[name] = x[name].to(torch.float64)
            for via, backend in COMBOS2:
                for o in call(est, via, x, hyper=hyper, backend=backend):
                    assert o.dtype == torch.float64, (name, base, via, backend)


# --------------------------------------------------------------------------------------
# flags: any dtype, nonzero = set
# --------------------------------------------------------------------------------------


def _flag_pattern(t: int) -> dict[str, torch.Tensor]:
    term = torch.zeros(B, t, dtype=torch.bool)
    trunc = torch.zeros(B, t, dtype=torch.bool)
    term[0, 1] = term[1, 3] = True
    trunc[1, 0] = trunc[0, t - 1] = True
    return {"terminated": term, "truncated": trunc, "dones": term | trunc}


FLAG_KINDS = {  # name: (dtype, value of a set flag)
    "uint8": (torch.uint8, 1),
    "int64": (torch.int64, 1),
    "int32": (torch.int32, 1),
    "int8": (torch.int8, 1),
    "float32": (torch.float32, 1.0),
    "float16": (torch.float16, 1.0),
    "bfloat16": (torch.bfloat16, 1.0),
    "uint8=3": (torch.uint8, 3),
    "int64=-1": (torch.int64, -1),
    "float=0.5": (torch.float32, 0.5),
    "float=-2": (torch.float32, -2.0),
}


@pytest.mark.parametrize("est_name", EST_NAMES)
def test_flag_dtypes_give_identical_results(est_name):
    est = ESTS[est_name]
    t = 5
    flags = _flag_pattern(t)
    for boundary in est.boundaries or (None,):
        x = inputs(est, boundary, t=t)
        x.update({n: f for n, f in flags.items() if n in x})
        for via, backend in COMBOS2:
            ref = call(est, via, x, backend=backend)
            # the flags matter here (so the comparison below can fail)
            unflagged = call(est, via, {**x, **{n: torch.zeros_like(x[n]) for n in flags if n in x}}, backend=backend)
            assert any(not torch.equal(a, b) for a, b in zip(unflagged, ref))
            for kind, (dtype, on) in FLAG_KINDS.items():
                y = {
                    n: torch.where(v, torch.tensor(on, dtype=dtype), torch.tensor(0, dtype=dtype)) if n in flags else v
                    for n, v in x.items()
                }
                for g, r in zip(call(est, via, y, backend=backend), ref):
                    assert g.dtype == r.dtype == torch.float32, (kind, boundary, via, backend)
                    assert torch.equal(g, r), (kind, boundary, via, backend)


# --------------------------------------------------------------------------------------
# TensorDict key errors
# --------------------------------------------------------------------------------------


CLASSES = {
    "GAE": lambda: rt.GAE(0.99, 0.95),
    "TDLambda": lambda: rt.TDLambda(0.99, 0.95),
    "DiscountedReturn": lambda: rt.DiscountedReturn(0.99),
    "VTrace": lambda: rt.VTrace(0.99),
    "Retrace": lambda: rt.Retrace(0.99),
    "EligibilityTrace": lambda: rt.EligibilityTrace(0.99, 0.95),
    "EpisodicPrefixSum": lambda: rt.EpisodicPrefixSum(),
}
WRITES = {
    "GAE": ("advantage", "value_target"),
    "TDLambda": ("value_target",),
    "DiscountedReturn": ("value_target",),
    "VTrace": ("advantage", "value_target"),
    "Retrace": ("q_target",),
    "EligibilityTrace": (),
    "EpisodicPrefixSum": (),
}


def _td(with_reward: bool = True) -> TensorDict:
    g = torch.Generator().manual_seed(0)
    nxt = {
        "done": torch.zeros(B, T, 1, dtype=torch.bool),
        "terminated": torch.zeros(B, T, 1, dtype=torch.bool),
        "truncated": torch.zeros(B, T, 1, dtype=torch.bool),
    }
    if with_reward:
        nxt["reward"] = torch.randn(B, T, 1, generator=g)
    return TensorDict(
        {
            "state_value": torch.randn(B, T, 1, generator=g),
            "state_action_value": torch.randn(B, T, 1, generator=g),
            "sample_log_prob": -torch.rand(B, T, generator=g),
            "target_log_prob": -torch.rand(B, T, generator=g),
            "next": nxt,
        },
        batch_size=[B, T],
    )


def _key_error_text(e: KeyError) -> str:
    return " ".join(str(a) for a in e.args)


@pytest.mark.parametrize("cls_name", CLASSES)
def test_set_keys_unknown_name(cls_name):
    with pytest.raises(KeyError) as ei:
        CLASSES[cls_name]().set_keys(bogus="x")
    assert "'bogus'" in _key_error_text(ei.value)


@pytest.mark.parametrize("cls_name", CLASSES)
def test_set_keys_known_name_returns_self(cls_name):
    obj = CLASSES[cls_name]()
    name = "source" if cls_name in ("EligibilityTrace", "EpisodicPrefixSum") else "reward"
    assert obj.set_keys(**{name: ("next", "r")}) is obj


@pytest.mark.parametrize("cls_name", CLASSES)
def test_tensordict_missing_reward(cls_name):
    td = _td(with_reward=False)
    for backend in BACKENDS:
        with pytest.raises(KeyError) as ei:
            CLASSES[cls_name]()(td, backend=backend)
        text = _key_error_text(ei.value)
        assert "'next', 'reward'" in text, text


@pytest.mark.parametrize("cls_name", CLASSES)
def test_tensordict_with_reward_works(cls_name):
    """Control for the missing-key test: the same TensorDict with the reward is accepted."""
    for backend in BACKENDS:
        td = _td(with_reward=True)
        assert CLASSES[cls_name]()(td, backend=backend) is td
        for key in WRITES[cls_name]:
            assert key in td.keys() and td.get(key).shape[:2] == (B, T)


def test_tensordict_renamed_reward_missing_names_the_new_key():
    with pytest.raises(KeyError) as ei:
        rt.GAE(0.99, 0.95).set_keys(reward=("next", "rew"))(_td(with_reward=True), backend="torch")
    assert "'next', 'rew'" in _key_error_text(ei.value)


def test_autograd_with_triton_backend():
    """The kernels have no backward: "auto" falls back to the differentiable torch backend,
    an explicit "triton" refuses instead of silently dropping the graph."""
    import rltriton as rt

    r = torch.randn(3, 7, requires_grad=True)
    v = torch.randn(3, 7)
    adv, _ = rt.gae(r, v, gamma=0.9, lam=0.8, backend="auto")
    assert adv.requires_grad
    adv.sum().backward()
    assert r.grad is not None and torch.isfinite(r.grad).all()
    with pytest.raises(ValueError, match="expected inputs that do not require grad") as e:
        rt.gae(r, v, gamma=0.9, lam=0.8, backend="triton")
    assert "got" in str(e.value)
    with torch.no_grad():
        rt.gae(r, v, gamma=0.9, lam=0.8, backend="torch")


def test_tensordict_call_rejects_extra_tensors():
    from tensordict import TensorDict

    import rltriton as rt

    td = TensorDict(
        {
            "state_value": torch.randn(2, 5),
            "next": {"reward": torch.randn(2, 5), "done": torch.zeros(2, 5, dtype=torch.bool)},
        },
        [2, 5],
    )
    with pytest.raises(TypeError, match="expected only a TensorDict") as e:
        rt.GAE(0.9, 0.8)(td, last_value=torch.zeros(2))
    assert "last_value" in str(e.value)
