#!/usr/bin/env bash
# Benchmark `harnery serve` under the hostile probes, and how soon a hook
# event shows with only `serve` running.
#
#   1. spool one Claude Code session whose prompt is PROMPT_MB MiB (with
#      `<` and `>`, so its event page is about twice that) through the real
#      `harnery-hook`, and finalize it (not timed);
#   2. start `harnery serve --addr 127.0.0.1:0` (its spool drain on) and
#      time REPEAT normal requests (curl, `/api/last-seq` with the cookie):
#      the baseline;
#   3. start the probes (python3, one process holding every socket):
#      IDLE connections that send nothing, HALF that send half a head,
#      BODIES that announce a body and never send it, one oversized head,
#      and SLOW readers of the large event page that read 1 KiB and stop;
#      while they are held, time REPEAT normal requests again, and read
#      the server's peak RSS (VmHWM in /proc/PID/status);
#   4. hook → visible: LIVE times, spool a new session's first two hook
#      payloads with `harnery-hook` and poll `/api/sessions` (every 20 ms)
#      until it is listed.
# Prints medians and maxima in milliseconds.
#
# Usage: scripts/bench-serve-probes.sh
#   (env: PROMPT_MB=15 SLOW=4 IDLE=200 HALF=20 BODIES=20 REPEAT=20 LIVE=10)
set -euo pipefail

cd "$(dirname "$0")/.."
PROMPT_MB=${PROMPT_MB:-15}
SLOW=${SLOW:-4}
IDLE=${IDLE:-200}
HALF=${HALF:-20}
BODIES=${BODIES:-20}
REPEAT=${REPEAT:-20}
LIVE=${LIVE:-10}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-probes.XXXXXX)}
FIXTURE=tests/fixtures/claude-code/basic/hooks.jsonl

cargo build --release --quiet --bin harnery
cargo build --release --quiet -p harnery-spool --bin harnery-hook
BIN=$PWD/target/release

home="$WORK/home"
rm -rf "$home" && mkdir -p "$home"
export HARNERY_HOME="$home" HARNERY_RECORDS=off

# payload N EVENT SESSION: the fixture's first EVENT payload as SESSION
# (a prompt of PROMPT_MB MiB when N is "big").
payload() {
  python3 - "$FIXTURE" "$1" "$2" "$3" "$PROMPT_MB" <<'EOF'
import json, sys
fixture, size, event, session, mb = sys.argv[1:]
for line in open(fixture):
    v = json.loads(line)
    if v["hook_event_name"] == event:
        v["session_id"] = session
        if size == "big":
            v["prompt"] = "x <y> " * (int(mb) * (1 << 20) // 6)
        print(json.dumps(v))
        break
EOF
}
big=0badc0de-0000-4000-8000-000000000030
payload small SessionStart "$big" | "$BIN/harnery-hook" claude-code
payload big UserPromptSubmit "$big" | "$BIN/harnery-hook" claude-code
"$BIN/harnery" finalize >/dev/null

"$BIN/harnery" serve --addr 127.0.0.1:0 >"$WORK/serve.out" 2>"$WORK/serve.err" &
pid=$!
trap 'kill $pid 2>/dev/null || true; [ -n "${probes:-}" ] && kill $probes 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  [ -s "$WORK/serve.out" ] && break
  sleep 0.1
done
url=$(sed -n 's/^harnery serve: //p' "$WORK/serve.out")
base=${url%%/\?token=*}
port=${base##*:}
cookie="harnery_token_${port}=${url##*token=}"
page="/sessions/$big/events/1"
size=$(curl -s -o /dev/null -b "$cookie" -w '%{size_download}' "$base$page")

# fetch NAME: one normal request; its total time (ms) appended to NAME.ms.
fetch() {
  local code
  code=$(curl -s -o /dev/null -m 60 -b "$cookie" -w '%{http_code} %{time_total}' "$base/api/last-seq")
  [ "${code%% *}" = 200 ] || { echo "a normal request answered ${code%% *}" >&2; exit 1; }
  awk -v t="${code#* }" 'BEGIN { printf "%.3f\n", t * 1000 }' >>"$WORK/$1.ms"
}

stat_ms() {
  sort -n "$WORK/$1.ms" | awk '{ a[NR] = $1 } END {
    m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
    printf "%.1f %.1f", m, a[NR] }'
}

for _ in $(seq "$REPEAT"); do fetch quiet; done
hwm_quiet=$(awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status")

python3 - "$port" "$cookie" "$page" "$IDLE" "$HALF" "$BODIES" "$SLOW" >"$WORK/probes.out" <<'EOF' &
import socket, sys, time
port, cookie, page = int(sys.argv[1]), sys.argv[2], sys.argv[3]
idle, half, bodies, slow = map(int, sys.argv[4:8])
held = []
def conn(data=b""):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    if data:
        s.sendall(data)
    held.append(s)
    return s
host = f"Host: 127.0.0.1:{port}\r\n"
for _ in range(slow):
    s = conn(f"GET {page} HTTP/1.1\r\n{host}Cookie: {cookie}\r\n\r\n".encode())
    got = 0
    while got < 1024:
        got += len(s.recv(1024 - got))
for _ in range(idle):
    conn()
for _ in range(half):
    conn(f"GET / HTTP/1.1\r\n{host}".encode())
for _ in range(bodies):
    conn(f"POST /api/sessions HTTP/1.1\r\n{host}Content-Length: 100000\r\n\r\n".encode())
conn(f"GET / HTTP/1.1\r\n{host}X-Long: {'a' * 20000}\r\n\r\n".encode())
print("held", len(held), flush=True)
time.sleep(3600)
EOF
probes=$!
for _ in $(seq 300); do
  grep -q held "$WORK/probes.out" 2>/dev/null && break
  sleep 0.1
done
grep -q held "$WORK/probes.out" || { echo "the probes did not start" >&2; exit 1; }
for _ in $(seq "$REPEAT"); do fetch probed; done
hwm=$(awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status")
kill $probes 2>/dev/null || true
probes=

# Hook → visible in /api/sessions with only serve running.
for i in $(seq "$LIVE"); do
  id=$(printf '11ec0000-%04d-4000-8000-000000000000' "$i")
  start=$(payload small SessionStart "$id")
  prompt=$(payload small UserPromptSubmit "$id")
  t0=$(date +%s%N)
  printf '%s' "$start" | "$BIN/harnery-hook" claude-code
  printf '%s' "$prompt" | "$BIN/harnery-hook" claude-code
  until curl -s -b "$cookie" "$base/api/sessions?limit=50" | grep -q "$id"; do
    [ $(( ($(date +%s%N) - t0) / 1000000000 )) -lt 60 ] || { echo "session $id not listed after 60 s" >&2; exit 1; }
    sleep 0.02
  done
  t1=$(date +%s%N)
  awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.3f\n", ns / 1e6 }' >>"$WORK/live.ms"
done

echo "large page: $size bytes; probes: $SLOW slow readers of it, $IDLE idle, $HALF half heads, $BODIES bodies never sent, 1 oversized head"
printf '%-44s %10s %8s\n' measure median_ms max_ms
read -r m x <<<"$(stat_ms quiet)"; printf '%-44s %10s %8s\n' "normal request, no probes" "$m" "$x"
read -r m x <<<"$(stat_ms probed)"; printf '%-44s %10s %8s\n' "normal request while the probes are held" "$m" "$x"
read -r m x <<<"$(stat_ms live)"; printf '%-44s %10s %8s\n' "hook -> listed in /api/sessions (serve only)" "$m" "$x"
echo "server peak RSS (VmHWM): $hwm_quiet MiB before the probes, $hwm MiB with them"
echo "raw outputs: $WORK"
