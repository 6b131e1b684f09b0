#!/usr/bin/env bash
# Builds and runs pushworker's libFuzzer targets (docs/testing.md).
#
#   Fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]      default: 60 seconds, every target
#
# Each target is built alone (`swift build --product`, -sanitize=fuzzer,address) into .build-fuzz/ at the
# repository root, then run for SECONDS_PER_TARGET with its seed corpus (Fuzz/Corpus/TARGET, read only) and
# a dictionary. New corpus entries go to .build-fuzz/corpus/TARGET (kept between runs, never in git);
# crashing inputs to .build-fuzz/artifacts/. Prints the executions per target; exits non-zero if any target
# crashed, broke an invariant, leaked, hung or ran out of memory. Reproduce a crash with
#   .build-fuzz/debug/TARGET .build-fuzz/artifacts/TARGET-crash-…
# Targets run FUZZ_PARALLEL at a time (default 2). Extra libFuzzer flags can be passed in FUZZ_FLAGS.
set -euo pipefail
cd "$(dirname "$0")"
fuzz_dir=$PWD
scratch=$(cd .. && pwd)/.build-fuzz
seconds=${1:-60}
if ! [[ $seconds =~ ^[0-9]+$ ]]; then
    echo "usage: Fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]: '$seconds' is not a number of seconds" >&2
    exit 2
fi
shift || true
all=(FuzzPayloadValidator FuzzAPNsExpiration FuzzTraceContext FuzzExecOutcome FuzzHTTPOutcome FuzzConfiguration FuzzCrashGuardMarker)
if [[ $# -gt 0 ]]; then targets=("$@"); else targets=("${all[@]}"); fi

# The Swift runtime's own crash backtracer would read memory AddressSanitizer guards; libFuzzer prints the
# stack itself.
export SWIFT_BACKTRACE=enable=no
# A leak, a use after free or an invariant's abort() is a crash; keep leak detection on.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}

declare -A max_len=([FuzzPayloadValidator]=5000 [FuzzConfiguration]=8192 [FuzzHTTPOutcome]=4096)
declare -A dict=([FuzzAPNsExpiration]=headers.dict [FuzzTraceContext]=headers.dict [FuzzExecOutcome]=headers.dict [FuzzCrashGuardMarker]=crash-guard.dict)
mkdir -p "$scratch/artifacts" "$scratch/logs"
# Build every target first (one scratch path, so each build after the first is incremental), then run them
# FUZZ_PARALLEL at a time (default 2: one per core of the CI machine), each writing its own log.
for target in "${targets[@]}"; do
    [[ -d "Corpus/$target" ]] || { echo "unknown target $target (known: ${all[*]})" >&2; exit 2; }
done
for target in "${targets[@]}"; do
    start=$SECONDS
    swift build --product "$target" -Xswiftc -sanitize=fuzzer,address --scratch-path "$scratch" 2>&1 \
        | grep -v -e "Cannot export local symbol" -e '^\[[0-9]*/[0-9]*\] Compiling' || true
    [[ -x "$scratch/debug/$target" ]] || { echo "build of $target failed" >&2; exit 1; }
    echo "== $target: built in $((SECONDS - start))s"
    mkdir -p "$scratch/corpus/$target"
done

# Runs one target for $seconds; its exit status goes to $scratch/logs/TARGET.status.
fuzz_one() {
    local target=$1 status=0
    local log="$scratch/logs/$target.log"
    echo "== $target: fuzzing for ${seconds}s (log $log)"
    # shellcheck disable=SC2086
    "$scratch/debug/$target" -max_total_time="$seconds" -timeout=30 -max_len="${max_len[$target]:-1024}" \
        -dict="$fuzz_dir/${dict[$target]:-json.dict}" -print_final_stats=1 \
        -artifact_prefix="$scratch/artifacts/$target-" ${FUZZ_FLAGS:-} \
        "$scratch/corpus/$target" "$fuzz_dir/Corpus/$target" >"$log" 2>&1 || status=$?
    echo "$status" >"$scratch/logs/$target.status"
}
parallel=${FUZZ_PARALLEL:-2}
running=0
for target in "${targets[@]}"; do
    if [[ $running -ge $parallel ]]; then wait -n || true; running=$((running - 1)); fi
    fuzz_one "$target" &
    running=$((running + 1))
done
wait

failed=()
summary=()
for target in "${targets[@]}"; do
    log="$scratch/logs/$target.log"
    status=$(cat "$scratch/logs/$target.status" 2>/dev/null || echo "no status")
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    corpus=$(find "$scratch/corpus/$target" -type f | wc -l)
    if [[ $status != 0 ]]; then
        failed+=("$target")
        grep -E -A12 "INVARIANT BROKEN|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|Fatal error|ALARM|==[0-9]+== ERROR" "$log" | head -60 || true
        grep -E "^artifact_prefix|Test unit written to" "$log" || true
        summary+=("$target: FAILED (exit $status) after ${runs:-?} executions")
    else
        summary+=("$target: ${runs:-?} executions in ${seconds}s, no crash (corpus ${corpus} new entries kept in .build-fuzz/corpus/$target)")
    fi
done
echo "== fuzz summary"
printf '   %s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzzing found problems in: ${failed[*]}" >&2
    exit 1
fi
