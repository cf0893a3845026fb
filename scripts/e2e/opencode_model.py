#!/usr/bin/env python3
"""A scripted OpenAI-compatible chat-completions server for OpenCode's
end-to-end run (scripts/e2e/opencode.sh), stdlib only, on 127.0.0.1.

Usage: opencode_model.py <request-log.jsonl>; prints its port on stdout.
A request whose last message is the user's prompt gets one `bash` tool call:
the prompt says FAIL -> `ls /nonexistent-harnery`, SLOW -> `sleep 30`,
otherwise `echo hello-from-harnery-e2e`; TODO gets a `todowrite` call
instead; one that says BROKEN is answered
with HTTP 400. A request after a tool result, or one offering no tools
(OpenCode's title request), gets text. Every call reports its own token
counts (prompt, cached, completion, reasoning), so a check that mixes two
calls up cannot pass by accident; each request is logged with its answer.
"""
import itertools
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = sys.argv[1]
CALLS = itertools.count(1)
LOCK = threading.Lock()


def usage_for(n):
    cached = 10 + n
    return {
        "prompt_tokens": 300 + 7 * n,
        "completion_tokens": 40 + 3 * n,
        "total_tokens": 340 + 10 * n,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": 5 + n},
    }


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def plan(body):
    msgs = body.get("messages") or []
    tools = [((t.get("function") or {}).get("name") or "") for t in body.get("tools") or []]
    last = msgs[-1] if msgs else {}
    if "todowrite" in tools and last.get("role") == "user" and "TODO" in text_of(last.get("content")):
        todo = {"content": "print the marker", "status": "in_progress", "priority": "high"}
        return {"tool": {"todos": [todo]}, "name": "todowrite"}
    if "bash" in tools and last.get("role") == "user":
        prompt = text_of(last.get("content"))
        if "FAIL" in prompt:
            cmd = "ls /nonexistent-harnery"
        elif "SLOW" in prompt:
            cmd = "sleep 30"
        else:
            cmd = "echo hello-from-harnery-e2e"
        return {"tool": {"command": cmd, "description": "run the scripted command"}}
    if not tools:
        return {"text": "Harnery e2e session"}
    return {"text": "Done: the command ran and I read its output."}


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, obj, code=200):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.log({"method": "GET", "path": self.path})
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            return self.reply({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        self.reply({})

    def log(self, rec):
        with LOCK, open(LOG, "a") as f:
            f.write(json.dumps(rec) + "\n")

    def do_POST(self):
        n_bytes = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(n_bytes) or b"{}")
        path = self.path.split("?")[0]
        with LOCK:
            n = next(CALLS)
        p = plan(body)
        u = usage_for(n)
        self.log({"n": n, "path": path, "model": body.get("model"), "stream": body.get("stream"),
                  "tools": [((t.get("function") or {}).get("name")) for t in body.get("tools") or []],
                  "roles": [m.get("role") for m in body.get("messages") or []],
                  "last": text_of((body.get("messages") or [{}])[-1].get("content"))[:200],
                  "answer": p, "usage": u, "time": time.time()})
        if "BROKEN" in json.dumps(body.get("messages") or []) and body.get("tools"):
            return self.reply({"error": {"message": "scripted failure", "type": "invalid_request_error"}}, 400)
        if not path.endswith("/chat/completions"):
            return self.reply({"error": {"message": "not here"}}, 404)
        cid = f"chatcmpl-e2e-{n:04d}"
        model = body.get("model") or "fake-model"
        created = int(time.time())
        if "tool" in p:
            call = {"id": f"call_e2e_{n:04d}", "type": "function",
                    "function": {"name": p.get("name", "bash"), "arguments": json.dumps(p["tool"])}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": p["text"]}
            finish = "stop"
        if not body.get("stream"):
            return self.reply({"id": cid, "object": "chat.completion", "created": created, "model": model,
                               "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                               "usage": u})
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()

        def chunk(delta, finish_reason=None, usage=None):
            c = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                 "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
            if usage is not None:
                c["choices"] = []
                c["usage"] = usage
            self.wfile.write(f"data: {json.dumps(c)}\n\n".encode())
            self.wfile.flush()

        chunk({"role": "assistant", "content": ""})
        if "tool" in p:
            call = message["tool_calls"][0]
            chunk({"tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                                   "function": {"name": call["function"]["name"], "arguments": ""}}]})
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": call["function"]["arguments"]}}]})
        else:
            chunk({"content": p["text"]})
        chunk({}, finish)
        chunk(None, usage=u)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
