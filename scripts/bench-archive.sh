#!/usr/bin/env bash
# Benchmark the compressed raw archive (`harnery archive compact`).
#
# Builds a home from the corpus' real Claude Code transcripts
# (tests/fixtures/records/claude-code/*.jsonl), COPIES times over with a
# fresh session id each (default 60 copies of 18 transcripts), each named
# by one SessionStart hook signal so that `finalize` follows and archives
# it. Then, in one run:
#   1. `finalize` (timed): signals/s, uncompressed archive bytes;
#   2. for each zstd level in LEVELS (default "1 3 9 19"), on a copy of
#      that home: `archive compact --level L` (timed), archive bytes after,
#      the ratio before/after;
#   3. `verify` (timed) on the uncompressed home and on the home compacted
#      at the default level;
#   4. finalize throughput with compression against without: finalize
#      alone does not compress (it hard-links the spool files, the commit
#      path is unchanged), so "with" is finalize followed by a compact of
#      the same home, signals / (finalize s + compact s).
# Prints ratios against the uncompressed baseline measured here.
#
# Usage: scripts/bench-archive.sh   (needs /usr/bin/time, python3)
set -euo pipefail

cd "$(dirname "$0")/.."
COPIES=${COPIES:-60}
LEVELS=${LEVELS:-1 3 9 19}
DEFAULT_LEVEL=9
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-bench-archive.XXXXXX)}

# BIN=target/debug measures sizes without a release build (times are then
# not representative).
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet --bins
  BIN=$PWD/target/release
fi
. scripts/time-v.sh

home="$WORK/home"
rm -rf "$home" && mkdir -p "$home"
signals=$(python3 - "$home" "$COPIES" <<'PY'
import glob, os, re, sys, uuid
home, copies = sys.argv[1], int(sys.argv[2])
srcs = sorted(p for p in glob.glob("tests/fixtures/records/claude-code/*.jsonl")
              if not p.endswith(".stream.jsonl"))
hooks = []
for c in range(copies):
    for p in srcs:
        text = open(p).read()
        m = re.search(r'"sessionId":"([^"]+)"', text)
        if not m:
            continue
        sid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{p}#{c}"))
        text = text.replace(m.group(1), sid)
        out = f"{home}/claude/projects/-bench/{sid}.jsonl"
        os.makedirs(os.path.dirname(out), exist_ok=True)
        open(out, "w").write(text)
        hooks.append(f'{{"session_id":"{sid}","transcript_path":"{out}","hook_event_name":"SessionStart","source":"startup"}}')
open(f"{home}/../hooks.txt", "w").write("\n".join(hooks) + "\n")
print(len(hooks))
PY
)
while IFS= read -r line; do
  printf '%s' "$line" | HARNERY_HOME="$home" "$BIN/harnery-hook" claude-code
done <"$WORK/hooks.txt"
transcripts=$(du -sb "$home/claude" | cut -f1)
sync

export HARNERY_NOW=2026-12-01T00:00:00Z HARNERY_RECORD_RUN_BYTES=$((1 << 40))
HARNERY_HOME="$home" /usr/bin/time -v "$BIN/harnery" finalize --no-compact --json \
  >"$WORK/fin.json" 2>"$WORK/fin.time"
fin_s=$(secs "$WORK/fin.time")
raw_signals=$(sqlite3 "$home/ledgers/v2/ledger.sqlite" "SELECT count(*) FROM raw_signals" 2>/dev/null \
  || python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM raw_signals').fetchone()[0])" "$home/ledgers/v2/ledger.sqlite")
before=$(du -sb "$home/ledgers/v2/raw" | cut -f1)
sync
HARNERY_HOME="$home" /usr/bin/time -v "$BIN/harnery" verify >/dev/null 2>"$WORK/verify-plain.time"
verify_plain=$(secs "$WORK/verify-plain.time")

printf 'sessions %s, raw signals %s, transcripts %s bytes\n' "$signals" "$raw_signals" "$transcripts"
printf 'finalize: %.2f s, %.0f raw signals/s; archive %s bytes uncompressed\n\n' \
  "$fin_s" "$(awk -v n="$raw_signals" -v s="$fin_s" 'BEGIN { print n / s }')" "$before"
printf '%-6s %14s %14s %10s %10s\n' level bytes_before bytes_after ratio compact_s
for level in $LEVELS; do
  h="$WORK/home-$level"
  rm -rf "$h" && cp -a "$home" "$h"
  sync
  HARNERY_HOME="$h" /usr/bin/time -v "$BIN/harnery" archive compact --level "$level" --json \
    >"$WORK/compact-$level.json" 2>"$WORK/compact-$level.time"
  after=$(du -sb "$h/ledgers/v2/raw" | cut -f1)
  cs=$(secs "$WORK/compact-$level.time")
  awk -v l="$level" -v b="$before" -v a="$after" -v s="$cs" \
    'BEGIN { printf "%-6s %14d %14d %9.1fx %10.2f\n", l, b, a, b / a, s }'
  if [ "$level" = "$DEFAULT_LEVEL" ]; then
    compact_s=$cs
    HARNERY_HOME="$h" /usr/bin/time -v "$BIN/harnery" verify >/dev/null 2>"$WORK/verify-z.time"
    verify_z=$(secs "$WORK/verify-z.time")
  fi
  [ "$level" = "$DEFAULT_LEVEL" ] || rm -rf "$h"
done
if [ -n "${compact_s:-}" ]; then
  awk -v f="$fin_s" -v c="$compact_s" -v vp="$verify_plain" -v vz="$verify_z" -v n="$raw_signals" 'BEGIN {
    printf "\nlevel %s: finalize alone %.0f signals/s; finalize then compact %.0f signals/s (%.1f%% of it)\n", '"$DEFAULT_LEVEL"', n / f, n / (f + c), 100 * f / (f + c)
    printf "verify: uncompressed %.2f s, compressed %.2f s (%.2fx)\n", vp, vz, vz / vp }'
fi
echo "raw outputs: $WORK"
