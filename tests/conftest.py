"""Test configuration.

Without a GPU, Triton kernels run on CPU tensors through the interpreter: the variable
must be set before the kernels are defined (``triton.jit`` reads it then), so it is set
here, before any test imports :mod:`rltriton.kernels`. On a GPU machine the ``gpu``-marked
tests run the compiled kernels instead (``pytest -m gpu``).
"""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"


def _nan_empty_like(x, *args, **kwargs):
    return torch.empty_like(x, *args, **kwargs).fill_(float("nan"))


def _nan_empty(*args, **kwargs):
    return torch.empty(*args, **kwargs).fill_(float("nan"))


@pytest.fixture
def poisoned(monkeypatch):
    """Kernel outputs start NaN-filled: an element a kernel does not write fails the test."""
    from rltriton.kernels import launch

    monkeypatch.setattr(launch, "empty_like", _nan_empty_like)
    monkeypatch.setattr(launch, "empty", _nan_empty)
    return launch


def use_small_tiles(monkeypatch, launch, split: bool, lookback: bool = False, coop: bool = False) -> None:
    """Tiny tiles (BLOCK_T <= 16, 64 elements; time-major: 4 x 4) so small shapes span
    several time chunks and several row programs. ``split`` also cuts every multi-chunk row
    into time segments (the two-phase path the GPU takes for long rows; with ``lookback``,
    the single-pass decoupled look-back instead, with ``coop`` the cooperative single pass,
    here its interpreter form, PHASE 5 launched twice; time-major tiles always split in two
    passes); otherwise one pass per row."""
    monkeypatch.setattr(launch, "_MAX_BLOCK_T", 16)
    monkeypatch.setattr(launch, "_TILE", 64)
    monkeypatch.setattr(launch, "_SPLIT_MIN_ELEMS", 0 if split else 1 << 62)
    monkeypatch.setattr(launch, "_TM_SPLIT_MIN_ELEMS", 0 if split else 1 << 62)
    monkeypatch.setattr(launch, "_MAX_SEGMENTS", 3)
    monkeypatch.setattr(launch, "_SPLIT_MIN_CHUNKS", 2)
    monkeypatch.setattr(launch, "_SEG_STEPS", 32)
    monkeypatch.setattr(launch, "_LOOKBACK", lookback)
    monkeypatch.setattr(launch, "_COOP", coop)
    # rows longer than the tiny _MAX_BLOCK_T stand for long rows: never one chunk a row
    monkeypatch.setattr(launch, "_ONE_CHUNK", False)
    # time-major storage takes its own tiles from one row on: 4 rows by 4 steps on 2 warps,
    # so T = 63 spans 16 chunks (and 3 segments when split; unsplit, the tiles are kept
    # however few the row programs), never the one-chunk tiles of short rows
    monkeypatch.setattr(launch, "_TM_MIN_ROWS", 1)
    monkeypatch.setattr(launch, "_TM_MIN_STEPS", 2)
    monkeypatch.setattr(launch, "_TM_SPLIT_BELOW", 1 << 30 if split else 0)
    monkeypatch.setattr(launch, "_TM_PROGRAMS_PER_SM", 1)
    monkeypatch.setattr(launch, "_TM_ONE_CHUNK_T", 0)
    monkeypatch.setattr(launch, "_TM_ROWS", 4)
    monkeypatch.setattr(launch, "_TM_STEPS", 4)
    monkeypatch.setattr(launch, "_TM_WARPS", 2)
    monkeypatch.setattr(launch, "_TM_MAX_SEGMENTS", 3)
    monkeypatch.setattr(launch, "_TM_NARROW_MIN_T", 1 << 30)  # keep _TM_ROWS
    launch.clear_caches()


def plans_used(monkeypatch, launch, what=lambda pl, kw: pl) -> list:
    """Record the plan (or ``what(plan, kwargs)``, with ``kwargs`` the constexprs and launch
    options of the call's first kernel launch, as ``launch.launch_specs`` made them) of every
    launch the Triton backend makes."""
    used = []
    specs = launch.launch_specs

    def spy(kernel, lanes, T, pl, *rest):
        out = specs(kernel, lanes, T, pl, *rest)
        used.append(what(pl, out[0][0][3]))
        return out

    monkeypatch.setattr(launch, "launch_specs", spy)
    return used


def launches_used(monkeypatch, launch) -> list:
    """Record, for every call the Triton backend makes, its kernel launches as
    ``launch.launch_specs`` made them: a list of ``(kernel, grid, args, kwargs)`` per call
    (one launch, or the two passes of a split)."""
    used = []
    specs = launch.launch_specs

    def spy(*a, **k):
        out = specs(*a, **k)
        used.append(out[0])
        return out

    monkeypatch.setattr(launch, "launch_specs", spy)
    return used


@pytest.fixture
def small_tiles(monkeypatch, poisoned):
    """Small tiles with the time split (see :func:`use_small_tiles`)."""
    use_small_tiles(monkeypatch, poisoned, split=True)
    yield poisoned
    poisoned.clear_caches()
