#!/usr/bin/env bash
# End to end with the real clients, offline: install @anthropic-ai/claude-code
# and @github/copilot from npm into a scratch dir, configure harnery with
# `harnery install` in a scratch HOME, run one scripted session of each
# against a fake Anthropic Messages server on 127.0.0.1 (carried below), and
# check that every hook invocation the client reports is in the spool, then
# finalize, validate, verify and show what was recorded, and that the
# ledger holds each client's own record (assistant text, tool call ids and
# token totals equal to the transcript's or events.jsonl's):
#   Claude Code: "Hooks: <Event>… [<harnery-hook …>] finished" lines in its --debug-file
#   Copilot:     hook.start events in ~/.copilot/session-state/<id>/events.jsonl
# Claude Code then runs a second time, resumed from the shim `harnery restore`
# hands out (its program and arguments, as data), and the ledger must show one
# causal session: one session, the restore, one `session.resumed` (evidence
# `restore`, incarnation 2, nothing superseded), the second leg after it.
# Then the session is given back at its first turn: Claude Code's own record is
# deleted, `harnery restore --checkpoint <turn 1> --apply --exec` runs from
# another directory with a new prompt, and the fake model's request for that
# prompt must hold turn 1's prompt and nothing of the later turn; the new
# session is recorded, starts with its link to the parent, and verify passes.
# Copilot the same, after a second turn (`copilot --resume`); and once more
# (the bash-form run) through the Copilot SDK: `restore --apply --transport
# sdk --exec` resumes the new session with @github/copilot-sdk (installed
# beside the clients) on the same Copilot runtime (COPILOT_CLI_PATH), and
# must exit 0 with the reply.
# Copilot runs once more against a model that reports cached tokens (the
# Anthropic provider's cache reads and writes): harnery's tokens must equal
# the server's, kind by kind (section `[usage]`).
# Copilot runs twice: once as `harnery install copilot` configures it when the
# installed client is on PATH (it must choose the exec form for this version),
# once with `--form bash`.
# Not part of CI (needs the npm registry once, then runs offline).
#
# Usage: scripts/e2e/claude-code-copilot.sh (scripts/e2e-real-clients.sh runs it for E2E_AGENTS claude-code,copilot)
# Env:   E2E_WORK   scratch dir (default: a new temp dir; kept for inspection)
#        E2E_NPM    dir with node_modules already installed (skips npm install)
#        CC_VERSION / COPILOT_VERSION  npm versions (default: 2.1.332 / 1.0.102, the corpus versions)
#        COPILOT_SDK_VERSION  @github/copilot-sdk's npm version (default 1.0.14), installed
#                   into E2E_NPM too when missing there
#        E2E_BIN    dir holding harnery and harnery-hook already built (skips the release
#                   build, e.g. target/debug after scripts/test)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK="${E2E_WORK:-$(mktemp -d /tmp/harnery-e2e.XXXXXX)}"
NPM="${E2E_NPM:-$WORK/npm}"
START=$(date +%s)
log() { echo "e2e: $*" >&2; }
mkdir -p "$WORK"

if [[ -n "${E2E_BIN:-}" ]]; then
  HARNERY="$(cd "$E2E_BIN" && pwd)/harnery"
else
  log "building harnery (release)"
  (cd "$ROOT" && cargo build --release --bins >&2)
  HARNERY="${CARGO_TARGET_DIR:-$ROOT/target}/release/harnery"
fi

if [[ ! -d "$NPM/node_modules/@anthropic-ai/claude-code" || ! -d "$NPM/node_modules/@github/copilot" ]]; then
  log "npm install into $NPM"
  mkdir -p "$NPM"
  [[ -f "$NPM/package.json" ]] || echo '{"name":"harnery-e2e","private":true}' > "$NPM/package.json"
  (cd "$NPM" && npm install --no-audit --no-fund \
     "@anthropic-ai/claude-code@${CC_VERSION:-2.1.332}" "@github/copilot@${COPILOT_VERSION:-1.0.102}" >&2)
fi
if [[ ! -d "$NPM/node_modules/@github/copilot-sdk" ]]; then
  log "npm install @github/copilot-sdk into $NPM"
  (cd "$NPM" && npm install --no-audit --no-fund "@github/copilot-sdk@${COPILOT_SDK_VERSION:-1.0.14}" >&2)
fi
CLAUDE="$(ls "$NPM"/node_modules/@anthropic-ai/claude-code-linux-*/claude 2>/dev/null | head -1 || true)"
[[ -x "$CLAUDE" ]] || CLAUDE="$NPM/node_modules/.bin/claude"
COPILOT="$(ls "$NPM"/node_modules/@github/copilot-linux-*/copilot 2>/dev/null | head -1 || true)"
[[ -x "$COPILOT" ]] || COPILOT="$NPM/node_modules/.bin/copilot"

# ---- fake model: Anthropic Messages API, one shell tool call then text ----
cat > "$WORK/fake_model.py" <<'PY'
import itertools, json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
COMMAND = "echo hello-from-harnery-e2e"
LOG = sys.argv[1]
# Every model call gets its own message id and token counts, so a check
# that mixes up two calls (or counts one twice) cannot pass by accident.
CALLS = itertools.count(1)
CALLS_LOCK = threading.Lock()
def next_call():
    with CALLS_LOCK:
        n = next(CALLS)
    return f"msg_e2e_{n:04d}", {"input_tokens": 100 + n, "output_tokens": 20 + n % 7}
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def reply(self, obj, code=200):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            m = {"type": "model", "id": "claude-sonnet-4", "display_name": "fake", "created_at": "2025-01-01T00:00:00Z"}
            return self.reply({"data": [m], "has_more": False, "first_id": m["id"], "last_id": m["id"]})
        self.reply({})
    def do_HEAD(self):
        self.reply({})
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n) or b"{}")
        path = self.path.split("?")[0]
        with open(LOG, "a") as f:
            def texts(m):
                c = m.get("content")
                if isinstance(c, str): return [c]
                return [b.get("text", "") for b in c or [] if isinstance(b, dict) and b.get("type") == "text"]
            f.write(json.dumps({"path": path, "tools": [t.get("name") for t in body.get("tools") or []],
                                "roles": [m.get("role") for m in body.get("messages") or []],
                                "texts": [[m.get("role"), t] for m in body.get("messages") or [] for t in texts(m)]}) + "\n")
        if path.endswith("/count_tokens"):
            return self.reply({"input_tokens": 100})
        if not path.endswith("/messages"):
            return self.reply({})
        content = self.answer(body)
        stop = "tool_use" if content[0]["type"] == "tool_use" else "end_turn"
        msg_id, usage = next_call()
        if not body.get("stream"):
            return self.reply({"id": msg_id, "type": "message", "role": "assistant", "model": body.get("model"),
                               "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        def ev(kind, data):
            self.wfile.write(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())
        ev("message_start", {"type": "message_start", "message": {"id": msg_id, "type": "message", "role": "assistant",
           "model": body.get("model"), "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}})
        for i, c in enumerate(content):
            if c["type"] == "text":
                ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})
                ev("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": c["text"]}})
            else:
                ev("content_block_start", {"type": "content_block_start", "index": i,
                   "content_block": {"type": "tool_use", "id": c["id"], "name": c["name"], "input": {}}})
                ev("content_block_delta", {"type": "content_block_delta", "index": i,
                   "delta": {"type": "input_json_delta", "partial_json": json.dumps(c["input"])}})
            ev("content_block_stop", {"type": "content_block_stop", "index": i})
        ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": usage["output_tokens"]}})
        ev("message_stop", {"type": "message_stop"})
        self.wfile.flush()
        self.close_connection = True
    def answer(self, body):
        tools = [t.get("name", "") for t in body.get("tools") or []]
        shell = next((t for t in tools if t.lower() == "bash"), None)
        msgs = body.get("messages") or []
        has_result = any(isinstance(m.get("content"), list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in m["content"]) for m in msgs)
        if shell and not has_result:
            return [{"type": "tool_use", "id": f"toolu_e2e{len(msgs)}", "name": shell,
                     "input": {"command": COMMAND, "description": "print a marker"}}]
        return [{"type": "text", "text": "Done: it printed hello-from-harnery-e2e."}]
srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
PY
python3 "$WORK/fake_model.py" "$WORK/requests.jsonl" > "$WORK/port" 2> "$WORK/fake_model.stderr" &
FAKE_PID=$!
trap 'kill $FAKE_PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do [[ -s "$WORK/port" ]] && break; sleep 0.1; done
PORT=$(cat "$WORK/port")
log "fake model on 127.0.0.1:$PORT"

fail=0
PROMPT="Run the shell command that prints the marker, then tell me what it printed."

# ---- Claude Code ----
run_claude() {
  local D="$WORK/claude" t0=$(date +%s%N)
  mkdir -p "$D/home" "$D/proj" "$D/hh"
  (cd "$D/proj" && git init -q)
  HOME="$D/home" "$HARNERY" install claude-code --no-schedule --scope user >&2
  (cd "$D/proj" && env -i HOME="$D/home" PATH="$PATH" LANG=C.UTF-8 SHELL=/bin/bash TERM=dumb \
     HARNERY_HOME="$D/hh" ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY="sk-ant-fake-e2e-0000" \
     CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1 \
     timeout 120 "$CLAUDE" -p "$PROMPT" --output-format stream-json --verbose --include-hook-events --allowedTools Bash \
       --debug-file "$D/debug.log" > "$D/stream.jsonl" 2> "$D/stderr.txt") || log "claude exited $?"
  log "claude-code run took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  python3 - "$D" <<'PY' || return 1
import collections, json, re, subprocess, sys
d = sys.argv[1]
client = collections.Counter()
for line in open(f"{d}/stream.jsonl", errors="replace"):
    try: e = json.loads(line)
    except ValueError: continue
    if e.get("subtype") == "hook_started":
        client[e["hook_event"]] += 1
debug = open(f"{d}/debug.log", errors="replace").read()
# The stream ends before SessionEnd hooks run; the debug log records them.
if re.search(r"SessionEnd\S* \[[^\]]*harnery-hook[^\]]*\] completed", debug) and not client["SessionEnd"]:
    client["SessionEnd"] += 1
executions = debug.count("Hook output does not start with {")

spool = collections.Counter()
import os
lines = subprocess.run([os.environ["HARNERY"], "spool", "ls", "--json"], env=dict(os.environ, HARNERY_HOME=f"{d}/hh"),
                       capture_output=True, text=True).stdout.splitlines()
for l in lines:
    s = json.loads(l)
    if "adapter" not in s: continue
    cat = subprocess.run([os.environ["HARNERY"], "spool", "cat", s["adapter"], s["session_id"] or "", "--json"],
                         env=dict(os.environ, HARNERY_HOME=f"{d}/hh"), capture_output=True, text=True).stdout
    for r in cat.splitlines():
        r = json.loads(r)
        if "envelope" in r: spool[r["envelope"]["event"]] += 1
print("claude-code: client ran", sum(client.values()), dict(client))
print("claude-code: spool has ", sum(spool.values()), dict(spool))
print("claude-code: hook executions in the debug log:", executions)
ok = sum(client.values()) > 0 and all(spool[k] >= v for k, v in client.items()) and sum(spool.values()) >= executions
print("claude-code:", "OK" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
PY
}

# ---- Copilot CLI ----
# $1: the hook form expected in the installed file; $2...: extra install flags.
run_copilot() {
  local form="$1"; shift
  local D="$WORK/copilot-$form" t0=$(date +%s%N)
  mkdir -p "$D/home" "$D/proj" "$D/hh"
  (cd "$D/proj" && git init -q)
  # The npm-installed client is on PATH here, as after `npm install -g`.
  HOME="$D/home" PATH="$NPM/node_modules/.bin:$PATH" HARNERY_NPM_PREFIXES="" \
    "$HARNERY" install copilot --no-schedule --scope user "$@" | tee "$D/install.txt" >&2
  if ! grep -q "^copilot hook form: $form, because" "$D/install.txt"; then
    log "copilot: install did not choose the $form form"; return 1
  fi
  python3 - "$D/home/.copilot/hooks/harnery.json" "$form" <<'PY' || return 1
import json, sys
hooks = json.load(open(sys.argv[1]))["hooks"]
form = sys.argv[2]
bad = [k for k, v in hooks.items() if len(v) != 1 or form not in v[0] or
       (form == "exec" and v[0].get("args") != ["copilot", k])]
print(f"copilot-{form}: {len(hooks)} events installed in the {form} form" if not bad else f"copilot-{form}: wrong entries for {bad}")
sys.exit(1 if bad else 0)
PY
  (cd "$D/proj" && env -i HOME="$D/home" PATH="$PATH" LANG=C.UTF-8 TERM=dumb HARNERY_HOME="$D/hh" \
     COPILOT_PROVIDER_BASE_URL="http://127.0.0.1:$PORT" COPILOT_PROVIDER_TYPE=anthropic \
     COPILOT_PROVIDER_API_KEY=fake-key COPILOT_MODEL=claude-sonnet-4 COPILOT_OFFLINE=true COPILOT_AUTO_UPDATE=false \
     timeout 120 "$COPILOT" -p "$PROMPT" --allow-all-tools --no-auto-update --log-level all \
       > "$D/stdout.txt" 2> "$D/stderr.txt") || log "copilot exited $?"
  log "copilot ($form form) run took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  python3 - "$D" <<'PY' || return 1
import collections, glob, json, os, subprocess, sys
d = sys.argv[1]
client = collections.Counter()
for f in glob.glob(f"{d}/home/.copilot/session-state/*/events.jsonl"):
    for line in open(f, errors="replace"):
        try: e = json.loads(line)
        except ValueError: continue
        if e.get("type") == "hook.start":
            client[e["data"]["hookType"]] += 1
env = dict(os.environ, HARNERY_HOME=f"{d}/hh")
spool = collections.Counter()
for l in subprocess.run([os.environ["HARNERY"], "spool", "ls", "--json"], env=env, capture_output=True, text=True).stdout.splitlines():
    s = json.loads(l)
    if "adapter" not in s: continue
    cat = subprocess.run([os.environ["HARNERY"], "spool", "cat", s["adapter"], s["session_id"] or "", "--json"],
                         env=env, capture_output=True, text=True).stdout
    for r in cat.splitlines():
        r = json.loads(r)
        if "envelope" in r: spool[r["envelope"]["event"]] += 1
name = os.path.basename(d)
print(f"{name}: client ran", sum(client.values()), dict(client))
print(f"{name}: spool has ", sum(spool.values()), dict(spool))
ok = sum(client.values()) > 0 and all(spool[k] >= v for k, v in client.items())
print(f"{name}:", "OK" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
PY
}

# ---- The rest of the pipeline on what the real clients delivered ----
finish_ledger() {
  local agent="$1" hh="$WORK/$1/hh"
  # As cron would: the agents' user, so Copilot's record is found under ~/.copilot.
  HOME="$WORK/$1/home" HARNERY_HOME="$hh" "$HARNERY" finalize || return 1
  HARNERY_HOME="$hh" "$HARNERY" validate || return 1
  HARNERY_HOME="$hh" "$HARNERY" verify || return 1
  HARNERY_HOME="$hh" "$HARNERY" sessions || return 1
  local id
  id=$(HARNERY_HOME="$hh" "$HARNERY" sessions --json | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["session"]["session_id"])') || return 1
  HARNERY_HOME="$hh" "$HARNERY" show "$id" || return 1
  check_record "$WORK/$agent" || return 1
  log "$agent: finalize, validate, verify and show OK"
}

# The ledger holds the client's own record: the same assistant text, tool
# call ids and token totals as the record the client wrote.
check_record() {
  python3 - "$1" <<'PY'
import collections, glob, json, os, subprocess, sys
d = sys.argv[1]
name = os.path.basename(d)
def frames(pattern):
    for f in glob.glob(pattern):
        for line in open(f, errors="replace"):
            try: yield json.loads(line)
            except ValueError: pass
texts, calls, tokens = collections.Counter(), set(), 0
if name == "claude":
    seen = set()
    for v in frames(f"{d}/home/.claude/projects/*/*.jsonl"):
        if v.get("type") != "assistant": continue
        m = v["message"]
        blocks = m.get("content") if isinstance(m.get("content"), list) else []
        t = "\n".join(b["text"] for b in blocks if b.get("type") == "text")
        if t: texts[t] += 1
        calls |= {b["id"] for b in blocks if b.get("type") == "tool_use"}
        if m.get("usage") and m["id"] not in seen:
            seen.add(m["id"]); tokens += m["usage"].get("input_tokens", 0) + m["usage"].get("output_tokens", 0)
else:
    for v in frames(f"{d}/home/.copilot/session-state/*/events.jsonl"):
        data = v.get("data") or {}
        if v.get("type") == "assistant.message" and data.get("content"): texts[data["content"]] += 1
        if v.get("type") == "tool.execution_start": calls.add(data["toolCallId"])
        if v.get("type") == "session.usage_record":
            u = data["usage"]; tokens += u.get("inputTokens", 0) + u.get("outputTokens", 0)
out = subprocess.run([os.environ["HARNERY"], "export", "--format", "jsonl"], capture_output=True, text=True,
                     env=dict(os.environ, HARNERY_HOME=f"{d}/hh")).stdout
got_texts, got_calls, got_tokens = collections.Counter(), set(), 0
for line in out.splitlines():
    e = json.loads(line); p = e["payload"]
    if e["type"] == "message.assistant" and p.get("text"): got_texts[p["text"]] += 1
    if e["type"] == "tool.recorded": got_calls.add(p["tool_call_id"])
    if e["type"] == "usage.reported": got_tokens += (p.get("input_tokens") or 0) + (p.get("output_tokens") or 0)
ok = texts == got_texts and calls == got_calls and tokens == got_tokens and texts
print(f"{name}: record has {sum(texts.values())} assistant texts, {len(calls)} tool calls, {tokens} tokens; "
      f"ledger has {sum(got_texts.values())}, {len(got_calls)}, {got_tokens}:", "OK" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
PY
}

# ---- Both clients again, with finalize from a fast cron (every 0.3 s) ----
# The record join must not invent losses when finalize runs between the
# agent's hooks and its record writes: no record.problem, every hook span
# joined, per-turn tokens equal to the record's, and a `--fork-session`
# resume of a Claude Code session counted once.
start_finalize_loop() {
  local home="$1" hh="$2"
  rm -f "$hh.stop"
  ( while [[ ! -e "$hh.stop" ]]; do
      HOME="$home" HARNERY_HOME="$hh" "$HARNERY" finalize > /dev/null 2>> "$hh.loop.log" \
        || echo "finalize exited $?" >> "$hh.loop.log"
      sleep 0.3
    done ) &
  LOOP_PID=$!
}
stop_finalize_loop() { touch "$1.stop"; wait "$LOOP_PID" || true; }

claude_env() {
  local D="$1"
  env -i HOME="$D/home" PATH="$PATH" LANG=C.UTF-8 SHELL=/bin/bash TERM=dumb \
    HARNERY_HOME="$D/hh" ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY="sk-ant-fake-e2e-0000" \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1 "${@:2}"
}

run_claude_cron() {
  local D="$WORK/claude-cron" t0=$(date +%s%N) id
  mkdir -p "$D/home" "$D/proj" "$D/hh"
  (cd "$D/proj" && git init -q)
  HOME="$D/home" "$HARNERY" install claude-code --no-schedule --scope user >&2
  start_finalize_loop "$D/home" "$D/hh"
  (cd "$D/proj" && claude_env "$D" timeout 120 "$CLAUDE" -p "$PROMPT" --output-format stream-json --verbose \
     --allowedTools Bash > "$D/stream.jsonl" 2> "$D/stderr.txt") || log "claude exited $?"
  id=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("session_id"): print(e["session_id"]); break' "$D/stream.jsonl") || return 1
  (cd "$D/proj" && claude_env "$D" timeout 120 "$CLAUDE" --resume "$id" --fork-session -p "Run it once more." \
     --output-format stream-json --verbose --allowedTools Bash > "$D/stream-fork.jsonl" 2> "$D/stderr-fork.txt") \
     || log "claude --fork-session exited $?"
  sleep 1
  stop_finalize_loop "$D/hh"
  HOME="$D/home" HARNERY_HOME="$D/hh" "$HARNERY" finalize >&2 || return 1
  log "claude-code under a 0.3 s finalize loop took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  check_cron "$D" claude || return 1
}

run_copilot_cron() {
  local D="$WORK/copilot-cron" t0=$(date +%s%N)
  mkdir -p "$D/home" "$D/proj" "$D/hh"
  (cd "$D/proj" && git init -q)
  HOME="$D/home" PATH="$NPM/node_modules/.bin:$PATH" HARNERY_NPM_PREFIXES="" \
    "$HARNERY" install copilot --no-schedule --scope user >&2
  start_finalize_loop "$D/home" "$D/hh"
  (cd "$D/proj" && env -i HOME="$D/home" PATH="$PATH" LANG=C.UTF-8 TERM=dumb HARNERY_HOME="$D/hh" \
     COPILOT_PROVIDER_BASE_URL="http://127.0.0.1:$PORT" COPILOT_PROVIDER_TYPE=anthropic \
     COPILOT_PROVIDER_API_KEY=fake-key COPILOT_MODEL=claude-sonnet-4 COPILOT_OFFLINE=true COPILOT_AUTO_UPDATE=false \
     timeout 120 "$COPILOT" -p "$PROMPT" --allow-all-tools --no-auto-update \
       > "$D/stdout.txt" 2> "$D/stderr.txt") || log "copilot exited $?"
  sleep 1
  stop_finalize_loop "$D/hh"
  HOME="$D/home" HARNERY_HOME="$D/hh" "$HARNERY" finalize >&2 || return 1
  log "copilot under a 0.3 s finalize loop took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  check_cron "$D" copilot || return 1
}

# $1: the run's dir; $2: claude or copilot. Expectations come from the
# agent's own record files, never from harnery's output.
check_cron() {
  HARNERY_HOME="$1/hh" python3 - "$1" "$2" <<'PY'
import collections, glob, json, os, subprocess, sys
d, agent = sys.argv[1], sys.argv[2]
h = os.environ["HARNERY"]
def run(*args):
    return subprocess.run([h, *args], capture_output=True, text=True, check=True).stdout
def frames(pattern):
    for f in sorted(glob.glob(pattern)):
        for line in open(f, errors="replace"):
            try: yield json.loads(line)
            except ValueError: pass
problems = []
# Expected: each model call once, and its tokens per turn.
calls, turns = {}, collections.Counter()
if agent == "claude":
    files = glob.glob(f"{d}/home/.claude/projects/*/*.jsonl")
    first_time = lambda f: min((json.loads(l).get("timestamp") or "~") for l in open(f) if l.strip())
    for f in sorted(files, key=first_time):  # the session that made a call first has it
        lines = [json.loads(l) for l in open(f) if l.strip()]
        by_uuid = {l.get("uuid"): l for l in lines}
        for l in lines:
            if l.get("type") != "assistant" or not l["message"].get("usage"): continue
            mid = l["message"]["id"]
            p, turn = l, None
            while p is not None and turn is None:
                turn = p.get("promptId"); p = by_uuid.get(p.get("parentUuid"))
            u = l["message"]["usage"]
            if mid not in calls:
                calls[mid] = (turn, u.get("input_tokens", 0) + u.get("output_tokens", 0))
    for turn, n in calls.values(): turns[turn] += n
else:
    for v in frames(f"{d}/home/.copilot/session-state/*/events.jsonl"):
        if v.get("type") == "session.usage_record":
            u = v["data"]["usage"]
            calls[v.get("id")] = (None, u.get("inputTokens", 0) + u.get("outputTokens", 0))
expected_total = sum(n for _, n in calls.values())
events = [json.loads(l) for l in run("export", "--format", "jsonl").splitlines()]
kinds = collections.Counter(e["type"] for e in events)
if kinds["record.problem"]: problems.append(f"{kinds['record.problem']} record.problem events")
hook_spans = {e["id"] for e in events if e["type"] == "tool.requested" and e["provenance"]["attestation"] == "native"}
joined = {e["payload"].get("span_request_event_id") for e in events if e["type"] == "tool.recorded"}
unjoined_records = sum(1 for e in events if e["type"] == "tool.recorded" and not e["payload"].get("span_request_event_id"))
if hook_spans - joined: problems.append(f"{len(hook_spans - joined)} of {len(hook_spans)} hook spans not joined")
if unjoined_records: problems.append(f"{unjoined_records} recorded calls without a hook span")
usage = json.loads(run("usage", "--json"))
t = usage["total"]["tokens"]
got_total = (t.get("input") or 0) + (t.get("output") or 0)
if got_total != expected_total: problems.append(f"usage total {got_total} tokens, the record's {expected_total}")
if agent == "claude":
    got_turns = []
    for s in run("sessions", "--json").splitlines():
        sid = json.loads(s)["session"]["session_id"]
        r = json.loads(run("receipts", sid, "--json"))
        got_turns += [x["tokens"] for x in r["turns"] if x.get("tokens") is not None]
    if sorted(got_turns) != sorted(turns.values()):
        problems.append(f"per-turn tokens {sorted(got_turns)}, the record's {sorted(turns.values())}")
loop = open(f"{d}/hh.loop.log").read() if os.path.exists(f"{d}/hh.loop.log") else ""
if "finalize exited" in loop: problems.append("a finalize in the loop failed: " + loop[-300:])
print(f"{os.path.basename(d)}: {len(calls)} model calls, {expected_total} tokens, {len(hook_spans)} hook spans, "
      f"{len(turns)} turns:", "OK" if not problems else "MISMATCH " + "; ".join(problems))
sys.exit(1 if problems else 0)
PY
}

# ---- Claude Code again, resumed from a `harnery restore` shim ----
resume_claude() {
  local D="$WORK/claude" hh="$WORK/claude/hh" id t0=$(date +%s%N)
  id=$(HARNERY_HOME="$hh" "$HARNERY" sessions --json | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["session"]["session_id"])') || return 1
  HARNERY_HOME="$hh" "$HARNERY" checkpoints "$id" >&2 || return 1
  HARNERY_HOME="$hh" "$HARNERY" restore "$id" --json --record > "$D/restore.json" || return 1
  local shim
  mapfile -t shim < <(python3 - "$D/restore.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["shim"]
assert s["transport"] == "cli" and s["program"] == "claude" and s["native"], s
print("\n".join(s["arguments"]))
PY
) || return 1
  log "claude-code: resuming with the shim: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["shim"]["text"])' "$D/restore.json")"
  (cd "$D/proj" && env -i HOME="$D/home" PATH="$PATH" LANG=C.UTF-8 SHELL=/bin/bash TERM=dumb \
     HARNERY_HOME="$hh" ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY="sk-ant-fake-e2e-0000" \
     CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1 \
     timeout 120 "$CLAUDE" "${shim[@]}" -p "Run it once more." --output-format stream-json --verbose --allowedTools Bash \
       --debug-file "$D/debug-2.log" > "$D/stream-2.jsonl" 2> "$D/stderr-2.txt") || log "claude --resume exited $?"
  log "claude-code resumed run took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  HOME="$D/home" HARNERY_HOME="$hh" "$HARNERY" finalize >&2 || return 1
  HARNERY_HOME="$hh" "$HARNERY" verify >&2 || return 1
  HARNERY_HOME="$hh" "$HARNERY" checkpoints "$id" >&2 || return 1
  HARNERY_HOME="$hh" python3 - "$id" "$D/restore.json" <<'PY' || return 1
import json, os, subprocess, sys
sid, restore = sys.argv[1], json.load(open(sys.argv[2]))
h = os.environ["HARNERY"]
sessions = [json.loads(l) for l in subprocess.run([h, "sessions", "--json"], capture_output=True, text=True).stdout.splitlines()]
events = [json.loads(l) for l in subprocess.run([h, "replay", sid, "--json", "--include-superseded"], capture_output=True, text=True).stdout.splitlines()]
kinds = [e["type"] for e in events]
resumed = [e for e in events if e["type"] == "session.resumed"]
restored = [e for e in events if e["type"] == "restore.recorded"]
seed = restore["seed"]
problems = []
if len(sessions) != 1: problems.append(f"{len(sessions)} sessions, not one")
if len(resumed) != 1 or len(restored) != 1: problems.append(f"{len(resumed)} resumes and {len(restored)} restores")
else:
    r = resumed[0]["payload"]
    if r["evidence"] != "restore" or r["incarnation"] != 2: problems.append(f"resume {r}")
    if r["superseded"]["from"] != r["superseded"]["to"]: problems.append(f"superseded {r['superseded']}")
    if restored[0]["offset"] != seed["next_offset"]: problems.append("the restore is not at the seed's next offset")
    after = [e for e in events if e["offset"] > resumed[0]["offset"]]
    if not any(e["type"] == "prompt.submitted" for e in after): problems.append("no second leg after the resume")
    if any(e.get("incarnation") != 2 for e in after): problems.append("second leg not incarnation 2")
if [e["id"] for e in events[:len(seed["events"])]] != [e["id"] for e in seed["events"]]: problems.append("the seed is not the first leg")
if any(e.get("superseded") for e in events): problems.append("something superseded")
print(f"claude-code resume: {len(events)} events, {kinds.count('prompt.submitted')} prompts, "
      f"{kinds.count('checkpoint.recorded')} checkpoints, seed {len(seed['events'])} events:",
      "OK, one causal session" if not problems else "MISMATCH " + "; ".join(problems))
sys.exit(1 if problems else 0)
PY
  check_record "$D" || return 1
}

# ---- Claude Code given back at turn 1 (`restore --apply --exec`) ----
apply_claude() {
  local D="$WORK/claude" hh="$WORK/claude/hh" id cp n0 t0=$(date +%s%N)
  id=$(HARNERY_HOME="$hh" "$HARNERY" sessions --json | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["session"]["session_id"])') || return 1
  cp=$(HARNERY_HOME="$hh" "$HARNERY" checkpoints "$id" --json | python3 -c '
import json, sys
log = json.load(sys.stdin)
print([c for c in log["checkpoints"] if c["origin"] == "turn" and c["valid"]][0]["checkpoint_id"])') || return 1
  find "$D/home/.claude/projects" -name "$id.jsonl" -delete
  mkdir -p "$D/bin" && ln -sf "$CLAUDE" "$D/bin/claude"
  n0=$(wc -l < "$WORK/requests.jsonl")
  log "claude-code: restore $id --checkpoint $cp --apply --exec (from /)"
  (cd / && env -i HOME="$D/home" PATH="$D/bin:$PATH" LANG=C.UTF-8 SHELL=/bin/bash TERM=dumb \
     HARNERY_HOME="$hh" ANTHROPIC_BASE_URL="http://127.0.0.1:$PORT" ANTHROPIC_API_KEY="sk-ant-fake-e2e-0000" \
     CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1 \
     timeout 120 "$HARNERY" restore "$id" --checkpoint "$cp" --apply --exec -- -p "Turn three, from turn one." \
       --output-format stream-json --verbose --allowedTools Bash --debug-file "$D/debug-3.log" \
       > "$D/stream-3.jsonl" 2> "$D/stderr-3.txt") || log "restore --apply --exec exited $?"
  log "claude-code given back and run in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  HOME="$D/home" HARNERY_HOME="$hh" "$HARNERY" finalize >&2 || return 1
  HARNERY_HOME="$hh" "$HARNERY" validate >&2 || return 1
  HARNERY_HOME="$hh" "$HARNERY" verify >&2 || return 1
  HARNERY_HOME="$hh" given_back "$id" "$cp" "$n0" || return 1
}

# ---- Copilot: a second turn, then given back at turn 1 ----
# $1: the run's dir; $2: cli (`copilot --resume`) or sdk (@github/copilot-sdk).
apply_copilot() {
  local D="$WORK/$1" hh="$WORK/$1/hh" transport="$2" id cp n0 t0=$(date +%s%N)
  local env_=(env -i HOME="$D/home" LANG=C.UTF-8 TERM=dumb HARNERY_HOME="$hh"
    COPILOT_PROVIDER_BASE_URL="http://127.0.0.1:$PORT" COPILOT_PROVIDER_TYPE=anthropic
    COPILOT_PROVIDER_API_KEY=fake-key COPILOT_MODEL=claude-sonnet-4 COPILOT_OFFLINE=true COPILOT_AUTO_UPDATE=false)
  id=$(HARNERY_HOME="$hh" "$HARNERY" sessions --json | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["session"]["session_id"])') || return 1
  (cd "$D/proj" && "${env_[@]}" PATH="$PATH" timeout 120 "$COPILOT" -p "Run it once more." --resume "$id" \
     --allow-all-tools --no-auto-update > "$D/stdout-2.txt" 2> "$D/stderr-2.txt") || log "copilot --resume exited $?"
  HOME="$D/home" HARNERY_HOME="$hh" "$HARNERY" finalize >&2 || return 1
  cp=$(HARNERY_HOME="$hh" "$HARNERY" checkpoints "$id" --json | python3 -c '
import json, sys
log = json.load(sys.stdin)
print([c for c in log["checkpoints"] if c["origin"] == "turn" and c["valid"]][0]["checkpoint_id"])') || return 1
  rm -f "$D/home/.copilot/session-state/$id/events.jsonl"
  mkdir -p "$D/bin" && ln -sf "$COPILOT" "$D/bin/copilot"
  n0=$(wc -l < "$WORK/requests.jsonl")
  if [[ "$transport" == sdk ]]; then
    # With a time limit the turn ends well inside: the timer must not
    # disturb a turn that ends.
    log "copilot: restore $id --checkpoint $cp --apply --transport sdk --sdk-timeout 100 --exec (from /)"
    local rc=0
    (cd / && "${env_[@]}" PATH="$PATH" COPILOT_CLI_PATH="$COPILOT" timeout 120 "$HARNERY" restore "$id" \
       --checkpoint "$cp" --apply --transport sdk --sdk "$NPM" --sdk-timeout 100 --exec \
       -- -p "Turn three, from turn one." --allow-all-tools > "$D/stdout-3.txt" 2> "$D/stderr-3.txt") || rc=$?
    log "copilot (sdk) exited $rc; the reply: $(tail -1 "$D/stdout-3.txt")"
    log "copilot (sdk) said: $(grep '^harnery: Copilot session' "$D/stderr-3.txt" || tail -3 "$D/stderr-3.txt")"
    [[ $rc == 0 ]] || return 1
  else
    log "copilot: restore $id --checkpoint $cp --apply --exec (from /)"
    (cd / && "${env_[@]}" PATH="$D/bin:$PATH" timeout 120 "$HARNERY" restore "$id" --checkpoint "$cp" --apply --exec \
       -- -p "Turn three, from turn one." --allow-all-tools --no-auto-update \
       > "$D/stdout-3.txt" 2> "$D/stderr-3.txt") || log "restore --apply --exec exited $?"
  fi
  log "copilot ($transport) given back and run in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  HOME="$D/home" HARNERY_HOME="$hh" "$HARNERY" finalize >&2 || return 1
  HARNERY_HOME="$hh" "$HARNERY" validate >&2 || return 1
  HARNERY_HOME="$hh" "$HARNERY" verify >&2 || return 1
  HARNERY_HOME="$hh" given_back "$id" "$cp" "$n0" || return 1
}

# The fake model's requests for the new prompt hold turn 1's prompt and
# nothing of the later turn; one new session, starting with its link.
given_back() {
  python3 - "$1" "$2" "$WORK/requests.jsonl" "$3" "$PROMPT" <<'PY'
import json, os, subprocess, sys
sid, cp, log, n0, first = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
h = os.environ["HARNERY"]
asked = [json.loads(l) for l in open(log).read().splitlines()[n0:]]
asked = [r for r in asked if r["path"].endswith("/messages") and any("Turn three, from turn one." in t for _, t in r.get("texts", []))]
problems = []
if not asked: problems.append("no request for the new prompt")
for r in asked[:1]:
    said = [t for _, t in r["texts"]]
    if not any(first in t for t in said): problems.append("turn 1's prompt is missing")
    if any("Run it once more." in t for t in said): problems.append("the later turn is in the request")
sessions = [json.loads(l)["session"]["session_id"] for l in subprocess.run([h, "sessions", "--json"], capture_output=True, text=True).stdout.splitlines()]
new = [s for s in sessions if s != sid]
if len(new) != 1: problems.append(f"sessions {sessions}")
else:
    log_ = json.loads(subprocess.run([h, "checkpoints", new[0], "--json"], capture_output=True, text=True).stdout)
    first_cp = log_["checkpoints"][0] if log_["checkpoints"] else {}
    if first_cp.get("checkpoint_id") != f"restored-from:{cp}": problems.append(f"no link to the parent: {first_cp}")
print(f"given back ({sid}): {len(asked)} request(s) for the new prompt;",
      "OK, turn 1 and the new prompt only" if not problems else "MISMATCH " + "; ".join(problems))
sys.exit(1 if problems else 0)
PY
}

# ==== Look-only restore: Claude Code resumed exactly at turn 1 (section: restore) ====
# A three-turn print-mode session (turns 2 and 3 resumed in place), then the
# command a look-only `harnery restore --checkpoint <turn 1> --json` prints,
# run as data (its program and arguments, in its cwd) with a new prompt: the
# fake model's request for that prompt must hold turn 1's prompt and nothing
# of turns 2 and 3, the restore itself must leave harnery's home byte for
# byte as it was, and the agent's own transcript must stay as it was (the
# resume forks).
EXACT_T1="Turn one: run the shell command that prints the marker."
EXACT_T2="Turn two: say it once more."
EXACT_T3="Turn three: and once again."
EXACT_T4="Turn four, from turn one."
exact_claude() {
  local D="$WORK/claude-exact" id cp n0 before after t0=$(date +%s%N)
  mkdir -p "$D/home" "$D/proj" "$D/hh"
  (cd "$D/proj" && git init -q)
  HOME="$D/home" "$HARNERY" install claude-code --no-schedule --scope user >&2
  local common=(--output-format stream-json --verbose --allowedTools Bash)
  (cd "$D/proj" && claude_env "$D" timeout 120 "$CLAUDE" -p "$EXACT_T1" "${common[@]}" \
     > "$D/stream-1.jsonl" 2> "$D/stderr-1.txt") || log "claude (turn 1) exited $?"
  id=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get("session_id"): print(e["session_id"]); break' "$D/stream-1.jsonl") || return 1
  (cd "$D/proj" && claude_env "$D" timeout 120 "$CLAUDE" -p --resume "$id" "$EXACT_T2" "${common[@]}" \
     > "$D/stream-2.jsonl" 2> "$D/stderr-2.txt") || log "claude (turn 2) exited $?"
  (cd "$D/proj" && claude_env "$D" timeout 120 "$CLAUDE" -p --resume "$id" "$EXACT_T3" "${common[@]}" \
     > "$D/stream-3.jsonl" 2> "$D/stderr-3.txt") || log "claude (turn 3) exited $?"
  HOME="$D/home" HARNERY_HOME="$D/hh" "$HARNERY" finalize >&2 || return 1
  cp=$(HARNERY_HOME="$D/hh" "$HARNERY" checkpoints "$id" --json | python3 -c '
import json, sys
log = json.load(sys.stdin)
turns = sorted((c for c in log["checkpoints"] if c["origin"] == "turn" and c["valid"]), key=lambda c: c["offset"])
print(len(turns), turns[0]["checkpoint_id"])') || return 1
  log "claude-code (exact): $cp (turn checkpoints, the first)"
  cp=${cp#* }
  local transcript
  transcript=$(ls "$D"/home/.claude/projects/*/"$id".jsonl) || return 1
  before=$(cd "$D" && find hh -type f ! -name '*-shm' -print0 | sort -z | xargs -0 sha256sum; sha256sum "$transcript")
  HOME="$D/home" HARNERY_HOME="$D/hh" "$HARNERY" restore "$id" --checkpoint "$cp" --json > "$D/restore.json" || return 1
  HOME="$D/home" HARNERY_HOME="$D/hh" "$HARNERY" restore "$id" --checkpoint "$cp" > "$D/restore.txt" || return 1
  after=$(cd "$D" && find hh -type f ! -name '*-shm' -print0 | sort -z | xargs -0 sha256sum; sha256sum "$transcript")
  local shim cwd
  mapfile -t shim < <(python3 - "$D/restore.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["shim"]
assert s["transport"] == "cli" and s["program"] == "claude" and s["runnable"], s
assert "--resume-session-at" in s["arguments"] and "--fork-session" in s["arguments"], s
print(s["cwd"])
print("\n".join(s["arguments"]))
PY
) || return 1
  cwd=${shim[0]}; shim=("${shim[@]:1}")
  log "claude-code (exact): the look-only restore printed: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["shim"]["text"])' "$D/restore.json")"
  log "claude-code (exact): $(grep 'interactive resume:' "$D/restore.txt" | sed 's/^ *//')"
  n0=$(wc -l < "$WORK/requests.jsonl")
  local rows; rows=$(wc -l < "$transcript")
  (cd "$cwd" && claude_env "$D" timeout 120 "$CLAUDE" "${shim[@]}" "$EXACT_T4" "${common[@]}" \
     > "$D/stream-4.jsonl" 2> "$D/stderr-4.txt") || log "claude (the printed resume) exited $?"
  log "claude-code (exact) took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  python3 - "$WORK/requests.jsonl" "$n0" "$D/stream-4.jsonl" "$id" "$EXACT_T1" "$EXACT_T2" "$EXACT_T3" "$EXACT_T4" \
    "$([[ "$before" == "$after" ]] && echo same || echo changed)" "$transcript" "$rows" <<'PY'
import json, sys
log, n0, stream, sid, t1, t2, t3, t4, home, transcript, lines_before = sys.argv[1:12]
asked = [json.loads(l) for l in open(log).read().splitlines()[int(n0):]]
asked = [r for r in asked if r["path"].endswith("/messages") and any(t4 in t for _, t in r.get("texts", []))]
problems = []
if not asked: problems.append("no request for the new prompt")
for r in asked[:1]:
    said = [t for _, t in r["texts"]]
    if not any(t1 in t for t in said): problems.append("turn 1's prompt is missing")
    for name, later in (("turn 2", t2), ("turn 3", t3)):
        if any(later in t for t in said): problems.append(f"{name} reached the model")
new = {json.loads(l).get("session_id") for l in open(stream) if l.strip().startswith("{")} - {None}
if sid in new or not new: problems.append(f"the resume ran as {new}, not as a fork")
if home != "same": problems.append("the look-only restore changed harnery's home")
if sum(1 for _ in open(transcript)) != int(lines_before): problems.append("the original transcript changed")
print(f"claude-code (exact): {len(asked)} request(s) for the new prompt, {len(asked[0]['texts']) if asked else 0} texts;",
      "OK, turn 1 and the new prompt only; harnery wrote nothing" if not problems else "MISMATCH " + "; ".join(problems))
sys.exit(1 if problems else 0)
PY
}
# ==== end of section: restore ====

export HARNERY
run_claude || fail=1
run_copilot exec || fail=1
run_copilot bash --form bash || fail=1
finish_ledger claude || fail=1
resume_claude || fail=1
apply_claude || fail=1
exact_claude || fail=1  # section: restore
finish_ledger copilot-exec || fail=1
apply_copilot copilot-exec cli || fail=1
finish_ledger copilot-bash || fail=1
apply_copilot copilot-bash sdk || fail=1
run_claude_cron || fail=1
run_copilot_cron || fail=1
# ==== [usage] Copilot with the Anthropic provider and cached tokens ====
# (A section of its own.) The fake model, made to report
# cache reads and cache writes (`cache_read_input_tokens`,
# `cache_creation_input_tokens`) beside `input_tokens`, as Anthropic does;
# Copilot's `inputTokens` are the whole prompt (all three). harnery's tokens
# must equal what the server sent, kind by kind, and the record's calls
# with the cached part taken out of `inputTokens` once.
run_copilot_cached() {
  local D="$WORK/copilot-cached" t0=$(date +%s%N)
  mkdir -p "$D/home" "$D/proj" "$D/hh"
  (cd "$D/proj" && git init -q)
  python3 - "$WORK/fake_model.py" "$D/fake_cached.py" <<'PY' || return 1
import sys
text = open(sys.argv[1]).read()
plain = '{"input_tokens": 100 + n, "output_tokens": 20 + n % 7}'
cached = ('{"input_tokens": 90 + n, "output_tokens": 20 + n % 7, '
          '"cache_creation_input_tokens": 1000 + 100 * n, "cache_read_input_tokens": 5000 + 10 * n}')
sent = '        msg_id, usage = next_call()\n'
said = sent + '        open(LOG + ".usage", "a").write(json.dumps(usage) + "\\n")\n'
if text.count(plain) != 1 or text.count(sent) != 1: sys.exit("the fake model changed: update this section")
open(sys.argv[2], "w").write(text.replace(plain, cached).replace(sent, said))
PY
  python3 "$D/fake_cached.py" "$D/requests.jsonl" > "$D/port" 2> "$D/fake.stderr" &
  local fake=$!
  for _ in $(seq 50); do [[ -s "$D/port" ]] && break; sleep 0.1; done
  local port; port=$(cat "$D/port")
  HOME="$D/home" PATH="$NPM/node_modules/.bin:$PATH" HARNERY_NPM_PREFIXES="" \
    "$HARNERY" install copilot --no-schedule --scope user > "$D/install.txt" 2>&1 || { kill "$fake"; return 1; }
  (cd "$D/proj" && env -i HOME="$D/home" PATH="$PATH" LANG=C.UTF-8 TERM=dumb HARNERY_HOME="$D/hh" \
     COPILOT_PROVIDER_BASE_URL="http://127.0.0.1:$port" COPILOT_PROVIDER_TYPE=anthropic \
     COPILOT_PROVIDER_API_KEY=fake-key COPILOT_MODEL=claude-sonnet-4 COPILOT_OFFLINE=true COPILOT_AUTO_UPDATE=false \
     timeout 120 "$COPILOT" -p "$PROMPT" --allow-all-tools --no-auto-update \
       > "$D/stdout.txt" 2> "$D/stderr.txt") || log "copilot (cached) exited $?"
  kill "$fake" 2>/dev/null || true
  log "copilot with cached tokens ran in $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  HOME="$D/home" HARNERY_HOME="$D/hh" "$HARNERY" finalize >&2 || return 1
  HARNERY_HOME="$D/hh" python3 - "$D" <<'PY'
import glob, json, os, subprocess, sys
d = sys.argv[1]
kinds = ["input", "output", "cache_read", "cache_write"]
sent = [0, 0, 0, 0]
for l in open(f"{d}/requests.jsonl.usage"):
    u = json.loads(l)
    for i, k in enumerate(["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"]):
        sent[i] += u.get(k, 0)
record = [0, 0, 0, 0]
for f in glob.glob(f"{d}/home/.copilot/session-state/*/events.jsonl"):
    for line in open(f):
        v = json.loads(line)
        if v.get("type") != "session.usage_record": continue
        u = v["data"]["usage"]
        r, w = u.get("cacheReadTokens", 0), u.get("cacheWriteTokens", 0)
        for i, n in enumerate([u["inputTokens"] - r - w, u["outputTokens"], r, w]):
            record[i] += n
out = subprocess.run([os.environ["HARNERY"], "usage", "--json"], capture_output=True, text=True)
t = json.loads(out.stdout)["total"]["tokens"]
got = [t.get(k) or 0 for k in kinds]
ok = sent == record == got and sent[3] > 0
print(f"copilot-cached: server sent {dict(zip(kinds, sent))}; record says {dict(zip(kinds, record))}; "
      f"harnery usage {dict(zip(kinds, got))}:", "OK" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
PY
}
run_copilot_cached || fail=1
# ==== [usage] end ====

log "total $(( $(date +%s) - START )) s; scratch kept in $WORK"
exit $fail
