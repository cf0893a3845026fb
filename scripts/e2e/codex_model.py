#!/usr/bin/env python3
"""Scripted OpenAI Responses API server for driving the real Codex CLI offline.

Codex reaches it through a custom provider in $CODEX_HOME/config.toml
(`[model_providers.<x>] base_url = "http://127.0.0.1:<port>/v1"`,
`wire_api = "responses"`). Stdlib only; listens on 127.0.0.1.

The script is decided from each request body, so the server keeps no
conversation state:
  * the newest input item is a user message and tools are offered
      -> one shell tool call; the command depends on the prompt text:
         "HARNERY-FAIL" -> `ls /nonexistent-harnery`,
         "HARNERY-SLOW" -> `sleep 30`,
         otherwise      -> `echo hello-from-harnery-e2e`
  * the newest user message says "HARNERY-SPAWN"
      -> a subagent (`spawn_agent`, asked to greet from the shell: a user
         message the default rule above answers); once it is spawned,
         `wait_agent` for it
  * the newest input item is a tool call's output
      -> a reasoning item (summary text + opaque content), then a final text
  * anything else (no tools offered: titles, summaries, compaction)
      -> a short plain text
Every response carries DISTINCT usage figures (input, cached input, output,
reasoning) derived from a per-server call counter, so a test can check that a
session's tokens equal what the client itself recorded.

Each request (path, headers without credentials, body) is appended as one
JSON line to $MODEL_LOG. Usage: codex_model.py PORTFILE  (the chosen port is
written there once the server listens).
"""
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = os.environ.get("MODEL_LOG", "model-requests.jsonl")
MODEL = os.environ.get("MODEL_NAME", "gpt-5.1-codex")
FINAL_TEXT = "Done: the command ran and I read its output."
_lock = threading.Lock()
_calls = [0]
# Call ids must stay unique across server restarts: a resumed session keeps
# the ids of its earlier calls.
RUN_TAG = os.urandom(3).hex()


def next_call():
    with _lock:
        _calls[0] += 1
        return _calls[0]


def log(entry):
    with _lock:
        with open(LOG, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")


def usage_for(n):
    cached = 64 * n
    reasoning = 5 + n
    inp = 1000 + 113 * n
    out = 40 + 17 * n
    return {
        "input_tokens": inp,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": out,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": inp + out,
    }


def last_item(body):
    items = body.get("input") or []
    return items[-1] if items else {}


def prompt_text(body):
    """Text of the newest user message."""
    for item in reversed(body.get("input") or []):
        if item.get("type", "message") == "message" and item.get("role") == "user":
            parts = item.get("content") or []
            if isinstance(parts, str):
                return parts
            return " ".join(p.get("text", "") for p in parts if isinstance(p, dict))
    return ""


def command_for(prompt):
    if "HARNERY-FAIL" in prompt:
        return "ls /nonexistent-harnery"
    if "HARNERY-SLOW" in prompt:
        return "sleep 30"
    return "echo hello-from-harnery-e2e"


def tool_names(body):
    names = []
    for t in body.get("tools") or []:
        names.append(t.get("name") or (t.get("function") or {}).get("name") or t.get("type"))
    return names


def shell_call(body, n):
    """A function_call item for whichever shell tool this Codex offers."""
    cmd = command_for(prompt_text(body))
    names = tool_names(body)
    call_id = f"call_{RUN_TAG}_{n:04d}"
    if "exec_command" in names:
        name, args = "exec_command", {"cmd": cmd, "yield_time_ms": 60000}
    elif "shell_command" in names:
        name, args = "shell_command", {"command": cmd, "timeout_ms": 60000}
    else:
        name, args = "shell", {"command": ["bash", "-lc", cmd], "timeout_ms": 60000}
    return {"type": "function_call", "id": f"fc_{RUN_TAG}_{n:04d}", "call_id": call_id,
            "name": name, "arguments": json.dumps(args)}


def message(text, n):
    return {"type": "message", "id": f"msg_{RUN_TAG}_{n:04d}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def reasoning(n):
    return {"type": "reasoning", "id": f"rs_{RUN_TAG}_{n:04d}",
            "summary": [{"type": "summary_text", "text": "The command finished; I report it."}],
            "encrypted_content": f"opaque-{RUN_TAG}-{n}"}


def call_name(body, call_id):
    for item in body.get("input") or []:
        if item.get("type") == "function_call" and item.get("call_id") == call_id:
            return item.get("name")
    return None


def fcall(name, args, n, namespace=None):
    item = {"type": "function_call", "id": f"fc_{RUN_TAG}_{n:04d}", "call_id": f"call_{RUN_TAG}_{n:04d}",
            "name": name, "arguments": json.dumps(args)}
    if namespace:
        item["namespace"] = namespace
    return item


def plan(body, n):
    last = last_item(body)
    kind = last.get("type", "message")
    if kind.endswith("_output") and call_name(body, last.get("call_id")) == "spawn_agent":
        out = last.get("output")
        text = out if isinstance(out, str) else json.dumps(out)
        try:
            agent = json.loads(text).get("agent_id") or json.loads(text).get("id")
        except Exception:
            agent = text.strip()
        return [fcall("wait_agent", {"targets": [agent], "timeout_ms": 60000}, n, "multi_agent_v1")]
    if kind.endswith("_output"):
        return [reasoning(n), message(FINAL_TEXT, n)]
    if kind == "message" and "HARNERY-SPAWN" in prompt_text(body):
        return [fcall("spawn_agent", {"message": "HARNERY-CHILD: greet us from the shell."}, n, "multi_agent_v1")]
    if body.get("tools") and kind == "message" and last.get("role") == "user":
        return [shell_call(body, n)]
    return [message("ok", n)]


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _headers(self):
        return {k: v for k, v in self.headers.items()
                if k.lower() not in ("authorization", "cookie", "x-api-key")}

    def do_GET(self):
        log({"method": "GET", "path": self.path, "headers": self._headers()})
        body = json.dumps({"object": "list", "data": [
            {"id": MODEL, "object": "model", "owned_by": "harnery"}], "models": []}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw)
        except Exception:
            body = {"_undecoded": raw[:200].hex(), "_encoding": self.headers.get("content-encoding")}
        n = next_call()
        items = plan(body, n) if "input" in body else [message("ok", n)]
        usage = usage_for(n)
        log({"method": "POST", "path": self.path, "call": n, "headers": self._headers(),
             "body": body, "answered": items, "usage": usage})
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        rid = f"resp_{RUN_TAG}_{n:04d}"
        out = sse("response.created", {"type": "response.created",
                                       "response": {"id": rid, "model": MODEL}})
        for i, item in enumerate(items):
            out += sse("response.output_item.added",
                       {"type": "response.output_item.added", "output_index": i, "item": item})
            out += sse("response.output_item.done",
                       {"type": "response.output_item.done", "output_index": i, "item": item})
        out += sse("response.completed", {"type": "response.completed", "response": {
            "id": rid, "model": MODEL, "status": "completed", "output": items, "usage": usage}})
        self.wfile.write(out)
        self.wfile.flush()
        self.close_connection = True


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    with open(sys.argv[1], "w") as f:
        f.write(str(port))
    server.serve_forever()


if __name__ == "__main__":
    main()
