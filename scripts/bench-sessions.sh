#!/usr/bin/env bash
# Benchmark `harnery sessions` over many sessions, and the upgrade that
# gives an older ledger's sessions their titles and projects.
#
#   1. write SIGNALS Claude Code signals over SESSIONS sessions with
#      examples/bench_spool.rs (a prompt in each) and finalize them with
#      BEFORE (an older harnery binary) when given, else with this build;
#   2. with BEFORE: time `sessions --json` and `sessions` with it, REPEAT
#      times; then one finalize with this build (it migrates the ledger and
#      fills every session's title and project from its events: timed
#      once, as `upgrade-fill`);
#   3. time `sessions --json` and `sessions` with this build, REPEAT times.
# Prints the median wall and CPU (user + system) time of each, and each
# command's ratio of this build over BEFORE in CPU time (on a shared,
# loaded machine the wall time follows the load; the CPU time much less).
#
# Usage: scripts/bench-sessions.sh [SESSIONS] [SIGNALS]   (default 10000 100000)
#   BEFORE=path/to/older/harnery   the build to compare with
#   BIN=dir                        where harnery and examples/bench_spool are
#                                  (default: a release build made here)
#   REPEAT=N                       rounds (default 5)
set -euo pipefail

cd "$(dirname "$0")/.."
SESSIONS=${1:-10000}
SIGNALS=${2:-100000}
REPEAT=${REPEAT:-5}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-sessions.XXXXXX)}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet --bin harnery --example bench_spool
  BIN=$PWD/target/release
fi
BEFORE=${BEFORE:-}

# timed NAME CMD...: add CMD's wall time (ns) to NAME.walls and its CPU
# time (ns) to NAME.cpus; stdout to /dev/null.
timed() {
  local name=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f '%U %S' -o "$WORK/$name.run" "$@" >/dev/null
  t1=$(date +%s%N)
  echo $((t1 - t0)) >>"$WORK/$name.walls"
  awk '{ printf "%d\n", ($1 + $2) * 1e9 }' "$WORK/$name.run" >>"$WORK/$name.cpus"
}

# median NAME [walls|cpus]: the median, in seconds.
median() {
  sort -n "$WORK/$1.${2:-walls}" | awk '{ a[NR] = $1 } END {
    m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
    printf "%.3f", m / 1e9 }'
}

home="$WORK/home"
rm -rf "$home" && mkdir -p "$home"
"$BIN/examples/bench_spool" "$home" "$SIGNALS" "$SESSIONS" >/dev/null
export HARNERY_HOME="$home" HARNERY_NOW=2026-12-01T00:00:00Z
if [ -n "$BEFORE" ]; then
  "$BEFORE" finalize >/dev/null
  for _ in $(seq "$REPEAT"); do
    timed before-sessions-json "$BEFORE" sessions --json
    timed before-sessions "$BEFORE" sessions
  done
  timed upgrade-fill "$BIN/harnery" finalize
else
  "$BIN/harnery" finalize >/dev/null
fi
listed=$("$BIN/harnery" sessions --json | wc -l)
titled=$("$BIN/harnery" sessions --json | grep -c '"title":"[^"]' || true)
for _ in $(seq "$REPEAT"); do
  timed sessions-json "$BIN/harnery" sessions --json
  timed sessions "$BIN/harnery" sessions
done

echo "$listed sessions listed, $titled with a title ($SIGNALS signals)"
printf '%-22s %9s %9s %10s\n' command wall_s cpu_s cpu_ratio
line() { printf '%-22s %9s %9s %10s\n' "$1" "$(median "$1")" "$(median "$1" cpus)" "$2"; }
for c in sessions-json sessions; do
  ratio=-
  if [ -n "$BEFORE" ]; then
    ratio=$(awk -v a="$(median "$c" cpus)" -v b="$(median "before-$c" cpus)" 'BEGIN { printf "%.2f", a / b }')
    line "before-$c" -
  fi
  line "$c" "$ratio"
done
if [ -n "$BEFORE" ]; then line upgrade-fill -; fi
echo "raw outputs: $WORK"
