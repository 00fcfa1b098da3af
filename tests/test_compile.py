"""``torch.compile(fullgraph=True)`` of code that calls the estimators: no graph break (the
calls become the ``rltriton::estimate`` custom op) and the same results as eager.

CPU here (the op runs the torch backend inside); the GPU counterparts (Triton inside, and
CUDA-graph capture) are in tests/test_gpu.py.
"""

from __future__ import annotations

import pytest
import torch

import rltriton as rt
from tests.rollouts import ESTIMATORS, make_case


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("time_major", [False, True])
def test_fullgraph_matches_eager(name, time_major):
    case = make_case(name, (5, 17), per_step=name in ("gae", "traces"), time_major=time_major, seed=3)
    fn, args, kw = case.fn(), case.args, case.kwargs

    def f(*a):
        out = fn(*a, **kw)
        out = tuple(out) if isinstance(out, tuple) else (out,)
        return tuple(o * 2.0 for o in out)  # something after the call, in the same graph

    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    got = compiled(*args)
    want = f(*args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        torch.testing.assert_close(g, w, rtol=0, atol=0)


def test_classes_and_tensor_gamma_compile():
    N, T = 4, 9
    g = torch.Generator().manual_seed(0)
    r, v = torch.randn(N, T, generator=g), torch.randn(N, T, generator=g)
    term = torch.rand(N, T, generator=g) < 0.2
    gamma = torch.full((T,), 0.9)
    est = rt.GAE(gamma, 0.8)
    vt = rt.VTrace(0.97, lam=0.9, rho_bar=1.0, c_bar=0.8)

    def f(r, v, term):
        adv, tgt = est(r, v, terminated=term, last_value=v[:, -1])
        vs, pg = vt(r, v, 0.1 * v, terminated=term)
        return adv + vs, tgt - pg

    torch._dynamo.reset()
    got = torch.compile(f, fullgraph=True, backend="aot_eager")(r, v, term)
    want = f(r, v, term)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_inductor_fullgraph():
    """The default backend (inductor) compiles a PPO-style advantage normalisation around GAE."""
    N, T = 8, 32
    g = torch.Generator().manual_seed(1)
    r, v = torch.randn(N, T, generator=g), torch.randn(N, T, generator=g)
    term = torch.rand(N, T, generator=g) < 0.1

    def f(r, v, term):
        adv, tgt = rt.gae(r, v, gamma=0.99, lam=0.95, terminated=term, last_value=v[:, -1])
        return (adv - adv.mean()) / (adv.std() + 1e-8), tgt

    torch._dynamo.reset()
    got = torch.compile(f, fullgraph=True)(r, v, term)
    want = f(r, v, term)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
