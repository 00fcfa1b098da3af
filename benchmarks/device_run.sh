#!/usr/bin/env bash
# One call on the GPU machine: the GPU test suite, the probe (device time vs the floor, full
# call vs a bare launch of the same kernel) and the side-by-side harness, each time-boxed so
# the whole call fits the device tool's 10-minute limit. Results go to $OUT.
#
#   bash benchmarks/device_run.sh [tests] [probe] [bench] [sweep] [sweep-tm] [gscan]   # default: tests probe
#   ... [bench-rest] [massive] [adopted] [fwd]
#   (fwd, ~4 min: the forward kernel's tiles, launch._FWD_TILES: GPU tests, then an A/B)
#   (short, ~4 min: an A/B of the backward estimators' short-row tiles, launch._SHORT_WARP_ELEMS)
#   (lookback, ~5 min: launch._LOOKBACK's GPU tests, then an A/B against the two-pass split)
#   (profile, ~2 min: per-kernel times and registers, benchmarks/profile_kernels.py)
#   (tm-few, ~4 min: the few-rows time-major tiles' GPU tests and A/B)
#   (carry, ~4 min: launch._CARRY_PRODUCTS's GPU tests and A/B; host, ~2 min: benchmarks/host.py)
#   (puffer-short, ~3 min: GAE at 8 and 16 steps, 4096-32768 envs, against PufferLib and rl-triton)
#   (segflip, ~6 min: launch._SEG_FLIP's GPU tests and A/B; flatseg, ~5 min: launch._FLAT_SEGMENTED's)
#   (sweep-tm-few2, ~9 min: few time-major rows' tiles for V-trace, Retrace and GAE, short chunks included)
#   (tm-few-av, ~4 min; td-bisect, ~1 min, carries _ab/78faaf6; carry-td, ~1 min; lazycut, ~4 min;
#   coop, ~3 min; splitmin, ~3 min; splitchunks, ~3 min; sweep-big, ~3 min; one-chunk, ~7 min;
#   one-chunk-ab, ~8 min, carries _ab/one; s23-verify, ~9 min: the GPU tests and massive rows of
#   4e63e04's plan changes; s26-verify, ~9 min: likewise for session 26's warps of whole rows;
#   sweep-classic, ~8 min: benchmarks/sweep.py for four kernels at four classic misses;
#   s27-verify, ~2 min: session 27's GPU tests not yet run (test_loop_tiles, test_edge_carry);
#   s27-massive, ~9 min: the massive grid of discounted returns and V-trace after session 27's
#   changes; ncu-stalls, ~4 min: warm-L2 stall reasons by source line for three misses;
#   sweep-128, ~5 min: every candidate's time for discounted returns and TD(lambda) at 128 steps;
#   s29, ~5 min: the classic and massive grids of discounted returns and TD(lambda) (time-major
#   too) against rl-triton after session 28's tiles, then every candidate's time for discounted
#   returns at 16384 and 32768 x 64; sweep-lanes, ~5 min: the lanes tiles' shapes (warps, rows a
#   lane) for discounted returns and TD(lambda) at 64 and 128 steps and V-trace at 64;
#   s29-verify, ~6 min: the GPU tests of TD(lambda)'s kernel (launch._TD_WIDE_LANES among them),
#   an A/B of the 128-step rows against 8a12749 (carries _ab/s29/ln), the massive grid of
#   discounted returns and TD(lambda); s30-tmx, ~2 min: an A/B of T as a constant on the
#   time-major lanes tiles for GAE, V-trace and Retrace (carries _ab/s30/tmx, made as
#   2026-12-02-h200-s29-notes.md section 8 says); s30, ~8 min: that A/B once, then the massive and
#   classic grids of TD(lambda) and discounted returns (time-major too) against rl-triton;
#   s31-fwd, ~1 min: an A/B of the forward kernel's 128-step time-major lanes tiles past 2
#   programs an SM (traces; prepared in session 30, not yet run);
#   s31-tm512, ~4 min: an A/B of time-major lanes tiles of whole 256- and 512-step rows
#   (prepared in session 30, run in session 31); s31-bounds, ~2 min, and s31-small, ~1 min
#   (carries _ab/s31/base): their bounds; s31, ~3 min: launch._TM_LONG_TILES' GPU tests and
#   A/B against _ab/s31/base; s31-grid, ~1 min: the classic grid of four estimators,
#   time-major too; s31-replay, ~1 min: benchmarks/replay_status.py; s31-native, ~4 min: the
#   compiled replay's GPU tests, then benchmarks/replay_status.py; s32-long, ~7 min (carries
#   _ab/s32/base and .peers): launch._LONG_SPLIT's A/B, GPU tests and long rows against
#   rl-triton; s32-phases, ~1 min: benchmarks/phase_times.py on the long rows; s32-ncu, ~2 min:
#   warm-L2 stall reasons of the split's passes (discounted returns, TD(lambda), 16 x 262144);
#   s32-phase1, ~2 min: each pass's time for forced plans of several pipelined chunks a segment;
#   s33-interior, ~5 min (carries _ab/s33/base): launch._INTERIOR's GPU tests and A/B;
#   s33-interior2, ~7 min (carries _ab/s33/base): the same for all four kernels; s33-long, ~5 min:
#   the long rows of every estimator against rl-triton;
#   s33-sweep, ~5 min: one-chunk split tiles of long rows after launch._INTERIOR;
#   s33-split, ~3 min (carries _ab/s33/interior): launch._LONG_SPLIT's A/B after _INTERIOR;
#   s33-gae, ~2 min: the GPU tests of GAE's long split on 2048 steps and 4 warps;
#   s33-retrace, ~4 min (carries _ab/s33/pre): launch._INTERIOR for Retrace, GPU tests, A/B, long rows;
#   s34-lazy, ~9 min: launch._INTERIOR_LAZY's GPU tests and an A/B of it and of _MAP_REDUCE for
#   GAE and discounted returns at the long rows;
#   s35-fold, ~8 min: launch._CARRY_FOLD_INIT's GPU tests and an A/B at the long rows
#   (prepared in session 34);
#   s35-fold2, ~6 min: the carry fold as default: GPU tests, discounted returns' A/B;
#   s35-av, ~4 min: the rest of s35-fold2's tests, Retrace's action form with and without it;
#   s35-pdl, ~7 min: launch._PDL's GPU tests, a mutant of them and an A/B;
#   s39-long, ~4 min (carry .peers): the long goal rows of V-trace, Retrace, the action form,
#   traces and prefix sums, which session 39's long run did not reach;
#   s40-seg0, ~6 min (carries _ab/s40c/base): 8-step tiles with segment 0 in PHASE 0: GPU
#   tests of the short tiles and the forward kernel, an A/B;
#   s40-lanes8, ~9 min (carries _ab/s40/base and .peers): 8-step rows a row a thread
#   (launch._ROW_LANES_TINY): GPU tests of the lanes and tiny tiles, an A/B, the massive grid's
#   8-step rows;
#   s44-grid, ~3 min (carry .peers): the harness's V-trace and TD(lambda) rows after session 43;
#   s44-td128, ~1.5 min: TD(lambda)'s 128-step lanes tiles from fewer programs an SM;
#   s44-tm128-lagged, ~3 min: V-trace's and Retrace's time-major 128-step rows on the narrow lanes tiles;
#   (s44-grid, s44-td128 and s44-tm128-lagged ran in session 45; native-massive's run was lost)
#   s45-verify, ~6 min (carry .peers): the GPU tests of session 45's two plan changes (TD(lambda)'s
#   128-step lanes tiles from 7 programs an SM, V-trace's and Retrace's time-major 128-step
#   narrow lanes tiles; and the 256- and 512-step ones, folded into launch._TM_LANES_TILES in
#   session 46 with plans unchanged), then their rows through the harness against rl-triton;
#   s45-vtrace64, ~3 min: V-trace's 64-step lanes tiles as [16, 64] on 4 warps or two rows a
#   lane on 2 warps, or capped at 64 registers (c64, launch._LANES_MAXNREG, session 47), against
#   the shipped [8, 64] on 2 (16384 x 64 is 1.2506x of the floor kernel), then c64's GPU test;
#   s48-verify, ~8 min (carry .peers): the GPU tests of session 48's adopted plans (time-major
#   small calls on 8-row tiles and whole rows of 129-1024 steps, TD(lambda)'s and Retrace's whole
#   4096-step rows), then the classic rows they move through the harness against rl-triton;
#   (s47-whole-row-a/-b, s47-tm-lanes-regs, s45-vtrace64, s46-tm-small, s46-tm-small-long and
#   s47-2k-4warps ran in session 48: their seds match the settings as they were before it)
#   s49-verify, ~4 min (carry .peers): the GPU tests of the time-major small calls' tiles after
#   session 49's 2-row programs, then the classic grid's 128 x 1024 through the harness;
#   (s49-whole-4warps and s48-tm-rows ran in session 49, on an H100)
#   native-tests, ~6 min: every GPU test of the compiled replay (native-massive runs all but
#   the time splits' in its time box)
#   s50-verify, ~8 min (carry .peers): the GPU tests of session 50's launch._TM_SMALL_SPLIT (and
#   the small calls' other tiles), an A/B against it off, then 128 x 1024 through the harness;
#   s51-refine, ~1 min: where the split wins, A/B only (off, as shipped, V-trace on [8, 128]);
#   s51-rule, ~1 min: the refined rule between its bounds, against off and the first rule;
#   s51-verify, ~7 min (carry .peers): its GPU tests, then 128 x 1024 through the harness;
#   s51-bounds, ~2 min: the rule refitted to s51-rule at its bounds, and its GPU tests;
#   s52-split-more, ~1 min: the same split for Retrace, traces and prefix sums, A/B only;
#   s54-odd, ~5 min: GAE's split at row counts of 2 mod 4 (off / shipped / [4, 128]), then the
#   shipped bounds' GPU tests;
#   s54-g4, ~1 min: GAE on [4, 128] / 1 warp against as shipped at multiples of 4 rows;
#   s54-g4-bounds, ~4 min: session 54's rule (GAE's [4, 128] where 4 divides the rows): its GPU
#   tests, then an A/B at and past its bounds (off / the rule before / shipped / below 86K);
#   s54-g4-steps, ~1 min: that tile past 768 steps;
#   s55-fwd512, ~3 min: the forward kernel's whole 512-step time-major lanes rows with EXACT_T, A/B;
#   s55-verify, ~5 min (carries _ab/s55/base): what session 55 adopted, GPU tests and an A/B;
#   s60-tm-coop, ~4 min: launch._TM_COOP (session 60, off until timed): the small time-major
#   calls' split as one cooperative launch, its GPU tests and an A/B against the two passes
#   (and of that split up to 256 rows, the classic grid's 256 x 1024, with and without it; ~5 min);
#   s59-final, ~9 min: session 59's tiles of 8 or 16 rows on their adopted bounds, their GPU
#   tests, then the harness at the classic grid's rows they reach (time-major, no peers);
#   s59-verify, ~7 min (carries _ab/s59/base: git archive a94a8fa rltriton): session 59's
#   tiles of 8 or 16 rows, GPU tests and an A/B in and past their bounds;
#   s59-sub32, ~2 min: time-major lanes tiles of 4, 8 or 16 rows (launch._tm_groups), A/B only;
#   s58-k32, ~2 min: 32 steps a thread on 16 warps for TD(lambda)'s and the forward kernel's
#   512-step time-major lanes tiles, A/B only, prepared;
#   s58-gae128, ~2 min: 16 or 4 steps a thread for GAE's 128-step time-major lanes tiles, A/B only;
#   s58-verify, ~4 min (carries _ab/s58/base: git archive d92d9ef rltriton): Retrace's 256-step
#   time-major lanes tile as adopted in session 57, GPU tests and A/B;
#   s57-retrace, ~2 min: Retrace's whole 256- and 512-step time-major rows on narrow lanes tiles, A/B only;
#   s57-retrace256, ~1 min: its 256-step tile between 2048 and 5120 rows;
#   s57-verify, ~4 min (carries _ab/s57/base): GAE's adopted 512-step tile, GPU tests and A/B;
#   s57-gae512, ~3 min: s56-gae512's k32 from 256 to 6144 x 512 rows, to find its bounds;
#   s56-gae512, ~3 min: GAE's whole 512-step time-major rows on a [32, 512] lanes tile with EXACT_T
#   (16 steps a thread on 32 warps, or 32 on 16), A/B only;
#   s55-exact, ~7 min: EXACT_T for GAE's kernel (time-major lanes tiles) and the forward kernel
#   (those and batch-major whole rows): its GPU tests, then an A/B of off / on;
#   s50-sweep-tm-small (run in session 50, on an H100), ~9 min: every 2-, 4- and 8-row time-major tile, whole rows or split
#   from 16 programs, at the small calls (128 x 1024, 64 x 512, 256 x 512, 256 x 1024) for
#   TD(lambda), GAE, V-trace and traces (benchmarks/sweep.py SWEEP_TM_NARROW_FEW, prepared in
#   session 49)
#   s48-tm-rows, ~3 min: the small calls' whole time-major rows of 129-1024 steps on 2 or 1 rows
#   a program (more programs) against the shipped 4, A/B only;
#   s49-whole-4warps, ~5 min: whole 4096-step rows on 4 warps (launch._WHOLE_ROW_4K_WARPS, none as
#   shipped) for TD(lambda)'s kernel capped at 128 registers and the forward kernel (w4), and GAE's
#   too (w4g), against the plans as shipped at 512 x 4096 and neighbours, then its GPU test;
#   s46-tm-small, ~5 min: launch._TM_SMALL_ROWS (off as shipped) at 4 and 8 rows against it
#   off, time-major calls of fewer than 2^18 elements (512 x 128 ...), five estimators, then
#   its GPU test (forced on); if a setting wins, ship it with test_tm_small_plans's expectations;
#   s46-tm-small-long, ~5 min: launch._TM_SMALL_LONG_FORMS (none as shipped) set to every form,
#   on 4 or 8 rows, against none (five estimators): time-major rows of 129-1024 steps in calls of at most 2^18
#   elements (512 x 512, 256 x 1024, 128 x 1024), then its GPU test; a form that wins goes into
#   the set, with test_tm_small_plans's expectations;
#   s47-whole-row-a, ~6 min: launch._WHOLE_ROW_MAXNREG (none as shipped): whole 4096-step rows on
#   8 warps capped at 64 registers, four programs an SM (one wave at 512 x 4096), for GAE,
#   TD(lambda), discounted returns and traces, against the plans as shipped, then its GPU test;
#   s47-whole-row-b, ~6 min: the same for V-trace, Retrace and the action form, which walk such
#   rows in chunks as shipped, on 8 warps (c8) and on 16 (c16, two programs an SM), and V-trace's
#   2048-step rows on 8 warps capped (c8; 16 as shipped, two programs an SM at 512 x 2048);
#   s47-tm-lanes-regs, ~7 min: launch._TM_LANES_MAXNREG (none as shipped): the time-major lanes
#   tiles capped at 64 registers on more programs than SMs (GAE 16384 x 128, V-trace's and
#   Retrace's 8192 x 128: one program an SM, two rounds, as shipped), and V-trace's and
#   Retrace's 128-step narrow tiles up to 16384 rows (t64w), then its GPU test;
#   s47-2k-4warps, ~2.5 min: whole 2048-step rows of GAE and TD(lambda) on 4 warps (16 steps a
#   thread: TD(lambda) 440 -> 720 SASS a thread, 48 -> 74 registers) against 8 (A/B only);
#   if a setting wins, ship it with test_whole_row_registers' plans as the default (and a
#   planner test of where it applies);
#   s43-rows-t-gate, ~6 min: launch._ROWS_T on with its plan gate (session 43) against it off,
#   twice, then the grid's GPU tests; s43-tm128, ~1 min: V-trace's and Retrace's time-major
#   one-chunk tiles' shapes; s43-vtrace-lanes64, ~1 min, and s43-vtrace-lanes64-check, ~2 min:
#   V-trace's 64-step rows on the lanes tiles, then as shipped with its GPU tests (all timed in
#   session 43);
#   s43-rows-t, ~8 min: launch._ROWS_T (prepared in session 42, then off): an A/B off -> on twice, then
#   the GPU tests of the tiles it touches with it on (s43-rows-t-grid, ~5 min: the grid's);
#   s42-tm-split, ~6 min, s42-tm-tiles, ~5 min: the time-major tiles' settings (tuned in
#   session 6) timed again against today's kernels at the classic grid's time-major misses, as
#   session 41's pipeline depth and wide tiles were: the split's bounds (_TM_SPLIT_BELOW,
#   _TM_PROGRAMS_PER_SM, _TM_CHUNKS_PER_SEGMENT), then the 16-row and wide tiles' bounds
#   (_TM_NARROW_BELOW, _TM_WIDE_MIN_BLOCKS);
#   s39-tdsel, ~4 min: TD(lambda)'s general alpha with and without its select where T is a
#   constant, at 16384 x 128 and neighbours (session 39's grids: 1.17-1.19x -> 1.25x there);
#   s38-dr, ~9.5 min (carries _ab/s38/base): session 37's change to discounted returns' bootstrap
#   term and beta's mask, session 38's alphas without a select (forward kernel; TD(lambda)'s
#   where T is a constant): GPU tests of both kernels, an A/B against 83985d3;
#   s37-gate, ~1.5 min: the driver gate of the dependent launch (launch._PDL_MIN_DRIVER, added
#   after session 36's device calls): the driver's version, then the dependent-launch and
#   graph-capture GPU tests (test_pdl_split asserts PHASE 2's launch_pdl);
#   s37-lazybm, ~6 min: launch._TD_LAZY_CUT_BATCH (prepared in session 36): its GPU tests, then
#   an A/B of TD(lambda) and discounted returns with and without it at single-pass rows;
#   s36-check, ~6.5 min: the session's defaults (launch._PDL, _PDL_LATE): the GPU tests of
#   time splits, then the few-row grid (stops at its time box: GAE, TD(lambda) and a row);
#   s36-long, ~1-5 min (warm or cold kernel cache): every estimator's long rows against rl-triton;
#   s36-512, ~2.5 min: the classic grid's 512 x 2048 and 512 x 4096 rows of every estimator
#   against rl-triton, then segment lengths at 1 x 1048576 (benchmarks/sweep.py);
#   s36-sweep512, ~1.2 min: every plan of discounted returns and TD(lambda) at 512 x 4096;
#   s36-native, ~2.5 min: the compiled replay's time-split tests with the dependent launch;
#   s35-pdl2, ~3.5 min: launch._PDL on in the copy: long rows, graph capture tests (its native
#   tests did not finish in their 100 s box in session 36: s36-native has them);
#   s36-pdl-late, ~3.5 min: an A/B of launch._PDL_LATE against the wait first and the plain launch;
#   s35-long, ~5 min: every estimator's long rows against rl-triton;
#   s35-coop, ~3 min: Nsight Compute on the cooperative single pass and the two passes at
#   1 x 1048576 (prepared in session 34);
#   s34-check, ~6 min: the session's defaults at few-row splits, and Retrace's action form
#   without _INTERIOR at one and two rows;
#   s34-lazy2, ~9 min: the GPU tests of those defaults, an A/B and the harness's long rows of
#   TD(lambda) and discounted returns;
#   s34-single, ~7 min: launch._INTERIOR_SINGLE_PASS's GPU tests and an A/B of the single passes
#   with interior chunks against the two passes at the long rows (prepared in session 33);
#   s33-check, ~4 min: GPU tests of launch._MAP_REDUCE and the long rows, then TD(lambda)'s long
#   rows against rl-triton through the harness;
#   s28-verify, ~6 min: the GPU tests of TD(lambda)'s kernel (launch._DR_SHORT_TILES and _EXACT_T
#   among them), then the classic and massive grids of discounted returns against rl-triton;
#   native, ~8 min: the compiled replay's build, GPU tests, host-time probe and the GAE rows of
#   8-32 steps against PufferLib)
#   (grid=GRIDS:ESTIMATORS, up to ~9 min: one slice of the full grid, e.g. grid=classic:gae,vtrace;
#   the whole of BENCHMARKS.md's grid takes about eight such calls, see benchmarks/README.md)
#   (adopted, ~3 min: the GPU tests of session 9's settings forced on, then an A/B of session 8's
#   defaults against them: launch._GROUP_SCAN_FLAT, _GROUP_SCAN_LOOP, _LOOP_MAXNREG)
#   (gscan, ~2 min: the GPU tests of launch._GROUP_SCAN forced everywhere, then an A/B of the
#   default against chunks in time order throughout, i.e. _GROUP_SCAN off; Triton < 3.7)
#   (tests ~8 min with a cold kernel cache, more than one call may need TESTS_K slices; probe ~1.5, bench ~3.5, each sweep ~4: at most
#   ~9 min per call; bench-rest: the estimators bench's 3 minutes leave out, ~3.5; fewrows: few rows of 8192-131072 steps, ~3.5; massive:
#   the massively parallel grid for four estimators against rl-triton, ~4)
#
# The GPU machine's copy of the tree may carry a stale .git: give the harness the commit sent,
# `COMMIT=<sha> bash benchmarks/device_run.sh bench` (the SHA written into the command here).
# Carry `.whl` and `.peers` with the call (git-ignored; benchmarks/README.md says how to make
# them) so TorchRL and rl-triton are benchmarked too.
set -u
OUT=${OUT:-/tmp/rltriton-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD
fi
# failures_of LOG: a verbose pytest run's output (stdin) kept whole in $OUT/LOG, its failures
# and summary lines shown
failures_of() {
  tee "$OUT/$1" | grep -E "FAILED|ERROR|passed|failed" | grep -v "PASSED" | sed 's/ - .*//' | head -40
}
# gpu_tests SECONDS PATTERN LOG: the GPU tests whose names match PATTERN, time-boxed
gpu_tests() {
  timeout "$1" python3 -m pytest -m gpu tests/test_gpu.py -q -n 14 -p no:cacheprovider -k "$2" 2>&1 \
    | tee "$OUT/$3" | tail -3
}
# versions NAME V...: fresh copies of rltriton/ in _ab/NAME/V for benchmarks/ab.py (each then
# changed by a sed of one setting)
versions() {
  local dir=_ab/$1
  shift
  rm -rf "$dir"
  for v in "$@"; do mkdir -p "$dir/$v" && cp -r rltriton "$dir/$v/"; done
}
L=rltriton/kernels/launch.py
# setting_ab NAME TESTS_K TEST_SECONDS V1 V2 VERSION:SED AB_SECONDS ESTIMATORS SHAPES: one
# setting of launch.py timed on its own: the GPU tests matching TESTS_K, then copies V1 and V2
# of rltriton/ (versions), VERSION's launch.py edited by SED, and an A/B of V1 against V2
# (columns in that order); logs NAME_tests.log and ab_NAME.txt
setting_ab() {
  gpu_tests "$3" "$2" "$1_tests.log"
  versions "$1" "$4" "$5"
  sed -i "${6#*:}" "_ab/$1/${6%%:*}/$L"
  timeout "$7" python3 benchmarks/ab.py "_ab/$1/$4" "_ab/$1/$5" --est "$8" --shapes "$9" 2>&1 | tee "$OUT/ab_$1.txt"
}
# variants_ab NAME SECONDS ESTIMATORS SHAPES V[=SED]...: fresh copies of rltriton/ for each V
# (versions), V's launch.py edited by its SED where one is given, then an A/B of them in that
# order (columns likewise); logs ab_NAME.txt
variants_ab() {
  local name=$1 secs=$2 est=$3 shapes=$4 v
  shift 4
  local dirs=()
  versions "$name" "${@%%=*}"
  for v in "$@"; do
    [[ $v == *=* ]] && sed -i "${v#*=}" "_ab/$name/${v%%=*}/$L"
    dirs+=("_ab/$name/${v%%=*}")
  done
  timeout "$secs" python3 benchmarks/ab.py "${dirs[@]}" --est "$est" --shapes "$shapes" 2>&1 | tee "$OUT/ab_$name.txt"
}
stages=${*:-tests probe}
for stage in $stages; do
  case $stage in
    tests)
      # verbose, so a failure is named in the log as it happens even if the time box ends the
      # run before pytest's summary (TESTS_K: a -k expression; TESTS_TIMEOUT: the box, s;
      # TESTS_SHARD=i/n: the i-th of n contiguous slices of every GPU test of test_gpu.py and
      # test_native.py in collection order, so the whole suite, ~15 min from a cold kernel
      # cache, fits in n calls)
      if [[ -n ${TESTS_SHARD:-} ]]; then
        python3 -m pytest -m gpu tests/test_gpu.py tests/test_native.py --collect-only -q -p no:cacheprovider \
          2>/dev/null | grep :: > "$OUT/gpu_test_ids.txt"
        python3 - "$OUT/gpu_test_ids.txt" "$TESTS_SHARD" > "$OUT/gpu_test_shard.txt" <<'PY'
import sys
ids = open(sys.argv[1]).read().splitlines()
i, n = map(int, sys.argv[2].split("/"))
print("\n".join(ids[len(ids) * i // n:len(ids) * (i + 1) // n]))
PY
        echo "shard $TESTS_SHARD: $(wc -l < "$OUT/gpu_test_shard.txt") of $(wc -l < "$OUT/gpu_test_ids.txt") tests"
        # node ids may hold spaces: hand them to pytest as a list, not through the shell
        timeout "${TESTS_TIMEOUT:-540}" python3 -c "import sys, pytest; sys.exit(pytest.main(['-m', 'gpu', '-v', \
'-n', '14', '-p', 'no:cacheprovider', *open(sys.argv[1]).read().splitlines()]))" "$OUT/gpu_test_shard.txt" \
          2>&1 | failures_of gpu_tests.log
      else
        timeout "${TESTS_TIMEOUT:-540}" python3 -m pytest -m gpu tests/test_gpu.py -v -n 14 -p no:cacheprovider \
            ${TESTS_K:+-k "$TESTS_K"} 2>&1 | failures_of gpu_tests.log
      fi
      echo "passed so far: $(grep -c PASSED "$OUT/gpu_tests.log")" ;;
    probe) timeout 90 python3 benchmarks/probe.py gae,vtrace 2>&1 | tee "$OUT/probe.log" ;;
    bench) timeout 200 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid quick --time-major --max-minutes 3 --no-plots --out "$OUT" 2>&1 \
             | tail -40 ;;
    fewrows) timeout 200 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid fewrows --max-minutes 3 --no-plots --tag fewrows \
             --out "$OUT" 2>&1 | tail -40 ;;
    bench-rest) timeout 200 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid quick --time-major --max-minutes 3 --no-plots --tag rest \
             --estimators retrace_av,traces,prefix_sum --out "$OUT" 2>&1 | tail -30 ;;
    massive) timeout 230 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid massive --max-minutes 3.3 --no-plots --tag massive \
             --estimators gae,td_lambda,vtrace,retrace --peers rl-triton --out "$OUT" 2>&1 | tail -30 ;;
    sweep) timeout 240 python3 benchmarks/sweep.py gae 2>&1 | tee "$OUT/sweep_gae.log" | grep -v "^ *skip" ;;
    sweep-tm) SWEEP_TIME_MAJOR=1 timeout 300 python3 benchmarks/sweep.py gae \
               32768x8,32768x64,4096x128,16384x512,4096x2048,512x4096,1024x512,16x262144 2>&1 | tee "$OUT/sweep_gae_tm.log" \
             | grep -v "^ *skip" ;;
    gscan)
      # the two-level group scan (launch._GROUP_SCAN): its GPU tests, then time order -> default
      setting_ab gscan group_scan 150 time_order default 'time_order:s/^_GROUP_SCAN = True/_GROUP_SCAN = False/' \
        200 gae,td_lambda,vtrace,retrace,retrace_av \
        4096x128,32768x8,32768x32,32768x64,16384x512,512x4096,4096x2048,16x262144,1x1048576 ;;
    adopted)
      # session 9's settings (launch._GROUP_SCAN_FLAT on for 16-64-step short rows, the group scan
      # and register caps in the chunk loops) against session 8's defaults: the forced GPU tests,
      # then an A/B on the short rows and the chunk loops
      gpu_tests 200 "flat or loop_registers" adopted_tests.log
      versions adopted s8 default
      sed -i -e 's/^_GROUP_SCAN_FLAT = True/_GROUP_SCAN_FLAT = False/' \
             -e 's/^_GROUP_SCAN_LOOP = .*/_GROUP_SCAN_LOOP = frozenset({"td_lambda", "retrace_actions"})/' \
             -e 's/^_LOOP_MAXNREG: dict\[str, int\] = .*/_LOOP_MAXNREG: dict[str, int] = {}/' _ab/adopted/s8/$L
      grep -h "^_GROUP_SCAN_FLAT =\|^_LOOP_MAXNREG\|^_GROUP_SCAN_LOOP" _ab/adopted/*/$L
      timeout 240 python3 benchmarks/ab.py _ab/adopted/s8 _ab/adopted/default \
        --est gae,td_lambda,vtrace,retrace,retrace_av \
        --shapes 32768x8,32768x16,8192x16,32768x32,32768x64,4096x128,512x4096,1024x4096,512x3000,256x8192 2>&1 \
        | tee "$OUT/ab_adopted.txt" ;;
    fwd)
      # the forward kernel's own tiles (launch._FWD_TILES; eligibility traces, prefix sums): its
      # GPU tests, then an A/B of the backward kernels' tiles against 1024- (default), 512- and
      # 2048-element short-row tiles
      gpu_tests 150 "traces or prefix" fwd_tests.log
      versions fwd bwd_tiles f1024 f512 f2048
      sed -i 's/^_FWD_TILES = True/_FWD_TILES = False/' _ab/fwd/bwd_tiles/$L
      sed -i 's/^_FWD_SHORT_TILE = 1024/_FWD_SHORT_TILE = 512/' _ab/fwd/f512/$L
      sed -i 's/^_FWD_SHORT_TILE = 1024/_FWD_SHORT_TILE = 2048/' _ab/fwd/f2048/$L
      timeout 240 python3 benchmarks/ab.py _ab/fwd/bwd_tiles _ab/fwd/f1024 _ab/fwd/f512 _ab/fwd/f2048 \
        --est traces,prefix_sum \
        --shapes 32768x8,32768x16,32768x32,32768x64,8192x64,4096x128,16384x128,1024x128,16384x512,4096x2048,512x4096,1024x4096 \
        2>&1 | tee "$OUT/ab_fwd.txt" ;;
    short)
      # the backward estimators' short-row tiles: the default (256 elements, 4 a thread)
      # against one warp a tile (8 a thread) and 1024-element tiles at 8 a thread
      versions short default w1 wide
      sed -i 's/^_SHORT_WARP_ELEMS = 128/_SHORT_WARP_ELEMS = 256/' _ab/short/w1/$L _ab/short/wide/$L
      sed -i 's/^_SHORT_TILE = 256 /_SHORT_TILE = 1024 /' _ab/short/wide/$L
      timeout 280 python3 benchmarks/ab.py _ab/short/default _ab/short/w1 _ab/short/wide \
        --est gae,td_lambda,vtrace,retrace,retrace_av \
        --shapes 32768x8,32768x16,32768x32,32768x64,8192x64,4096x128,16384x128,1024x128,512x32 2>&1 \
        | tee "$OUT/ab_short.txt" ;;
    lookback)
      # the single-pass decoupled look-back (launch._LOOKBACK) for split rows: its GPU tests,
      # then an A/B of the two-pass split (default) against it
      setting_ab lookback lookback 200 two_pass lookback 'lookback:s/^_LOOKBACK = False/_LOOKBACK = True/' \
        240 gae,td_lambda,vtrace,retrace,retrace_av,traces 16x262144,1x1048576,64x65536,1x4194304,128x16384,256x8192 ;;
    sweep-lb)
      # every plan of the long rows, the look-back's among them (lookback = True in the plan)
      for e in gae traces; do
        SWEEP_VERBOSE=1 timeout 150 python3 benchmarks/sweep.py $e 16x262144,1x1048576,512x4096 2>&1 \
          | tee "$OUT/sweep_lb_$e.log" | grep -E "True|WRONG| / "
      done ;;
    profile)
      # per-kernel times (torch.profiler) and registers of the split passes and the look-back
      P="timeout 100 python3 benchmarks/profile_kernels.py"
      { $P gae 16x262144,1x1048576,1x4194304,512x4096; $P gae 16x262144,1x1048576,1x4194304 _LOOKBACK=True
        $P td_lambda 16x262144,1x1048576,32768x8,32768x64,4096x128; $P traces 16x262144,1x1048576; } 2>&1 \
        | tee "$OUT/profile.log" | grep -v "^ *$" | head -120 ;;
    one-chunk)
      # whole rows of 2048-16384 steps in one chunk, one launch (sweep.py's SWEEP_ONE_CHUNK),
      # against the default plans (the split's two launches, the chunk loop), device and full call
      for e in gae td_lambda vtrace traces; do
        SWEEP_ONE_CHUNK=1 timeout "${ONE_CHUNK_SECONDS:-110}" python3 benchmarks/sweep.py $e \
          "${ONE_CHUNK_SHAPES:-1x4096,128x4096,512x4096,1x8192,32x8192,128x8192,256x8192,8x16384}" 2>&1 \
          | tee "$OUT/one_chunk_$e.log" | grep -v "^ *skip"
      done ;;
    one-chunk-ab)
      # launch._ONE_CHUNK_ROWS: the GPU tests of whole rows in one chunk (every kernel form on
      # the widest bounds) and of 512 x 4096, then an A/B of the plans before (_ab/one/base:
      # the tree before the rule) against the rule on every form (_ab/one/all); carry _ab, made
      # here with `git archive b98317f~1 rltriton | tar -x -C _ab/one/base` and a copy of
      # rltriton/ whose launch.py has `_ONE_CHUNK_ROWS = {}`
      gpu_tests "${TESTS_TIMEOUT:-240}" "one_chunk or 512x4096 or awkward" one_chunk_tests.log
      timeout "${AB_SECONDS:-330}" python3 benchmarks/ab.py _ab/one/base _ab/one/all \
        --est gae,td_lambda,discounted_returns,vtrace,retrace,retrace_av,traces,prefix_sum \
        --shapes "${AB_SHAPES:-1x4096,64x4096,128x4096,256x4096,512x4096,100x3000,512x3000,1x8192,96x8192,128x8192,200x8192,256x8192,128x6000}" \
        2>&1 | tee "$OUT/ab_one_chunk.txt" ;;
    sweep-big)
      # chunks of 4096-8192 steps (a whole row in one chunk, beyond launch._MAX_BLOCK_T) for
      # few rows of 4096-8192 steps: traces 128 x 8192 was 5.8 us against rl-triton's 5.4
      for e in traces gae; do
        SWEEP_BIG=1 SWEEP_VERBOSE=1 timeout 150 python3 benchmarks/sweep.py $e 128x8192,256x8192,128x4096,32x8192 2>&1 \
          | tee "$OUT/sweep_big_$e.log" | grep -v "^ *skip" | sort -t')' -k2 -n | head -12
      done ;;
    sweep-tm-few)
      # time-major storage with fewer rows than launch._TM_MIN_ROWS: every plan, the tiles as wide as the rows among them
      for e in gae vtrace traces; do
        SWEEP_TIME_MAJOR=1 SWEEP_VERBOSE=1 timeout 100 python3 benchmarks/sweep.py $e 16x262144,64x65536 2>&1 \
          | tee "$OUT/sweep_tm_few_$e.log" | grep -v "^ *skip" | tail -40
      done ;;
    sweep-tm-few2)
      # few time-major rows for V-trace and Retrace (no few-rows tiles yet: 303 and 345 us at
      # 16 x 262144 against 55 batch-major): sweep.py's few-rows candidates, shorter chunks on
      # more warps among them (the 512-step tiles spill in PHASE 2 for these two)
      for e in vtrace retrace gae; do
        SWEEP_TIME_MAJOR=1 SWEEP_VERBOSE=1 timeout 170 python3 benchmarks/sweep.py $e 16x262144,32x131072 2>&1 \
          | tee "$OUT/sweep_tm_few2_$e.log" | grep -v "^ *skip" | sort -t')' -k2 -n | head -12
      done ;;
    tm-few)
      # few time-major rows (launch._TM_FEW_TILES): their GPU tests, then the generic tiles -> the few-rows tiles
      setting_ab tm_few few_rows 150 generic default 'generic:/^_TM_FEW_TILES/,/^}/c _TM_FEW_TILES: dict = {}' \
        220 gae_tm,td_lambda_tm,vtrace_tm,retrace_tm,traces_tm 16x262144,8x262144,4x262144,16x131072,2x524288,9x200000 ;;
    tm-few-av)
      # Retrace's action form on few time-major rows: the few-rows and action-vector GPU tests,
      # then an A/B of the generic tiles -> the short few-rows tile (the default) -> the long one
      gpu_tests 170 "few_rows or retrace_action_vectors" tm_few_av_tests.log
      versions tm_few_av generic default long
      sed -i '/^    "retrace_actions": /d' "_ab/tm_few_av/generic/$L"
      sed -i 's/^\(    "retrace_actions": ((4, \)_TM_FEW_SHORT/\1_TM_FEW_LONG/' "_ab/tm_few_av/long/$L"
      timeout 150 python3 benchmarks/ab.py _ab/tm_few_av/generic _ab/tm_few_av/default _ab/tm_few_av/long \
        --est retrace_av_tm --shapes 16x262144,8x262144,4x262144,16x131072 2>&1 | tee "$OUT/ab_tm_few_av.txt" ;;
    td-bisect)
      # few time-major rows at 78faaf6 (session 10's long tiles, _ab/78faaf6: `git archive 78faaf6
      # rltriton | tar -x -C _ab/78faaf6`, carried) against this tree
      timeout 120 python3 benchmarks/ab.py _ab/78faaf6 . --est td_lambda_tm,gae_tm \
        --shapes 16x262144,8x262144,4x262144 2>&1 | tee "$OUT/ab_td_bisect.txt" ;;
    carry-td)
      # TD(lambda)'s time-major 4-row tile lost 18.7 -> 25.3 us after 78faaf6 with CARRY_PROD its
      # one changed constexpr (s13 notes, section 4): the reverse scan -> products on few rows
      versions carry_td scan products
      sed -i 's/^_CARRY_PRODUCTS = True/_CARRY_PRODUCTS = False/' "_ab/carry_td/scan/$L"
      timeout 150 python3 benchmarks/ab.py _ab/carry_td/scan _ab/carry_td/products \
        --est td_lambda_tm,gae_tm,traces_tm,td_lambda --shapes 4x262144,8x262144,4x140000,16x262144 2>&1 \
        | tee "$OUT/ab_carry_td.txt" ;;
    lazycut)
      # TD(lambda)'s and discounted returns' cut applied lazily (launch._TD_LAZY_CUT, session 13):
      # their GPU tests and the non-finite ones, then an A/B of the cut in every scan -> lazily
      setting_ab lazycut "td_lambda or discounted or nonfinite or few_rows" 200 eager default \
        'eager:s/^_TD_LAZY_CUT = True/_TD_LAZY_CUT = False/' 200 \
        td_lambda,discounted_returns,td_lambda_tm,discounted_returns_tm \
        16384x512,512x4096,32768x64,16x262144,1x1048576,4096x128,4x262144 ;;
    coop)
      # the cooperative single pass of split rows (launch._COOP, session 14): its GPU tests, then
      # an A/B of the two passes -> one cooperative pass (16 steps a thread; 8 was slower
      # everywhere) -> its barrier polled by loads
      gpu_tests 240 "coop" coop_tests.log
      versions coop split coop16 coopld
      sed -i 's/^_COOP = False/_COOP = True/' _ab/coop/coop16/$L _ab/coop/coopld/$L
      sed -i 's/^BARRIER_POLL_LOAD = tl.constexpr(False)/BARRIER_POLL_LOAD = tl.constexpr(True)/' \
        _ab/coop/coopld/rltriton/kernels/scan.py
      timeout 300 python3 benchmarks/ab.py _ab/coop/split _ab/coop/coop16 _ab/coop/coopld \
        --est gae,td_lambda,discounted_returns,vtrace,retrace,retrace_av,traces \
        --shapes 1x1048576,16x65536,4x262144,1x262144 2>&1 | tee "$OUT/ab_coop.txt" ;;
    splitmin)
      # few rows of 8192-131072 steps: session 13's rule (a split from 2^18 elements and 8 chunks,
      # where one program walked each row: 1 x 131072 GAE 150 us) -> today's -> today's + coop
      variants_ab splitmin 300 gae,vtrace,retrace_av,traces \
        1x16384,1x32768,1x65536,1x131072,2x65536,4x32768,8x16384,12x16384,16x8192,1x8192 \
        s13='s/^_SPLIT_MIN_ELEMS = 0 /_SPLIT_MIN_ELEMS = 1 << 18 /;s/^_SPLIT_FEW_CHUNKS = 4/_SPLIT_FEW_CHUNKS = 8/' \
        default coop='s/^_COOP = False/_COOP = True/' ;;
    splitchunks)
      # with no element threshold, rows split from 8 -> 4 (today's rule on few programs, 8 on
      # more) -> 4 everywhere -> 2 everywhere
      variants_ab splitchunks 300 gae,vtrace,td_lambda,traces \
        1x4096,1x8192,16x8192,64x4096,128x4096,32x8192,128x8192,256x4096,200x6000,1x3000 \
        c8='s/^_SPLIT_FEW_CHUNKS = 4/_SPLIT_FEW_CHUNKS = 8/' default c4='s/^_SPLIT_MIN_CHUNKS = 8/_SPLIT_MIN_CHUNKS = 4/' \
        c2='s/^_SPLIT_MIN_CHUNKS = 8/_SPLIT_MIN_CHUNKS = 2/;s/^_SPLIT_FEW_CHUNKS = 4/_SPLIT_FEW_CHUNKS = 2/' ;;
    carry)
      # PHASE 2's carry-in as a sum of products (launch._CARRY_PRODUCTS): its GPU tests, then an A/B
      setting_ab carry carry_products 200 scan products 'scan:s/^_CARRY_PRODUCTS = True/_CARRY_PRODUCTS = False/' \
        240 gae,td_lambda,vtrace,retrace,retrace_av,traces,gae_tm,vtrace_tm \
        16x262144,1x1048576,64x65536,128x16384,512x4096,4096x2048 ;;
    segflip)
      # PHASE 2 in reverse launch order (launch._SEG_FLIP, on since session 12 from
      # _SEG_FLIP_MIN_ELEMS on batch-major tiles): its GPU tests, then an A/B of launch order -> the default
      setting_ab segflip seg_flip 150 inorder default 'inorder:s/^_SEG_FLIP = True/_SEG_FLIP = False/' \
        240 gae,td_lambda,vtrace,retrace,traces,gae_tm 16x262144,1x1048576,64x65536,16x131072,1x4194304 ;;
    flatseg)
      # rows laid end to end with the scan segmented at the rows' starts (launch._FLAT_SEGMENTED,
      # on since session 12): its GPU tests, then an A/B, plain -> segmented, on the short rows
      # that take those tiles (Triton < 3.7)
      setting_ab flatseg "flat_segmented or nonfinite" 150 plain default \
        'plain:s/^_FLAT_SEGMENTED = True/_FLAT_SEGMENTED = False/' \
        200 gae,vtrace,retrace,retrace_av 32768x16,32768x32,32768x64,8192x32,4096x16 ;;
    host)
      # host time of a repeated call (benchmarks/host.py): the replay's launch against a bare one
      timeout 150 python3 benchmarks/host.py gae,vtrace 32768x8,4096x128 2>&1 | tee "$OUT/host.log" | tail -20
      timeout 90 python3 benchmarks/host.py --breakdown gae,vtrace,traces 32768x8 2>&1 | tee -a "$OUT/host.log" | tail -5 ;;
    puffer-short)
      # GAE at the massively parallel grid's 8- and 16-step rows against PufferLib and rl-triton
      # (PufferLib is ahead on full calls at 32768 x 8: host time, 2026-11-30-h200-s11 notes)
      timeout 200 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --estimators gae --peers pufferlib,rl-triton \
        --shapes 4096x8,8192x8,16384x8,32768x8,4096x16,8192x16,16384x16,32768x16 --max-minutes 3 --no-plots \
        --tag puffer-short --out "$OUT" 2>&1 | tail -14 ;;
    s23-verify)
      # session 23's last two plan changes, timed in an A/B only (4e63e04: Retrace's action form
      # on 64-step time-major lanes tiles, GAE's and TD(lambda)'s 64-step tiles on few programs 4
      # steps a thread): the GPU tests that take them, then the massive grid's rows of those forms
      gpu_tests 300 "tm_lanes_tiles or (test_grid and (gae or td_lambda or discounted or retrace_av)) or \
(nonfinite_default_tiles and (gae or td_lambda or retrace_av))" s23_verify_tests.log
      timeout 240 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid massive --time-major --peers rl-triton \
        --estimators gae,td_lambda,retrace_av --max-minutes 3.5 --no-plots --tag s23-verify --out "$OUT" 2>&1 | tail -8 ;;
    s26-verify)
      # session 26's warps of whole rows (launch._ONE_CHUNK_WARPS), timed in an A/B only: the GPU
      # tests that take them, then the classic grid's rows of GAE's and TD(lambda)'s kernels
      gpu_tests 240 "(test_grid and (512x2048 or 512x4096 or 4096x2048)) or one_chunk" s26_verify_tests.log
      timeout 270 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid classic --time-major --peers rl-triton \
        --estimators gae,td_lambda,discounted_returns --max-minutes 4 --no-plots --tag s26-verify --out "$OUT" 2>&1 | tail -8 ;;
    sweep-classic)
      # the plans of the classic grid's misses swept again per kernel (their warps were chosen
      # sessions ago; session 26 found GAE's and TD(lambda)'s whole rows faster on other warps)
      for est in td_lambda vtrace retrace traces; do
        timeout 110 python3 benchmarks/sweep.py $est 512x2048,512x4096,4096x128,16384x128 2>&1 \
          | tee "$OUT/sweep_classic_$est.log" | grep -v "^ *skip" | tail -12
      done ;;
    s27-verify)
      # the GPU tests written after session 27's device time ran out: V-trace's loop tiles and the
      # edge carry (its per-step fallback for non-finite last values included)
      gpu_tests 240 "loop_tiles or edge_carry" s27_verify_tests.log ;;
    s27-massive)
      # the massive grid's rows of the two estimators session 27 changed (time-major discounted
      # returns on 128-step lanes tiles: launch._EDGE_CARRY; V-trace's loop tiles take no row of
      # it), every row against rl-triton, to count the goals again (last run: session 25)
      timeout 540 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid massive --time-major --peers rl-triton \
        --estimators discounted_returns,vtrace --max-minutes 8 --no-plots --tag s27-massive --out "$OUT" 2>&1 | tail -8 ;;
    ncu-stalls)
      # warm-L2 profiles with stall reasons by source line (SourceCounters) of rows whose kernels
      # run GAE's instruction count on fewer bytes (2026-12-02-h200-s27-notes.md, section 3)
      printf 'discounted_returns 16384x128\ndiscounted_returns 512x4096\ntd_lambda 512x2048\n' | \
        NCU_FLAGS='--cache-control none --section SourceCounters --section WarpStateStats --import-source yes' \
        bash benchmarks/ncu_run.sh 2>&1 | tail -20 ;;
    sweep-128)
      # every candidate plan's time (SWEEP_VERBOSE) for TD(lambda)'s kernel at 128-step rows, where
      # it runs GAE's instruction count on fewer bytes (2026-12-02-h200-s27-notes.md, section 3)
      for est in discounted_returns td_lambda; do
        SWEEP_VERBOSE=1 timeout 150 python3 benchmarks/sweep.py $est 4096x128,16384x128 2>&1 \
          | tee "$OUT/sweep_128_$est.log" | grep -v "^ *skip" | tail -30
      done ;;
    s28-verify)
      # session 28's [4, 128] tiles of discounted returns (launch._DR_SHORT_TILES): every GPU test
      # of discounted returns, then its classic and massive rows (time-major too) against rl-triton
      gpu_tests 240 "discounted or td_lambda or dr_short_tiles or exact_t" s28_verify_tests.log
      timeout 240 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid classic,massive --time-major \
        --peers rl-triton --estimators discounted_returns --max-minutes 3.5 --no-plots --tag s28-dr --out "$OUT" \
        2>&1 | tail -4 ;;
    s29)
      # session 28's [4, 128] tiles of discounted returns and TD(lambda)'s constant T (their GPU
      # tests passed in s28-verify) through the harness: classic and massive rows, time-major
      # too, against rl-triton; then the sweep of discounted returns' 64-step misses
      timeout 330 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid classic,massive --time-major \
        --peers rl-triton --estimators discounted_returns,td_lambda --max-minutes 5 --no-plots --tag s29-dr-td \
        --out "$OUT" 2>&1 | tail -4
      SWEEP_VERBOSE=1 timeout 150 python3 benchmarks/sweep.py discounted_returns 16384x64,32768x64 2>&1 \
        | tee "$OUT/sweep_64_dr.log" | grep -v "^ *skip" | tail -24 ;;
    sweep-lanes)
      # every lanes tile (GROUP_TILES = 4) of 1-8 warps and 1-2 rows a lane against the default
      # plan without them, at the 64- and 128-step misses of the massive grid
      for spec in discounted_returns:8192x128,16384x128,32768x128,16384x64,32768x64 \
                  td_lambda:8192x128,16384x128,32768x128,32768x64 vtrace:8192x64,16384x64; do
        SWEEP_LANES=1 SWEEP_VERBOSE=1 SWEEP_LANE_SHAPES=1:1,2:1,4:1,8:1,1:2,2:2,4:2 timeout 100 \
          python3 benchmarks/sweep.py "${spec%%:*}" "${spec#*:}" 2>&1 | tee "$OUT/sweep_lanes_${spec%%:*}.log" \
          | grep -v "^ *skip" | grep -v "^   (" | tail -8
      done ;;
    s29-verify)
      # session 29's 128-step lanes tiles of TD(lambda)'s kernel (launch._TD_WIDE_LANES): every GPU
      # test of TD(lambda) and discounted returns, an A/B against the tree before them, then the
      # massive rows of both (time-major too) against rl-triton
      gpu_tests 240 "discounted or td_lambda or dr_short_tiles or exact_t or td_wide_lanes" s29_verify_tests.log
      timeout 100 python3 benchmarks/ab.py _ab/s29/ln/base . --est td_lambda,discounted_returns,td_lambda_bv \
        --shapes 8192x128,12288x128,16384x128,24576x128,32768x128,33001x128,16384x100 2>&1 | tee "$OUT/ab.txt" | tail -24
      timeout 200 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid massive --time-major \
        --peers rl-triton --estimators discounted_returns,td_lambda --max-minutes 3 --no-plots --tag s29-verify \
        --out "$OUT" 2>&1 | tail -4 ;;
    s30-tmx)
      # session 29's constant T on the time-major lanes tiles, tried for the other backward
      # kernels: time-major rows of 16-128 steps, two runs
      for i in 1 2; do
        timeout 140 python3 benchmarks/ab.py _ab/s30/tmx/base _ab/s30/tmx/all \
          --est gae_tm,vtrace_tm,retrace_tm,retrace_av_tm \
          --shapes 4096x128,8192x128,16384x128,4096x64,16384x64,32768x64,16384x32,32768x32,32768x16 2>&1
      done | tee "$OUT/ab_s30_tmx.txt" | grep -v "^$" | tail -40 ;;
    s30)
      # session 30: the A/B of s30-tmx once, then session 29's constant T on TD(lambda)'s
      # time-major lanes tiles through the harness: the massive and classic grids of TD(lambda)
      # and discounted returns, time-major too, against rl-triton
      timeout 150 python3 benchmarks/ab.py _ab/s30/tmx/base _ab/s30/tmx/all \
        --est gae_tm,vtrace_tm,retrace_tm,retrace_av_tm \
        --shapes 4096x128,8192x128,16384x128,4096x64,16384x64,32768x64,16384x32,32768x32,32768x16 2>&1 \
        | tee "$OUT/ab_s30_tmx.txt" | grep -v "^$" | tail -40
      timeout 330 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid massive,classic --time-major \
        --peers rl-triton --estimators td_lambda,discounted_returns --max-minutes 5 --no-plots --tag s30-dr-td \
        --out "$OUT" 2>&1 | tail -4 ;;
    s31)
      # session 31: launch._TM_LONG_TILES as shipped: the GPU tests of the time-major lanes
      # tiles, an A/B against _ab/s31/base (carried: `git archive 88ab1ac rltriton | tar -x -C
      # _ab/s31/base`), with batch-major rows for scale; then (s31-grid) the harness
      gpu_tests 300 "tm_long_tiles or dr_tm_lanes_any or edge_carry or (tm_lanes_tiles and not retrace and not vtrace)" \
        gpu_s31.log
      timeout 240 python3 benchmarks/ab.py _ab/s31/base . \
        --est td_lambda_tm,td_lambda,gae_tm,gae,discounted_returns_tm,discounted_returns_tm_bv,traces_tm,prefix_sum_tm \
        --shapes 64x512,512x512,1024x512,4096x512,6144x512,8192x512,2048x300,1024x256,4096x256,8192x256,12288x256,16384x256,4096x200 2>&1 \
        | tee "$OUT/ab_s31_shipped.txt" | grep -v "^$" | tail -106 ;;
    s32-long)
      # session 32: launch._LONG_SPLIT (2048-step segments of long split rows), an A/B against
      # _ab/s32/base (carried: `git archive 5c8ebdd rltriton | tar -x -C _ab/s32/base`), its
      # GPU tests, and the long rows of the five estimators it moves against rl-triton (carry .peers)
      timeout 130 python3 benchmarks/ab.py _ab/s32/base . --est discounted_returns,td_lambda,traces,vtrace \
        --shapes 16x262144,1x1048576,32x262144,4x524288,1x262144,2x1048576 2>&1 | tee "$OUT/ab_s32.txt" | grep -v "^$"
      gpu_tests 170 "test_long_rows or segment_map_forward_long" gpu_s32.log
      timeout 200 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid long --shapes 16x262144,1x1048576 \
        --estimators discounted_returns,td_lambda,traces,prefix_sum,vtrace --peers rl-triton --max-minutes 2.5 \
        --no-plots --tag s32-long-split --out "$OUT" 2>&1 | tail -4 ;;
    s33-interior)
      # session 33: launch._INTERIOR (td_lambda_kernel's chunks without tests against T in the
      # segments before a split row's last): GPU tests of the splits, then an A/B against
      # _ab/s33/base (carried: `git archive 785cd87 rltriton | tar -x -C _ab/s33/base`)
      gpu_tests 200 "test_long_rows or map_reduce or seg_flip_split or carry_products_split or nonfinite_default \
or segment_map_forward_long or (test_grid and (td_lambda or discounted))" gpu_s33_interior.log
      timeout 200 python3 benchmarks/ab.py _ab/s33/base . --est discounted_returns,td_lambda \
        --shapes 16x262144,1x1048576,64x65536,4x524288,32x262144,2x1048576,1x262144,128x8192,32x8192,1x8192,16x16384 2>&1 \
        | tee "$OUT/ab_s33_interior.txt" | grep -v "^$" ;;
    s33-interior2)
      # session 33: launch._INTERIOR in all four kernels (GAE, TD(lambda), V-trace, forward):
      # GPU tests of the splits, then an A/B against _ab/s33/base (carried, as s33-interior)
      gpu_tests 240 "test_interior or test_long_rows or seg_flip_split or carry_products_split \
or nonfinite_default or segment_map_forward_long or map_reduce" gpu_s33_interior2.log
      timeout 240 python3 benchmarks/ab.py _ab/s33/base . --est gae,vtrace,traces,prefix_sum,discounted_returns,td_lambda \
        --shapes 16x262144,1x1048576,64x65536,32x8192,1x262144,128x8192 2>&1 \
        | tee "$OUT/ab_s33_interior2.txt" | grep -v "^$" ;;
    s33-long)
      # session 33: the long rows of every estimator against rl-triton after launch._INTERIOR
      timeout 300 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid long --shapes 16x262144,1x1048576 \
        --peers rl-triton --max-minutes 4.5 --no-plots --tag s33-long --out "$OUT" 2>&1 | tail -20 ;;
    s33-sweep)
      # session 33: which one-chunk split segments win now that their chunks run without tests
      # against T (launch._INTERIOR), long rows, five kernels
      for e in discounted_returns td_lambda vtrace gae traces; do
        SWEEP_TILES=512:2,1024:2,1024:4,2048:4,2048:8,1024:8 SWEEP_ONE_CHUNK_SEGS=1 timeout 55 \
          python3 benchmarks/sweep.py $e 16x262144,1x1048576 2>&1 | grep -v "^ *skip"
      done | tee "$OUT/sweep_s33.txt" | grep -i "best\|default\|^[a-z]" | head -60 ;;
    s33-split)
      # session 33: launch._LONG_SPLIT after launch._INTERIOR (s33-sweep): rows of 262144 steps
      # back on 1024-step segments (discounted returns, forward kernel), GAE on 2048 steps and
      # 4 warps past 262144; an A/B against _ab/s33/interior (carried: git archive 317dba6)
      timeout 200 python3 benchmarks/ab.py _ab/s33/interior . --est discounted_returns,traces,prefix_sum,gae \
        --shapes 16x262144,1x1048576,32x262144,4x524288,2x1048576,1x262144 2>&1 \
        | tee "$OUT/ab_s33_split.txt" | grep -v "^$" ;;
    s33-gae)
      # session 33: GAE's long split on 2048-step segments and 4 warps (launch._LONG_SPLIT)
      gpu_tests 150 "gae and (test_long_rows or test_interior or map_reduce or seg_flip_split \
or carry_products_split or segment_map_forward_long or nonfinite_default)" gpu_s33_gae.log ;;
    s33-retrace)
      # session 33: launch._INTERIOR for Retrace (both forms): GPU tests, an A/B against
      # _ab/s33/pre (carried: git archive 1da5398), the long rows of both forms against rl-triton
      gpu_tests 110 "retrace and (test_interior or test_long_rows)" gpu_s33_retrace.log
      timeout 60 python3 benchmarks/ab.py _ab/s33/pre . --est retrace,retrace_av \
        --shapes 16x262144,1x1048576,64x65536 2>&1 | tee "$OUT/ab_s33_retrace.txt" | grep -v "^$"
      timeout 80 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid long --shapes 16x262144,1x1048576 \
        --estimators retrace,retrace_av --peers rl-triton --max-minutes 1.2 --no-plots --tag s33-long-retrace \
        --out "$OUT" 2>&1 | tail -5 ;;
    s34-lazy)
      # session 34: TD(lambda)'s interior chunks without the cut unless something non-finite
      # comes out (launch._INTERIOR_LAZY, with and without a register cap): GPU tests, then an
      # A/B with PHASE 1 by reductions for GAE and discounted returns (launch._MAP_REDUCE,
      # last timed before _INTERIOR)
      gpu_tests 200 "test_interior_lazy" gpu_s34_lazy.log
      variants_ab s34 270 discounted_returns,td_lambda,gae 16x262144,64x65536,1x1048576,4x524288 \
        two lazy='s/^_INTERIOR_LAZY = False/_INTERIOR_LAZY = True/' \
        lazy80='s/^_INTERIOR_LAZY = False/_INTERIOR_LAZY = True/;s/^_INTERIOR_LAZY_MAXNREG = 0/_INTERIOR_LAZY_MAXNREG = 80/' \
        mr='s/^_MAP_REDUCE = frozenset({"td_lambda"})/_MAP_REDUCE = frozenset({"td_lambda", "gae", "discounted_returns"})/' ;;
    s35-fold)
      # prepared in session 34: PHASE 2's carry-in with the initial carry folded into its sum
      # (launch._CARRY_FOLD_INIT: a cross-warp reduction fewer, V-trace's interior path at
      # 1 x 1048576 9 -> 6 barriers): its GPU tests, then an A/B at the long rows
      gpu_tests 200 "test_carry_products_split or test_carry_fold_time_major" gpu_s35_fold.log
      variants_ab s35 220 discounted_returns,td_lambda,gae,vtrace,retrace,traces 1x1048576,16x262144,4x524288,64x65536 \
        two='s/^_CARRY_FOLD_INIT = .*/_CARRY_FOLD_INIT = frozenset()/' fold='s/^_CARRY_FOLD_INIT = .*/_CARRY_FOLD_INIT = _CARRY_FOLD_FORMS/'
      variants_ab s35tm 120 gae_tm,td_lambda_tm,vtrace_tm 512x2048,512x4096,64x65536 \
        two='s/^_CARRY_FOLD_INIT = .*/_CARRY_FOLD_INIT = frozenset()/' fold='s/^_CARRY_FOLD_INIT = .*/_CARRY_FOLD_INIT = _CARRY_FOLD_FORMS/' ;;
    s35-fold2)
      # session 35: the carry fold as default (not for discounted returns, which lost at
      # 16 x 262144 in s35-fold: 17.3 -> 20.1 us): the GPU tests of the default splits, and an
      # A/B of discounted returns with and without it (and with the lazy interior chunks too)
      gpu_tests 180 "test_long_rows or segment_map_forward_long or test_interior or map_reduce or time_major_few_rows or seg_flip or nonfinite_default" gpu_s35_fold2.log
      variants_ab s35b 150 discounted_returns 16x262144,8x262144,32x131072,16x131072,32x262144,64x65536,1x1048576,4x524288 \
        new drfold='s/^_CARRY_FOLD_INIT = .*/_CARRY_FOLD_INIT = _CARRY_FOLD_FORMS/' \
        drfoldlazy='s/^_CARRY_FOLD_INIT = .*/_CARRY_FOLD_INIT = _CARRY_FOLD_FORMS/;s/^_INTERIOR_LAZY = frozenset({"td_lambda"})/_INTERIOR_LAZY = frozenset({"td_lambda", "discounted_returns"})/' ;;
    s35-av)
      # session 35: the rest of s35-fold2's GPU tests (its time box ended at 68%, no failure),
      # and Retrace's action form with and without the carry fold (untimed in s35-fold; the
      # harness had 16 x 262144 at 115.7 us against 111.2 in s34-check)
      gpu_tests 150 "time_major_few_rows or seg_flip or nonfinite_default" gpu_s35_av.log
      variants_ab s35av 100 retrace_av 16x262144,1x1048576,64x65536,4x524288 \
        new nofold='s/^_CARRY_FOLD_INIT = frozenset({"gae", "td_lambda", "vtrace", "retrace", "retrace_actions", "forward"})/_CARRY_FOLD_INIT = frozenset({"gae", "td_lambda", "vtrace", "retrace", "forward"})/' ;;
    s35-pdl)
      # session 35: launch._PDL, a split's PHASE 2 as a programmatic dependent launch: its GPU
      # tests; the same tests with PHASE 2's wait taken out (a mutation: expected to fail, as
      # PHASE 2 then reads NaN summaries); an A/B at the long rows, few rows and time-major
      gpu_tests 150 "test_pdl_split" gpu_s35_pdl.log
      rm -rf /tmp/mut && mkdir /tmp/mut && cp -r rltriton tests pyproject.toml /tmp/mut/ \
        && sed -i 's/"griddepcontrol.wait; \/\/ \$0"/"mov.u32 \$0, 0;"/' /tmp/mut/rltriton/kernels/scan.py \
        && grep -c "mov.u32" /tmp/mut/rltriton/kernels/scan.py \
        && (cd /tmp/mut && PYTHONPATH=/tmp/mut timeout 100 python3 -m pytest -m gpu tests/test_gpu.py -q -n 14 \
          -p no:cacheprovider -k "test_pdl_split and (1x1048576 or 16x262144)" 2>&1 | tee "$OUT/gpu_s35_pdl_mutant.log" | tail -2)
      variants_ab s35p 150 discounted_returns,td_lambda,gae,vtrace,retrace,traces 1x1048576,16x262144,4x524288,64x65536 \
        off pdl='s/^_PDL = False/_PDL = True/'
      variants_ab s35pf 90 gae,vtrace,retrace_av,gae_tm,vtrace_tm 1x131072,8x16384,32x8192,128x8192,512x2048,64x65536 \
        off pdl='s/^_PDL = False/_PDL = True/' ;;
    s35-pdl2)
      # session 35 (prepared): launch._PDL through the compiled replay (PHASE 2 by
      # cuLaunchKernelEx): its time-split tests with and without it; then, in this copy of the
      # tree only, _PDL turned on for the long rows of GAE and Retrace against rl-triton (tag
      # s35-pdl-on: the commit given plus that setting) and the graph-capture tests
      timeout 100 python3 -m pytest -m gpu tests/test_native.py -q -n 8 -p no:cacheprovider -k "serves_time_split" 2>&1 \
        | tee "$OUT/gpu_s35_native.log" | tail -3
      sed -i 's/^_PDL = False/_PDL = True/;s/^_PDL_LATE = True/_PDL_LATE = False/' "$L" && grep -n "^_PDL" "$L"
      timeout 90 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid long --shapes 16x262144,1x1048576 \
        --estimators gae,retrace --peers rl-triton --max-minutes 1.2 --no-plots --tag s35-pdl-on \
        --out "$OUT" 2>&1 | tail -6
      gpu_tests 90 "test_cuda_graph_capture or test_pdl" gpu_s35_pdl2.log ;;
    s36-pdl-late)
      # session 36: launch._PDL_LATE (PHASE 2's wait at its first read of the summaries, after
      # the tile's loads): an A/B of the plain launch, the dependent launch waiting first and
      # waiting late (the default since session 36)
      variants_ab s36l 200 discounted_returns,td_lambda,gae,vtrace,retrace,traces 1x1048576,16x262144,4x524288,64x65536 \
        plain='s/^_PDL = True/_PDL = False/' pdl='s/^_PDL_LATE = True/_PDL_LATE = False/' late
      variants_ab s36lf 100 gae,vtrace,retrace_av,gae_tm 1x131072,8x16384,32x8192,128x8192 \
        plain='s/^_PDL = True/_PDL = False/' pdl='s/^_PDL_LATE = True/_PDL_LATE = False/' late ;;
    s40-seg0)
      # session 40: PHASE 0's 8-step batch-major tiles (and the forward kernel's of at most 8)
      # with segment 0 (scan.segment_setup): their GPU tests, then an A/B against _ab/s40c/base
      # (carried; made by mkdir -p _ab/s40c/base && git archive 8ac35d3 rltriton | tar -x -C
      # _ab/s40c/base), two columns of each in turn
      gpu_tests 240 "tiny or desc_tiles or lane_tiles or row_div or traces or prefix" gpu_s40_seg0.log
      timeout 200 python3 benchmarks/ab.py _ab/s40c/base . --est gae,vtrace,retrace,retrace_av,traces,prefix_sum,gae_tm \
        --shapes 32768x8,16384x8,4096x8,32768x6,32768x4 2>&1 | tee "$OUT/ab_s40_seg0.txt" | grep -v "^$" | tail -36 ;;
    s40-lanes8)
      # session 40: rows of exactly 8 steps a row a thread (launch._ROW_LANES_TINY): the GPU
      # tests of the lanes and tiny tiles, an A/B against _ab/s40/base (carried; made by
      # mkdir -p _ab/s40/base && git archive 7ae25c2 rltriton | tar -x -C _ab/s40/base), then
      # the massive grid's 8-step rows of every estimator against rl-triton (carry .peers)
      gpu_tests 240 "lane_tiles or tiny_tiles or desc_tiles or row_div" gpu_s40_lanes8.log
      timeout 150 python3 benchmarks/ab.py _ab/s40/base . --est gae,td_lambda,discounted_returns,vtrace,retrace \
        --shapes 32768x8,16384x8,8192x8,4096x8,32768x6,32768x16,16384x32 2>&1 | tee "$OUT/ab_s40_lanes8.txt" \
        | grep -v "^$" | tail -36
      timeout 170 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid massive \
        --shapes 4096x8,8192x8,16384x8,32768x8 --time-major --peers rl-triton --max-minutes 2.6 --no-plots \
        --tag s40-lanes8 --out "$OUT" 2>&1 | tail -40 ;;
    s45-verify)
      # session 45's plan changes: their GPU tests (the shipped tiles against the float64
      # reference; test_tm_lanes_tiles forces the 128-step ones on every form), then the rows they
      # move through the harness, time-major too, against rl-triton (carry .peers)
      gpu_tests 200 "tm_lanes_lagged_128 or td_wide_lanes or dr_short_tiles or (tm_lanes_tiles and (vtrace or retrace)) \
or tm_long_tiles" \
        gpu_s45_verify.log
      timeout 330 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid massive \
        --shapes 4096x128,8192x128,16384x128,8192x64,16384x64 --estimators td_lambda,vtrace,retrace --time-major \
        --peers rl-triton --max-minutes 5 --no-plots --tag s45-verify --out "$OUT" 2>&1 | tail -24 ;;
    s48-verify)
      # session 48's adopted plans (launch._TM_SMALL_ROWS = 8, _TM_SMALL_LONG_ELEMS, TD(lambda)'s
      # and Retrace's whole 4096-step rows): their GPU tests, then the classic rows they move
      # through the harness, time-major too, against rl-triton (carry .peers)
      gpu_tests 190 "whole_row_plans or tm_small_tiles or tm_small_long_tiles or (tm_div and 4008x64) \
or (one_chunk_rows and (300x4096 or 1000x4096))" gpu_s48_verify.log
      timeout 330 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid classic \
        --shapes 512x4096,512x128,256x1024,128x1024,512x512 --time-major --peers rl-triton \
        --estimators retrace,retrace_av,td_lambda,discounted_returns,gae,traces,vtrace,prefix_sum \
        --max-minutes 4.6 --no-plots --tag s48-verify --out "$OUT" 2>&1 | tail -60 ;;
    s49-verify)
      # session 49's adopted plan (launch._TM_SMALL_LONG_FEW_ROWS: time-major calls of 64-255 rows
      # of 129-1024 steps on 2 rows a program): its GPU test, then the classic grid's 128 x 1024
      # through the harness, time-major too, against rl-triton (carry .peers)
      gpu_tests 150 "tm_small_long_tiles or tm_small_tiles" gpu_s49_verify.log
      timeout 300 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid classic \
        --shapes 128x1024 --time-major --peers rl-triton \
        --estimators retrace,retrace_av,td_lambda,discounted_returns,gae,traces,vtrace,prefix_sum \
        --max-minutes 4 --no-plots --tag s49-verify --out "$OUT" 2>&1 | tail -30 ;;
    s50-sweep-tm-small)
      # the small time-major calls (128 x 1024 2.7-3.8x batch-major on [2, 1024] in session 49)
      # on tiles never timed there: 2, 4 or 8 rows, whole rows on 2-16 warps or 128-512-step
      # chunks split in time from 16 programs (benchmarks/sweep.py SWEEP_TM_NARROW_FEW; its
      # splits started at 132 programs before), every plan's time (SWEEP_VERBOSE), each checked
      # against the default plan's outputs (WRONG otherwise); ~2 min an estimator
      for est in td_lambda gae vtrace traces; do
        SWEEP_TIME_MAJOR=1 SWEEP_TM_NARROW=1 SWEEP_TM_NARROW_FEW=1 SWEEP_VERBOSE=1 timeout 125 \
          python3 benchmarks/sweep.py $est 128x1024,64x512,256x512,256x1024 2>&1 \
          | tee "$OUT/sweep_tm_small_$est.log" | grep -v "^ *skip" | grep -v "^      " | tail -6
      done ;;
    s50-verify)
      # session 50's adopted plan (launch._TM_SMALL_SPLIT: GAE's and V-trace's time-major calls of
      # 128-255 rows of 513-1024 steps split into 128-step segments): its GPU tests and the small
      # calls' others, an A/B against it off (base: as shipped), then the classic grid's
      # 128 x 1024 through the harness, time-major too, against rl-triton (carry .peers)
      gpu_tests 200 "tm_small_split or tm_small_long_tiles or tm_small_tiles" gpu_s50_verify.log
      variants_ab s50_small_split 120 gae_tm,vtrace_tm,td_lambda_tm 128x1024,128x1000,200x600,255x1024,130x513 \
        off='$a _TM_SMALL_SPLIT = {}' base
      timeout 150 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid classic \
        --shapes 128x1024 --time-major --peers rl-triton --estimators gae,vtrace,td_lambda,traces \
        --max-minutes 2 --no-plots --tag s50-verify --out "$OUT" 2>&1 | tail -30 ;;
    s51-verify)
      # session 51's refined rule (launch._TM_SMALL_SPLIT's tiles with bounds): its GPU tests and
      # the small calls' others, then the classic grid's 128 x 1024 through the harness,
      # time-major too, against rl-triton (carry .peers); the A/B is s51-rule's
      gpu_tests 270 "tm_small_split or tm_small_long_tiles or tm_small_tiles" gpu_s51_verify.log
      timeout 150 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid classic \
        --shapes 128x1024 --time-major --peers rl-triton --estimators gae,vtrace,td_lambda,traces \
        --max-minutes 2 --no-plots --tag s51-verify --out "$OUT" 2>&1 | tail -30 ;;
    s53-verify)
      # session 52's rule (V-trace above 736 steps; Retrace at GAE's bound; the forward kernel
      # above 768 steps): the GPU tests of the small time-major calls, then the classic grid's
      # 128 x 1024 through the harness, time-major too, against rl-triton (carry .peers)
      gpu_tests 240 "tm_small_split or tm_small_long_tiles or tm_small_tiles" gpu_s53_verify.log
      timeout 200 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid classic \
        --shapes 128x1024 --time-major --peers rl-triton \
        --estimators gae,vtrace,retrace,td_lambda,traces,prefix_sum --max-minutes 3 --no-plots \
        --tag s53-verify --out "$OUT" 2>&1 | tail -40 ;;
    s54-odd)
      # GAE's split lost at every small call whose row count is not a multiple of 4 that
      # session 52 timed (130 x 680 5.4 -> 5.8, 150 x 600 5.4 -> 5.6) but gained at 250 x 768:
      # off / as shipped / GAE on [4, 128] and 1 warp, at row counts of 2 mod 4 from 86K to 200K
      # elements (and two multiples of 4 beside them); then the shipped bounds' GPU tests
      variants_ab s54_odd 300 gae_tm 130x680,150x600,130x768,150x700,170x640,190x640,210x600,230x600,134x1024,162x768,250x640,250x768,140x640,200x736 \
        off='$a _TM_SMALL_SPLIT = {}' base g4='$a _TM_SMALL_SPLIT = {**_TM_SMALL_SPLIT, "gae": ((128, 256, 512, 86 * 1024, 4, 1),)}'
      gpu_tests 200 "tm_small_split and shipped" gpu_s54_shipped.log ;;
    s54-g4)
      # s54-odd had GAE's [4, 128] on 1 warp at 140 x 640 5.0 against 5.6 as shipped (and
      # slower at every 2-mod-4 row count): as shipped / [4, 128] at multiples of 4 above the
      # bound, 140 x 640 twice
      variants_ab s54_g4 300 gae_tm 140x640,128x704,144x640,160x600,176x640,160x704,128x768,128x1024,192x1024,140x640 \
        base g4='$a _TM_SMALL_SPLIT = {**_TM_SMALL_SPLIT, "gae": ((128, 256, 512, 86 * 1024, 4, 1),)}' ;;
    s54-g4-bounds)
      # session 54's rule (GAE on [4, 128] / 1 warp where 4 divides fewer than 192 rows of at
      # most 768 steps, from 86K elements): its GPU tests, then off / the rule before (GAE on
      # [8, 128] only) / as shipped / the same tile below 86K elements (g4lo), within the new
      # bounds, at them (188 x 768, 136 x 648) and past them (140 x 800, 190 x 640, 192 x 640)
      gpu_tests 150 "tm_small_split and (shipped or 140x640)" gpu_s54_g4.log
      variants_ab s54_g4_bounds 200 gae_tm 128x576,128x640,132x600,160x520,136x648,140x640,128x704,176x640,188x528,188x760,188x768,128x768,140x800,160x1024,190x640,192x640 \
        off='$a _TM_SMALL_SPLIT = {}' old='$a _TM_SMALL_SPLIT = {**_TM_SMALL_SPLIT, "gae": ((128, 256, 512, 86 * 1024, 8, 2),)}' \
        base g4lo='$a _TM_SMALL_SPLIT = {**_TM_SMALL_SPLIT, "gae": ((128, 192, 512, 0, 4, 1, 4, 768), (128, 256, 512, 86 * 1024, 8, 2))}' ;;
    s54-g4-steps)
      # GAE's [4, 128] past 768 steps (s54-g4: tied at 128 x 1024): as shipped / at most 1024 steps
      variants_ab s54_g4_steps 120 gae_tm 140x800,128x896,160x896,176x960,128x1000,188x832,140x640 \
        base g4hi='$a _TM_SMALL_SPLIT = {**_TM_SMALL_SPLIT, "gae": ((128, 192, 512, 0, 4, 1, 4, 1024), (128, 256, 512, 86 * 1024, 8, 2))}' ;;
    s55-exact)
      # EXACT_T (T the constant BLOCK_T on whole rows of one chunk) for GAE's kernel on the
      # time-major lanes tiles and for the forward kernel on those and on batch-major rows
      # (SASS a thread, Triton 3.6: GAE [64, 128] 720 -> 688, [32, 128] 656 -> 520; traces
      # [64, 128] 640 -> 456, [1, 2048] 376 -> 320): its GPU tests, then as shipped / on
      x='$a _EXACT_T_FORMS, _EXACT_T_TM_LANES = _EXACT_T_FORMS | {"forward"}, _EXACT_T_TM_LANES | {"gae", "forward"}'
      gpu_tests 200 "exact_t_more" gpu_s55_exact.log
      variants_ab s55_exact_tm 240 gae_tm,traces_tm,prefix_sum_tm \
        4096x128,8192x128,16384x128,32768x128,4096x64,8192x64,16384x64,32768x64,8192x32,16384x32,16384x16,32768x16,32768x8,4096x256,8192x256 \
        base x="$x"
      variants_ab s55_exact_bm 150 traces,prefix_sum 512x2048,512x4096,4096x512,4096x2048,16384x128,32768x64,512x512,4096x128 \
        base x="$x" ;;
    s55-fwd512)
      # the forward kernel's whole 512-step time-major lanes rows (none as shipped: traces 4096 x
      # 512 10.7 -> 15.0 in session 31, 184 bytes of spills a thread; with EXACT_T none, 936 ->
      # 568 SASS a thread, Triton 3.6): as shipped / EXACT_T (x) / x with the tile on 0.03 to
      # 1.5 programs of 64 rows an SM (x512), time-major traces and prefix sums
      x='$a _EXACT_T_FORMS, _EXACT_T_TM_LANES = _EXACT_T_FORMS | {"forward"}, _EXACT_T_TM_LANES | {"gae", "forward"}'
      t512='$a _TM_LANES_TILES["forward"] = {**_TM_LANES_TILES["forward"], 512: TmLanesTile(0.03, 1.5, 16, **_TM_NARROW_ONLY)}'
      variants_ab s55_fwd512 200 traces_tm,prefix_sum_tm 256x512,1024x512,2048x512,4096x512,6144x512,8192x512,12288x512,4096x300,4096x400 \
        base x="$x" x512="$x"$'\n'"$t512" ;;
    s56-gae512)
      # GAE's whole 512-step time-major rows on a [32, 512] lanes tile with T constant, as the
      # forward kernel's (session 55): 16 steps a thread on 32 warps (k16: 64 registers, 184 bytes
      # of spills, Triton 3.6) or 32 on 16 warps (k32: 128 registers, 96 bytes), on 0.2-0.75
      # programs an SM, and k16 up to 2 (k16w), against as shipped ([32, 64] chunks, 8 warps)
      t='$a _TM_LANES_TILES["gae"][512] = TmLanesTile(0.2, MAXP, K, exact=True, **_TM_NARROW_ONLY)\n_EXACT_T_TM_LANES = _EXACT_T_TM_LANES | {"gae"}'
      k16=${t/K/16}; k32=${t/K/32}
      variants_ab s56_gae512 300 gae_tm,gae_tm_bv 1024x512,2048x512,4096x512,6144x512,8192x512,16384x512,4096x500 \
        base k16="${k16/MAXP/0.75}" k32="${k32/MAXP/0.75}" k16w="${k16/MAXP/2.0}" ;;
    s60-tm-coop)
      # launch._TM_COOP (prepared in session 60, off): the small time-major calls' split of
      # one-chunk segments as one cooperative launch; its GPU tests (forced for every form),
      # then an A/B of the default against it for every form at the split's shapes (the
      # classic grid's 128 x 1024 among them), and of the split up to 256 rows with and without it,
      # and of TD(lambda)'s and the forward kernel's calls split so too, ~6 min
      gpu_tests 200 "tm_coop" gpu_s60_tm_coop.log
      coop='s/^_TM_COOP: frozenset\[str\] = frozenset()$/_TM_COOP: frozenset[str] = frozenset({"gae", "td_lambda", "vtrace", "retrace", "retrace_actions", "forward"})/'
      # (split256: the small split up to 256 rows, so that the classic grid's 256 x 1024 takes
      # 8 segments of [8, 128] instead of the 64 of [32, 16] below _TM_SPLIT_BELOW; Retrace's
      # 512 x 512 then takes whole rows of 4, hence that shape)
      split256='s/^_TM_SMALL_LONG_FEW_BELOW = 256$/_TM_SMALL_LONG_FEW_BELOW = 257/;s/"forward"), _TM_SPLIT_MIN_ELEMS - 1)}/"forward"), _TM_SPLIT_MIN_ELEMS)}/;s/(128, 256, 512, 86 \* 1024, 8, 2)/(128, 257, 512, 86 * 1024, 8, 2)/g;s/(192, 256, 736, 0, 8, 2)/(192, 257, 736, 0, 8, 2)/;s/(128, 256, 768, 0, 8, 2)/(128, 257, 768, 0, 8, 2)/'
      # (tdfwd: TD(lambda)'s kernel and the forward kernel, whose 128-255-row calls of 1024
      # steps take session 59's whole-row tiles of 8 rows, issue-bound on R / 8 SMs, split
      # like the others instead, up to 256 rows, as one cooperative launch; after split256's sed)
      tdfwd='s/^_TM_SUB = True$/_TM_SUB = False/;s/^    "forward": ((128, 257, 768, 0, 8, 2),),$/    "forward": ((128, 257, 512, 0, 8, 2),), "td_lambda": ((128, 257, 512, 0, 8, 2),),/'
      variants_ab s60_tm_coop 330 gae_tm,vtrace_tm,retrace_tm,gae_tm_bv,td_lambda_tm,traces_tm \
        128x1024,140x640,192x768,200x760,255x1024,256x1024,256x768,512x512 \
        base coop="$coop" split256="$split256" both="$coop;$split256" tdfwd="$coop;$split256;$tdfwd" ;;
    s59-final)
      # session 59's tiles of 8 or 16 rows on their adopted bounds: their GPU tests (and the
      # 32-row tiles' with them off), then the harness on the classic grid's rows they reach,
      # time-major against batch-major, no peers
      gpu_tests 200 "tm_sub_tiles or tm_long_tiles" gpu_s59_final.log
      timeout 330 python3 benchmarks/run.py --grid classic --shapes 128x1024,256x1024,512x512,512x2048,4096x512,4096x128 \
        --estimators gae,td_lambda,discounted_returns,vtrace,traces,prefix_sum --time-major --peers none \
        --max-minutes 5 --no-plots --tag s59-final --out "$OUT" 2>&1 | tail -3 ;;
    s59-verify)
      # session 59's time-major lanes tiles of 8 or 16 rows (launch._TM_SUB_TILES), on wide
      # bounds: their GPU tests and the long tiles' and EXACT_T's, then an A/B against
      # _ab/s59/base (a94a8fa, carried) in and past the bounds, to set them
      gpu_tests 240 "tm_sub_tiles or tm_long_tiles or exact_t" gpu_s59_verify.log
      timeout 300 python3 benchmarks/ab.py _ab/s59/base . \
        --est gae_tm,vtrace_tm,td_lambda_tm,discounted_returns_tm,traces_tm,td_lambda_tm_bv \
        --shapes 64x512,256x512,512x512,1024x512,1536x512,2048x512,3072x512,4096x512,2048x128,4096x128,8192x128,16384x128,128x1024,256x1024,512x1024,1024x1024,256x2048,512x2048,1024x2048 2>&1 \
        | tee "$OUT/ab_s59_verify.txt" ;;
    s59-sub32)
      # time-major lanes tiles of fewer than 32 rows (8, 16 or 4 a program, the lanes left over
      # along time, launch._tm_groups), K steps a thread, every time-major call of the A/B on
      # them (a plan_for wrapper; a tile past 32 warps keeps the plan as shipped), A/B only.
      # Triton 3.6 statics: GAE 4096 x 512 [8, 512] on 8 warps 92 registers, no spills, 2
      # programs an SM (as shipped [32, 512], 128 and 1); GAE 8192 x 128 [8, 128] on 4 warps 72
      # and 7 an SM; V-trace [8, 512] on 16 warps 124, on 8 warps 242
      s='$a _sub = lambda T, bn=BN, K=KK: (lambda p2: Plan(bn, p2, p2 // K * bn // 32, 1, p2, tm_lanes=True) if p2 >= 2 * K and 1 <= p2 // K * bn // 32 <= 32 else None)(_next_pow2(T))\n_pf0 = plan_for\nplan_for = lambda R, T, device, time_major=False, *a, **k: (time_major and _sub(T)) or _pf0(R, T, device, time_major, *a, **k)'
      b8k16=${s/BN/8}; b8k8=${s/BN/8}; b16k8=${s/BN/16}; b4k16=${s/BN/4}
      variants_ab s59_sub32 540 gae_tm,vtrace_tm,td_lambda_tm,traces_tm \
        4096x512,2048x512,512x512,16384x512,4096x128,8192x128,16384x128,512x2048,256x1024 \
        base b8k16="${b8k16/KK/16}" b8k8="${b8k8/KK/8}" b16k8="${b16k8/KK/8}" b4k16="${b4k16/KK/16}" ;;
    s58-k32)
      # 32 steps a thread on 16 warps for the other 512-step time-major lanes tiles, as GAE's
      # (session 57; Triton 3.6 statics at 4096 rows): TD(lambda)'s kernel 128 registers and no
      # spills at 512 steps, 192 bytes at 300 (as shipped, 16 on 32 warps: 64 and 16 bytes with T
      # constant, 80 at 300); the forward kernel's exact tile 128 and none (as shipped 64 and
      # none), each on its shipped bounds, A/B only (prepared in session 57, not yet run)
      td='$a _TM_LANES_TILES["td_lambda"][512] = _TM_LANES_TILES["td_lambda"][512]._replace(steps=32)'
      fw='$a _TM_LANES_TILES["forward"][512] = _TM_LANES_TILES["forward"][512]._replace(steps=32)'
      variants_ab s58_k32 200 td_lambda_tm,discounted_returns_tm,td_lambda_tm_bv,traces_tm \
        1024x512,2048x512,4096x512,6144x512,8192x512,4096x300 base td32="$td" fw32="$fw" ;;
    s58-gae128)
      # GAE's 128-step time-major lanes tiles with 16 steps a thread on 8 warps (Triton 3.6
      # statics: [32, 128] 123 registers, no spills, 2 programs an SM, static issue 1.01 us
      # against 1.29 as shipped, 8 on 16 warps, 52 registers; [64, 128] 203 registers, 1 an SM)
      # or 4 on 32 warps (43 and 54 registers), each on the shipped bounds, A/B only
      g='$a _TM_LANES_TILES["gae"][128] = _TM_LANES_TILES["gae"][128]._replace(steps=K)'
      variants_ab s58_gae128 150 gae_tm,gae_tm_bv 2048x128,4096x128,8192x128,16384x128,4096x100 \
        base k16="${g/K/16}" k4="${g/K/4}" ;;
    s58-verify)
      # session 57's Retrace 256-step time-major lanes tile (adopted after its A/B, its GPU tests
      # not yet run: the session's device time ran out): the GPU tests of the long time-major
      # lanes tiles and EXACT_T, then the tile's A/B against _ab/s58/base (d92d9ef, carried)
      gpu_tests 240 "exact_t or tm_long_tiles" gpu_s58_verify.log
      timeout 120 python3 benchmarks/ab.py _ab/s58/base . --est retrace_tm,retrace_av_tm,vtrace_tm \
        --shapes 2048x256,2049x256,3000x200,4096x256,4224x256,4225x256,4096x129,4096x512 2>&1 \
        | tee "$OUT/ab_s58_verify.txt" ;;
    s57-retrace)
      # Retrace's (sampled) whole 256- and 512-step time-major rows on narrow time-major lanes
      # tiles (never timed; Triton 3.6 statics at 4096 rows: [32, 256] 8 steps a thread on 32 warps
      # 64 registers, no spills, 736 SASS; [32, 512] with T constant 16 on 32 warps 64 and 568
      # bytes of stack, 32 on 16 warps 128 and 648; as shipped the time-major tiles' [32, 64]
      # chunks on 8 warps, 142 registers) on 0.03-2 programs of 64 rows an SM, A/B only
      t256='_TM_LANES_TILES["retrace"] = {**_TM_LANES_TILES["retrace"], 256: TmLanesTile(0.03, 2.0, 8, **_TM_NARROW_ONLY), 512: TmLanesTile(0.03, 2.0, K, exact=True, **_TM_NARROW_ONLY)}'
      variants_ab s57_retrace 200 retrace_tm \
        512x256,1024x256,2048x256,4096x256,8192x256,16384x256,4096x200,512x512,1024x512,2048x512,4096x512,8192x512 \
        base k16="\$a ${t256/K/16}" k32="\$a ${t256/K/32}" ;;
    s57-retrace256)
      # s57-retrace's 256-step tile (won 4096 x 256 and x 200, lost 8192 x 256) at row counts
      # between, to find its bounds
      t256='$a _TM_LANES_TILES["retrace"] = {**_TM_LANES_TILES["retrace"], 256: TmLanesTile(0.03, 2.0, 8, **_TM_NARROW_ONLY)}'
      variants_ab s57_retrace256 150 retrace_tm \
        2048x256,2560x256,3072x256,3584x256,4224x256,4608x256,5120x256,3000x200,4096x129,4096x160,2048x200 \
        base k8="$t256" ;;
    s57-verify)
      # GAE's 512-step time-major lanes tile as adopted (32 steps a thread, 16 warps, EXACT_T,
      # 0.15-0.5 programs an SM): the GPU tests of the long time-major lanes tiles and EXACT_T,
      # then an A/B of _ab/s57/base (55d1b4f, carried) against this tree
      gpu_tests 240 "exact_t or tm_long_tiles" gpu_s57_verify.log
      timeout 150 python3 benchmarks/ab.py _ab/s57/base . --est gae_tm,gae_tm_bv \
        --shapes 1024x512,1217x512,2048x512,3000x512,4096x512,4224x512,4608x512,4096x500,4096x256 2>&1 \
        | tee "$OUT/ab_s57_verify.txt" ;;
    s57-gae512)
      # s56-gae512's k32 (32 steps a thread on 16 warps; won 2048 and 4096 x 512, lost 6144) on
      # 0.03-2 programs an SM, to find its bounds, against as shipped
      t='$a _TM_LANES_TILES["gae"][512] = TmLanesTile(0.03, 2.0, 32, exact=True, **_TM_NARROW_ONLY)\n_EXACT_T_TM_LANES = _EXACT_T_TM_LANES | {"gae"}'
      variants_ab s57_gae512 300 gae_tm,gae_tm_bv 256x512,512x512,1024x512,1536x512,2048x512,2560x512,3072x512,3584x512,4096x512,4608x512,5120x512,5632x512,6144x512 \
        base k32="$t" ;;
    s55-verify)
      # session 55's adopted EXACT_T of the forward kernel and its 512-step time-major lanes
      # tile: the GPU tests of EXACT_T and the long time-major lanes tiles, then an A/B of
      # _ab/s55/base (4d07a43, carried) against this tree
      gpu_tests 240 "exact_t or tm_long_tiles" gpu_s55_verify.log
      timeout 200 python3 benchmarks/ab.py _ab/s55/base . --est traces_tm,prefix_sum_tm,traces,prefix_sum \
        --shapes 4096x128,16384x128,32768x64,4096x512,2048x512,8192x512,512x2048,512x4096,16384x512 2>&1 \
        | tee "$OUT/ab_s55_verify.txt" ;;
    s51-bounds)
      # the rule fitted to s51-rule (GAE from 86K elements; V-trace from 192 rows above 704 steps)
      # at its new bounds, against off; then the GPU tests of the shipped bounds
      variants_ab s51_bounds 240 gae_tm,vtrace_tm 130x680,136x640,140x640,150x600,128x688,200x736,224x704,192x720,180x672,250x768 \
        off='$a _TM_SMALL_SPLIT = {}' base
      gpu_tests 200 "tm_small_split and shipped" gpu_s51_bounds.log ;;
    s52-split-more)
      # the small time-major split for the forms session 50's sweep left out (Retrace, never
      # swept; the forward kernel's traces and prefix sums, 128 x 1024 only): as shipped
      # (whole rows) against every such call of 128-255 rows above 512 steps on [8, 128] / 2 warps
      # or [4, 128] / 1 warp
      variants_ab s52_split_more 240 retrace_tm,traces_tm,prefix_sum_tm \
        130x640,128x768,128x1024,200x600,192x1024,255x1024 base \
        s8='$a _TM_SMALL_SPLIT = {**_TM_SMALL_SPLIT, **dict.fromkeys(("retrace", "forward"), ((128, 256, 512, 0, 8, 2),))}' \
        s4='$a _TM_SMALL_SPLIT = {**_TM_SMALL_SPLIT, **dict.fromkeys(("retrace", "forward"), ((128, 256, 512, 0, 4, 1),))}' ;;
    s51-refine)
      # where session 50's split wins (s50-verify: GAE lost at 130 x 513, V-trace at 200 x 600,
      # 130 x 513 and 255 x 1024): off against as shipped and against V-trace on GAE's [8, 128]
      # tiles (v8), between 513 and 1024 steps and 128 to 255 rows (s50-verify's four shapes again
      # so the whole table comes from one run)
      variants_ab s51_refine 420 gae_tm,vtrace_tm 130x513,130x576,130x640,128x768,128x1024,160x1024,192x1024,200x600,224x1024,250x640,255x1024 \
        off='$a _TM_SMALL_SPLIT = {}' base v8='$a _TM_SMALL_SPLIT = {"gae": (8, 2), "vtrace": (8, 2)}' ;;
    s51-rule)
      # the refined rule (launch._TM_SMALL_SPLIT's tiles with bounds, from s51-refine) between its
      # bounds: off, the first rule (every call of 128-255 rows of 513-1024 steps), as now
      variants_ab s51_rule 420 gae_tm,vtrace_tm 128x704,140x640,144x704,160x600,176x576,160x704,176x1024,192x768,200x704,255x768,250x1024 \
        off='$a _TM_SMALL_SPLIT = {}' \
        first='$a _TM_SMALL_SPLIT = {"gae": ((128, 256, 512, 0, 8, 2),), "vtrace": ((128, 256, 512, 0, 4, 1),)}' base ;;
    s48-tm-rows)
      # the small calls' whole time-major rows of 129-1024 steps (launch._TM_SMALL_LONG_ELEMS) on
      # fewer rows a program, so more programs: 128 x 1024 takes 32 programs of [4, 1024] on 8
      # warps, TD(lambda) 3048 SASS a thread (Triton 3.6), two warps a scheduler on 32 SMs; [1,
      # 1024] 992 on 128 SMs. l2/l1: 2 or 1 rows, from 64 rows (64 x 512), every form to 2^18
      # elements; l1w4: 1 row on 4 warps (A/B only; appended lines override the settings)
      all='$a _TM_SMALL_LONG_MIN_ROWS = 64; _TM_SMALL_LONG_ELEMS = dict.fromkeys(_FORMS + ("forward",), 1 << 18)'
      variants_ab s48_tm_rows 240 gae_tm,td_lambda_tm,vtrace_tm,traces_tm 128x1024,256x1024,512x512,64x512 base \
        l2="$all; _TM_SMALL_LONG_ROWS = 2" l1="$all; _TM_SMALL_LONG_ROWS = 1" \
        l1w4="$all; _TM_SMALL_LONG_ROWS = 1; _TM_SMALL_LONG_WARPS = 4" | grep -v "^$" | tail -20
      tail -n 1 _ab/s48_tm_rows/*/$L ;;
    s49-whole-4warps)
      # whole 4096-step rows on 4 warps beyond the 16-warp bound (launch._WHOLE_ROW_4K_WARPS, none
      # as shipped; its comment has the SASS counts): w4 = TD(lambda)'s kernel (capped at 128
      # registers) and the forward kernel; w4g = those and GAE's (its bound down to one program
      # an SM, capped at 128); then the GPU test of all three forced
      k4='s/^_WHOLE_ROW_4K_WARPS: dict\[str, int\] = {}$/_WHOLE_ROW_4K_WARPS: dict[str, int] = '
      c128='s/^_WHOLE_ROW_MAXNREG: dict\[str, int\] = {"td_lambda": 64, "retrace_actions": 64}$/'
      c128+='_WHOLE_ROW_MAXNREG: dict[str, int] = {"gae": 128, "td_lambda": 128, "retrace_actions": 64}/'
      g1='s/^_ONE_CHUNK_WARPS = {"gae": (8, 8.0), "td_lambda": (8, 1.0)/_ONE_CHUNK_WARPS = {"gae": (8, 1.0), "td_lambda": (8, 1.0)/'
      variants_ab s49_whole_4warps 300 gae,td_lambda,discounted_returns,traces,prefix_sum \
        512x4096,384x4096,256x4096,1024x4096,512x4000 base w4="$k4"'{"td_lambda": 4, "forward": 4}/; '"$c128" \
        w4g="$k4"'{"gae": 4, "td_lambda": 4, "forward": 4}/; '"$c128; $g1" base2 | grep -v "^$" | tail -28
      grep -h '^_WHOLE_ROW_4K_WARPS\|^_WHOLE_ROW_MAXNREG\|^_ONE_CHUNK_WARPS =' _ab/s49_whole_4warps/*/$L
      gpu_tests 150 "whole_row_4k_warps" gpu_s49_whole_4warps.log ;;
    s46-tm-small)
      # time-major calls too small to split (the classic grid's 512 x 128: generic tiles, 1.8-2.2x
      # of batch-major) on one chunk of narrow time-major tiles (launch._TM_SMALL_ROWS; session
      # 17's sweep of forced plans: GAE 512 x 128 4.0 -> 2.5 us on [8, 128], 8 warps), then the
      # GPU test that forces it (every estimator, fp32 and bf16)
      variants_ab s46_tm_small 300 gae_tm,td_lambda_tm,vtrace_tm,retrace_tm,traces_tm \
        256x128,512x128,1024x128,2000x128,512x64 base \
        r4='s/^_TM_SMALL_ROWS = 0$/_TM_SMALL_ROWS = 4/' r8='s/^_TM_SMALL_ROWS = 0$/_TM_SMALL_ROWS = 8/' \
        base2 | grep -v "^$" | tail -30
      grep -h "^_TM_SMALL_ROWS" _ab/s46_tm_small/*/$L
      gpu_tests 150 "tm_small_tiles" gpu_s46_tm_small.log ;;
    s46-tm-small-long)
      # time-major rows of 129-1024 steps in calls of at most 2^18 elements (the classic grid's
      # 512 x 512, 256 x 1024, 128 x 1024: a two-pass split of one-warp tiles, or the generic
      # tiles; 2.1-4.6x of batch-major) on one chunk of a whole row, 4 or 8 rows on 8 warps
      # (session 17's forced-plan sweep: TD(lambda) 512 x 512 6.2 -> 4.8 us, V-trace 8.2 -> 6.7)
      local_all='_TM_SMALL_LONG_FORMS: frozenset[str] = frozenset({"gae", "td_lambda", "vtrace", "retrace", "retrace_actions", "forward"})'
      variants_ab s46_tm_small_long 300 gae_tm,td_lambda_tm,vtrace_tm,retrace_tm,traces_tm \
        512x512,256x1024,128x1024,1024x256,256x512 base \
        l4="s/^_TM_SMALL_LONG_FORMS: frozenset\[str\] = frozenset()$/$local_all/" \
        l8="s/^_TM_SMALL_LONG_FORMS: frozenset\[str\] = frozenset()$/$local_all/; s/^_TM_SMALL_LONG_ROWS = 4$/_TM_SMALL_LONG_ROWS = 8/" \
        base2 | grep -v "^$" | tail -30
      grep -h "^_TM_SMALL_LONG_FORMS\|^_TM_SMALL_LONG_ROWS" _ab/s46_tm_small_long/*/$L
      gpu_tests 200 "tm_small_long_tiles" gpu_s46_tm_small_long.log ;;
    s47-whole-row-a|s47-whole-row-b)
      # whole 4096-step rows in one wave at 512 x 4096 (launch._WHOLE_ROW_MAXNREG; its comment has
      # the SASS counts): c8 = 8 warps capped at 64 (GAE's, TD(lambda)'s and V-trace's whole rows
      # on 8 warps beyond one program an SM, V-trace's 2048-step rows too; V-trace's and
      # Retrace's one chunk up to 4 programs an SM);
      # c16 = 16 warps, two programs an SM, for V-trace and Retrace (GAE's and TD(lambda)'s plan
      # already); then the GPU test of both (every estimator, float32 and bfloat16)
      caps='{"gae": 64, "td_lambda": 64, "vtrace": 64, "retrace": 64, "retrace_actions": 64, "forward": 64}'
      cap="s/^_WHOLE_ROW_MAXNREG: dict\[str, int\] = {}$/_WHOLE_ROW_MAXNREG: dict[str, int] = $caps/"
      rows='s/"vtrace": (2.0, 0.7, 1.0, True), "retrace": (2.0,/"vtrace": (4.0, 0.7, 1.0, True), "retrace": (4.0,/'
      rows+='; s/"retrace_actions": (1.0, 0.7,/"retrace_actions": (4.0, 0.7,/'
      w='s/^_ONE_CHUNK_WARPS = {"gae": (8, 8.0), "td_lambda": (8, 8.0)}$/_ONE_CHUNK_WARPS = '
      c8="$cap; $rows; $w"'{"gae": (8, 1.0), "td_lambda": (8, 1.0), "vtrace": (8, 1.0)}/'
      c16="$cap; $rows; $w"'{"gae": (8, 8.0), "td_lambda": (8, 8.0), "vtrace": (16, 8.0), "retrace": (16, 8.0), '
      c16+='"retrace_actions": (16, 8.0)}/'
      if [[ $stage == s47-whole-row-a ]]; then
        variants_ab s47_whole_row_a 300 gae,td_lambda,discounted_returns,traces \
          512x4096,384x4096,256x4096,200x4096,1024x4096,512x4000 base c8="$c8" base2 | grep -v "^$" | tail -30
        gpu_tests 150 "whole_row_registers and (gae or td_lambda or discounted_returns or traces or prefix_sum)" \
          gpu_s47_whole_row_a.log
      else
        variants_ab s47_whole_row_b 300 vtrace,retrace,retrace_av \
          512x4096,384x4096,256x4096,1024x4096,512x2048,4096x2048 base c8="$c8" c16="$c16" base2 | grep -v "^$" | tail -24
        gpu_tests 150 "whole_row_registers and (vtrace or retrace)" gpu_s47_whole_row_b.log
      fi
      grep -h '^_WHOLE_ROW_MAXNREG\|^_ONE_CHUNK_WARPS =\|"vtrace": (.\..*"retrace": (\|"retrace_actions": (' \
        _ab/s47_whole_row_?/*/$L ;;
    s47-tm-lanes-regs)
      # the time-major lanes tiles capped at 64 registers on more programs than SMs
      # (launch._TM_LANES_MAXNREG; its comment has the SASS counts): t64 for GAE, V-trace, Retrace
      # and the action form, t64w with V-trace's and Retrace's 128-step narrow tiles up to 2
      # programs of 64 rows an SM as well; then the GPU test (every estimator, fp32 and bf16)
      t64='s/^_TM_LANES_MAXNREG: dict\[str, int\] = {}$/_TM_LANES_MAXNREG: dict[str, int] = {"gae": 64, "vtrace": 64, '
      t64+='"retrace": 64, "retrace_actions": 64}/'
      wide='s/^_TM_LAGGED_128 = dict(min_programs=0.45, max_programs=1.0, \*\*_TM_NARROW_ONLY)$/_TM_LAGGED_128 = '
      wide+='dict(min_programs=0.45, max_programs=2.0, **_TM_NARROW_ONLY)/'
      variants_ab s47_tm_lanes_regs 330 gae_tm,vtrace_tm,retrace_tm,retrace_av_tm \
        8192x128,12288x128,16384x128,16384x64,32768x64 base t64="$t64" t64w="$t64; $wide" base2 | grep -v "^$" | tail -24
      grep -h "^_TM_LANES_MAXNREG\|^_TM_LAGGED_128 =" _ab/s47_tm_lanes_regs/*/$L
      gpu_tests 150 "tm_lanes_registers" gpu_s47_tm_lanes_regs.log ;;
    s47-2k-4warps)
      # whole 2048-step rows (one wave at 512 x 2048 already) on 4 warps, 16 steps a thread, for
      # GAE's and TD(lambda)'s kernels (_ONE_CHUNK_WARPS' first entry), A/B only
      w4='s/^_ONE_CHUNK_WARPS = {"gae": (8, 8.0), "td_lambda": (8, 8.0)}$/_ONE_CHUNK_WARPS = {"gae": (4, 8.0), '
      w4+='"td_lambda": (4, 8.0)}/'
      variants_ab s47_2k_4warps 150 gae,td_lambda,discounted_returns 512x2048,1000x2048,2048x2048,4096x2048,300x2000 \
        base w4="$w4" base2 | grep -v "^$" | tail -20
      grep -h "^_ONE_CHUNK_WARPS =" _ab/s47_2k_4warps/*/$L ;;
    s45-vtrace64)
      # V-trace 16384 x 64 (1.2506x of the floor kernel in session 45's harness run, the goal
      # 1.25x): its [8, 64] lanes tiles on 2 warps (424 SASS a thread for 8 elements, 80
      # registers; Triton 3.6) against [16, 64] on 4 warps (the same code a thread, half the
      # programs) and two rows a lane on 2 warps (792 for 16, 155 registers)
      variants_ab s45_vtrace64 150 vtrace 8192x64,12288x64,16384x64,24576x64 base \
        w4='s/^_ROW_LANES_SHAPES: dict\[str, dict\[int, tuple\[int, int\]\]\] = {/&"vtrace": {64: (4, 1)}, /' \
        r2='s/^_ROW_LANES_SHAPES: dict\[str, dict\[int, tuple\[int, int\]\]\] = {/&"vtrace": {64: (2, 2)}, /' \
        c64='s/^_LANES_MAXNREG: dict\[str, int\] = {}$/_LANES_MAXNREG: dict[str, int] = {"vtrace": 64}/' \
        base2 | grep -v "^$" | tail -6
      grep -h "^_ROW_LANES_SHAPES\|^_LANES_MAXNREG" _ab/s45_vtrace64/*/$L
      # (session 47's c64: its 2048 programs at 80 registers take 1.29 rounds, capped at 64 one)
      gpu_tests 100 "lanes_registers and vtrace and not tm_lanes" gpu_s47_lanes_registers.log ;;
    s44-grid)
      # the harness's classic and massive rows of V-trace and TD(lambda) after session 43's V-trace
      # 64-step lanes tiles (A/B only in session 43), against rl-triton (carry .peers; ~3 min)
      timeout 330 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid classic,massive \
        --estimators vtrace,td_lambda --time-major --peers rl-triton --max-minutes 5 --no-plots \
        --tag s44-vtrace-td --out "$OUT" 2>&1 | tail -6 ;;
    s44-td128)
      # TD(lambda) 8192 x 128 (1.41x of the floor kernel, the massive grid's last miss but V-trace's):
      # its 128-step lanes tiles from fewer programs an SM (session 29 had 8192 x 128 4.1 -> 3.9 on
      # them, then bounded them at 10 an SM), with today's row stride and constant T
      variants_ab s44_td128 150 td_lambda,discounted_returns 4096x128,8192x128,12288x128,16384x128,8192x100 base \
        min7='s/^_TD_WIDE_LANES_MIN_PROGRAMS = 10.0/_TD_WIDE_LANES_MIN_PROGRAMS = 7.0/' \
        min3='s/^_TD_WIDE_LANES_MIN_PROGRAMS = 10.0/_TD_WIDE_LANES_MIN_PROGRAMS = 3.0/' \
        base2 min7b='s/^_TD_WIDE_LANES_MIN_PROGRAMS = 10.0/_TD_WIDE_LANES_MIN_PROGRAMS = 7.0/' \
        | grep -v "^$" | tail -12 ;;
    s44-tm128-lagged)
      # V-trace's and Retrace's time-major 128-step rows (1.57-2.01x of batch-major, session 43)
      # on the narrow time-major lanes tiles ([32, 128], K = 8 on 16 warps or 4 on 32) instead
      # of the one-chunk time-major tiles ([16, 128] on 8 warps: 1128 SASS a thread for V-trace,
      # 120 of them LDS; the lanes tiles 776 on 121 registers, K = 4 440 on 64; Triton 3.6,
      # benchmarks/sass_counts.py). Session 23 timed only the 64-row tiles at 128 steps (207
      # registers); the narrow tiles came in session 25. GPU tests: test_tm_lanes_tiles forces them
      variants_ab s44_tm128l 240 vtrace_tm,retrace_tm 2048x128,4096x128,8192x128,16384x128,32768x128,8192x100 base \
        k8='s/"vtrace": _tm_tiles({8: 2, 16: 2, 32: 2, 64: 4}, {64: dict(/"vtrace": _tm_tiles({8: 2, 16: 2, 32: 2, 64: 4, 128: 8}, {128: dict(narrow=float("inf")), 64: dict(/; s/"retrace": _tm_tiles({\*\*_TM_SHORT_K, 64: 4}, {64: dict(narrow=2.0)})/"retrace": _tm_tiles({**_TM_SHORT_K, 64: 4, 128: 8}, {64: dict(narrow=2.0), 128: dict(narrow=float("inf"))})/' \
        k4='s/"vtrace": _tm_tiles({8: 2, 16: 2, 32: 2, 64: 4}, {64: dict(/"vtrace": _tm_tiles({8: 2, 16: 2, 32: 2, 64: 4, 128: 4}, {128: dict(narrow=float("inf")), 64: dict(/; s/"retrace": _tm_tiles({\*\*_TM_SHORT_K, 64: 4}, {64: dict(narrow=2.0)})/"retrace": _tm_tiles({**_TM_SHORT_K, 64: 4, 128: 4}, {64: dict(narrow=2.0), 128: dict(narrow=float("inf"))})/' \
        base2 | grep -v "^$" | tail -16 ;;
    s43-vtrace-lanes64-check)
      # as shipped (launch._ROW_LANES_WHOLE: 64 steps exactly, at most 16 programs an SM) against
      # V-trace without its 64-step lanes tiles, then V-trace's GPU tests of the grid and tiles
      variants_ab s43_vtrace_lanes64_check 90 vtrace 4096x64,8192x64,16384x64,32768x64,16384x48,8192x128 \
        off="s/^_ROW_LANES_MAX_T = {\"gae\": 32, \"td_lambda\": 64, \"vtrace\": 64,/_ROW_LANES_MAX_T = {\"gae\": 32, \"td_lambda\": 64, \"vtrace\": 32,/" \
        on | grep -v "^$" | tail -8
      gpu_tests 170 "vtrace and (grid or lane or exact_t or rows_t or awkward)" s43_vtrace_lanes64_tests.log ;;
    s43-vtrace-lanes64)
      # V-trace's 64-step rows on the lanes tiles (session 18 lost with [8, 64] on 2 warps; Retrace's
      # sampled form gained on [4, 64] on one warp in session 23): SASS a thread (Triton 3.6) 424
      # for 8 elements (53 an element, no barrier) against [4, 64] on 2 warps' 272 for 4 (68)
      variants_ab s43_vtrace_lanes64 150 vtrace,vtrace_tm 4096x64,8192x64,16384x64,32768x64,16384x48 base \
        w1="s/^_ROW_LANES_MAX_T = {\"gae\": 32, \"td_lambda\": 64, \"vtrace\": 32,/_ROW_LANES_MAX_T = {\"gae\": 32, \"td_lambda\": 64, \"vtrace\": 64,/; s/^_ROW_LANES_SHAPES: dict\[str, dict\[int, tuple\[int, int\]\]\] = {/&\"vtrace\": {64: (1, 1)}, /" \
        w2="s/^_ROW_LANES_MAX_T = {\"gae\": 32, \"td_lambda\": 64, \"vtrace\": 32,/_ROW_LANES_MAX_T = {\"gae\": 32, \"td_lambda\": 64, \"vtrace\": 64,/" \
        base2 w1b="s/^_ROW_LANES_MAX_T = {\"gae\": 32, \"td_lambda\": 64, \"vtrace\": 32,/_ROW_LANES_MAX_T = {\"gae\": 32, \"td_lambda\": 64, \"vtrace\": 64,/; s/^_ROW_LANES_SHAPES: dict\[str, dict\[int, tuple\[int, int\]\]\] = {/&\"vtrace\": {64: (1, 1)}, /" \
        | grep -v "^$" | tail -12
      grep -h "^_ROW_LANES_MAX_T\|^_ROW_LANES_SHAPES" _ab/s43_vtrace_lanes64/*/$L ;;
    s43-tm128)
      # V-trace's and Retrace's time-major rows of 64-128 steps (session 43's grids: 8192 x 128
      # 2.0x and 1.75x of batch-major) on the one-chunk tiles: a warp per 8 steps, 8-row tiles,
      # and 16384 x 128 on them too (_TM_SPLIT_BELOW 4) against the defaults
      variants_ab s43_tm128 150 vtrace_tm,retrace_tm,retrace_av_tm \
        4096x64,4096x128,8192x128,16384x128,32768x64 base \
        wsteps8='s/^_TM_ONE_CHUNK_WARP_STEPS = 16/_TM_ONE_CHUNK_WARP_STEPS = 8/' \
        rows8='s/^_TM_ONE_CHUNK_ROWS = 16/_TM_ONE_CHUNK_ROWS = 8/' \
        below4='s/^_TM_SPLIT_BELOW = 2/_TM_SPLIT_BELOW = 4/' | grep -v "^$" | tail -18 ;;
    s43-rows-t-gate)
      # launch._ROWS_T on with session 43's plan gate (launch._rows_t_plan) against it off, twice,
      # at s43-rows-t's shapes and a few between them, then the grid's GPU tests with it on
      variants_ab s43_rows_t_gate 200 gae,td_lambda,discounted_returns,vtrace,retrace \
        32768x8,32768x32,16384x64,8192x64,8192x128,16384x128,4096x128,2048x256,4096x512,1024x1024,512x2048,512x4096 \
        off='s/^_ROWS_T = True/_ROWS_T = False/' on off2='s/^_ROWS_T = True/_ROWS_T = False/' on2 \
        | grep -v "^$" | tail -62
      gpu_tests 330 "test_grid or exact_t or rows_t" s43_rows_t_gate_tests.log ;;
    s43-rows-t)
      # session 42's launch._ROWS_T (prepared, off; SASS a thread 7-11% fewer on short tiles): an
      # A/B, off -> on twice, of the backward estimators at the massive and classic grids' short and
      # 512-row rows, then the GPU tests of the short tiles, exact T, splits and the grid with it on
      # (sed in this copy of the tree, last, so the A/B's copies are made before it). Session 43
      # ran it with _ROWS_T = False in the tree and no plan gate; since then "on" is the tree's
      # _ROWS_T with launch._rows_t_plan, and base/base2 turn it off
      variants_ab s43_rows_t 200 gae,td_lambda,discounted_returns,vtrace,retrace \
        32768x8,16384x32,16384x64,8192x64,8192x128,16384x128,4096x512,512x2048,512x4096 \
        base='s/^_ROWS_T = True/_ROWS_T = False/' on base2='s/^_ROWS_T = True/_ROWS_T = False/' on2 \
        | grep -v "^$" | tail -48
      sed -i 's/^_ROWS_T = False/_ROWS_T = True/' "$L" && grep -c "^_ROWS_T = True" "$L"
      gpu_tests 300 "lane_tiles or tiny or awkward_small or exact_t or group_scan or dr_short or td_wide or interior" \
        s43_rows_t_tests.log ;;
    s43-rows-t-grid)
      # the grid's GPU tests (512, ~4 min) with launch._ROWS_T on, after s43-rows-t
      sed -i 's/^_ROWS_T = False/_ROWS_T = True/' "$L" && grep -c "^_ROWS_T = True" "$L"
      gpu_tests 300 "test_grid" s43_rows_t_grid.log ;;
    s42-tm-split)
      # session 41's next step: the time-major split's bounds against the defaults, every
      # estimator's time-major call at the classic grid's time-major misses (columns in order)
      variants_ab s42_tm_split 340 gae_tm,td_lambda_tm,discounted_returns_tm,traces_tm,vtrace_tm,retrace_av_tm \
        512x2048,512x4096,4096x512,4096x2048,256x1024,512x512,2048x1024 base \
        below1='s/^_TM_SPLIT_BELOW = 2/_TM_SPLIT_BELOW = 1/' \
        per_sm16='s/^_TM_PROGRAMS_PER_SM = 8/_TM_PROGRAMS_PER_SM = 16/' \
        chunks8='s/^_TM_CHUNKS_PER_SEGMENT = 16/_TM_CHUNKS_PER_SEGMENT = 8/' | grep -v "^$" | tail -44 ;;
    s42-tm-tiles)
      # likewise the 16-row tiles' and the wide tiles' bounds
      variants_ab s42_tm_tiles 280 gae_tm,td_lambda_tm,discounted_returns_tm,traces_tm,vtrace_tm,retrace_av_tm \
        512x2048,512x4096,4096x512,4096x2048,256x1024,512x512,2048x1024 base \
        narrow8='s/^_TM_NARROW_BELOW = 4/_TM_NARROW_BELOW = 8/' \
        wide64='s/^_TM_WIDE_MIN_BLOCKS = 128/_TM_WIDE_MIN_BLOCKS = 64/' | grep -v "^$" | tail -44 ;;
    s39-long)
      # session 39's long rows ended at its time box after GAE, TD(lambda) and discounted
      # returns: the goal rows of the other estimators against rl-triton (carry .peers)
      timeout 330 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid long --shapes 16x262144,1x1048576 \
        --estimators vtrace,retrace,retrace_av,traces,prefix_sum --peers rl-triton --max-minutes 4.7 --no-plots \
        --tag s39-long-rest --out "$OUT" 2>&1 | tail -12 ;;
    s39-tdsel)
      # session 39: TD(lambda) 16384 x 128 read 5.6 -> 5.8 us in s38-dr's A/B and 1.17-1.19x ->
      # 1.25x of the floor kernel in the grids since 83985d3: TD(lambda)'s general alpha with
      # its select kept where T is a constant (sel, sel2) against the default (head, head2),
      # in turn, at that lanes tile and its neighbours (both forms have passed the kernel's GPU
      # tests: the select up to 83985d3, without it in session 39)
      versions s39 sel head sel2 head2
      for v in sel sel2; do
        sed -i 's/^\( *\)if not CONST_T:$/\1if True:  # s39: the select kept/' "_ab/s39/$v/rltriton/kernels/backward.py"
        grep -c "s39: the select kept" "_ab/s39/$v/rltriton/kernels/backward.py"
      done
      timeout 300 python3 benchmarks/ab.py _ab/s39/sel _ab/s39/head _ab/s39/sel2 _ab/s39/head2 --est td_lambda,td_lambda_tm \
        --shapes 16384x128,8192x128,4096x128,16384x64,16384x512,512x4096,512x2048,4096x512 \
        2>&1 | tee "$OUT/ab_s39_tdsel.txt" | grep -v "^$" | tail -20 ;;
    s38-dr)
      # session 37: discounted returns' bootstrap term as a select at T - 1 (folded where T is a
      # constant) and beta's time mask under EXACT_T (backward._td_lambda_chunks' CONST_T), and
      # session 38's alphas without a select (the forward kernel; TD(lambda)'s under CONST_T):
      # the GPU tests of both kernels, then an A/B
      # against _ab/s38/base (carried; made by
      # mkdir -p _ab/s38/base && git archive 83985d3 rltriton | tar -x -C _ab/s38/base)
      gpu_tests 250 "discounted or td_lambda or exact_t or flat or lazy or edge_carry or wide_lanes or carry_fold or test_pdl" \
        gpu_s38_dr.log
      gpu_tests 90 "traces or prefix or forward" gpu_s38_fwd.log
      timeout 200 python3 benchmarks/ab.py _ab/s38/base . --est discounted_returns,td_lambda,discounted_returns_tm,traces \
        --shapes 512x4096,512x2048,4096x128,16384x128,8192x128,4096x64,16384x64,32768x8,4096x512,16384x512,16x262144,1x1048576 \
        2>&1 | tee "$OUT/ab_s38_dr.txt" | grep -v "^$" | tail -40 ;;
    s37-gate)
      # prepared in session 36: launch._pdl_capable reads the driver's version (ctypes,
      # cuDriverGetVersion); the dependent launch must still be taken on the H200
      python3 -c "import torch; from rltriton.kernels import launch as L; \
print('driver', L._driver_version(), 'pdl', L._pdl(torch.device('cuda')))"
      gpu_tests 150 "test_pdl or test_cuda_graph_capture" gpu_s37_gate.log ;;
    s37-lazybm)
      # prepared in session 36: TD(lambda)'s lazily applied cut on batch-major single passes
      # (launch._TD_LAZY_CUT_BATCH): its GPU tests, then an A/B against the cut in every scan
      gpu_tests 170 "test_lazy_cut_batch" gpu_s37_lazybm.log
      variants_ab s37lz 170 td_lambda,discounted_returns \
        512x4096,512x2048,4096x2048,16384x512,4096x512,512x512,64x2048,512x12000,4096x128 \
        cut lazy='s/^_TD_LAZY_CUT_BATCH: .*/_TD_LAZY_CUT_BATCH: frozenset[str] = frozenset({"td_lambda", "discounted_returns"})/' ;;
    s36-512)
      # session 36: the classic grid's worst rows with the dependent launch (512 rows of 2048
      # and 4096 steps), and split segments of 1024-4096 steps at one row of 2^20
      timeout 150 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid classic --shapes 512x2048,512x4096 \
        --peers rl-triton --max-minutes 2.2 --no-plots --tag s36-512 --out "$OUT" 2>&1 | tail -18
      for e in discounted_returns traces vtrace; do
        SWEEP_TILES=1024:4,2048:4,2048:8,4096:8 SWEEP_ONE_CHUNK_SEGS=1 SWEEP_VERBOSE=1 timeout 30 \
          python3 benchmarks/sweep.py $e 1x1048576 2>&1 | grep -v -i warn | sed "s/^/$e /" | tee -a "$OUT/sweep_s36_1m.txt"
      done ;;
    s36-sweep512)
      # session 36: every candidate plan of discounted returns and TD(lambda) at 512 x 4096
      # (splits in time among them, now with the dependent launch)
      for e in discounted_returns td_lambda; do
        SWEEP_VERBOSE=1 timeout 75 python3 benchmarks/sweep.py $e 512x4096 2>&1 | grep -v -i warn | sed "s/^/$e /" \
          | tee -a "$OUT/sweep_s36_512.txt" | tail -3
      done ;;
    s36-native)
      # session 36: the compiled replay's time splits with the dependent launch (PHASE 2 by
      # cuLaunchKernelEx), waiting first and late; a cold kernel cache and the module's build
      # take most of the time
      timeout 400 python3 -m pytest -m gpu tests/test_native.py -q -n 12 -p no:cacheprovider \
        -k "serves_time_split and pdl" 2>&1 | grep -v -i benchmark | tee "$OUT/gpu_s36_native_pdl.log" | tail -3 ;;
    s36-long)
      # session 36: every estimator's long rows in the harness against rl-triton (the dependent
      # launch of PHASE 2, waiting late)
      timeout 330 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid long --shapes 16x262144,1x1048576 \
        --peers rl-triton --max-minutes 4.7 --no-plots --tag s36-long --out "$OUT" 2>&1 | tail -20 ;;
    s36-check)
      # session 36: the GPU tests of time splits with the session's defaults, then the few-row
      # grid (its time box stops it after GAE, TD(lambda) and a row of discounted returns)
      timeout 300 python3 -m pytest -m gpu tests/test_gpu.py -q -n 14 -p no:cacheprovider \
        -k "split or interior or coop or map_reduce or lazy" 2>&1 | grep -v -i benchmark > "$OUT/gpu_s36_split.log"
      tail -2 "$OUT/gpu_s36_split.log"
      timeout 200 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid fewrows --max-minutes 2.8 --no-plots \
        --tag s36-fewrows --out "$OUT" 2>&1 | tail -30 ;;
    s35-long)
      # session 35: every estimator's long rows in the harness against rl-triton (the carry fold)
      timeout 300 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid long --shapes 16x262144,1x1048576 \
        --peers rl-triton --max-minutes 4.5 --no-plots --tag s35-long --out "$OUT" 2>&1 | tail -20 ;;
    s35-coop)
      # prepared in session 34: where the cooperative single pass's time goes at one row of
      # 2^20 steps (8.8 us against 8.2 for the two passes, with interior chunks; it reads the
      # inputs once): warm-L2 profiles of it and of the two passes, stall reasons by source line
      printf 'discounted_returns 1x1048576 _COOP=True _INTERIOR_SINGLE_PASS=True\ndiscounted_returns 1x1048576\n' | \
        NCU_FLAGS='--cache-control none --section SourceCounters --import-source yes' \
        bash benchmarks/ncu_run.sh 2>&1 | tail -20 ;;
    s34-check)
      # session 34: the new defaults (launch._INTERIOR_LAZY, _MAP_REDUCE) against the session's
      # start at few-row splits; Retrace's action form with and without _INTERIOR at 1-2 rows
      variants_ab s34c 220 discounted_returns,td_lambda 1x8192,1x131072,8x16384,32x8192,128x8192,1x262144,2x1048576 \
        new old='s/^_INTERIOR_LAZY = frozenset({"td_lambda"})/_INTERIOR_LAZY = frozenset()/;s/^_MAP_REDUCE = frozenset({"td_lambda", "discounted_returns"})/_MAP_REDUCE = frozenset({"td_lambda"})/'
      variants_ab s34r 120 retrace_av 1x1048576,2x1048576,16x262144 two noint='s/^_INTERIOR = True/_INTERIOR = False/' ;;
    s34-lazy2)
      # session 34: launch._INTERIOR_LAZY for TD(lambda) and _MAP_REDUCE for discounted returns
      # as defaults: the GPU tests they touch, an A/B against the session's start and with the
      # lazy chunks for discounted returns too, then both estimators' long rows in the harness
      gpu_tests 170 "test_interior or map_reduce" gpu_s34_lazy2.log
      variants_ab s34b 160 discounted_returns,td_lambda 16x262144,64x65536,1x1048576,4x524288 \
        new old='s/^_INTERIOR_LAZY = frozenset({"td_lambda"})/_INTERIOR_LAZY = frozenset()/;s/^_MAP_REDUCE = frozenset({"td_lambda", "discounted_returns"})/_MAP_REDUCE = frozenset({"td_lambda"})/' \
        lazydr='s/^_INTERIOR_LAZY = frozenset({"td_lambda"})/_INTERIOR_LAZY = frozenset({"td_lambda", "discounted_returns"})/'
      timeout 170 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid long --shapes 16x262144,1x1048576 \
        --estimators td_lambda,discounted_returns --peers rl-triton --max-minutes 2.3 \
        --no-plots --tag s34-long --out "$OUT" 2>&1 | tail -4 ;;
    s34-single)
      # prepared in session 33: the interior chunks in the single passes of a split
      # (launch._INTERIOR_SINGLE_PASS, off): their GPU tests, then an A/B at the long rows of
      # the two passes (default) against the look-back and the cooperative pass with them
      gpu_tests 240 "test_interior or map_reduce" gpu_s34_single.log
      variants_ab s34 200 discounted_returns,td_lambda,gae,vtrace,traces 1x1048576,2x1048576,16x262144,4x524288 \
        two lookback='s/^_LOOKBACK = False/_LOOKBACK = True/;s/^_INTERIOR_SINGLE_PASS = False/_INTERIOR_SINGLE_PASS = True/' \
        coop='s/^_COOP = False/_COOP = True/;s/^_INTERIOR_SINGLE_PASS = False/_INTERIOR_SINGLE_PASS = True/' ;;
    s33-check)
      # session 33: the GPU tests session 32 left unrun after scan.chunk_start (b1361ff) and
      # TD(lambda)'s long rows (launch._MAP_REDUCE) through the harness against rl-triton
      gpu_tests 170 "map_reduce or test_long_rows or segment_map_forward_long" gpu_s33.log
      timeout 150 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid long --shapes 16x262144,1x1048576 \
        --estimators td_lambda --peers rl-triton --max-minutes 2 \
        --no-plots --tag s33-td-long --out "$OUT" 2>&1 | tail -4 ;;
    s32-phases)
      # session 32: where a split call's time goes (benchmarks/phase_times.py), ~1 min
      timeout 150 python3 benchmarks/phase_times.py discounted_returns,td_lambda,gae,traces,vtrace \
        16x262144,1x1048576,64x65536 2>&1 | tee "$OUT/phase_times.txt" | grep -v Warn ;;
    s32-ncu)
      # session 32's open question: what a split's passes wait on (each about twice its floor,
      # benchmarks/phase_times.py; the scan was not it, launch._MAP_REDUCE): warm-L2 stall
      # reasons by source line of both passes, discounted returns and TD(lambda) at 16 x 262144
      printf 'discounted_returns 16x262144\ntd_lambda 16x262144\n' | \
        NCU_FLAGS='--cache-control none --section SourceCounters --section WarpStateStats --import-source yes' \
        bash benchmarks/ncu_run.sh 2>&1 | tail -20 ;;
    s32-phase1)
      # session 32's lead: would a PHASE 1 whose programs overlap their loads (a chunk loop over
      # several chunks, pipelined) run nearer its read floor? Each pass's time alone
      # (benchmarks/phase_times.py) for forced plans of 4, 16 and 64 chunks a segment, plain and
      # 3 deep, against the default (one 1024- or 2048-step chunk a segment); ~2 min
      for pl in "" plan=1,1024,4,64,4096,1 plan=1,1024,4,64,4096,3 plan=1,1024,4,16,16384,3 \
                plan=1,2048,4,32,8192,3 plan=1,1024,8,64,4096,3; do
        echo "== ${pl:-default}"
        timeout 60 python3 benchmarks/phase_times.py discounted_returns,td_lambda 16x262144 $pl 2>&1 | grep -v Warn
      done | tee "$OUT/phase1_s32.txt" ;;
    s31-small)
      # session 31: launch._TM_LONG_TILES' fewest rows (_TM_LONG_MIN_PROGRAMS, 0.03 an SM: 193
      # rows) against none (0) and the tree before (_ab/s31/base, carried), at 64-256 rows
      rm -rf _ab/s31/min0 && mkdir -p _ab/s31/min0 && cp -r rltriton _ab/s31/min0/
      sed -i 's/^_TM_LONG_MIN_PROGRAMS = 0.03/_TM_LONG_MIN_PROGRAMS = 0.0/' "_ab/s31/min0/$L"
      timeout 200 python3 benchmarks/ab.py _ab/s31/base . _ab/s31/min0 \
        --est td_lambda_tm,gae_tm,discounted_returns_tm,traces_tm \
        --shapes 64x256,128x256,192x256,256x256,64x512,128x512,192x512,256x512,128x200,160x300 2>&1 \
        | tee "$OUT/ab_s31_small.txt" | grep -v "^$" | tail -42 ;;
    s31-replay)
      # session 31: which repeated calls the compiled replay arms (time-major two-pass calls
      # took ~33 us a full call against ~11 batch-major in the s31-grid run)
      timeout 240 python3 benchmarks/replay_status.py 2>&1 | tee "$OUT/replay_status.txt" | tail -40 ;;
    s31-native)
      # session 31: the compiled replay serves time splits (their scratch buffers made per call
      # by the table): its build, GPU tests, then benchmarks/replay_status.py
      timeout 120 python3 -c "from rltriton.kernels import native; print(native.build())" 2>&1 | tail -2
      timeout 300 python3 -m pytest -m gpu tests/test_native.py -q -n 8 -p no:cacheprovider 2>&1 \
        | tee "$OUT/native_tests.log" | tail -3
      timeout 200 python3 benchmarks/replay_status.py 2>&1 | tee "$OUT/replay_status.txt" | tail -40 ;;
    s31-sweep-tml)
      # session 31: time-major lanes tiles of 128-512-step chunks split in time for few
      # time-major rows of long rows (benchmarks/sweep.py SWEEP_TM_LANES=1), every candidate's time
      SWEEP_TIME_MAJOR=1 SWEEP_TM_LANES=1 SWEEP_VERBOSE=1 timeout 170 python3 benchmarks/sweep.py td_lambda \
        512x2048,512x512,256x1024,512x4096 2>&1 | tee "$OUT/sweep_s31_tml.txt" | grep -v "^$" | tail -70 ;;
    s31-grid)
      timeout 420 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid classic --time-major \
        --peers rl-triton --estimators td_lambda,discounted_returns,gae,traces --max-minutes 6 --no-plots \
        --tag s31-long-tm --out "$OUT" 2>&1 | tail -4 ;;
    s31-bounds)
      # session 31: bounds for the 256- and 512-step time-major lanes tiles of s31-tm512 (which
      # won at 512-4096 rows and lost at 16384): more row counts, rows of 129-400 steps, and
      # discounted returns with per-step bootstrap values; once
      versions tmb base t256
      X='float("inf")'
      SEL='if f in ("gae", "td_lambda", "forward") else t for f, t in _TM_LANES_TILES.items()}'
      echo "_TM_LANES_TILES = {f: {**t, 256: TmLanesTile(0.0, $X, 8, None, $X), 512: TmLanesTile(0.0, $X, 16, None, $X)} $SEL" >> "_ab/tmb/t256/$L"
      timeout 300 python3 benchmarks/ab.py _ab/tmb/base _ab/tmb/t256 \
        --est td_lambda_tm,gae_tm,discounted_returns_tm,discounted_returns_tm_bv,traces_tm \
        --shapes 256x256,1024x256,2048x256,6144x256,8192x256,12288x256,4096x200,4096x129,8192x160,256x512,768x512,6144x512,8192x512,12288x512,2048x400,4096x257 2>&1 \
        | tee "$OUT/ab_s31_bounds.txt" | grep -v "^$" | tail -82 ;;
    s31-fwd)
      # prepared in session 30: the forward kernel's (traces, prefix sums) 128-step time-major
      # lanes tiles past 2 programs an SM, as discounted returns' since session 30
      # (launch._DR_TM_LANES_ANY), twice
      for i in 1 2; do
        variants_ab fwd128 100 traces_tm 16384x128,24576x128,32768x128,49152x128,32768x100 \
          base 'inf=/"forward": _tm_tiles/s/max_programs=2.0, //'
      done 2>&1 | grep -v "^$" | tail -16 ;;
    s31-tm512)
      # prepared in session 30: time-major lanes tiles of a whole 512-step row in one chunk
      # (16 steps a thread, 32 warps; ptxas, Triton 3.6: TD(lambda) [32, 512] 64 registers and
      # 92 bytes of spills a thread, GAE 200) and, in t256, of 256 steps too (8 a thread, 32
      # warps), from any number of programs, against the time-major tiles' two passes
      # (time-major TD(lambda) 4096 x 512 15.6 us against 5.5 batch-major); twice
      versions tm512 base t512 t256
      X='float("inf")'
      T512="512: TmLanesTile(0.0, $X, 16, None, $X)"
      T256="256: TmLanesTile(0.0, $X, 8, None, $X)"
      SEL='if f in ("gae", "td_lambda", "forward") else t for f, t in _TM_LANES_TILES.items()}'
      echo "_TM_LANES_TILES = {f: {**t, $T512} $SEL" >> "_ab/tm512/t512/$L"
      echo "_TM_LANES_TILES = {f: {**t, $T256, $T512} $SEL" >> "_ab/tm512/t256/$L"
      for i in 1 2; do
        timeout 200 python3 benchmarks/ab.py _ab/tm512/base _ab/tm512/t512 _ab/tm512/t256 \
          --est td_lambda_tm,gae_tm,discounted_returns_tm,traces_tm \
          --shapes 512x512,1024x512,2048x512,4096x512,8192x512,16384x512,4096x300,512x256,4096x256,16384x256 2>&1
      done | tee "$OUT/ab_s31_tm512.txt" | grep -v "^$" | tail -44 ;;
    native)
      # session 24's compiled replay (rltriton.kernels.native): build it, its GPU tests, the
      # host-time probe against the Python replay and PufferLib, then the 8-32-step GAE rows of
      # the massive grid against PufferLib and rl-triton through the harness
      ( time python3 -m rltriton.kernels.native -v ) 2>&1 | tail -4 | tee "$OUT/native_build.log"
      timeout 200 python3 -m pytest -m gpu tests/test_native.py -q -n 14 -p no:cacheprovider 2>&1 \
        | tee "$OUT/native_tests.log" | tail -3
      timeout 150 python3 benchmarks/native_launch.py gae,vtrace,td_lambda 2>&1 | tee "$OUT/native_launch.txt" | tail -22
      timeout 150 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --estimators gae --peers pufferlib,rl-triton \
        --shapes 4096x8,8192x8,16384x8,32768x8,4096x16,8192x16,16384x16,32768x16,4096x32,8192x32,16384x32,32768x32 \
        --max-minutes 2.3 --no-plots --tag native-puffer --out "$OUT" 2>&1 | tail -16 ;;
    native-tests)
      # every GPU test of the compiled replay (tests/test_native.py, about 5 minutes on a cold
      # kernel cache: 148 tests, session 49's H100), failures with short tracebacks
      ( time python3 -m rltriton.kernels.native ) 2>&1 | tail -4 | tee "$OUT/native_build.log"
      timeout 480 python3 -m pytest -m gpu tests/test_native.py -q -n 14 -p no:cacheprovider -rf --tb=short 2>&1 \
        | grep -v -i benchmark | tee "$OUT/native_tests.log" | tail -30 ;;
    native-massive)
      # the compiled replay: build, its GPU tests, the host-time probe, then the massive grid's
      # GAE rows against PufferLib and rl-triton through the harness (with plots' data)
      ( time python3 -m rltriton.kernels.native ) 2>&1 | tail -4 | tee "$OUT/native_build.log"
      # (the time splits' tests, about 3 of the 5 minutes of the whole file on a cold kernel cache:
      # native-tests runs them; session 49's 150-s box cut the whole file at 48%)
      timeout 150 python3 -m pytest -m gpu tests/test_native.py -q -n 14 -p no:cacheprovider -rf --tb=short \
        -k "not serves_time_split" 2>&1 | grep -v -i benchmark | tee "$OUT/native_tests.log" | tail -3
      timeout 100 python3 benchmarks/native_launch.py gae,td_lambda 2>&1 | tee "$OUT/native_launch.txt" | tail -15
      timeout 280 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid massive --estimators gae \
        --peers pufferlib,rl-triton --time-major --max-minutes 4.3 --no-plots --tag native-gae --out "$OUT" 2>&1 \
        | tail -24 ;;
    grid=*)
      # grid=GRIDS:ESTIMATORS, e.g. grid=classic:gae,td_lambda — one slice of BENCHMARKS.md's grid
      # with every peer and the time-major column, in one call (~8 min at most; then the next slice)
      spec=${stage#grid=}; g=${spec%%:*}; e=${spec#*:}
      timeout 560 python3 benchmarks/run.py ${COMMIT:+--commit $COMMIT} --grid "$g" --estimators "$e" --time-major \
        --max-minutes 8 --no-plots --tag "${g//,/-}-${e//,/-}" --out "$OUT" 2>&1 | tail -40 ;;
    *) echo "unknown stage $stage" ;;
  esac
done
