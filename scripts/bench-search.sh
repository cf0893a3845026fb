#!/usr/bin/env bash
# Benchmark `harnery search` against `rg` over the same text, in one run.
#
# For one size (default 1000000 signals over 1000 sessions):
#   1. write the signals with examples/bench_search_spool.rs (corpus prompts,
#      commands and outputs with fresh ids, plus corpus-transcript words so
#      no two events carry the same text) and finalize them (timed: finalize
#      also indexes up to search::FINALIZE_BUDGET rows of them),
#   2. make the index again from the ledger alone (`search --reindex`, timed),
#   3. export the ledger as JSON lines (the same text, as `export | rg` reads it),
#   4. run 20 queries (words, phrases, prefixes, path and flag substrings,
#      filters) REPEAT times each (default 5), alternating with the same
#      pattern through `rg -i` over the export, stdout to /dev/null, each
#      under /usr/bin/time -v: per query the median wall time; over the 20
#      medians p50 and p99 (nearest rank) for each tool; the largest peak RSS
#      of any search,
#   5. the index's size against the text it indexes.
# Prints the per-query table, then the summary; `ratio` is rg's time over
# search's (higher: search is faster).
#
# Usage: scripts/bench-search.sh [signals]    (needs /usr/bin/time, rg, python3)
set -euo pipefail

cd "$(dirname "$0")/.."
N=${1:-1000000}
SESSIONS=${SESSIONS:-1000}
REPEAT=${REPEAT:-5}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-search.XXXXXX)}
for tool in rg python3 /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "bench-search: needs $tool (apt-get install ripgrep time python3)" >&2; exit 2; }
done

cargo build --release --quiet --bin harnery --example bench_search_spool
BIN=$PWD/target/release
. scripts/time-v.sh

home="$WORK/home"
rm -rf "$home" && mkdir -p "$home"
export HARNERY_HOME="$home" HARNERY_NOW=2026-12-01T00:00:00Z HARNERY_RECORDS=off NO_COLOR=1
"$BIN/examples/bench_search_spool" "$home" "$N" "$SESSIONS"
/usr/bin/time -v "$BIN/harnery" finalize >/dev/null 2>"$WORK/finalize.time"
/usr/bin/time -v "$BIN/harnery" search --reindex 2>"$WORK/reindex.time"
"$BIN/harnery" export --format jsonl >"$WORK/export.jsonl"
events=$(wc -l <"$WORK/export.jsonl")

# name | harnery search arguments (one per line after the name) | rg pattern arguments
QUERIES=(
  "word-commit|commit|-w commit"
  "word-repository|repository|-w repository"
  "word-permission|permission|-w permission"
  "word-subagent|subagent|-w subagent"
  "two-words|git commit|-w commit"
  "phrase-exit-code|'\"exit code\"'|-F exit code"
  "phrase-run-echo|'\"run echo\"'|-F run echo"
  "phrase-pull-request|'\"pull request\"'|-F pull request"
  "prefix-compact|compact*|\\bcompact"
  "prefix-instruct|instruct*|\\binstruct"
  "path-note|note.txt|-F note.txt"
  "path-capture|/tmp/cc-capture|-F /tmp/cc-capture"
  "path-runs|runs/file-tools|-F runs/file-tools"
  "flag-redirect|'\"err >&2\"'|-F err >&2"
  "substring-allowed|not-allowed|-F not-allowed"
  "kind-prompt|commit --kind prompt|-w commit"
  "tool-bash|echo --kind tool-input --tool Bash|-w echo"
  "failed|exit --failed|-w exit"
  "session|hi --session bench-000500|-w hi"
  "sort-time|commit --sort time|-w commit"
)

timed() { # timed NAME CMD...
  local name=$1; shift
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

median_ms() {
  sort -n "$WORK/$1.walls" | awk '{ a[NR] = $1 } END {
    m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
    printf "%.1f", m / 1e6 }'
}

set -f # query arguments such as compact* are not file globs
for _ in $(seq "$REPEAT"); do
  for q in "${QUERIES[@]}"; do
    IFS='|' read -r name sargs rargs <<<"$q"
    eval "set -- $sargs"
    timed "search-$name" "$BIN/harnery" search "$@"
    case "$rargs" in
      "-F "*) timed "rg-$name" rg -i -F -- "${rargs#-F }" "$WORK/export.jsonl" ;;
      "-w "*) timed "rg-$name" rg -i -w -- "${rargs#-w }" "$WORK/export.jsonl" ;;
      *) timed "rg-$name" rg -i -- "$rargs" "$WORK/export.jsonl" ;;
    esac
  done
done

set +f
printf '%-22s %10s %10s %7s %9s\n' query search_ms rg_ms ratio peak_mb
: >"$WORK/search.ms"; : >"$WORK/rg.ms"; peak=0
for q in "${QUERIES[@]}"; do
  name=${q%%|*}
  s=$(median_ms "search-$name"); r=$(median_ms "rg-$name")
  echo "$s" >>"$WORK/search.ms"; echo "$r" >>"$WORK/rg.ms"
  kb=$(rss_kb "$WORK/search-$name.time"); [ "$kb" -gt "$peak" ] && peak=$kb
  printf '%-22s %10s %10s %7s %9s\n' "$name" "$s" "$r" \
    "$(awk -v a="$r" -v b="$s" 'BEGIN { printf "%.1f", a / b }')" "$(rss_mb "$WORK/search-$name.time")"
done

pct() { # pct FILE P: nearest-rank percentile
  sort -n "$1" | awk -v p="$2" '{ a[NR] = $1 } END { r = int((p / 100) * NR + 0.999999); if (r < 1) r = 1; print a[r] }'
}
read -r docs text_bytes < <(python3 -c '
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(*c.execute("SELECT count(*), sum(length(CAST(text AS BLOB))) FROM texts").fetchone())
' "$home/search/index.sqlite")
# The -wal and -shm files come and go with the last connection.
index_bytes=$(find "$home/search" -name 'index.sqlite*' -printf '%s\n' | awk '{ s += $1 } END { print s }')
ledger_bytes=$(du -cb "$home"/ledgers/v2/ledger.sqlite* | tail -1 | cut -f1)
export_bytes=$(stat -c %s "$WORK/export.jsonl")
sp50=$(pct "$WORK/search.ms" 50); sp99=$(pct "$WORK/search.ms" 99)
rp50=$(pct "$WORK/rg.ms" 50); rp99=$(pct "$WORK/rg.ms" 99)
echo
echo "signals $N, events $events, sessions $SESSIONS, rounds $REPEAT"
echo "finalize (drain, and its per-run budget of rows indexed): $(secs "$WORK/finalize.time") s, peak $(rss_mb "$WORK/finalize.time") MB"
echo "search --reindex (index from the ledger): $(secs "$WORK/reindex.time") s, peak $(rss_mb "$WORK/reindex.time") MB"
echo "search p50 $sp50 ms, p99 $sp99 ms; rg p50 $rp50 ms, p99 $rp99 ms"
awk -v a="$rp50" -v b="$sp50" -v c="$rp99" -v d="$sp99" \
  'BEGIN { printf "rg / search: p50 %.1fx, p99 %.1fx\n", a / b, c / d }'
echo "peak RSS of a search: $(awk -v k="$peak" 'BEGIN { printf "%.1f", k / 1024 }') MB"
awk -v i="$index_bytes" -v t="$text_bytes" -v n="$docs" -v l="$ledger_bytes" -v e="$export_bytes" 'BEGIN {
  printf "index %.1f MB for %d docs, %.1f MB of text: %.2fx the text; ledger %.1f MB, export %.1f MB\n",
    i / 1048576, n, t / 1048576, i / t, l / 1048576, e / 1048576 }'
echo "raw outputs: $WORK"
