"""`CreditAssigner`: what every estimator shares.

An estimator is a first-order affine recurrence over the time axis of a rollout row
(SPEC.md section 1). What differs between estimators is how the coefficients are built,
the carry, and the epilogue. What does not differ lives here:

* argument checking, with ``expected …, got …`` messages and no device synchronisation;
* the boundary rules of SPEC.md section 2 (terminated vs truncated, ``next_values`` /
  ``bootstrap_values`` / ``last_value``, per-step ``gamma`` and ``lam``), normalised into
  one canonical :class:`Problem`;
* ``time_dim``: every tensor is viewed with time on the last axis by ``movedim`` (a view:
  strides change, no data is copied) and outputs are handed back in the caller's layout;
* backend dispatch (``"auto"``, ``"triton"``, ``"torch"``, ``"reference"``);
* the TensorDict entry point (delegated to :mod:`rltriton.adapters.tensordict`).

A subclass declares its hyper-parameters, its tensors, its result type, a torch
implementation (coefficients, :func:`rltriton.backends.torch_backend.affine_scan`,
epilogue), its reference oracle and the Triton kernel it binds.
"""

from __future__ import annotations

import abc
import os
from typing import Any, ClassVar

import torch
from torch import Tensor

BACKENDS = ("auto", "triton", "torch", "reference")
_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

Scalar = float | int
Coef = float | Tensor


def _type_name(x: object) -> str:
    return type(x).__name__


def check_tensor(name: str, x: object, kind: str = "float") -> Tensor:
    """Type-check one tensor argument. ``kind``: ``float`` (a floating dtype), ``flag``
    (bool, integer or floating: nonzero = set) or ``int`` (an integer dtype)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {_type_name(x)}")
    if kind == "float":
        if x.dtype not in _FLOATS:
            raise TypeError(
                f"{name}: expected a floating dtype (float16, bfloat16, float32 or float64), got {x.dtype}"
            )
    elif kind == "flag":
        if x.dtype.is_complex:
            raise TypeError(f"{name}: expected a bool, integer or floating dtype, got {x.dtype}")
    elif kind == "int":
        if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
            raise TypeError(f"{name}: expected an integer dtype, got {x.dtype}")
    return x


def check_unit(name: str, value: object) -> Coef:
    """``gamma`` / ``lam``: a Python number in [0, 1] or a floating tensor.

    Tensor values are range-checked only on the CPU: on a GPU the check would
    synchronise the device, which the default path never does.
    """
    if isinstance(value, Tensor):
        check_tensor(name, value, "float")
        # (while torch.compile traces, the values are symbolic: the op checks them when it runs)
        if value.device.type == "cpu" and value.numel() > 0 and not torch.compiler.is_compiling():
            lo, hi = float(value.min()), float(value.max())
            if not (0.0 <= lo and hi <= 1.0):
                raise ValueError(f"{name}: expected values in [0, 1], got values in [{lo}, {hi}]")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name}: expected a float in [0, 1] or a tensor, got {_type_name(value)}")
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name}: expected a value in [0, 1], got {value}")
    return value


def check_threshold(name: str, value: object) -> float:
    """A clipping threshold (rho_bar, c_bar, pg_rho_bar): a non-negative Python number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name}: expected a non-negative float, got {_type_name(value)}")
    value = float(value)
    if not value >= 0.0:  # also rejects NaN
        raise ValueError(f"{name}: expected a non-negative value, got {value}")
    return value


def check_backend(backend: object) -> str:
    if backend not in BACKENDS:
        raise ValueError(f"backend: expected one of {BACKENDS}, got {backend!r}")
    return backend  # type: ignore[return-value]


def normalize_dim(time_dim: object, ndim: int) -> int:
    """``time_dim`` counted in the ``[*B, T]`` axes (``ndim`` of them); negative from the end."""
    if isinstance(time_dim, bool) or not isinstance(time_dim, int):
        raise TypeError(f"time_dim: expected an int, got {_type_name(time_dim)}")
    if not -ndim <= time_dim < ndim:
        raise ValueError(f"time_dim: expected a value in [{-ndim}, {ndim - 1}] for {ndim}-d inputs, got {time_dim}")
    return time_dim % ndim


def triton_usable(device: torch.device) -> bool:
    """Triton runs on CUDA tensors, and on CPU tensors under ``TRITON_INTERPRET=1``."""
    if device.type == "cuda":
        return True
    return device.type == "cpu" and os.environ.get("TRITON_INTERPRET", "0") == "1"


class Problem:
    """The canonical form every backend consumes.

    ``raw`` holds the caller's tensors as given (no copies, no views made yet), ``kinds``
    what each one is (``step`` ``[*B, T]``, ``extra`` ``[*B, T, A]``, ``feature``
    ``[*B, T, *F]``, ``row`` ``[*B]`` / ``[*B, *F]``) and ``time_dim`` where time is in the
    caller's ``[*B, T]`` axes. The Triton launcher reads strides straight from ``raw``;
    the torch and reference backends use :attr:`tensors`, the same tensors viewed with
    time moved to the last ``[*B, T]`` axis (``movedim``: strides change, nothing is
    copied), built on first use. ``gamma``/``lam`` are floats or tensors broadcastable to
    the caller's ``[*B, T]``. Flags keep their dtype (nonzero = set). At most one of
    ``next_values`` / ``bootstrap_values`` / ``last_value`` is present.
    """

    __slots__ = ("shape", "time_dim", "ndim", "device", "dtype", "raw", "kinds", "gamma_raw", "lam_raw",
                 "n_feature_dims", "_views", "_keep")

    def __init__(self, shape: torch.Size, time_dim: int, ndim: int, device: torch.device, dtype: torch.dtype,
                 raw: dict[str, Tensor], kinds: dict[str, str], gamma: Coef, lam: Coef,
                 n_feature_dims: int = 0) -> None:
        self.shape = shape  # [*B, T], time last
        self.time_dim = time_dim
        self.ndim = ndim  # rank of the caller's [*B, T]
        self.device = device
        self.dtype = dtype  # arithmetic and output dtype (float32, or float64)
        self.raw = raw
        self.kinds = kinds
        self.gamma_raw = gamma
        self.lam_raw = lam
        self.n_feature_dims = n_feature_dims
        self._views: dict[str, Tensor] | None = None
        self._keep: tuple[Tensor | None, Tensor | None] | None = None

    @property
    def time_last(self) -> bool:
        return self.time_dim == self.ndim - 1

    def _view(self, x: Tensor, kind: str) -> Tensor:
        if self.time_last or kind == "row":
            return x
        return x.movedim(self.time_dim, -1 if kind == "step" else self.ndim - 1)

    @property
    def tensors(self) -> dict[str, Tensor]:
        """Every tensor with time on the last ``[*B, T]`` axis (views)."""
        if self._views is None:
            self._views = {n: self._view(x, self.kinds[n]) for n, x in self.raw.items()}
        return self._views

    @property
    def user_shape(self) -> torch.Size:
        """``[*B, T]`` in the caller's layout (time at ``time_dim``)."""
        if self.time_last:
            return self.shape
        return self.shape[: self.time_dim] + self.shape[-1:] + self.shape[self.time_dim : -1]

    def _coef_view(self, c: Coef) -> Coef:
        if not isinstance(c, Tensor):
            return c
        return self._view(c.expand(self.user_shape), "step")

    @property
    def gamma(self) -> Coef:
        """gamma: a float, or a ``[*B, T]`` time-last expanded view."""
        return self._coef_view(self.gamma_raw)

    @property
    def lam(self) -> Coef:
        return self._coef_view(self.lam_raw)

    @property
    def terminated(self) -> Tensor | None:
        return self.tensors.get("terminated")

    @property
    def truncated(self) -> Tensor | None:
        return self.tensors.get("truncated")

    @property
    def next_values(self) -> Tensor | None:
        return self.tensors.get("next_values")

    @property
    def bootstrap_values(self) -> Tensor | None:
        return self.tensors.get("bootstrap_values")

    @property
    def last_value(self) -> Tensor | None:
        return self.raw.get("last_value")

    @property
    def T(self) -> int:
        return self.shape[-1]

    @property
    def batch_shape(self) -> torch.Size:
        return self.shape[:-1]

    # --- boundary rules of SPEC.md section 2, materialised for the torch backend ---

    def keep(self) -> tuple[Tensor | None, Tensor | None]:
        """``(1 - terminated, 1 - done)`` as ``self.dtype`` multipliers, ``None`` where no
        flag of that kind was given. Multipliers, not masks: NaN and inf pass through as
        the arithmetic of SPEC.md section 3 gives them."""
        if self._keep is None:
            term = None if self.terminated is None else self.terminated != 0
            trunc = None if self.truncated is None else self.truncated != 0
            done = term if trunc is None else (trunc if term is None else term | trunc)
            as_keep = lambda m: None if m is None else (~m).to(self.dtype)  # noqa: E731
            self._keep = (as_keep(term), as_keep(done))
        return self._keep

    def discount(self) -> Tensor | float:
        """g_t (1 - term_t): the factor of the next-state value (0 after a termination)."""
        g = self.coef(self.gamma)
        keep_term = self.keep()[0]
        return g if keep_term is None else g * keep_term

    def cut(self, x: Tensor | float) -> Tensor | float:
        """x_t (1 - done_t): a carry coefficient, zero where the recursion is cut."""
        keep_done = self.keep()[1]
        return x if keep_done is None else x * keep_done

    def next_state_values(self, values: Tensor | None) -> Tensor:
        """nv_t of SPEC.md section 2 in ``self.dtype``, ``[*B, T]``.

        ``next_values`` if given; else ``values[t+1]`` inside the window where step t is
        not truncated, ``bootstrap_values[t]`` where it is truncated or at t = T-1,
        ``last_value`` at t = T-1, and 0 where none of them applies.
        """
        dt = self.dtype
        if self.next_values is not None:
            return self.next_values.to(dt)
        nv = torch.zeros(self.shape, dtype=dt, device=self.device)
        if values is not None and self.T > 1:
            nv[..., :-1] = values[..., 1:].to(dt)
        trunc = None if self.truncated is None else self.truncated != 0
        if self.bootstrap_values is not None:
            bv = self.bootstrap_values.to(dt)
            use = torch.zeros(self.shape, dtype=torch.bool, device=self.device)
            if trunc is not None:
                use |= trunc
            use[..., -1] = True
            return torch.where(use, bv, nv)
        if trunc is not None and values is not None:
            # a truncated step without a supplied continuation has no next-state value
            nv = nv.masked_fill(trunc, 0.0)
        if self.last_value is not None:
            nv[..., -1] = self.last_value.to(dt)
        return nv

    def coef(self, c: Coef) -> Tensor | float:
        """``gamma``/``lam`` in the arithmetic dtype (floats stay floats)."""
        return c.to(self.dtype) if isinstance(c, Tensor) else c


class CreditAssigner(abc.ABC):
    """Base class of every estimator: one affine recurrence over the time axis.

    Backward estimators (GAE, TD(lambda), discounted returns, V-trace, Retrace) solve
    ``A_t = alpha_t + beta_t A_{t+1}`` with ``A_T = 0``; forward ones (eligibility traces,
    episodic prefix sums) solve ``z_t = alpha_t + beta_t z_{t-1}`` from ``z_{-1} = initial``.
    This class owns argument checking, the boundary rules (SPEC.md section 2), the
    ``time_dim`` layout (as strides, no copies), the backend choice and the TensorDict entry
    point; a subclass builds alpha/beta and the epilogue and binds its kernel.

    Call an instance with tensors (the same arguments as the matching function in
    :mod:`rltriton`): per-step tensors ``[*B, T]`` with time at ``time_dim``, ``last_value``
    ``[*B]``; or with a ``TensorDict`` to read and write TorchRL's keys.

    Example::

        >>> import torch, rltriton as rt
        >>> est = rt.GAE(0.5, 1.0)
        >>> isinstance(est, rt.CreditAssigner)
        True
        >>> est(torch.ones(1, 2), torch.zeros(1, 2)).advantages
        tensor([[1.5000, 1.0000]])
    """

    #: names of the outputs, in result order
    output_names: ClassVar[tuple[str, ...]]
    #: keys written in the TensorDict path, one per output (``None``: not written)
    output_keys: ClassVar[tuple[str | None, ...]]

    def __init__(self, *, time_dim: int | None = None, backend: str = "auto") -> None:
        self.time_dim = time_dim
        self.backend = check_backend(backend)
        self._keys: dict[str, Any] = {}
        self._replays: dict[tuple, Any] = {}
        # the compiled replay's table of this instance (rltriton.kernels.native), made when
        # the first replay is armed in it
        self._native: Any = None

    # --- shared validation -------------------------------------------------------

    def _problem(
        self,
        steps: dict[str, Tensor | None],
        *,
        flags: dict[str, Tensor | None],
        gamma: Coef = 1.0,
        lam: Coef = 1.0,
        next_values: Tensor | None = None,
        bootstrap_values: Tensor | None = None,
        last_value: Tensor | None = None,
        extra: dict[str, tuple[Tensor | None, str, int]] | None = None,
        time_dim: int | None,
        n_feature_dims: int = 0,
        features: dict[str, Tensor | None] | None = None,
        row_tensors: dict[str, Tensor | None] | None = None,
        optional: tuple[str, ...] = (),
    ) -> Problem:
        """Check every argument and build the canonical :class:`Problem`.

        ``steps``: floating ``[*B, T]`` tensors (the first one fixes the shape).
        ``flags``: ``[*B, T]`` flags. ``extra``: name -> (tensor, kind, n trailing dims)
        for per-action tensors. ``features``: ``[*B, T, *F]`` tensors, with ``[*B, T]``
        taken from ``steps``/``flags`` (or the tensor itself when ``n_feature_dims`` is 0).
        ``row_tensors``: ``[*B, *F]`` tensors (``initial``). Every tensor of ``steps``,
        ``extra`` and ``features`` is required unless named in ``optional``.

        This runs on every call, so it touches only tensor metadata (shape, dtype,
        device) and makes no views: the hot path of a Triton call is this plus a launch.
        """
        td = self.time_dim if time_dim is None else time_dim
        if td is None:
            td = -1
        raw: dict[str, Tensor] = {}
        kinds: dict[str, str] = {}
        ref_name: str | None = None
        user_shape: torch.Size | None = None

        def add(name: str, x: Tensor | None, kind: str, check: str) -> None:
            nonlocal ref_name, user_shape
            if x is None:
                return
            check_tensor(name, x, check)
            raw[name] = x
            kinds[name] = kind
            if kind == "step" and ref_name is None:
                ref_name, user_shape = name, x.shape

        for name, x in steps.items():
            if x is None and name not in optional:
                raise TypeError(f"{name}: expected a torch.Tensor, got NoneType")
            add(name, x, "step", "float")
        for name, x in flags.items():
            add(name, x, "step", "flag")
        add("next_values", next_values, "step", "float")
        add("bootstrap_values", bootstrap_values, "step", "float")
        if extra:
            for name, (x, kind, _) in extra.items():
                if x is None:
                    raise TypeError(f"{name}: expected a torch.Tensor, got NoneType")
                add(name, x, "extra", kind)
        if features:
            for name, x in features.items():
                if x is None:
                    raise TypeError(f"{name}: expected a torch.Tensor, got NoneType")
                add(name, x, "feature", "float")
        add("last_value", last_value, "row", "float")
        if row_tensors:
            for name, x in row_tensors.items():
                add(name, x, "row", "float")
        if next_values is not None and (bootstrap_values is not None or last_value is not None):
            other = "bootstrap_values" if bootstrap_values is not None else "last_value"
            raise ValueError(f"expected at most one of next_values and {other}, got both")
        if bootstrap_values is not None and last_value is not None:
            raise ValueError("expected at most one of bootstrap_values and last_value, got both")

        if ref_name is None:  # forward estimators with only features: [*B, T] is x minus F
            ref_name = next(n for n, k in kinds.items() if k == "feature")
            full = raw[ref_name].shape
            user_shape = full[: len(full) - n_feature_dims]
        assert user_shape is not None  # for type checkers: set by one of the branches above
        ndim = len(user_shape)
        if ndim == 0:
            raise ValueError(f"{ref_name}: expected a tensor with a time axis ([*B, T]), got a 0-d tensor")
        tdim = normalize_dim(td, ndim)
        device = raw[ref_name].device

        dtype = torch.float32
        feat_shape: torch.Size | None = None
        batch_user = user_shape[:tdim] + user_shape[tdim + 1 :]
        for name, x in raw.items():
            if x.device != device:
                raise ValueError(f"{name}: expected a tensor on {device} (like {ref_name}), got one on {x.device}")
            if x.dtype == torch.float64:
                dtype = torch.float64
            kind = kinds[name]
            if kind == "step":
                if x.shape != user_shape:
                    raise ValueError(
                        f"{name}: expected shape {tuple(user_shape)} (like {ref_name}), got {tuple(x.shape)}"
                    )
            elif kind == "extra":
                trailing = extra[name][2]  # type: ignore[index]
                if x.dim() != ndim + trailing or x.shape[:ndim] != user_shape:
                    what = f"{tuple(user_shape)} + {trailing} trailing dim(s)" if trailing else f"{tuple(user_shape)}"
                    raise ValueError(f"{name}: expected shape {what}, got {tuple(x.shape)}")
            elif kind == "feature":
                if x.shape[:ndim] != user_shape:
                    raise ValueError(
                        f"{name}: expected shape {tuple(user_shape)} + feature dims (like {ref_name}), "
                        f"got {tuple(x.shape)}"
                    )
                feat_shape = x.shape[ndim:]
        for name, x in raw.items():
            if kinds[name] != "row":
                continue
            expected = batch_user
            if name != "last_value" and feat_shape is not None:
                expected = batch_user + feat_shape
            if x.shape != expected:
                what = f" (the batch dims of {ref_name})" if name == "last_value" else ""
                raise ValueError(f"{name}: expected shape {tuple(expected)}{what}, got {tuple(x.shape)}")

        for name, c in (("gamma", gamma), ("lam", lam)):
            if not isinstance(c, Tensor):
                continue
            if c.device != device:
                raise ValueError(f"{name}: expected a tensor on {device}, got one on {c.device}")
            try:
                ok = torch.broadcast_shapes(c.shape, user_shape) == user_shape
            except RuntimeError:
                ok = False
            if not ok:
                raise ValueError(
                    f"{name}: expected a tensor broadcastable to {tuple(user_shape)}, got shape {tuple(c.shape)}"
                )
            if c.dtype == torch.float64:
                dtype = torch.float64

        shape = batch_user + user_shape[tdim : tdim + 1]
        return Problem(shape, tdim, ndim, device, dtype, raw, kinds, gamma, lam, n_feature_dims)

    # --- dispatch ----------------------------------------------------------------

    def _resolve_backend(self, backend: str | None, device: torch.device, p: Problem | None = None) -> str:
        """The backend to run. The Triton kernels have no backward pass: when autograd
        would record the call (grad mode on and an input that requires grad), ``"auto"``
        runs the differentiable torch backend and ``"triton"`` is an error."""
        b = self.backend if backend is None else check_backend(backend)
        needs_grad = p is not None and torch.is_grad_enabled() and any(x.requires_grad for x in p.raw.values())
        if b == "auto":
            if needs_grad:
                return "torch"
            return "triton" if device.type == "cuda" and _triton_available() else "torch"
        if b == "triton":
            if needs_grad:
                raise ValueError(
                    "backend='triton': expected inputs that do not require grad (the kernels have no backward; "
                    "use backend='torch' or torch.no_grad()), got an input that requires grad"
                )
            if not _triton_available():
                raise ValueError("backend: expected an installed triton for backend='triton', got none")
            if not triton_usable(device):
                raise ValueError(
                    f"backend='triton': expected CUDA tensors (or TRITON_INTERPRET=1 for CPU tensors), "
                    f"got tensors on {device}"
                )
        return b

    # --- replay of repeated calls (see rltriton.kernels.launch.Replay) ---------------

    def _replay(self, tensors: tuple, time_dim: int | None, backend: str | None) -> tuple[tuple | None, tuple | None]:
        """(outputs, None) when this call's signature was seen before and recorded, else
        (None, signature) for :meth:`_run` to record. The signature holds everything the
        checks, the boundary form, the layout and the plan depend on: every tensor's shape,
        strides, dtype, device and grad flag, ``time_dim``, the backend and grad mode."""
        table = self._native
        if table is not None:
            # the compiled replay (rltriton.kernels.native): the outputs, or None on a miss,
            # or False where it has the signature but declines this call (the Python path
            # below handles that call)
            outs = table.call(tensors, time_dim, backend)
            if outs:
                return outs, None
            if outs is False:
                table = False
        if not (time_dim is None or type(time_dim) is int) or not (backend is None or type(backend) is str):
            return None, None  # the slow path raises the right error
        sig: list = [time_dim, backend, torch.is_grad_enabled()]
        for x in tensors:
            if x is None:
                sig.append(None)
            elif isinstance(x, Tensor):
                sig.append((x.shape, x.stride(), x.dtype, x.device, x.requires_grad))
            else:
                return None, None  # the slow path raises the right error
        t0 = tensors[0]
        if t0 is None:
            return None, None  # the slow path raises the right error
        if not t0.is_cuda:  # (``.device.type`` costs ~0.5 us more)
            sig.append(os.environ.get("TRITON_INTERPRET"))
        key = tuple(sig)
        replay = self._replays.get(key)
        if replay is not None and replay.generation == _launch_module()._generation:
            outs = replay(tensors)
            if replay.native is None and table is not False:
                self._arm_native(replay, tensors, time_dim, backend)
            return outs, None
        return None, key

    def _arm_native(self, replay: Any, tensors: tuple, time_dim: int | None, backend: str | None) -> None:
        """Arm ``replay`` (just run with ``tensors``) in this instance's compiled table when
        the compiled replay is loaded; ``replay.native`` becomes False where it never can be."""
        from rltriton.kernels import native

        if native.load() is None:  # off, not buildable, or no CUDA: for the whole process
            replay.native = False
            return
        if self._native is None:
            self._native = native.new_table()
        armed = native.arm(self._native, replay, tensors, time_dim, backend)
        if armed is False:
            replay.native = False

    def _run(self, p: Problem, backend: str | None, key: tuple | None = None,
             tensors: tuple | None = None) -> tuple[Tensor, ...]:
        """Compute in the chosen backend and return outputs in the caller's layout; with a
        signature ``key``, record a Triton launch for :meth:`_replay`."""
        b = self._resolve_backend(backend, p.device, p)
        if p.T == 0 or p.shape.numel() == 0:
            outs = tuple(self._empty_output(p) for _ in self.output_names)
        elif b == "triton":
            # the kernels write straight into outputs laid out like the caller's tensors
            if key is None or tensors is None:
                return self._triton(p)
            from rltriton.kernels import launch

            outs, replay = launch.record(lambda: self._triton(p), tensors)
            if replay is not None:
                if len(self._replays) >= 64:
                    self._replays.clear()
                self._replays[key] = replay
            return outs
        elif b == "torch":
            outs = self._torch(p)
        else:
            outs = tuple(o.to(p.dtype) for o in self._reference(p))
        return tuple(self._to_caller(o, p) for o in outs)

    def _empty_output(self, p: Problem) -> Tensor:
        feat = self._feature_shape(p)
        return torch.empty(p.shape + feat, dtype=p.dtype, device=p.device)

    def _feature_shape(self, p: Problem) -> torch.Size:
        return torch.Size()

    @staticmethod
    def _to_caller(out: Tensor, p: Problem) -> Tensor:
        """Move time from the last ``[*B, T]`` axis back to ``p.time_dim`` (a view)."""
        return out.movedim(len(p.shape) - 1, p.time_dim)

    @abc.abstractmethod
    def _torch(self, p: Problem) -> tuple[Tensor, ...]:
        """The vectorised torch implementation; outputs time-last, in ``p.dtype``."""

    @abc.abstractmethod
    def _reference(self, p: Problem) -> tuple[Tensor, ...]:
        """The float64 oracle of :mod:`rltriton.reference`; outputs time-last."""

    @abc.abstractmethod
    def _triton(self, p: Problem) -> tuple[Tensor, ...]:
        """The fused Triton kernel; outputs in the caller's layout."""

    def _compiled(self, kind: str, tensors: dict[str, Tensor | None], time_dim: int | None,
                  backend: str | None) -> tuple[Tensor, ...]:
        """The call as one ``rltriton::estimate`` custom op (while ``torch.compile`` traces)."""
        from rltriton import ops

        hparams = {n: getattr(self, n) for n in ("gamma", "lam", "rho_bar", "c_bar", "pg_rho_bar", "boundary")
                   if hasattr(self, n)}
        td = self.time_dim if time_dim is None else time_dim
        return ops.call(kind, tensors, hparams, td, self.backend if backend is None else backend)

    # --- TensorDict ----------------------------------------------------------------

    def set_keys(self, **keys: Any) -> CreditAssigner:
        """Rename TensorDict keys (see :mod:`rltriton.adapters.tensordict`). Returns ``self``."""
        from rltriton.adapters.tensordict import check_key_names

        check_key_names(self, keys)
        self._keys.update(keys)
        return self

    def _call_tensordict(self, td: Any, time_dim: int | None, backend: str | None, **tensors: Any) -> Any:
        """The TensorDict entry point; ``tensors`` are the call's other tensor arguments,
        which must be absent (a TensorDict call reads everything from its keys)."""
        given = sorted(n for n, x in tensors.items() if x is not None)
        if given:
            raise TypeError(
                f"expected only a TensorDict (and time_dim/backend) when calling with a TensorDict, got {given} too"
            )
        # Imported on first use: the core imports no adapter module at import time.
        from rltriton.adapters.tensordict import call_on_tensordict

        return call_on_tensordict(self, td, time_dim=time_dim, backend=backend)

    def _hparams(self) -> str:
        return ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._hparams()})"


_INSTANCES: dict[tuple, CreditAssigner] = {}
_PLAIN_HPARAMS = (float, int, str, type(None))


def instance(cls: type[CreditAssigner], *hparams: object) -> CreditAssigner:
    """``cls(*hparams)``, reused across calls when every hyper-parameter is a Python
    number or string (the functional API builds one estimator per call otherwise; the
    argument checks still run the first time). Tensor hyper-parameters are not cached.

    The cache key holds the hyper-parameters and their types (``1`` and ``1.0`` are
    different keys; a tensor hashes by identity and is never stored; an unhashable value goes
    straight to the constructor, which rejects it), so a call that finds
    its estimator costs one tuple and one lookup (~0.8 us less than checking the types
    first)."""
    if torch.compiler.is_compiling():
        return cls(*hparams)
    key = (cls, hparams, tuple(map(type, hparams)))
    try:
        obj = _INSTANCES.get(key)
    except TypeError:  # an unhashable hyper-parameter: the constructor says what is wrong
        return cls(*hparams)
    if obj is None:
        obj = cls(*hparams)
        if all(t in _PLAIN_HPARAMS for t in key[2]) and len(_INSTANCES) < 4096:
            _INSTANCES[key] = obj
    return obj


def is_tensordict(x: object) -> bool:
    """True for a ``tensordict.TensorDictBase`` (without importing tensordict eagerly)."""
    if isinstance(x, Tensor) or x is None:
        return False
    try:
        from tensordict import TensorDictBase
    except ImportError:  # pragma: no cover - tensordict is a dependency
        return False
    return isinstance(x, TensorDictBase)


_TRITON: bool | None = None
_LAUNCH: Any = None


def _launch_module() -> Any:
    """``rltriton.kernels.launch``, imported on first use (it imports triton) and kept: an
    import statement costs about a microsecond on every replayed call."""
    global _LAUNCH
    if _LAUNCH is None:
        from rltriton.kernels import launch

        _LAUNCH = launch
    return _LAUNCH


def _triton_available() -> bool:
    global _TRITON
    if _TRITON is None:
        try:
            import triton  # noqa: F401

            _TRITON = True
        except ImportError:  # pragma: no cover - depends on the platform
            _TRITON = False
    return _TRITON
