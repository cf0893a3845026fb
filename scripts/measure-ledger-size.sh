#!/usr/bin/env bash
# The home's size after one default `harnery finalize` (raw bytes kept,
# nothing run by hand), on the peer bench's data (issue 51): SESSIONS
# (default 200) real-shaped Claude Code sessions of about MB (default 170)
# megabytes built by scripts/peer/make-sessions.py from the real captures in
# tests/fixtures, their hook payloads sent through the hook an install
# registers (scripts/peer/feed-hooks.py). Prints the home's bytes (the
# ledger's files, the raw archive, the search index, the rest), the
# ledger's tables and indexes by size (sqlite3's dbstat), and the event
# rows' stored bytes (and the blocks the compaction pass packed them in).
#
# Then, unless READS=0, the read side on that home: `export --format
# jsonl`, `export --format otlp` (it reads trace chunks) and `verify`, the
# median of RUNS (default 5) wall times each.
#
# Usage: scripts/measure-ledger-size.sh
#   env: BIN=target/release (default: a release build), BENCH_DIR=dir (kept;
#        the data is reused from it), SESSIONS, MB, SEED=51, READS, RUNS
# Needs python3, sqlite3 (with dbstat), du.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SESSIONS=${SESSIONS:-200}
MB=${MB:-170}
SEED=${SEED:-51}
RUNS=${RUNS:-5}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-ledger-size.XXXXXX)}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
for f in scripts/peer/make-sessions.py scripts/peer/feed-hooks.py scripts/peer/queries.txt; do
  [ -f "$f" ] || { echo "measure-ledger-size: needs $f (the peer bench's data)" >&2; exit 2; }
done
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet --bins
  BIN=$ROOT/target/release
fi

DATA=$WORK/data-$SESSIONS-$MB-$SEED
if [ ! -e "$DATA/.done" ]; then
  rm -rf "$DATA" && mkdir -p "$DATA"
  python3 scripts/peer/make-sessions.py "$ROOT/tests/fixtures" "$DATA" "$SESSIONS" "$MB" "$SEED" \
    scripts/peer/queries.txt >/dev/null
  touch "$DATA/.done"
fi
install_home=$WORK/install-home
rm -rf "$install_home" && mkdir -p "$install_home"
HOME=$install_home PATH="$BIN:$PATH" HARNERY_HOME="$install_home/.harnery" \
  "$BIN/harnery" install claude-code --no-schedule >/dev/null
home=$WORK/home
rm -rf "$home" && mkdir -p "$home"
HOME=$install_home HARNERY_HOME=$home python3 scripts/peer/feed-hooks.py \
  "$install_home/.claude/settings.json" "$DATA/hooks.jsonl" "$WORK/hooks.json" >/dev/null
sync
HOME=$install_home HARNERY_HOME=$home "$BIN/harnery" finalize >"$WORK/finalize.out"

live=$home/ledgers/v2
bytes() { du -sb "$@" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }
total=$(bytes "$home")
ledger=$(bytes "$live"/ledger.sqlite*)
raw=$(bytes "$live/raw")
search=$(bytes "$home/search")
printf 'transcripts %s bytes, %s sessions; %s\n' "$(bytes "$DATA/claude")" "$SESSIONS" "$(tail -2 "$WORK/finalize.out" | head -1)"
printf '%-28s %12s\n' "home after finalize" "$total" "ledger files" "$ledger" "raw archive" "$raw" \
  "search index" "$search" "the rest" "$((total - ledger - raw - search))"
echo
sqlite3 "$live/ledger.sqlite" \
  "SELECT printf('%-36s %12d', name, sum(pgsize)) FROM dbstat GROUP BY name ORDER BY sum(pgsize) DESC LIMIT 14"
echo
if sqlite3 "$live/ledger.sqlite" "SELECT 1 FROM sqlite_schema WHERE name = 'event_store'" | grep -q 1; then
  sqlite3 "$live/ledger.sqlite" \
    "SELECT printf('event rows %d, bodies %d bytes (%.0f a row), dictionaries %d (%d bytes)', count(*), sum(length(body)), avg(length(body)), (SELECT count(*) FROM event_dicts), (SELECT coalesce(sum(length(dict)), 0) FROM event_dicts)) FROM event_store"
  if sqlite3 "$live/ledger.sqlite" "SELECT 1 FROM sqlite_schema WHERE name = 'event_blocks'" | grep -q 1; then
    sqlite3 "$live/ledger.sqlite" \
      "SELECT printf('packed rows %d in %d blocks (%d bytes)', (SELECT count(*) FROM event_store WHERE substr(body, 1, 1) = x'02'), count(*), coalesce(sum(length(body)), 0)) FROM event_blocks"
  fi
else
  sqlite3 "$live/ledger.sqlite" \
    "SELECT printf('event rows %d, plain text %d bytes (%.0f a row)', count(*), sum(length(CAST(json AS BLOB))), avg(length(CAST(json AS BLOB)))) FROM events"
fi

[ "${READS:-1}" = 0 ] && exit 0
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
echo
for cmd in "export --format jsonl" "export --format otlp" "verify"; do
  : >"$WORK/t"
  for _ in $(seq "$RUNS"); do
    t0=$(date +%s%N)
    # shellcheck disable=SC2086
    HARNERY_HOME=$home "$BIN/harnery" $cmd >/dev/null
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000)) >>"$WORK/t"
  done
  printf '%-24s median %s ms of %s runs\n' "$cmd" "$(median <"$WORK/t")" "$RUNS"
done
echo "outputs: $WORK"
