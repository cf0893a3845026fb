#!/usr/bin/env bash
# Benchmark every read command against same-run baselines.
#
# For each size (default: 250000 and 1000000 signals over 1000 sessions):
#   1. write the signals with examples/bench_spool.rs and finalize them
#      (neither timed),
#   2. run each read command under /usr/bin/time -v, stdout to /dev/null,
#      REPEAT times (default 5), all commands once per round so that the
#      rounds alternate: the median wall time (taken around the command,
#      to the nanosecond; /usr/bin/time's own is to 10 ms) and the largest
#      peak RSS,
#   3. run the baselines (examples/bench_read_baseline.rs) on the same
#      ledger, each on one thread: every event row read in chain order and
#      blake3-hashed once (base-hash); that, plus every raw signal row read
#      and every raw archive record hashed once (base-hash-all: what verify
#      checks); or every event row written to /dev/null (base-copy, for
#      export).
# Prints one table; `ratio` is the command's time over the time of the
# baseline named beside it (lower is faster; 1.00 = as fast as it).
#
# Usage: scripts/bench-read.sh [sizes...]   (needs /usr/bin/time)
#   ONLY=export   run only base-copy and the two exports (quicker, for
#                 work on export; the default runs everything)
#   REPEAT=N      rounds of every command (default 5); the table gives
#                 each command's median
set -euo pipefail

cd "$(dirname "$0")/.."
SIZES=("${@:-250000 1000000}")
SESSIONS=${SESSIONS:-1000}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-read.XXXXXX)}
ONLY=${ONLY:-all}
REPEAT=${REPEAT:-5}
case "$ONLY" in
  all | export) ;;
  *) echo "ONLY must be all or export, not $ONLY" >&2; exit 2 ;;
esac

cargo build --release --quiet --bin harnery --example bench_spool --example bench_read_baseline
BIN=$PWD/target/release

. scripts/time-v.sh

# timed NAME CMD...: run CMD once with stdout to /dev/null; add its wall
# time (ns) to NAME.walls, and keep as NAME.time the report of its run
# with the largest peak RSS.
timed() {
  local name=$1; shift
  sync
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -v "$@" >/dev/null 2>"$WORK/$name.run" || true
  t1=$(date +%s%N)
  echo $((t1 - t0)) >>"$WORK/$name.walls"
  if [ ! -f "$WORK/$name.time" ] ||
    [ "$(rss_kb "$WORK/$name.run")" -gt "$(rss_kb "$WORK/$name.time")" ]; then
    mv "$WORK/$name.run" "$WORK/$name.time"
  else
    rm "$WORK/$name.run"
  fi
}

# median NAME: the median of NAME's wall times, in seconds.
median() {
  sort -n "$WORK/$1.walls" | awk '{ a[NR] = $1 } END {
    m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
    printf "%.3f", m / 1e9 }'
}

row() { # row SIZE NAME [BASELINE]
  local t; t=$(median "$2")
  local ratio="-"
  if [ -n "${3:-}" ]; then
    ratio=$(awk -v a="$t" -v b="$(median "$3")" 'BEGIN { printf "%.2f", a / b }')
  fi
  printf '%-9s %-28s %9s %10s %8s %s\n' "$1" "$2" "$t" "$(rss_mb "$WORK/$2.time")" "$ratio" "${3:-}"
}

printf '%-9s %-28s %9s %10s %8s %s\n' signals command secs peak_mb ratio baseline
for n in ${SIZES[@]}; do
  home="$WORK/home-$n"
  rm -rf "$home" && mkdir -p "$home"
  "$BIN/examples/bench_spool" "$home" "$n" "$SESSIONS" >/dev/null
  export HARNERY_HOME="$home" HARNERY_NOW=2026-12-01T00:00:00Z
  "$BIN/harnery" finalize >/dev/null
  db="$home/ledgers/v2/ledger.sqlite"
  one=$("$BIN/harnery" sessions --json | head -1 | sed 's/.*"session_id":"\([^"]*\)".*/\1/')
  for _ in $(seq "$REPEAT"); do
    if [ "$ONLY" = all ]; then
      timed base-hash "$BIN/examples/bench_read_baseline" "$db" hash
      timed base-hash-all "$BIN/examples/bench_read_baseline" "$db" hash-all
    fi
    timed base-copy "$BIN/examples/bench_read_baseline" "$db" copy
    if [ "$ONLY" = all ]; then
      timed sessions "$BIN/harnery" sessions
      timed sessions-json "$BIN/harnery" sessions --json
      timed show "$BIN/harnery" show "$one"
      timed replay "$BIN/harnery" replay "$one"
      timed receipts "$BIN/harnery" receipts "$one"
      timed audit "$BIN/harnery" audit
      timed health "$BIN/harnery" health
      timed validate "$BIN/harnery" validate
      timed verify "$BIN/harnery" verify
    fi
    timed export-jsonl "$BIN/harnery" export --format jsonl
    timed export-otlp "$BIN/harnery" export --format otlp
  done
  if [ "$ONLY" = all ]; then
    for c in base-hash base-hash-all base-copy sessions sessions-json show replay receipts audit health validate; do
      row "$n" "$c"
    done
    row "$n" verify base-hash-all
    row "$n" verify base-hash
  else
    row "$n" base-copy
  fi
  row "$n" export-jsonl base-copy
  row "$n" export-otlp base-copy
  for f in "$WORK"/*.time "$WORK"/*.walls; do mv "$f" "${f%.*}-$n.${f##*.}"; done
  rm -rf "$home"
done
echo "raw outputs: $WORK"
