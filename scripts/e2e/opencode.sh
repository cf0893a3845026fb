#!/usr/bin/env bash
# End to end with the real OpenCode client, offline: `opencode-ai` from npm,
# configured by `harnery install opencode` in a scratch HOME, talking to a
# scripted OpenAI-compatible model on 127.0.0.1 (scripts/e2e/opencode_model.py)
# through a custom provider, with `harnery finalize` running every 0.3 s.
# Scenarios:
#   basic      one prompt, one shell call (`echo hello-from-harnery-e2e`), text
#   failing    the shell call fails (`ls /nonexistent-harnery`, exit 2)
#   two-turns  a second prompt in the same session (`opencode run --session <id>`)
#   kill       SIGKILL while the shell call runs (`sleep 30`); then `harnery end`
# A second plugin (a witness, written here) notes every event OpenCode fires;
# each scenario checks, from OpenCode's own files only: every event harnery's
# plugin hands over is in the ledger exactly once; every tool span closed
# natively (the killed one recovered by the end); every call in opencode.db
# joined to its hook span and no record.problem; tokens, kind by kind, equal
# OpenCode's session totals; `search` finds the tool output; `serve` lists the
# session as OpenCode's. One line per scenario: `opencode <scenario>: OK` (or
# `FAIL <why>`); exit 0 only when all pass.
#
# Usage: E2E_NPM=<prefix> E2E_BIN=<dir with harnery, harnery-hook> scripts/e2e/opencode.sh
# Env:   E2E_NPM   npm prefix holding opencode-ai (installed there when missing)
#        E2E_BIN   dir with harnery and harnery-hook (default: a debug build)
#        E2E_WORK  scratch dir (default: a new temp dir; kept for inspection)
#        OPENCODE_VERSION  npm version (default 1.18.33)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK="${E2E_WORK:-$(mktemp -d /tmp/harnery-e2e-opencode.XXXXXX)}"
NPM="${E2E_NPM:-$WORK/npm}"
log() { echo "e2e: $*" >&2; }
mkdir -p "$WORK"

if [[ -n "${E2E_BIN:-}" ]]; then
  BIN="$(cd "$E2E_BIN" && pwd)"
else
  log "building harnery (debug)"
  (cd "$ROOT" && cargo build --bins >&2)
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug"
fi
export HARNERY="$BIN/harnery"

if [[ ! -d "$NPM/node_modules/opencode-ai" ]]; then
  log "npm install opencode-ai into $NPM"
  mkdir -p "$NPM"
  [[ -f "$NPM/package.json" ]] || echo '{"name":"harnery-e2e-opencode","private":true}' > "$NPM/package.json"
  (cd "$NPM" && npm install --no-audit --no-fund "opencode-ai@${OPENCODE_VERSION:-1.18.33}" >&2)
fi
OPENCODE=""
for c in "$NPM"/node_modules/opencode-linux-*/bin/opencode "$NPM/node_modules/.bin/opencode"; do
  [[ -x "$c" ]] && { OPENCODE="$c"; break; }
done
[[ -n "$OPENCODE" ]] || { echo "opencode basic: FAIL no opencode binary under $NPM"; exit 1; }

python3 "$ROOT/scripts/e2e/opencode_model.py" "$WORK/requests.jsonl" > "$WORK/port" 2> "$WORK/model.stderr" &
MODEL_PID=$!
LOOP_PID=""
cleanup() {
  kill "$MODEL_PID" 2>/dev/null || true
  [[ -n "$LOOP_PID" ]] && kill "$LOOP_PID" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 50); do [[ -s "$WORK/port" ]] && break; sleep 0.1; done
PORT=$(cat "$WORK/port")
log "model on 127.0.0.1:$PORT, opencode $("$OPENCODE" --version 2>/dev/null || echo '?')"

# The scenario's scratch user: harnery's plugin installed the way a user
# would, the provider that reaches the scripted model, and a witness plugin
# that notes every event OpenCode fires (synchronously, to a file).
setup() {
  local D="$1"
  rm -rf "$D"
  mkdir -p "$D/home/.config/opencode/plugins" "$D/proj" "$D/hh"
  (cd "$D/proj" && git init -q)
  HOME="$D/home" XDG_CONFIG_HOME="$D/home/.config" "$HARNERY" install opencode --no-schedule --scope user \
    --hook-bin "$BIN/harnery-hook" > "$D/install.txt"
  cat > "$D/home/.config/opencode/opencode.json" <<JSON
{
  "autoupdate": false,
  "share": "disabled",
  "model": "fake/fake-model",
  "small_model": "fake/fake-model",
  "permission": {"bash": "allow", "edit": "allow", "webfetch": "allow"},
  "provider": {
    "fake": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Fake",
      "options": {"baseURL": "http://127.0.0.1:$PORT/v1", "apiKey": "fake-key"},
      "models": {"fake-model": {"name": "Fake Model", "limit": {"context": 100000, "output": 8000}}}
    }
  }
}
JSON
  cat > "$D/home/.config/opencode/plugins/witness.js" <<JS
import { appendFileSync } from "node:fs"
const OUT = $(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$D/witness.jsonl")
const note = (name, session) => {
  try { if (session) appendFileSync(OUT, JSON.stringify({ name, session }) + "\n") } catch {}
}
const sessionOf = (p) => p?.sessionID ?? p?.info?.sessionID ?? p?.part?.sessionID ?? (p?.info?.id?.startsWith("ses_") ? p.info.id : undefined)
export const Witness = async () => ({
  event: async ({ event }) => note(event.type, sessionOf(event.properties)),
  "chat.message": async (input) => note("chat.message", input.sessionID),
  "tool.execute.before": async (input) => note("tool.execute.before", input.sessionID),
  "tool.execute.after": async (input) => note("tool.execute.after", input.sessionID),
})
JS
}

# The client in the scenario's environment, offline (the npm install of
# @opencode-ai/plugin OpenCode starts in each config dir fails at once).
oc() {
  local D="$1"; shift
  (cd "$D/proj" && env -i HOME="$D/home" HARNERY_HOME="$D/hh" PATH="/usr/local/bin:/usr/bin:/bin" LANG=C.UTF-8 TERM=dumb \
     XDG_CONFIG_HOME="$D/home/.config" XDG_DATA_HOME="$D/home/.local/share" \
     XDG_STATE_HOME="$D/home/.local/state" XDG_CACHE_HOME="$D/home/.cache" \
     OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_SHARE=1 \
     OPENCODE_DISABLE_LSP_DOWNLOAD=1 npm_config_offline=true \
     "$OPENCODE" run --format json "$@")
}

start_finalize_loop() {
  local D="$1"
  rm -f "$D/hh.stop"
  ( while [[ ! -e "$D/hh.stop" ]]; do
      HOME="$D/home" XDG_DATA_HOME="$D/home/.local/share" HARNERY_HOME="$D/hh" "$HARNERY" finalize \
        > /dev/null 2>> "$D/loop.log" || echo "finalize exited $?" >> "$D/loop.log"
      sleep 0.3
    done ) &
  LOOP_PID=$!
}
stop_finalize_loop() { touch "$1/hh.stop"; wait "$LOOP_PID" || true; LOOP_PID=""; }

descendants() { local p; for p in $(pgrep -P "$1" || true); do echo "$p"; descendants "$p"; done; }

session_of() { python3 -c 'import json,sys
for l in open(sys.argv[1]):
    try: e = json.loads(l)
    except ValueError: continue
    if e.get("sessionID"): print(e["sessionID"]); break' "$1"; }

PROMPT="Run the shell command that prints the marker, then tell me what it printed."

run_scenario() {
  local name="$1" D="$WORK/$1" sid
  setup "$D"
  start_finalize_loop "$D"
  case "$name" in
    basic) oc "$D" "$PROMPT" > "$D/stdout.jsonl" 2> "$D/stderr.txt" || log "$name: opencode exited $?" ;;
    failing) oc "$D" "FAIL: run the shell command that lists the missing directory." \
               > "$D/stdout.jsonl" 2> "$D/stderr.txt" || log "$name: opencode exited $?" ;;
    two-turns)
      oc "$D" "$PROMPT" > "$D/stdout.jsonl" 2> "$D/stderr.txt" || log "$name: opencode exited $?"
      sid=$(session_of "$D/stdout.jsonl")
      oc "$D" --session "$sid" "Second turn: run the marker command again." \
        >> "$D/stdout.jsonl" 2>> "$D/stderr.txt" || log "$name: second run exited $?" ;;
    kill)
      oc "$D" "SLOW: run the slow command." > "$D/stdout.jsonl" 2> "$D/stderr.txt" &
      local runner=$! pid="" p kids=""
      # Wait for the shell call to be under way, then kill the client itself
      # and, by their ids, what it started (its shell and `sleep 30`).
      for _ in $(seq 300); do
        grep -q '"tool.execute.before"' "$D/witness.jsonl" 2>/dev/null && break
        sleep 0.1
      done
      sleep 1
      for p in $(descendants "$runner"); do
        [[ "$(readlink -f "/proc/$p/exe" 2>/dev/null)" == "$(readlink -f "$OPENCODE")" ]] && { pid=$p; break; }
      done
      if [[ -n "$pid" ]]; then
        kids=$(descendants "$pid")
        kill -9 "$pid"
        for p in $kids; do kill "$p" 2>/dev/null || true; done
      else
        log "kill: the client's process was not found"
      fi
      wait "$runner" 2>/dev/null || true
      ;;
  esac
  sleep 1
  stop_finalize_loop "$D"
  sid=$(session_of "$D/stdout.jsonl")
  if [[ -z "$sid" ]]; then echo "opencode $name: FAIL no session id in the client's output"; return 1; fi
  [[ "$name" == kill ]] && HARNERY_HOME="$D/hh" "$HARNERY" end "opencode/$sid" --reason "killed by the e2e" > /dev/null
  # Finalize until a pass drains nothing: a pass that reads the record
  # spools what it read for the next one to drain.
  for _ in 1 2 3 4 5; do
    out=$(HOME="$D/home" XDG_DATA_HOME="$D/home/.local/share" HARNERY_HOME="$D/hh" "$HARNERY" finalize \
      2>> "$D/loop.log") || echo "finalize exited $?" >> "$D/loop.log"
    [[ "$out" == *"finalized: 0 signals drained"* ]] && break
  done
  check "$D" "$name" "$sid"
}

# $1 dir, $2 scenario, $3 session id. Expectations from OpenCode's own files.
check() {
  HOME="$1/home" XDG_DATA_HOME="$1/home/.local/share" HARNERY_HOME="$1/hh" python3 - "$@" <<'PY'
import collections, json, os, re, sqlite3, subprocess, sys, time, urllib.request
d, name, sid = sys.argv[1], sys.argv[2], sys.argv[3]
h = os.environ["HARNERY"]
def run(*args):
    return subprocess.run([h, *args], capture_output=True, text=True, check=True).stdout
problems = []
# What harnery's plugin hands over: every event of the session but the bus
# events it lists as restating OpenCode's record.
plugin = open(f"{d}/home/.config/opencode/plugins/harnery.js").read()
restated = set(re.findall(r'"([a-z.]+)"', plugin.split("const RESTATED = new Set([")[1].split("])")[0]))
fired = collections.Counter()
for l in open(f"{d}/witness.jsonl"):
    w = json.loads(l)
    if w["session"] == sid and w["name"] not in restated:
        fired[w["name"]] += 1
events = [json.loads(l) for l in run("export", "--format", "jsonl").splitlines()]
ours = [e for e in events if e["session"]["session_id"] == sid]
landed = collections.Counter()
for name_, _ in {(r["event_name"], r["record_digest"]) for e in ours for r in e.get("raw", [])
                 if not r["event_name"].startswith("harnery.")}:
    landed[name_] += 1
if landed != fired:
    problems.append(f"hooks fired {dict(fired)} but the ledger has {dict(landed)}")
kinds = collections.Counter(e["type"] for e in events)
for bad in ("record.problem", "signal.unrecognized"):
    if kinds[bad]: problems.append(f"{kinds[bad]} {bad}")
requested = {e["id"] for e in ours if e["type"] == "tool.requested"}
completed = {e["payload"]["requested_event_id"]: e for e in ours if e["type"] == "tool.completed"}
if not requested: problems.append("no tool span")
for r in requested:
    c = completed.get(r)
    if c is None: problems.append(f"span {r} never closed")
    elif name == "kill":
        if c["provenance"]["attestation"] == "native": problems.append("the killed call closed natively")
    elif c["provenance"]["attestation"] != "native": problems.append(f"span {r} closed by recovery")
recorded = [e for e in ours if e["type"] == "tool.recorded"]
if not recorded or any(not e["payload"].get("span_request_event_id") for e in recorded):
    problems.append("a call of opencode.db joined no hook span")
if name == "failing" and not any(e["payload"].get("exit_code") == 2 for e in recorded):
    problems.append("the failing call's exit code 2 is not recorded")
db = sqlite3.connect(f"file:{d}/home/.local/share/opencode/opencode.db?mode=ro", uri=True)
row = db.execute("SELECT tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, "
                 "tokens_cache_write FROM session WHERE id = ?", (sid,)).fetchone()
usage = json.loads(run("usage", "--session", sid, "--json"))
t = usage["total"]["tokens"]
got = tuple(t.get(k) or 0 for k in ("input", "output", "reasoning", "cache_read", "cache_write"))
if got != tuple(row) or (name != "kill" and not any(row)):
    problems.append(f"tokens {got}, OpenCode's session row {tuple(row)}")
want = {"failing": "nonexistent-harnery", "kill": None}.get(name, "hello-from-harnery-e2e")
if want and want not in run("search", "--session", sid, want):
    problems.append(f"search does not find the tool output ({want})")
# serve lists the session with its agent.
serve = subprocess.Popen([h, "serve", "--addr", "127.0.0.1:0"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
try:
    url = None
    for _ in range(100):
        line = serve.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:\d+/\?token=\w+", line)
        if m: url = m.group(0); break
    page = urllib.request.urlopen(url, timeout=10).read().decode() if url else ""
    if not re.search(re.escape(sid) + r"(<[^>]*>|\s)*opencode", page):
        problems.append("serve does not list the session as OpenCode's")
finally:
    serve.kill()
loop = open(f"{d}/loop.log").read() if os.path.exists(f"{d}/loop.log") else ""
if "finalize exited" in loop: problems.append("a finalize failed: " + loop[-300:])
print(f"opencode {name}: " + ("OK" if not problems else "FAIL " + "; ".join(problems)))
sys.exit(1 if problems else 0)
PY
}

fail=0
for s in basic failing two-turns kill; do
  run_scenario "$s" || fail=1
done
log "work dir: $WORK"
exit $fail
