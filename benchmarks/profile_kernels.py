"""Per-kernel GPU times and register use of one call, for finding where a call's time goes.

    python benchmarks/profile_kernels.py gae 16x262144,1x1048576 [_LOOKBACK=True ...]   # on a GPU
    PROFILE_TIME_MAJOR=1 python benchmarks/profile_kernels.py td_lambda 512x2048   # [T, N] storage

For each shape: the call's kernels (torch.profiler, CUDA time per call, averaged over 50
calls: the fill of a scratch buffer, each pass of a time split) and, for each Triton kernel
compiled so far, its registers per thread, spilled bytes, shared memory and warps (from
Triton's cache of compiled kernels). Trailing ``NAME=VALUE`` arguments set
``rltriton.kernels.launch`` settings first (``_LOOKBACK=True``), as ``benchmarks/ab.py``'s
version folders do with a sed. Nothing here is a benchmark result: ``run.py`` times calls.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import apply_launch_settings  # noqa: E402
from rltriton.kernels import backward, forward, launch  # noqa: E402
from tests.rollouts import make_case, on_gpu  # noqa: E402

KERNELS = {name: getattr(mod, name) for mod in (backward, forward) for name in dir(mod)
           if name.endswith("_kernel") and hasattr(getattr(mod, name), "device_caches")}


def compiled_kernels() -> list[tuple[str, object]]:
    """(name, compiled kernel) of every Triton kernel compiled in this process."""
    out = []
    for name, fn in KERNELS.items():
        for cache in fn.device_caches.values():
            for k in cache[0].values():
                out.append((name, k))
    return out


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "gae"
    spec = sys.argv[2] if len(sys.argv) > 2 else "16x262144"
    shapes = [tuple(int(x) for x in s.split("x")) for s in spec.split(",")]
    apply_launch_settings(sys.argv[3:])
    for setting in sys.argv[3:]:
        print(f"launch.{setting.replace('=', ' = ', 1)}")
    launch.clear_caches()
    time_major = os.environ.get("PROFILE_TIME_MAJOR", "") not in ("", "0")
    for shape in shapes:
        case = on_gpu(make_case(name, shape, flags="terminated", seed=0, time_major=time_major))
        for _ in range(5):
            case(backend="triton")
        torch.cuda.synchronize()
        calls = 50
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                case(backend="triton")
            torch.cuda.synchronize()
        pl = launch.plan_for(shape[0], shape[1], torch.device("cuda"), time_major=time_major,
                             long_rows=launch._LONG_ROWS.get(name.split("_av")[0], launch._LONG_ROWS_DEFAULT))
        print(f"\n{name} {shape[0]}x{shape[1]}{' time-major' if time_major else ''}  plan {tuple(pl)}")
        for ev in sorted(prof.key_averages(), key=lambda e: -e.device_time_total):
            if ev.device_time_total > 0:
                print(f"  {ev.device_time_total / calls:8.2f} us/call  x{ev.count / calls:.0f}  {ev.key[:90]}")
    print("\ncompiled kernels: registers, spills (bytes), shared (bytes), warps, constants")
    for kname, k in compiled_kernels():
        md = k.metadata
        keep = {}
        try:  # Triton 3.x: constants keyed by (argument index,)
            names = k.src.fn.arg_names
            for key, v in k.src.constants.items():
                arg = names[key[0]] if isinstance(key, tuple) else key
                if arg in ("PHASE", "BLOCK_N", "BLOCK_T", "ONE_CHUNK", "GROUP_TILES", "S_BLOCK"):
                    keep[arg] = v
        except (AttributeError, IndexError, TypeError):
            pass
        print(f"  {kname:16} regs {k.n_regs:4} spills {k.n_spills:5} shared {md.shared:6} "
              f"warps {md.num_warps:2}  {keep}")


if __name__ == "__main__":
    main()
