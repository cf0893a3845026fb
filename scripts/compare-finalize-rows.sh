#!/usr/bin/env bash
# Prove that two builds' `finalize` store the same bytes: one spool
# (examples/bench_spool.rs, SIGNALS over SESSIONS Claude Code sessions),
# copied twice, drained by each build (`finalize --no-compact`, the same
# HARNERY_NOW), then every stored row compared with Python's sqlite3,
# bytes as stored: the events (`event_store`: ids, times, compressed
# bodies, chain links, batch numbers), the producer states and trace
# chunks (compressed), the dictionaries, the raw signals (less their
# archive offsets, see below) and sessions; and
# the two homes' `export --format jsonl`. Batch names carry a fresh id per
# run and are left out; everything else must be equal.
#
# Usage: scripts/compare-finalize-rows.sh OLD_HARNERY NEW_HARNERY [SIGNALS] [SESSIONS]
#   (defaults 200000 and 1000; the spool writer from this checkout's release build)
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 signals=${3:-200000} sessions=${4:-1000}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-rows.XXXXXX)}
cargo build --release --quiet --example bench_spool
spool="$WORK/spool"
rm -rf "$spool" "$WORK/old" "$WORK/new" && mkdir -p "$spool"
"${CARGO_TARGET_DIR:-target}/release/examples/bench_spool" "$spool" "$signals" "$sessions" >/dev/null
for side in old new; do
  cp -a "$spool" "$WORK/$side"
  bin=$old
  [ "$side" = new ] && bin=$new
  HARNERY_HOME="$WORK/$side" HARNERY_NOW=2026-12-01T00:00:00Z "$bin" finalize --no-compact --json >"$WORK/$side.json"
  HARNERY_HOME="$WORK/$side" HARNERY_NOW=2026-12-01T00:00:00Z "$bin" export --format jsonl >"$WORK/$side.export.jsonl"
done
python3 - "$WORK/old/ledgers/v2/ledger.sqlite" "$WORK/new/ledgers/v2/ledger.sqlite" <<'PY'
import hashlib, sqlite3, sys
tables = {
    "event_store": "seq, id, adapter, session_id, offset, type, time_unix_ns, body, prev_hash, hash, batch_k",
    "producer_state_store": "adapter, session_id, state",
    "trace_chunk_store": "adapter, session_id, first_offset, events, notes, wholes, entries",
    "event_dicts": "id, trained_at_seq, samples, dict",
    # Not archive_at: where a signal sits in its batch's raw archive moves
    # between two runs of one build for the record pass's own signals
    # (their spool envelopes carry the spooling process's facts).
    "raw_signals": "record_digest, adapter, session_key, event_name, received_unix_ns, env, event_ids, duplicate_of",
    "sessions": "*",
}
def digest(path, table, cols):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    order = "1, 2" if table != "sessions" else "1"
    h, n = hashlib.blake2b(), 0
    for row in db.execute(f"SELECT {cols} FROM {table} ORDER BY {order}"):
        h.update(repr(row).encode())
        n += 1
    return n, h.hexdigest()[:16]
bad = 0
for table, cols in tables.items():
    a, b = digest(sys.argv[1], table, cols), digest(sys.argv[2], table, cols)
    same = a == b
    bad += not same
    print(f"{table}: {a[0]} rows, {'the same bytes' if same else f'DIFFER ({a} vs {b})'}")
sys.exit(1 if bad else 0)
PY
if cmp -s "$WORK/old.export.jsonl" "$WORK/new.export.jsonl"; then
  echo "export --format jsonl: $(wc -l <"$WORK/new.export.jsonl") lines, the same bytes"
else
  echo "export --format jsonl: DIFFERS"
  exit 1
fi
echo "work: $WORK"
