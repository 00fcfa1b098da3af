"""Compile rltriton's kernels for sm_90 on any machine (no GPU: Triton's wheel carries
ptxas) and count, per thread, the instructions of the pipe the kernels are bound by:

    python benchmarks/ptx_counts.py                 # backward and forward kernels, several plans
    python benchmarks/ptx_counts.py --time-major    # every kernel on [T, N] storage
    python benchmarks/ptx_counts.py --compile-all   # every kernel form the launcher can pick builds

shfl (warp shuffles), lds/sts (shared memory), ldg (global loads), v4 (vector global
loads and stores), bar (barriers) and cvt (layout conversions in the TTGIR), for each backward kernel under
several plans and phases, float64 and bf16 inputs, and the forward kernel. Used to find
that ``tl.associative_scan(reverse=True)`` costs 92 shuffles per thread where a forward
scan costs 12 (benchmarks/results/2026-11-29-h200-sessionlog.md); a static guide, not a
timing: the H200 decides.
"""
import inspect
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rltriton.kernels import backward as B  # noqa: E402
from rltriton.kernels import forward as F  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)
FLAGS = ("term_ptr", "trunc_ptr")


def _ptxas() -> str:
    """The ptxas Triton itself runs for sm_90: Triton 3.9 ships two and gives sm_90 the newer
    (``ptxas-blackwell``, whose PTX version the older one rejects); before, the one."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas
        return get_ptxas(TARGET.arch).path
    except (ImportError, AttributeError, TypeError):
        return str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas")


def registers(ptx: str) -> int:
    """Registers per thread that ptxas (from Triton's wheel) gives this PTX for sm_90a."""
    ptxas = _ptxas()
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_text(ptx)
        res = subprocess.run([str(ptxas), "-arch=sm_90a", "-v", str(src), "-o", str(Path(d) / "k.cubin")],
                             capture_output=True, text=True, check=True)
    return int(re.search(r"Used (\d+) registers", res.stderr + res.stdout).group(1))


def _without_cubin(*args):
    """A ``knobs.runtime.add_stages_inspection_hook`` that drops Triton's own ptxas run (its
    cubin stage gives an empty binary): :func:`registers` runs ptxas on the PTX. Called with
    no arguments, the key it adds to the compilation cache's, so these builds never stand in
    for real ones."""
    if not args:
        return "ptx_counts: no cubin stage", "ptx_counts: no cubin stage"
    stages = args[1]
    if "cubin" in stages:
        stages["cubin"] = lambda src, metadata: b""


def _compile(src, warps):
    """``triton.compile`` for sm_90 without the cubin stage where the installed Triton has the
    hook for it (3.8 does)."""
    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    if getattr(runtime, "add_stages_inspection_hook", 0) is not None:
        return triton.compile(src, target=TARGET, options=dict(num_warps=warps))
    runtime.add_stages_inspection_hook = _without_cubin
    try:
        return triton.compile(src, target=TARGET, options=dict(num_warps=warps))
    finally:
        runtime.add_stages_inspection_hook = None


def build(kernel, consts, warps, ptr_types=None, time_major=False, row_div16=True, rows_div16=True):
    """Compile ``kernel`` for sm_90 with Triton's usual specialisations (16-divisible
    pointers, sizes and row strides; unit time strides, or with ``time_major`` unit row
    strides and 16-divisible time strides) and count instructions per thread. ``TIME_MAJOR``
    (the kernels' tiles for rows-contiguous storage) defaults to ``time_major``.
    ``row_div16=False``: a row length and batch-major row strides that Triton cannot
    specialise (rows of 24 steps: the kernel's ``ROW_DIV`` is then all it knows).
    ``rows_div16=False`` (with ``time_major``): likewise the row count and the time strides
    (1000 rows: ``TM_DIV``)."""
    names = kernel.arg_names
    consts = {"TIME_MAJOR": time_major, **consts}
    for prm in kernel.params:  # constexprs with a default (STAGES, LAGGED) take it unless given
        if prm.is_constexpr and prm.name not in consts and prm.default is not inspect.Parameter.empty:
            consts[prm.name] = prm.default
    sig, attrs, cf = {}, {}, {}
    for i, n in enumerate(names):
        if n in consts:
            sig[n] = "constexpr"
            cf[(i,)] = consts[n]
        elif time_major and n.startswith("s_") and n.endswith("_t"):
            sig[n] = "i32"
            if rows_div16:
                attrs[(i,)] = [["tt.divisibility", 16]]
        elif time_major and n.startswith("s_") and n.endswith("_n") and n != "s_lv_n":
            sig[n] = "constexpr"
            cf[(i,)] = 1
        elif n.endswith("_ptr"):
            default = "*i1" if n in FLAGS else {"act_ptr": "*i64", "state_ptr": "*i32"}.get(n, "*fp32")
            sig[n] = (ptr_types or {}).get(n, default)
            attrs[(i,)] = [["tt.divisibility", 16]]
        elif n.endswith(("_hi", "_lo")):
            sig[n] = "fp32"
        elif (n.startswith("s_") and n.endswith(("_t", "_f"))) or n == "F":
            # Triton specialises integer arguments equal to 1: unit time strides, and for the
            # forward kernel one feature column (no trailing feature dims)
            sig[n] = "constexpr"
            cf[(i,)] = 1
        else:
            sig[n] = "i32"
            if n == "SEG" or (n == "R" and (rows_div16 or not time_major)) \
                    or (row_div16 and (n == "T" or (n.startswith("s_") and n.endswith("_n")))):
                attrs[(i,)] = [["tt.divisibility", 16]]
    k = _compile(ASTSource(kernel, sig, cf, attrs), warps)
    ptx, ttgir = k.asm["ptx"], k.asm["ttgir"]
    wait, first_load = ptx.find("griddepcontrol.wait"), re.search(r"\bld\.global", ptx)
    loads_after_wait = len(re.findall(r"\bld\.global", ptx[wait:])) if wait >= 0 else 0
    return {"regs": registers(ptx),
            # launch._PDL (scan.grid_dependency): the dependent launch's release and wait, and
            # whether the wait comes before every global load
            "gdc_launch": ptx.count("griddepcontrol.launch_dependents"), "gdc_wait": ptx.count("griddepcontrol.wait"),
            "gdc_wait_first": wait >= 0 and (first_load is None or wait < first_load.start()),
            "ldg_after_wait": loads_after_wait,
            "shfl": len(re.findall(r"\bshfl\.", ptx)),
            "lds": len(re.findall(r"\bld\.shared", ptx)),
            "sts": len(re.findall(r"\bst\.shared", ptx)), "ldg": len(re.findall(r"\bld\.global", ptx)),
            "v4": len(re.findall(r"\b(?:ld|st)\.global[.a-z0-9]*\.v4", ptx)),
            "v2_loads": len(re.findall(r"\bld\.global[.a-z0-9]*\.v2", ptx)), "cvt": ttgir.count("convert_layout"),
            # a [BN, BT] layout with two rows a thread and every lane along rows (time-major lanes tiles)
            "rows_on_lanes": "sizePerThread = [2, 1], threadsPerWarp = [32, 1]" in ttgir,
            # ... and with one row a thread (the narrow tiles, launch._TM_LANES_NARROW)
            "row_on_lanes": "sizePerThread = [1, 1], threadsPerWarp = [32, 1], warpsPerCTA = [1," in ttgir,
            "reverse_scans": ttgir.count("reverse = true"), "bar": len(re.findall(r"\bbar\.sync|\bbarrier\.sync", ptx)),
            "cp_async": len(re.findall(r"\bcp\.async\.c[ag]\b", ptx))}


# GROUP_TILES: the backward kernels' group-form chunks (launch._GROUP_TILES, Triton >= 3.7);
# the "_time_order" entries build the form Triton < 3.7 gets (chunks in time order, scanned
# in reverse)
BASE = dict(HAS_TERM=True, HAS_TRUNC=True, NV_MODE=2, G_TENSOR=False, L_TENSOR=False, DT=tl.float32,
            GROUP_TILES=True)
# the backward kernels and the constexprs that pick each estimator's form
KERNELS = {"gae": (B.gae_kernel, {}), "td_lambda": (B.td_lambda_kernel, {"HAS_VALUES": True}),
           "vtrace": (B.vtrace_kernel, {}), "retrace": (B.retrace_kernel, {"ACTION_FORM": False, "LAGGED": False}),
           "retrace_av": (B.retrace_kernel, {"ACTION_FORM": True, "LAGGED": False})}
# (the action form runs LAGGED by default: the "retrace_av_lagged" entries)
# the forward kernel as eligibility traces with dones and an initial trace
TRACES = dict(KIND=0, HAS_DONES=True, HAS_INIT=True, G_TENSOR=False, L_TENSOR=False, DT=tl.float32)

def static_checks(jobs: int = 1) -> dict[str, dict]:
    """The configurations ``tests/test_kernels_static.py`` checks (it runs this module in a
    subprocess: under ``TRITON_INTERPRET=1`` kernels are interpreted, not compiled), built
    in ``jobs`` processes (the builds are independent)."""
    specs = []

    def add(key, *args, **kwargs):
        specs.append((key, args, kwargs))

    for name, (kern, extra) in KERNELS.items():
        consts = {**BASE, **extra, "BLOCK_N": 1, "BLOCK_T": 512, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": True}
        add(name, kern, consts, 4)
    for name, (kern, extra) in KERNELS.items():
        consts = {**BASE, **extra, "BLOCK_N": 1, "BLOCK_T": 512, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": True,
                  "GROUP_TILES": False}
        add(f"{name}_time_order", kern, consts, 4)
    # Retrace from step-t quantities (launch._RETRACE_LAGGED), chunks in time order as on
    # the H200's Triton 3.6: the lagged scan in place of the reads at t + 1
    for name in ("retrace", "retrace_av"):
        kern, extra = KERNELS[name]
        consts = {**BASE, **extra, "BLOCK_N": 1, "BLOCK_T": 512, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": True,
                  "GROUP_TILES": False, "LAGGED": True}
        add(f"{name}_lagged", kern, consts, 4)
    # the action form reading each step's 4 actions as one vector (launch._RETRACE_AV_VEC)
    consts = {**BASE, **KERNELS["retrace_av"][1], "BLOCK_N": 1, "BLOCK_T": 512, "PHASE": 0, "S_BLOCK": 1,
              "ONE_CHUNK": True, "GROUP_TILES": False, "LAGGED": True, "AV_VEC": 4}
    add("retrace_av_lagged_vec4", B.retrace_kernel, consts, 4)
    # the group form scanned in two levels (GROUP_TILES = 2, launch._GROUP_SCAN), which
    # stands in for the time-order chunks of Triton < 3.7
    for name, (kern, extra) in KERNELS.items():
        consts = {**BASE, **extra, "BLOCK_N": 1, "BLOCK_T": 512, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": True,
                  "GROUP_TILES": 2, "LAGGED": name == "retrace_av"}
        add(f"{name}_group_scan", kern, consts, 4)
    # ... and in a chunk loop ([1, 1024] on 8 warps), beside time order's loop
    for name, (kern, extra) in KERNELS.items():
        for gt in (2, False):
            consts = {**BASE, **extra, "BLOCK_N": 1, "BLOCK_T": 1024, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": False,
                      "GROUP_TILES": gt, "LAGGED": name == "retrace_av"}
            add(f"{name}_{'group_scan' if gt else 'time_order'}_loop", kern, consts, 8)
    # short rows, several a program ([4, 64] on 2 warps: 32768 x 64): the group scan on the
    # [BN, BT/4, 4] tile (GROUP_TILES = 2) and with the rows laid one after another
    # (GROUP_TILES = 3, launch._GROUP_SCAN_FLAT)
    for name, (kern, extra) in KERNELS.items():
        for gt in (2, 3):
            consts = {**BASE, **extra, "BLOCK_N": 4, "BLOCK_T": 64, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": True,
                      "GROUP_TILES": gt, "LAGGED": name == "retrace_av"}
            add(f"{name}_{'flat' if gt == 3 else 'group_scan'}_4x64", kern, consts, 2)
    # short rows across lanes (GROUP_TILES = 4, launch._ROW_LANES): [8, 64] on 2 warps (8 lanes
    # a row, two columns of groups a thread) and [32, 16] on 4 warps (4 lanes a row)
    for name, (kern, extra) in KERNELS.items():
        for bn, bt, w in ((8, 64, 2), (32, 16, 4)):
            consts = {**BASE, **extra, "BLOCK_N": bn, "BLOCK_T": bt, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": True,
                      "GROUP_TILES": 4, "LAGGED": name == "retrace_av"}
            add(f"{name}_lanes_{bn}x{bt}", kern, consts, w)
    # Retrace's own lanes tiles (launch._ROW_LANES_SHAPES): one warp, [16, 16] and [8, 32] (two
    # rows a lane of each row's lanes) and [4, 64]
    kern, extra = KERNELS["retrace"]
    for bn, bt in ((16, 16), (8, 32), (4, 64)):
        consts = {**BASE, **extra, "BLOCK_N": bn, "BLOCK_T": bt, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": True,
                  "GROUP_TILES": 4}
        add(f"retrace_lanes_{bn}x{bt}_w1", kern, consts, 1)
    # time-major lanes tiles (GROUP_TILES = 5, launch._TM_LANES) on time-major storage: 64 rows
    # by 64 steps on 8 warps (32 steps on 8 warps for the lagged forms, as their plans bound)
    for name, (kern, extra) in KERNELS.items():
        bt = 64 if name in ("gae", "td_lambda") else 32
        consts = {**BASE, **extra, "BLOCK_N": 64, "BLOCK_T": bt, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": True,
                  "GROUP_TILES": 5, "TM_W": 8, "TIME_MAJOR": False, "LAGGED": name == "retrace_av"}
        add(f"{name}_tm_lanes", kern, consts, 8, time_major=True)
    consts = dict(TRACES, BLOCK_N=64, BLOCK_T=64, PHASE=0, S_BLOCK=1, ONE_CHUNK=True, TM_W=8, TIME_MAJOR=False)
    add("traces_tm_lanes", F.forward_kernel, consts, 8, time_major=True)
    # the narrow ones (32 rows, one a thread; launch._TM_LANES_NARROW): GAE's and TD(lambda)'s
    # [32, 128] on 16 warps, V-trace's [32, 64] on 16 (4 steps a thread)
    for name, bt in (("gae", 128), ("td_lambda", 128), ("vtrace", 64)):
        kern, extra = KERNELS[name]
        consts = {**BASE, **extra, "BLOCK_N": 32, "BLOCK_T": bt, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": True,
                  "GROUP_TILES": 5, "TM_W": 16, "TIME_MAJOR": False, "LAGGED": False}
        add(f"{name}_tm_lanes_narrow", kern, consts, 16, time_major=True)
    # 8-step rows, [32, 8] tiles on 4 warps (launch._TINY_WARP_ELEMS), in time order scanned in
    # reverse and in descending time scanned forward (GROUP_TILES = 6, launch._DESC_MAX_T)
    for name, (kern, extra) in KERNELS.items():
        for gt in (False, 6):
            consts = {**BASE, **extra, "BLOCK_N": 32, "BLOCK_T": 8, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": True,
                      "GROUP_TILES": gt, "LAGGED": name == "retrace_av"}
            add(f"{name}_{'desc' if gt else 'time_order'}_32x8", kern, consts, 4)
    # batch-major row strides Triton does not specialise (rows of 24 steps), with and without
    # the launcher's ROW_DIV (launch._ROW_DIV), [8, 32] tiles on 2 warps: the default form of
    # the installed Triton, and Triton 3.6's lanes tiles (GROUP_TILES = 4)
    for name, (kern, extra) in KERNELS.items():
        for gt in (BASE["GROUP_TILES"], 4):
            for div in (1, 8):
                consts = {**BASE, **extra, "BLOCK_N": 8, "BLOCK_T": 32, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": True,
                          "GROUP_TILES": gt, "LAGGED": name == "retrace_av", "ROW_DIV": div}
                add(f"{name}_{'lanes' if gt == 4 else 'default'}_row_div{div}", kern, consts, 2,
                    row_div16=False)
    for div in (1, 8):
        consts = dict(TRACES, BLOCK_N=8, BLOCK_T=32, PHASE=0, S_BLOCK=1, ONE_CHUNK=True, ROW_DIV=div)
        add(f"traces_default_row_div{div}", F.forward_kernel, consts, 2, row_div16=False)
    # time-major storage with a row count and time strides Triton does not specialise (1000
    # rows), with and without the launcher's TM_DIV: the time-major tiles (32 rows by 16 steps
    # on one warp, launch.plan_time_major's) and the time-major lanes tiles (64 rows by 32
    # steps on 8 warps)
    for name, (kern, extra) in {**KERNELS, "traces": (F.forward_kernel, None)}.items():
        for form in ("tm", "tm_lanes"):
            for div in (1, 8):
                tile = dict(BLOCK_N=32, BLOCK_T=16) if form == "tm" else dict(BLOCK_N=64, BLOCK_T=32, TM_W=8,
                                                                             TIME_MAJOR=False)
                if extra is None:
                    consts = dict(TRACES, PHASE=0, S_BLOCK=1, ONE_CHUNK=True, TM_DIV=div, **tile)
                else:
                    consts = {**BASE, **extra, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": True, "TM_DIV": div,
                              "GROUP_TILES": 5 if form == "tm_lanes" else False, "LAGGED": name == "retrace_av",
                              **tile}
                add(f"{name}_{form}_tm_div{div}", kern, consts, 1 if form == "tm" else 8, time_major=True,
                    rows_div16=False)
    for phase in (1, 2):
        consts = {**BASE, "BLOCK_N": 1, "BLOCK_T": 2048, "PHASE": phase, "S_BLOCK": 256, "ONE_CHUNK": True}
        add(f"gae_phase{phase}", B.gae_kernel, consts, 8)
    # a time split's two passes as a programmatic dependent launch (launch._PDL), each kernel
    # in the long rows' one-chunk segments ([1, 2048] on 4 warps, 512 segments)
    for name, (kern, extra) in [*KERNELS.items(), ("traces", (F.forward_kernel, TRACES))]:
        for phase in (1, 2) if name == "gae" else (2,):
            consts = {**(TRACES if name == "traces" else BASE), **extra, "BLOCK_N": 1, "BLOCK_T": 2048,
                      "PHASE": phase, "S_BLOCK": 512, "ONE_CHUNK": True, "CARRY_PROD": True, "PDL": True}
            add(f"{name}_phase{phase}_pdl", kern, consts, 4)
    # ... with PHASE 2's wait at its first read of the summaries (launch._PDL_LATE: CARRY_PROD
    # plus 4), the products with the initial carry folded in (2)
    consts = {**BASE, "BLOCK_N": 1, "BLOCK_T": 2048, "PHASE": 2, "S_BLOCK": 512, "ONE_CHUNK": True,
              "CARRY_PROD": 6, "PDL": False}
    add("gae_phase2_pdl_late", B.gae_kernel, consts, 4)
    # PHASE 1 on chunks in time order (Triton < 3.7): the segment's map by a forward scan
    # (launch._SEGMENT_MAP_FORWARD)
    consts = {**BASE, "BLOCK_N": 1, "BLOCK_T": 2048, "PHASE": 1, "S_BLOCK": 256, "ONE_CHUNK": True,
              "GROUP_TILES": False, "SEG_MAP_FWD": True}
    add("gae_phase1_time_order", B.gae_kernel, consts, 8)
    # PHASE 2's carry-in as a sum of products (launch._CARRY_PRODUCTS): no reverse scan
    consts = {**BASE, "BLOCK_N": 1, "BLOCK_T": 2048, "PHASE": 2, "S_BLOCK": 256, "ONE_CHUNK": True,
              "CARRY_PROD": True}
    add("gae_phase2_products", B.gae_kernel, consts, 8)
    # V-trace's PHASE 2 as the long rows of the benchmark run it (terminated flags, a last
    # value; 128 segments on 8 warps): its registers decide how many programs share an SM
    consts = {**BASE, "HAS_TRUNC": False, "NV_MODE": 3, "BLOCK_N": 1, "BLOCK_T": 2048, "PHASE": 2, "S_BLOCK": 256,
              "ONE_CHUNK": True}
    add("vtrace_phase2", B.vtrace_kernel, consts, 8)
    add("vtrace_phase2_products", B.vtrace_kernel, {**consts, "CARRY_PROD": True}, 8)
    consts = dict(TRACES, BLOCK_N=1, BLOCK_T=512, PHASE=0, S_BLOCK=1, ONE_CHUNK=True)
    add("traces", F.forward_kernel, consts, 4)
    # time-major tiles (launch.plan_time_major): 32 rows by 16 steps on one warp (4 rows and
    # 4 steps per thread, 4 lanes along time), chunk loop; with a last value (the benchmarks'
    # form); PHASE 2 of a split with 64 segments; a short row as one chunk of 128 steps on 8
    # warps; 128 rows by 4 steps on one warp (each thread's scan is its own: no shuffles)
    for name, (kern, extra) in KERNELS.items():
        consts = {**BASE, **extra, "BLOCK_N": 32, "BLOCK_T": 16, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": False}
        add(f"{name}_tm", kern, consts, 1, time_major=True)
    consts = {**BASE, "HAS_TRUNC": False, "NV_MODE": 3, "BLOCK_N": 32, "BLOCK_T": 16, "PHASE": 0, "S_BLOCK": 1,
              "ONE_CHUNK": False}
    add("gae_tm_last_value", B.gae_kernel, consts, 1, time_major=True)
    consts = {**BASE, "BLOCK_N": 32, "BLOCK_T": 16, "PHASE": 2, "S_BLOCK": 64, "ONE_CHUNK": False}
    add("gae_tm_phase2", B.gae_kernel, consts, 1, time_major=True)
    consts = {**BASE, "BLOCK_N": 32, "BLOCK_T": 128, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": True}
    add("gae_tm_one_chunk", B.gae_kernel, consts, 8, time_major=True)
    consts = {**BASE, "BLOCK_N": 128, "BLOCK_T": 4, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": False}
    add("gae_tm_one_warp", B.gae_kernel, consts, 1, time_major=True)
    consts = dict(TRACES, BLOCK_N=32, BLOCK_T=16, PHASE=0, S_BLOCK=1, ONE_CHUNK=False)
    add("traces_tm", F.forward_kernel, consts, 1, time_major=True)
    # the chunk loop pipelined 3 deep (launch._TM_STAGES): the next chunks' loads as cp.async
    consts = {**BASE, "HAS_TRUNC": False, "NV_MODE": 3, "BLOCK_N": 32, "BLOCK_T": 16, "PHASE": 0, "S_BLOCK": 1,
              "ONE_CHUNK": False, "STAGES": 3}
    add("gae_tm_stages3", B.gae_kernel, consts, 1, time_major=True)
    consts = dict(TRACES, BLOCK_N=32, BLOCK_T=16, PHASE=0, S_BLOCK=1, ONE_CHUNK=False, STAGES=3)
    add("traces_tm_stages3", F.forward_kernel, consts, 1, time_major=True)
    return dict(zip([key for key, _, _ in specs], run_builds([(args, kwargs) for _, args, kwargs in specs], jobs)))


_SPECS: list = []  # the builds of run_builds, for its forked workers


def _build_spec(i: int) -> dict:
    args, kwargs = _SPECS[i]
    return build(*args, **kwargs)


def run_builds(specs: list, jobs: int = 1) -> list[dict]:
    """``build(*args, **kwargs)`` for each ``(args, kwargs)`` of ``specs``, in order, in
    ``jobs`` forked processes (the kernels and their constexprs are inherited, not pickled;
    serially where ``fork`` is missing)."""
    import multiprocessing

    if jobs <= 1 or len(specs) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return [build(*args, **kwargs) for args, kwargs in specs]
    _SPECS[:] = specs
    try:
        with multiprocessing.get_context("fork").Pool(min(jobs, len(specs))) as pool:
            return pool.map(_build_spec, range(len(specs)), chunksize=1)
    finally:
        _SPECS.clear()


def compile_all() -> tuple[int, list[str]]:
    """Compile every backward kernel form the launcher can pick (the five chunk forms,
    one-chunk, chunk-loop and short tiles, PHASE 0-3, Retrace direct and lagged, time-major
    tiles in each phase) for sm_90 with the installed Triton: (count, failures). A check that
    kernel edits build for the GPU machine's Triton without a GPU (put that version first on
    ``PYTHONPATH``, as above)."""
    import itertools

    failures, n = [], 0
    tiles = ((1, 512, 4, True), (4, 64, 2, True), (1, 1024, 8, False), (32, 8, 2, True))
    for name, (kern, extra) in KERNELS.items():
        for gt, (bn, bt, w, one), phase in itertools.product((False, 2, 3, True), tiles, (0, 1, 2, 3)):
            if (gt == 3 and (phase or bn == 1)) or (phase and bn != 1):
                continue
            for lag in ((False, True) if name.startswith("retrace") else (False,)):
                consts = {**BASE, **extra, "GROUP_TILES": gt, "BLOCK_N": bn, "BLOCK_T": bt, "PHASE": phase,
                          "S_BLOCK": 256 if phase else 1, "ONE_CHUNK": one, "LAGGED": lag}
                n += 1
                try:
                    build(kern, consts, w)
                except Exception as e:  # noqa: BLE001
                    failures.append(f"{name} {consts}: {type(e).__name__}: {str(e)[:200]}")
        # the lanes tiles (GROUP_TILES = 4: PHASE 0, one chunk, 16-64 steps)
        for (bn, bt, w), lag in itertools.product(((32, 16, 4), (16, 32, 4), (8, 64, 2)),
                                                  (False, True) if name.startswith("retrace") else (False,)):
            consts = {**BASE, **extra, "GROUP_TILES": 4, "BLOCK_N": bn, "BLOCK_T": bt, "PHASE": 0, "S_BLOCK": 1,
                      "ONE_CHUNK": True, "LAGGED": lag}
            n += 1
            try:
                build(kern, consts, w)
            except Exception as e:  # noqa: BLE001
                failures.append(f"{name} {consts}: {type(e).__name__}: {str(e)[:200]}")
        for phase in (0, 1, 2):
            consts = {**BASE, **extra, "BLOCK_N": 32, "BLOCK_T": 16, "PHASE": phase, "S_BLOCK": 64 if phase else 1,
                      "ONE_CHUNK": False}
            n += 1
            try:
                build(kern, consts, 1, time_major=True)
            except Exception as e:  # noqa: BLE001
                failures.append(f"{name} time-major P{phase}: {type(e).__name__}: {str(e)[:200]}")
    return n, failures


if __name__ == "__main__" and "--compile-all" in sys.argv:
    count, failed = compile_all()
    print("\n".join(failed))
    print(f"triton {triton.__version__}: {count} kernel forms compiled for sm_90, {len(failed)} failed")
elif __name__ == "__main__" and "--json" in sys.argv:
    import json

    # --jobs N: build in N processes (default: one a CPU core this process may run on)
    jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else \
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    print(json.dumps(static_checks(jobs)))
elif __name__ == "__main__" and "--time-major" in sys.argv:
    # CleanRL's [T, N] storage: rows are the contiguous axis. The generic tiles (TIME_MAJOR
    # off: what such storage got before launch.plan_time_major), then the time-major tiles.
    for bn, bt, w in [(1, 512, 4), (32, 8, 2), (128, 8, 4)]:
        consts = {**BASE, "BLOCK_N": bn, "BLOCK_T": bt, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": True,
                  "TIME_MAJOR": False}
        print(f"gae generic tiles [{bn:>3},{bt:>4}] w{w}", build(B.gae_kernel, consts, w, time_major=True), flush=True)
    for name, (kern, extra) in KERNELS.items():
        for bn, bt, w, phase, sb in [(32, 16, 1, 0, 1), (32, 32, 4, 0, 1), (32, 128, 8, 0, 1), (128, 16, 4, 0, 1),
                                     (32, 16, 1, 1, 64), (32, 16, 1, 2, 64)]:
            consts = {**BASE, **extra, "BLOCK_N": bn, "BLOCK_T": bt, "PHASE": phase, "S_BLOCK": sb, "ONE_CHUNK": False}
            print(f"{name:<11} time-major tiles [{bn:>3},{bt:>3}] w{w} P{phase}",
                  build(kern, consts, w, time_major=True), flush=True)
elif __name__ == "__main__":
    plans = [(1, 512, 4, 0, True, 1), (32, 8, 2, 0, True, 1), (1, 1024, 8, 0, False, 1), (1, 2048, 8, 1, True, 256),
             (1, 2048, 8, 2, True, 256), (1, 1024, 8, 3, True, 256)]
    for name, (kern, extra) in KERNELS.items():
        for bn, bt, w, phase, one, sb in plans:
            consts = {**BASE, **extra, "BLOCK_N": bn, "BLOCK_T": bt, "PHASE": phase, "S_BLOCK": sb, "ONE_CHUNK": one}
            try:
                st = build(kern, consts, w)
            except Exception as e:  # noqa: BLE001
                st = f"FAILED {type(e).__name__}: {str(e)[:200]}"
            print(f"{name:<11} [{bn:>2},{bt:>4}] w{w} P{phase} one={int(one)}  {st}", flush=True)
    for dt, pt in ((tl.float64, "*fp64"), (tl.float32, "*bf16")):
        consts = {**BASE, "DT": dt, "BLOCK_N": 1, "BLOCK_T": 512, "PHASE": 0, "S_BLOCK": 1, "ONE_CHUNK": True}
        types = {n: pt for n in B.gae_kernel.arg_names if n.endswith("_ptr") and n not in FLAGS}
        print("gae", dt, pt, build(B.gae_kernel, consts, 4, types))
    consts = dict(TRACES, BLOCK_N=1, BLOCK_T=512, PHASE=0, S_BLOCK=1, ONE_CHUNK=True)
    print("traces", build(F.forward_kernel, consts, 4))
