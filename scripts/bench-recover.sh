#!/usr/bin/env bash
# Benchmark `harnery recover` against `wc -l` on the same large events.jsonl.
#
# Usage: scripts/bench-recover.sh [SIZE_GB ...]     (default: 2 8)
#   BENCH_DIR  where the generated COPILOT_HOME goes (default: a fresh mktemp -d;
#              needs SIZE_GB of free space per size, one size at a time)
#   RUNS       timed runs per tool and size (default 3; the best is reported)
#
# It builds the release binary, generates a realistic Copilot stream (hook,
# assistant, tool, usage and user events; one line in ~500 is a 1.5 MiB tool
# output, a few are 5 MiB and get skipped as oversized), warms the page cache,
# then times both tools in the same run, and reports throughput, the ratio to
# `wc -l`, and peak RSS (/usr/bin/time -v). Generated files are deleted.
set -euo pipefail
cd "$(dirname "$0")/.."

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(2 8)
runs=${RUNS:-3}
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }

cargo build --release --quiet --bin harnery
bin=$PWD/target/release/harnery
work=${BENCH_DIR:-$(mktemp -d)}
trap 'rm -rf "$work/home"' EXIT
sid=bench0000-0000-4000-8000-000000000000
stream_dir=$work/home/session-state/$sid
mkdir -p "$stream_dir"
stream=$stream_dir/events.jsonl

# One block of realistic events, repeated to size. Written by python3 for speed.
make_block() {
  python3 - "$1" <<'PY'
import json, random, sys
random.seed(7)
out = open(sys.argv[1], "w")
def ev(kind, data, n):
    return json.dumps({"type": kind, "data": data, "id": "%08x-0000-4000-8000-%012x" % (n, n),
                       "timestamp": "2026-11-30T00:%02d:%02d.%03dZ" % (n // 3600 % 60, n // 60 % 60, n % 1000),
                       "parentId": "%08x-0000-4000-8000-%012x" % (n - 1, n - 1)}, separators=(",", ":"))
words = "the parser keeps every token and the lexer skips whitespace before numbers".split()
pool = {}
def text(k):
    # A small pool of random texts per length keeps generation fast.
    if k not in pool:
        pool[k] = [" ".join(random.choice(words) for _ in range(k)) for _ in range(32)]
    return random.choice(pool[k])
n = 0
size = 0
while size < 64 << 20:
    n += 1
    r = n % 500
    if r == 0:
        line = ev("user.message", {"content": "Direct instruction %d: %s" % (n, text(40)), "transformedContent": text(45)}, n)
    elif r == 250:
        line = ev("user.message", {"content": "Steering %d: %s" % (n, text(400)), "source": "agent-1234"}, n)
    elif r == 499:
        line = ev("tool.execution_complete", {"toolCallId": "call_%d" % n, "success": True, "result": {"content": "x" * (3 << 19)}}, n)
    elif r % 7 == 0:
        line = ev("assistant.message", {"messageId": "m%d" % n, "content": text(120), "toolRequests": [{"toolCallId": "call_%d" % n, "name": "bash", "arguments": {"command": "cargo test -q"}}]}, n)
    elif r % 7 == 1:
        line = ev("tool.execution_complete", {"toolCallId": "call_%d" % n, "success": True, "result": {"content": text(600)}}, n)
    elif r % 7 == 2:
        line = ev("session.usage_record", {"usage": {"model": "gpt-4.1", "inputTokens": n, "outputTokens": 10}}, n)
    else:
        line = ev("hook.start" if r % 2 else "hook.end", {"hookInvocationId": "h%d" % n, "hookType": "preToolUse", "input": {"toolName": "bash", "toolInput": {"command": text(30)}}}, n)
    out.write(line + "\n")
    size += len(line) + 1
# A few records over the 4 MiB default bound.
out.write(ev("tool.execution_complete", {"toolCallId": "big", "success": True, "result": {"content": "y" * (5 << 20)}}, n + 1) + "\n")
PY
}

fmt_rate() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.0f MB/s", b / s / 1e6 }'; }

# Best (lowest) wall time and CPU time (user + sys) over the runs, and the
# highest peak RSS. CPU time is reported too because on a shared machine the
# wall clock also measures other people's load.
best_of() { # command... -> prints "wall_s cpu_s maxrss_kb"
  local best="" cpu_best="" rss=0
  for _ in $(seq "$runs"); do
    /usr/bin/time -v -o "$work/time.txt" "$@" >/dev/null
    local wall cpu kb
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$work/time.txt")
    cpu=$(awk -F': ' '/User time|System time/ { s += $2 } END { print s }' "$work/time.txt")
    kb=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/time.txt")
    (( kb > rss )) && rss=$kb
    if [ -z "$best" ] || awk -v a="$wall" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$wall; fi
    if [ -z "$cpu_best" ] || awk -v a="$cpu" -v b="$cpu_best" 'BEGIN { exit !(a < b) }'; then cpu_best=$cpu; fi
  done
  echo "$best $cpu_best $rss"
}

make_block "$work/block.jsonl"
for gb in "${sizes[@]}"; do
  target=$((gb * 1000 * 1000 * 1000))
  : > "$stream"
  while [ "$(stat -c %s "$stream")" -lt "$target" ]; do cat "$work/block.jsonl" >> "$stream"; done
  printf '{"type":"user.message","data":{"content":"The very last direction."},"id":"last","timestamp":"2026-11-30T01:00:00.000Z"}\n' >> "$stream"
  bytes=$(stat -c %s "$stream")
  cat "$stream" > /dev/null # warm the page cache
  read -r wc_s wc_cpu wc_kb < <(best_of wc -l "$stream")
  read -r hr_s hr_cpu hr_kb < <(best_of "$bin" recover "$sid" --agent copilot --copilot-home "$work/home" --json)
  "$bin" recover "$sid" --agent copilot --copilot-home "$work/home" --json |
    python3 -c 'import json,sys; p=json.load(sys.stdin); assert p["latest_direction"]["text"] == "The very last direction.", p["latest_direction"]; print("  check: latest direction found; skipped", p["stream"]["skipped"])'
  ratio=$(awk -v w="$wc_s" -v h="$hr_s" 'BEGIN { printf "%.0f%%", 100 * w / h }')
  cpu_ratio=$(awk -v w="$wc_cpu" -v h="$hr_cpu" 'BEGIN { printf "%.0f%%", 100 * w / h }')
  echo "size ${gb} GB (${bytes} bytes), best of ${runs}, warm cache, load average $(cut -d' ' -f1 /proc/loadavg):"
  echo "  wc -l            wall ${wc_s} s ($(fmt_rate "$bytes" "$wc_s"))  cpu ${wc_cpu} s ($(fmt_rate "$bytes" "$wc_cpu"))  peak RSS ${wc_kb} KiB"
  echo "  harnery recover  wall ${hr_s} s ($(fmt_rate "$bytes" "$hr_s"))  cpu ${hr_cpu} s ($(fmt_rate "$bytes" "$hr_cpu"))  peak RSS ${hr_kb} KiB"
  echo "  harnery throughput = ${ratio} of wc -l by wall time, ${cpu_ratio} by CPU time"
  rm -f "$stream"
done
rm -f "$work/block.jsonl" "$work/time.txt"
