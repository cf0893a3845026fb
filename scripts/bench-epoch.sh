#!/usr/bin/env bash
# Benchmark `harnery epoch advance` on a large ledger against a same-run
# baseline that reads every file of the epoch once and hashes it
# (`b3sum`-like, with the bench's own reader: examples/bench_read_baseline
# hashes the event rows; `cat` reads the files).
#
# For each size (default 1000000 signals over 1000 sessions):
#   1. write and finalize the signals (not timed),
#   2. make the live epoch look like another contract's: its genesis and its
#      meta table name a different schema digest (as an older build's would),
#   3. write 1000 more hook records into the intake (the advance carries them),
#   4. time `harnery epoch advance` (quiesce, archive: fold, fence, manifest,
#      move, read-only; reinstall: candidate gate re-verifies the archived
#      chain; carry), and the baseline: `cat` of every epoch file to
#      /dev/null plus a one-thread read + blake3 of every event row.
# Prints one table.
#
# Usage: scripts/bench-epoch.sh [sizes...]   (needs /usr/bin/time, python3)
set -euo pipefail

cd "$(dirname "$0")/.."
SIZES=("${@:-1000000}")
SESSIONS=${SESSIONS:-1000}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-epoch.XXXXXX)}

cargo build --release --quiet --bin harnery --example bench_spool --example bench_read_baseline
BIN=$PWD/target/release

. scripts/time-v.sh

printf '%-9s %-8s %12s %10s %12s %8s\n' signals events advance_s peak_mb baseline_s ratio
for n in ${SIZES[@]}; do
  home="$WORK/home-$n"
  rm -rf "$home" && mkdir -p "$home"
  "$BIN/examples/bench_spool" "$home" "$n" "$SESSIONS" >/dev/null
  export HARNERY_HOME="$home" HARNERY_NOW=2026-12-01T00:00:00Z
  "$BIN/harnery" finalize >/dev/null
  live="$home/ledgers/v2"
  events=$(python3 - "$live" <<'PY'
import json, sqlite3, sys
live = sys.argv[1]
old = "0" * 64
g = json.load(open(f"{live}/genesis.json"))
g["schema_digest"] = old
json.dump(g, open(f"{live}/genesis.json", "w"), indent=2)
db = sqlite3.connect(f"{live}/ledger.sqlite")
db.execute("UPDATE meta SET value = ? WHERE key = 'schema_digest'", (old,))
db.commit()
print(db.execute("SELECT count(*) FROM events").fetchone()[0])
db.close()
PY
)
  "$BIN/examples/bench_spool" "$WORK/more-$n" 1000 10 >/dev/null
  cp -a "$WORK/more-$n/spool/intake/." "$home/spool/intake/"
  # Both timed commands start with a cold page cache where the machine
  # allows dropping it (root), else both warm.
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
  /usr/bin/time -v "$BIN/harnery" epoch advance >/dev/null 2>"$WORK/advance-$n.time"
  archive=$(ls -d "$home"/ledgers/v2-candidates/*)
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
  /usr/bin/time -v bash -c "find '$archive' -type f -exec cat {} + > /dev/null; '$BIN/examples/bench_read_baseline' '$archive/ledger.sqlite' hash 2>/dev/null" 2>"$WORK/base-$n.time"
  a=$(secs "$WORK/advance-$n.time"); b=$(secs "$WORK/base-$n.time")
  awk -v n="$n" -v e="$events" -v a="$a" -v b="$b" -v r="$(rss_mb "$WORK/advance-$n.time")" \
    'BEGIN { printf "%-9d %-8d %12.2f %10s %12.2f %7.2fx\n", n, e, a, r, b, a / b }'
  chmod -R u+w "$home" && rm -rf "$home" "$WORK/more-$n"
done
echo "raw outputs: $WORK"
