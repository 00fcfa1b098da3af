"""Random calls through the Triton kernels' shipped plans, run by the CPU interpreter, against
the float64 reference: the planner's branches at shapes no test names.

    TRITON_INTERPRET=1 python -m tests.fuzz --minutes 30 --seed 1
    TRITON_INTERPRET=1 python -m tests.fuzz --case '{"name": "gae", ...}'   # one draw again

The tests run the kernels under the interpreter on tiny tiles (``tests.conftest.use_small_tiles``)
and at a few named shapes on the launcher's own plans; the GPU tests (``tests/test_gpu.py``) run
the shipped plans at chosen shapes. This draws the shapes instead: row lengths and row counts
on both sides of the planner's bounds (8 to 8192 steps; 1 to 8448 rows; the bounds in programs
an SM read on 132 SMs, the launcher's count for the interpreter), every estimator, boundary
form, flag kind and dtype, and five layouts (batch-major, time-major storage as CleanRL's, time
in the middle of three dims, rows padded so no stride is the row length, and base addresses
one element past a 16-byte boundary). Each call's outputs start NaN-filled (the launcher's
``empty`` and ``empty_like`` are replaced, as ``tests.conftest.poisoned`` does), so an element
no kernel writes fails, and every output is compared with ``rltriton.reference`` within
``tests.rollouts.tolerance`` (float32 rounding over the horizon). A failure prints the draw
as JSON; ``--case`` runs that draw again.

Not a test: its draws depend on the seed and the time given, and its cost on the interpreter
(a 512 x 1024 call on whole-row tiles takes about two minutes there), so CI does not run it;
``tests/test_fuzz.py`` runs a few fixed draws of it so that it keeps working. Run it with
Triton 3.6 too (the H200 image's version; some plans depend on it: ``launch._TM_LANES_NARROW``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from typing import Any

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402

from tests.rollouts import ESTIMATORS, Case, assert_matches, make_case, misaligned, to_time_major  # noqa: E402

FEATURED = ("traces", "prefix_sum")
# row lengths at and around the planner's bounds (launch: lanes tiles up to 128 steps, one
# chunk up to 2048, whole 4096- and 8192-step rows, 1024-step split segments)
T_MARKS = (1, 2, 3, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257,
           511, 512, 513, 1000, 1023, 1024, 1025, 2047, 2048, 2049, 3000, 4096, 4097, 8192)
# row counts at and around the bounds: rows a program (2, 4, 8, 16, 32, 64), 132 SMs and its
# multiples, the small time-major calls' 64 and 256, the lagged 128-step tiles' 3840-8448
R_MARKS = (1, 2, 3, 5, 8, 17, 31, 33, 63, 64, 65, 100, 127, 128, 129, 131, 132, 133, 193, 255, 256, 257,
           264, 511, 512, 513, 1000, 1025, 3840, 4096, 4100, 8448)
LAYOUTS = ("batch", "time_major", "middle", "padded", "misaligned")


@dataclass
class Draw:
    """One random call: everything needed to build it again (``build``)."""

    name: str
    R: int
    T: int
    layout: str
    dtype: str
    flag_dtype: str
    flags: str
    bootstrap: str
    per_step: bool
    gamma: float
    lam: float
    features: int
    seed: int


def draw(rng: random.Random, max_elems: int) -> Draw:
    """A random call of at most ``max_elems`` elements (rows x steps x features)."""
    name = rng.choice(ESTIMATORS)
    T = rng.choice(T_MARKS) if rng.random() < 0.7 else rng.randint(1, 4200)
    R = rng.choice(R_MARKS) if rng.random() < 0.7 else rng.randint(1, 600)
    features = rng.choice((0, 0, 0, 1, 3)) if name in FEATURED else 0
    while R > 1 and R * T * max(features, 1) > max_elems:
        R = max(1, R // 2 + rng.choice((-1, 0, 1)))
    if R * T * max(features, 1) > max_elems:
        T = max(1, max_elems // max(features, 1))
    layout = rng.choice(LAYOUTS)
    if layout == "middle" and (R < 2 or features):
        layout = "batch"
    dtype = rng.choices(("float32", "bfloat16", "float16", "float64"), (14, 3, 1, 2))[0]
    flag_dtype = rng.choices(("bool", "uint8", "float32", "int64"), (10, 2, 2, 1))[0]
    return Draw(
        name=name, R=R, T=T, layout=layout, dtype=dtype, flag_dtype=flag_dtype,
        flags=rng.choices(("both", "terminated", "truncated", "none"), (6, 2, 2, 1))[0],
        bootstrap=rng.choice(("none", "last_value", "bootstrap_values", "next_values")),
        per_step=rng.random() < 0.25,
        gamma=rng.choice((0.0, 0.5, 0.9, 0.97, 0.99, 1.0)),
        lam=rng.choice((0.0, 0.5, 0.9, 0.95, 1.0)),
        features=features, seed=rng.randrange(1 << 30),
    )


def _middle(case: Case, B1: int) -> Case:
    """[R, T] as [B1, T, R // B1] with time_dim=1 (a strided view, as a user's slice would be)."""
    B2 = case.args[0].shape[0] // B1
    T = case.T

    def mid(x: Any) -> Any:
        if not isinstance(x, torch.Tensor) or x.dim() < 2 or x.shape[:2] != (B1 * B2, T):
            if isinstance(x, torch.Tensor) and x.dim() >= 1 and x.shape[0] == B1 * B2 and x.dim() == 1:
                return x.view(B1, B2)  # last_value
            return x
        return x.view(B1, B2, T, *x.shape[2:]).movedim(2, 1)

    return Case(case.name, tuple(mid(a) for a in case.args),
                {**{k: mid(v) for k, v in case.kwargs.items()}, "time_dim": 1}, case.T)


def _padded(case: Case) -> Case:
    """Every per-step tensor a view into rows 3 elements longer (row stride T + 3)."""
    T = case.T

    def pad(x: Any) -> Any:
        if not isinstance(x, torch.Tensor) or x.dim() < 1:
            return x
        tdim = x.dim() - 1
        if x.shape[tdim] != T:  # action values/probabilities [.., T, A], features [.., T, F]
            tdim = next((d for d in range(x.dim() - 1, -1, -1) if x.shape[d] == T), None)
            if tdim is None or tdim == x.dim() - 1:
                return x
        shape = list(x.shape)
        shape[tdim] += 3
        buf = torch.full(shape, 7, dtype=x.dtype) if x.dtype == torch.bool else torch.full(shape, 7.0).to(x.dtype)
        view = buf.narrow(tdim, 0, T)
        view.copy_(x)
        return view

    return Case(case.name, tuple(pad(a) for a in case.args), {k: pad(v) for k, v in case.kwargs.items()}, case.T)


def build(d: Draw) -> Case:
    """The call a draw describes."""
    shape = (d.T,) if d.R == 1 and d.seed % 3 == 0 else (d.R, d.T)
    case = make_case(
        d.name, shape, bootstrap=d.bootstrap, flags=d.flags, dtype=getattr(torch, d.dtype),
        flag_dtype=getattr(torch, d.flag_dtype), per_step=d.per_step, gamma=d.gamma, lam=d.lam, seed=d.seed,
        n_features=(d.features,) if d.features else (),
    )
    if d.layout == "time_major":
        case = to_time_major(case)
    elif d.layout == "middle" and len(shape) == 2:
        B1 = next((b for b in (3, 2, 5, 7) if d.R % b == 0), 1)
        case = _middle(case, B1) if B1 > 1 else case
    elif d.layout == "padded" and not d.features:
        case = _padded(case)
    elif d.layout == "misaligned":
        case = misaligned(case)
    return case


def _poison() -> None:
    from rltriton.kernels import launch
    from tests.conftest import _nan_empty, _nan_empty_like

    launch.empty_like = _nan_empty_like
    launch.empty = _nan_empty


def run(d: Draw) -> str | None:
    """None if every output of the draw's Triton call matches the reference, else why not."""
    case = build(d)
    ref = case(backend="reference")
    try:
        out = case(backend="triton")
        if len(out) != len(ref):
            return f"{len(out)} outputs, the reference {len(ref)}"
        for i, (o, r) in enumerate(zip(out, ref)):
            assert_matches(o, r, case, f"{d.name}[{i}]")
    except AssertionError as e:
        return str(e)
    except Exception:  # noqa: BLE001 - a crash is a finding too
        return traceback.format_exc(limit=3)
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-elems", type=int, default=1 << 17, help="rows x steps x features of a draw")
    ap.add_argument("--case", help="a draw as JSON (as a failure prints it): run it alone")
    ap.add_argument("--log", help="append each draw and its verdict to this file (JSON lines)")
    args = ap.parse_args(argv)
    import tests.conftest  # noqa: F401 - its faster interpreter patch, under TRITON_INTERPRET=1

    _poison()
    if args.case:
        d = Draw(**json.loads(args.case))
        why = run(d)
        print("ok" if why is None else f"FAIL {why}")
        return 0 if why is None else 1
    rng = random.Random(args.seed)
    end = time.monotonic() + 60 * args.minutes
    n = fails = 0
    while time.monotonic() < end:
        d = draw(rng, args.max_elems)
        t0 = time.monotonic()
        why = run(d)
        n += 1
        took = time.monotonic() - t0
        line = json.dumps(asdict(d))
        if why is not None:
            fails += 1
            print(f"FAIL {line}\n  {why}", flush=True)
        if args.log:
            with open(args.log, "a") as f:
                f.write(json.dumps({"draw": asdict(d), "ok": why is None, "why": why, "s": round(took, 2)}) + "\n")
    print(f"{n} draws, {fails} failed (seed {args.seed}, {args.minutes} min)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
