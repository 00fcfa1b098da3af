"""SASS instructions per thread of the kernel launches of one rltriton call, compiled for
sm_90 on any machine (no GPU: Triton's wheel carries ptxas, cuobjdump and nvdisasm):

    python benchmarks/sass_counts.py discounted_returns 16x262144           # each launch, by opcode
    python benchmarks/sass_counts.py td_lambda 16x262144 _INTERIOR=False     # with a launch setting
    python benchmarks/sass_counts.py gae 16x262144 --lines 30                # the top source lines
    python benchmarks/sass_counts.py gae 4096x512 tm                         # time-major storage
    python benchmarks/sass_counts.py gae 256x1024 tm tmplan=8,1024,16        # a forced time-major lanes tile

The call's launches (kernel, grid, arguments, constexprs) are taken as the launcher makes
them for a CUDA device of ``launch._DEFAULT_SMS`` multiprocessors, in a child process under
``TRITON_INTERPRET=1`` (no kernel runs: the launch specs are recorded and the call stopped),
then each kernel is compiled in this process with Triton's usual specialisations of its
arguments (16-divisible pointers and integers, integers equal to 1 as constants). Trailing
``NAME=VALUE`` arguments set ``rltriton.kernels.launch`` settings as in
``benchmarks/common.apply_launch_settings``. The kernels of the long split rows issue an
instruction on most cycles (Nsight Compute, H200: 0.75 warps a scheduler a cycle for PHASE 1
of discounted returns at 16 x 262144), so the count per element is what their time follows
(session 33: ``launch._INTERIOR``). A static guide, not a timing: the H200 decides.
"""

from __future__ import annotations

import collections
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the launch specs' tensor dtypes as Triton signature types
_PTR = {"torch.float32": "*fp32", "torch.bool": "*i1", "torch.bfloat16": "*bf16", "torch.float64": "*fp64",
        "torch.int64": "*i64", "torch.int32": "*i32", "torch.float16": "*fp16", "torch.uint8": "*u8"}
_DT = {"fp32": "float32", "bf16": "bfloat16", "fp64": "float64", "fp16": "float16"}


def capture(name: str, shape: tuple[int, int], settings: list[str]) -> list[dict]:
    """The launches of one call of estimator ``name`` (a ``tests.rollouts`` name, terminations
    as flags) on a [R, T] rollout (stored time-major, [T, R], with ``tm`` among ``settings``),
    as JSON-able dicts (run under ``TRITON_INTERPRET=1``)."""
    import torch

    from benchmarks.common import apply_launch_settings
    from rltriton.kernels import launch
    from tests.rollouts import make_case

    class Stop(Exception):
        pass

    got: list = []
    orig = launch.launch_specs
    real, real_pdl = launch._device_sms, launch._pdl

    def spy(*a, **k):
        got.append(orig(*a, **k)[0])
        raise Stop

    time_major = "tm" in settings
    settings = [x for x in settings if x != "tm"]
    apply_launch_settings(settings, time_major=time_major)
    launch.launch_specs = spy
    launch._device_sms = lambda device: launch._DEFAULT_SMS  # (the CPU's tensors stand for a GPU's)
    launch._pdl = lambda device: launch._PDL  # (an sm_90 one)
    launch.clear_caches()
    try:
        make_case(name, shape, flags="terminated", seed=0, time_major=time_major)(backend="triton")
    except Stop:
        pass
    finally:
        launch.launch_specs = orig
        launch._device_sms, launch._pdl = real, real_pdl
    out = []
    for kernel, grid, args, kw in got[0]:
        sig = [("ptr", _PTR[str(a.dtype)]) if isinstance(a, torch.Tensor)
               else ("int", int(a)) if isinstance(a, (bool, int)) else ("float", float(a)) for a in args]
        kw = {k: v if isinstance(v, (bool, int, float)) else "DT:" + str(v) for k, v in kw.items()}
        out.append(dict(kernel=kernel.fn.__name__, module=kernel.fn.__module__, grid=list(grid), sig=sig, kw=kw))
    return out


def compile_launch(spec: dict):
    """Compile one captured launch for sm_90; returns Triton's compiled kernel."""
    import importlib

    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernel = getattr(importlib.import_module(spec["module"]), spec["kernel"])
    kw = dict(spec["kw"])
    warps = kw.pop("num_warps")
    kw.pop("launch_cooperative_grid", None)
    options = dict(num_warps=warps)
    if "maxnreg" in kw:  # a register cap (launch._LOOP_MAXNREG's) is a compile option
        options["maxnreg"] = kw.pop("maxnreg")
    if kw.pop("launch_pdl", False):  # (launch._PDL's PHASE 2: a launch attribute, compiled in)
        options["launch_pdl"] = True
    names = kernel.arg_names
    params = {p.name: p for p in kernel.params}
    sig: dict = {}
    attrs: dict = {}
    consts: dict = {}
    for n, v in kw.items():
        if isinstance(v, str) and v.startswith("DT:"):
            v = getattr(tl, _DT[v[3:]])
        sig[n] = "constexpr"
        consts[(names.index(n),)] = v
    for n, (kind, v) in zip([n for n in names if n not in kw], spec["sig"]):
        i = names.index(n)
        if params[n].is_constexpr or (kind == "int" and v == 1):  # Triton specialises 1
            sig[n] = "constexpr"
            consts[(i,)] = v
        elif kind == "ptr":
            sig[n] = v
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif kind == "int":
            sig[n] = "i32"
            if v % 16 == 0:
                attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            sig[n] = "fp32"
    for p in kernel.params:  # constexprs left at their defaults
        if p.is_constexpr and p.name not in sig and p.default is not inspect.Parameter.empty:
            sig[p.name] = "constexpr"
            consts[(names.index(p.name),)] = p.default
    return triton.compile(ASTSource(kernel, sig, consts, attrs), target=GPUTarget("cuda", 90, 32),
                          options=options)


def sass(compiled, lines: bool = False) -> str:
    """The SASS of a compiled kernel (``lines``: with its source lines, by nvdisasm)."""
    import triton

    tools = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    with tempfile.TemporaryDirectory() as d:
        cubin = Path(d) / "k.cubin"
        cubin.write_bytes(compiled.asm["cubin"])
        cmd = [str(tools / "nvdisasm"), "--print-line-info", "-c", str(cubin)] if lines else \
            [str(tools / "cuobjdump"), "-sass", str(cubin)]
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def resources(compiled) -> tuple[int, int, int] | None:
    """``(registers, stack bytes, local bytes)`` from the compiled kernel's cubin
    (cuobjdump's resource usage ``REG:n STACK:n ... LOCAL:n``): the registers ptxas gave it
    under any cap, and its stack frame, where its spills go (``STL``/``LDL`` in the listing;
    ``LOCAL`` stays 0 for them). None if cuobjdump does not say."""
    import triton

    tools = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    with tempfile.TemporaryDirectory() as d:
        cubin = Path(d) / "k.cubin"
        cubin.write_bytes(compiled.asm["cubin"])
        out = subprocess.run([str(tools / "cuobjdump"), "-res-usage", str(cubin)], capture_output=True, text=True,
                             check=True).stdout
    m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", out)
    return (int(m.group(1)), int(m.group(2)), int(m.group(4))) if m else None


# an H200 SM (sm_90): 64K registers, 64 warps, 32 programs, 228 KB of shared memory (1 KB of
# it reserved a program); registers are given a warp in units of 256
SM_REGS, SM_WARPS, SM_PROGRAMS, SM_SHARED, SM_SHARED_RESERVED = 65536, 64, 32, 228 * 1024, 1024
SMS, SCHEDULERS, CLOCK_GHZ = 132, 4, 1.98


def resident(regs: int, warps: int, shared: int) -> tuple[int, str]:
    """Programs of ``warps`` warps at ``regs`` registers a thread and ``shared`` bytes of
    shared memory resident at once on an SM, and what limits them."""
    per_warp = -(-regs * 32 // 256) * 256
    limits = {"registers": SM_REGS // (per_warp * warps), "warps": SM_WARPS // warps, "programs": SM_PROGRAMS,
              "shared memory": SM_SHARED // (shared + SM_SHARED_RESERVED)}
    by = min(limits, key=limits.get)
    return limits[by], by


def describe(compiled, spec: dict, n_sass: int) -> str:
    """The registers and spills of one compiled launch, the programs an SM it keeps resident,
    the rounds its grid takes on an H200, and the time to issue its static instruction count
    (times its warps and programs, over 132 SMs x 4 schedulers at 1.98 GHz): about what a
    kernel of a whole row in one chunk issues, less than a chunk loop does (its body runs once
    a chunk), more than a kernel with a path it skips (the lazy cut's second scan); and the
    same on the busiest SM alone (its ``ceil(programs / 132)`` programs' instructions on its 4
    schedulers), the bound that matters for grids of fewer programs than SMs."""
    res = resources(compiled)
    if res is None:
        return "resources unknown"
    regs, stack, local = res
    warps = spec["kw"]["num_warps"]
    programs = spec["grid"][0] * spec["grid"][1]
    per_sm, by = resident(regs, warps, compiled.metadata.shared)
    issue = n_sass * warps * programs / (SMS * SCHEDULERS) / (CLOCK_GHZ * 1e3)
    # the busiest SM's share: a grid of fewer programs than SMs leaves SMs idle, so the
    # instructions of its programs issue on the SMs they have, not on all 132
    busiest = n_sass * warps * -(-programs // SMS) / SCHEDULERS / (CLOCK_GHZ * 1e3)
    return (f"{regs} registers, {stack} bytes of stack (spills)" + (f", {local} bytes of local memory" if local else "")
            + f"; {per_sm} programs an SM (by {by}), {programs / (per_sm * SMS):.2f} rounds on {SMS} SMs;"
            f" static issue {issue:.2f} us, {busiest:.2f} on the busiest SM")


def by_line(listing: str) -> collections.Counter:
    """Instructions per (file, line) of an nvdisasm listing with line info."""
    counts: collections.Counter = collections.Counter()
    where = None
    for line in listing.splitlines():
        m = re.search(r'//## File "([^"]+)", line (\d+)', line)
        if m:
            where = (Path(m.group(1)).name, int(m.group(2)))
        elif re.search(r"/\*[0-9a-f]{4}\*/", line):
            counts[where] += 1
    return counts


def main() -> None:
    args = sys.argv[1:]
    if args and args[0] == "--capture":
        print(json.dumps(capture(args[1], tuple(int(v) for v in args[2].split("x")), args[3:])))
        return
    top = 0
    if "--lines" in args:
        i = args.index("--lines")
        top = int(args[i + 1])
        del args[i:i + 2]
    name = args[0] if args else "discounted_returns"
    shape = args[1] if len(args) > 1 else "16x262144"
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    res = subprocess.run([sys.executable, __file__, "--capture", name, shape, *args[2:]], capture_output=True,
                         text=True, env=env, cwd=ROOT)
    if res.returncode:
        raise SystemExit(res.stderr[-4000:])
    sys.path.insert(0, str(ROOT))
    specs = json.loads(res.stdout.strip().splitlines()[-1])
    if any(spec["kw"].get("PHASE") == 5 for spec in specs):
        # a cooperative split, which the interpreter runs as PHASE 5 twice: on a GPU it is
        # one launch of PHASE 4 (the grid barrier), as compiled here
        specs = [{**specs[0], "kw": {**specs[0]["kw"], "PHASE": 4}}]
    for spec in specs:
        k = compile_launch(spec)
        text = sass(k)
        ops = re.findall(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", text)
        counts = collections.Counter(o.split(".")[0] for o in ops)
        kw = spec["kw"]
        print(f"{spec['kernel']} PHASE {kw.get('PHASE')} grid {tuple(spec['grid'])} [{kw.get('BLOCK_N')}, "
              f"{kw.get('BLOCK_T')}] on {kw.get('num_warps')} warps: {len(ops)} SASS instructions, "
              f"{describe(k, spec, len(ops))}")
        print("   " + ", ".join(f"{o} {n}" for o, n in counts.most_common(24)))
        if top:
            for (f, line), n in by_line(sass(k, lines=True)).most_common(top):
                print(f"   {n:5d}  {f}:{line}")


if __name__ == "__main__":
    main()
