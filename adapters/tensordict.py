"""TensorDict rollouts with TorchRL's key conventions.

Calling any rltriton estimator on a ``TensorDict`` reads the rollout from it, writes the
outputs into it in place and returns the same TensorDict::

    import rltriton as rt

    rt.GAE(0.99, 0.95)(td)            # writes td["advantage"], td["value_target"]
    rt.VTrace(0.99)(td)               # reads td["sample_log_prob"] and td["target_log_prob"]
    rt.GAE(0.99, 0.95).set_keys(value="critic_value")(td)

Keys
----
Each name below can be renamed with ``estimator.set_keys(name=key)``; ``key`` is the *full*
nested key (``set_keys(reward=("next", "r"))``; TorchRL's own ``set_keys(reward="r")``
means ``("next", "r")``, see the differences below). An unknown name raises ``KeyError``
naming it.

=========================  ==================================  ===============================================
name                       default key                         role
=========================  ==================================  ===============================================
``reward``                 ``("next", "reward")``              r_t
``done``                   ``("next", "done")``                done_t (cuts the recursion)
``terminated``             ``("next", "terminated")``          term_t (s_{t+1} terminal: no bootstrap)
``truncated``              ``("next", "truncated")``           trunc_t (cut, but s_{t+1} keeps its value)
``value``                  ``"state_value"``                   V(s_t)
``next_value``             ``("next", <value>)``               V(s_{t+1}), dense; used as ``next_values``
``bootstrap_value``        ``("next", "bootstrap_value")``     V(s_{t+1}) read only at truncated steps and t = T-1
``advantage``              ``"advantage"``                     written (GAE, V-trace; Retrace: none, see below)
``value_target``           ``"value_target"``                  written (GAE, V-trace, TD(lambda), returns)
``sample_log_prob``        ``"sample_log_prob"``               behaviour log mu(a_t|s_t) (V-trace, Retrace)
``target_log_prob``        ``"target_log_prob"``               target log pi(a_t|s_t) (V-trace, scalar Retrace)
``state_action_value``     ``"state_action_value"``            Q(s_t, a_t) (scalar Retrace)
``action_value``           ``"action_value"``                  Q(s_t, .) ``[*B, T, A]`` (action-value Retrace)
``target_probs``           ``"target_probs"``                  pi(.|s_t) ``[*B, T, A]`` (action-value Retrace)
``action``                 ``"action"``                        a_t: integer, or one-hot ``[*B, T, A]``
``next_action_value``      ``("next", <action_value>)``        Q(s_{t+1}, .) (optional bootstrap, Retrace)
``next_target_probs``      ``("next", <target_probs>)``        pi(.|s_{t+1}) (optional bootstrap, Retrace)
``q_target``               ``"q_target"``                      written (Retrace)
``source``                 ``("next", "reward")``              x_t (eligibility traces, prefix sums)
``trace`` / ``prefix_sum`` ``"trace"`` / ``"prefix_sum"``      written (traces, prefix sums)
=========================  ==================================  ===============================================

Which estimator reads which name: GAE, TD(lambda) and V-trace read ``reward``, the flags,
``value``, ``next_value`` / ``bootstrap_value``; V-trace adds the two log-probs;
``DiscountedReturn`` reads ``reward``, the flags and ``bootstrap_value`` only (a pure
reward-to-go unless a bootstrap is stored); Retrace is described below; traces and prefix
sums read ``source`` and ``done``.

Layout
------
The batch dims of ``td`` are ``[*B, T]``. Time is, in this order of precedence: the
``time_dim`` given to the call, the ``time_dim`` given to the estimator, the batch dim
named ``"time"`` (TorchRL's convention), the last batch dim. ``time_dim`` counts batch dims
(negative from the last batch dim). Every entry is ``[*B, T]`` or ``[*B, T, 1]`` (TorchRL
stores rewards, flags and values with a trailing singleton feature dim); outputs keep the
trailing dim when the reward or value entry had it. Per-action entries (``action_value``,
``target_probs``, one-hot ``action``) are ``[*B, T, A]``.

Next-state values and the bootstrap
-----------------------------------
The value of s_{t+1} used at step t (SPEC.md section 2) comes from, in this order:

1. ``("next", "state_value")`` when present: the *dense* value of the true next state at
   every step, as TorchRL's estimators store it. Exact at truncated steps and at the window
   edge, whatever the autoreset mode, because it is V of the real ``("next", obs)``.
2. otherwise ``values[t+1]`` (the values shifted along time) plus ``("next",
   "bootstrap_value")`` when present: a ``[*B, T]`` entry read only at truncated steps and
   at t = T-1 (fill the rest with anything finite, e.g. 0). This is the cheap form for a
   rollout that evaluated the critic once per observation: store V(final obs) at
   time-limit steps and V(s_T) in the last column.
3. otherwise ``values[t+1]`` alone: truncated steps and the window edge get no bootstrap
   (0), exactly as the tensor API without ``bootstrap_values``/``last_value``.

Storing both (1) and (2) is a ``ValueError``. A ``[*B]`` ``last_value`` cannot live in a
``[*B, T]`` TensorDict, so the window-edge value goes in the last column of
``bootstrap_value``.

Flags
-----
``done`` is the cut signal, as in TorchRL; ``terminated`` says which cuts have no next-state
value. From whichever of the three flags are present (bool, integer or float; nonzero = set):

* terminated = ``terminated``; if absent, ``done`` (SPEC section 5, and TorchRL's value
  estimators, which default the terminated key to done): a rollout that records ``done`` and
  ``truncated`` but not ``terminated`` gets no bootstrap at its done steps;
* truncated = (``done`` or ``terminated`` or ``truncated``) and not terminated. A step
  that is done but neither terminated nor truncated counts as truncated (TorchRL reads
  ``done & ~terminated`` the same way); a step both terminated and truncated is terminated.

At least one flag must be present (``KeyError`` naming the ``done`` key otherwise).

V-trace
-------
``log_rhos = target_log_prob - sample_log_prob``. When the behaviour key has its default
name and ``"sample_log_prob"`` is absent, ``"action_log_prob"`` is read instead (TorchRL >=
0.8 writes that name when composite log-prob aggregation is off). Rename the target key with
``set_keys(target_log_prob=...)``; it is never computed here (the TorchRL subclass
:class:`rltriton.adapters.torchrl.VTrace` calls the actor network like TorchRL does).

Retrace
-------
Two forms, chosen by which entries the TensorDict holds:

* scalar form, when ``state_action_value`` is present: Q(s_t, a_t) from it, E_pi Q(s_t, .)
  from ``value``, ``log_rhos = target_log_prob - sample_log_prob``; ``next_value`` (E_pi
  Q(s_{t+1}, .), dense) or ``bootstrap_value`` as for the other estimators.
* action-value form, otherwise: ``action_value`` and ``target_probs`` (``[*B, T, A]``),
  ``action`` (integer ``[*B, T]``/``[*B, T, 1]`` or one-hot ``[*B, T, A]``) and
  ``sample_log_prob``; the expectation and the ratios are formed by
  :func:`rltriton.retrace_from_action_values`. The bootstrap at truncated steps and at
  t = T-1 is ``sum_a next_target_probs * next_action_value`` when both ``("next", ...)``
  entries are present, else ``bootstrap_value``, else none.

Writes ``q_target`` (SPEC section 5), and ``advantage = q_target - E_pi Q(s_t, .)`` only
under a key named for it: ``rt.Retrace(0.99).set_keys(advantage="retrace_advantage")(td)``
(by default it is not written, so an ``"advantage"`` already in the TensorDict, e.g. a
GAE's, stays).

Gradients
---------
The torch backend is differentiable (the Triton kernels are not). With ``backend`` left to
the estimator's default ``"auto"``, a call made with grad enabled on an input that requires
grad runs the torch backend, so gradients reach e.g. a differentiable reward.

Differences from TorchRL's estimators
-------------------------------------
* Keys are full nested keys: ``set_keys(reward=("next", "r"))``, not ``set_keys(reward="r")``.
* No value network is called: the values must already be in the TensorDict (use
  :mod:`rltriton.adapters.torchrl` for TorchRL's value-network handling).
* ``("next", "state_value")`` is optional (TorchRL's GAE raises without it); see above.
* ``("next", "truncated")`` is read (TorchRL derives truncation from ``done & ~terminated``
  only; both agree on TorchRL-written data, where ``done = terminated | truncated``).
* TD(lambda) and returns write only ``value_target`` (TorchRL's TD estimators also write
  ``advantage``); outputs are float32 for float16/bfloat16 inputs (SPEC.md section 4).
* ``steps_to_next_obs`` (TorchRL's multi-step gamma) is not read here.
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import TensorDictBase
from torch import Tensor

from rltriton.assigner import CreditAssigner

NestedKey = str | tuple[str, ...]

_FLAGS: dict[str, NestedKey] = {
    "reward": ("next", "reward"),
    "done": ("next", "done"),
    "terminated": ("next", "terminated"),
    "truncated": ("next", "truncated"),
}
_VALUE: dict[str, NestedKey] = {
    "value": "state_value",
    "next_value": ("next", "state_value"),
    "bootstrap_value": ("next", "bootstrap_value"),
}
_LOG_PROBS: dict[str, NestedKey] = {"sample_log_prob": "sample_log_prob", "target_log_prob": "target_log_prob"}

_KEYS: dict[str, dict[str, NestedKey | None]] = {
    "GAE": {**_FLAGS, **_VALUE, "advantage": "advantage", "value_target": "value_target"},
    "TDLambda": {**_FLAGS, **_VALUE, "value_target": "value_target"},
    "DiscountedReturn": {**_FLAGS, "bootstrap_value": _VALUE["bootstrap_value"], "value_target": "value_target"},
    "VTrace": {**_FLAGS, **_VALUE, **_LOG_PROBS, "advantage": "advantage", "value_target": "value_target"},
    "Retrace": {
        **_FLAGS, **_VALUE, **_LOG_PROBS,
        "state_action_value": "state_action_value",
        "action_value": "action_value",
        "target_probs": "target_probs",
        "action": "action",
        "next_action_value": ("next", "action_value"),
        "next_target_probs": ("next", "target_probs"),
        # SPEC section 5 writes only q_target for Retrace: its advantage (q_target - E_pi Q)
        # is written only where set_keys names a key for it, so an "advantage" already in
        # the TensorDict (a GAE's, say) is not overwritten
        "advantage": None,
        "q_target": "q_target",
    },
    "EligibilityTrace": {"source": ("next", "reward"), "done": ("next", "done"), "trace": "trace"},
    "EpisodicPrefixSum": {"source": ("next", "reward"), "done": ("next", "done"), "prefix_sum": "prefix_sum"},
}

#: ``("next", <x>)`` keys that follow a renamed ``<x>`` unless renamed themselves
_FOLLOWS = {"next_value": "value", "next_action_value": "action_value", "next_target_probs": "target_probs"}

#: what each name is, for error messages
_ROLES = {
    "reward": "r_t",
    "done": "the done flags",
    "value": "V(s_t)",
    "sample_log_prob": "the behaviour log-probabilities",
    "target_log_prob": "the target-policy log-probabilities",
    "state_action_value": "Q(s_t, a_t)",
    "action_value": "Q(s_t, .)",
    "target_probs": "pi(.|s_t)",
    "action": "the actions",
    "source": "x_t",
}

#: TorchRL's name of the behaviour log-prob when composite log-prob aggregation is off
_TORCHRL_LOG_PROB = "action_log_prob"


def _kind(assigner: CreditAssigner) -> str:
    """The estimator's name in ``_KEYS`` (a subclass maps to its rltriton base)."""
    for cls in type(assigner).__mro__:
        if cls.__name__ in _KEYS:
            return cls.__name__
    raise TypeError(f"expected one of the rltriton estimators, got {type(assigner).__name__}")


def _table(assigner: CreditAssigner) -> dict[str, NestedKey]:
    return _KEYS[_kind(assigner)]


def check_key_names(assigner: CreditAssigner, keys: dict[str, Any]) -> None:
    """Raise ``KeyError`` naming any key ``set_keys`` does not know for this estimator,
    ``TypeError`` for a value that is not a (nested) key."""
    table = _table(assigner)
    for name, value in keys.items():
        if name not in table:
            raise KeyError(f"{name!r} is not a key of {type(assigner).__name__}; expected one of {sorted(table)}")
        if isinstance(value, tuple):
            if not value or not all(isinstance(v, str) for v in value):
                raise TypeError(f"{name}: expected a str or a non-empty tuple of str (a nested key), got {value!r}")
        elif not isinstance(value, str):
            raise TypeError(f"{name}: expected a str or a tuple of str (a nested key), got {type(value).__name__}")


def _as_tuple(key: NestedKey) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else tuple(key)


def keys_of(assigner: CreditAssigner) -> dict[str, NestedKey | None]:
    """The effective key table: the defaults, ``("next", <x>)`` keys following a renamed
    ``<x>`` (``next_value`` follows ``value``, as in TorchRL), then the names given to
    ``set_keys``. None: an output not written (Retrace's ``advantage`` unless named)."""
    keys = dict(_table(assigner))
    given = assigner._keys
    for follower, leader in _FOLLOWS.items():
        if follower in keys and leader in given and follower not in given:
            keys[follower] = ("next", *_as_tuple(given[leader]))
    keys.update(given)
    return keys


def _has(td: TensorDictBase, key: NestedKey) -> bool:
    return td.get(key, None) is not None


def _get(
    td: TensorDictBase, key: NestedKey, nbatch: int, required: bool = True, name: str | None = None
) -> tuple[Tensor | None, bool]:
    """An entry as ``[*B, T]`` (a trailing singleton feature dim squeezed) and whether it had one."""
    x = td.get(key, None)
    if x is None:
        if required:
            role = f" ({name}: {_ROLES[name]})" if name in _ROLES else (f" ({name})" if name else "")
            hint = f"; rename it with set_keys({name}=...)" if name else ""
            raise KeyError(
                f"expected the key {key!r}{role} in the TensorDict, got keys "
                f"[{_key_list(td)}]{hint}"
            )
        return None, False
    if not isinstance(x, Tensor):
        raise TypeError(f"{key!r}: expected a tensor entry, got {type(x).__name__}")
    if x.dim() == nbatch + 1 and x.shape[-1] == 1:
        return x.squeeze(-1), True
    return x, False


def _key_list(td: TensorDictBase) -> str:
    """The TensorDict's leaf keys, quoted with single quotes only (a ``KeyError`` message is
    shown through ``repr``: double quotes in it would escape every single quote)."""
    return ", ".join(sorted(repr(k) for k in td.keys(True, True)))


def _bool(x: Tensor | None) -> Tensor | None:
    if x is None:
        return None
    return x if x.dtype == torch.bool else x != 0


def resolve_flags(
    done: Tensor | None, terminated: Tensor | None, truncated: Tensor | None, done_key: NestedKey = "done"
) -> tuple[Tensor | None, Tensor | None]:
    """(terminated, truncated) for the estimators from whichever flags are present.

    terminated: ``terminated``; else ``done`` (SPEC section 5; TorchRL's estimators default
    the terminated key to done). truncated: ``(done | terminated | truncated) & ~terminated``
    (a done step that is not terminated is a truncation, as TorchRL reads ``done &
    ~terminated``).
    """
    d, te, tr = _bool(done), _bool(terminated), _bool(truncated)
    if d is None and te is None and tr is None:
        raise KeyError(f"expected a done key {done_key!r} (or terminated/truncated) in the TensorDict, got none")
    if te is None:
        if d is None:
            return None, tr
        if tr is None:
            return d, None  # done is terminated: nothing else cuts
        te = d
    others = [f for f in (d, tr) if f is not None]
    if not others:
        return te, None
    cut = te
    for f in others:
        cut = cut | f
    return te, cut & ~te


def autograd_backend(assigner: CreditAssigner, backend: str | None, *tensors: Any) -> str | None:
    """The backend to run: ``backend`` if given, the estimator's own unless it is
    ``"auto"``; with ``"auto"``, the (differentiable) torch backend when grad is enabled and
    an input requires grad, else ``None`` (the estimator's default)."""
    if backend is not None or assigner.backend != "auto":
        return backend
    if torch.is_grad_enabled() and any(isinstance(t, Tensor) and t.requires_grad for t in tensors):
        return "torch"
    return None


def _time_dim(assigner: CreditAssigner, td: TensorDictBase, time_dim: int | None) -> int:
    if time_dim is not None:
        return time_dim
    if assigner.time_dim is not None:
        return assigner.time_dim
    try:
        names = td.names
    except (AttributeError, RuntimeError, ValueError):  # pragma: no cover - depends on the TensorDict type
        names = None
    if names is not None and "time" in names:
        return list(names).index("time")
    return -1


def _actions(a: Tensor, n_actions: int, nb: int) -> Tensor:
    """Integer actions ``[*B, T]`` from integer ``[*B, T]`` / ``[*B, T, 1]`` or one-hot ``[*B, T, A]``."""
    if a.dim() == nb + 1:
        if a.shape[-1] == n_actions and (n_actions > 1 or a.dtype == torch.bool):
            return a.float().argmax(-1)  # one-hot
        if a.shape[-1] == 1:
            a = a.squeeze(-1)
    if a.dtype.is_floating_point:
        a = a.long()
    return a


def _next_values(
    td: TensorDictBase, keys: dict[str, NestedKey], nb: int
) -> dict[str, Tensor]:
    """``next_values`` or ``bootstrap_values`` from the TensorDict (at most one)."""
    nv, _ = _get(td, keys["next_value"], nb, required=False) if "next_value" in keys else (None, False)
    bv, _ = _get(td, keys["bootstrap_value"], nb, required=False) if "bootstrap_value" in keys else (None, False)
    if nv is not None and bv is not None:
        raise ValueError(
            f"expected at most one of the next-value key {keys['next_value']!r} and the bootstrap key "
            f"{keys['bootstrap_value']!r} in the TensorDict, got both"
        )
    if nv is not None:
        return {"next_values": nv}
    if bv is not None:
        return {"bootstrap_values": bv}
    return {}


def call_on_tensordict(
    assigner: CreditAssigner, td: TensorDictBase, *, time_dim: int | None = None, backend: str | None = None
) -> TensorDictBase:
    """Run ``assigner`` on a TensorDict rollout and write its outputs into ``td`` (in place).

    See the module docstring for the keys, the layout and the boundary rules.
    """
    if not isinstance(td, TensorDictBase):
        raise TypeError(f"expected a TensorDict, got {type(td).__name__}")
    keys = keys_of(assigner)
    nb = td.batch_dims
    if nb == 0:
        raise ValueError("expected a TensorDict with batch dims [*B, T], got batch_size []")
    kw: dict[str, Any] = {"time_dim": _time_dim(assigner, td, time_dim)}
    name = _kind(assigner)
    keep_dim = False
    if name in ("EligibilityTrace", "EpisodicPrefixSum"):
        x, keep_dim = _get(td, keys["source"], nb, name="source")
        done, _ = _get(td, keys["done"], nb, required=name == "EpisodicPrefixSum", name="done")
        if done is None and x.dim() > nb:
            # feature dims [*B, T, *F]: the tensor API learns [*B, T] from the flags, so
            # traces without a done entry get all-clear flags of the batch shape
            done = torch.zeros(x.shape[:nb], dtype=torch.bool, device=x.device)
        kw["backend"] = autograd_backend(assigner, backend, x)
        if name == "EligibilityTrace":
            outs = (assigner(x, dones=done, **kw),)
        else:
            outs = (assigner(x, done, **kw),)
    else:
        r, keep_dim = _get(td, keys["reward"], nb, name="reward")
        done, _ = _get(td, keys["done"], nb, required=False)
        term, _ = _get(td, keys["terminated"], nb, required=False)
        trunc, _ = _get(td, keys["truncated"], nb, required=False)
        kw["terminated"], kw["truncated"] = resolve_flags(done, term, trunc, keys["done"])
        if name == "DiscountedReturn":
            bv, _ = _get(td, keys["bootstrap_value"], nb, required=False)
            kw["backend"] = autograd_backend(assigner, backend, r, bv)
            outs = (assigner(r, bootstrap_values=bv, **kw),)
        elif name in ("GAE", "TDLambda"):
            kw.update(_next_values(td, keys, nb))
            # TD(lambda) needs no values when the dense next values are there
            v_required = name == "GAE" or "next_values" not in kw
            v, had = _get(td, keys["value"], nb, required=v_required, name="value")
            keep_dim = keep_dim or had
            kw["backend"] = autograd_backend(assigner, backend, r, v, *kw.values())
            out = assigner(r, v, **kw)
            outs = tuple(out) if isinstance(out, tuple) else (out,)
        elif name == "VTrace":
            kw.update(_next_values(td, keys, nb))
            mu = _behaviour_log_prob(assigner, td, keys, nb)
            pi, _ = _get(td, keys["target_log_prob"], nb, name="target_log_prob")
            v, had = _get(td, keys["value"], nb, name="value")
            keep_dim = keep_dim or had
            log_rhos = pi - mu
            kw["backend"] = autograd_backend(assigner, backend, r, v, log_rhos, *kw.values())
            outs = tuple(assigner(r, v, log_rhos, **kw))
        else:  # Retrace
            outs, had = _retrace(assigner, td, keys, nb, r, kw, backend)
            keep_dim = keep_dim or had
    for out_key, out in zip(assigner.output_keys, outs):
        if out_key is None or keys[out_key] is None:
            continue
        td.set(keys[out_key], out.unsqueeze(-1) if keep_dim and out.dim() == nb else out)
    return td


def _behaviour_log_prob(
    assigner: CreditAssigner, td: TensorDictBase, keys: dict[str, NestedKey], nb: int
) -> Tensor:
    key = keys["sample_log_prob"]
    if "sample_log_prob" not in assigner._keys and not _has(td, key) and _has(td, _TORCHRL_LOG_PROB):
        key = _TORCHRL_LOG_PROB
    mu, _ = _get(td, key, nb, name="sample_log_prob")
    return mu


def _retrace(
    assigner: CreditAssigner,
    td: TensorDictBase,
    keys: dict[str, NestedKey],
    nb: int,
    r: Tensor,
    kw: dict[str, Any],
    backend: str | None,
) -> tuple[tuple[Tensor, ...], bool]:
    mu = _behaviour_log_prob(assigner, td, keys, nb)
    if _has(td, keys["state_action_value"]) or not _has(td, keys["action_value"]):
        # scalar form (also the one whose missing keys are reported when neither form is there)
        if not _has(td, keys["state_action_value"]):
            raise KeyError(
                f"expected the key {keys['state_action_value']!r} (state_action_value: Q(s_t, a_t)) or the key "
                f"{keys['action_value']!r} (action_value: Q(s_t, .)) in the TensorDict, got keys "
                f"[{_key_list(td)}]"
            )
        kw.update(_next_values(td, keys, nb))
        q, had_q = _get(td, keys["state_action_value"], nb, name="state_action_value")
        v, had_v = _get(td, keys["value"], nb, name="value")
        pi, _ = _get(td, keys["target_log_prob"], nb, name="target_log_prob")
        log_rhos = pi - mu
        kw["backend"] = autograd_backend(assigner, backend, r, q, v, log_rhos, *kw.values())
        return tuple(assigner(r, q, v, log_rhos, **kw)), had_q or had_v
    av = td.get(keys["action_value"])
    tp = td.get(keys["target_probs"], None)
    if tp is None:
        _get(td, keys["target_probs"], nb, name="target_probs")  # raises the KeyError
    a_raw = td.get(keys["action"], None)
    if a_raw is None:
        _get(td, keys["action"], nb, name="action")  # raises the KeyError
    actions = _actions(a_raw, av.shape[-1], nb)
    nav = td.get(keys["next_action_value"], None)
    ntp = td.get(keys["next_target_probs"], None)
    bv, _ = _get(td, keys["bootstrap_value"], nb, required=False)
    if nav is not None and ntp is not None:
        if bv is not None:
            raise ValueError(
                f"expected at most one of the next-state entries {keys['next_action_value']!r}/"
                f"{keys['next_target_probs']!r} and the bootstrap key {keys['bootstrap_value']!r}, got both"
            )
        bv = (ntp * nav).sum(-1)
    kw["backend"] = autograd_backend(assigner, backend, r, av, tp, mu, bv)
    out = assigner.from_action_values(r, av, tp, actions, mu, bootstrap_values=bv, **kw)
    return tuple(out), False


__all__ = ["autograd_backend", "call_on_tensordict", "check_key_names", "keys_of", "resolve_flags"]
