"""Host time of a repeated call with its kernel launched through the CUDA driver directly
(``cuLaunchKernel`` through ctypes: the kernel's parameters packed once, only the tensor
addresses rewritten per call) in place of Triton's launcher (``launch._FastLaunch``), side
by side in one process, and the time of allocating two outputs. Session 23's probe, as run
on the H200 (``2026-12-02-h200-s23-host-launch.txt``; it found no gain: the driver's launch
itself costs about what Triton's C launcher does)::

    python benchmarks/driver_launch.py        # on a GPU machine (Triton 3.6 was timed)

The parameters come from the compiled kernel's signature (constexprs left out) and the
trailing scratch pointers Triton adds from the driver's own count (``cuFuncGetParamInfo``);
each case first checks that the driver launch writes the same outputs, bit for bit, and
prints the packed signature and the kernel's launch metadata.
"""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import triton  # noqa: E402

from benchmarks.common import full_call_us  # noqa: E402
from benchmarks.host import repeated_call, submit_us  # noqa: E402
from rltriton.kernels import launch  # noqa: E402

cu = ctypes.CDLL("libcuda.so.1")
cuLaunchKernel = cu.cuLaunchKernel
cuLaunchKernel.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                           ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.c_void_p]
cuLaunchKernel.restype = ctypes.c_int
try:
    cuFuncGetParamInfo = cu.cuFuncGetParamInfo
    cuFuncGetParamInfo.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t),
                                   ctypes.POINTER(ctypes.c_size_t)]
    cuFuncGetParamInfo.restype = ctypes.c_int
except AttributeError:
    cuFuncGetParamInfo = None

CT = {"i1": ctypes.c_int8, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
      "i64": ctypes.c_int64, "u1": ctypes.c_uint8, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16,
      "u32": ctypes.c_uint32, "u64": ctypes.c_uint64, "fp32": ctypes.c_float, "f32": ctypes.c_float,
      "fp64": ctypes.c_double, "f64": ctypes.c_double}


def param_info(func: int) -> list[tuple[int, int]]:
    out = []
    if cuFuncGetParamInfo is None:
        return out
    off, size = ctypes.c_size_t(), ctypes.c_size_t()
    for i in range(512):
        if cuFuncGetParamInfo(ctypes.c_void_p(func), i, ctypes.byref(off), ctypes.byref(size)) != 0:
            break
        out.append((off.value, size.value))
    return out


class CtypesLaunch:
    def __init__(self, fast) -> None:
        c = fast.compiled
        sig = c.src.signature
        names = list(sig.keys())
        types = list(sig.values())
        values = fast.values
        assert len(values) == len(types), (len(values), len(types))
        self.objs = []
        self.slot_obj = {}
        pos = dict(zip(fast.positions, fast.sources))
        for k, (n, ty) in enumerate(zip(names, types)):
            if ty == "constexpr":
                continue
            if ty.startswith("*"):
                o = ctypes.c_uint64(0)
                if k in pos:
                    self.slot_obj[k] = o
                else:
                    v = values[k]
                    o.value = 0 if v is None else (v if isinstance(v, int) else v.data_ptr())
            else:
                o = CT[ty](values[k])
            self.objs.append((n, ty, o))
        info = param_info(c.function)
        extra = len(info) - len(self.objs)
        self.info = info
        self.extra = extra
        for i in range(max(extra, 0)):
            self.objs.append((f"scratch{i}", "*i8", ctypes.c_uint64(0)))
        sizes_ok = all(ctypes.sizeof(o) == s for (_, _, o), (_, s) in zip(self.objs, info)) if info else None
        self.sizes_ok = sizes_ok
        arr = (ctypes.c_void_p * len(self.objs))(*[ctypes.cast(ctypes.byref(o), ctypes.c_void_p)
                                                   for _, _, o in self.objs])
        self.arr = arr
        self.params = ctypes.cast(arr, ctypes.c_void_p)
        md = c.metadata
        self.block = 32 * md.num_warps
        self.shared = md.shared
        self.func = ctypes.c_void_p(c.function)
        self.grid = (int(fast.grid[0]), int(fast.grid[1]))
        self.slots = [(self.slot_obj[k], src, j) for k, (src, j) in zip(fast.positions, fast.sources)]
        self.get_stream = torch._C._cuda_getCurrentRawStream
        self.get_device = torch._C._cuda_getDevice
        self.meta = (getattr(md, "num_ctas", 1), getattr(md, "launch_cooperative_grid", False),
                     getattr(md, "launch_pdl", False), getattr(md, "global_scratch_size", 0),
                     getattr(md, "profile_scratch_size", 0), getattr(md, "cluster_dims", None))

    def __call__(self, sources) -> bool:
        for o, src, j in self.slots:
            o.value = sources[src][j].data_ptr()
        err = cuLaunchKernel(self.func, self.grid[0], self.grid[1], 1, self.block, 1, 1, self.shared,
                             self.get_stream(self.get_device()), self.params, None)
        if err:
            raise RuntimeError(f"cuLaunchKernel {err}")
        return True


def find_fast():
    import gc

    from rltriton.assigner import CreditAssigner
    found = []
    for o in gc.get_objects():
        if isinstance(o, CreditAssigner):
            for rp in o._replays.values():
                for st in rp.steps:
                    if st.fast is not None:
                        found.append(st)
    return found


def main() -> None:
    rows = []
    for name, shape in [("gae", (32768, 8)), ("gae", (4096, 32)), ("vtrace", (32768, 8)), ("td_lambda", (16384, 16))]:
        launch.clear_caches()
        import gc
        gc.collect()
        call, case = repeated_call(name, shape)
        steps = [s for s in find_fast()]
        # the latest step objects belong to this call (replays are per instance; keep the last)
        st = steps[-1]
        fast = st.fast
        ref = [o.clone() for o in call()]
        ctl = CtypesLaunch(fast)
        print(name, shape, "params", len(ctl.objs), "driver", len(ctl.info), "extra", ctl.extra, "sizes_ok",
              ctl.sizes_ok, "meta", ctl.meta, flush=True)
        print("  sig", [(n, t) for n, t, _ in ctl.objs], flush=True)
        # correctness: ctypes launch in place of the fast launch
        orig = st.fast
        st.fast = ctl
        try:
            outs = call()
            torch.cuda.synchronize()
            ok = all(torch.equal(a, b) for a, b in zip(ref, outs))
            # poison: outputs must be written
            print("  ctypes launch equal:", ok, flush=True)
            res = {"call": [], "call_ctypes": [], "full": [], "full_ctypes": [], "empty2": [], "fast_only": [],
                   "ctypes_only": []}
            like = case.args[0]
            for _ in range(5):
                st.fast = orig
                res["call"].append(submit_us(call))
                res["full"].append(full_call_us(call, calls=30, trials=2, warmup=5))
                st.fast = ctl
                res["call_ctypes"].append(submit_us(call))
                res["full_ctypes"].append(full_call_us(call, calls=30, trials=2, warmup=5))
                res["empty2"].append(submit_us(lambda like=like: (torch.empty_like(like), torch.empty_like(like))))
            print("  " + " ".join(f"{k}={min(v):.1f}" for k, v in res.items() if v), flush=True)
            rows.append((name, shape, {k: min(v) for k, v in res.items() if v}))
        finally:
            st.fast = orig
    print("\n| case | call submit | ctypes submit | full | full ctypes | 2x empty_like |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, shape, r in rows:
        print(f"| {name} {shape[0]}x{shape[1]} | {r['call']:.1f} | {r['call_ctypes']:.1f} | {r['full']:.1f} | "
              f"{r['full_ctypes']:.1f} | {r['empty2']:.1f} |")


if __name__ == "__main__":
    import os

    os.environ["RLTRITON_NATIVE"] = "0"  # the Python replay's launch is what is swapped here
    print(torch.__version__, triton.__version__, torch.cuda.get_device_name())
    main()
