#!/usr/bin/env python3
"""What a kill-campaign trial is compared on: one home's end state as text.

    kill-campaign-snapshot.py BIN HOME [OP-EXTRA...]

Prints, one fact a line, everything `scripts/kill-campaign.sh` compares
between a trial (killed, cron in between, rerun) and the uninterrupted run
of an identical home:

- every epoch, oldest first: its contract generation, schema digest,
  whether it is live, and per session its events (how many of each type,
  whether their offsets run without a gap), read straight from each
  `ledger.sqlite` (not through harnery's readers);
- `harnery sessions --json --epoch all`, less the times (hook records
  delivered at another moment carry another time, so ids and times differ
  between two deliveries of the same records; what must not differ is
  which records landed, where, and what they made);
- the verdicts of `harnery epoch verify` and `harnery verify`, and whether
  the intake spool and the ready spool are empty;
- with `ship TARGET`: `harnery fleet verify --local` (every server row of
  this host against its ledger, both ways);
- with `restore RECORD NEW_ID`: the materialized record's bytes (blake3)
  and the new session's checkpoint log;
- with `raw`: the live epoch's raw archive files, compressed or not, the
  batches still directories (not packed), and
  any other file in it by name; with `packed`, only whether every file is
  compressed and any other file by name (a finalize cuts its batches by
  when records arrived, so their count is not compared);
- with `compact`: whether the live epoch keeps its events compactly
  (`event_store`) or in the plain table an older build wrote;
- with `otlp SPANS`: whether the spans a receiver took (SPANS: one
  `traceId spanId` a line, as often as each arrived) are exactly the spans
  `harnery export --format otlp` makes of the home, each at least once.

Standard library only (sqlite3 from Python's own).
"""

import glob
import hashlib
import json
import os
import sqlite3
import subprocess
import sys


def harnery(binary, home, *args):
    env = dict(os.environ, HARNERY_HOME=home)
    p = subprocess.run([os.path.join(binary, "harnery"), *args], env=env,
                       capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def epoch_dirs(home):
    archived = []
    for d in glob.glob(os.path.join(home, "ledgers", "v2-candidates", "*")):
        try:
            g = json.load(open(os.path.join(d, "genesis.json")))
        except OSError:
            continue
        archived.append((g.get("created_unix_ns", 0), g.get("contract_generation", 0), d))
    dirs = [d for _, _, d in sorted(archived)]
    live = os.path.join(home, "ledgers", "v2")
    if os.path.exists(os.path.join(live, "genesis.json")):
        dirs.append(live)
    return dirs


def epochs(home):
    out = []
    for d in epoch_dirs(home):
        g = json.load(open(os.path.join(d, "genesis.json")))
        live = d.endswith(os.path.join("ledgers", "v2"))
        db = os.path.join(d, "ledger.sqlite")
        # An archive is read-only and its WAL folded: open it immutable. The
        # live epoch's WAL holds rows: open it read-only, WAL and all.
        mode = "mode=ro" if live else "immutable=1"
        conn = sqlite3.connect(f"file:{db}?{mode}", uri=True)
        # A compact ledger's `events` is a view that decodes its text with
        # harnery's own SQL function; these columns are its store's own.
        (compact,) = conn.execute(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'event_store'").fetchone()
        rows = conn.execute(
            f"SELECT adapter, session_id, offset, type FROM {'event_store' if compact else 'events'} "
            "ORDER BY adapter, session_id, offset").fetchall()
        conn.close()
        head = f"epoch generation={g.get('contract_generation')} digest={g.get('schema_digest')} live={live}"
        out.append(f"{head} events={len(rows)}")
        by_session = {}
        for a, s, o, t in rows:
            by_session.setdefault((a, s), []).append((o, t))
        for (a, s), events in sorted(by_session.items()):
            offsets = [o for o, _ in events]
            contiguous = offsets == list(range(offsets[0], offsets[0] + len(offsets)))
            # Which types, how many of each: a session's records drained in
            # one run or split over two (hooks arriving while a finalize
            # runs) may place a minted checkpoint before or after a record
            # that arrived later; nothing may be lost or doubled.
            types = {}
            for _, t in events:
                types[t] = types.get(t, 0) + 1
            kinds = " ".join(f"{t}x{n}" for t, n in sorted(types.items()))
            out.append(f"  session {a} {s}: {len(events)} events, offsets "
                       f"{'contiguous' if contiguous else 'NOT contiguous'} from {offsets[0]}: {kinds}")
    return out


TIMES = {"first_unix_ns", "last_unix_ns", "first", "last", "started", "ended",
         "last_event", "first_event", "time_unix_ns", "first_at", "last_at"}


def timeless(v):
    if isinstance(v, dict):
        return {k: timeless(x) for k, x in sorted(v.items()) if k not in TIMES}
    if isinstance(v, list):
        return [timeless(x) for x in v]
    return v


def json_lines(text):
    text = text.strip()
    if not text:
        return []
    try:
        v = json.loads(text)
        return v if isinstance(v, list) else [v]
    except ValueError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def sessions(binary, home):
    rc, out, err = harnery(binary, home, "sessions", "--json", "--epoch", "all")
    if rc != 0:
        return [f"sessions: exit {rc}: {err.strip()}"]
    rows = [json.dumps(timeless(v), sort_keys=True) for v in json_lines(out)]
    return [f"session {r}" for r in sorted(rows)]


def verdicts(binary, home):
    out = []
    for args in (["epoch", "verify"], ["verify"]):
        rc, text, err = harnery(binary, home, *args)
        detail = "" if rc == 0 else " " + (text + err).strip().replace("\n", " | ")
        out.append(f"{' '.join(args)}: exit {rc}{detail}")
    rc, text, err = harnery(binary, home, "spool", "ls", "--json")
    pending = sum(v.get("records", 0) for v in json_lines(text)) if rc == 0 else f"exit {rc}"
    out.append(f"intake records undrained: {pending}")
    ready = [p for p in glob.glob(os.path.join(home, "spool", "ready", "**"), recursive=True)
             if os.path.isfile(p)]
    out.append(f"ready files left: {len(ready)}")
    return out


def ship(binary, home, target):
    # `--local` compares every row the server holds for this host with the
    # host's own ledger, column by column, both ways (none missing, none
    # extra): with the ledger compared above, the server's rows are.
    rc, text, err = harnery(binary, home, "fleet", "verify", "--from", target, "--local")
    detail = "" if rc == 0 else " " + (text + err).strip().replace("\n", " | ")
    return [f"fleet verify --local: exit {rc}{detail}"]


def restore(binary, home, record, new_id):
    try:
        digest = hashlib.blake2b(open(record, "rb").read(), digest_size=16).hexdigest()
    except OSError as e:
        digest = f"unreadable ({e.strerror})"
    out = [f"materialized record: {digest}"]
    rc, text, err = harnery(binary, home, "checkpoints", new_id, "--json")
    if rc != 0:
        return out + [f"checkpoints {new_id}: exit {rc}: {err.strip()}"]
    return out + [f"checkpoints {json.dumps(timeless(json.loads(text)), sort_keys=True)}"]


def raw(home):
    """How many raw archive files, compressed or not, and any other file
    (a leftover) by name. A batch's directory is named with a fresh id per
    run, so only the counts compare."""
    root = os.path.join(home, "ledgers", "v2", "raw")
    files = [os.path.basename(p) for p in glob.glob(os.path.join(root, "**"), recursive=True)
             if os.path.isfile(p)]
    plain = sum(1 for f in files if f.endswith(".seg"))
    packed = sum(1 for f in files if f.endswith(".segz"))
    others = sorted(f for f in files if not f.endswith((".seg", ".segz")))
    return [f"raw archive: {len(files)} files, {packed} compressed, {plain} not",
            f"raw archive: {batch_dirs(root)} batch directories",
            *(f"raw archive leftover: {f}" for f in others)]


def batch_dirs(root):
    """How many batches are directories of files, not packed in one."""
    return sum(1 for e in os.scandir(root) if e.is_dir()) if os.path.isdir(root) else 0


def packed(home):
    """Whether the raw archive is compressed to the end, and any other file."""
    root = os.path.join(home, "ledgers", "v2", "raw")
    files = [os.path.basename(p) for p in glob.glob(os.path.join(root, "**"), recursive=True)
             if os.path.isfile(p)]
    plain = sum(1 for f in files if f.endswith(".seg"))
    others = sorted(f for f in files if not f.endswith((".seg", ".segz")))
    return [f"raw archive: {'every file compressed' if plain == 0 else 'files left uncompressed'}",
            f"raw archive: {batch_dirs(root)} batch directories",
            *(f"raw archive leftover: {f}" for f in others)]


def compact(home):
    db = sqlite3.connect(os.path.join(home, "ledgers", "v2", "ledger.sqlite"))
    (n,) = db.execute("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'event_store'").fetchone()
    return [f"live epoch's events: {'compact' if n else 'plain'}"]


def otlp(binary, home, received):
    rc, out, err = harnery(binary, home, "export", "--format", "otlp")
    if rc != 0:
        return [f"export --format otlp: exit {rc}"]
    want = set()
    for line in out.splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for scope in rs["scopeSpans"]:
                for span in scope["spans"]:
                    want.add((span["traceId"], span["spanId"]))
    got = set()
    if os.path.exists(received):
        got = {tuple(l.split()) for l in open(received) if l.strip()}
    return [f"otlp: {len(want)} spans exported, {len(want - got)} of them never received, "
            f"{len(got - want)} received spans not exported"]


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    binary, home, extra = argv[1], argv[2], argv[3:]
    lines = epochs(home) + sessions(binary, home) + verdicts(binary, home)
    if extra[:1] == ["ship"]:
        lines += ship(binary, home, extra[1])
    elif extra[:1] == ["restore"]:
        lines += restore(binary, home, extra[1], extra[2])
    elif extra[:1] == ["raw"]:
        lines += raw(home)
    elif extra[:1] == ["packed"]:
        lines += packed(home)
    elif extra[:1] == ["compact"]:
        lines += compact(home)
    elif extra[:1] == ["otlp"]:
        lines += otlp(binary, home, extra[1])
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
