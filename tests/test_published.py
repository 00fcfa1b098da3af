"""``rltriton.reference`` against the numbers published in google-deepmind/rlax's tests.

Sources (rlax, commit 4c5d25b2609879d321f5a432cdf88165574e57a7):

* ``rlax/_src/multistep_test.py``: ``LambdaReturnsTest``, ``DiscountedReturnsTest``,
  ``NStepBootstrappedReturnsTest`` (n >= T only), ``TruncatedGeneralizedAdvantageEstimationTest``;
* ``rlax/_src/vtrace_test.py``: ``VTraceTest`` (published V-trace errors and pg advantages,
  plus the properties of its lambda / multi-episode tests).

Only the inputs and expected numbers are taken from there; the tests are our own.

Mapping rlax -> our API
-----------------------
rlax works on one unbatched trajectory (its tests ``vmap`` over a [B, T] batch; we pass the
[B, T] arrays directly, time on the last axis). Its step t is our step t: ``r_t`` is the
reward of the transition out of s_t, ``discount_t`` = gamma * (1 - terminal) belongs to the
same transition, and every ``v_t`` array holds the value of the NEXT state s_{t+1}.

* A per-step ``discount_t`` is passed as our per-step ``gamma`` tensor, no flags. A per-step
  gamma of 0 cuts the recursion exactly like ``terminated`` (SPEC section 2), so where rlax's
  discount is gamma * (1 - terminal) we also check ``gamma`` (scalar or the non-zero
  discounts) + ``terminated`` flags gives the same numbers.
* ``lambda_returns(r_t, discount_t, v_t, lambda_)``: rlax scans backwards from acc = v_t[-1]
  with ``G_t = r_t + discount_t ((1 - lambda_t) v_t + lambda_t G_{t+1})``, so
  ``G_{T-1} = r + discount v_t[-1]``. That is our ``td_lambda`` (SPEC section 3) with
  ``gamma=discount_t, lam=lambda_, next_values=v_t`` and no flags: X_t = G_{t+1} for t < T-1
  and X_{T-1} = nv_{T-1} = v_t[-1].
* ``discounted_returns(r_t, discount_t, v_t)`` is ``lambda_returns`` with lambda = 1 and a
  constant-broadcast ``v_t``: only ``v_t[-1]`` matters, so it is our ``discounted_returns``
  with ``last_value=v_t[..., -1]`` (or dense ``bootstrap_values=v_t``, of which only t = T-1
  is read without truncation flags). ``n_step_bootstrapped_returns`` with n >= T is the same
  thing, i.e. our ``td_lambda`` with ``lam=1``.
* ``truncated_generalized_advantage_estimation(r_t, discount_t, lambda_, values)``, values of
  length T+1: ``delta_t = r_t + discount_t values[t+1] - values[t]``,
  ``A_t = delta_t + discount_t lambda_t A_{t+1}``, A_T = 0. Our ``gae`` with
  ``values=values[:-1]`` and ``last_value=values[-1]`` (or ``next_values=values[1:]``).
* ``vtrace`` / ``vtrace_td_error_and_advantage(v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_,
  clip_rho_threshold=1.0, clip_pg_rho_threshold=1.0)``: rho_tm1 is a ratio, not a log;
  c = lambda min(1, rho), rho clipped at ``clip_rho_threshold``; rlax's ``errors`` are
  vs - v_tm1 and ``pg_advantage`` = min(clip_pg, rho) (q - v_tm1) with
  q_t = r_t + discount_t (lambda_t vs_{t+1} + (1 - lambda_t) v_tm1[t+1]) and
  q_{T-1} = r + discount v_t[-1]. Ours: ``vtrace(r_t, v_tm1, log(rho_tm1), gamma=discount_t,
  lam=lambda_, rho_bar=clip_rho_threshold, c_bar=1, pg_rho_bar=clip_pg_rho_threshold,
  last_value=v_t[-1])`` (or ``next_values=v_t``); ``value_targets - values`` is rlax's
  ``errors`` and ``advantages`` its ``pg_advantage``.

Tolerances
----------
rlax computed its arrays in float32 (jax default) and printed them in one of two ways:

* in full (shortest float32 repr, ~8 significant digits: lambda returns, discounted returns,
  V-trace). The error there is float32 rounding, not printing: about 20 float32 roundings
  along a <= 5-step recursion, each bounded by eps32 times the largest magnitude involved
  (``scale``: 5 for the multistep inputs, ~51 for V-trace), so
  ``atol = 20 * eps32 * scale`` (1.2e-5 and 1.2e-4).
* by hand, truncated (not rounded) to 3-6 decimals (GAE: 2.539651 is printed 2.5396,
  0.81596 as 0.815). The tolerance is one unit in the coarsest truncated decimal of that
  table: 1e-4 for lambda 1 and 0.7, 1e-3 for lambda 0.4. Because that is coarse, the GAE
  values are also re-derived by hand in full precision (``test_truncated_gae_hand_derived``).

Hand-derived values and checks between two float64 computations use ``atol=1e-12``.
"""

from __future__ import annotations

import pytest
import torch

from rltriton import reference as ref

F64 = torch.float64
EPS32 = torch.finfo(torch.float32).eps
EXACT = 1e-12


def _f32_atol(scale: float) -> float:
    """Allowance for an rlax float32 result of magnitude up to ``scale`` (see module docstring)."""
    return 20 * EPS32 * scale


MULTISTEP_ATOL = _f32_atol(5.0)  # |inputs|, |outputs| <= 5 in the multistep tables
VTRACE_ATOL = _f32_atol(51.0)  # largest V-trace quantity: 42 + 0.99 * 8.4 = 50.3


def _t(x, dtype=F64) -> torch.Tensor:
    return torch.tensor(x, dtype=dtype)


def _close(got: torch.Tensor, expected, atol: float) -> None:
    assert got.dtype == F64
    expected = torch.as_tensor(expected, dtype=F64)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=0.0, atol=atol)


# ---------------------------------------------------------------------------------------
# Published data
# ---------------------------------------------------------------------------------------

# multistep_test.py: shared by LambdaReturnsTest, DiscountedReturnsTest, NStepBootstrappedReturnsTest.
MS_R = [[1.0, 0.0, -1.0, 0.0, 1.0], [0.5, 0.8, -0.7, 0.0, 2.1]]
MS_DISCOUNT = [[0.5, 0.9, 1.0, 0.5, 0.8], [0.9, 0.5, 0.3, 0.8, 0.7]]
MS_V_NEXT = [[3.0, 1.0, 5.0, -5.0, 3.0], [-1.7, 1.2, 2.3, 2.2, 2.7]]
# LambdaReturnsTest, lambda_ = 0.75.
LAMBDA_RETURNS_075 = [
    [1.6460547, 0.72281253, 0.7375001, 0.6500001, 3.4],
    [0.7866317, 0.9913063, 0.1101501, 2.834, 3.99],
]
# DiscountedReturnsTest (bootstrap v_t[-1]); NStepBootstrappedReturnsTest expected[5] == expected[7].
DISCOUNTED_RETURNS = [
    [1.315, 0.63000005, 0.70000005, 1.7, 3.4],
    [1.33592, 0.9288, 0.2576, 3.192, 3.9899998],
]

# multistep_test.py: TruncatedGeneralizedAdvantageEstimationTest (values have length T + 1).
GAE_R = [[0.0, 0.0, 1.0, 0.0, -0.5], [0.0, 0.0, 0.0, 0.0, 1.0]]
GAE_VALUES = [[1.0, 4.0, -3.0, -2.0, -1.0, -1.0], [-3.0, -2.0, -1.0, 0.0, 5.0, -1.0]]
GAE_DISCOUNT = [[0.99, 0.99, 0.99, 0.99, 0.99], [0.9, 0.9, 0.9, 0.0, 0.9]]
GAE_EXPECTED = {
    1.0: [[-1.45118, -4.4557, 2.5396, 0.5249, -0.49], [3.0, 2.0, 1.0, 0.0, -4.9]],
    0.7: [[-0.676979, -5.248167, 2.4846, 0.6704, -0.49], [2.2899, 1.73, 1.0, 0.0, -4.9]],
    0.4: [[0.56731, -6.042, 2.3431, 0.815, -0.49], [1.725, 1.46, 1.0, 0.0, -4.9]],
}
GAE_ATOL = {1.0: 1e-4, 0.7: 1e-4, 0.4: 1e-3}  # one unit in the coarsest truncated decimal

# vtrace_test.py: VTraceTest.setUp. rho_tm1 = pi(a|s) / mu(a|s) from categorical logits.
VT_BEHAVIOUR_LOGITS = [
    [[8.9, 0.7], [5.0, 1.0], [0.6, 0.1], [-0.9, -0.1]],
    [[0.3, -5.0], [1.0, -8.0], [0.3, 1.7], [4.7, 3.3]],
]
VT_TARGET_LOGITS = [
    [[0.4, 0.5], [9.2, 8.8], [0.7, 4.4], [7.9, 1.4]],
    [[1.0, 0.9], [1.0, -1.0], [-4.3, 8.7], [0.8, 0.3]],
]
VT_ACTIONS = [[0, 1, 0, 0], [1, 0, 0, 1]]
VT_R = [[-1.3, -1.3, 2.3, 42.0], [1.3, 5.3, -3.3, -5.0]]
VT_DISCOUNT = [[0.0, 0.89, 0.85, 0.99], [0.88, 1.0, 0.83, 0.95]]
VT_V = [[2.1, 1.1, -3.1, 0.0], [3.1, 0.1, -1.1, 7.4]]
VT_BOOTSTRAP = [8.4, -1.2]
# test_vtrace_td_error_and_advantage: clip_rho_threshold=1, lambda_=1. The test's setUp defines
# clip_pg_rho_threshold=5 but never passes it, so rlax's default clip_pg_rho_threshold=1 applies.
VT_ERRORS = [
    [-1.6155143, -3.4973226, 1.8670533, 5.0316002e1],
    [1.4662437, 3.6116405, -8.3327293e-5, -1.3540000e1],
]
VT_PG = [
    [-1.6155143, -3.4973226, 1.8670534, 5.0316002e1],
    [1.4662433, 3.6116405, -8.3369283e-05, -1.3540000e1],
]


def _vt_log_rhos(dtype=F64) -> torch.Tensor:
    """log rho = log softmax(target)[a] - log softmax(behaviour)[a] (distrax importance ratios)."""
    a = torch.tensor(VT_ACTIONS).unsqueeze(-1)
    log_pi = torch.log_softmax(_t(VT_TARGET_LOGITS, dtype), -1).gather(-1, a).squeeze(-1)
    log_mu = torch.log_softmax(_t(VT_BEHAVIOUR_LOGITS, dtype), -1).gather(-1, a).squeeze(-1)
    return log_pi - log_mu


# ---------------------------------------------------------------------------------------
# rlax's recursions written out on Python floats (one unbatched row, discount encoding).
# Independent of rltriton; used as the oracle for variants that rlax did not publish.
# ---------------------------------------------------------------------------------------


def _rlax_lambda_returns(r, discount, v_next, lam):
    acc, out = v_next[-1], [0.0] * len(r)
    for t in reversed(range(len(r))):
        acc = r[t] + discount[t] * ((1 - lam[t]) * v_next[t] + lam[t] * acc)
        out[t] = acc
    return out


def _rlax_gae(r, discount, lam, values):
    acc, out = 0.0, [0.0] * len(r)
    for t in reversed(range(len(r))):
        delta = r[t] + discount[t] * values[t + 1] - values[t]
        acc = delta + discount[t] * lam[t] * acc
        out[t] = acc
    return out


def _rlax_vtrace(v_tm1, v_t, r, discount, rho, lam):
    """(errors, pg_advantage) with clip_rho_threshold = clip_pg_rho_threshold = 1."""
    n = len(r)
    acc, errors = 0.0, [0.0] * n
    for t in reversed(range(n)):
        td = min(1.0, rho[t]) * (r[t] + discount[t] * v_t[t] - v_tm1[t])
        acc = td + discount[t] * lam[t] * min(1.0, rho[t]) * acc
        errors[t] = acc
    targets = [e + v for e, v in zip(errors, v_tm1)]
    q_boot = [lam[t] * targets[t + 1] + (1 - lam[t]) * v_tm1[t + 1] for t in range(n - 1)] + [v_t[-1]]
    pg = [min(1.0, rho[t]) * (r[t] + discount[t] * q_boot[t] - v_tm1[t]) for t in range(n)]
    return errors, pg


def _rows(fn, *batched):
    """Apply a one-row rlax transcription to every row of [B, T] nested lists."""
    return [fn(*row) for row in zip(*batched)]


def test_rlax_transcriptions_reproduce_published_arrays():
    lam075 = [[0.75] * 5] * 2
    _close(_t(_rows(_rlax_lambda_returns, MS_R, MS_DISCOUNT, MS_V_NEXT, lam075)), LAMBDA_RETURNS_075, MULTISTEP_ATOL)
    for lam, expected in GAE_EXPECTED.items():
        got = _rows(_rlax_gae, GAE_R, GAE_DISCOUNT, [[lam] * 5] * 2, GAE_VALUES)
        _close(_t(got), expected, GAE_ATOL[lam])
    v_next = [row[1:] + [b] for row, b in zip(VT_V, VT_BOOTSTRAP)]
    rho = _vt_log_rhos().exp().tolist()
    out = _rows(_rlax_vtrace, VT_V, v_next, VT_R, VT_DISCOUNT, rho, [[1.0] * 4] * 2)
    _close(_t([o[0] for o in out]), VT_ERRORS, VTRACE_ATOL)
    _close(_t([o[1] for o in out]), VT_PG, VTRACE_ATOL)


# ---------------------------------------------------------------------------------------
# Lambda returns (multistep_test.py: LambdaReturnsTest)
# ---------------------------------------------------------------------------------------

DTYPES = [torch.float64, torch.float32]


def _lam_forms(value: float, shape):
    """The same lambda as a float, a 0-d tensor, a per-step [T] tensor and a full [B, T] tensor."""
    return {
        "float": value,
        "scalar_tensor": _t(value),
        "per_step_T": torch.full(shape[-1:], value, dtype=F64),
        "per_step_BT": torch.full(shape, value, dtype=F64),
    }


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lam_form", ["float", "scalar_tensor", "per_step_T", "per_step_BT"])
def test_lambda_returns_published(dtype, lam_form):
    r, d, v = _t(MS_R, dtype), _t(MS_DISCOUNT, dtype), _t(MS_V_NEXT, dtype)
    lam = _lam_forms(0.75, r.shape)[lam_form]
    got = ref.td_lambda(r, gamma=d, lam=lam, next_values=v)
    _close(got, LAMBDA_RETURNS_075, MULTISTEP_ATOL)


def test_lambda_returns_per_step_lambda_hand_derived():
    # rlax publishes no per-step-lambda numbers; derived by hand from
    # G_t = r_t + d_t ((1 - l_t) v_t + l_t G_{t+1}), G_4 = r_4 + d_4 v_4 on the published inputs.
    # Row 0, lambda = [0.5, 1, 0, 0.25, 0.75]:
    #   G4 = 1 + 0.8 * 3 = 3.4;  G3 = 0 + 0.5 (0.75 * -5 + 0.25 * 3.4) = -1.45
    #   G2 = -1 + 1 * (1 * 5 + 0) = 4;  G1 = 0 + 0.9 (0 + 1 * 4) = 3.6
    #   G0 = 1 + 0.5 (0.5 * 3 + 0.5 * 3.6) = 2.65
    # Row 1, lambda = [1, 0, 0.5, 0.75, 0.25]:
    #   G4 = 2.1 + 0.7 * 2.7 = 3.99;  G3 = 0.8 (0.25 * 2.2 + 0.75 * 3.99) = 2.834
    #   G2 = -0.7 + 0.3 (0.5 * 2.3 + 0.5 * 2.834) = 0.0701;  G1 = 0.8 + 0.5 * 1.2 = 1.4
    #   G0 = 0.5 + 0.9 * 1.4 = 1.76
    lam = _t([[0.5, 1.0, 0.0, 0.25, 0.75], [1.0, 0.0, 0.5, 0.75, 0.25]])
    got = ref.td_lambda(_t(MS_R), gamma=_t(MS_DISCOUNT), lam=lam, next_values=_t(MS_V_NEXT))
    _close(got, [[2.65, 3.6, 4.0, -1.45, 3.4], [1.76, 1.4, 0.0701, 2.834, 3.99]], EXACT)
    _close(_t(_rows(_rlax_lambda_returns, MS_R, MS_DISCOUNT, MS_V_NEXT, lam.tolist())), got, EXACT)


# ---------------------------------------------------------------------------------------
# Discounted returns (DiscountedReturnsTest; NStepBootstrappedReturnsTest with n >= T)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_discounted_returns_published(dtype):
    r, d, v = _t(MS_R, dtype), _t(MS_DISCOUNT, dtype), _t(MS_V_NEXT, dtype)
    # rlax's scalar bootstrap v_t[-1] ...
    _close(ref.discounted_returns(r, gamma=d, last_value=v[:, -1]), DISCOUNTED_RETURNS, MULTISTEP_ATOL)
    # ... and its dense v_t, of which only the last step is used.
    _close(ref.discounted_returns(r, gamma=d, bootstrap_values=v), DISCOUNTED_RETURNS, MULTISTEP_ATOL)
    # n-step returns with n = 5, 7 >= T are the lambda = 1 returns: td_lambda with lam = 1.
    _close(ref.td_lambda(r, gamma=d, lam=1.0, next_values=v), DISCOUNTED_RETURNS, MULTISTEP_ATOL)


def test_discounted_returns_without_bootstrap_hand_derived():
    # rlax publishes only the bootstrapped returns. Returns are linear in the bootstrap value:
    # G_t(no bootstrap) = G_t(v_boot) - (prod_{k=t}^{T-1} d_k) v_boot. Row 0 (v_boot = 3,
    # products 0.18, 0.36, 0.4, 0.4, 0.8): 1.315 - 0.54 = 0.775, 0.63 - 1.08 = -0.45,
    # 0.7 - 1.2 = -0.5, 1.7 - 1.2 = 0.5, 3.4 - 2.4 = 1. Row 1 (v_boot = 2.7, products 0.0756,
    # 0.084, 0.168, 0.56, 0.7): 1.1318, 0.702, -0.196, 1.68, 2.1. Directly, row 0:
    # G4 = 1, G3 = 0.5, G2 = -1 + 0.5 = -0.5, G1 = 0.9 * -0.5 = -0.45, G0 = 1 + 0.5 * -0.45 = 0.775.
    expected = [[0.775, -0.45, -0.5, 0.5, 1.0], [1.1318, 0.702, -0.196, 1.68, 2.1]]
    r, d = _t(MS_R), _t(MS_DISCOUNT)
    _close(ref.discounted_returns(r, gamma=d), expected, EXACT)
    _close(ref.discounted_returns(r, gamma=d, last_value=torch.zeros(2, dtype=F64)), expected, EXACT)


# ---------------------------------------------------------------------------------------
# Truncated GAE (TruncatedGeneralizedAdvantageEstimationTest)
# ---------------------------------------------------------------------------------------


def _gae_inputs(dtype=F64):
    values = _t(GAE_VALUES, dtype)
    return _t(GAE_R, dtype), values[:, :-1], values[:, -1], values[:, 1:], _t(GAE_DISCOUNT, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lam_form", ["float", "scalar_tensor", "per_step_T", "per_step_BT"])
@pytest.mark.parametrize("bootstrap", ["last_value", "next_values"])
@pytest.mark.parametrize("lam_value", sorted(GAE_EXPECTED))
def test_truncated_gae_published(dtype, lam_form, bootstrap, lam_value):
    r, v, v_last, v_next, d = _gae_inputs(dtype)
    lam = _lam_forms(lam_value, r.shape)[lam_form]
    boot = {"last_value": v_last} if bootstrap == "last_value" else {"next_values": v_next}
    expected = _t(GAE_EXPECTED[lam_value])
    atol = GAE_ATOL[lam_value]
    adv, targets = ref.gae(r, v, gamma=d, lam=lam, **boot)
    _close(adv, expected, atol)
    _close(targets, expected + v.to(F64), atol)
    # With consistent next values TD(lambda) returns are GAE advantages + V (SPEC section 3).
    _close(ref.td_lambda(r, v, gamma=d, lam=lam, **boot), expected + v.to(F64), atol)


def test_truncated_gae_hand_derived():
    # The published GAE table is truncated to 3-4 decimals; two rows re-derived in full from
    # delta_t = r_t + d_t V_{t+1} - V_t, A_t = delta_t + d_t lam A_{t+1}.
    # Row 0, lam = 1, d = 0.99: deltas = [2.96, -6.97, 2.02, 1.01, -0.49];
    #   A4 = -0.49, A3 = 1.01 - 0.4851 = 0.5249, A2 = 2.02 + 0.519651 = 2.539651,
    #   A1 = -6.97 + 2.51425449 = -4.45574551, A0 = 2.96 - 4.4111880549 = -1.4511880549.
    # Row 1, lam = 0.4, d = [0.9, 0.9, 0.9, 0, 0.9]: deltas = [1.2, 1.1, 1, 0, -4.9];
    #   A4 = -4.9, A3 = 0 (d_3 = 0 cuts), A2 = 1, A1 = 1.1 + 0.36 = 1.46, A0 = 1.2 + 0.5256 = 1.7256.
    r, v, v_last, _, d = _gae_inputs()
    adv1, _ = ref.gae(r, v, gamma=d, lam=1.0, last_value=v_last)
    _close(adv1[0], [-1.4511880549, -4.45574551, 2.539651, 0.5249, -0.49], EXACT)
    adv04, _ = ref.gae(r, v, gamma=d, lam=0.4, last_value=v_last)
    _close(adv04[1], [1.7256, 1.46, 1.0, 0.0, -4.9], EXACT)


@pytest.mark.parametrize("lam_value", sorted(GAE_EXPECTED))
def test_truncated_gae_is_vtrace_with_unit_ratios(lam_value):
    # test_gae_as_special_case_of_importance_corrected_td_errors: with all ratios 1 the
    # off-policy corrected TD errors are GAE. Ours: V-trace with log_rhos = 0, lam = lambda.
    r, v, v_last, _, d = _gae_inputs()
    vs, pg = ref.vtrace(r, v, torch.zeros_like(r), gamma=d, lam=lam_value, last_value=v_last)
    assert pg.dtype == F64
    _close(vs - v, GAE_EXPECTED[lam_value], GAE_ATOL[lam_value])


FLAG_DTYPES = [torch.bool, torch.int64, torch.float32]


@pytest.mark.parametrize("flag_dtype", FLAG_DTYPES)
@pytest.mark.parametrize("lam_value", sorted(GAE_EXPECTED))
def test_truncated_gae_terminated_flags_match_zero_discount(flag_dtype, lam_value):
    # Published row 1 has discount [0.9, 0.9, 0.9, 0, 0.9] = 0.9 * (1 - terminal) with a terminal
    # at t = 3; row 0 is a constant 0.99. So: per-row scalar gamma + a terminated flag.
    r, v, v_last, _, d = _gae_inputs()
    terminated = torch.tensor([[0, 0, 0, 0, 0], [0, 0, 0, 1, 0]]).to(flag_dtype)
    gamma_per_row = _t([[0.99], [0.9]])  # broadcast to [B, T]
    adv, targets = ref.gae(r, v, gamma=gamma_per_row, lam=lam_value, terminated=terminated, last_value=v_last)
    _close(adv, GAE_EXPECTED[lam_value], GAE_ATOL[lam_value])
    rlax_encoding, _ = ref.gae(r, v, gamma=d, lam=lam_value, last_value=v_last)
    _close(adv, rlax_encoding, EXACT)
    _close(targets, rlax_encoding + v, EXACT)
    # Row 1 alone with a Python float gamma.
    adv1, _ = ref.gae(r[1], v[1], gamma=0.9, lam=lam_value, terminated=terminated[1], last_value=v_last[1])
    _close(adv1, rlax_encoding[1], EXACT)
    ret = ref.td_lambda(r, v, gamma=gamma_per_row, lam=lam_value, terminated=terminated, last_value=v_last)
    _close(ret, rlax_encoding + v, EXACT)


# ---------------------------------------------------------------------------------------
# Zero-discount variants of the multistep inputs (rlax publishes none with a zero there)
# ---------------------------------------------------------------------------------------

MS_TERMINAL = [[0, 0, 1, 0, 0], [1, 0, 0, 0, 1]]  # includes a terminal at t = T - 1


@pytest.mark.parametrize("flag_dtype", FLAG_DTYPES)
@pytest.mark.parametrize("gamma_kind", ["scalar", "per_step"])
def test_multistep_terminated_flags_match_zero_discount(flag_dtype, gamma_kind):
    # discount_t = gamma_t * (1 - terminal_t) from the published r_t, v_t; gamma_t is 0.9 or the
    # published per-step discounts. rlax encoding = that discount tensor, no flags.
    term = _t(MS_TERMINAL)
    gamma = 0.9 if gamma_kind == "scalar" else _t(MS_DISCOUNT)
    discount = (gamma * (1 - term)).to(F64)
    terminated = term.to(flag_dtype)
    r, v = _t(MS_R), _t(MS_V_NEXT)

    lam = [[0.75] * 5] * 2
    expected = _t(_rows(_rlax_lambda_returns, MS_R, discount.tolist(), MS_V_NEXT, lam))
    _close(ref.td_lambda(r, gamma=discount, lam=0.75, next_values=v), expected, EXACT)
    _close(ref.td_lambda(r, gamma=gamma, lam=0.75, terminated=terminated, next_values=v), expected, EXACT)

    ones = [[1.0] * 5] * 2
    expected = _t(_rows(_rlax_lambda_returns, MS_R, discount.tolist(), MS_V_NEXT, ones))
    _close(ref.discounted_returns(r, gamma=discount, last_value=v[:, -1]), expected, EXACT)
    got = ref.discounted_returns(r, gamma=gamma, terminated=terminated, last_value=v[:, -1])
    _close(got, expected, EXACT)

    # GAE on the published multistep inputs, values = [v_t[0] - 1, v_t] (any V_0 works).
    values = torch.cat([v[:, :1] - 1, v], dim=1)
    expected = _t(_rows(_rlax_gae, MS_R, discount.tolist(), lam, values.tolist()))
    adv, _ = ref.gae(r, values[:, :-1], gamma=gamma, lam=0.75, terminated=terminated, last_value=values[:, -1])
    _close(adv, expected, EXACT)


@pytest.mark.parametrize("flag_dtype", FLAG_DTYPES)
def test_multistep_truncated_flags_match_zero_lambda(flag_dtype):
    # rlax has no truncation flag; its tests encode a cut with lambda_t = 0 under a non-zero
    # discount (vtrace_test's 'vector_lambda_truncation'): the step bootstraps from v_t and no
    # later reward leaks in. Ours: a truncated flag with dense next_values (published inputs).
    trunc = _t([[0, 1, 0, 0, 0], [0, 0, 0, 1, 0]])
    lam = 0.75 * (1 - trunc)
    r, d, v = _t(MS_R), _t(MS_DISCOUNT), _t(MS_V_NEXT)
    expected = _t(_rows(_rlax_lambda_returns, MS_R, MS_DISCOUNT, MS_V_NEXT, lam.tolist()))
    _close(ref.td_lambda(r, gamma=d, lam=lam, next_values=v), expected, EXACT)
    got = ref.td_lambda(r, gamma=d, lam=0.75, truncated=trunc.to(flag_dtype), next_values=v)
    _close(got, expected, EXACT)
    values = torch.cat([v[:, :1] - 1, v], dim=1)
    expected = _t(_rows(_rlax_gae, MS_R, MS_DISCOUNT, lam.tolist(), values.tolist()))
    adv, _ = ref.gae(r, values[:, :-1], gamma=d, lam=0.75, truncated=trunc.to(flag_dtype), next_values=v)
    _close(adv, expected, EXACT)


# ---------------------------------------------------------------------------------------
# V-trace (vtrace_test.py: VTraceTest)
# ---------------------------------------------------------------------------------------


def _vt_inputs(dtype=F64):
    v = _t(VT_V, dtype)
    boot = _t(VT_BOOTSTRAP, dtype)
    v_next = torch.cat([v[:, 1:], boot[:, None]], dim=1)
    return _t(VT_R, dtype), v, boot, v_next, _t(VT_DISCOUNT, dtype), _vt_log_rhos(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bootstrap", ["last_value", "next_values"])
@pytest.mark.parametrize("pg_rho_bar", [None, 1.0])
def test_vtrace_published(dtype, bootstrap, pg_rho_bar):
    r, v, boot, v_next, d, log_rhos = _vt_inputs(dtype)
    kw = {"last_value": boot} if bootstrap == "last_value" else {"next_values": v_next}
    vs, pg = ref.vtrace(r, v, log_rhos, gamma=d, lam=1.0, rho_bar=1.0, c_bar=1.0, pg_rho_bar=pg_rho_bar, **kw)
    _close(vs - v.to(F64), VT_ERRORS, VTRACE_ATOL)
    _close(pg, VT_PG, VTRACE_ATOL)


@pytest.mark.parametrize("flag_dtype", FLAG_DTYPES)
@pytest.mark.parametrize("fill", [0.0, 0.5, 0.97, 1.0])
def test_vtrace_terminated_flag_matches_zero_discount(flag_dtype, fill):
    # Published row 0 has discount 0 at t = 0 (a terminal transition). Encode it as a
    # terminated flag instead; the gamma at that step (``fill``) must then not matter.
    r, v, boot, _, d, log_rhos = _vt_inputs()
    gamma = d.clone()
    gamma[0, 0] = fill
    terminated = torch.tensor([[1, 0, 0, 0], [0, 0, 0, 0]]).to(flag_dtype)
    vs, pg = ref.vtrace(r, v, log_rhos, gamma=gamma, terminated=terminated, last_value=boot)
    _close(vs - v, VT_ERRORS, VTRACE_ATOL)
    _close(pg, VT_PG, VTRACE_ATOL)
    vs_d, pg_d = ref.vtrace(r, v, log_rhos, gamma=d, last_value=boot)
    _close(vs, vs_d, EXACT)
    _close(pg, pg_d, EXACT)


@pytest.mark.parametrize("flag_dtype", FLAG_DTYPES)
@pytest.mark.parametrize("lam", [1.0, 0.8])
def test_vtrace_scalar_gamma_terminated_matches_zero_discount(flag_dtype, lam):
    # Variant of the published inputs: discount_t = 0.9 * (1 - terminal_t), terminals at
    # (0, 1) and (1, 3) = the last step. rlax recursion on the discount tensor as oracle.
    r, v, boot, v_next, _, log_rhos = _vt_inputs()
    term = _t([[0, 1, 0, 0], [0, 0, 0, 1]])
    discount = 0.9 * (1 - term)
    lams = [[lam] * 4] * 2
    out = _rows(_rlax_vtrace, VT_V, v_next.tolist(), VT_R, discount.tolist(), log_rhos.exp().tolist(), lams)
    errors, pg_expected = _t([o[0] for o in out]), _t([o[1] for o in out])
    vs_d, pg_d = ref.vtrace(r, v, log_rhos, gamma=discount, lam=lam, last_value=boot)
    _close(vs_d - v, errors, EXACT)
    _close(pg_d, pg_expected, EXACT)
    vs, pg = ref.vtrace(r, v, log_rhos, gamma=0.9, lam=lam, terminated=term.to(flag_dtype), last_value=boot)
    _close(vs, vs_d, EXACT)
    _close(pg, pg_d, EXACT)


@pytest.mark.parametrize("lam_form", ["float", "per_step_BT"])
def test_vtrace_lambda_q_estimate_identity(lam_form):
    # test_lambda_q_estimate (lambda = 0.8, no published numbers): with rho_bar = c_bar = 1,
    # vs_t - V_t = min(1, rho_t) (q_t - V_t), i.e. our pg advantage (pg_rho_bar = rho_bar = 1).
    # Derivation: vs_t - V_t = rho_t [r_t + d_t V_{t+1} - V_t + d_t l_t (vs_{t+1} - V_{t+1})]
    #           = rho_t [r_t + d_t (l_t vs_{t+1} + (1 - l_t) V_{t+1}) - V_t] = rho_t (q_t - V_t).
    r, v, boot, v_next, d, log_rhos = _vt_inputs()
    lam = _lam_forms(0.8, r.shape)[lam_form]
    vs, pg = ref.vtrace(r, v, log_rhos, gamma=d, lam=lam, last_value=boot)
    _close(pg, vs - v, EXACT)
    out = _rows(_rlax_vtrace, VT_V, v_next.tolist(), VT_R, VT_DISCOUNT, log_rhos.exp().tolist(), [[0.8] * 4] * 2)
    _close(vs - v, [o[0] for o in out], EXACT)
    _close(pg, [o[1] for o in out], EXACT)


# test_vtrace_lambda_multiple_episodes_per_trace: discount / lambda patterns of one row of 8.
MULTI_EPISODE_CASES = {
    "scalar_lambda": ([0, 1, 1, 0, 0, 1, 1, 1], 1.0),
    "vector_lambda": ([0, 1, 1, 0, 0, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 1]),
    "vector_lambda_truncation": ([0, 1, 1, 1, 0, 1, 1, 1], [1, 1, 1, 0, 1, 1, 1, 1]),
}


@pytest.mark.parametrize("case", sorted(MULTI_EPISODE_CASES))
def test_vtrace_multiple_episodes_per_row(case):
    discount_list, lam_value = MULTI_EPISODE_CASES[case]
    gen = torch.Generator().manual_seed(0)
    r, rho, v = torch.rand(3, 1, 8, generator=gen, dtype=F64)
    v_next = torch.cat([v[:, 1:], _t([[10.0]])], dim=1)
    discount = _t([discount_list])
    lam = lam_value if isinstance(lam_value, float) else _t([lam_value])
    log_rhos = rho.log()
    vs, pg = ref.vtrace(r, v, log_rhos, gamma=discount, lam=lam, next_values=v_next)
    # The row splits at t = 4 into two independent traces.
    for sl in (slice(0, 4), slice(4, 8)):
        lam_sl = lam if isinstance(lam, float) else lam[:, sl]
        vs_p, pg_p = ref.vtrace(
            r[:, sl], v[:, sl], log_rhos[:, sl], gamma=discount[:, sl], lam=lam_sl, next_values=v_next[:, sl]
        )
        _close(vs[:, sl], vs_p, EXACT)
        _close(pg[:, sl], pg_p, EXACT)
    # The same row with flags: discount 0 -> terminated, lambda 0 under discount 1 -> truncated
    # (the trace is cut, the step still bootstraps from v_t); scalar gamma = 1, lam = 1.
    terminated = discount == 0
    lam_t = torch.as_tensor(lam, dtype=F64).expand_as(discount)
    truncated = (lam_t == 0) & ~terminated
    vs_f, pg_f = ref.vtrace(
        r, v, log_rhos, gamma=1.0, lam=1.0, terminated=terminated, truncated=truncated, next_values=v_next
    )
    _close(vs_f, vs, EXACT)
    _close(pg_f, pg, EXACT)
    out = _rlax_vtrace(
        v[0].tolist(), v_next[0].tolist(), r[0].tolist(), discount_list, rho[0].tolist(), lam_t[0].tolist()
    )
    _close(vs - v, [out[0]], EXACT)
    _close(pg, [out[1]], EXACT)


# ---------------------------------------------------------------------------------------
# rlax's own layout: one unbatched row at a time
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("row", [0, 1])
def test_unbatched_rows_match_published(row):
    r, d, v = _t(MS_R)[row], _t(MS_DISCOUNT)[row], _t(MS_V_NEXT)[row]
    _close(ref.td_lambda(r, gamma=d, lam=0.75, next_values=v), LAMBDA_RETURNS_075[row], MULTISTEP_ATOL)
    _close(ref.discounted_returns(r, gamma=d, last_value=v[-1]), DISCOUNTED_RETURNS[row], MULTISTEP_ATOL)
    gr, gv, gv_last, _, gd = (x[row] for x in _gae_inputs())
    adv, _ = ref.gae(gr, gv, gamma=gd, lam=0.7, last_value=gv_last)
    _close(adv, GAE_EXPECTED[0.7][row], GAE_ATOL[0.7])
    vr, vv, vboot, _, vd, vlr = (x[row] for x in _vt_inputs())
    vs, pg = ref.vtrace(vr, vv, vlr, gamma=vd, last_value=vboot)
    _close(vs - vv, VT_ERRORS[row], VTRACE_ATOL)
    _close(pg, VT_PG[row], VTRACE_ATOL)
    # An extra leading batch dim changes nothing.
    vs3, pg3 = ref.vtrace(
        vr[None, None], vv[None, None], vlr[None, None], gamma=vd[None, None], last_value=vboot[None, None]
    )
    _close(vs3[0, 0], vs, EXACT)
    _close(pg3[0, 0], pg, EXACT)
