#!/usr/bin/env bash
# End to end: the real Claude Code and Copilot clients, offline, call
# `harnery mcp` as `harnery install <agent> --mcp` registered it. For each
# client, in a scratch HOME (harnery's home the default ~/.harnery, so the
# MCP server finds it whatever environment the client gives it):
#   1. a first session: the scripted model runs a shell command whose output
#      carries a marker; `harnery finalize` records it;
#   2. a second session: the scripted model sees the harnery search tool the
#      client offers it (Claude Code: mcp__harnery__search, offered up front
#      with ENABLE_TOOL_SEARCH=false rather than behind its ToolSearch;
#      Copilot: the harnery server's search tool), calls it for the marker in tool outputs,
#      and gets back, as the tool result the client hands it, the hit of the
#      first session (its id, kind tool-output, the marker).
#   3. the ledger verifies after the MCP session.
# Prints `<agent> mcp: OK` or `<agent> mcp: FAIL <why>`; exit 0 only when both pass.
# Not part of CI (the clients come from npm).
#
# Usage: E2E_NPM=<prefix with node_modules> [E2E_BIN=<dir with harnery, harnery-hook>] scripts/e2e/mcp.sh
# Env:   E2E_WORK  scratch dir (default: a new temp dir; kept for inspection)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK="${E2E_WORK:-$(mktemp -d /tmp/harnery-e2e-mcp.XXXXXX)}"
NPM="${E2E_NPM:?set E2E_NPM to a prefix with @anthropic-ai/claude-code and @github/copilot installed}"
log() { echo "e2e: $*" >&2; }
mkdir -p "$WORK"
if [[ -n "${E2E_BIN:-}" ]]; then
  BIN="$(cd "$E2E_BIN" && pwd)"
else
  log "building harnery (release)"
  (cd "$ROOT" && cargo build --release --bins >&2) || exit 2
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release"
fi
HARNERY="$BIN/harnery"
CLAUDE="$NPM/node_modules/.bin/claude"
COPILOT="$NPM/node_modules/.bin/copilot"
MARKER="mcp-recall-marker-7f3a"

cat > "$WORK/model.py" <<'PY'
# A scripted Anthropic Messages model. A prompt with RECALL: call the
# harnery search tool for the marker in tool outputs, then answer. Any other
# prompt: run the shell command that prints the marker, then answer. Every
# tool result handed back is logged.
import itertools, json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
LOG, MARKER = sys.argv[1], sys.argv[2]
IDS = itertools.count(1)
def texts(content):
    if isinstance(content, str): return [content]
    out = []
    for b in content or []:
        if not isinstance(b, dict): continue
        if b.get("type") == "text": out.append(b.get("text", ""))
        if b.get("type") == "tool_result": out.extend(texts(b.get("content")))
    return out
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def reply(self, obj):
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            m = {"type": "model", "id": "claude-sonnet-4", "display_name": "fake", "created_at": "2025-01-01T00:00:00Z"}
            return self.reply({"data": [m], "has_more": False, "first_id": m["id"], "last_id": m["id"]})
        self.reply({})
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        path = self.path.split("?")[0]
        if path.endswith("/count_tokens"): return self.reply({"input_tokens": 10})
        if not path.endswith("/messages"): return self.reply({})
        msgs = body.get("messages") or []
        tools = [t.get("name", "") for t in body.get("tools") or []]
        results = [b for m in msgs if isinstance(m.get("content"), list) for b in m["content"]
                   if isinstance(b, dict) and b.get("type") == "tool_result"]
        prompt = " ".join(t for m in msgs if m.get("role") == "user" for t in texts(m.get("content")))
        search = next((t for t in tools if "harnery" in t.lower() and t.lower().endswith("search")), None)
        with open(LOG, "a") as f:
            f.write(json.dumps({"tools": tools, "recall": "RECALL" in prompt,
                                "results": [" ".join(texts(r.get("content"))) for r in results]}) + "\n")
        if "RECALL" in prompt and search and not results:
            content = [{"type": "tool_use", "id": f"toolu_mcp{next(IDS)}", "name": search,
                        "input": {"query": MARKER, "kind": ["tool-output"]}}]
        elif "RECALL" not in prompt and not results and any(t.lower() == "bash" for t in tools):
            shell = next(t for t in tools if t.lower() == "bash")
            content = [{"type": "tool_use", "id": f"toolu_sh{next(IDS)}", "name": shell,
                        "input": {"command": f"echo {MARKER}", "description": "print the marker"}}]
        else:
            content = [{"type": "text", "text": "Done."}]
        stop = "tool_use" if content[0]["type"] == "tool_use" else "end_turn"
        msg = {"id": f"msg_mcp_{next(IDS)}", "type": "message", "role": "assistant", "model": body.get("model"),
               "content": content, "stop_reason": stop, "stop_sequence": None,
               "usage": {"input_tokens": 50, "output_tokens": 5}}
        if not body.get("stream"): return self.reply(msg)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        def ev(kind, data): self.wfile.write(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())
        ev("message_start", {"type": "message_start", "message": dict(msg, content=[], stop_reason=None)})
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
        ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}})
        ev("message_stop", {"type": "message_stop"})
        self.wfile.flush()
        self.close_connection = True
srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
PY

# $1 agent (claude-code|copilot). Runs both sessions, then checks.
run_agent() {
  local agent="$1" D="$WORK/$1" first_id=""
  mkdir -p "$D/home" "$D/proj"
  (cd "$D/proj" && git init -q)
  python3 "$WORK/model.py" "$D/requests.jsonl" "$MARKER" > "$D/port" 2> "$D/model.stderr" &
  local model=$!
  for _ in $(seq 50); do [[ -s "$D/port" ]] && break; sleep 0.1; done
  local port; port=$(cat "$D/port")
  env -i HOME="$D/home" PATH="$NPM/node_modules/.bin:/usr/bin:/bin" HARNERY_NPM_PREFIXES="" \
    "$HARNERY" install "$agent" --mcp --no-schedule --hook-bin "$BIN/harnery-hook" > "$D/install.txt" 2>&1 \
    || { echo "$agent mcp: FAIL install: $(tail -1 "$D/install.txt")"; kill $model; return 1; }
  local common=(HOME="$D/home" PATH="$NPM/node_modules/.bin:/usr/bin:/bin" LANG=C.UTF-8 TERM=dumb SHELL=/bin/bash)
  for leg in first second; do
    local prompt="Run the shell command that prints the marker."
    [[ $leg == second ]] && prompt="RECALL: search harnery for what an earlier session printed."
    if [[ $agent == claude-code ]]; then
      (cd "$D/proj" && env -i "${common[@]}" ANTHROPIC_BASE_URL="http://127.0.0.1:$port" ANTHROPIC_API_KEY="sk-ant-fake-e2e-0000" \
         ENABLE_TOOL_SEARCH=false CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_AUTOUPDATER=1 DISABLE_ERROR_REPORTING=1 \
         timeout 180 "$CLAUDE" -p "$prompt" --allowedTools Bash mcp__harnery__search \
         > "$D/$leg.stdout" 2> "$D/$leg.stderr") || log "$agent $leg exited $?"
    else
      (cd "$D/proj" && env -i "${common[@]}" COPILOT_PROVIDER_BASE_URL="http://127.0.0.1:$port" COPILOT_PROVIDER_TYPE=anthropic \
         COPILOT_PROVIDER_API_KEY=fake-key COPILOT_MODEL=claude-sonnet-4 COPILOT_OFFLINE=true COPILOT_AUTO_UPDATE=false \
         timeout 180 "$COPILOT" -p "$prompt" --allow-all-tools --no-auto-update \
         > "$D/$leg.stdout" 2> "$D/$leg.stderr") || log "$agent $leg exited $?"
    fi
    if [[ $leg == first ]]; then
      HOME="$D/home" "$HARNERY" finalize > "$D/finalize.txt" 2>&1 \
        || { echo "$agent mcp: FAIL finalize: $(tail -1 "$D/finalize.txt")"; kill $model; return 1; }
      # The sessions recorded before the MCP session: the hit must be one of them.
      first_id=$(HOME="$D/home" "$HARNERY" sessions --json | python3 -c 'import json,sys; print(" ".join(json.loads(l)["session"]["session_id"] for l in sys.stdin))')
    fi
  done
  kill $model 2>/dev/null
  HOME="$D/home" "$HARNERY" verify > "$D/verify.txt" 2>&1 || { echo "$agent mcp: FAIL verify: $(tail -1 "$D/verify.txt")"; return 1; }
  python3 - "$D/requests.jsonl" "$MARKER" "$first_id" "$agent" <<'PY'
import json, sys
log, marker, ids, agent = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4]
rows = [json.loads(l) for l in open(log)]
recall = [r for r in rows if r["recall"]]
offered = sorted({t for r in recall for t in r["tools"] if "harnery" in t.lower()})
got = [t for r in recall for t in r["results"]]
ok = [t for t in got if marker in t and "tool-output" in t and any(i in t for i in ids)]
if not offered:
    print(f"{agent} mcp: FAIL the client offered no harnery tool to the model"); sys.exit(1)
if not ok:
    print(f"{agent} mcp: FAIL no tool result with the earlier session's output (offered {offered}; results {got[:2]})"); sys.exit(1)
print(f"{agent} mcp: OK (offered {len(offered)} harnery tools; the search result names session {[i for i in ids if i in ok[0]][0]})")
PY
}

fail=0
for agent in ${E2E_MCP_AGENTS:-claude-code copilot}; do
  run_agent "$agent" || fail=1
done
exit $fail
