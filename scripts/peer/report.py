#!/usr/bin/env python3
"""Print the peer bench's table; write it as Markdown too.

Usage: report.py WORK < FIGURES_JSON

FIGURES_JSON (from scripts/bench-peer.sh, on stdin): the ingest medians,
the storage bytes and the data's size; WORK holds reads.py's reads.json,
feed-hooks.py's hooks.json. Writes WORK/table.md (the rows of
docs/perf/peer.md) and WORK/figures.json (everything in one place).
"""

import json
import os
import sys


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "-"


def main():
    work = sys.argv[1]
    fig = json.load(sys.stdin)
    with open(os.path.join(work, "reads.json")) as f:
        reads = json.load(f)
    with open(os.path.join(work, "hooks.json")) as f:
        hooks = json.load(f)
    mb = lambda b: f"{b / 1e6:.1f} MB"
    s = lambda x: f"{x:.2f} s"
    m = lambda x: f"{x:.1f} ms"
    def rounds(name):
        with open(os.path.join(work, f"{name}.secs")) as f:
            return [float(x) for x in f.read().split()]

    def paired(a, b):
        # The median of the rounds' own ratios: a machine whose speed drifts
        # between rounds moves it less than the ratio of the medians.
        rs = sorted(x / y for x, y in zip(rounds(a), rounds(b)) if y)
        return f" (rounds: {rs[len(rs) // 2]:.2f}x)" if rs else ""

    rows = [
        ("ingest (peer: sync)", s(fig["finalize"]), s(fig["peer_sync"]),
         ratio(fig["finalize"], fig["peer_sync"]) + paired("finalize", "peer-sync")),
        ("ingest, raw bytes kept (peer: sync + archive capture + import)", s(fig["finalize"]),
         s(fig["peer_ingest"]), ratio(fig["finalize"], fig["peer_ingest"]) + paired("finalize", "peer-ingest")),
        ("verify (peer: archive verify)", s(fig["verify"]), s(fig["peer_verify"]),
         ratio(fig["verify"], fig["peer_verify"]) + paired("verify", "peer-verify")),
        ("storage: home, raw bytes kept (peer: data dir with raw archive)", mb(fig["h_home"]), mb(fig["p_data"]),
         ratio(fig["h_home"], fig["p_data"])),
        ("storage: the ledger alone (peer: sessions.db)", mb(fig["h_ledger"]), mb(fig["p_db"]),
         ratio(fig["h_ledger"], fig["p_db"])),
        ("sessions page (peer: app shell + sidebar list)", m(reads["h_page"]), m(reads["p_page"]),
         ratio(reads["h_page"], reads["p_page"])),
        (f"/api/sessions, defaults ({reads['counts']['h_api']} vs {reads['counts']['p_api']} sessions)",
         m(reads["h_api"]), m(reads["p_api"]), ratio(reads["h_api"], reads["p_api"])),
        (f"/api/sessions, limit 500 ({reads['counts']['h_api_all']} vs {reads['counts']['p_api_all']} sessions)",
         m(reads["h_api_all"]), m(reads["p_api_all"]), ratio(reads["h_api_all"], reads["p_api_all"])),
        ("usage --session S (peer: session usage S)", m(reads["h_usage_session"]), m(reads["p_usage_session"]),
         ratio(reads["h_usage_session"], reads["p_usage_session"])),
        ("usage, all (peer: usage daily --all)", m(reads["h_usage_all"]), m(reads["p_usage_all"]),
         ratio(reads["h_usage_all"], reads["p_usage_all"])),
    ]
    searches = reads["searches"]
    h_exact = sum(q["harnery"]["exact"] for q in searches)
    p_exact = sum(q["peer"]["exact"] for q in searches)
    h_ms = sorted(q["harnery"]["ms"] for q in searches)[len(searches) // 2]
    p_ms = sorted(q["peer"]["ms"] for q in searches)[len(searches) // 2]
    rows.append((f"search: queries answered exactly (of {len(searches)})", str(h_exact), str(p_exact), ""))
    rows.append(("search: latency, median query", m(h_ms), m(p_ms), ratio(h_ms, p_ms)))
    rss = reads["rss_kb"]
    if rss.get("harnery") and rss.get("peer"):
        rows.append(("server peak RSS after the reads", f"{rss['harnery'] / 1024:.1f} MiB",
                     f"{rss['peer'] / 1024:.1f} MiB", ratio(rss["harnery"], rss["peer"])))

    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    head = (f"{fig['sessions']} sessions, {fig['transcript_bytes'] / 1e6:.1f} MB of transcripts, "
            f"{hooks['payloads']} hook payloads; ingest: median of {fig['repeat']} rounds; "
            f"reads: median of {reads['requests']}; search: {reads['search_reps']} per query; "
            f"load average at the end {load}")
    width = max(len(r[0]) for r in rows)
    print(head)
    print(f"{'':{width}}  {'harnery':>12}  {'agentsview':>12}  ratio")
    for r in rows:
        print(f"{r[0]:{width}}  {r[1]:>12}  {r[2]:>12}  {r[3]}")
    print()
    print(f"{'query':36} {'expected':>8}  {'harnery found (right)':>22}  {'agentsview found (right)':>25}")
    for q in searches:
        hq, pq = q["harnery"], q["peer"]
        print(f"{q['query'][:36]:36} {q['expected']:>8}  "
              f"{hq['found']:>5} ({hq['right']:>3}) {'exact' if hq['exact'] else 'NOT exact':>9} {hq['ms']:6.1f} ms"
              f"  {pq['found']:>5} ({pq['right']:>3}) {'exact' if pq['exact'] else 'NOT exact':>9} {pq['ms']:6.1f} ms")
    print(f"\nhooks: {hooks['payloads']} payloads in {hooks['wall_s']} s through the installed hook "
          f"(one run: median {hooks['median_ms']} ms, p99 {hooks['p99_ms']} ms); "
          f"raw archive: harnery {fig['h_raw'] / 1e6:.1f} MB (ledgers/ but the ledger), "
          f"the peer {fig['p_raw'] / 1e6:.1f} MB (raw-archive/; its data dir after sync alone "
          f"{fig['p_sync'] / 1e6:.1f} MB); "
          f"harnery's search index {fig['h_search'] / 1e6:.1f} MB (in its home)")

    # Issue 51's "done when", as far as this bench measures it.
    targets = [
        ("home, raw bytes kept, at most the peer's data dir", fig["h_home"] / fig["p_data"], 1.0),
        ("the ledger alone at most 2x the peer's database", fig["h_ledger"] / fig["p_db"], 2.0),
        ("the sessions page at most the peer's time", reads["h_page"] / reads["p_page"], 1.0),
        ("/api/sessions at most the peer's time", reads["h_api"] / reads["p_api"], 1.0),
        ("the held-out queries exact", len(searches) - h_exact, 0),
    ]
    print("\nissue 51 targets:")
    verdicts = []
    for what, got, limit in targets:
        ok = got <= limit
        shown = f"{int(got)} not exact" if what.startswith("the held-out") else f"{got:.2f}x"
        verdicts.append(f"- {what}: {shown}, {'met' if ok else 'NOT met'}")
        print(f"  {what}: {shown} ({'met' if ok else 'NOT met'})")

    md = [head, "", "| | harnery | agentsview | harnery ÷ agentsview |", "| --- | ---: | ---: | ---: |"]
    md += [f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} |" for r in rows]
    md += ["", "| query | sessions holding it | harnery found (right) | agentsview found (right) |",
           "| --- | ---: | ---: | ---: |"]
    for q in searches:
        hq, pq = q["harnery"], q["peer"]
        md.append(f"| `{q['query']}` | {q['expected']} | {hq['found']} ({hq['right']}){'' if hq['exact'] else ', not exact'}"
                  f" | {pq['found']} ({pq['right']}){'' if pq['exact'] else ', not exact'} |")
    md += ["", "Issue 51's targets:", ""] + verdicts
    with open(os.path.join(work, "table.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(work, "figures.json"), "w") as f:
        json.dump({"ingest_and_storage": fig, "reads": reads, "hooks": hooks}, f, indent=1)


if __name__ == "__main__":
    main()
