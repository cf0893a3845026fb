#!/usr/bin/env bash
# Time `harnery finalize` where checkpoints are placed in the agents' own
# records (checkpoint.located, generation 7) against a baseline build.
#
# The spool: Claude Code's two-turn `interactive` capture (hooks and
# transcript, tests/fixtures) as SESSIONS sessions with fresh ids, each
# transcript where its hooks name it, delivered through the hook binary
# (not timed). Then `finalize` with records followed, over a fresh copy of
# that home each run, alternating the two builds, RUNS runs each; prints
# each run's CPU time and the medians.
#
#   scripts/bench-located.sh NEW_BIN_DIR BASE_BIN_DIR
#   (each a directory holding `harnery` and `harnery-hook`, e.g.
#   target/debug and a baseline checkout's target/debug)
set -euo pipefail
cd "$(dirname "$0")/.."
new=${1:?usage: bench-located.sh NEW_BIN_DIR BASE_BIN_DIR}
base=${2:?usage: bench-located.sh NEW_BIN_DIR BASE_BIN_DIR}
SESSIONS=${SESSIONS:-100}
RUNS=${RUNS:-5}
work=$(mktemp -d -t harnery-located.XXXXXX)
trap 'rm -rf "$work"' EXIT
python3 - "$work" "$SESSIONS" "$base/harnery-hook" <<'PY'
import json, pathlib, subprocess, sys
work, n, hook = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
old = "65f5909b-b66b-419a-a0ed-4fe96f1affac"
fx = pathlib.Path("tests/fixtures")
transcript = (fx / f"records/claude-code/interactive/{old}.jsonl").read_text()
hooks = [l for l in (fx / "claude-code/interactive/hooks.jsonl").read_text().splitlines() if old in l]
projects = work / "user/claude/projects/-proj"
projects.mkdir(parents=True)
env = {"HARNERY_HOME": str(work / "home"), "PATH": "/usr/bin:/bin"}
for i in range(n):
    sid = f"{i:08x}-b66b-419a-a0ed-4fe96f1affac"
    record = projects / f"{sid}.jsonl"
    record.write_text(transcript.replace(old, sid))
    for line in hooks:
        v = json.loads(line.replace(old, sid))
        v["transcript_path"], v["cwd"] = str(record), str(work / "user/proj")
        subprocess.run([hook, "claude-code"], input=json.dumps(v).encode(), env=env, check=True)
PY
# Each run's CPU time (user + system, ms): on a shared machine it moves
# far less than the wall clock does.
run() {
  rm -rf "$work/run" && cp -a "$work/home" "$work/run"
  HARNERY_HOME="$work/run" HARNERY_RECORDS=on HOME="$work/user" \
    CLAUDE_CONFIG_DIR="$work/user/claude" /usr/bin/time -f '%U %S' -o "$work/time" \
    "$1/harnery" finalize > /dev/null
  awk '{printf "%d\n", ($1 + $2) * 1000}' "$work/time"
}
declare -a a b
for r in $(seq "$RUNS"); do
  a+=("$(run "$new")"); b+=("$(run "$base")")
  echo "run $r: new ${a[-1]} ms, base ${b[-1]} ms (cpu)"
done
run "$new" > /dev/null
placed=$(HARNERY_HOME="$work/run" "$new/harnery" export --format jsonl 2>/dev/null | grep -c '"checkpoint.located"' || true)
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
ma=$(median "${a[@]}"); mb=$(median "${b[@]}")
echo "sessions $SESSIONS, runs $RUNS: new median $ma ms, base median $mb ms, ratio $(awk "BEGIN {printf \"%.3f\", $ma/$mb}")"
echo "checkpoint.located written by the new build: $placed"
