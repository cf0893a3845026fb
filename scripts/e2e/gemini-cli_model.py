"""A scripted Gemini API for the gemini-cli end-to-end run (stdlib only).

Serves `POST /v1beta/models/<model>:generateContent` and
`:streamGenerateContent?alt=sse` on 127.0.0.1 (port 0, printed on stdout).

- A request without tools is one of the client's own side calls (the model
  router's classifier): it gets the JSON the classifier asks for.
- A request whose last content is a function response gets text, in two
  SSE chunks.
- Otherwise the last prompt picks one `run_shell_command` call: "FAIL"
  lists a missing directory, "SLOW" sleeps 30 s, anything else prints the
  marker; "AGENT" asks the client's generalist subagent (`invoke_agent`)
  instead, whose own loop (its tools hold `complete_task`) runs the marker
  command and then completes.

Every call gets its own token counts (prompt, candidates, cached,
thoughts), so a check that counts one call twice, or mixes two up, fails.
Each request is appended to argv[1] as one JSON line: path, model, the
answer and its usage.
"""
import itertools
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = sys.argv[1]
COMMANDS = {"FAIL": "ls /nonexistent-harnery", "SLOW": "sleep 30"}
MARKER = "echo hello-from-harnery-e2e"
CALLS = itertools.count(1)
LOCK = threading.Lock()


def next_usage():
    with LOCK:
        n = next(CALLS)
    usage = {"promptTokenCount": 1000 + 10 * n, "candidatesTokenCount": 20 + n,
             "cachedContentTokenCount": 300 + n, "thoughtsTokenCount": 7 + n}
    usage["totalTokenCount"] = (usage["promptTokenCount"] + usage["candidatesTokenCount"]
                                + usage["thoughtsTokenCount"])
    return n, usage


def last_prompt(contents):
    for content in reversed(contents):
        texts = [p["text"] for p in content.get("parts") or [] if isinstance(p, dict) and "text" in p]
        if content.get("role") == "user" and texts:
            return " ".join(texts)
    return ""


def answer(body):
    contents = body.get("contents") or []
    tools = [f.get("name") for t in body.get("tools") or [] for f in t.get("functionDeclarations") or []]
    if "run_shell_command" not in tools:
        return [{"text": json.dumps({"complexity_reasoning": "scripted", "complexity_score": 10,
                                     "reasoning": "scripted", "next_speaker": "user"})}]
    last = (contents[-1] if contents else {}).get("parts") or []
    responded = any(isinstance(p, dict) and "functionResponse" in p for p in last)
    if "complete_task" in tools:  # a subagent's own loop: one shell call, then done
        if responded:
            return [{"functionCall": {"name": "complete_task",
                                      "args": {"result": {"response": "the marker was printed"}}}}]
        return [{"functionCall": {"name": "run_shell_command",
                                  "args": {"command": MARKER, "description": "subagent step"}}}]
    if "AGENT" in last_prompt(contents) and not responded:
        return [{"functionCall": {"name": "invoke_agent", "args": {
            "agent_name": "generalist", "prompt": "Run the marker command and report what it printed."}}}]
    if responded:
        return [{"text": "Done: the command ran. "}, {"text": "hello-from-harnery-e2e seen."}]
    prompt = last_prompt(contents)
    command = next((c for word, c in COMMANDS.items() if word in prompt), MARKER)
    return [{"functionCall": {"name": "run_shell_command",
                              "args": {"command": command, "description": "scripted step"}}}]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def log(self, entry):
        with LOCK, open(LOG, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def reply(self, obj):
        data = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.reply({})

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        path = self.path.split("?")[0]
        if path.endswith(":countTokens"):
            return self.reply({"totalTokens": 42})
        if not path.endswith((":generateContent", ":streamGenerateContent")):
            return self.reply({})
        model = path.rsplit("/", 1)[-1].split(":")[0]
        parts = answer(body)
        n, usage = next_usage()
        rid = f"resp-e2e-{n:04d}"
        self.log({"path": path, "model": model, "tools": bool(body.get("tools")),
                  "responseId": rid, "answer": parts, "usage": usage})
        final = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                 "usageMetadata": usage, "modelVersion": model, "responseId": rid}
        if path.endswith(":generateContent"):
            return self.reply(final)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        final["candidates"][0]["content"]["parts"] = parts[-1:]
        chunks = [{"candidates": [{"content": {"role": "model", "parts": [p]}, "index": 0}],
                   "modelVersion": model, "responseId": rid} for p in parts[:-1]] + [final]
        for chunk in chunks:
            self.wfile.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
        self.wfile.flush()
        self.close_connection = True


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
