#!/usr/bin/env bash
# Peak memory of `harnery finalize` on one huge transcript line.
#
# In a temporary home, a Claude Code transcript at the agent's own place
# (`<config>/projects/<project>/<session>.jsonl`) holding one assistant
# line of LINE_MB MiB (default 50) of text, named by one SessionStart hook
# signal, is followed by one `finalize` under /usr/bin/time -v. The same is
# run on a line just under the line ceiling (8 MiB, the longest line read
# into memory: the worst case) and, as the baseline, on a 4 KiB line.
# Prints each peak RSS and its ratio to the baseline; the target is every
# peak under 128 MiB (docs/design/records.md, "Memory").
#
# Usage: scripts/bench-record-line.sh   (needs /usr/bin/time, python3)
#   BIN=target/debug skips the release build (figures are then not the
#   shipped ones).
set -euo pipefail

cd "$(dirname "$0")/.."
LINE_MB=${LINE_MB:-50}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-line.XXXXXX)}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet --bins
  BIN=target/release
fi

. scripts/time-v.sh

# finalize_one NAME TEXT_BYTES: one session, one line of TEXT_BYTES of text.
finalize_one() {
  local name=$1 bytes=$2
  local home="$WORK/$name/harnery" sid="0b5e55ed-0000-4000-8000-00000000000${#name}"
  local transcript="$WORK/$name/claude/projects/-bench/$sid.jsonl"
  rm -rf "$WORK/$name" && mkdir -p "$home" "$(dirname "$transcript")"
  python3 - "$transcript" "$sid" "$bytes" <<'PY'
import json, sys
path, sid, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
head = {"type": "assistant", "sessionId": sid, "uuid": "u-1",
        "timestamp": "2026-12-01T00:00:00.000Z",
        "message": {"id": "msg-1", "role": "assistant", "model": "m",
                    "content": [{"type": "text", "text": "@"}]}}
text = json.dumps(head, separators=(",", ":"))
before, after = text.split('"@"')
with open(path, "w") as f:
    f.write(before + '"')
    chunk = "x" * (1 << 20)
    left = n
    while left > 0:
        f.write(chunk[: min(left, len(chunk))]); left -= len(chunk)
    f.write('"' + after + "\n")
PY
  printf '{"session_id":"%s","transcript_path":"%s","hook_event_name":"SessionStart","source":"startup"}' \
    "$sid" "$transcript" | HARNERY_HOME="$home" "$BIN/harnery-hook" claude-code
  HARNERY_HOME="$home" HARNERY_RECORDS=on HARNERY_NOW=2026-12-01T00:00:00Z \
    /usr/bin/time -v "$BIN/harnery" finalize --json >"$WORK/$name.json" 2>"$WORK/$name.time"
  du -sk "$home/ledgers" | awk '{print $1}' >"$WORK/$name.ledger_kb"
}

finalize_one small 4096
finalize_one ceiling $(((8 << 20) - 1024))
finalize_one huge $((LINE_MB << 20))

base=$(rss_kb "$WORK/small.time")
printf '%-10s %12s %12s %12s %10s\n' case line_mb peak_rss_mb vs_small ledger_mb
for case in "small 4096" "ceiling $(((8 << 20) - 1024))" "huge $((LINE_MB << 20))"; do
  set -- $case
  awk -v n="$1" -v bytes="$2" -v r="$(rss_kb "$WORK/$1.time")" -v b="$base" \
      -v l="$(cat "$WORK/$1.ledger_kb")" 'BEGIN {
    printf "%-10s %12.2f %12.1f %11.2fx %10.1f %s\n", n, bytes / 1048576, r / 1024, r / b,
      l / 1024, (r / 1024 < 128 ? "" : "OVER 128 MiB") }'
done
echo "raw outputs: $WORK"
