"""The compiled entry point of a repeated call: a C++ replay of a recorded Triton launch.

A training loop calls an estimator with tensors of the same signature at every update; the
first call records its launch (:class:`rltriton.kernels.launch.Replay`) and later calls
replay it. The Python replay spends most of a call's host time outside the GPU's work: on
the H200's host a repeated GAE call at 32768 x 8 takes ~17 us to submit, 5 of them computing
the signature and looking it up, 4 allocating the two outputs with ``torch.empty_like`` and 8
launching. :file:`native_replay.cpp` does all of it in one C++ call: the signature from the
tensors' metadata, the lookup in a table per estimator instance, the outputs
(``at::empty_strided`` with the layout ``torch.empty_like`` gives) and the launch
(``cuLaunchKernel``, its parameters packed once when the replay is armed). The functional
API tries that table first; an estimator object's call reaches it from
:meth:`CreditAssigner._replay <rltriton.assigner.CreditAssigner._replay>`. On the H200 this
takes a repeated call's submit time from ~17 to ~8 us (``benchmarks/native_launch.py``).

The module is compiled once per torch/Python/source version with the system C++ compiler
(as Triton compiles its own launcher with the C compiler) against torch's headers and the CUDA
headers Triton ships, and kept in ``$RLTRITON_CACHE_DIR`` (default ``~/.cache/rltriton``).
By default (``RLTRITON_NATIVE`` unset or ``auto``) the first repeated CUDA call of a process
loads it, building it first when missing (~20 s, once per machine and torch version; a
failure, e.g. no C++ compiler, is warned about once and the calls take the Python replay).
``RLTRITON_NATIVE=prebuilt`` only loads a module built before, by::

    python -m rltriton.kernels.native        # or rltriton.kernels.native.build()

and ``RLTRITON_NATIVE=0`` turns it off. It is Linux only, and off on a free-threaded Python
(its table relies on the GIL). Without it every call takes the Python replay: the results are
the same bit for bit, only the host time differs.

Only the plain case is armed: one launch or several (a time split's two, whose scratch
buffers of segment summaries the table makes per call; not a cooperative split's barrier
counters, which are the stream's), each kernel compiled for one CTA a program with no
cooperative grid and no scratch memory (a programmatic dependent launch, ``launch._PDL``'s
PHASE 2, goes through ``cuLaunchKernelEx`` with its attribute), and a parameter
list whose sizes match what the driver reports for the compiled kernel
(``cuFuncGetParamInfo``). A call declines to the Python path (which handles everything) on a
signature it has not armed, while a Triton launch hook is set, in a thread with no current
CUDA context, or when a tensor the kernel was specialised as 16-byte aligned is not.
"""
from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import shutil
import struct
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

import torch

_SOURCE = Path(__file__).with_name("native_replay.cpp")
_NAME = "rltriton_native"

_module: Any = None
_tried = False
_poison = False


def _mode() -> str:
    return os.environ.get("RLTRITON_NATIVE", "auto").strip().lower()


def cache_dir() -> Path:
    """Where the compiled module is kept: ``$RLTRITON_CACHE_DIR`` or ``~/.cache/rltriton``."""
    root = os.environ.get("RLTRITON_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "rltriton"


def _tag() -> str:
    """The build's identity: the source, torch, Python and the C++ ABI."""
    h = hashlib.sha256(_SOURCE.read_bytes())
    h.update(f"{torch.__version__}|{sys.version}|{torch._C._GLIBCXX_USE_CXX11_ABI}".encode())
    return h.hexdigest()[:16]


def module_path() -> Path:
    """The compiled module's file for this source, torch and Python."""
    return cache_dir() / f"native-{_tag()}" / f"{_NAME}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"


def _compile_command(out: Path) -> list[str]:
    from torch.utils import cpp_extension

    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        raise RuntimeError("rltriton native: expected a C++ compiler (c++, g++ or clang++ on PATH, or $CXX), got none")
    import triton

    # cuda_runtime_api.h (under c10/cuda/CUDAStream.h) from the CUDA headers Triton ships, which
    # it compiles its own launcher with: no CUDA toolkit needed
    cuda_include = Path(triton.__file__).parent / "backends" / "nvidia" / "include"
    includes = [sysconfig.get_paths()["include"], *cpp_extension.include_paths(), str(cuda_include)]
    libs = cpp_extension.library_paths()
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    return [cxx, "-O2", "-shared", "-fPIC", "-std=c++20", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-w",
            *[f"-I{p}" for p in includes], str(_SOURCE), "-o", str(out),
            *[f"-L{p}" for p in libs], *[f"-Wl,-rpath,{p}" for p in libs],
            "-lc10", "-lc10_cuda", "-ltorch", "-ltorch_cpu", "-ltorch_python", "-ldl"]


def build(verbose: bool = False) -> Path:
    """Compile the module (if not already built) and return its path."""
    out = module_path()
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    # compile beside it under a temporary name, then rename: another process may be loading
    with tempfile.NamedTemporaryFile(dir=out.parent, suffix=out.suffix, delete=False) as f:
        tmp = Path(f.name)
    try:
        cmd = _compile_command(tmp)
        if verbose:
            print(" ".join(cmd), flush=True)
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"rltriton native: the compile failed ({res.returncode}):\n{res.stderr[-4000:]}")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def load() -> Any:
    """The compiled module, configured, or None where it is off, cannot be built or loaded,
    or there is no CUDA. Tried once a process (see the module's docstring for
    ``RLTRITON_NATIVE``)."""
    global _module, _tried
    if _tried:
        return _module
    _tried = True
    mode = _mode()
    if mode in ("0", "off", "false", "no") or not torch.cuda.is_available():
        return None
    # Linux only (dlopen of libcuda.so.1, as Triton's own launcher); and the table relies on the
    # GIL for its thread safety, so a free-threaded Python keeps the Python replay
    if not sys.platform.startswith("linux") or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return None
    path = module_path()
    try:
        if not path.exists():
            if mode == "prebuilt":
                return None
            build()
        mod = import_built(path)
        import triton

        from rltriton.kernels import launch

        mod.configure(getattr(getattr(triton, "knobs", None), "runtime", None))
    except (RuntimeError, OSError, ImportError) as exc:
        import warnings

        warnings.warn(f"rltriton: the compiled replay of repeated calls is not available ({str(exc)[:500]}); "
                      "repeated calls take the Python replay (same results, ~8 us more host time each). "
                      "RLTRITON_NATIVE=0 turns it off without this warning.", RuntimeWarning, stacklevel=2)
        return None
    mod.set_generation(launch._generation)
    mod.set_poison(_poison)
    _module = mod
    return mod


def import_built(path: Path) -> Any:
    """The compiled module at ``path``, imported (not configured: :func:`load` does that)."""
    spec = importlib.util.spec_from_file_location(_NAME, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"rltriton native: expected a loadable module at {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def set_poison(flag: bool) -> None:
    """Outputs of the compiled replay start NaN-filled (the tests' ``poisoned`` fixture)."""
    global _poison
    _poison = bool(flag)
    if _module is not None:
        _module.set_poison(_poison)


def loaded() -> Any:
    """The module if :func:`load` has loaded it, else None (never builds or loads)."""
    return _module


def new_table() -> Any:
    """An empty table of armed replays (one per estimator instance); needs :func:`load`."""
    return _module.Table()


# Triton's scalar parameter types and their struct codes (a cell is 8 bytes, little-endian;
# the driver reads the parameter's own size from the start of its cell).
_SCALARS = {"i1": "b", "i8": "b", "u1": "B", "u8": "B", "i16": "h", "u16": "H", "i32": "i", "u32": "I",
            "i64": "q", "u64": "Q", "fp32": "f", "f32": "f", "fp64": "d", "f64": "d"}


def step_spec(fast) -> tuple | None:
    """One launch of a replay (its :class:`~rltriton.kernels.launch._FastLaunch`) as
    :meth:`Table.add` takes it, or None where the plain launch does not apply: a kernel
    needing more than one CTA a program, a cooperative grid or scratch memory, an argument
    of a type not handled, or a parameter list whose sizes differ from the driver's. The
    replay's scratch buffers (source 2) are made by the table per call (:func:`arm`); its
    last field says whether the launch is a programmatic dependent one (``launch._PDL``)."""
    if fast is None:
        return None
    c = fast.compiled
    md = c.metadata
    if getattr(md, "num_ctas", 1) != 1 or getattr(md, "launch_cooperative_grid", False) \
            or getattr(md, "global_scratch_size", 0) or getattr(md, "profile_scratch_size", 0):
        return None
    cluster = getattr(md, "cluster_dims", None)
    if cluster is not None and tuple(cluster) not in ((), (1,), (1, 1), (1, 1, 1)):
        return None
    sig = getattr(getattr(c, "src", None), "signature", None)
    if not isinstance(sig, dict) or len(sig) != len(fast.values):
        return None
    where = dict(zip(fast.positions, fast.sources))
    aligned = {fast.positions[i] for i in fast.must_align}
    cells: list[bytes] = []
    sizes: list[int] = []
    slots: list[tuple[int, int, int, int]] = []
    for k, ty in enumerate(sig.values()):
        if ty == "constexpr":
            continue
        v = fast.values[k]
        if isinstance(ty, str) and ty.startswith("*"):
            if k in where:
                src, j = where[k]  # 0 the call's tensors, 1 its outputs, 2 its scratch buffers
                slots.append((len(cells), src, j, int(k in aligned)))
                v = 0
            elif v is None:
                v = 0
            elif not isinstance(v, int):
                return None
            cells.append(struct.pack("<Q", v))
            sizes.append(8)
        elif ty in _SCALARS:
            code = _SCALARS[ty]
            try:
                raw = struct.pack("<" + code, v)
            except (struct.error, TypeError):
                return None
            cells.append(raw.ljust(8, b"\0"))
            sizes.append(len(raw))
        else:
            return None
    driver = _module.param_sizes(int(c.function)) if _module is not None else None
    if not driver or len(driver) < len(sizes) or driver[: len(sizes)] != sizes:
        return None
    extra = driver[len(sizes):]  # the scratch pointers Triton appends (null: no scratch)
    if any(s != 8 for s in extra) or len(extra) > 4:
        return None
    cells += [bytes(8)] * len(extra)
    g = fast.grid
    return (int(c.function), int(g[0]), int(g[1]) if len(g) > 1 else 1, 32 * int(md.num_warps),
            int(md.shared), b"".join(cells), slots, c, bool(getattr(md, "launch_pdl", False)))


def arm(table: Any, replay, tensors: tuple, time_dim, backend) -> bool | None:
    """Arm ``replay`` (just run with ``tensors``) in ``table``: True when armed, False when it
    never can be (a cooperative split's barrier counters, a launch not plain), None when not
    yet (a launch of it has not been made fast yet). Its scratch buffers (a time split's
    segment summaries) the table makes per call, contiguous, as the Python replay does."""
    scratch = []
    for shape, dtype, _ in replay.scratch:
        if shape is None:  # the barrier's counters: the current stream's, not made per call
            return False
        scratch.append((math.prod(shape), dtype))
    steps = []
    for st in replay.steps:
        if st.fast is None:
            return None
        spec = step_spec(st.fast)
        if spec is None:
            return False
        steps.append(spec)
    return bool(table.add(tensors, time_dim, backend, steps, list(replay.out_dtypes), scratch))


if __name__ == "__main__":
    print(build(verbose="-v" in sys.argv))
