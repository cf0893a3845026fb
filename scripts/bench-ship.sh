#!/usr/bin/env bash
# Benchmark `harnery ship` against a same-run baseline of psql's \copy.
#
# For each size (default: 1000000 signals over 1000 sessions):
#   1. write the signals with examples/bench_spool.rs and finalize them
#      (neither timed),
#   2. start a fresh PostgreSQL (initdb into a temporary directory, a Unix
#      socket there; as the postgres user when run as root),
#   3. baseline: the same event rows written to a file in COPY text format
#      (not timed), then `psql -c '\copy harnery.events … FROM file'` into
#      an empty database with the same central schema, under
#      /usr/bin/time -v,
#   4. `harnery ship` of the ledger into another empty database, under
#      /usr/bin/time -v (events, then the derived sessions, spans and
#      receipts; all of it is in the time).
# Prints one table: event rows, seconds, rows/s, peak RSS, and ship's
# rows/s as a share of the baseline's (the goal: at least 50%).
#
# Usage: scripts/bench-ship.sh [sizes...]   (needs /usr/bin/time, psql,
# initdb and pg_ctl, python3; about 7 GB free disk for the 1M size)
set -euo pipefail

cd "$(dirname "$0")/.."
SIZES=("${@:-1000000}")
SESSIONS=${SESSIONS:-1000}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-ship.XXXXXX)}
mkdir -p "$WORK"
chmod 755 "$WORK"

cargo build --release --quiet --bin harnery --example bench_spool
BIN=$PWD/target/release

. scripts/time-v.sh

PGBIN=$(dirname "$(command -v initdb || ls /usr/lib/postgresql/*/bin/initdb | tail -1)")
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

PGDIR="$WORK/pg"
start_pg() {
  rm -rf "$PGDIR" && mkdir -p "$PGDIR/s"
  [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$PGDIR"
  as_pg "$PGBIN/initdb" -D "$PGDIR/data" -U harnery --auth=trust -E UTF8 >/dev/null
  as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/log" \
    -o "-k $PGDIR/s -c listen_addresses='' -c max_wal_size=4GB" -w start >/dev/null
}
stop_pg() { [ -d "$PGDIR/data" ] && as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" -m fast -w stop >/dev/null 2>&1; true; }
trap stop_pg EXIT
target() { echo "host=$PGDIR/s user=harnery dbname=$1 sslmode=disable"; }

printf '%-9s %-9s %-10s %9s %10s %10s %8s\n' signals rows command secs rows_per_s peak_mb share
for n in ${SIZES[@]}; do
  home="$WORK/home-$n"
  rm -rf "$home" && mkdir -p "$home"
  "$BIN/examples/bench_spool" "$home" "$n" "$SESSIONS" >/dev/null
  HARNERY_HOME="$home" HARNERY_NOW=2026-12-01T00:00:00Z "$BIN/harnery" finalize >/dev/null
  db="$home/ledgers/v2/ledger.sqlite"
  rows_file="$WORK/rows-$n.copy"
  # The rows ship sends, in COPY text format (bytea as hex).
  python3 - "$db" "$rows_file" <<'PY'
import sqlite3, sys
db, out = sys.argv[1], sys.argv[2]
c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
genesis = c.execute("SELECT value FROM meta WHERE key = 'genesis_id'").fetchone()[0]
def esc(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
with open(out, "w") as f:
    for seq, id_, ad, sid, off, ty, t, js, prev, h in c.execute(
        "SELECT seq, id, adapter, session_id, offset, type, time_unix_ns, CAST(json AS BLOB), prev_hash, hash FROM events ORDER BY seq"):
        f.write("\t".join(["host_bench", genesis, str(seq), esc(id_), esc(ad), esc(sid), str(off), esc(ty), str(t),
                           "\\\\x" + js.hex(), "\\\\x" + prev.hex(), "\\\\x" + h.hex(), "\\N", "\\N"]) + "\n")
PY
  rows=$(wc -l <"$rows_file")
  start_pg
  psql -q -h "$PGDIR/s" -U harnery -d postgres -c "CREATE DATABASE baseline" -c "CREATE DATABASE ship"
  # The baseline's database gets the same central schema (a ship of an empty home).
  empty="$WORK/empty-$n"; mkdir -p "$empty"
  HARNERY_HOME="$empty" "$BIN/harnery" ship --to "$(target baseline)" >/dev/null
  sync
  /usr/bin/time -v psql -q -h "$PGDIR/s" -U harnery -d baseline -c \
    "\\copy harnery.events (host_id, genesis_id, seq, event_id, adapter, session_id, event_offset, type, time_unix_ns, json, prev_hash, hash, masked, shipped_digest) FROM '$rows_file'" \
    >/dev/null 2>"$WORK/baseline-$n.time"
  sync
  HARNERY_HOME="$home" /usr/bin/time -v "$BIN/harnery" ship --to "$(target ship)" >"$WORK/ship-$n.out" 2>"$WORK/ship-$n.time"
  held=$(psql -tA -h "$PGDIR/s" -U harnery -d ship -c "SELECT count(*) FROM harnery.events")
  [ "$held" = "$rows" ] || { echo "ship holds $held rows, expected $rows" >&2; exit 1; }
  bs=$(secs "$WORK/baseline-$n.time"); ss=$(secs "$WORK/ship-$n.time")
  brate=$(awk -v r="$rows" -v s="$bs" 'BEGIN { printf "%.0f", r / s }')
  srate=$(awk -v r="$rows" -v s="$ss" 'BEGIN { printf "%.0f", r / s }')
  share=$(awk -v a="$srate" -v b="$brate" 'BEGIN { printf "%.0f%%", 100 * a / b }')
  printf '%-9s %-9s %-10s %9s %10s %10s %8s\n' "$n" "$rows" psql-copy "$bs" "$brate" "$(rss_mb "$WORK/baseline-$n.time")" -
  printf '%-9s %-9s %-10s %9s %10s %10s %8s\n' "$n" "$rows" ship "$ss" "$srate" "$(rss_mb "$WORK/ship-$n.time")" "$share"
  stop_pg
  rm -rf "$home" "$rows_file" "$PGDIR"
done
echo "raw outputs: $WORK"
