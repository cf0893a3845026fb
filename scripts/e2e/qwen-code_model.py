#!/usr/bin/env python3
"""A scripted OpenAI-compatible chat-completions server for Qwen Code, offline.

Usage: qwen-code_model.py <request log> <port file>
Listens on 127.0.0.1 (a free port, written to <port file>) and appends every
request it receives to <request log>, one JSON line each.

Per main-loop request (one that offers tools):
  * when the last message is the user's prompt, one shell tool call whose
    command depends on the prompt ("AGENT:" -> the `agent` tool, a
    foreground general-purpose subagent told "please run the greeting";
    "BGAGENT:" -> the same in the background, Qwen's default),
    "FAIL:" -> `ls /nonexistent-harnery`,
    "SLOW:" -> `sleep 30  # intentional-sleep: ...` (Qwen refuses a bare
    sleep), anything else -> `echo hello-from-harnery-e2e`;
  * when the last message is a tool result, a text answer.
Requests without tools, and the interactive UI's "SUGGESTION MODE" query,
get a short text. Every answer starts with reasoning ("harnery thinks about
call <n>", as `reasoning_content`). Every call has its own call id and its own token counts
(prompt 1000+17n with 100+5n of it cached, completion 20+3n with n of it
reasoning) so that a check which mixes up two calls, or counts one twice,
cannot pass by accident.
"""

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
CALLS = [0]
MODEL = "harnery-e2e-model"


def next_call():
    with LOCK:
        CALLS[0] += 1
        n = CALLS[0]
    usage = {
        "prompt_tokens": 1000 + 17 * n,
        "completion_tokens": 20 + 3 * n,
        "total_tokens": 1020 + 20 * n,
        "prompt_tokens_details": {"cached_tokens": 100 + 5 * n},
        "completion_tokens_details": {"reasoning_tokens": n},
    }
    return n, usage


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def answer(body):
    """("tool", name, args) or ("text", words)."""
    messages = body.get("messages") or []
    tools = [(t.get("function") or {}).get("name", "") for t in body.get("tools") or []]
    if not tools:
        return ("text", "harnery side answer")
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        seen = text_of(last.get("content"))[:80].replace("\n", " ")
        return ("text", "The command finished. Output seen: " + seen)
    prompt = text_of(last.get("content"))
    if "SUGGESTION MODE" in prompt:
        return ("text", "harnery suggestion")
    if "BGAGENT:" in prompt:
        return ("tool", "agent", {"description": "run the greeting", "prompt": "please run the greeting",
                                  "subagent_type": "general-purpose"})
    if "AGENT:" in prompt:
        return ("tool", "agent", {"description": "run the greeting", "prompt": "please run the greeting",
                                  "subagent_type": "general-purpose", "run_in_background": False})
    if "FAIL:" in prompt:
        command = "ls /nonexistent-harnery"
    elif "SLOW:" in prompt:
        command = "sleep 30  # intentional-sleep: harnery e2e kill test"
    else:
        command = "echo hello-from-harnery-e2e"
    shell = next((t for t in tools if "shell" in t), "run_shell_command")
    return ("tool", shell, {"command": command, "description": "harnery e2e step"})


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    log_path = None

    def log_message(self, *args):
        pass

    def reply(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log(self, record):
        with LOCK, open(self.log_path, "a") as f:
            f.write(json.dumps(record) + "\n")

    def do_GET(self):
        self.log({"t": time.time(), "method": "GET", "path": self.path})
        if self.path.rstrip("/").endswith("/models"):
            return self.reply(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        self.reply(404, {"error": {"message": "not found"}})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.log({"t": time.time(), "method": "POST", "path": self.path})
            return self.reply(404, {"error": {"message": "not found"}})
        n, usage = next_call()
        plan = answer(body)
        self.log({"t": time.time(), "method": "POST", "path": self.path, "call": n,
                  "answer": plan, "usage": usage, "body": body})
        if plan[0] == "tool":
            call = {"id": "call_harnery_%d" % n, "type": "function",
                    "function": {"name": plan[1], "arguments": json.dumps(plan[2])}}
            message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": plan[1]}, "stop"
        message["reasoning_content"] = "harnery thinks about call %d" % n
        cid = "chatcmpl-harnery-%d" % n
        if body.get("stream"):
            return self.stream(cid, message, finish, usage)
        self.reply(200, {"id": cid, "object": "chat.completion", "created": int(time.time()),
                         "model": MODEL, "usage": usage,
                         "choices": [{"index": 0, "message": message, "finish_reason": finish}]})

    def stream(self, cid, message, finish, usage):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        base = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": MODEL}

        def send(chunk):
            self.wfile.write(b"data: " + json.dumps(dict(base, **chunk)).encode() + b"\n\n")
            self.wfile.flush()

        def delta(d, finish_reason=None):
            send({"choices": [{"index": 0, "delta": d, "finish_reason": finish_reason}]})

        delta({"role": "assistant", "content": ""})
        delta({"reasoning_content": message["reasoning_content"]})
        if message.get("tool_calls"):
            call = message["tool_calls"][0]
            fn = call["function"]
            delta({"tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                                   "function": {"name": fn["name"], "arguments": ""}}]})
            delta({"tool_calls": [{"index": 0, "function": {"arguments": fn["arguments"]}}]})
        else:
            for i, word in enumerate(message["content"].split(" ")):
                delta({"content": word if i == 0 else " " + word})
        delta({}, finish)
        send({"choices": [], "usage": usage})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


def main():
    log_path, port_file = sys.argv[1], sys.argv[2]
    Handler.log_path = log_path
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
