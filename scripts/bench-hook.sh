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
# Then "Copilot hook as installed": a 1 KB Copilot preToolUse payload given to
#   bare    harnery-hook copilot preToolUse        (started directly)
#   exec    the preToolUse entry `harnery install copilot --form exec` writes,
#           started as Copilot starts it: `exec` with `args`, no shell
#   bash    the entry `--form bash` writes, started as `bash -c <bash>`
# interleaved, one writer; each row's ratio is its p50 over the bare hook's.
#
# Usage: scripts/bench-hook.sh [N]   (N spawns per cell and writer mode; default 200)
# Env:   BENCH_DIR (scratch, default a new temp dir), HARNERY_HOOK (prebuilt
#        binary), HARNERY (prebuilt harnery; default: beside HARNERY_HOOK),
#        BENCH_COPILOT_ONLY=1 (only the "Copilot hook as installed" rows)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-200}"
if [[ -z "${HARNERY_HOOK:-}" ]]; then
  cargo build --release --bins >&2
  HARNERY_HOOK="$PWD/target/release/harnery-hook"
fi
HARNERY="${HARNERY:-$(dirname "$HARNERY_HOOK")/harnery}"
BENCH_DIR="${BENCH_DIR:-$(mktemp -d)}"
mkdir -p "$BENCH_DIR"
# The two Copilot hook files exactly as install writes them (dry run: the
# file text after the "# ..." lines).
for form in exec bash; do
  HOME="$BENCH_DIR/install-home" "$HARNERY" install copilot --no-schedule --dry-run --form "$form" \
    --hook-bin "$HARNERY_HOOK" | grep -v '^#' > "$BENCH_DIR/copilot-$form.json"
done
cat > "$BENCH_DIR/pyhook.py" <<'PY'
import json, sys
raw = sys.stdin.buffer.read()
doc = json.loads(raw)
with open(sys.argv[1], "a") as f:
    f.write(json.dumps({"event": doc.get("hook_event_name"), "session": doc.get("session_id"), "payload": doc}) + "\n")
PY
python3 - "$HARNERY_HOOK" "$BENCH_DIR" "$N" "${BENCH_COPILOT_ONLY:-0}" <<'PY'
import json, os, sys, threading, time
hook, work, n, copilot_only = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"

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
def main_table():
    print(f"{'payload':8} {'writers':>7} | {'hook p50':>9} {'p99':>8} | {'cat p50':>8} {'p99':>8} | {'py p50':>8} {'p99':>8} | {'hook/cat':>8} {'py/hook':>8} | {'tmpfs p50':>9}")
    for label, size in sizes:
        for writers in (1, 16):
            r = cell(label, size, writers)
            h, c, p = r["hook"], r["cat"], r["python"]
            t = f"{r['tmpfs'][0]:9.2f}" if "tmpfs" in r else f"{'-':>9}"
            print(f"{label:8} {writers:>7} | {h[0]:9.2f} {h[1]:8.2f} | {c[0]:8.2f} {c[1]:8.2f} | {p[0]:8.2f} {p[1]:8.2f} | {h[0]/c[0]:8.2f} {p[0]/h[0]:8.2f} | {t}")
if not copilot_only:
    main_table()
def installed_argv(form):
    entry = json.load(open(os.path.join(work, f"copilot-{form}.json")))["hooks"]["preToolUse"]
    entry = [e for e in entry if "harnery-hook" in (e.get("exec") or e.get("bash") or "")][0]
    if form == "exec":
        return [entry["exec"], *entry["args"]]
    return ["/bin/bash", "-c", entry["bash"]]
def copilot_rows():
    path = os.path.join(work, "payload-copilot-1KB")
    head = b'{"sessionId":"bench-copilot","timestamp":1795997722372,"cwd":"/tmp","toolName":"bash","toolArgs":"'
    with open(path, "wb") as f:
        f.write(head + b"x" * (1000 - len(head) - 2) + b'"}')
    cs = {"bare": [hook, "copilot", "preToolUse"], "exec": installed_argv("exec"), "bash": installed_argv("bash")}
    times = {k: [] for k in cs}
    for _ in range(n):
        for k, argv in cs.items():
            times[k].append(once(argv, path))
    bare = pct(times["bare"], 0.5)
    print()
    print(f"Copilot hook as installed (1 KB preToolUse, 1 writer, {n} spawns each)")
    print(f"{'started as':28} | {'p50':>8} {'p99':>8} | {'/bare':>6}")
    labels = {"bare": "bare hook (no config)", "exec": "installed, exec form", "bash": "installed, bash form"}
    for k in cs:
        p50, p99 = pct(times[k], 0.5), pct(times[k], 0.99)
        print(f"{labels[k]:28} | {p50:8.2f} {p99:8.2f} | {p50 / bare:6.2f}")
copilot_rows()
if shm_home:
    import shutil
    shutil.rmtree(shm_home, ignore_errors=True)
PY
# Check that every hook record landed intact.
if [[ -x target/release/harnery || -x target/debug/harnery ]]; then
  bin=target/release/harnery; [[ -x $bin ]] || bin=target/debug/harnery
  HARNERY_HOME="$BENCH_DIR/home" "$bin" spool ls || true
fi
