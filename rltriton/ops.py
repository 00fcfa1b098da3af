"""``torch.library`` registration, so estimators work inside ``torch.compile``.

Every public function and estimator call checks ``torch.compiler.is_compiling()`` first;
while Dynamo traces, the call becomes one opaque custom op, ``rltriton::estimate``, whose
fake implementation gives the outputs' shapes, dtypes and strides. The graph therefore
has no break (``fullgraph=True`` works) and at run time the op runs the ordinary eager
path (Triton on CUDA, the torch backend elsewhere). Eager calls never go through the
dispatcher, so they pay nothing for this.

The op takes the present tensors as a list with their names joined in a string, and the
float hyper-parameters as a list (``gamma`` and ``lam`` given as tensors travel in the
tensor list instead).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

#: outputs per estimator kind
N_OUTPUTS = {
    "gae": 2, "td_lambda": 1, "discounted_returns": 1, "vtrace": 2, "retrace": 2, "retrace_av": 2,
    "traces": 1, "prefix_sum": 1,
}
#: leading positional tensors of each public function
_POSITIONAL = {
    "gae": ("rewards", "values"),
    "td_lambda": ("rewards", "values"),
    "discounted_returns": ("rewards",),
    "vtrace": ("rewards", "values", "log_rhos"),
    "retrace": ("rewards", "q_values", "state_values", "log_rhos"),
    "retrace_av": ("rewards", "action_values", "target_probs", "actions", "behavior_log_probs"),
    "traces": ("x",),
    "prefix_sum": ("x", "dones"),
}
#: float hyper-parameters of each kind, in the order they travel
_PARAMS = {
    "gae": ("gamma", "lam"),
    "td_lambda": ("gamma", "lam"),
    "discounted_returns": ("gamma",),
    "vtrace": ("gamma", "lam", "rho_bar", "c_bar", "pg_rho_bar"),
    "retrace": ("gamma", "lam", "c_bar"),
    "retrace_av": ("gamma", "lam", "c_bar"),
    "traces": ("gamma", "lam"),
    "prefix_sum": (),
}


def _eager(kind: str, names: list[str], tensors: list[Tensor], params: list[float], boundary: str,
           time_dim: int, backend: str) -> tuple[Tensor, ...]:
    import rltriton as rt

    given = dict(zip(names, tensors))
    hp: dict[str, Any] = dict(zip(_PARAMS[kind], params))
    for name in ("gamma", "lam"):
        if name in given:
            hp[name] = given.pop(name)
    if "pg_rho_bar" in hp and hp["pg_rho_bar"] < 0:
        hp["pg_rho_bar"] = None
    if kind == "prefix_sum":
        hp["boundary"] = boundary
    positional = [given.pop(n, None) for n in _POSITIONAL[kind]]
    fn = {
        "gae": rt.gae, "td_lambda": rt.td_lambda, "discounted_returns": rt.discounted_returns, "vtrace": rt.vtrace,
        "retrace": rt.retrace, "retrace_av": rt.retrace_from_action_values, "traces": rt.eligibility_traces,
        "prefix_sum": rt.episodic_prefix_sum,
    }[kind]
    out = fn(*positional, **given, **hp, time_dim=time_dim, backend=backend)
    return tuple(out) if isinstance(out, tuple) else (out,)


def _out_dtype(tensors: list[Tensor]) -> torch.dtype:
    return torch.float64 if any(t.dtype == torch.float64 for t in tensors) else torch.float32


@torch.library.custom_op("rltriton::estimate", mutates_args=())
def estimate(
    kind: str, names: str, tensors: list[Tensor], params: list[float], boundary: str, time_dim: int, backend: str
) -> list[Tensor]:
    """One estimator call (see the module docstring); returns fresh output tensors laid out
    like the first tensor (``rewards`` or ``x``)."""
    outs = _eager(kind, names.split(","), tensors, params, boundary, time_dim, backend)
    like = tensors[0]
    result = []
    for o in outs:
        expected = torch.empty_like(like, dtype=o.dtype)
        # the compiled graph relies on the fake's strides: return exactly that layout
        result.append(o if o.stride() == expected.stride() else expected.copy_(o))
    return result


@estimate.register_fake
def _estimate_fake(kind, names, tensors, params, boundary, time_dim, backend):
    dtype = _out_dtype(tensors)
    return [torch.empty_like(tensors[0], dtype=dtype) for _ in range(N_OUTPUTS[kind])]


def call(kind: str, tensors: dict[str, Tensor | None], hparams: dict[str, Any], time_dim: int | None,
         backend: str | None) -> tuple[Tensor, ...]:
    """Route one call through the custom op (used while ``torch.compile`` traces)."""
    names, values = [], []
    for name, x in tensors.items():
        if x is not None:
            names.append(name)
            values.append(x)
    params = []
    for name in _PARAMS[kind]:
        v = hparams.get(name)
        if isinstance(v, Tensor):
            names.append(name)
            values.append(v)
            v = 0.0
        params.append(-1.0 if v is None else float(v))
    boundary = hparams.get("boundary", "ends_at")
    out = estimate(kind, ",".join(names), values, params, boundary, -1 if time_dim is None else time_dim,
                   backend or "auto")
    return tuple(out)
