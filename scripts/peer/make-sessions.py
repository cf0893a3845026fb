#!/usr/bin/env python3
"""Build the peer bench's Claude Code sessions from real captures.

Usage: make-sessions.py FIXTURES OUT SESSIONS MB SEED QUERIES

FIXTURES is the repository's tests/fixtures. Each real capture there (a
Claude Code transcript in records/claude-code/, its subagents' transcripts
beside it, and the hook payloads Claude Code sent for it in
claude-code/<scenario>/hooks.jsonl) is one "run". A bench session is
several runs appended to one transcript as `claude --resume` appends them,
until the session holds about MB / SESSIONS megabytes. Every copy of a run
gets fresh ids (session, uuids, prompt, message, request, tool and agent
ids: no two model calls share an id), its paths moved to the session's own
project, and its times shifted so that sessions spread over the last 14
days and a session's runs follow each other.

Writes, under OUT:
  claude/projects/<project>/<session>.jsonl   (+ <session>/subagents/)
  hooks.jsonl      one object per payload, in the order Claude Code sent
                   them: {"event": NAME, "payload": "<the payload's JSON>"}
  sessions.tsv     session id, transcript path, runs, bytes
  agents.tsv       subagent id, its parent session id
  expected.json    for each query of the QUERIES file (one a line), the
                   sessions whose transcripts' message text holds it (case
                   insensitive; a subagent's text counts for its parent)
"""

import json
import os
import random
import re
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
PREFIXED = re.compile(r"(?<![A-Za-z0-9_])(msg|req|toolu)_[A-Za-z0-9]+")
AGENT = re.compile(r"(?<![0-9a-f])a[0-9a-f]{16}(?![0-9a-f])")
ISO = re.compile(r"\b(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z")
EPOCH_MS = re.compile(r"(?<![0-9])1[78]\d{11}(?![0-9])")
CAPTURE = re.compile(r"/tmp/cc-capture/runs/([a-z0-9-]+)(/home/\.claude/projects/-tmp-cc-capture-runs-[a-z0-9-]+-proj|/home|/proj)?")
ENCODED = re.compile(r"-tmp-cc-capture-runs-[a-z0-9-]+-proj")
B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
PROJECTS = ["billing-api", "web-console", "ingest-worker", "infra", "docs-site", "mobile-app",
            "search-svc", "auth", "data-pipeline", "cli-tools", "payments", "notebooks"]


def die(msg):
    sys.stderr.write(f"make-sessions.py: {msg}\n")
    sys.exit(2)


def parse_iso(text):
    return datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)


def load_runs(fixtures):
    """Every real capture: its transcript lines, subagent files and hooks."""
    records = os.path.join(fixtures, "records", "claude-code")
    hooks_dir = os.path.join(fixtures, "claude-code")
    if not os.path.isdir(records) or not os.path.isdir(hooks_dir):
        die(f"{fixtures} has no records/claude-code/ or claude-code/ (run from a clone)")
    transcripts = {}  # source session id -> (path, [agent files])
    for name in sorted(os.listdir(records)):
        path = os.path.join(records, name)
        if name.endswith(".jsonl") and not name.endswith(".stream.jsonl"):
            with open(path) as f:
                sid = next((json.loads(l).get("sessionId") for l in f if '"sessionId"' in l), None)
            if sid:
                transcripts[sid] = (path, [])
        elif os.path.isdir(path):
            files = sorted(os.listdir(path))
            agents = [os.path.join(path, n) for n in files if n.startswith("agent-")]
            mains = [n for n in files if n.endswith(".jsonl") and not n.startswith("agent-")]
            for n in mains:
                # A folder's subagents belong to the transcript that launched them.
                own = [a for a in agents if os.path.basename(a)[6:-6] in open(os.path.join(path, n)).read()]
                transcripts[n[:-6]] = (os.path.join(path, n), own)
    runs = []
    for scenario in sorted(os.listdir(hooks_dir)):
        hp = os.path.join(hooks_dir, scenario, "hooks.jsonl")
        if not os.path.isfile(hp):
            continue
        by_session = {}
        with open(hp) as f:
            for line in f:
                line = line.strip()
                if line:
                    by_session.setdefault(json.loads(line)["session_id"], []).append(line)
        for sid, hooks in by_session.items():
            if sid not in transcripts:
                continue
            path, agents = transcripts[sid]
            with open(path) as f:
                lines = [l.rstrip("\n") for l in f if l.strip()]
            subs = []
            for a in agents:
                with open(a) as f:
                    subs.append((os.path.basename(a)[6:-6], [l.rstrip("\n") for l in f if l.strip()]))
            stamps = [m.group(1) for l in lines for m in ISO.finditer(l)]
            if not stamps:
                die(f"{path} has no timestamps")
            size = sum(len(l) + 1 for l in lines) + sum(len(l) + 1 for _, s in subs for l in s)
            runs.append(dict(scenario=scenario, sid=sid, lines=lines, subs=subs, hooks=hooks,
                             first=min(parse_iso(s) for s in stamps), size=size))
    if not runs:
        die(f"no capture in {records} has hook payloads in {hooks_dir}")
    return runs


class Copy:
    """One copy of one run: every id fresh, paths and times moved."""

    def __init__(self, rng, run, sid, cwd, projects_dir, start):
        self.rng, self.sid, self.cwd = rng, sid, cwd
        self.enc = re.sub(r"[^A-Za-z0-9]", "-", cwd)
        self.project_dir = os.path.join(projects_dir, self.enc)
        self.home = "/home/dev"
        self.ids = {run["sid"]: sid}
        self.delta = start - run["first"]
        self.delta_ms = int(self.delta.total_seconds() * 1000)

    def fresh(self, old, make):
        if old not in self.ids:
            self.ids[old] = make()
        return self.ids[old]

    def token(self, n):
        return "".join(self.rng.choice(B62) for _ in range(n))

    def path(self, m):
        tail = m.group(2) or ""
        if tail.startswith("/home/.claude/projects"):
            return self.project_dir
        if tail == "/home":
            return self.home
        if tail == "/proj":
            return self.cwd
        return f"/tmp/claude-run-{self.sid[:8]}"

    def iso(self, m):
        t = parse_iso(m.group(1)) + self.delta
        return t.strftime("%Y-%m-%dT%H:%M:%S") + (m.group(2) or "") + "Z"

    def text(self, line):
        line = CAPTURE.sub(self.path, line)
        line = ENCODED.sub(self.enc, line)
        line = UUID.sub(lambda m: self.fresh(m.group(0), lambda: str(uuid.UUID(int=self.rng.getrandbits(128), version=4))), line)
        line = PREFIXED.sub(lambda m: self.fresh(m.group(0), lambda: f"{m.group(1)}_01{self.token(22)}"), line)
        line = AGENT.sub(lambda m: self.fresh(m.group(0), lambda: "a%016x" % self.rng.getrandbits(64)), line)
        line = ISO.sub(self.iso, line)
        line = EPOCH_MS.sub(lambda m: str(int(m.group(0)) + self.delta_ms), line)
        # Headless captures; the bench's sessions are a person's, resumed.
        return line.replace('"entrypoint":"sdk-cli"', '"entrypoint":"cli"')


def message_text(line):
    """The text a person would search for: every string in `message`."""
    try:
        d = json.loads(line)
    except ValueError:
        return ""
    if d.get("type") not in ("user", "assistant"):
        return ""
    out = []

    def walk(v):
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for k, x in v.items():
                if k not in ("id", "tool_use_id", "signature", "model", "type", "role", "stop_reason"):
                    walk(x)

    walk(d.get("message"))
    return "\n".join(out)


def check(sid, lines, owners):
    """No id of a model call in two sessions; nothing of the capture left."""
    for line in lines:
        if "cc-capture" in line:
            die(f"session {sid}: a capture path was not moved: {line[:200]}")
        for m in PREFIXED.finditer(line):
            if owners.setdefault(m.group(0), sid) != sid:
                die(f"{m.group(0)} is in sessions {owners[m.group(0)]} and {sid}")


def main():
    if len(sys.argv) != 7:
        die("usage: make-sessions.py FIXTURES OUT SESSIONS MB SEED QUERIES")
    fixtures, out = sys.argv[1], sys.argv[2]
    try:
        sessions, mb, seed = int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
    except ValueError:
        die(f"SESSIONS, MB and SEED must be numbers, got {sys.argv[3:6]}")
    if sessions < 1 or mb <= 0:
        die("SESSIONS must be at least 1 and MB above 0")
    with open(sys.argv[6]) as f:
        queries = [q.strip() for q in f if q.strip() and not q.startswith("#")]
    runs = load_runs(fixtures)
    rng = random.Random(seed)
    projects_dir = os.path.join(out, "claude", "projects")
    os.makedirs(projects_dir, exist_ok=True)
    per_session = mb * 1e6 / sessions
    now = datetime.fromtimestamp(int(time.time()) // 3600 * 3600, timezone.utc)
    span = timedelta(days=14)
    texts = {}
    owners = {}  # every msg_, req_ and toolu_ id -> the session holding it
    with open(os.path.join(out, "hooks.jsonl"), "w") as hooks_out, \
            open(os.path.join(out, "sessions.tsv"), "w") as tsv, \
            open(os.path.join(out, "agents.tsv"), "w") as agents_tsv:
        for s in range(sessions):
            sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            cwd = f"/home/dev/src/{PROJECTS[s % len(PROJECTS)]}"
            target = per_session * rng.uniform(0.6, 1.4)
            start = now - span + span * (s + rng.random() * 0.8) / sessions
            written, n, lines_out, session_text = 0, 0, [], []
            subagent_files = []
            last_uuid = None
            while True:
                run = rng.choice(runs)
                # Stop nearest the target: take a run while at most half of
                # it would go past.
                if n > 0 and written + run["size"] / 2 > target:
                    break
                c = Copy(rng, run, sid, cwd, projects_dir, start)
                linked = n == 0
                for line in run["lines"]:
                    new = c.text(line)
                    if not linked and '"parentUuid":null' in new:
                        # A resumed run continues the chain where the last one ended.
                        new = new.replace('"parentUuid":null', f'"parentUuid":"{last_uuid}"', 1)
                        linked = True
                    m = re.search(r'"uuid":"([0-9a-f-]{36})"', new)
                    if m and '"parentUuid"' in new:
                        last_uuid = m.group(1)
                    lines_out.append(new)
                    session_text.append(message_text(new))
                for agent, sub in run["subs"]:
                    new_agent = c.fresh(agent, lambda: "a%016x" % rng.getrandbits(64))
                    body = [c.text(l) for l in sub]
                    subagent_files.append((new_agent, body))
                    session_text.extend(message_text(l) for l in body)
                for h in run["hooks"]:
                    payload = c.text(h)
                    d = json.loads(payload)
                    if d["hook_event_name"] == "SessionStart":
                        d["source"] = "startup" if n == 0 else "resume"
                        payload = json.dumps(d, separators=(",", ":"), ensure_ascii=False)
                    hooks_out.write(json.dumps({"event": d["hook_event_name"], "payload": payload},
                                               ensure_ascii=False) + "\n")
                written += run["size"]
                n += 1
                start += timedelta(minutes=rng.uniform(5, 90))
            check(sid, lines_out + [l for _, body in subagent_files for l in body], owners)
            os.makedirs(c.project_dir, exist_ok=True)
            path = os.path.join(c.project_dir, f"{sid}.jsonl")
            with open(path, "w") as f:
                f.write("\n".join(lines_out) + "\n")
            size = os.path.getsize(path)
            for agent, body in subagent_files:
                d = os.path.join(c.project_dir, sid, "subagents")
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(d, f"agent-{agent}.jsonl"), "w") as f:
                    f.write("\n".join(body) + "\n")
                size += os.path.getsize(os.path.join(d, f"agent-{agent}.jsonl"))
                agents_tsv.write(f"{agent}\t{sid}\n")
            tsv.write(f"{sid}\t{path}\t{n}\t{size}\n")
            texts[sid] = "\n".join(session_text).lower()
    with open(os.path.join(out, "hooks.jsonl")) as f:
        for n, line in enumerate(f, 1):
            payload = json.loads(json.loads(line)["payload"])
            if not os.path.isfile(payload.get("transcript_path", "")):
                die(f"hooks.jsonl:{n}: no transcript at {payload.get('transcript_path')!r}")
    expected = [{"query": q, "sessions": sorted(s for s, t in texts.items() if q.lower() in t)}
                for q in queries]
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)


if __name__ == "__main__":
    main()
