#!/usr/bin/env python3
"""The read side of the peer bench: both servers up, the same questions.

Usage: reads.py CONFIG_JSON OUT_JSON

CONFIG_JSON (written by scripts/bench-peer.sh):
  harnery: {base, cookie, bin, env}   `harnery serve`, its token cookie, the
                                      release `harnery`, its environment
  peer:    {base, token, bin, env}    `agentsview serve`, its bearer token
  session                             one session id for the usage reads
  expected, agents                    make-sessions.py's expected.json and
                                      agents.tsv
  requests, search_reps               timings per read, per search query

Every read is made the same number of times for both tools, alternating
(harnery, peer, harnery, ...), each HTTP request on a new connection; the
median of each is kept. Reads:
  page      harnery's /sessions (server-rendered); the peer's web app shell
            / followed by the list it asks for (/api/v1/sessions/sidebar-index)
  api       /api/sessions against /api/v1/sessions (each tool's defaults)
  api_all   the same, both asked for 500 sessions
  usage_session, usage_all
            the command lines: `harnery usage --session S --json` and
            `harnery usage --json`; `agentsview session usage S --json
            --no-sync` and `agentsview usage daily --all --json --no-sync
            --offline` (both through its running server, as they run)
  search    per held-out query: harnery's /api/search?q="QUERY" and the
            peer's /api/v1/search/content?pattern=QUERY (children
            included, every page read); the sessions each found (a
            subagent's hit counts for its parent) against the expected set
Also the servers' peak RSS (VmHWM of each pid, given in the config).
"""

import json
import os
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


def die(msg):
    sys.stderr.write(f"reads.py: {msg}\n")
    sys.exit(2)


def get(url, headers, what):
    req = urllib.request.Request(url, headers=dict(headers, Connection="close"))
    t = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            body = r.read()
    except urllib.error.HTTPError as e:
        die(f"{what}: GET {url} answered {e.code}: {e.read()[:300]!r}")
    except (urllib.error.URLError, OSError) as e:
        die(f"{what}: GET {url} failed: {e}")
    return time.perf_counter() - t, body


def run(cmd, env, what):
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    took = time.perf_counter() - t
    if p.returncode != 0:
        die(f"{what}: {' '.join(cmd)} exited {p.returncode}: {p.stderr.decode(errors='replace')[:400]}")
    return took, p.stdout


def ms(xs):
    return round(statistics.median(xs) * 1000, 2)


class Tool:
    def __init__(self, name, conf):
        self.name, self.base, self.bin = name, conf["base"], conf["bin"]
        self.env = dict(os.environ, **conf["env"])
        if name == "harnery":
            self.headers = {"Cookie": conf["cookie"]}
            self.page = conf.get("page", "/sessions")
        else:
            self.headers = {"Authorization": f"Bearer {conf['token']}"}

    def http(self, path, what):
        return get(self.base + path, self.headers, f"{self.name} {what}")


HARNERY_LIMIT = 100000


def harnery_found(tool, q, agents, known):
    path = "/api/search?" + urllib.parse.urlencode({"q": f'"{q}"', "limit": HARNERY_LIMIT})
    took, body = tool.http(path, f"search {q!r}")
    hits = json.loads(body)
    if isinstance(hits, dict):  # an answer that wraps its hits
        if not isinstance(hits.get("hits"), list):
            die(f"harnery search {q!r}: an answer of neither hits nor {{\"hits\": [...]}}: keys {sorted(hits)}")
        hits = hits["hits"]
    if len(hits) >= HARNERY_LIMIT:
        die(f"harnery search {q!r}: {len(hits)} hits, the limit asked for: its found set may be cut")
    found = set()
    for hit in hits:
        found.add(owner(hit["session"]["session_id"], agents, known))
    return took, found, len(hits)


def peer_found(tool, q, agents, known, parents):
    found, took, cursor, count = set(), 0.0, 0, 0
    while True:
        params = {"pattern": q, "limit": 500, "include_children": "true",
                  "include_automated": "true", "include_one_shot": "true"}
        if cursor:
            params["cursor"] = cursor
        t, body = tool.http("/api/v1/search/content?" + urllib.parse.urlencode(params), f"search {q!r}")
        took += t
        d = json.loads(body)
        count += len(d.get("matches") or [])
        for m in d.get("matches") or []:
            sid = parents.get(m["session_id"], m["session_id"])
            found.add(owner(sid, agents, known))
        cursor = d.get("next_cursor") or 0
        if not cursor:
            return took, found, count


def owner(sid, agents, known):
    """The bench session a hit belongs to: itself, or a subagent's parent."""
    if sid in known:
        return sid
    for agent, parent in agents.items():
        if agent in sid:
            return parent
    return sid


def main():
    if len(sys.argv) != 3:
        die("usage: reads.py CONFIG_JSON OUT_JSON")
    with open(sys.argv[1]) as f:
        conf = json.load(f)
    h, p = Tool("harnery", conf["harnery"]), Tool("peer", conf["peer"])
    n, reps, sid = conf["requests"], conf["search_reps"], conf["session"]
    with open(conf["expected"]) as f:
        expected = json.load(f)
    agents = {}
    with open(conf["agents"]) as f:
        for line in f:
            a, parent = line.rstrip("\n").split("\t")
            agents[a] = parent
    with open(conf["sessions"]) as f:
        known = {line.split("\t")[0] for line in f if line.strip()}

    # Warm both (the first request of each server opens its database).
    h.http(h.page, "warm-up")
    p.http("/api/v1/sessions", "warm-up")
    _, body = p.http("/api/v1/sessions?include_children=true&include_automated=true"
                     "&include_one_shot=true&limit=500", "children")
    parents = {s["id"]: s["parent_session_id"] for s in json.loads(body)["sessions"]
               if s.get("parent_session_id")}

    t = {k: [] for k in ("h_page", "p_page", "h_api", "p_api", "h_api_all", "p_api_all",
                         "h_usage_session", "p_usage_session", "h_usage_all", "p_usage_all")}
    counts = {}
    for _ in range(n):
        took, body = h.http(h.page, "sessions page")
        t["h_page"].append(took)
        a, _ = p.http("/", "web app shell")
        b, _ = p.http("/api/v1/sessions/sidebar-index", "sidebar list")
        t["p_page"].append(a + b)
        took, body = h.http("/api/sessions", "api")
        t["h_api"].append(took)
        counts["h_api"] = len(json.loads(body))
        took, body = p.http("/api/v1/sessions", "api")
        t["p_api"].append(took)
        counts["p_api"] = len(json.loads(body)["sessions"])
        took, body = h.http("/api/sessions?limit=500", "api, 500")
        t["h_api_all"].append(took)
        counts["h_api_all"] = len(json.loads(body))
        took, body = p.http("/api/v1/sessions?limit=500", "api, 500")
        t["p_api_all"].append(took)
        counts["p_api_all"] = len(json.loads(body)["sessions"])
        took, _ = run([h.bin, "usage", "--session", sid, "--json"], h.env, "harnery usage --session")
        t["h_usage_session"].append(took)
        took, _ = run([p.bin, "session", "usage", sid, "--json", "--no-sync"], p.env, "agentsview session usage")
        t["p_usage_session"].append(took)
        took, _ = run([h.bin, "usage", "--json"], h.env, "harnery usage")
        t["h_usage_all"].append(took)
        took, _ = run([p.bin, "usage", "daily", "--all", "--json", "--no-sync", "--offline"], p.env,
                      "agentsview usage daily")
        t["p_usage_all"].append(took)

    searches = []
    for e in expected:
        q, want = e["query"], set(e["sessions"])
        ht, pt = [], []
        for _ in range(reps):
            took, hf, hn = harnery_found(h, q, agents, known)
            ht.append(took)
            took, pf, pn = peer_found(p, q, agents, known, parents)
            pt.append(took)
        searches.append({
            "query": q, "expected": len(want),
            "harnery": {"hits": hn, "found": len(hf), "right": len(hf & want), "exact": hf == want,
                        "missed": sorted(want - hf)[:3], "extra": sorted(hf - want)[:3], "ms": ms(ht)},
            "peer": {"hits": pn, "found": len(pf), "right": len(pf & want), "exact": pf == want,
                     "missed": sorted(want - pf)[:3], "extra": sorted(pf - want)[:3], "ms": ms(pt)},
        })

    rss = {}
    for name, pid in conf["pids"].items():
        try:
            with open(f"/proc/{pid}/status") as f:
                rss[name] = next(int(l.split()[1]) for l in f if l.startswith("VmHWM"))
        except (OSError, StopIteration):
            rss[name] = None
    out = {k: ms(v) for k, v in t.items()}
    out.update(counts=counts, searches=searches, rss_kb=rss, requests=n, search_reps=reps)
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
