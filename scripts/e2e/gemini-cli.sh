#!/usr/bin/env bash
# End to end with the real Gemini CLI, offline: `harnery install gemini-cli`
# in a scratch HOME, the client (@google/gemini-cli, pure JS on node >= 20)
# against a scripted Gemini API on 127.0.0.1 (scripts/e2e/gemini-cli_model.py),
# under a finalize loop every 0.3 s, in four scenarios:
#   basic      one prompt, one shell call (prints a marker), a text answer
#   fail       the shell call lists a missing directory (exit code 2)
#   two-turns  a second prompt in the same session (`gemini --resume <id>`)
#   kill       SIGKILL of the client while its shell call sleeps; then
#              `harnery end` (the client sends nothing more)
#   subagent   the client's generalist subagent runs the shell call (its
#              own record, chats/<session>/<subagent>.jsonl, is followed)
# Beside harnery's hooks, a capture hook on the same events records what the
# client fired (the ground truth). Each scenario then checks, from the
# client's own files and the model server's log, never from harnery's output:
#   - every hook invocation the client made is in the ledger exactly once;
#   - no record.problem, no unrecognized signal;
#   - spans all closed natively (kill: the one open span recovered by the end);
#   - every tool call of the record joined to a hook span;
#   - tokens per model call equal the record's, and the record's the server's;
#   - `search` finds the shell command's output (basic, fail, two-turns);
#   - `serve` lists the session with its agent (basic).
# Prints one line per scenario, `gemini-cli <scenario>: OK` or
# `gemini-cli <scenario>: FAIL <why>`; exits 0 only when all pass.
#
# Usage: E2E_NPM=<prefix> E2E_BIN=<dir with harnery, harnery-hook> scripts/e2e/gemini-cli.sh [scenario...]
# Env:   E2E_NPM   npm prefix holding node_modules/@google/gemini-cli (installed there when missing)
#        E2E_BIN   dir of the harnery binaries (default: a debug build of this checkout)
#        E2E_WORK  scratch dir (default: a new temp dir, kept for inspection)
#        GEMINI_VERSION  npm version to install when missing (default 0.61.0)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK="${E2E_WORK:-$(mktemp -d /tmp/harnery-e2e-gemini.XXXXXX)}"
NPM="${E2E_NPM:-$WORK/npm}"
log() { echo "e2e gemini-cli: $*" >&2; }
mkdir -p "$WORK"

if [[ -n "${E2E_BIN:-}" ]]; then
  BIN="$(cd "$E2E_BIN" && pwd)"
else
  (cd "$ROOT" && cargo build --bins >&2) || exit 1
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug"
fi
HARNERY="$BIN/harnery"
GEMINI="$NPM/node_modules/@google/gemini-cli/bundle/gemini.js"
if [[ ! -f "$GEMINI" ]]; then
  log "npm install @google/gemini-cli into $NPM"
  mkdir -p "$NPM"
  (cd "$NPM" && npm install --no-audit --no-fund "@google/gemini-cli@${GEMINI_VERSION:-0.61.0}" >&2) || exit 1
fi
NODE="$(command -v node)"
EVENTS=(SessionStart SessionEnd BeforeAgent AfterAgent BeforeModel AfterModel BeforeToolSelection
        BeforeTool AfterTool PreCompress Notification)

# The capture hook: one JSON line per call (event, raw stdin); prints nothing.
cat > "$WORK/capture.py" <<'PY'
import json, sys
raw = sys.stdin.buffer.read().decode("utf-8", "replace")
with open(sys.argv[2], "a") as f:
    f.write(json.dumps({"event": sys.argv[1], "stdin": raw}) + "\n")
PY

# $1: scenario dir. Settings the client needs offline, then harnery's hooks,
# then the capture hook beside them on the same events.
setup() {
  local D="$1"
  mkdir -p "$D/home/.gemini" "$D/proj" "$D/hh"
  # gemini-api-key: with only GOOGLE_GEMINI_BASE_URL the client picks an auth
  # type its headless check refuses; the base URL still applies.
  echo '{"security":{"auth":{"selectedType":"gemini-api-key"}},"general":{"disableAutoUpdate":true},"privacy":{"usageStatisticsEnabled":false}}' \
    > "$D/home/.gemini/settings.json"
  HOME="$D/home" "$HARNERY" install gemini-cli --no-schedule > "$D/install.txt" 2>&1 || return 1
  python3 - "$D/home/.gemini/settings.json" "$WORK/capture.py" "$D/capture.jsonl" "${EVENTS[@]}" <<'PY'
import json, shlex, sys
path, script, out, events = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
doc = json.load(open(path))
for e in events:
    group = doc["hooks"][e]
    assert sum("harnery-hook" in h["command"] for g in group for h in g["hooks"]) == 1, e
    cmd = f"python3 {shlex.quote(script)} {e} {shlex.quote(out)}"
    group.append({"hooks": [{"type": "command", "command": cmd, "timeout": 10000}]})
json.dump(doc, open(path, "w"), indent=2)
PY
}

# The client, its environment built from nothing: client.sh <scenario dir> <args>.
cat > "$WORK/client.sh" <<SH
#!/usr/bin/env bash
D="\$1"; shift
cd "\$D/proj" && exec env -i HOME="\$D/home" PATH="$(dirname "$NODE"):/usr/bin:/bin" LANG=C.UTF-8 TERM=dumb \\
  SHELL=/bin/bash HARNERY_HOME="\$D/hh" GEMINI_API_KEY=dummy GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:\$(cat "\$D/port")" \\
  GEMINI_CLI_TRUST_WORKSPACE=true "$NODE" "$GEMINI" --approval-mode yolo --output-format stream-json "\$@"
SH
chmod +x "$WORK/client.sh"
gemini() { timeout 120 "$WORK/client.sh" "$@"; }

start_loop() {
  local D="$1"
  rm -f "$D/loop.stop"
  ( while [[ ! -e "$D/loop.stop" ]]; do
      HOME="$D/home" HARNERY_HOME="$D/hh" HARNERY_RECORDS=on "$HARNERY" finalize > /dev/null 2>> "$D/loop.log" \
        || echo "finalize exited $?" >> "$D/loop.log"
      sleep 0.3
    done ) &
  LOOP_PID=$!
}
stop_loop() {
  touch "$1/loop.stop"; wait "$LOOP_PID" 2>/dev/null
  HOME="$1/home" HARNERY_HOME="$1/hh" HARNERY_RECORDS=on "$HARNERY" finalize >> "$1/loop.log" 2>&1
}

# $1: scenario dir. Kill the client's process group once its BeforeTool
# has run, and the shell call it left behind (its own process group: found
# by its working directory, so nothing else is touched).
run_kill() {
  local D="$1" pgid
  # Not a group leader here, so setsid execs in place: $! is the group.
  setsid "$WORK/client.sh" "$D" -p "SLOW: sleep for a while." > "$D/stream.jsonl" 2> "$D/stderr.txt" &
  pgid=$!
  for _ in $(seq 150); do grep -q '"BeforeTool"' "$D/capture.jsonl" 2>/dev/null && break; sleep 0.2; done
  sleep 1
  # (stderr off: bash reports the killed job wherever it notices.)
  {
    kill -9 -- "-$pgid"
    for p in /proc/[0-9]*; do
      [[ "$(readlink "$p/cwd")" == "$D/proj" ]] && kill -9 "${p#/proc/}"
    done
    wait "$pgid"
  } 2>/dev/null
  sleep 1
}

# $1: scenario dir, $2: scenario. One line: OK, or FAIL and why.
check() {
  HARNERY="$HARNERY" python3 - "$1" "$2" "${EVENTS[@]}" <<'PY'
import collections, glob, json, os, subprocess, sys, urllib.request
d, name, installed = sys.argv[1], sys.argv[2], set(sys.argv[3:])
env = dict(os.environ, HARNERY_HOME=f"{d}/hh", HOME=f"{d}/home")
def harnery(*args):
    return subprocess.run([os.environ["HARNERY"], *args], env=env, capture_output=True, text=True)
def lines(path):
    out = []
    for line in open(path, errors="replace"):
        try: out.append(json.loads(line))
        except ValueError: pass
    return out
why = []
fired = collections.Counter(e["event"] for e in lines(f"{d}/capture.jsonl"))
# A resume in a later minute than the start leaves a second file of the same
# session holding a header and the context alone (the resumed leg's
# SessionStart names it): the record is the one file with messages.
records = [lines(f) for f in glob.glob(f"{d}/home/.gemini/tmp/*/chats/session-*.jsonl")]
with_messages = [r for r in records if any("id" in line for line in r)]
if len(with_messages) != 1: why.append(f"{len(with_messages)} records with messages")
record = with_messages[0] if with_messages else []
# A subagent's own record: chats/<session>/<subagent>.jsonl.
subagent_records = glob.glob(f"{d}/home/.gemini/tmp/*/chats/*/*.jsonl")
if (name == "subagent") != bool(subagent_records): why.append(f"subagent records {subagent_records}")
for f in subagent_records: record += lines(f)
models = {m["id"]: m for m in record if m.get("type") == "gemini"}
events = [json.loads(l) for l in harnery("export", "--format", "jsonl").stdout.splitlines()]
by = collections.defaultdict(list)
for e in events: by[e["type"]].append(e)
# Every hook the client ran is in the ledger once.
digests = collections.defaultdict(set)
for e in events:
    for r in e.get("raw") or []:
        if r.get("event_name") in installed: digests[r["event_name"]].add(r["record_digest"])
got = {k: len(v) for k, v in digests.items()}
if got != dict(fired): why.append(f"hooks fired {dict(fired)}, ledger has {got}")
for t in ("record.problem", "signal.unrecognized"):
    if by[t]: why.append(f"{len(by[t])} {t}: {by[t][0]['payload']}")
# Spans: closed natively, or (kill) the open one recovered by the end.
rows = [json.loads(l) for l in harnery("sessions", "--json").stdout.splitlines()]
if len(rows) != 1: why.append(f"{len(rows)} sessions")
spans = rows[0]["spans"] if rows else {}
calls = fired["BeforeTool"]
want = ({"open": 0, "closed_native": 0, "recovered": 1} if name == "kill"
        else {"open": 0, "closed_native": calls, "recovered": 0})
if spans != want: why.append(f"spans {spans}, want {want}")
# Every tool call of the record joined to a hook span.
ids = {c["id"] for m in models.values() for c in m.get("toolCalls") or []}
joined = {e["payload"]["tool_call_id"] for e in by["tool.recorded"] if e["payload"].get("span_request_event_id")}
if ids != joined: why.append(f"record calls {sorted(ids)}, joined {sorted(joined)}")
# Tokens: the ledger's per model call are the record's; the record's are the server's.
want_t = {}
for i, m in models.items():
    t = m.get("tokens")
    if t: want_t[i] = (t["input"] - t["cached"] + t["tool"], t["cached"], t["output"] + t["thoughts"], t["thoughts"])
kinds = ("input_tokens", "cache_read_tokens", "output_tokens", "reasoning_tokens")
got_t = {e["payload"]["message_id"]: tuple(e["payload"][k] for k in kinds) for e in by["usage.reported"]}
if got_t != want_t or len(by["usage.reported"]) != len(want_t):
    why.append(f"usage {got_t} (x{len(by['usage.reported'])}), record {want_t}")
served = collections.Counter((r["usage"]["promptTokenCount"], r["usage"]["cachedContentTokenCount"],
                              r["usage"]["candidatesTokenCount"], r["usage"]["thoughtsTokenCount"])
                             for r in lines(f"{d}/requests.jsonl") if r["tools"])
recorded = collections.Counter(tuple(m["tokens"][k] for k in ("input", "cached", "output", "thoughts"))
                               for m in models.values() if m.get("tokens"))
if recorded != served: why.append(f"record tokens {dict(recorded)}, server sent {dict(served)}")
# search finds the command's output.
marker = {"basic": "hello-from-harnery-e2e", "two-turns": "hello-from-harnery-e2e",
          "fail": "nonexistent-harnery", "subagent": "hello-from-harnery-e2e"}.get(name)
if marker:
    hits = harnery("search", "--json", "--kind", "tool-output", marker).stdout.splitlines()
    if not hits: why.append(f"search finds no tool output {marker!r}")
if name == "fail" and not any(e["payload"].get("exit_code") == 2 for e in by["tool.completed"]):
    why.append("the failing command's exit code is not 2")
if name == "two-turns":
    if len(by["session.resumed"]) != 1 or (rows and rows[0]["turns"] != 2):
        why.append(f"{len(by['session.resumed'])} resumes, {rows and rows[0]['turns']} turns")
    shim = json.load(open(f"{d}/restore.json"))["shim"]
    sid = rows[0]["session"]["session_id"] if rows else None
    if (shim["program"], shim["arguments"], shim["cwd"]) != ("gemini", ["--resume", sid], f"{d}/proj"):
        why.append(f"restore hands out {shim['text']!r}")
# serve lists the session with its agent.
if name == "basic" and rows:
    serve = subprocess.Popen([os.environ["HARNERY"], "serve", "--addr", "127.0.0.1:0"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = None
        for _ in range(5):
            url = next((w for w in serve.stdout.readline().split() if w.startswith("http")), None)
            if url: break
        page = urllib.request.urlopen(url, timeout=10).read().decode() if url else ""
        if rows[0]["session"]["session_id"][:8] not in page or "gemini-cli" not in page:
            why.append(f"serve ({url}) does not list the session with its agent")
    except Exception as e:
        why.append(f"serve: {e}")
    finally:
        serve.kill(); serve.wait()
print(f"gemini-cli {name}: " + ("OK" if not why else "FAIL " + "; ".join(why)))
sys.exit(1 if why else 0)
PY
}

scenario() {
  local s="$1" D="$WORK/$1"
  rm -rf "$D"; setup "$D" || { echo "gemini-cli $s: FAIL install"; return 1; }
  python3 "$ROOT/scripts/e2e/gemini-cli_model.py" "$D/requests.jsonl" > "$D/port" 2> "$D/model.stderr" &
  local model=$!
  for _ in $(seq 50); do [[ -s "$D/port" ]] && break; sleep 0.1; done
  start_loop "$D"
  case "$s" in
    basic) gemini "$D" -p "Run the marker command and tell me what it printed." > "$D/stream.jsonl" 2> "$D/stderr.txt" ;;
    fail) gemini "$D" -p "FAIL: run the listing of the missing directory." > "$D/stream.jsonl" 2> "$D/stderr.txt" ;;
    two-turns)
      gemini "$D" -p "Run the marker command and tell me what it printed." > "$D/stream.jsonl" 2> "$D/stderr.txt"
      # The second turn runs the resume `harnery restore` hands out.
      local id
      id=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["session_id"])' "$D/stream.jsonl")
      HOME="$D/home" HARNERY_HOME="$D/hh" HARNERY_RECORDS=on "$HARNERY" finalize > /dev/null 2>&1
      HARNERY_HOME="$D/hh" "$HARNERY" restore "gemini-cli/$id" --json > "$D/restore.json" 2>> "$D/stderr.txt"
      local -a resume
      mapfile -t resume < <(python3 -c 'import json,sys; [print(a) for a in json.load(open(sys.argv[1]))["shim"]["arguments"]]' "$D/restore.json")
      gemini "$D" "${resume[@]}" -p "Run it once more, please." > "$D/stream2.jsonl" 2>> "$D/stderr.txt" ;;
    kill) run_kill "$D" ;;
    subagent) gemini "$D" -p "AGENT: have a subagent run the marker command." > "$D/stream.jsonl" 2> "$D/stderr.txt" ;;
  esac
  sleep 1
  stop_loop "$D"
  if [[ "$s" == kill ]]; then
    local sid
    sid=$(python3 -c 'import json,sys; print(json.loads(json.loads(open(sys.argv[1]).readline())["stdin"])["session_id"])' "$D/capture.jsonl")
    HARNERY_HOME="$D/hh" "$HARNERY" end "gemini-cli/$sid" --reason "killed by the e2e" >> "$D/loop.log" 2>&1
    HOME="$D/home" HARNERY_HOME="$D/hh" HARNERY_RECORDS=on "$HARNERY" finalize >> "$D/loop.log" 2>&1
  fi
  kill "$model" 2>/dev/null; wait "$model" 2>/dev/null
  check "$D" "$s"
}

fail=0
for s in "${@:-basic fail two-turns kill subagent}"; do
  for one in $s; do scenario "$one" || fail=1; done
done
log "work dir: $WORK"
exit $fail
