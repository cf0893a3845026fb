#!/usr/bin/env bash
# Write a HARNERY_HOME that this build's contract generation wrote, for the
# epoch tests: a live epoch with sessions (one left with an open span and a
# pending end request, one clean Copilot session with a subagent) and
# undrained intake that an advance must carry. Run once per generation, when
# that generation is the current one, and commit the result under
# tests/fixtures/epoch/gen<N>/; a committed fixture is never rewritten.
#
#   scripts/make-epoch-fixture.sh tests/fixtures/epoch/gen1   (writes gen1/home; add a README.md)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: make-epoch-fixture.sh OUT_DIR}
[ -e "$out" ] && { echo "$out exists; a shipped fixture is never rewritten" >&2; exit 2; }
# A target dir of its own: a build without failpoints in target/debug would
# replace the test build's harnery-hook, and a spool test would then fail.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target/fixture}
cargo build --quiet --bin harnery --bin harnery-hook
bin=$CARGO_TARGET_DIR/debug
home=$(mktemp -d)
export HARNERY_HOME=$home HARNERY_NOW=2026-11-30T12:00:00Z
claude() { while IFS= read -r line; do [ -n "$line" ] && printf '%s' "$line" | "$bin/harnery-hook" claude-code; done < "tests/fixtures/claude-code/$1/hooks.jsonl"; }
copilot() {
  python3 - "tests/fixtures/copilot/$1/hook-capture.jsonl" <<'PY' | while IFS=$'\t' read -r event file; do "$bin/harnery-hook" copilot "$event" < "$file"; rm -f "$file"; done
import json, sys, tempfile
for line in open(sys.argv[1]):
    if not line.strip():
        continue
    v = json.loads(line)
    f = tempfile.NamedTemporaryFile(delete=False)
    f.write((v.get("stdin_raw") or "").encode())
    f.close()
    print(f"{v['event']}\t{f.name}")
PY
}
claude kill
claude basic
copilot basic-shell-openai
copilot interrupted-sigkill-1-killed
"$bin/harnery" finalize > /dev/null
# Copilot has no explicit-end salvage: its end request stays pending.
killed=$(head -c 4096 tests/fixtures/copilot/interrupted-sigkill-1-killed/hook-capture.jsonl | grep -o '[0-9a-f]\{8\}-[0-9a-f]\{4\}-[0-9a-f]\{4\}-[0-9a-f]\{4\}-[0-9a-f]\{12\}' | head -1)
"$bin/harnery" end "$killed" --adapter copilot --reason "fixture: a pending end" > /dev/null
"$bin/harnery" finalize > /dev/null
claude resume
mkdir -p "$out/home"
cp -a "$home/." "$out/home/"
rm -f "$out/home/ledgers/v2/lease" "$out/home/ledgers/lease" 2>/dev/null || true
"$bin/harnery" sessions
find "$out" -type f | sort
