#!/usr/bin/env bash
# Benchmark `harnery finalize` against a bare SQLite + blake3-chain baseline.
#
# For each size (default: 250000 and 1000000 signals over 1000 sessions):
#   1. write the signals into a fresh HARNERY_HOME with the in-process spool
#      writer (examples/bench_spool.rs; not timed), then `sync`: the hook
#      fdatasyncs every record it appends, the bulk writer skips that for
#      speed, so the spool is made durable here, as the hooks leave it;
#      every timed command also starts with no dirty pages left behind by
#      the one before,
#   2. time `harnery finalize` under /usr/bin/time -v (events/s, peak RSS),
#   3. time the baseline (examples/bench_baseline.rs): the same number of
#      rows, of the finalized events' average size, in the same number of
#      transactions, WAL + synchronous=FULL, blake3 chain, nothing else.
# Prints one table; peak RSS should not grow with the signal count.
#
# Usage: scripts/bench-finalize.sh [sizes...]   (needs /usr/bin/time)
set -euo pipefail

cd "$(dirname "$0")/.."
SIZES=("${@:-250000 1000000}")
SESSIONS=${SESSIONS:-1000}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-bench.XXXXXX)}

cargo build --release --quiet --bin harnery --example bench_spool --example bench_baseline
BIN=target/release

. scripts/time-v.sh

printf '%-10s %-10s %10s %12s %12s %12s %12s %8s\n' \
  signals events fin_s fin_ev_per_s fin_rss_mb base_ev_per_s base_rss_mb ratio
for n in ${SIZES[@]}; do
  home="$WORK/home-$n"
  rm -rf "$home" && mkdir -p "$home"
  "$BIN/examples/bench_spool" "$home" "$n" "$SESSIONS" >/dev/null
  sync
  HARNERY_HOME="$home" HARNERY_NOW=2026-12-01T00:00:00Z \
    /usr/bin/time -v "$BIN/harnery" finalize --json >"$WORK/fin-$n.json" 2>"$WORK/fin-$n.time"
  events=$(awk -F': ' '/"events_appended"/ {gsub(/,/, "", $2); print $2}' "$WORK/fin-$n.json")
  sync
  /usr/bin/time -v "$BIN/examples/bench_baseline" "$home/ledgers/v2/ledger.sqlite" "$WORK" \
    >"$WORK/base-$n.out" 2>"$WORK/base-$n.time"
  fs=$(secs "$WORK/fin-$n.time"); bs=$(secs "$WORK/base-$n.time")
  awk -v n="$n" -v e="$events" -v fs="$fs" -v bs="$bs" \
      -v fr="$(rss_kb "$WORK/fin-$n.time")" -v br="$(rss_kb "$WORK/base-$n.time")" 'BEGIN {
    fr_ = e / fs; br_ = e / bs
    printf "%-10d %-10d %10.2f %12.0f %12.1f %12.0f %12.1f %7.1f%%\n",
      n, e, fs, fr_, fr / 1024, br_, br / 1024, 100 * fr_ / br_ }'
  rm -rf "$home" "$WORK/baseline.sqlite"*
done
echo "raw outputs: $WORK"
