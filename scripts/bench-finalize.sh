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
#   2. time `harnery finalize --no-compact` under /usr/bin/time -v (events/s,
#      peak RSS): the drain and its commits, without the raw archive's
#      compaction that a default run does after them (now to the end, no
#      longer within 1 s; scripts/bench-archive.sh measures that step),
#   3. time the baseline (examples/bench_baseline.rs): the same number of
#      rows, of the finalized events' average size, in the same number of
#      transactions, WAL + synchronous=FULL, blake3 chain, nothing else.
#      Its time is the one it prints for that work: reading the finalized
#      ledger's row count and average size first is the bench's own set-up
#      (on a compact ledger it decodes every event, 1.5 s at 1M), not part
#      of what the baseline stands for.
# Prints one table; peak RSS should not grow with the signal count.
# REPEAT=N (default 1) drains the same spool N times, each round timing
# finalize and then the baseline, and prints the medians of the rounds'
# times (and each round's ratio): on a noisy machine one round's ratio
# moves with whatever else ran during it.
# OLD_BIN=PATH (a `harnery` binary another build made, e.g. one at an
# older commit) A/Bs: every round also drains the same spool with it, the
# two builds in turn (this one first in odd rounds, the older one first in
# even rounds), and the table gains the older build's row and the ratio of
# the two (this build's events/s over the older one's), each round's own
# and the medians' (a ratio measured under the same load).
#
# Then the agent's-own-record case: for each size in RECORD_MB (default
# "256 2048"; empty skips it), a Claude Code transcript of that many MiB,
# the bundled basic transcript's lines repeated with fresh ids, named by one
# hook signal, followed by one `finalize` under /usr/bin/time -v. Peak RSS
# should not grow with the transcript's size.
#
# Usage: scripts/bench-finalize.sh [sizes...]   (needs /usr/bin/time, python3)
#   BIN=DIR     this build's harnery and examples/ (default: cargo build --release)
#   OLD_BIN=PATH the older build's harnery, to A/B against
set -euo pipefail

cd "$(dirname "$0")/.."
SIZES=("${@:-250000 1000000}")
SESSIONS=${SESSIONS:-1000}
REPEAT=${REPEAT:-1}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-bench.XXXXXX)}

# BIN=DIR: a build's harnery and examples/ already made (no cargo build).
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet --bins --example bench_spool --example bench_baseline
  BIN=${CARGO_TARGET_DIR:-target}/release
fi
OLD_BIN=${OLD_BIN:-}
if [ -n "$OLD_BIN" ] && [ ! -x "$OLD_BIN" ]; then
  echo "OLD_BIN=$OLD_BIN is not an executable file" >&2
  exit 2
fi

. scripts/time-v.sh

# The median of column COLUMN of FILE's lines (the mean of the middle two
# when there is an even number of them).
median() {
  sort -n -k"$2" "$1" | awk -v k="$2" '{ v[NR] = $k }
    END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Delete a drained home and its baseline, and note when: ext4 without a
# journal never gives a new file an inode freed in the last minute (six
# while the inode's table block is dirty, hence the sync) and checks each
# one it passes, so a home of thousands of files deleted seconds before a
# drain cost that drain (its record pass creates a spool file for each of
# the 1,000 sessions: 0.4-0.7 CPU-s there, perf, 2026-12-07) and not the
# baseline. `settle` waits out that minute before the next drain.
DELETED_AT=0
discard() {
  rm -rf "$@"
  sync
  DELETED_AT=$(date +%s)
}
settle() {
  local left=$((DELETED_AT + 61 - $(date +%s)))
  if [ "$left" -gt 0 ]; then sleep "$left"; fi
}

# Drain a copy of spool $1 (the spool itself when $2 is "last") with the
# `harnery` at $3 into $WORK/$4-$n.*: /usr/bin/time -v's report and the run's
# JSON summary; prints the events it appended. The home is left for the
# baseline; the caller removes it.
drain() {
  local spool=$1 last=$2 bin=$3 tag=$4 home="$WORK/home-$n"
  rm -rf "$home"
  settle
  if [ "$last" = last ]; then mv "$spool" "$home"; else cp -a "$spool" "$home"; fi
  sync
  HARNERY_HOME="$home" HARNERY_NOW=2026-12-01T00:00:00Z \
    /usr/bin/time -v "$bin" finalize --no-compact --json >"$WORK/$tag-$n.json" 2>"$WORK/$tag-$n.time"
  awk -F': ' '/"events_appended"/ {gsub(/,/, "", $2); print $2}' "$WORK/$tag-$n.json"
}

printf '%-10s %-10s %10s %12s %12s %12s %12s %8s\n' \
  signals events fin_s fin_ev_per_s fin_rss_mb base_ev_per_s base_rss_mb ratio
for n in ${SIZES[@]}; do
  spool="$WORK/spool-$n" home="$WORK/home-$n" rounds="$WORK/rounds-$n.txt"
  rm -rf "$spool" && mkdir -p "$spool"
  "$BIN/examples/bench_spool" "$spool" "$n" "$SESSIONS" >/dev/null
  : >"$rounds"
  for r in $(seq "$REPEAT"); do
    # Every round drains the same spool: a copy of it, the last drain of
    # the last round the spool itself. With OLD_BIN the older build drains
    # a copy too, before or after this one by the round's parity, and this
    # build's ledger is the one the baseline measures its rows by.
    last=copy
    [ "$r" -eq "$REPEAT" ] && last=last
    old_events=0 old_s=0 old_rss=0
    if [ -n "$OLD_BIN" ] && [ $((r % 2)) -eq 0 ]; then
      old_events=$(drain "$spool" copy "$OLD_BIN" old)
      old_s=$(secs "$WORK/old-$n.time") old_rss=$(rss_kb "$WORK/old-$n.time")
    fi
    events=$(drain "$spool" "$([ -n "$OLD_BIN" ] && [ $((r % 2)) -eq 1 ] && echo copy || echo $last)" "$BIN/harnery" fin)
    if [ -n "$OLD_BIN" ] && [ $((r % 2)) -eq 1 ]; then
      mv "$home" "$home.new"
      old_events=$(drain "$spool" "$last" "$OLD_BIN" old)
      old_s=$(secs "$WORK/old-$n.time") old_rss=$(rss_kb "$WORK/old-$n.time")
      discard "$home" && mv "$home.new" "$home"
    fi
    sync
    /usr/bin/time -v "$BIN/examples/bench_baseline" "$home/ledgers/v2/ledger.sqlite" "$WORK" \
      >"$WORK/base-$n.out" 2>"$WORK/base-$n.time"
    base_s=$(awk '/^baseline:/ { for (i = 1; i < NF; i++) if ($(i + 1) == "s,") print $i }' "$WORK/base-$n.out")
    echo "$events $(secs "$WORK/fin-$n.time") $base_s" \
      "$(rss_kb "$WORK/fin-$n.time") $(rss_kb "$WORK/base-$n.time")" \
      "$old_events $old_s $old_rss" >>"$rounds"
    discard "$home" "$WORK/baseline.sqlite"*
  done
  # The medians of the rounds' times (finalize and baseline in turn), the
  # highest peak RSS; with more than one round, each round's own ratio.
  awk -v n="$n" -v fs="$(median "$rounds" 2)" -v bs="$(median "$rounds" 3)" \
    -v os="$(median "$rounds" 7)" -v old="$OLD_BIN" '
    { e = $1; oe = $6; if ($4 > fr) fr = $4; if ($5 > br) br = $5; if ($8 > orss) orss = $8
      each = each sprintf(" %.1f%%", 100 * $3 / $2)
      if (old != "") { each_old = each_old sprintf(" %.1f%%", 100 * ($6 / $7) / ($1 / $3))
        each_ab = each_ab sprintf(" %.2fx", ($1 / $2) / ($6 / $7)) } }
    END {
      fr_ = e / fs; br_ = e / bs
      printf "%-10d %-10d %10.2f %12.0f %12.1f %12.0f %12.1f %7.1f%%\n",
        n, e, fs, fr_, fr / 1024, br_, br / 1024, 100 * fr_ / br_
      if (NR > 1) printf "  %d rounds, each round'"'"'s ratio:%s\n", NR, each
      if (old != "") {
        or_ = oe / os
        printf "%-10s %-10d %10.2f %12.0f %12.1f %12s %12s %7.1f%%   (older build: %s)\n",
          "  old", oe, os, or_, orss / 1024, "", "", 100 * or_ / br_, old
        printf "  this build over the older: %.2fx events/s (medians)", fr_ / or_
        if (NR > 1) printf "; each round:%s; the older build'"'"'s ratio each round:%s", each_ab, each_old
        printf "\n"
      }
    }' "$rounds"
done

printf '\n%-10s %10s %10s %10s %12s\n' record_mb lines fin_s mb_per_s fin_rss_mb
for mb in ${RECORD_MB-256 2048}; do
  home="$WORK/record-$mb"
  rm -rf "$home" && mkdir -p "$home"
  # The agent's own place for the basic session's transcript (only that
  # shape is followed, and its lines name that session).
  sid=82655d0f-45cd-404f-9e4e-e90fea255247
  transcript="$home/claude/projects/-bench/$sid.jsonl"
  mkdir -p "$(dirname "$transcript")"
  lines=$(python3 - "$transcript" "$mb" <<'PY'
import json, sys
out, mb = sys.argv[1], int(sys.argv[2])
src = [json.loads(l) for l in open("tests/fixtures/records/claude-code/basic.jsonl")]
src = [l for l in src if l.get("type") in ("user", "assistant")]
n, size = 0, 0
with open(out, "w") as f:
    while size < mb << 20:
        for l in src:
            l = dict(l)
            l["uuid"] = f"u-{n}"
            if l["type"] == "assistant":
                m = dict(l["message"]); m["id"] = f"msg-{n}"; l["message"] = m
            text = json.dumps(l, separators=(",", ":")) + "\n"
            f.write(text); size += len(text); n += 1
print(n)
PY
)
  printf '{"session_id":"%s","transcript_path":"%s","hook_event_name":"SessionStart","source":"startup"}' \
    "$sid" "$transcript" | HARNERY_HOME="$home" "$BIN/harnery-hook" claude-code
  sync
  # One run reads the whole record here (a run's default share of one
  # session's record is 64 MiB): the figure is the follower's throughput.
  HARNERY_HOME="$home" HARNERY_NOW=2026-12-01T00:00:00Z HARNERY_RECORD_RUN_BYTES=$((mb << 21)) \
    /usr/bin/time -v "$BIN/harnery" finalize --json >"$WORK/record-$mb.json" 2>"$WORK/record-$mb.time"
  fs=$(secs "$WORK/record-$mb.time")
  awk -v mb="$mb" -v n="$lines" -v fs="$fs" -v fr="$(rss_kb "$WORK/record-$mb.time")" 'BEGIN {
    printf "%-10d %10d %10.2f %10.1f %12.1f\n", mb, n, fs, mb / fs, fr / 1024 }'
  rm -rf "$home"
done
echo "raw outputs: $WORK"
