#!/usr/bin/env bash
# The raw archive's size against the transcripts it holds, as a default
# user gets it: a home built from the corpus' real Claude Code transcripts
# (as scripts/bench-archive.sh builds it, COPIES copies with fresh session
# ids), then
#   1. `finalize --no-compact`: the archive as the commit path writes it;
#   2. plain `finalize` runs (each packs every batch left, unless
#      `[archive] compact_budget_ms` sets a budget) until every archive file
#      is compressed, counting the runs; then `verify`.
# Prints each archive size and its ratio to the transcripts' bytes.
#
# Usage: scripts/measure-default-compaction.sh   (BIN=target/debug to skip the release build)
set -euo pipefail
cd "$(dirname "$0")/.."
COPIES=${COPIES:-20}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-default-compaction.XXXXXX)}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet --bins
  BIN=$PWD/target/release
fi
home="$WORK/home"
rm -rf "$home" && mkdir -p "$home"
python3 - "$home" "$COPIES" >"$WORK/hooks.txt" <<'PY'
import glob, os, re, sys, uuid
home, copies = sys.argv[1], int(sys.argv[2])
srcs = sorted(p for p in glob.glob("tests/fixtures/records/claude-code/*.jsonl")
              if not p.endswith(".stream.jsonl"))
for c in range(copies):
    for p in srcs:
        text = open(p).read()
        m = re.search(r'"sessionId":"([^"]+)"', text)
        if not m:
            continue
        sid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{p}#{c}"))
        out = f"{home}/claude/projects/-bench/{sid}.jsonl"
        os.makedirs(os.path.dirname(out), exist_ok=True)
        open(out, "w").write(text.replace(m.group(1), sid))
        print(f'{{"session_id":"{sid}","transcript_path":"{out}","hook_event_name":"SessionStart","source":"startup"}}')
PY
while IFS= read -r line; do
  printf '%s' "$line" | HARNERY_HOME="$home" "$BIN/harnery-hook" claude-code
done <"$WORK/hooks.txt"
transcripts=$(du -sb "$home/claude" | cut -f1)
export HARNERY_HOME="$home" HARNERY_NOW=2026-12-01T00:00:00Z HARNERY_RECORD_RUN_BYTES=$((1 << 40))
"$BIN/harnery" finalize --no-compact >/dev/null
size() { "$BIN/harnery" archive status --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["bytes_on_disk"], d["files"], d["compressed_files"])'; }
read -r before files _ < <(size)
runs=0
while :; do
  read -r after files compressed < <(size)
  [ "$compressed" -eq "$files" ] && break
  "$BIN/harnery" finalize >/dev/null
  runs=$((runs + 1))
done
"$BIN/harnery" verify >/dev/null
ratio() { awk -v a="$1" -v b="$transcripts" 'BEGIN { printf "%.2f", a / b }'; }
printf 'transcripts %s bytes in %s sessions\n' "$transcripts" "$(wc -l <"$WORK/hooks.txt")"
printf 'finalize --no-compact: archive %s bytes on disk, %sx the transcripts\n' "$before" "$(ratio "$before")"
printf 'after %s default finalize run(s): archive %s bytes on disk, %sx the transcripts (%s files, all compressed); verify ok\n' \
  "$runs" "$after" "$(ratio "$after")" "$files"
