#!/usr/bin/env bash
# Nsight Compute profiles of estimator calls beside their streaming floor, one per line of
# stdin: "ESTIMATOR RxT [tm] [NAME=VALUE|plan=...]..." (benchmarks/ncu_case.py's arguments).
# Full reports go to $OUT/ncu_<n>_*.txt; a digest of each kernel is printed. NCU_FLAGS adds
# ncu options (e.g. "--cache-control none" to keep L2 warm between passes, as a CUDA-graph
# replay of repeated calls does). The clocks are left alone (--clock-control none).
#
#   printf 'gae 16384x64 tm\ngae 16384x64\n' | OUT=/tmp/o bash benchmarks/ncu_run.sh
set -u
OUT=${OUT:-/tmp/rltriton-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
i=0
while read -r est shape rest; do
  [ -z "$est" ] && continue
  i=$((i+1))
  f=$OUT/ncu_${i}_${est}_${shape}.txt
  # shellcheck disable=SC2086
  timeout 120 "$NCU" --clock-control none ${NCU_FLAGS:-} --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
    -k regex:_kernel python3 benchmarks/ncu_case.py "$est" "$shape" $rest > "$f" 2>&1
  echo "== $est $shape $rest"
  grep -E "plan \(|^  [a-z_]+_kernel|Duration|DRAM Throughput|L2 Hit Rate|Registers Per|Achieved Occupancy|Issued Warp Per|SM Active Cycles|Elapsed Cycles" "$f" \
    | sed 's/  */ /g; s/Context 1, Stream [0-9]*, Device 0, CC 9.0//' | paste -sd' ' | sed 's/ \([a-z_]*_kernel (\)/\n  \1/g'
done
