#!/usr/bin/env bash
# Whole-process latency of harnery-hook against two baselines, in one run:
#   cat     sh -c 'cat >> FILE'               (no fsync)
#   python  python3 stdlib hook: read stdin, json.loads, append one line (no fsync)
#   hook    harnery-hook claude-code           (lease + append + fdatasync)
#   tmpfs   the same hook with HARNERY_HOME on /dev/shm, where fdatasync is a
#           no-op: the hook's own cost without the disk's flush latency
# for 1 KB, 64 KB and 1 MB payloads, with one writer and with 16 concurrent
# writers on one session. Runs are interleaved (hook, cat, python, hook, ...)
# so machine noise hits all three alike. Prints p50/p99 in ms and the ratios.
#
# Usage: scripts/bench-hook.sh [N]   (N spawns per cell and writer mode; default 200)
# Env:   BENCH_DIR (scratch, default a new temp dir), HARNERY_HOOK (prebuilt binary)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-200}"
if [[ -z "${HARNERY_HOOK:-}" ]]; then
  cargo build --release --bin harnery-hook >&2
  HARNERY_HOOK="$PWD/target/release/harnery-hook"
fi
BENCH_DIR="${BENCH_DIR:-$(mktemp -d)}"
mkdir -p "$BENCH_DIR"
cat > "$BENCH_DIR/pyhook.py" <<'PY'
import json, sys
raw = sys.stdin.buffer.read()
doc = json.loads(raw)
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"event": doc.get("hook_event_name"), "session": doc.get("session_id"), "payload": doc}) + "\n")
PY
python3 - "$HARNERY_HOOK" "$BENCH_DIR" "$N" <<'PY'
import os, sys, threading, time
hook, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
env = dict(os.environ, HARNERY_HOME=os.path.join(work, "home"))
shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
shm_home = os.path.join(shm, "harnery-bench-%d" % os.getpid()) if shm else None
sizes = [("1KB", 1000), ("64KB", 64 * 1024), ("1MB", 1 << 20)]
def payload(size):
    head = b'{"session_id":"bench-session","hook_event_name":"PostToolUse","tool_response":"'
    return head + b"x" * max(0, size - len(head) - 2) + b'"}'
def contenders(tag):
    out = os.path.join(work, f"out-{tag}")
    c = {
        "hook": [hook, "claude-code"],
        "cat": ["/bin/sh", "-c", f"cat >> {out}.cat"],
        "python": ["/usr/bin/env", "python3", os.path.join(work, "pyhook.py"), f"{out}.py"],
    }
    if shm_home:
        c["tmpfs"] = [hook, "claude-code"]
    return c
def once(argv, path, tmpfs=False):
    fd = os.open(path, os.O_RDONLY)
    e = dict(env, HARNERY_HOME=shm_home) if tmpfs else env
    t = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, e, file_actions=[(os.POSIX_SPAWN_DUP2, fd, 0)])
    os.waitpid(pid, 0)
    dt = time.perf_counter() - t
    os.close(fd)
    return dt
def pct(ts, p):
    ts = sorted(ts)
    return ts[min(len(ts) - 1, int(len(ts) * p))] * 1000
def cell(label, size, writers):
    path = os.path.join(work, f"payload-{label}")
    with open(path, "wb") as f:
        f.write(payload(size))
    cs = contenders(f"{label}-{writers}")
    times = {k: [] for k in cs}
    lock = threading.Lock()
    per = max(1, n // writers)
    def worker():
        for _ in range(per):
            for k, argv in cs.items():
                dt = once(argv, path, tmpfs=(k == "tmpfs"))
                with lock:
                    times[k].append(dt)
    if writers == 1:
        worker()
    else:
        ts = [threading.Thread(target=worker) for _ in range(writers)]
        [t.start() for t in ts]
        [t.join() for t in ts]
    return {k: (pct(v, 0.5), pct(v, 0.99), len(v)) for k, v in times.items()}
print(f"harnery-hook {hook}; {n} spawns per cell; scratch {work}")
print(f"{'payload':8} {'writers':>7} | {'hook p50':>9} {'p99':>8} | {'cat p50':>8} {'p99':>8} | {'py p50':>8} {'p99':>8} | {'hook/cat':>8} {'py/hook':>8} | {'tmpfs p50':>9}")
for label, size in sizes:
    for writers in (1, 16):
        r = cell(label, size, writers)
        h, c, p = r["hook"], r["cat"], r["python"]
        t = f"{r['tmpfs'][0]:9.2f}" if "tmpfs" in r else f"{'-':>9}"
        print(f"{label:8} {writers:>7} | {h[0]:9.2f} {h[1]:8.2f} | {c[0]:8.2f} {c[1]:8.2f} | {p[0]:8.2f} {p[1]:8.2f} | {h[0]/c[0]:8.2f} {p[0]/h[0]:8.2f} | {t}")
if shm_home:
    import shutil
    shutil.rmtree(shm_home, ignore_errors=True)
PY
# Check that every hook record landed intact.
if [[ -x target/release/harnery || -x target/debug/harnery ]]; then
  bin=target/release/harnery; [[ -x $bin ]] || bin=target/debug/harnery
  HARNERY_HOME="$BENCH_DIR/home" "$bin" spool ls || true
fi
