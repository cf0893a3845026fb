#!/usr/bin/env bash
# Benchmark the idle `harnery finalize`: a home of many sessions, every one
# drained, and a run with nothing new (no hook record, no record grown).
#
# One home of SESSIONS (default 10,000) Claude Code sessions of SIGNALS_PER
# (default 20) signals each (examples/bench_spool.rs; each session names a
# transcript that is not there), finalized once (not timed), then ROUNDS
# (default 5) idle `finalize --no-compact` runs timed under /usr/bin/time -v,
# each after a `sync`. With OLD_BIN=PATH (a `harnery` another build made)
# every round also times that build's idle run on the same home, the two
# in turn (this build first in odd rounds): the table gains its row and the
# ratio of the medians (this build's wall time over the older one's). Both
# builds must read the ledger this build wrote (the same contract
# generation). HARNERY_TIMING=1 in the environment adds each run's phases
# to $WORK/idle-*.time.
#
# Usage: scripts/bench-idle-finalize.sh   (needs /usr/bin/time)
set -euo pipefail

cd "$(dirname "$0")/.."
SESSIONS=${SESSIONS:-10000}
SIGNALS_PER=${SIGNALS_PER:-20}
ROUNDS=${ROUNDS:-5}
OLD_BIN=${OLD_BIN:-}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-idle.XXXXXX)}
mkdir -p "$WORK"

# BIN=DIR: a build's harnery and examples/ already made (no cargo build).
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet --bins --example bench_spool
  BIN=${CARGO_TARGET_DIR:-target}/release
fi
if [ -n "$OLD_BIN" ] && [ ! -x "$OLD_BIN" ]; then
  echo "OLD_BIN=$OLD_BIN is not an executable file" >&2
  exit 2
fi

. scripts/time-v.sh

median() {
  sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

home="$WORK/home"
rm -rf "$home" && mkdir -p "$home"
"$BIN/examples/bench_spool" "$home" $((SESSIONS * SIGNALS_PER)) "$SESSIONS" >/dev/null
export HARNERY_HOME="$home" HARNERY_NOW=2026-12-01T00:00:00Z
"$BIN/harnery" finalize --no-compact --json >"$WORK/first.json"
# A second run first: whatever the first run left for the next (a record
# found missing, a stamp) is settled before the timed runs; and the search
# index made whole (a run indexes at most 20,000 rows of its own, so idle
# runs would still be catching up).
"$BIN/harnery" finalize --no-compact --json >/dev/null
"$BIN/harnery" search --reindex >/dev/null

idle() { # idle BIN TAG ROUND: one timed idle run
  sync
  /usr/bin/time -v "$1" finalize --no-compact --json >"$WORK/idle-$2-$3.json" 2>"$WORK/idle-$2-$3.time"
  grep -q '"events_appended": 0' "$WORK/idle-$2-$3.json" || {
    echo "the $2 build's idle run appended events: $WORK/idle-$2-$3.json" >&2
    exit 1
  }
}
for r in $(seq "$ROUNDS"); do
  if [ -n "$OLD_BIN" ] && [ $((r % 2)) -eq 0 ]; then idle "$OLD_BIN" old "$r"; fi
  idle "$BIN/harnery" new "$r"
  if [ -n "$OLD_BIN" ] && [ $((r % 2)) -eq 1 ]; then idle "$OLD_BIN" old "$r"; fi
done

printf '%-8s %8s %10s %10s %10s %10s\n' build sessions wall_s cpu_s rss_mb rounds
row() { # row TAG: medians of the tag's rounds
  local wall cpu_ rss
  wall=$(for f in "$WORK"/idle-"$1"-*.time; do secs "$f"; done | median)
  cpu_=$(for f in "$WORK"/idle-"$1"-*.time; do cpu "$f"; done | median)
  rss=$(for f in "$WORK"/idle-"$1"-*.time; do rss_kb "$f"; done | median)
  printf '%-8s %8d %10.2f %10.2f %10.1f %10d\n' "$1" "$SESSIONS" "$wall" "$cpu_" "$(echo "$rss" | awk '{print $1 / 1024}')" "$ROUNDS"
  echo "$wall $cpu_" >"$WORK/median-$1"
}
row new
if [ -n "$OLD_BIN" ]; then
  row old
  read -r nw nc <"$WORK/median-new"
  read -r ow oc <"$WORK/median-old"
  awk -v nw="$nw" -v ow="$ow" -v nc="$nc" -v oc="$oc" -v old="$OLD_BIN" 'BEGIN {
    printf "this build over the older (%s): wall %.2fx, cpu %.2fx (medians)\n", old, nw / ow, nc / oc }'
fi
echo "raw outputs: $WORK"
