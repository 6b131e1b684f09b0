#!/usr/bin/env bash
# Counts, with valgrind's callgrind, the instructions a pushworker build spends per record in each stage of
# its per-record path (poll, copy-out, validate, route + dispatch, encode result, produce, delivery report,
# offset store), the rest of its process, and its whole process. Instruction counts barely move with the
# load on the machine, so two builds can be compared on a busy one: run it once per build.
#
#   scripts/callgrind-stages.sh [PUSHWORKER] [N]
#
# PUSHWORKER: the executable to measure (default .build/release/pushworker; build it with
# `swift build -c release`). N: records (default 20000; the instrumented run is ~50x slower).
#
# It starts `pushworker dev --broker-only` (uninstrumented) with a configuration like the bench's (noop
# worker for type "bench", HTTP server on a free loopback port, the consumer settings `dev` gives the
# service), runs `pushworker run` under callgrind against it, waits until the service is ready, zeroes the
# counters, produces N records like the bench's, waits until their N results are acknowledged, dumps the
# profile (one file per thread), stops everything, and prints the table (scripts/callgrind-stages.py;
# docs/performance-profiling.md says which functions make up each stage). The profile and the logs stay in
# .build-logs/callgrind-stages/<time>/ (open a thread's callgrind.out.1-NN with callgrind_annotate or
# kcachegrind).
#
# Needs valgrind (callgrind_annotate, callgrind_control), swift (`swift demangle`, and clang beside it to
# build scripts/callgrind-sigsuspend.c, which works around a valgrind 3.19 crash with builds before dba3603),
# python3 and curl.
# Exit status: 0 with the table, 1 when a step fails (its log is named), 2 for bad arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: scripts/callgrind-stages.sh [PUSHWORKER] [N]   (N: records, default 20000)" >&2; exit 2; }
pushworker=${1:-.build/release/pushworker}
records=${2:-20000}
[[ "$records" =~ ^[1-9][0-9]*$ ]] || usage
[[ -x "$pushworker" ]] || { echo "scripts/callgrind-stages.sh: $pushworker is not an executable (swift build -c release?)" >&2; usage; }
pushworker=$(realpath "$pushworker")
for tool in valgrind callgrind_annotate callgrind_control swift python3 curl; do
    command -v "$tool" >/dev/null || { echo "scripts/callgrind-stages.sh: $tool is missing" >&2; exit 1; }
done

out=.build-logs/callgrind-stages/$(date +%Y%m%d-%H%M%S)-$$
mkdir -p "$out"
out=$(realpath "$out")
fail() { echo "scripts/callgrind-stages.sh: $1" >&2; exit 1; }

clang=$(dirname "$(readlink -f "$(command -v swift)")")/clang
[[ -x "$clang" ]] || clang=cc
"$clang" -shared -fPIC -O1 -Wall -Werror -o "$out/sigsuspend.so" scripts/callgrind-sigsuspend.c -ldl

# As the bench: partitions enough for the mock broker's 5 MiB per partition, no pause for backpressure.
partitions=$(( (records * 160 + 4 * 1048576 - 1) / (4 * 1048576) ))
(( partitions < 4 )) && partitions=4
buffered=$(( records + 1 > 50000 ? records + 1 : 50000 ))
cat > "$out/pushworker.json5" <<EOF
// scripts/callgrind-stages.sh: the bench's service, run by \`pushworker run\` against \`pushworker dev --broker-only\`.
{
  groupId: "callgrind-stages",
  inputTopics: ["bench-pushes"],
  resultsTopic: "bench-results",
  // What \`pushworker dev\` gives the service on the embedded cluster (EmbeddedClusterSettings).
  consumer: { "fetch.wait.max.ms": 10 },
  maxBufferedRecords: $buffered,
  // info: the HTTP server's port is read from the log line that names it.
  log: { level: "info" },
  dev: { partitions: $partitions },
  httpServer: { enabled: true, host: "127.0.0.1", port: 0 },
  workers: { bench: { kind: "noop", result: "newData" } },
}
EOF

pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    # `kill` ends only the processes this script started, by their ids.
}
trap cleanup EXIT
# Waits up to $2 seconds for the command $1 to succeed.
wait_for() {
    local deadline=$((SECONDS + $2))
    until eval "$1"; do
        (( SECONDS < deadline )) || return 1
        sleep 1
    done
}

"$pushworker" dev --broker-only --config "$out/pushworker.json5" >"$out/dev.out" 2>"$out/dev.err" &
pids+=($!)
wait_for 'grep -q "^bootstrap.servers=" "$out/dev.out"' 30 || fail "the embedded cluster did not start; see $out/dev.err"
servers=$(sed -n 's/^bootstrap.servers=//p' "$out/dev.out")

# One profile per thread: a stage is reckoned on the thread that runs it (scripts/callgrind-stages.py).
LD_PRELOAD="$out/sigsuspend.so" valgrind --tool=callgrind --separate-threads=yes --log-file="$out/valgrind.log" --callgrind-out-file="$out/callgrind.out" \
    "$pushworker" run --config "$out/pushworker.json5" --bootstrap-servers "$servers" >"$out/run.out" 2>"$out/run.err" &
run=$!
pids+=($run)
echo "pushworker run under callgrind (pid $run), $records records; logs in $out"
wait_for 'grep -qo "http server listening on http://127.0.0.1:[0-9]*" "$out/run.err"' 600 || fail "the service did not start; see $out/run.err and $out/valgrind.log"
port=$(grep -o "http server listening on http://127.0.0.1:[0-9]*" "$out/run.err" | head -1 | sed 's/.*://')
wait_for '[[ $(curl -s -o /dev/null -w "%{http_code}" "http://127.0.0.1:$port/readyz") == 200 ]]' 600 \
    || fail "the service did not get ready (partitions assigned); see $out/run.err"

# From here on only the records count: start-up, the group join and the stop are outside the profile.
callgrind_control -z "$run" >"$out/callgrind_control.log" 2>&1
start=$SECONDS
"$pushworker" results --bootstrap-servers "$servers" --topic bench-results --from-beginning --count "$records" --timeout 3600 \
    >/dev/null 2>"$out/results.err" &
results=$!
pids+=($results)
"$pushworker" produce --bootstrap-servers "$servers" --topic bench-pushes --type bench --set contentId=article-123 --set seq=42 \
    --count "$records" >"$out/produce.out" 2>&1 || fail "producing the records failed; see $out/produce.out"
wait "$results" || fail "not every result arrived; see $out/results.err"
# Written is not yet acknowledged to the service: wait until it has counted every acknowledgement (and
# stored the offsets before that). Each look at /metrics is a scrape inside the profile: once a second.
acknowledged() {
    curl -s "http://127.0.0.1:$port/metrics" | awk '/^pushworker_results_total[{ ]/ { n += $NF } END { printf "%d", n }'
}
wait_for '[[ $(acknowledged) -ge $records ]]' 600 || fail "the service did not acknowledge $records results; see $out/run.err"
callgrind_control -d "$run" >>"$out/callgrind_control.log" 2>&1
wait_for 'compgen -G "$out/callgrind.out.1-*" >/dev/null' 120 || fail "callgrind wrote no profile; see $out/valgrind.log"
echo "$records records in $((SECONDS - start)) s under callgrind"

kill -TERM "$run"
wait "$run" || echo "pushworker run exited with status $? (see $out/run.err)" >&2
python3 scripts/callgrind-stages.py "$records" "$out"/callgrind.out.1-* | tee "$out/stages.txt"
