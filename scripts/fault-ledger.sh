#!/usr/bin/env bash
# Runs the fault-ledger suite (FaultLedgerTests, ProcessFaultLedgerTests) RUNS times in a row (default 10),
# stops at the first failing run, and prints the table of docs/guarantees.md: per scenario, the records,
# the faults injected, the inputs lost (always 0, or the run fails) and the duplicates (min/median/max over
# the runs), from the FAULT-LEDGER lines each scenario prints.
#
#   scripts/fault-ledger.sh [RUNS]
#
# Builds first (swift build --build-tests). Each run's output is kept in .build-logs/fault-ledger-N.log.
# Exit status: 0 when every run passed, 1 at the first failing run (its log is named), 2 for a bad RUNS.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: scripts/fault-ledger.sh [RUNS]   (RUNS: a positive number, default 10)" >&2
    exit 2
fi
mkdir -p .build-logs
swift build --build-tests >/dev/null
lines=.build-logs/fault-ledger-lines.jsonl
: > "$lines"
for run in $(seq 1 "$runs"); do
    log=.build-logs/fault-ledger-$run.log
    start=$SECONDS
    if ! swift test --skip-build --filter 'FaultLedgerTests|ProcessFaultLedgerTests' >"$log" 2>&1; then
        echo "run $run of $runs FAILED after $((SECONDS - start)) s; see $log:" >&2
        grep -E '✘|FAULT-LEDGER' "$log" | grep -v '^↳' >&2 || tail -40 "$log" >&2
        exit 1
    fi
    grep -o 'FAULT-LEDGER {.*}' "$log" | sed "s/^FAULT-LEDGER /$run /" >> "$lines"
    echo "run $run of $runs passed in $((SECONDS - start)) s ($(grep -c 'FAULT-LEDGER {' "$log") scenarios)"
done
python3 - "$lines" "$runs" <<'PY'
import json, statistics, sys
path, runs = sys.argv[1], int(sys.argv[2])
rows = {}
for line in open(path):
    run, text = line.split(" ", 1)
    entry = json.loads(text)
    rows.setdefault((entry["mode"], entry["scenario"]), []).append(entry)
def single(values):
    return str(values[0]) if min(values) == max(values) else f"{min(values)}–{max(values)}"
def spread(values):
    values = sorted(values)
    return f"{values[0]} / {statistics.median(values):g} / {values[-1]}"
print(f"\n{runs} runs in a row passed.\n")
print("| mode | scenario | fault | records | faults | lost | duplicated (min / median / max) | re-run after a SIGKILL (min / median / max) | runs |")
print("|---|---|---|---|---|---|---|---|---|")
for (mode, scenario), entries in rows.items():
    kills = [e["rerunAfterKill"] for e in entries if e["rerunAfterKill"] is not None]
    print(f"| {mode} | {scenario} | {entries[0]['faultDetail']} | {single([e['records'] for e in entries])} | "
          f"{single([e['faults'] for e in entries])} | {max(e['lost'] + e['unexpected'] for e in entries)} | "
          f"{spread([e['duplicated'] for e in entries])} | {spread(kills) if kills else '–'} | {len(entries)} |")
missing = [key for key, entries in rows.items() if len(entries) != runs]
if missing:
    print(f"scenarios without a line in every run: {missing}", file=sys.stderr)
    sys.exit(1)
PY
