"""Replays of repeated calls (rltriton.kernels.launch.Replay): a second call with the same
signature re-issues the recorded launch with the new tensors. Every replayed result is checked
against the float64 oracle, with NaN-poisoned outputs."""

from __future__ import annotations

import pytest
import torch

import rltriton as rt
from tests.conftest import INTERPRET
from tests.rollouts import Case, assert_matches, make_case

pytestmark = pytest.mark.skipif(not INTERPRET, reason="Triton on CPU tensors needs TRITON_INTERPRET=1")

REPLAYED = ("gae", "td_lambda", "discounted_returns", "vtrace", "retrace", "retrace_av", "traces", "prefix_sum")


@pytest.fixture(autouse=True)
def _fresh(poisoned):
    poisoned.clear_caches()
    yield
    poisoned.clear_caches()


def _check(case: Case) -> None:
    for i, (o, r) in enumerate(zip(case(backend="triton"), case(backend="reference"))):
        assert_matches(o, r, case, f"{case.name}[{i}]")


@pytest.mark.parametrize("name", REPLAYED)
@pytest.mark.parametrize("time_major", [False, True])
def test_repeated_calls_use_the_new_tensors(name, time_major, monkeypatch):
    from rltriton.kernels import launch

    built = []
    orig = launch.Replay.build

    def spy(*a, **k):
        r = orig(*a, **k)
        built.append(r)
        return r

    monkeypatch.setattr(launch.Replay, "build", staticmethod(spy))
    replayed = []
    orig_call = launch.Replay.__call__
    monkeypatch.setattr(launch.Replay, "__call__", lambda self, t: replayed.append(1) or orig_call(self, t))
    for seed in (0, 2, 4):  # same shapes, strides, dtypes (and prefix boundary): calls 2, 3 replay
        _check(make_case(name, (6, 40), time_major=time_major, seed=seed))
    assert built and built[0] is not None, "the first call was not recorded"
    assert len(replayed) == 2, f"expected 2 replays, got {len(replayed)}"


def test_signature_changes_are_not_replayed():
    """Another layout, dtype, flag set or bootstrap form takes the full path."""
    cases = [
        make_case("gae", (6, 40), seed=1),
        make_case("gae", (6, 40), seed=2, time_major=True),
        make_case("gae", (6, 40), seed=3, dtype=torch.bfloat16),
        make_case("gae", (6, 40), seed=4, flags="terminated"),
        make_case("gae", (6, 40), seed=5, bootstrap="next_values"),
        make_case("gae", (7, 40), seed=6),
        make_case("gae", (6, 40), seed=7),
    ]
    for c in cases:
        _check(c)


def test_aliased_tensors_are_not_mixed_up():
    """A call that passes one tensor in two slots (q_values is state_values) must not teach
    the replay that both slots are the same tensor."""
    g = torch.Generator().manual_seed(0)
    r, q, lr = (torch.randn(4, 30, generator=g) for _ in range(3))
    v = torch.randn(4, 30, generator=g)
    first = rt.retrace(r, q, q, lr, gamma=0.9, backend="triton")
    ref = rt.retrace(r, q, q, lr, gamma=0.9, backend="reference")
    torch.testing.assert_close(first.q_targets, ref.q_targets)
    second = rt.retrace(r, q, v, lr, gamma=0.9, backend="triton")
    ref2 = rt.retrace(r, q, v, lr, gamma=0.9, backend="reference")
    torch.testing.assert_close(second.advantages, ref2.advantages)


def test_requires_grad_is_part_of_the_signature():
    g = torch.Generator().manual_seed(1)
    r, v = torch.randn(3, 9, generator=g), torch.randn(3, 9, generator=g)
    rt.gae(r, v, gamma=0.9, lam=0.9, backend="auto")  # torch on CPU: nothing recorded
    rt.gae(r, v, gamma=0.9, lam=0.9, backend="triton")
    rg = r.clone().requires_grad_()
    adv, _ = rt.gae(rg, v, gamma=0.9, lam=0.9, backend="auto")
    assert adv.requires_grad
    with pytest.raises(ValueError, match="require grad"):
        rt.gae(rg, v, gamma=0.9, lam=0.9, backend="triton")


def test_triton_interpret_is_part_of_the_signature(monkeypatch):
    """A replay recorded under TRITON_INTERPRET=1 is not used once it is unset."""
    g = torch.Generator().manual_seed(2)
    r, v = torch.randn(3, 9, generator=g), torch.randn(3, 9, generator=g)
    rt.gae(r, v, gamma=0.9, lam=0.9, backend="triton")
    rt.gae(r, v, gamma=0.9, lam=0.9, backend="triton")
    monkeypatch.delenv("TRITON_INTERPRET")
    with pytest.raises(ValueError, match="TRITON_INTERPRET"):
        rt.gae(r, v, gamma=0.9, lam=0.9, backend="triton")


@pytest.mark.parametrize("name", ["traces", "prefix_sum"])
def test_feature_dims_are_replayed(name, monkeypatch):
    from rltriton.kernels import launch

    replayed = []
    orig_call = launch.Replay.__call__
    monkeypatch.setattr(launch.Replay, "__call__", lambda self, t: replayed.append(1) or orig_call(self, t))
    for seed in (0, 2, 4):
        _check(make_case(name, (4, 30), n_features=(3, 2), seed=seed))
    assert len(replayed) == 2


@pytest.mark.parametrize("name", REPLAYED)
def test_time_split_is_replayed(name, monkeypatch, poisoned):
    """The two passes of a time split replay too, each with fresh scratch summaries; the
    look-back pass (flags that must start zeroed) is not replayed."""
    from rltriton.kernels import launch
    from tests.conftest import use_small_tiles

    use_small_tiles(monkeypatch, poisoned, split=True)
    assert launch.plan(6, 63).segments > 1
    replayed = []
    orig_call = launch.Replay.__call__
    monkeypatch.setattr(launch.Replay, "__call__", lambda self, t: replayed.append(len(self.steps)) or
                        orig_call(self, t))
    for seed in (1, 3, 5):
        _check(make_case(name, (6, 63), seed=seed))
    assert replayed == [2, 2], f"expected two replays of two launches, got {replayed}"

    use_small_tiles(monkeypatch, poisoned, split=True, lookback=True)
    replayed.clear()
    for seed in (1, 3):
        _check(make_case(name, (6, 63), seed=seed))
    assert replayed == []


@pytest.mark.parametrize("name", REPLAYED)
@pytest.mark.parametrize("mode", ["one-pass", "split", "flat"])
def test_every_launch_binds_its_constexprs(name, mode, monkeypatch, poisoned):
    """A fast replay (launch._FastLaunch: compiled GPU kernels only) launches with every
    parameter after the arguments bound: from the launch's keywords or, where the launch
    left one out, the parameter's default, which the kernel was compiled with. Every launch
    the Triton backend makes (one pass, the two passes of a split, Triton < 3.7's rows laid
    end to end) must give that tuple: a None is a replay that falls back to ``kernel[grid]``
    on the GPU, ~20-40 us of host time a call (``SEG_GROUPS`` left out of every
    non-flat GAE, V-trace and Retrace launch did that, found on the H200 in session 12)."""
    from tests.conftest import launches_used, use_small_tiles

    if mode == "split":
        use_small_tiles(monkeypatch, poisoned, split=True)
    if mode == "flat":
        for key, value in dict(_GROUP_TILES=False, _GROUP_SCAN=True, _GROUP_SCAN_FLAT=True).items():
            monkeypatch.setattr(poisoned, key, value)
    used = launches_used(monkeypatch, poisoned)
    poisoned.clear_caches()
    _check(make_case(name, (64, 16) if mode == "flat" else (5, 63), seed=3))
    seen = used[0]  # the launches of the first call (the triton backend's)
    assert len(seen) == (2 if mode == "split" else 1), seen
    for kernel, _, args, kw in seen:
        names = kernel.arg_names[len(args):]
        consts = poisoned._FastLaunch.constexprs(kernel, len(args), kw)
        assert consts is not None and len(consts) == len(names), (names, sorted(kw))
        assert all(c == kw[n] for n, c in zip(names, consts) if n in kw)
        if mode == "flat" and poisoned._FLAT_SEGMENTED and "SEG_GROUPS" in names:
            assert kw["SEG_GROUPS"] == 4  # segmented at the rows' starts: 16-step tiles, 4 groups


class _Launcher:
    """Stand-ins for a compiled kernel and the active Triton driver: ``run`` records what the
    fast launch hands Triton's launcher, ``launch_metadata`` how often it is asked for."""

    function, packed_metadata = 1234, (4, 1, 0)

    def __init__(self) -> None:
        self.runs: list[tuple] = []
        self.metadata_calls = 0

    def run(self, *args) -> None:
        self.runs.append(args)

    def launch_metadata(self, *args) -> str:
        self.metadata_calls += 1
        return "meta"

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int) -> int:
        return 99


@pytest.mark.parametrize("generated", [True, False])
def test_fast_launch_arguments_hooks_and_alignment(generated, monkeypatch):
    """What ``launch._FastLaunch`` hands Triton's launcher (host logic, stand-in kernel and
    driver; the real launches run in tests/test_gpu.py): the recorded arguments with each
    tensor's address in its slot, then the constexprs; an empty launch-hook chain (Triton's
    default) goes as None and the launch metadata is not computed, a chain with a hook goes
    as it is, with the metadata. A tensor recorded 16-byte aligned must stay aligned (else
    no launch, False: the caller falls back to ``kernel[grid]``); one recorded unaligned may
    come aligned (code compiled without the assumption is right at any address). The same
    through the function generated for the launch and through ``_FastLaunch.general``."""
    import triton
    from triton.knobs import HookChain

    from rltriton.kernels import launch

    fake = _Launcher()
    monkeypatch.setattr(triton.runtime.driver, "_active", fake)
    monkeypatch.setattr(torch._C, "_cuda_getDevice", lambda: 0, raising=False)
    monkeypatch.setattr(triton.knobs.runtime, "launch_enter_hook", HookChain())
    monkeypatch.setattr(triton.knobs.runtime, "launch_exit_hook", HookChain(reversed=True))
    buf = torch.zeros(64)
    a, b, odd = buf[:16], buf[16:32], buf[1:17]
    assert a.data_ptr() % 16 == 0 and b.data_ptr() % 16 == 0 and odd.data_ptr() % 16 != 0
    template = [None, 7, None, 3]  # two tensor slots: an input and an output
    slots = ((0, 0, 0), (2, 1, 0))
    monkeypatch.setattr(launch._FastLaunch, "GENERATED", generated)
    fast = launch._FastLaunch(fake, (5, 2), slots, (True, False), template, ("C1", 2))
    assert fast.call is not fast.general

    assert fast(((a,), (odd,), ()))
    run = fake.runs[-1]
    assert run[:3] == (5, 2, 1) and run[3] == 99 and run[4] == fake.function
    assert run[6:9] == (None, None, None)  # metadata, enter hook, exit hook
    assert list(run[9:]) == [a.data_ptr(), 7, odd.data_ptr(), 3, "C1", 2]
    assert fake.metadata_calls == 0
    assert fast(((b,), (a,), ())) and list(fake.runs[-1][9:11]) == [b.data_ptr(), 7]  # unaligned slot, now aligned

    n = len(fake.runs)
    assert not fast(((odd,), (a,), ()))  # the aligned slot, now misaligned
    assert len(fake.runs) == n

    seen = []
    triton.knobs.runtime.launch_enter_hook.add(seen.append)
    assert fast(((a,), (b,), ()))
    run = fake.runs[-1]
    assert run[6] == "meta" and run[7] is triton.knobs.runtime.launch_enter_hook and run[8] is None
    assert fake.metadata_calls == 1

    all_aligned = launch._FastLaunch(fake, (1, 1), slots, (True, True), template, ())
    assert all_aligned(((a,), (b,), ()))
    assert not all_aligned(((a,), (odd,), ()))
