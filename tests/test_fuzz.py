"""A few fixed draws of ``tests/fuzz.py`` (random calls through the shipped plans), so that the
fuzzer keeps working: its layouts build the calls they name, its verdict catches a wrong or
unwritten output, and ``--case`` replays a draw. The draws are small (the interpreter runs
them); the fuzzer itself, with its random shapes, is run by hand (its docstring says how)."""

from __future__ import annotations

import json
from dataclasses import asdict, replace

import pytest
import torch

from tests import fuzz
from tests.conftest import INTERPRET
from tests.rollouts import ESTIMATORS

pytestmark = pytest.mark.skipif(not INTERPRET, reason="needs TRITON_INTERPRET=1 (CPU tensors)")

_BASE = fuzz.Draw(name="gae", R=5, T=37, layout="batch", dtype="float32", flag_dtype="bool", flags="both",
                  bootstrap="last_value", per_step=False, gamma=0.97, lam=0.9, features=0, seed=11)

# one draw per layout, the estimators, dtypes, flag kinds and bootstrap forms spread across them
FIXED = [
    replace(_BASE),
    replace(_BASE, name="vtrace", R=66, T=40, layout="time_major", bootstrap="next_values", seed=12),
    replace(_BASE, name="retrace", R=6, T=20, layout="middle", flag_dtype="uint8", per_step=True, seed=13),
    replace(_BASE, name="td_lambda", R=3, T=65, layout="padded", dtype="bfloat16", bootstrap="bootstrap_values",
            seed=14),
    replace(_BASE, name="retrace_av", R=4, T=17, layout="misaligned", flags="terminated", seed=15),
    replace(_BASE, name="traces", R=3, T=9, layout="batch", features=3, flag_dtype="float32", seed=16),
    replace(_BASE, name="prefix_sum", R=7, T=33, layout="time_major", dtype="float16", flags="truncated", seed=17),
    replace(_BASE, name="discounted_returns", R=1, T=100, layout="misaligned", dtype="float64", flags="none",
            bootstrap="none", gamma=1.0, seed=18),
]


@pytest.mark.parametrize("d", FIXED, ids=lambda d: f"{d.name}-{d.layout}-{d.dtype}")
def test_fixed_draws(d, poisoned):
    """Each fixed draw's Triton call matches the float64 reference, outputs poisoned."""
    assert fuzz.run(d) is None


@pytest.mark.parametrize("layout", fuzz.LAYOUTS)
def test_layouts(layout):
    """Each layout builds the call it names: same values as the batch-major call, the time axis
    where the layout puts it."""
    d = replace(_BASE, name="td_lambda", R=6, T=10, layout=layout)
    case, plain = fuzz.build(d), fuzz.build(replace(d, layout="batch"))
    rewards, plain_rewards = case.args[0], plain.args[0]
    time_dim = case.kwargs.get("time_dim", -1)
    assert torch.equal(rewards.movedim(time_dim, -1).reshape(6, 10), plain_rewards)
    if layout == "time_major":
        assert rewards.shape == (10, 6) and rewards.is_contiguous()
    elif layout == "middle":
        assert rewards.shape == (3, 10, 2) and time_dim == 1
    elif layout == "padded":
        assert rewards.stride() == (13, 1)
    elif layout == "misaligned":
        assert rewards.data_ptr() % 16 != 0
    # the reference agrees across layouts (its outputs come back in the layout's shape)
    out, ref = case(backend="reference")[0], plain(backend="reference")[0]
    assert torch.equal(out.movedim(time_dim, -1).reshape(6, 10), ref)


def test_draws_in_bounds():
    """Random draws respect the element bound and name only what the library takes."""
    import random

    rng = random.Random(5)
    for _ in range(500):
        d = fuzz.draw(rng, 1 << 12)
        assert d.R * d.T * max(d.features, 1) <= 1 << 12, d
        assert d.name in ESTIMATORS and d.layout in fuzz.LAYOUTS and d.R >= 1 and d.T >= 1
        assert not d.features or d.name in fuzz.FEATURED


def test_catches_wrong_and_unwritten(monkeypatch, poisoned):
    """The verdict fails an output off by more than the tolerance and one with an element left
    unwritten (NaN from the poisoned buffers), naming the output."""
    d = replace(_BASE, R=4, T=12)
    real = fuzz.build

    def shifted(d):
        case = real(d)
        fn = case.fn

        def wrong(*a, backend="triton", **k):
            out = fn()(*a, backend=backend, **k)
            if backend == "triton":
                out[1][0, 3] += 1e-3  # a value target, one element
            return out

        case.fn = lambda: wrong
        return case

    monkeypatch.setattr(fuzz, "build", shifted)
    why = fuzz.run(d)
    assert why is not None and "gae[1]" in why and "max abs error" in why

    def unwritten(d):
        case = real(d)
        fn = case.fn

        def hole(*a, backend="triton", **k):
            out = fn()(*a, backend=backend, **k)
            if backend == "triton":
                out[0][-1, -1] = float("nan")
            return out

        case.fn = lambda: hole
        return case

    monkeypatch.setattr(fuzz, "build", unwritten)
    why = fuzz.run(d)
    assert why is not None and "gae[0]" in why and "NaN" in why


def test_case_replays(capsys, monkeypatch):
    """``--case`` runs the draw a failure printed (as JSON) again."""
    from rltriton.kernels import launch

    for name in ("empty", "empty_like"):  # (main poisons them for good: put them back after)
        monkeypatch.setattr(launch, name, getattr(launch, name))
    assert fuzz.main(["--case", json.dumps(asdict(replace(_BASE, R=2, T=5)))]) == 0
    assert capsys.readouterr().out.strip() == "ok"
