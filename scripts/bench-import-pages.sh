#!/usr/bin/env bash
# `harnery import` of SESSIONS (default 10,000) small synthetic Claude Code
# records, then `harnery serve`'s home `/`, the list `/sessions` and
# `/api/sessions` over them, beside the same pages of the merge base's
# build (`git merge-base HEAD main`) on the same records, which it reads
# the only way it can: one SessionStart hook signal per record (through
# its own `harnery-hook`, naming the record) and a `finalize` that follows
# the records (the base has no `import`, and cannot read the ledger a
# newer contract generation wrote).
#
# The records are written where Claude Code writes them
# (`<config>/projects/<dir>/<id>.jsonl`), shaped as Claude Code 2.1 writes
# them: a prompt, an assistant text and a tool call sharing one message id
# and its usage, the tool's result, a closing assistant text with its own
# message id; 50 projects, four models, spread over 90 days (about 3 KB a
# session).
#
# An idle `finalize` (nothing new since the last) is timed on both homes:
# this build's twice after its import (the first may still note how
# records read just after they were written stand; the second is the
# steady state, where each record is skipped on its size and time), and
# the base build's once after its own finalize (every record opened and
# checked), with the ratio of this build's steady idle finalize to the
# base's.
#
# Each page is asked for once to warm it, then REQUESTS times (default 9)
# with curl, one request at a time; the median of `time_total` is printed
# with the issue's targets (home under 150 ms, list under 100 ms). A page a
# build does not have (before issue 48 the list was the home, `/`, and
# `/sessions` did not exist) is shown as `no-page-404`.
#
# Usage: scripts/bench-import-pages.sh
#   BIN=target/release      this build's binaries (default: cargo build --release)
#   HARNERY_BASE_BIN=dir    the base build's harnery and harnery-hook (default:
#                           the merge base, exported with git archive, built
#                           into target/bench-base)
#   SESSIONS=10000 REQUESTS=9 BENCH_DIR=dir (default: a new temp dir)
#   PAGES=0                 time the import and the finalizes only, no pages
set -euo pipefail

cd "$(dirname "$0")/.."
SESSIONS=${SESSIONS:-10000}
REQUESTS=${REQUESTS:-9}
PAGES=${PAGES:-1}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-import-pages.XXXXXX)}
mkdir -p "$WORK"
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet --bins
  BIN=target/release
fi
BIN=$(cd "$BIN" && pwd)
if [ -z "${HARNERY_BASE_BIN:-}" ]; then
  base=$(git merge-base HEAD main)
  tree="$WORK/base-tree"
  rm -rf "$tree" && mkdir -p "$tree"
  git archive "$base" | tar -x -C "$tree"
  CARGO_TARGET_DIR="$(pwd)/target/bench-base" cargo build --release --quiet --bins \
    --manifest-path "$tree/Cargo.toml"
  HARNERY_BASE_BIN=$(pwd)/target/bench-base/release
  echo "base: $(git rev-parse --short "$base") built into $HARNERY_BASE_BIN"
fi
command -v curl >/dev/null || { echo "needs curl" >&2; exit 2; }

CONFIG="$WORK/claude"
rm -rf "$CONFIG" && mkdir -p "$CONFIG/projects" "$WORK/user"
python3 - "$CONFIG/projects" "$SESSIONS" >"$WORK/sessions.txt" <<'PY'
import json, os, random, sys, time, uuid
root, sessions = sys.argv[1], int(sys.argv[2])
models = ["claude-sonnet-4-5-20250929", "claude-opus-4-5-20251101", "claude-haiku-4-5-20251001",
          "claude-sonnet-4-20250514"]
rng = random.Random(48)
def ident():
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))
def dump(f, obj):
    f.write(json.dumps(obj, separators=(",", ":")) + "\n")
start = 1764547200 - 90 * 86400
for s in range(sessions):
    sid = ident()
    project = f"-work-project-{s % 50}"
    os.makedirs(f"{root}/{project}", exist_ok=True)
    path = f"{root}/{project}/{sid}.jsonl"
    base = dict(sessionId=sid, cwd=f"/work/project-{s % 50}", version="2.1.332", gitBranch="main",
                userType="external", isSidechain=False)
    t = start + rng.randrange(90 * 86400)
    def stamp(dt):
        return "%s.%03dZ" % (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t + dt)), rng.randrange(1000))
    model = models[s % len(models)]
    def usage():
        return {"input_tokens": rng.randrange(1, 60), "cache_creation_input_tokens": rng.randrange(0, 4000),
                "cache_read_input_tokens": rng.randrange(0, 90000), "output_tokens": rng.randrange(5, 900),
                "service_tier": "standard"}
    with open(path, "w") as f:
        prompt, u = ident(), ident()
        dump(f, dict(base, type="user", uuid=u, parentUuid=None, promptId=prompt, timestamp=stamp(0),
                     message={"role": "user", "content": f"session {s}: make the test in src/mod{s % 97}.rs pass"}))
        mid, use, tool = f"msg_pages_{s:06d}_1", usage(), f"toolu_pages_{s:06d}"
        parent = u
        for i, block in enumerate([{"type": "text", "text": "Running the tests first."},
                                   {"type": "tool_use", "id": tool, "name": "Bash",
                                    "input": {"command": "cargo test", "description": "run the tests"}}]):
            a = ident()
            dump(f, dict(base, type="assistant", uuid=a, parentUuid=parent, timestamp=stamp(2 + i),
                         requestId=f"req_{mid}", message={"id": mid, "type": "message", "role": "assistant",
                         "model": model, "content": [block], "stop_reason": None, "stop_sequence": None,
                         "usage": use}))
            parent = a
        r = ident()
        dump(f, dict(base, type="user", uuid=r, parentUuid=parent, timestamp=stamp(9),
                     message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool,
                                                           "content": "test result: ok. 12 passed"}]},
                     toolUseResult={"stdout": "test result: ok. 12 passed", "stderr": "", "interrupted": False}))
        mid2 = f"msg_pages_{s:06d}_2"
        dump(f, dict(base, type="assistant", uuid=ident(), parentUuid=r, timestamp=stamp(12),
                     requestId=f"req_{mid2}", message={"id": mid2, "type": "message", "role": "assistant",
                     "model": model, "content": [{"type": "text", "text": "All 12 tests pass."}],
                     "stop_reason": "end_turn", "stop_sequence": None, "usage": usage()}))
    print(sid, path)
PY
bytes=$(du -sb "$CONFIG/projects" | cut -f1)

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
# The environment a command runs in: the bench's user home and records.
agent_env() { env HOME="$WORK/user" CLAUDE_CONFIG_DIR="$CONFIG" "$@"; }

# This build: `harnery import`, timed.
IMPORTED="$WORK/home.imported"
rm -rf "$IMPORTED"
sync
t0=$(date +%s.%N)
HARNERY_HOME="$IMPORTED" agent_env "$BIN/harnery" import --json >"$WORK/import.json"
t1=$(date +%s.%N)
import_s=$(echo "$t1 - $t0" | bc -l)
# A finalize with nothing new after it: every imported session's record
# is checked for growth, as a hooked session's is.
# Time one idle `finalize` (binary $1, home $2); prints seconds.
idle_finalize() {
  local t0 t1
  t0=$(date +%s.%N)
  HARNERY_HOME="$2" agent_env "$1" finalize --json >/dev/null
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc -l
}
idle_s=$(idle_finalize "$BIN/harnery" "$IMPORTED")
idle2_s=$(idle_finalize "$BIN/harnery" "$IMPORTED")
imported=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sessions"])' "$WORK/import.json")

# The base build: one SessionStart hook per record, then its finalize.
HOOKED="$WORK/home.hooked"
rm -rf "$HOOKED" && mkdir -p "$HOOKED"
while read -r sid path; do
  printf '{"session_id":"%s","transcript_path":"%s","hook_event_name":"SessionStart","source":"startup","cwd":"/work"}' \
    "$sid" "$path" | HARNERY_HOME="$HOOKED" "$HARNERY_BASE_BIN/harnery-hook" claude-code
done <"$WORK/sessions.txt"
t0=$(date +%s.%N)
HARNERY_HOME="$HOOKED" agent_env "$HARNERY_BASE_BIN/harnery" finalize --json >/dev/null
t1=$(date +%s.%N)
base_finalize_s=$(echo "$t1 - $t0" | bc -l)
base_idle_s=$(idle_finalize "$HARNERY_BASE_BIN/harnery" "$HOOKED")

# Start `serve` (binary $1, home $2), time each page; prints "<path> <ms>".
time_pages() {
  local bin=$1 home=$2 out="$WORK/serve.$$.out"
  HARNERY_HOME="$home" agent_env "$bin" serve --addr 127.0.0.1:0 </dev/null >"$out" 2>"$WORK/serve.err" &
  local pid=$!
  local url=""
  for _ in $(seq 300); do
    url=$(sed -n 's/^harnery serve: //p' "$out")
    [ -n "$url" ] && break
    sleep 0.1
  done
  [ -n "$url" ] || { kill "$pid"; echo "serve did not start: $(cat "$WORK/serve.err")" >&2; exit 2; }
  local base=${url%%/\?token=*} token=${url##*token=}
  for page in / /sessions /api/sessions; do
    local target="$base$page?token=$token" code
    code=$(curl -s -o /dev/null -w '%{http_code}' "$target")
    # A page this build does not have (the list page before it moved to
    # /sessions) is named, not timed.
    [ "$code" = 200 ] || { echo "$page no-page-$code"; continue; }
    for _ in $(seq "$REQUESTS"); do
      curl -s -o /dev/null -w '%{time_total}\n' "$target"
    done | median | awk -v p="$page" '{printf "%s %.1f\n", p, $1 * 1000}'
  done
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}
if [ "$PAGES" != 0 ]; then
  time_pages "$BIN/harnery" "$IMPORTED" >"$WORK/pages.this"
  time_pages "$HARNERY_BASE_BIN/harnery" "$HOOKED" >"$WORK/pages.base"
else
  : >"$WORK/pages.this"
  : >"$WORK/pages.base"
fi

printf '%d sessions, %.1f MB of records; %d imported\n' "$SESSIONS" "$(echo "$bytes / 1000000" | bc -l)" "$imported"
printf '%-36s %8.2f s\n' "harnery import (this build)" "$import_s"
printf '%-36s %8.2f s\n' "finalize after it, nothing new" "$idle_s"
printf '%-36s %8.2f s\n' "  and again (steady state)" "$idle2_s"
printf '%-36s %8.2f s\n' "hooks + finalize (base build)" "$base_finalize_s"
printf '%-36s %8.2f s\n' "  then nothing new (base build)" "$base_idle_s"
printf '%-36s %8.3f\n' "idle finalize, this / base" "$(echo "$idle2_s / $base_idle_s" | bc -l)"
printf 'median of %d requests, ms      %10s %10s  target\n' "$REQUESTS" "this" "base"
paste -d' ' "$WORK/pages.this" "$WORK/pages.base" | while read -r page this _ base; do
  case $page in
    /) target=150 ;;
    *) target=100 ;;
  esac
  verdict=$(awk -v t="$this" -v m="$target" 'BEGIN {print (t !~ /^[0-9.]+$/) ? "-" : (t < m) ? "under " m : "OVER " m}')
  printf '%-30s %10s %10s  %s\n' "$page" "$this" "$base" "$verdict"
done
echo "raw outputs: $WORK"
