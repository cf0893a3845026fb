#!/usr/bin/env bash
# How many cores a command keeps busy, moment by moment: run it, read its
# CPU time from /proc/<pid>/stat and each thread's from
# /proc/<pid>/task/*/stat every INTERVAL seconds (default 0.25), and print
# one line per interval (seconds since the start, cores busy, then the
# cores each thread name kept busy), then the totals: wall time,
# CPU-seconds, the average cores busy, and CPU-seconds by thread name. A drain that keeps two cores busy cannot be sped up by moving work
# between its threads; one that leaves a core idle can.
#
# Usage: scripts/cpu-timeline.sh COMMAND [ARGS...]   (needs python3)
#   e.g. HARNERY_HOME=<a copy of a spool> scripts/cpu-timeline.sh \
#          harnery finalize --no-compact --json
# The command's output goes to its usual places; the timeline to stderr.
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi
"$@" &
pid=$!
python3 - "$pid" "${INTERVAL:-0.25}" <<'PY' >&2
import os, sys, time

pid, interval = sys.argv[1], float(sys.argv[2])
tick = os.sysconf("SC_CLK_TCK")


def fields(stat):
    return stat[stat.rindex(")") + 2 :].split()


def process():
    """The process's CPU ticks, its exited threads' included, or None once
    it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = fields(f.read())
    except FileNotFoundError:
        return None
    # A process that has ended but is not reaped yet is a zombie ("Z").
    return None if stat[0] == "Z" else int(stat[11]) + int(stat[12])


def started():
    """When the process started, in seconds of CLOCK_BOOTTIME (the clock
    /proc counts from), so the first interval is measured from there."""
    with open(f"/proc/{pid}/stat") as f:
        return int(fields(f.read())[19]) / tick


def now():
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def threads():
    """Each live thread's (name, CPU ticks)."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except FileNotFoundError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        rest = fields(stat)
        out[tid] = (name, int(rest[11]) + int(rest[12]))
    return out


try:
    start = started()
except FileNotFoundError:
    start = now()
last = start
seen, by_name, total = {}, {}, 0
while True:
    time.sleep(interval)
    ticks_now = process()
    if ticks_now is None:
        break
    at = now()
    share = {}
    for tid, (name, ticks) in threads().items():
        used = ticks - seen.get(tid, 0)
        seen[tid] = ticks
        share[name] = share.get(name, 0) + used
        by_name[name] = by_name.get(name, 0) + used
    span = at - last
    last = at
    cores = (ticks_now - total) / tick / span
    total = ticks_now
    parts = " ".join(
        f"{n}={v / tick / span:.2f}" for n, v in sorted(share.items()) if v
    )
    print(f"{at - start:7.2f}s {cores:4.2f} cores  {parts}")

wall = last - start
cpu = total / tick
if wall == 0:
    print("the command ended before the first sample")
    sys.exit(0)
print(f"wall {wall:.2f} s, CPU {cpu:.2f} s (both to the last sample), {cpu / wall:.2f} cores busy on average")
print("by thread name (threads that ended between samples lose their last interval):")
for name, ticks in sorted(by_name.items(), key=lambda kv: -kv[1]):
    print(f"  {name:16} {ticks / tick:7.2f} CPU-s")
PY
wait "$pid"
