"""Random rollouts and call helpers shared by the tests (and the benchmark checks).

Every case draws fresh randn rewards/values (never zeros), ~15% terminations and ~10%
truncations (interior and at t = T-1), and one of the bootstrap forms of SPEC.md
section 2, so the boundary rules are exercised on every shape (``RANDOM_VALUES`` off,
for plan-only dry runs, makes constant inputs instead).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

import rltriton as rt

ESTIMATORS = ("gae", "td_lambda", "discounted_returns", "vtrace", "retrace", "retrace_av", "traces", "prefix_sum")
BOOTSTRAP_FORMS = ("none", "last_value", "bootstrap_values", "next_values")
# each estimator's kernel form: its key in launch's per-form settings (launch._TM_FEW_TILES,
# _ONE_CHUNK_ROWS, _WHOLE_ROW_MAXNREG ...; Retrace's action form has its own)
FEW_ROWS_KIND = {"gae": "gae", "td_lambda": "td_lambda", "discounted_returns": "td_lambda", "vtrace": "vtrace",
                 "retrace": "retrace", "retrace_av": "retrace_actions", "traces": "forward", "prefix_sum": "forward"}
EPS32 = torch.finfo(torch.float32).eps
# False: make_case fills every tensor with a constant instead of drawing it (0 for the normal
# draws, 1/2 for the uniform ones: no flag set, every index 0), for the dry runs of
# tests/test_gpu_plans.py, which read shapes, strides and dtypes only; drawing their
# large shapes took most of that file's time (make_case: 140 of 192 s on two cores)
RANDOM_VALUES = True


def _uniform(shape: tuple[int, ...], gen: torch.Generator, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    if not RANDOM_VALUES:
        return torch.full(shape, 0.5, dtype=dtype)
    return torch.rand(shape, generator=gen, dtype=dtype)


def _normal(shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    if not RANDOM_VALUES:
        return torch.zeros(shape, dtype=torch.float64)
    return torch.randn(shape, generator=gen, dtype=torch.float64)


def _integers(high: int, shape: tuple[int, ...], gen: torch.Generator) -> torch.Tensor:
    if not RANDOM_VALUES:
        return torch.zeros(shape, dtype=torch.int64)
    return torch.randint(0, high, shape, generator=gen)


@dataclass
class Case:
    """One call: positional tensors and keyword arguments, in a [*B, T] layout."""

    name: str
    args: tuple
    kwargs: dict[str, Any] = field(default_factory=dict)
    T: int = 0  # length of the time axis (outputs of traces/prefix sums end in feature dims)

    def fn(self) -> Callable:
        return {
            "gae": rt.gae,
            "td_lambda": rt.td_lambda,
            "discounted_returns": rt.discounted_returns,
            "vtrace": rt.vtrace,
            "retrace": rt.retrace,
            "retrace_av": rt.retrace_from_action_values,
            "traces": rt.eligibility_traces,
            "prefix_sum": rt.episodic_prefix_sum,
        }[self.name]

    def __call__(self, **overrides: Any):
        out = self.fn()(*self.args, **{**self.kwargs, **overrides})
        return tuple(out) if isinstance(out, tuple) else (out,)


def _flags(shape, p, gen, dtype, device):
    f = _uniform(shape, gen) < p
    if dtype == torch.bool:
        return f.to(device)
    return f.to(dtype).to(device)


def make_case(
    name: str,
    shape: tuple[int, ...],
    *,
    bootstrap: str = "last_value",
    flags: str = "both",
    dtype: torch.dtype = torch.float32,
    flag_dtype: torch.dtype = torch.bool,
    per_step: bool = False,
    gamma: float = 0.97,
    lam: float = 0.9,
    seed: int = 0,
    device: str = "cpu",
    n_actions: int = 4,
    n_features: tuple[int, ...] = (),
    time_major: bool = False,
    truncate_last: bool = True,
) -> Case:
    """A random ``[*B, T]`` rollout for estimator ``name``.

    ``bootstrap``: one of BOOTSTRAP_FORMS (forms an estimator does not take are mapped to
    the nearest it does). ``flags``: "none", "terminated", "truncated" or "both".
    ``per_step``: gamma/lam as per-step tensors. ``time_major``: every tensor is laid out
    with time first (a transposed, non-contiguous view of a [*B, T] problem is not used:
    the storage itself is time-major, as in CleanRL) and ``time_dim=0`` is passed.
    """
    gen = torch.Generator().manual_seed(seed)
    B, T = shape[:-1], shape[-1]

    def randn(*s, scale=1.0):
        return (_normal(tuple(s), gen) * scale).to(dtype).to(device)

    kw: dict[str, Any] = {}
    if per_step:
        kw["gamma"] = (0.8 + 0.2 * _uniform(shape, gen, torch.float64)).to(dtype).to(device)
        lam_t = (0.5 + 0.5 * _uniform(shape, gen, torch.float64)).to(dtype).to(device)
    else:
        kw["gamma"] = gamma
        lam_t = lam
    term = trunc = None
    if flags in ("terminated", "both"):
        term = _flags(shape, 0.15, gen, flag_dtype, device)
    if flags in ("truncated", "both"):
        trunc_b = _uniform(shape, gen) < 0.1
        if truncate_last and T > 0:
            trunc_b[..., -1] |= _uniform(B, gen) < 0.5
        if term is not None:  # a step is terminated or truncated, as Gymnasium reports
            trunc_b &= ~(term.cpu() != 0)
        trunc = trunc_b.to(flag_dtype).to(device)

    def boundary(values_like: bool = True) -> dict[str, Any]:
        form = bootstrap
        out: dict[str, Any] = {}
        if form == "next_values" and not values_like:
            form = "bootstrap_values"
        if form == "last_value":
            out["last_value"] = randn(*B)
        elif form == "bootstrap_values":
            out["bootstrap_values"] = randn(*shape)
        elif form == "next_values":
            out["next_values"] = randn(*shape)
        return out

    flag_kw = {k: v for k, v in (("terminated", term), ("truncated", trunc)) if v is not None}
    if name == "gae":
        case = Case(name, (randn(*shape), randn(*shape)), {**kw, "lam": lam_t, **flag_kw, **boundary()})
    elif name == "td_lambda":
        case = Case(name, (randn(*shape), randn(*shape)), {**kw, "lam": lam_t, **flag_kw, **boundary()})
    elif name == "discounted_returns":
        case = Case(name, (randn(*shape),), {**kw, **flag_kw, **boundary(values_like=False)})
    elif name == "vtrace":
        lr = randn(*shape, scale=0.5)
        case = Case(
            name, (randn(*shape), randn(*shape), lr),
            {**kw, "lam": lam_t, "rho_bar": 1.0, "c_bar": 0.9, "pg_rho_bar": 1.2, **flag_kw, **boundary()},
        )
    elif name == "retrace":
        case = Case(
            name, (randn(*shape), randn(*shape), randn(*shape), randn(*shape, scale=0.5)),
            {**kw, "lam": lam_t, "c_bar": 1.0, **flag_kw, **boundary()},
        )
    elif name == "retrace_av":
        A = n_actions
        logits = _normal((*shape, A), gen)
        pi = torch.softmax(logits, -1).to(dtype).to(device)
        actions = _integers(A, shape, gen).to(device)
        blp = torch.log(_uniform(shape, gen, torch.float64) * 0.9 + 0.1).to(dtype).to(device)
        case = Case(
            name, (randn(*shape), randn(*shape, A), pi, actions, blp),
            {**kw, "lam": lam_t, "c_bar": 1.0, **flag_kw, **boundary(values_like=False)},
        )
    elif name == "traces":
        x = randn(*shape, *n_features)
        # feature dims need dones to say where [*B, T] ends (all-clear flags when flags="none")
        if flags != "none":
            d = {"dones": _flags(shape, 0.15, gen, flag_dtype, device)}
        else:
            d = {"dones": torch.zeros(shape, dtype=flag_dtype, device=device)} if n_features else {}
        init = {"initial": randn(*B, *n_features)} if bootstrap != "none" else {}
        case = Case(name, (x,), {**kw, "lam": lam_t, **d, **init})
    elif name == "prefix_sum":
        x = randn(*shape, *n_features)
        init = {"initial": randn(*B, *n_features)} if bootstrap != "none" else {}
        case = Case(
            name, (x, _flags(shape, 0.15, gen, flag_dtype, device)),
            {"boundary": "starts_at" if seed % 2 else "ends_at", **init},
        )
    else:
        raise ValueError(name)
    case.T = T
    if time_major:
        case = to_time_major(case)
    return case


def on_gpu(case: Case) -> Case:
    """The same call with every tensor moved to the current CUDA device."""

    def cuda(x: Any) -> Any:
        return x.cuda() if isinstance(x, torch.Tensor) else x

    return Case(case.name, tuple(cuda(a) for a in case.args), {k: cuda(v) for k, v in case.kwargs.items()}, case.T)


def misaligned(case: Case) -> Case:
    """The same call with every tensor of at least one dim copied into a buffer one element
    in: same shape and strides, a base address one element past a 16-byte boundary (kernels
    specialised for aligned tensors must not be reused for it)."""

    def shift(x: Any) -> Any:
        if not isinstance(x, torch.Tensor) or x.dim() == 0:
            return x
        buf = torch.empty(x.numel() + 1, dtype=x.dtype, device=x.device)
        view = buf[1:].view(x.shape)
        view.copy_(x)
        return view

    return Case(case.name, tuple(shift(a) for a in case.args), {k: shift(v) for k, v in case.kwargs.items()},
                case.T)


def to_time_major(case: Case) -> Case:
    """Re-lay every per-step tensor with time first (contiguous time-major storage)."""
    ref = case.args[0]
    nb = ref.dim() - 1 if case.name not in ("traces", "prefix_sum") else None
    if case.name in ("traces", "prefix_sum"):
        d = case.kwargs.get("dones") if case.name == "traces" else case.args[1]
        nb = (d.dim() if d is not None else ref.dim()) - 1
    T = ref.shape[nb]

    def tm(x):
        if not isinstance(x, torch.Tensor) or x.dim() <= nb or x.shape[nb] != T:
            return x
        return x.movedim(nb, 0).contiguous()

    args = tuple(tm(a) for a in case.args)
    kwargs = {k: (tm(v) if k not in ("last_value", "initial") else v) for k, v in case.kwargs.items()}
    kwargs["time_dim"] = 0
    return Case(case.name, args, kwargs, case.T)


def tolerance(T: int, ref: torch.Tensor, dtype: torch.dtype) -> float:
    """Absolute tolerance for a float32 (or float64) computation against the float64 oracle.

    Each output is a sum of at most H terms (H = T, or the effective horizon), each the
    product of up to H coefficients; float32 rounding gives a relative error of a few
    H * eps32 on the sum of magnitudes. We bound the sum of magnitudes by
    max|ref| + the largest term and allow 8 * (H + 8) * eps32 of it.
    """
    eps = torch.finfo(torch.float64).eps * 64 if dtype == torch.float64 else EPS32
    T = max(T, 1)
    scale = float(ref.abs().max()) if ref.numel() else 1.0
    return 8.0 * (min(T, 512) + 8) * eps * (scale + 4.0)


def assert_matches(out: torch.Tensor, ref: torch.Tensor, case: Case, what: str = "") -> None:
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)} vs {tuple(ref.shape)}"
    assert not torch.isnan(out).any(), f"{what}: NaN in output (unwritten element?)"
    expected_dtype = torch.float64 if ref_dtype(case) == torch.float64 else torch.float32
    assert out.dtype == expected_dtype, f"{what}: dtype {out.dtype}, expected {expected_dtype}"
    atol = tolerance(case.T, ref, out.dtype)
    err = float((out.double().cpu() - ref.double().cpu()).abs().max()) if ref.numel() else 0.0
    assert err <= atol, f"{what}: max abs error {err:.3g} > {atol:.3g}"


def ref_dtype(case: Case) -> torch.dtype:
    for x in list(case.args) + list(case.kwargs.values()):
        if isinstance(x, torch.Tensor) and x.dtype == torch.float64:
            return torch.float64
    return torch.float32



def tm_lanes_tiles(launch, lengths: tuple[int, ...], steps: tuple[int, int] | None = None,
                   forms: tuple[str, ...] | None = None, narrow: float = 0.0) -> dict:
    """A ``launch._TM_LANES_TILES`` in which each kernel form of ``forms`` (default: every
    one, the forward scans too) takes the time-major lanes tiles of each of ``lengths`` steps
    on any number of programs: ``steps`` consecutive steps a thread (short, long: on tiles of
    at most 32 steps, on longer ones; None: the form's own, from its shipped tile of that
    length or else of the nearest length it has, with that tile's rule for few programs),
    narrow tiles (``launch._TM_LANES_NARROW_ROWS`` rows) up to ``narrow`` programs an SM
    (``float("inf")``: always, where ``launch._TM_LANES_NARROW``)."""
    inf = float("inf")
    table = {}
    for form in forms or (*launch._FORMS, "forward"):
        own = launch._TM_LANES_TILES.get(form, {})
        tiles = {}
        for bt in lengths:
            if steps is not None:
                tile = launch.TmLanesTile(0.0, inf, steps[0] if bt <= 32 else steps[1], None, narrow)
            else:
                near = own.get(bt) or own[min(own, key=lambda b: abs(b - bt))]
                tile = launch.TmLanesTile(0.0, inf, near.steps, near.few if bt in own else None, narrow)
            tiles[bt] = tile
        table[form] = tiles
    return table
