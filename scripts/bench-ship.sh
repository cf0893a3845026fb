#!/usr/bin/env bash
# Benchmark `harnery ship` from many hosts at once against a same-run
# baseline of psql's \copy of the same rows.
#
#   1. write SIGNALS signals over SESSIONS sessions with
#      examples/bench_spool.rs and finalize them (not timed); copy that home
#      HOSTS times (each copy becomes its own host on its first ship),
#   2. start a fresh PostgreSQL (initdb into a temporary directory, a Unix
#      socket there; as the postgres user when run as root); `harnery fleet
#      init` a database `ship` and give every host its own role (`harnery
#      fleet add-host`),
#   3. ship: all HOSTS `harnery ship` processes at once, each with its own
#      role, each under /usr/bin/time -v; timed from the first start to
#      the last exit (events, then the derived sessions, spans and receipts:
#      all of it is in the time),
#   4. check the server holds every row exactly once (per host, the local
#      row count and as many distinct seqs) and that `fleet verify` passes,
#   5. baseline: the very rows the server now holds, written to a file in
#      COPY text format (not timed), then one `psql -c '\copy harnery.events
#      FROM file'` into an empty database `baseline` with the same schema,
#      under /usr/bin/time -v,
#   6. one host whose ledger is ONE_SESSION signals in a single session,
#      shipped alone: its peak RSS (the goal: under 64 MiB whatever one
#      session's size). ONE_SESSION may list several sizes ("50000
#      200000") to show the peak stays flat; with BASE_BIN (a directory
#      holding an earlier build's `harnery`, e.g. main's), each is also
#      shipped by that build, into its own database, for a before/after
#      in the same run.
# Prints one table: event rows, seconds, rows/s, peak RSS, and ship's
# rows/s as a share of the baseline's (the goal: at least 50%).
#
# Usage: scripts/bench-ship.sh   (env: SIGNALS=20000 SESSIONS=100 HOSTS=20
# ONE_SESSION=200000 BASE_BIN=; needs /usr/bin/time, psql, initdb, pg_ctl)
set -euo pipefail

cd "$(dirname "$0")/.."
SIGNALS=${SIGNALS:-20000}
SESSIONS=${SESSIONS:-100}
HOSTS=${HOSTS:-20}
ONE_SESSION=${ONE_SESSION:-200000}
BASE_BIN=${BASE_BIN:-}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-ship.XXXXXX)}
mkdir -p "$WORK"
chmod 755 "$WORK"

cargo build --release --quiet --bin harnery --example bench_spool
BIN=$PWD/target/release

. scripts/time-v.sh

PGBIN=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | tail -1 || command -v initdb)")
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

PGDIR="$WORK/pg"
start_pg() {
  rm -rf "$PGDIR" && mkdir -p "$PGDIR/s"
  [ "$(id -u)" = 0 ] && chown -R postgres:postgres "$PGDIR"
  as_pg "$PGBIN/initdb" -D "$PGDIR/data" -U harnery --auth=trust -E UTF8 >/dev/null
  as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/log" \
    -o "-k $PGDIR/s -c listen_addresses='' -c max_wal_size=4GB -c max_connections=100" -w start >/dev/null
}
stop_pg() { [ -d "$PGDIR/data" ] && as_pg "$PGBIN/pg_ctl" -D "$PGDIR/data" -m fast -w stop >/dev/null 2>&1; true; }
trap stop_pg EXIT
target() { echo "host=$PGDIR/s user=harnery dbname=$1 sslmode=disable"; }
q() { psql -tA -h "$PGDIR/s" -U harnery -d "$1" -c "$2"; }

spool() { # home signals sessions
  rm -rf "$1" && mkdir -p "$1"
  "$BIN/examples/bench_spool" "$1" "$2" "$3" >/dev/null
  HARNERY_HOME="$1" HARNERY_NOW=2026-12-01T00:00:00Z "$BIN/harnery" finalize >/dev/null
}

base="$WORK/base"
spool "$base" "$SIGNALS" "$SESSIONS"
per_host=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM events').fetchone()[0])" "$base/ledgers/v2/ledger.sqlite")
for i in $(seq -w 1 "$HOSTS"); do rm -rf "$WORK/host-$i"; cp -a "$base" "$WORK/host-$i"; done

start_pg
q postgres "CREATE DATABASE ship" >/dev/null
q postgres "CREATE DATABASE baseline" >/dev/null
"$BIN/harnery" fleet init --url "$(target ship)" >/dev/null
"$BIN/harnery" fleet init --url "$(target baseline)" >/dev/null
for i in $(seq -w 1 "$HOSTS"); do
  "$BIN/harnery" fleet add-host "bench-$i" --url "$(target ship)" 2>/dev/null >"$WORK/url-$i"
done
# Roles use passwords; the bench server trusts local connections, so the
# printed strings work as they are.
sync
start=$(date +%s.%N)
pids=()
for i in $(seq -w 1 "$HOSTS"); do
  HARNERY_HOME="$WORK/host-$i" /usr/bin/time -v "$BIN/harnery" ship --to "$(cat "$WORK/url-$i")" \
    >"$WORK/ship-$i.out" 2>"$WORK/ship-$i.time" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { echo "a ship failed; see $WORK/ship-*.time" >&2; exit 1; }; done
end=$(date +%s.%N)
ss=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
rows=$((per_host * HOSTS))

# Every row exactly once.
check=$(q ship "SELECT count(*) FROM (SELECT host_id, count(*) AS n, count(DISTINCT seq) AS d FROM harnery.events GROUP BY host_id) t WHERE n = $per_host AND d = $per_host")
[ "$check" = "$HOSTS" ] || { echo "exactly once: $check of $HOSTS hosts hold $per_host distinct rows" >&2; exit 1; }
held=$(q ship "SELECT count(*) FROM harnery.events")
[ "$held" = "$rows" ] || { echo "the server holds $held rows, expected $rows" >&2; exit 1; }
"$BIN/harnery" fleet verify --from "$(target ship)" >"$WORK/verify.out" || { echo "fleet verify failed: $WORK/verify.out" >&2; exit 1; }
bytes=$(q ship "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'harnery.events'::regclass")

# The baseline: the same rows, one \copy.
rows_file="$WORK/rows.copy"
q ship "\\copy (SELECT * FROM harnery.events) TO '$rows_file'" >/dev/null
sync
/usr/bin/time -v psql -q -h "$PGDIR/s" -U harnery -d baseline -c \
  "\\copy harnery.events FROM '$rows_file'" >/dev/null 2>"$WORK/baseline.time"
bs=$(secs "$WORK/baseline.time")

peak=0
for i in $(seq -w 1 "$HOSTS"); do
  m=$(rss_mb "$WORK/ship-$i.time"); peak=$(awk -v a="$peak" -v b="$m" 'BEGIN { print (b > a) ? b : a }')
done

# One host, one big session (at each size; by the base build too).
one_ship() { # label bin home db
  q postgres "CREATE DATABASE $4" >/dev/null
  HARNERY_HOME="$3" /usr/bin/time -v "$2/harnery" ship --to "$(target "$4")" >/dev/null 2>"$WORK/$4.time"
  local n s
  n=$(q "$4" "SELECT count(*) FROM harnery.events")
  s=$(secs "$WORK/$4.time")
  one_lines+=("$(printf '%-26s %9s %9s %10s %10s %8s' "$1" "$n" "$s" \
    "$(awk -v r="$n" -v s="$s" 'BEGIN { printf "%.0f", r / s }')" "$(rss_mb "$WORK/$4.time")" -)")
}
one_lines=()
for size in $ONE_SESSION; do
  one="$WORK/one-$size"
  spool "$one" "$size" 1
  if [ -n "$BASE_BIN" ]; then
    base_home="$WORK/one-$size-base"
    rm -rf "$base_home" && cp -a "$one" "$base_home"
    one_ship "ship, 1 session, base" "$BASE_BIN" "$base_home" "one_base_$size"
    rm -rf "$base_home"
  fi
  one_ship "ship (1 session, 1 host)" "$BIN" "$one" "one_$size"
done

brate=$(awk -v r="$rows" -v s="$bs" 'BEGIN { printf "%.0f", r / s }')
srate=$(awk -v r="$rows" -v s="$ss" 'BEGIN { printf "%.0f", r / s }')
share=$(awk -v a="$srate" -v b="$brate" 'BEGIN { printf "%.0f%%", 100 * a / b }')
printf '%-26s %9s %9s %10s %10s %8s\n' what rows secs rows_per_s peak_mb share
printf '%-26s %9s %9s %10s %10s %8s\n' "psql \\copy (1 process)" "$rows" "$bs" "$brate" "$(rss_mb "$WORK/baseline.time")" -
printf '%-26s %9s %9s %10s %10s %8s\n' "ship ($HOSTS hosts at once)" "$rows" "$ss" "$srate" "$peak" "$share"
printf '%s\n' "${one_lines[@]}"
echo "exactly once: $HOSTS hosts x $per_host rows, each seq once; fleet verify: ok"
echo "events on disk: $bytes bytes for $rows rows ($(awk -v b="$bytes" -v r="$rows" 'BEGIN { printf "%.0f", b / r }') bytes per row, indexes included)"
echo "raw outputs: $WORK"
