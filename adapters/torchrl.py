"""Drop-in TorchRL value estimators computed by rltriton (optional dependency: ``torchrl``).

The one-line switch::

    # from torchrl.objectives.value import GAE
    from rltriton.adapters.torchrl import GAE

    advantage = GAE(gamma=0.99, lmbda=0.95, value_network=critic, average_gae=True)
    loss = ClipPPOLoss(actor, critic)
    loss.make_value_estimator(advantage)          # or make_value_estimator(GAE, gamma=..., ...)

(Not ``loss.value_estimator = advantage``: torchrl 0.14 silently ignores that assignment for
any estimator, since ``nn.Module.__setattr__`` registers the module before the property
setter can run, and the loss keeps its default GAE.)

:class:`GAE`, :class:`TD1Estimator`, :class:`TDLambdaEstimator` and :class:`VTrace` subclass
TorchRL's classes of the same name (``torchrl.objectives.value``). They take the same
constructor arguments (passed through unchanged, plus a keyword-only ``backend``) and keep
everything TorchRL does around the recursion: the value network calls (``params`` /
``target_params``, ``shifted``, chunking, vmap, ``hold_out_net``), ``set_keys`` and
``tensor_keys``, ``time_dim`` (argument, attribute or the ``"time"``-named dim),
``average_gae`` / ``average_adv`` / ``average_rewards`` (also per ``group_key``),
``differentiable``, ``skip_existing``, ``steps_to_next_obs``, ``auto_reset_env``, the
``shifted_valid`` masking, ``dispatch`` (keyword-tensor calls) and ``value_estimate``. Only
the recursion itself is replaced by :func:`rltriton.gae`, :func:`rltriton.td_lambda` or
:func:`rltriton.vtrace`, so a loss module (``ClipPPOLoss``, ``A2CLoss``, ...) trains with
them exactly as with TorchRL's own: same advantages and value targets up to float
rounding (TorchRL's vectorised paths also drop terms of the geometric series below 1e-7;
rltriton does not).

The functions :func:`generalized_advantage_estimate`, :func:`td1_return_estimate`,
:func:`td_lambda_return_estimate` and :func:`vtrace_advantage_estimate` are drop-ins for
TorchRL's functionals of the same names (``torchrl.objectives.value.functional``; the
``vec_*`` names are aliases): same positional arguments, ``[*B, T, *F]`` tensors with time at
``time_dim=-2``, same return values.

How TorchRL's flags map to rltriton's
-------------------------------------
TorchRL passes ``done`` (cuts the recursion) and ``terminated`` (the next state has no value;
defaults to ``done``) with a dense ``next_state_value``. They become ``terminated`` and
``truncated = done & ~terminated`` with ``next_values = next_state_value`` (SPEC.md
section 2), which gives the same recursion. The one input on which the two differ is
inconsistent flags, ``terminated`` set where ``done`` is not: TorchRL drops the bootstrap but
continues the recursion, rltriton treats the step as a termination (cut).

V-trace and truncated steps
---------------------------
TorchRL's functional V-trace up to 0.13 computed the policy-gradient advantage at step t
from ``vs[t+1]`` of the next entry along time even when step t was done: at a *truncated*
step (time limit, ``done & ~terminated``) that entry belongs to the next episode, so the
advantage bootstrapped from the next episode's first state. rltriton follows SPEC.md: at a
done step the advantage bootstraps from ``next_state_value`` (the true next state's value;
0 after a termination). TorchRL 0.14 made the same fix (``torch.where(done,
next_state_value, vs_t_plus_1)``), so on TorchRL >= 0.14 the two agree; on older versions
they differ exactly at truncated steps. The value targets ``vs`` always agreed.

Other differences
-----------------
* Outputs have the dtype of the values, as TorchRL's (rltriton computes in float32, or
  float64 for float64 inputs, and casts back). With float64 values TorchRL rounds gamma to
  float32 (``gamma * (~done).int()`` is a float32 tensor), rltriton does not: TorchRL's
  float64 results are off by about 1e-7 relative per step of horizon. TorchRL's vectorised
  TD(1)/TD(lambda) fail on float64 values with a per-step float32 gamma
  (``steps_to_next_obs``); these classes do not.
* Gradients: the torch backend is differentiable, the Triton kernels are not. With
  ``backend="auto"`` (the default), a call made with grad enabled on an input that requires
  grad (``differentiable=True`` with a reward or value that carries grad) runs rltriton's
  torch backend; otherwise CUDA tensors run the Triton kernels.
* ``rolling_gamma=False`` of TorchRL's TD functionals (each gamma tied to the whole upcoming
  trajectory) is not an affine scan: it raises ``NotImplementedError``.
* ``VTrace`` reads ``rho_thresh`` / ``c_thresh`` as Python floats (one device read when
  the module lives on a GPU).
* ``TD0Estimator`` is not replaced: it has no recursion along time.

This module imports torchrl private helpers (``_call_value_nets``, ``_call_actor_net``,
``hold_out_net``, ...); it is written against torchrl 0.14.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import torch
from tensordict import TensorDictBase, is_tensor_collection
from tensordict.nn import dispatch
from torch import Tensor

try:
    from torchrl.objectives.value import advantages as _adv
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError("rltriton.adapters.torchrl needs torchrl (pip install torchrl)") from err

import rltriton as rt
from rltriton.assigner import check_backend

__all__ = [
    "GAE",
    "TD1Estimator",
    "TDLambdaEstimator",
    "VTrace",
    "generalized_advantage_estimate",
    "td1_return_estimate",
    "td_lambda_return_estimate",
    "vec_generalized_advantage_estimate",
    "vec_td1_return_estimate",
    "vec_td_lambda_return_estimate",
    "vtrace_advantage_estimate",
]


# --------------------------------------------------------------------------------------
# functionals (TorchRL's signatures)
# --------------------------------------------------------------------------------------


def _pick_backend(backend: str | None, *tensors: Any) -> str:
    """``backend`` unless ``None``/"auto"; then torch when autograd needs it, else auto."""
    if backend is not None and backend != "auto":
        return check_backend(backend)
    if torch.is_grad_enabled() and any(isinstance(t, Tensor) and t.requires_grad for t in tensors):
        return "torch"
    return "auto"


def _flags(done: Tensor, terminated: Tensor | None) -> tuple[Tensor, Tensor | None]:
    """TorchRL's (done, terminated) as rltriton's (terminated, truncated)."""
    d = done if done.dtype == torch.bool else done != 0
    if terminated is None:
        return d, None
    te = terminated if terminated.dtype == torch.bool else terminated != 0
    return te, d & ~te


def _coef(c: Any) -> Any:
    """gamma / lmbda: numbers pass; a one-element CPU tensor without grad becomes a float
    (free, and rltriton's scalar path); any other tensor is passed as a per-step tensor
    (no device read)."""
    if isinstance(c, Tensor) and c.numel() == 1 and c.device.type == "cpu" and not c.requires_grad:
        return float(c)
    return c


def _cast(out: Tensor, like: Tensor) -> Tensor:
    return out if out.dtype == like.dtype else out.to(like.dtype)


def _check_shapes(*tensors: Tensor) -> None:
    shapes = {tuple(t.shape) for t in tensors if t is not None}
    if len(shapes) > 1:
        raise RuntimeError(
            "All input tensors (value, reward and done states) must share a unique shape; "
            f"got shapes {sorted(shapes)}"
        )


def generalized_advantage_estimate(
    gamma: float | Tensor,
    lmbda: float | Tensor,
    state_value: Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor | None = None,
    *,
    time_dim: int = -2,
    backend: str | None = None,
) -> tuple[Tensor, Tensor]:
    """TorchRL's ``generalized_advantage_estimate`` computed by :func:`rltriton.gae`.

    Tensors are ``[*B, T, *F]`` with time at ``time_dim``; returns ``(advantage,
    value_target)`` in the dtype of ``next_state_value``.
    """
    _check_shapes(state_value, next_state_value, reward, done, terminated)
    term, trunc = _flags(done, terminated)
    b = _pick_backend(backend, gamma, lmbda, state_value, next_state_value, reward)
    adv, target = rt.gae(
        reward, state_value, gamma=_coef(gamma), lam=_coef(lmbda), terminated=term, truncated=trunc,
        next_values=next_state_value, time_dim=time_dim, backend=b,
    )
    return _cast(adv, next_state_value), _cast(target, next_state_value)


def td_lambda_return_estimate(
    gamma: float | Tensor,
    lmbda: float | Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor | None = None,
    rolling_gamma: bool | None = None,
    *,
    time_dim: int = -2,
    backend: str | None = None,
) -> Tensor:
    """TorchRL's ``td_lambda_return_estimate`` computed by :func:`rltriton.td_lambda`.

    ``rolling_gamma`` must be ``None`` or ``True`` (per-step gammas, each tied to its step).
    """
    if rolling_gamma is False:
        raise NotImplementedError(
            "rolling_gamma=False (each gamma tied to the whole upcoming trajectory) is not an affine scan; "
            "use TorchRL's own td_lambda_return_estimate for it"
        )
    _check_shapes(next_state_value, reward, done, terminated)
    term, trunc = _flags(done, terminated)
    b = _pick_backend(backend, gamma, lmbda, next_state_value, reward)
    out = rt.td_lambda(
        reward, gamma=_coef(gamma), lam=_coef(lmbda), terminated=term, truncated=trunc,
        next_values=next_state_value, time_dim=time_dim, backend=b,
    )
    return _cast(out, next_state_value)


def td1_return_estimate(
    gamma: float | Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor | None = None,
    rolling_gamma: bool | None = None,
    *,
    time_dim: int = -2,
    backend: str | None = None,
) -> Tensor:
    """TorchRL's ``td1_return_estimate``: TD(lambda) with lambda = 1."""
    return td_lambda_return_estimate(
        gamma, 1.0, next_state_value, reward, done, terminated, rolling_gamma, time_dim=time_dim, backend=backend
    )


def vtrace_advantage_estimate(
    gamma: float | Tensor,
    log_pi: Tensor,
    log_mu: Tensor,
    state_value: Tensor,
    next_state_value: Tensor,
    reward: Tensor,
    done: Tensor,
    terminated: Tensor | None = None,
    rho_thresh: float | Tensor = 1.0,
    c_thresh: float | Tensor = 1.0,
    time_dim: int = -2,
    *,
    backend: str | None = None,
) -> tuple[Tensor, Tensor]:
    """TorchRL's ``vtrace_advantage_estimate`` computed by :func:`rltriton.vtrace`
    (lambda = 1, ``pg_rho_bar = rho_thresh``). Returns ``(advantage, vs)``.

    ``log_pi`` is the target (current) policy's log-probability, ``log_mu`` the behaviour
    (collection) policy's. At a done step the advantage bootstraps from
    ``next_state_value`` (see the module docstring for TorchRL <= 0.13).
    """
    _check_shapes(state_value, next_state_value, reward, done)
    term, trunc = _flags(done, terminated)
    log_rhos = log_pi - log_mu
    rho = float(rho_thresh)
    b = _pick_backend(backend, gamma, state_value, next_state_value, reward, log_rhos)
    vs, adv = rt.vtrace(
        reward, state_value, log_rhos, gamma=_coef(gamma), lam=1.0, rho_bar=rho, c_bar=float(c_thresh),
        pg_rho_bar=rho, terminated=term, truncated=trunc, next_values=next_state_value, time_dim=time_dim,
        backend=b,
    )
    return _cast(adv, state_value), _cast(vs, state_value)


vec_generalized_advantage_estimate = generalized_advantage_estimate
vec_td_lambda_return_estimate = td_lambda_return_estimate
vec_td1_return_estimate = td1_return_estimate


# --------------------------------------------------------------------------------------
# modules
# --------------------------------------------------------------------------------------


def _require(tensordict: TensorDictBase, key: Any, name: str) -> Tensor:
    """``tensordict[key]``, or a ``KeyError`` naming the key (tensordict returns ``None``
    for a missing key, which TorchRL's estimators would only trip over later)."""
    x = tensordict.get(key, None)
    if x is None:
        raise KeyError(
            f"expected the key {key!r} ({name}) in the TensorDict; rename it with set_keys({name}=...)"
        )
    return x


class _RLTritonEstimator:
    """What the four subclasses share: the ``backend`` choice and TorchRL's value handling."""

    backend: str

    def _init_backend(self, backend: str) -> None:
        self.backend = check_backend(backend)

    def _as_value_shape(self, x: Tensor | None, value: Tensor) -> Tensor | None:
        """A reward/flag entry laid out like the values (``[*B, T]`` vs ``[*B, T, 1]``)."""
        if x is None or x.shape == value.shape:
            return x
        if x.numel() == value.numel():
            return x.reshape(value.shape)
        return x

    def _values(
        self,
        tensordict: TensorDictBase,
        params: TensorDictBase | None,
        target_params: TensorDictBase | None,
        *,
        always_hold: bool = False,
    ) -> tuple[Tensor, Tensor]:
        """V(s_t) and V(s_{t+1}) as TorchRL's estimators obtain them: from the value network
        (under ``hold_out_net``, next values detached; ``shifted`` writes ``"shifted_valid"``),
        or from the TensorDict when there is no value network."""
        keys = self.tensor_keys
        if self.value_network is not None:
            if params is not None:
                params = params.detach()
                if target_params is None:
                    target_params = params.clone(False)
            hold = always_hold or (params is None and target_params is None)
            with _adv.hold_out_net(self.value_network) if hold else nullcontext():
                value, next_value, valid = self._call_value_nets(
                    data=tensordict,
                    params=params,
                    next_params=target_params,
                    single_call=self.shifted,
                    value_key=keys.value,
                    detach_next=True,
                    vmap_randomness=self.vmap_randomness,
                )
                if valid is not None:
                    tensordict.set("shifted_valid", valid)
            return value, next_value
        value = tensordict.get(keys.value, None)
        next_value = tensordict.get(("next", keys.value), None)
        if value is None:
            raise ValueError(f"The tensor with key {keys.value} is missing, and no value network was provided.")
        if next_value is None:
            raise ValueError(
                f"The tensor with key {('next', keys.value)} is missing, and no value network was provided."
            )
        return value, next_value

    def _gamma(self, tensordict: TensorDictBase, reward: Tensor) -> Tensor:
        if self.gamma.device != reward.device:
            self.gamma = self.gamma.to(reward.device)
        gamma = self.gamma
        steps = tensordict.get(self.tensor_keys.steps_to_next_obs, None)
        if steps is not None:
            gamma = gamma ** steps.view_as(reward)
        return gamma

    def _lmbda(self, reward: Tensor) -> Tensor:
        if self.lmbda.device != reward.device:
            self.lmbda = self.lmbda.to(reward.device)
        return self.lmbda

    def _signals(self, data: TensorDictBase) -> tuple[Tensor, Tensor, Tensor]:
        keys = self.tensor_keys
        reward = _require(data, ("next", keys.reward), "reward")
        done = _require(data, ("next", keys.done), "done")
        terminated = data.get(("next", keys.terminated), default=done)
        return reward, done, terminated


class GAE(_RLTritonEstimator, _adv.GAE):
    """TorchRL's :class:`~torchrl.objectives.value.GAE`, computed by :func:`rltriton.gae`.

    Same constructor (``gamma``, ``lmbda``, ``value_network``, ``average_gae``,
    ``differentiable``, ``vectorized`` (ignored: rltriton is always vectorised),
    ``skip_existing``, ``shifted``, ``device``, ``time_dim``, ``auto_reset_env``, ...) plus
    ``backend`` (``"auto"``, ``"triton"``, ``"torch"`` or ``"reference"``). Reads
    ``"state_value"`` / ``("next", "state_value")`` (or calls the value network),
    ``("next", "reward")``, ``("next", "done")``, ``("next", "terminated")``; writes
    ``"advantage"`` and ``"value_target"``.
    """

    def __init__(self, *args: Any, backend: str = "auto", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._init_backend(backend)

    def _compute(
        self, gamma: Any, lmbda: Any, value: Tensor, next_value: Tensor, reward: Tensor, done: Tensor,
        terminated: Tensor, time_dim: int,
    ) -> tuple[Tensor, Tensor]:
        reward = self._as_value_shape(reward, value)
        done = self._as_value_shape(done, value)
        terminated = self._as_value_shape(terminated, value)
        return generalized_advantage_estimate(
            gamma, lmbda, value, next_value, reward, done, terminated, time_dim=time_dim, backend=self.backend
        )

    @_adv._self_set_skip_existing
    @_adv._self_set_grad_enabled
    @dispatch
    def forward(
        self,
        tensordict: TensorDictBase,
        *,
        params: TensorDictBase | None = None,
        target_params: TensorDictBase | None = None,
        time_dim: int | None = None,
    ) -> TensorDictBase:
        """Advantages and value targets, written into ``tensordict`` (see TorchRL's ``GAE.forward``)."""
        if tensordict.batch_dims < 1:
            raise RuntimeError(
                "Expected input tensordict to have at least one dimension, got "
                f"tensordict.batch_size = {tensordict.batch_size}"
            )
        reward = _require(tensordict, ("next", self.tensor_keys.reward), "reward")
        gamma = self._gamma(tensordict, reward)
        lmbda = self._lmbda(reward)
        value, next_value = self._values(tensordict, params, target_params)
        time_dim = self._get_time_dim(time_dim, tensordict)
        valid = tensordict.get("shifted_valid", default=None)
        data = self._prepare_shifted_tensordict(tensordict, valid, time_dim)
        reward, done, terminated = self._prepare_signals(*self._signals(data), value)
        if self.auto_reset_env:
            truncated = self._broadcast_optional(tensordict.get(("next", "truncated")), value)
            # TorchRL adds gamma * V(s_t) to the reward of truncated steps and treats every
            # done as terminal (its model of auto-resetting envs without a next obs)
            reward = torch.where(truncated.bool(), reward + gamma * value, reward)
            terminated = done
        adv, value_target = self._compute(gamma, lmbda, value, next_value, reward, done, terminated, time_dim)
        if self.average_gae:
            adv = self._normalize_advantage(adv, valid, groups=self._group_ids(tensordict))
        tensordict.set(self.tensor_keys.advantage, adv)
        tensordict.set(self.tensor_keys.value_target, value_target)
        self._mask_shifted_output(tensordict, valid)
        return tensordict

    def value_estimate(
        self,
        tensordict: TensorDictBase,
        params: TensorDictBase | None = None,
        target_params: TensorDictBase | None = None,
        time_dim: int | None = None,
        **kwargs: Any,
    ) -> Tensor:
        """The GAE value targets (advantage + value), as TorchRL's ``GAE.value_estimate``."""
        if tensordict.batch_dims < 1:
            raise RuntimeError(
                "Expected input tensordict to have at least one dimensions, got"
                f"tensordict.batch_size = {tensordict.batch_size}"
            )
        reward = _require(tensordict, ("next", self.tensor_keys.reward), "reward")
        gamma = self._gamma(tensordict, reward)
        lmbda = self._lmbda(reward)
        time_dim = self._get_time_dim(time_dim, tensordict)
        if self.is_stateless and params is None:
            raise RuntimeError("Expected params to be passed to advantage module but got none.")
        value, next_value = self._values(tensordict, params, target_params)
        valid = tensordict.get("shifted_valid", default=None)
        data = self._prepare_shifted_tensordict(tensordict, valid, time_dim)
        reward, done, terminated = self._prepare_signals(*self._signals(data), value)
        _, value_target = self._compute(gamma, lmbda, value, next_value, reward, done, terminated, time_dim)
        return value_target


class _TDValueEstimate(_RLTritonEstimator):
    """``value_estimate`` of TorchRL's TD(1) / TD(lambda) estimators; ``forward`` is TorchRL's
    (it calls the value network and then ``self.value_estimate``)."""

    _reward_eps: float

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """TorchRL's ``forward`` (value network, ``shifted``, ``advantage = target - value``),
        after checking the TensorDict holds what it needs when there is no value network."""
        if args and isinstance(args[0], TensorDictBase) and self.value_network is None:
            self._values(args[0], None, None)  # raises a ValueError naming a missing value key
        return super().forward(*args, **kwargs)

    def _lambda_for_call(self, reward: Tensor) -> Any:
        raise NotImplementedError

    def value_estimate(
        self,
        tensordict: TensorDictBase,
        target_params: TensorDictBase | None = None,
        next_value: Tensor | None = None,
        time_dim: int | None = None,
        **kwargs: Any,
    ) -> Tensor:
        """TD(lambda) returns from ``("next", "reward")``, the flags and the next values."""
        keys = self.tensor_keys
        reward = _require(tensordict, ("next", keys.reward), "reward")
        gamma = self._gamma(tensordict, reward)
        lmbda = self._lambda_for_call(reward)
        if self.average_rewards:
            groups = self._group_ids(tensordict)
            if groups is None:
                reward = reward - reward.mean()
                reward = reward / reward.std().clamp_min(self._reward_eps)
            else:
                reward = _adv._standardize_by_group(reward, groups, eps=self._reward_eps)
            tensordict.set(("next", keys.reward), reward)  # as TorchRL: later readers see them
        if next_value is None:
            next_value = self._next_value(tensordict, target_params, kwargs=kwargs)
            if next_value is None:
                raise ValueError(
                    f"The tensor with key {('next', keys.value)} is missing, and no value network was provided."
                )
        time_dim = self._get_time_dim(time_dim, tensordict)
        valid = tensordict.get("shifted_valid", default=None)
        data = self._prepare_shifted_tensordict(tensordict, valid, time_dim)
        reward, done, terminated = self._signals(data)
        reward = self._as_value_shape(reward, next_value)
        done = self._as_value_shape(done, next_value)
        terminated = self._as_value_shape(terminated, next_value)
        return td_lambda_return_estimate(
            gamma, lmbda, next_value, reward, done, terminated, time_dim=time_dim, backend=self.backend
        )


class TD1Estimator(_TDValueEstimate, _adv.TD1Estimator):
    """TorchRL's :class:`~torchrl.objectives.value.TD1Estimator` (Monte-Carlo returns
    bootstrapped at done-but-not-terminated steps and the window edge), computed by
    :func:`rltriton.td_lambda` with ``lam = 1``. Same constructor plus ``backend``."""

    _reward_eps = 1e-5

    def __init__(self, *args: Any, backend: str = "auto", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._init_backend(backend)

    def _lambda_for_call(self, reward: Tensor) -> Any:
        return 1.0


class TDLambdaEstimator(_TDValueEstimate, _adv.TDLambdaEstimator):
    """TorchRL's :class:`~torchrl.objectives.value.TDLambdaEstimator`, computed by
    :func:`rltriton.td_lambda`. Same constructor (``vectorized`` is ignored) plus ``backend``."""

    _reward_eps = 1e-4

    def __init__(self, *args: Any, backend: str = "auto", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._init_backend(backend)

    def _lambda_for_call(self, reward: Tensor) -> Any:
        return self._lmbda(reward)


class VTrace(_RLTritonEstimator, _adv.VTrace):
    """TorchRL's :class:`~torchrl.objectives.value.VTrace`, computed by :func:`rltriton.vtrace`.

    Same constructor (``gamma``, ``actor_network``, ``value_network``, ``rho_thresh``,
    ``c_thresh``, ``average_adv``, ...) plus ``backend``. The behaviour log-probability is
    read from ``sample_log_prob`` (TorchRL's key, ``"action_log_prob"`` by default in 0.14);
    the target one is computed by calling ``actor_network``, as TorchRL does. At a truncated
    step the advantage bootstraps from ``("next", "state_value")`` (see the module docstring).
    """

    def __init__(self, *args: Any, backend: str = "auto", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._init_backend(backend)

    @_adv._self_set_skip_existing
    @_adv._self_set_grad_enabled
    @dispatch
    def forward(
        self,
        tensordict: TensorDictBase,
        *,
        params: TensorDictBase | None = None,
        target_params: TensorDictBase | None = None,
        time_dim: int | None = None,
    ) -> TensorDictBase:
        """V-trace advantages and value targets, written into ``tensordict``."""
        if tensordict.batch_dims < 1:
            raise RuntimeError(
                "Expected input tensordict to have at least one dimensions, got "
                f"tensordict.batch_size = {tensordict.batch_size}"
            )
        keys = self.tensor_keys
        reward = _require(tensordict, ("next", keys.reward), "reward")
        gamma = self._gamma(tensordict, reward)
        value, next_value = self._values(tensordict, params, target_params, always_hold=True)

        lp = _adv._maybe_get_or_select(tensordict, keys.sample_log_prob)
        if is_tensor_collection(lp):
            lp = lp.sum(dim="feature", reduce=True)
        log_mu = lp.view_as(value)
        with _adv.hold_out_net(self.actor_network):
            log_pi = _adv._call_actor_net(
                actor_net=self.actor_network, data=tensordict, params=None, log_prob_key=keys.sample_log_prob
            ).view_as(value)

        time_dim = self._get_time_dim(time_dim, tensordict)
        valid = tensordict.get("shifted_valid", default=None)
        data = self._prepare_shifted_tensordict(tensordict, valid, time_dim)
        reward = self._as_value_shape(data.get(("next", keys.reward)), value)
        done = self._as_value_shape(_require(data, ("next", keys.done), "done"), value)
        terminated = self._as_value_shape(data.get(("next", keys.terminated), None), value)
        adv, value_target = vtrace_advantage_estimate(
            gamma, log_pi, log_mu, value, next_value, reward, done, terminated,
            rho_thresh=self.rho_thresh, c_thresh=self.c_thresh, time_dim=time_dim, backend=self.backend,
        )
        if self.average_adv:
            groups = self._group_ids(tensordict)
            if groups is None:
                adv = (adv - adv.mean()) / adv.std().clamp_min(1e-5)
            else:
                adv = _adv._standardize_by_group(adv, groups, eps=1e-5)
        tensordict.set(keys.advantage, adv)
        tensordict.set(keys.value_target, value_target)
        self._mask_shifted_output(tensordict, valid)
        return tensordict
