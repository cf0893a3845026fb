#!/usr/bin/env bash
# Benchmark `harnery serve` on the bench ledger of scripts/bench-read.sh.
#
#   1. write SIGNALS signals over SESSIONS sessions with
#      examples/bench_spool.rs and finalize them (not timed);
#   2. start `harnery serve --addr 127.0.0.1:0` and, with curl (a real HTTP
#      client, one connection per request), time REPEAT requests each of
#      the dashboard `/`, the sessions page `/sessions` and one session's
#      page (SIGNALS / SESSIONS events), alternating, and of
#      `/api/sessions?limit=50` (the dashboard's first request, which reads
#      the ledger's usage once, is made before the timing);
#   3. time the same reads by the command line in the same run as the
#      baselines (`harnery sessions --limit 50`, `harnery view <id> -o -`:
#      process start, ledger open and render included);
#   4. read the server's peak RSS (VmHWM in /proc/PID/status).
# Prints medians in milliseconds and each page's ratio to its baseline.
#
# Usage: scripts/bench-serve.sh   (env: SIGNALS=1000000 SESSIONS=1000 REPEAT=20)
set -euo pipefail

cd "$(dirname "$0")/.."
SIGNALS=${SIGNALS:-1000000}
SESSIONS=${SESSIONS:-1000}
REPEAT=${REPEAT:-20}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-serve.XXXXXX)}

cargo build --release --quiet --bin harnery --example bench_spool
BIN=$PWD/target/release

home="$WORK/home"
rm -rf "$home" && mkdir -p "$home"
"$BIN/examples/bench_spool" "$home" "$SIGNALS" "$SESSIONS" >/dev/null
export HARNERY_HOME="$home" HARNERY_NOW=2026-12-01T00:00:00Z
"$BIN/harnery" finalize >/dev/null
one=$("$BIN/harnery" sessions --json --limit 1 | sed 's/.*"session_id":"\([^"]*\)".*/\1/')
events=$("$BIN/harnery" sessions --json --limit 1 | sed 's/.*"events":\([0-9]*\).*/\1/')

"$BIN/harnery" serve --addr 127.0.0.1:0 >"$WORK/serve.out" 2>"$WORK/serve.err" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  [ -s "$WORK/serve.out" ] && break
  sleep 0.1
done
url=$(sed -n 's/^harnery serve: //p' "$WORK/serve.out")
base=${url%%/\?token=*}
port=${base##*:}
cookie="harnery_token_${port}=${url##*token=}"

# fetch NAME PATH: one request; its total time (ms) appended to NAME.ms.
fetch() {
  local code
  code=$(curl -s -o /dev/null -b "$cookie" -w '%{http_code} %{time_total}' "$base$2")
  [ "${code%% *}" = 200 ] || { echo "GET $2 answered ${code%% *}" >&2; exit 1; }
  awk -v t="${code#* }" 'BEGIN { printf "%.3f\n", t * 1000 }' >>"$WORK/$1.ms"
}

# cli NAME CMD...: one run of a command; its wall time (ms) appended.
cli() {
  local name=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null
  t1=$(date +%s%N)
  awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.3f\n", ns / 1e6 }' >>"$WORK/$name.ms"
}

median() {
  sort -n "$WORK/$1.ms" | awk '{ a[NR] = $1 } END {
    m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
    printf "%.1f", m }'
}

fetch warm-home "/"
for _ in $(seq "$REPEAT"); do
  fetch page-home "/"
  fetch page-sessions "/sessions"
  fetch page-session "/sessions/$one"
  fetch api-sessions "/api/sessions?limit=50"
  cli cli-sessions "$BIN/harnery" sessions --limit 50
  cli cli-view "$BIN/harnery" view "$one" -o -
done
hwm=$(awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status")

echo "ledger: $SIGNALS signals, $SESSIONS sessions; the session page shows $events events"
printf '%-28s %10s %8s %s\n' request median_ms ratio baseline
row() {
  local ratio="-"
  [ -n "${2:-}" ] && ratio=$(awk -v a="$(median "$1")" -v b="$(median "$2")" 'BEGIN { printf "%.2f", a / b }')
  printf '%-28s %10s %8s %s\n' "$1" "$(median "$1")" "$ratio" "${2:-}"
}
row page-home
row page-sessions cli-sessions
row api-sessions cli-sessions
row page-session cli-view
row cli-sessions
row cli-view
echo "server peak RSS (VmHWM): $hwm MiB"
echo "raw outputs: $WORK"
