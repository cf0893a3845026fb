#!/usr/bin/env bash
# Write a HARNERY_HOME whose raw archive an older build compacted file by
# file (each batch a directory of `NNNNNNNN.segz`, one per spool file), for
# the tests that repack it into one file per batch. Only a build from
# before the packing writes this form: run it with that build's binaries,
# once, and commit the result under tests/fixtures/raw-archive/; a
# committed fixture is never rewritten.
#
#   BIN=<dir with an older harnery and harnery-hook> \
#     scripts/make-raw-archive-fixture.sh tests/fixtures/raw-archive/per-file
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: BIN=DIR make-raw-archive-fixture.sh OUT_DIR}
bin=${BIN:?set BIN to the directory of a build that compacts file by file}
[ -e "$out" ] && { echo "$out exists; a shipped fixture is never rewritten" >&2; exit 2; }
home=$(mktemp -d)
export HARNERY_HOME=$home HARNERY_NOW=2026-11-30T12:00:00Z HARNERY_RECORDS=off
claude() { while IFS= read -r line; do [ -n "$line" ] && printf '%s' "$line" | "$bin/harnery-hook" claude-code; done < "tests/fixtures/claude-code/$1/hooks.jsonl"; }
# Two batches of several spool files each, every file compressed alone.
claude tool-failure
claude hook-events
"$bin/harnery" finalize > /dev/null
claude permission-denied
claude hook-block
"$bin/harnery" finalize > /dev/null
"$bin/harnery" archive status
find "$home/ledgers/v2/raw" -type f | grep -qv '/[0-9]*\.segz$' && { echo "a raw archive file is not compressed alone" >&2; exit 1; }
"$bin/harnery" verify > /dev/null
# The WAL folded in: the fixture is the database file alone.
python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_checkpoint(TRUNCATE)"); c.close()' "$home/ledgers/v2/ledger.sqlite"
rm -f "$home/ledgers/v2/ledger.sqlite-wal" "$home/ledgers/v2/ledger.sqlite-shm"
mkdir -p "$out"
cp -a "$home" "$out/home"
rm -rf "$home"
