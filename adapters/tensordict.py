"""TensorDict rollouts with TorchRL's key conventions.

``GAE(0.99, 0.95)(td)`` reads the rollout from ``td`` and writes the outputs into it in
place, returning the same TensorDict. Keys (TorchRL's defaults, renamable with
``set_keys``):

========================  ==============================  ===================================
name                      default key                     role
========================  ==============================  ===================================
``reward``                ``("next", "reward")``          r_t
``done``                  ``("next", "done")``            done_t
``terminated``            ``("next", "terminated")``      term_t (absent: ``done``)
``truncated``             ``("next", "truncated")``       trunc_t (absent: done and not terminated)
``value``                 ``"state_value"``               V(s_t)
``next_value``            ``("next", "state_value")``     V(s_{t+1}), used as ``next_values`` when present
``advantage``             ``"advantage"``                 written (GAE, V-trace, Retrace)
``value_target``          ``"value_target"``              written (GAE, V-trace, TD(lambda), returns)
``sample_log_prob``       ``"sample_log_prob"``           behaviour log mu(a_t|s_t) (V-trace, Retrace)
``target_log_prob``       ``"target_log_prob"``           target log pi(a_t|s_t) (V-trace, Retrace)
``state_action_value``    ``"state_action_value"``        Q(s_t, a_t) (Retrace)
``q_target``              ``"q_target"``                  written (Retrace)
``source``                ``("next", "reward")``          x_t (eligibility traces, prefix sums)
``trace`` / ``prefix_sum````"trace"`` / ``"prefix_sum"``  written (traces, prefix sums)
========================  ==============================  ===================================

Layout: the batch dims of ``td`` are ``[*B, T]`` with time the last batch dim unless
``time_dim`` says otherwise. Entries may carry one trailing singleton feature dim
(``[*B, T, 1]``, as TorchRL writes rewards, flags and values); outputs keep it when the
reward or value entry had it. When ``next_value`` is absent, the values are shifted
(``values[t+1]``) and the window edge and truncated steps get no continuation (0).
Retrace reads ``state_value`` as E_pi Q(s_t, .) and ``next_value`` as E_pi Q(s_{t+1}, .).
"""

from __future__ import annotations

from typing import Any

from tensordict import TensorDictBase
from torch import Tensor

from rltriton.assigner import CreditAssigner

NestedKey = str | tuple[str, ...]

_COMMON = {
    "reward": ("next", "reward"),
    "done": ("next", "done"),
    "terminated": ("next", "terminated"),
    "truncated": ("next", "truncated"),
}
_VALUE = {"value": "state_value", "next_value": ("next", "state_value")}

_KEYS: dict[str, dict[str, NestedKey]] = {
    "GAE": {**_COMMON, **_VALUE, "advantage": "advantage", "value_target": "value_target"},
    "TDLambda": {**_COMMON, **_VALUE, "value_target": "value_target"},
    "DiscountedReturn": {**_COMMON, "value_target": "value_target"},
    "VTrace": {
        **_COMMON, **_VALUE, "sample_log_prob": "sample_log_prob", "target_log_prob": "target_log_prob",
        "advantage": "advantage", "value_target": "value_target",
    },
    "Retrace": {
        **_COMMON, **_VALUE, "sample_log_prob": "sample_log_prob", "target_log_prob": "target_log_prob",
        "state_action_value": "state_action_value", "advantage": "advantage", "q_target": "q_target",
    },
    "EligibilityTrace": {"source": ("next", "reward"), "done": ("next", "done"), "trace": "trace"},
    "EpisodicPrefixSum": {"source": ("next", "reward"), "done": ("next", "done"), "prefix_sum": "prefix_sum"},
}


def _table(assigner: CreditAssigner) -> dict[str, NestedKey]:
    for cls in type(assigner).__mro__:
        if cls.__name__ in _KEYS:
            return _KEYS[cls.__name__]
    raise TypeError(f"expected one of the rltriton estimators, got {type(assigner).__name__}")


def check_key_names(assigner: CreditAssigner, keys: dict[str, Any]) -> None:
    """Raise ``KeyError`` naming any key ``set_keys`` does not know for this estimator."""
    table = _table(assigner)
    for name, value in keys.items():
        if name not in table:
            raise KeyError(f"{name!r} is not a key of {type(assigner).__name__}; expected one of {sorted(table)}")
        if not isinstance(value, (str, tuple)):
            raise TypeError(f"{name}: expected a str or a tuple of str (a nested key), got {type(value).__name__}")


def keys_of(assigner: CreditAssigner) -> dict[str, NestedKey]:
    """The effective key table: defaults, ``next_value`` following a renamed ``value``,
    then the names given to ``set_keys``."""
    keys = dict(_table(assigner))
    given = assigner._keys
    if "value" in given and "next_value" in keys and "next_value" not in given:
        v = given["value"]
        keys["next_value"] = ("next", *((v,) if isinstance(v, str) else v))
    keys.update(given)
    return keys


def _get(td: TensorDictBase, key: NestedKey, nbatch: int, required: bool = True) -> tuple[Tensor | None, bool]:
    """An entry as ``[*B, T]`` (a trailing singleton feature dim squeezed) and whether it had one."""
    x = td.get(key, None)
    if x is None:
        if required:
            raise KeyError(f"expected the key {key!r} in the TensorDict, got keys {list(td.keys(True, True))}")
        return None, False
    if x.dim() == nbatch + 1 and x.shape[-1] == 1:
        return x.squeeze(-1), True
    return x, False


def _flags(td: TensorDictBase, keys: dict[str, NestedKey], nb: int) -> tuple[Tensor | None, Tensor | None]:
    done, _ = _get(td, keys["done"], nb, required=False)
    term, _ = _get(td, keys["terminated"], nb, required=False) if "terminated" in keys else (None, False)
    trunc, _ = _get(td, keys["truncated"], nb, required=False) if "truncated" in keys else (None, False)
    if term is None:
        term = done
    if trunc is None and done is not None and term is not None and done is not term:
        trunc = (done != 0) & ~(term != 0)
    if term is None and trunc is None:
        raise KeyError(f"expected a done key {keys['done']!r} (or terminated/truncated) in the TensorDict, got none")
    return term, trunc


def call_on_tensordict(
    assigner: CreditAssigner, td: TensorDictBase, *, time_dim: int | None = None, backend: str | None = None
) -> TensorDictBase:
    """Run ``assigner`` on a TensorDict rollout and write its outputs into ``td``."""
    keys = keys_of(assigner)
    nb = td.batch_dims
    if nb == 0:
        raise ValueError("expected a TensorDict with batch dims [*B, T], got batch_size []")
    td_time = assigner.time_dim if time_dim is None else time_dim
    kw: dict[str, Any] = {"time_dim": -1 if td_time is None else td_time, "backend": backend}
    name = type(assigner).__name__
    keep_dim = False
    if name in ("EligibilityTrace", "EpisodicPrefixSum"):
        x, keep_dim = _get(td, keys["source"], nb)
        done, _ = _get(td, keys["done"], nb, required=name == "EpisodicPrefixSum")
        if name == "EligibilityTrace":
            outs = (assigner(x, dones=done, **kw),)
        else:
            outs = (assigner(x, done, **kw),)
    else:
        r, keep_dim = _get(td, keys["reward"], nb)
        term, trunc = _flags(td, keys, nb)
        kw.update(terminated=term, truncated=trunc)
        if "next_value" in keys:
            nv, _ = _get(td, keys["next_value"], nb, required=False)
            if nv is not None:
                kw["next_values"] = nv
        if name == "DiscountedReturn":
            outs = (assigner(r, **kw),)
        elif name in ("GAE", "TDLambda"):
            v, had = _get(td, keys["value"], nb)
            keep_dim = keep_dim or had
            out = assigner(r, v, **kw)
            outs = tuple(out) if isinstance(out, tuple) else (out,)
        else:
            mu, _ = _get(td, keys["sample_log_prob"], nb)
            pi, _ = _get(td, keys["target_log_prob"], nb)
            log_rhos = pi - mu
            v, had = _get(td, keys["value"], nb)
            keep_dim = keep_dim or had
            if name == "VTrace":
                outs = tuple(assigner(r, v, log_rhos, **kw))
            else:
                q, _ = _get(td, keys["state_action_value"], nb)
                outs = tuple(assigner(r, q, v, log_rhos, **kw))
    for out_key, out in zip(assigner.output_keys, outs):
        if out_key is None:
            continue
        key = keys[out_key]
        td.set(key, out.unsqueeze(-1) if keep_dim and out.dim() == nb else out)
    return td


__all__ = ["call_on_tensordict", "check_key_names", "keys_of"]
