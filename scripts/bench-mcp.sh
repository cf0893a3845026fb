#!/usr/bin/env bash
# Benchmark `harnery mcp`'s search tool against `harnery search` over the
# same ledger, in one run (issue 49: an MCP search over 1M events answers
# within the `harnery search` figures).
#
# For one size (default 1000000 signals over 1000 sessions):
#   1. write the signals with examples/bench_search_spool.rs and finalize
#      them, then make the index whole (`search --reindex`), as
#      scripts/bench-search.sh does;
#   2. run the queries REPEAT times each (default 5): `harnery search
#      ARGS --limit 10` as a process (its wall time), and the same search as
#      a `tools/call` of `search` to one `harnery mcp` process that stays up
#      (the round trip, timed by the client: the way an agent calls it);
#   3. per query the median of each; over the medians p50 and p99 (nearest
#      rank); the ledger's hash before and after.
#
# Usage: scripts/bench-mcp.sh [signals]    (needs python3)
# Env:   BENCH_BIN  dir with harnery and examples/bench_search_spool already
#                   built (skips the release build; a debug build's figures
#                   are not figures)
set -euo pipefail

cd "$(dirname "$0")/.."
N=${1:-1000000}
SESSIONS=${SESSIONS:-1000}
REPEAT=${REPEAT:-5}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-mcp.XXXXXX)}
if [[ -n "${BENCH_BIN:-}" ]]; then
  BIN=$(cd "$BENCH_BIN" && pwd)
else
  cargo build --release --quiet --bin harnery --example bench_search_spool
  BIN=$PWD/target/release
fi

home="$WORK/home"
rm -rf "$home" && mkdir -p "$home"
export HARNERY_HOME="$home" HARNERY_NOW=2026-12-01T00:00:00Z HARNERY_RECORDS=off NO_COLOR=1
"$BIN/examples/bench_search_spool" "$home" "$N" "$SESSIONS"
"$BIN/harnery" finalize >/dev/null
"$BIN/harnery" search --reindex 2>/dev/null
events=$("$BIN/harnery" sessions --json | python3 -c 'import json,sys; print(sum(json.loads(l)["events"] for l in sys.stdin))')
before=$(sha256sum "$home/ledgers/v2/ledger.sqlite" | cut -d' ' -f1)

python3 - "$BIN/harnery" "$REPEAT" <<'PY'
import json, statistics, subprocess, sys, time
harnery, repeat = sys.argv[1], int(sys.argv[2])
# name, query, MCP filters, the same filters as `harnery search` flags
QUERIES = [
    ("word-commit", "commit", {}, []),
    ("word-permission", "permission", {}, []),
    ("two-words", "git commit", {}, []),
    ("phrase-exit-code", '"exit code"', {}, []),
    ("prefix-compact", "compact*", {}, []),
    ("path-note", "note.txt", {}, []),
    ("path-capture", "/tmp/cc-capture", {}, []),
    ("substring-allowed", "not-allowed", {}, []),
    ("kind-prompt", "commit", {"kind": ["prompt"]}, ["--kind", "prompt"]),
    ("tool-bash", "echo", {"kind": ["tool-input"], "tool": "Bash"}, ["--kind", "tool-input", "--tool", "Bash"]),
    ("failed", "exit", {"failed": True}, ["--failed"]),
    ("sort-time", "commit", {"sort": "time"}, ["--sort", "time"]),
]
mcp = subprocess.Popen([harnery, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
ids = iter(range(1, 1 << 30))
def rpc(method, params):
    i = next(ids)
    mcp.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    mcp.stdin.flush()
    while True:
        answer = json.loads(mcp.stdout.readline())
        if answer.get("id") == i:
            return answer
rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}})
mcp.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
walls = {name: ([], []) for name, *_ in QUERIES}
for _ in range(repeat):
    for name, q, filters, flags in QUERIES:
        t0 = time.perf_counter()
        subprocess.run([harnery, "search", q, "--limit", "10", *flags], stdout=subprocess.DEVNULL, check=True)
        walls[name][0].append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        answer = rpc("tools/call", {"name": "search", "arguments": dict(filters, query=q, limit=10)})
        walls[name][1].append((time.perf_counter() - t0) * 1000)
        result = answer.get("result") or {}
        if "error" in answer or result.get("isError"):
            sys.exit(f"bench-mcp: {name}: {answer}")
mcp.stdin.close()
mcp.wait()
def pct(xs, p):
    xs = sorted(xs); r = max(1, int(-(-p * len(xs) // 100)))
    return xs[r - 1]
print(f"{'query':<20} {'search_ms':>10} {'mcp_ms':>10}")
meds = ([], [])
for name, *_ in QUERIES:
    s, m = statistics.median(walls[name][0]), statistics.median(walls[name][1])
    meds[0].append(s); meds[1].append(m)
    print(f"{name:<20} {s:>10.1f} {m:>10.1f}")
print(f"harnery search (a process each): p50 {pct(meds[0], 50):.1f} ms, p99 {pct(meds[0], 99):.1f} ms")
print(f"harnery mcp search (a call each): p50 {pct(meds[1], 50):.1f} ms, p99 {pct(meds[1], 99):.1f} ms")
PY
after=$(sha256sum "$home/ledgers/v2/ledger.sqlite" | cut -d' ' -f1)
echo "signals $N, events $events, sessions $SESSIONS, rounds $REPEAT"
[[ "$before" == "$after" ]] && echo "ledger byte-identical after the MCP session" || { echo "bench-mcp: the ledger changed" >&2; exit 1; }
echo "raw outputs: $WORK"
