#!/usr/bin/env bash
# One call on the GPU machine: the GPU test suite, the probe (device time vs the floor, full
# call vs a bare launch of the same kernel) and the side-by-side harness, each time-boxed so
# the whole call fits the device tool's 10-minute limit. Results go to $OUT.
#
#   bash benchmarks/device_run.sh [tests] [probe] [bench] [sweep] [sweep-tm] [pending]   # default: tests probe
#   (pending, ~9.5 min on its own: the GPU tests of the forms that are written but off until
#   timed, then their A/B runs)
#   (tests ~6-7 min with a cold kernel cache, probe ~1.5, bench ~3.5, each sweep ~4: at most
#   ~9 min per call)
#
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
stages=${*:-tests probe}
for stage in $stages; do
  case $stage in
    tests) timeout 450 python3 -m pytest -m gpu tests/test_gpu.py -q -n 14 -p no:cacheprovider 2>&1 \
             | tee "$OUT/gpu_tests.log" | grep -E "^FAILED|passed|failed" | sed 's/ - .*//' | head -40 ;;
    probe) timeout 90 python3 benchmarks/probe.py gae,vtrace 2>&1 | tee "$OUT/probe.log" ;;
    bench) timeout 200 python3 benchmarks/run.py --grid quick --time-major --max-minutes 3 --no-plots --out "$OUT" 2>&1 \
             | tail -40 ;;
    sweep) timeout 240 python3 benchmarks/sweep.py gae 2>&1 | tee "$OUT/sweep_gae.log" | grep -v "^ *skip" ;;
    sweep-tm) SWEEP_TIME_MAJOR=1 timeout 300 python3 benchmarks/sweep.py gae \
               32768x8,32768x64,4096x128,16384x512,4096x2048,512x4096,1024x512,16x262144 2>&1 | tee "$OUT/sweep_gae_tm.log" \
             | grep -v "^ *skip" ;;
    pending)
      # forms written without a GPU, off by default (launch._SEGMENT_MAP_FORWARD, _RETRACE_AV_VEC, _DESCENDING_CHUNKS):
      # their GPU tests, then each against the default in one A/B (version folders made here)
      timeout 180 python3 -m pytest -m gpu tests/test_gpu.py -q -n 14 -p no:cacheprovider \
        -k "segment_map_forward or retrace_action_vectors or descending_chunks" 2>&1 | tee "$OUT/pending_tests.log" | tail -3
      rm -rf _ab/pending && mkdir -p _ab/pending && for v in base segfwd avvec desc; do
        cp -r rltriton "_ab/pending/$v"; mkdir -p "_ab/pending/$v.d" && mv "_ab/pending/$v" "_ab/pending/$v.d/rltriton"; done
      sed -i 's/^_SEGMENT_MAP_FORWARD = False/_SEGMENT_MAP_FORWARD = True/' _ab/pending/segfwd.d/rltriton/kernels/launch.py
      sed -i 's/^_RETRACE_AV_VEC = False/_RETRACE_AV_VEC = True/' _ab/pending/avvec.d/rltriton/kernels/launch.py
      sed -i 's/^_DESCENDING_CHUNKS = False/_DESCENDING_CHUNKS = True/' _ab/pending/desc.d/rltriton/kernels/launch.py
      timeout 120 python3 benchmarks/ab.py _ab/pending/base.d _ab/pending/segfwd.d --est gae,vtrace,td_lambda \
        --shapes 16x262144,1x1048576,64x65536 2>&1 | tee "$OUT/ab_segfwd.txt"
      timeout 120 python3 benchmarks/ab.py _ab/pending/base.d _ab/pending/avvec.d --est retrace_av,retrace_av_tm \
        --shapes 512x4096,4096x2048,16384x512,32768x64,4096x128 2>&1 | tee "$OUT/ab_avvec.txt"
      timeout 150 python3 benchmarks/ab.py _ab/pending/base.d _ab/pending/desc.d --est gae,vtrace,td_lambda,retrace \
        --shapes 32768x64,4096x128,16384x512,4096x2048,512x4096,16x262144 2>&1 | tee "$OUT/ab_desc.txt" ;;
    *) echo "unknown stage $stage" ;;
  esac
done
