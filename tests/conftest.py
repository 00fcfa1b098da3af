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


def use_small_tiles(monkeypatch, launch, split: bool, lookback: bool = False) -> None:
    """Tiny tiles (BLOCK_T <= 16, 64 elements) so small shapes span several time chunks and
    several row programs. ``split`` also cuts every multi-chunk row into time segments (the
    two-phase path the GPU takes for long rows; with ``lookback``, the single-pass
    decoupled look-back instead); otherwise one pass per row."""
    monkeypatch.setattr(launch, "_MAX_BLOCK_T", 16)
    monkeypatch.setattr(launch, "_TILE", 64)
    monkeypatch.setattr(launch, "_SPLIT_MIN_ELEMS", 0 if split else 1 << 62)
    monkeypatch.setattr(launch, "_MAX_SEGMENTS", 3)
    monkeypatch.setattr(launch, "_SPLIT_MIN_CHUNKS", 2)
    monkeypatch.setattr(launch, "_SEG_STEPS", 32)
    monkeypatch.setattr(launch, "_LOOKBACK", lookback)
    launch.clear_caches()


@pytest.fixture
def small_tiles(monkeypatch, poisoned):
    """Small tiles with the time split (see :func:`use_small_tiles`)."""
    use_small_tiles(monkeypatch, poisoned, split=True)
    yield poisoned
    poisoned.clear_caches()
