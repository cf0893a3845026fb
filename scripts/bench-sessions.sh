#!/usr/bin/env bash
# Benchmark `harnery sessions` over many sessions, and the upgrade that
# gives an older ledger's sessions their titles and projects.
#
#   1. write SIGNALS Claude Code signals over SESSIONS sessions with
#      examples/bench_spool.rs (a prompt in each) and finalize them with
#      BEFORE (an older harnery binary) when given, else with this build;
#   2. with BEFORE: time `sessions --json` and `sessions` with it, REPEAT
#      times; then one finalize with this build (it migrates the ledger and
#      fills every session's title and project from its events: timed
#      once, as `upgrade-fill`);
#   3. time `sessions --json` and `sessions` with this build, REPEAT times.
# Prints the median wall and CPU (user + system) time of each, and each
# command's ratio of this build over BEFORE in CPU time (on a shared,
# loaded machine the wall time follows the load; the CPU time much less).
#
# Usage: scripts/bench-sessions.sh [SESSIONS] [SIGNALS]   (default 10000 100000)
#   BEFORE=path/to/older/harnery   the build to compare with
#   BIN=dir                        where harnery and examples/bench_spool are
#                                  (default: a release build made here)
#   REPEAT=N                       rounds (default 5)
#
# scripts/bench-sessions.sh scale [SIGNALS] [SESSIONS]   (default 1000000 1000)
#   Whether the reads the session rows answer cost the same at any ledger
#   size. Three homes: `big` (SIGNALS over SESSIONS sessions), `one` (a
#   ledger holding only one session of big's shape: SIGNALS / SESSIONS
#   signals) and `small` (as many sessions as big, one signal each: the
#   same list over a thousandth of the events). In alternating
#   rounds (REPEAT, default 7): `usage --session S --json` on big against
#   `usage --json` on one (target: at most 2x), big's whole `usage --json`
#   for scale, and `sessions --json --limit 50`, `/api/sessions?limit=50`
#   and the `/sessions` page on big against small (one server per home).
#   Prints median wall times and the ratios.
set -euo pipefail

cd "$(dirname "$0")/.."

# scale [SIGNALS] [SESSIONS]: see the usage above.
scale() {
  local signals=${1:-1000000} sessions=${2:-1000}
  local repeat=${REPEAT:-7}
  local work=${BENCH_DIR:-$(mktemp -d -t harnery-sessions-scale.XXXXXX)}
  if [ -z "${BIN:-}" ]; then
    cargo build --release --quiet --bin harnery --example bench_spool
    BIN=$PWD/target/release
  fi
  export HARNERY_NOW=2026-12-01T00:00:00Z
  local name
  for name in big one small; do
    rm -rf "${work:?}/$name" && mkdir -p "$work/$name"
  done
  "$BIN/examples/bench_spool" "$work/big" "$signals" "$sessions" >/dev/null
  "$BIN/examples/bench_spool" "$work/one" $((signals / sessions)) 1 >/dev/null
  "$BIN/examples/bench_spool" "$work/small" "$sessions" "$sessions" >/dev/null
  for name in big one small; do
    HARNERY_HOME="$work/$name" "$BIN/harnery" finalize >/dev/null
  done
  local s
  s=$(HARNERY_HOME="$work/big" "$BIN/harnery" sessions --json --limit 1 |
    sed 's/.*"session_id":"\([^"]*\)".*/\1/')
  declare -gA base cookie pids
  for name in big small; do
    HARNERY_HOME="$work/$name" "$BIN/harnery" serve --addr 127.0.0.1:0 \
      >"$work/$name.serve.out" 2>"$work/$name.serve.err" &
    pids[$name]=$!
  done
  trap 'kill ${pids[big]} ${pids[small]} 2>/dev/null || true' EXIT
  for name in big small; do
    for _ in $(seq 100); do
      [ -s "$work/$name.serve.out" ] && break
      sleep 0.1
    done
    local url
    url=$(sed -n 's/^harnery serve: //p' "$work/$name.serve.out")
    base[$name]=${url%%/\?token=*}
    cookie[$name]="harnery_token_${base[$name]##*:}=${url##*token=}"
  done
  # run NAME HOME CMD...: the wall time of CMD (ms) into NAME.ms.
  run() {
    local out=$1 home=$2; shift 2
    local t0 t1
    t0=$(date +%s%N)
    HARNERY_HOME="$work/$home" "$@" >/dev/null
    t1=$(date +%s%N)
    awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.3f\n", ns / 1e6 }' >>"$work/$out.ms"
  }
  # get NAME HOME PATH: the time curl takes for PATH on HOME's server.
  get() {
    local code
    code=$(curl -s -o /dev/null -b "${cookie[$2]}" -w '%{http_code} %{time_total}' "${base[$2]}$3")
    [ "${code%% *}" = 200 ] || { echo "GET $3 answered ${code%% *}" >&2; exit 1; }
    awk -v t="${code#* }" 'BEGIN { printf "%.3f\n", t * 1000 }' >>"$work/$1.ms"
  }
  get warm big /sessions
  get warm small /sessions
  for _ in $(seq "$repeat"); do
    run usage-session-big big "$BIN/harnery" usage --session "$s" --json
    run usage-one one "$BIN/harnery" usage --json
    run usage-all-big big "$BIN/harnery" usage --json
    run sessions-json-big big "$BIN/harnery" sessions --json --limit 50
    run sessions-json-small small "$BIN/harnery" sessions --json --limit 50
    get api-big big "/api/sessions?limit=50"
    get api-small small "/api/sessions?limit=50"
    get page-big big /sessions
    get page-small small /sessions
  done
  med() {
    sort -n "$work/$1.ms" | awk '{ a[NR] = $1 } END {
      m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
      printf "%.1f", m }'
  }
  line() {
    local ratio=-
    [ -n "${2:-}" ] && ratio=$(awk -v a="$(med "$1")" -v b="$(med "$2")" 'BEGIN { printf "%.2f", a / b }')
    printf '%-20s %10s %8s %s\n' "$1" "$(med "$1")" "$ratio" "${2:-}"
  }
  echo "big: $signals signals over $sessions sessions; one: $((signals / sessions)) signals, one session; small: $sessions signals over $sessions sessions"
  printf '%-20s %10s %8s %s\n' read median_ms ratio against
  line usage-session-big usage-one
  line usage-one
  line usage-all-big usage-one
  line sessions-json-big sessions-json-small
  line sessions-json-small
  line api-big api-small
  line api-small
  line page-big page-small
  line page-small
  echo "raw outputs: $work"
}

if [ "${1:-}" = scale ]; then
  shift
  scale "$@"
  exit 0
fi
SESSIONS=${1:-10000}
SIGNALS=${2:-100000}
REPEAT=${REPEAT:-5}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-sessions.XXXXXX)}
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet --bin harnery --example bench_spool
  BIN=$PWD/target/release
fi
BEFORE=${BEFORE:-}

# timed NAME CMD...: add CMD's wall time (ns) to NAME.walls and its CPU
# time (ns) to NAME.cpus; stdout to /dev/null.
timed() {
  local name=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f '%U %S' -o "$WORK/$name.run" "$@" >/dev/null
  t1=$(date +%s%N)
  echo $((t1 - t0)) >>"$WORK/$name.walls"
  awk '{ printf "%.0f\n", ($1 + $2) * 1e9 }' "$WORK/$name.run" >>"$WORK/$name.cpus"
}

# median NAME [walls|cpus]: the median, in seconds.
median() {
  sort -n "$WORK/$1.${2:-walls}" | awk '{ a[NR] = $1 } END {
    m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
    printf "%.3f", m / 1e9 }'
}

home="$WORK/home"
rm -rf "$home" && mkdir -p "$home"
"$BIN/examples/bench_spool" "$home" "$SIGNALS" "$SESSIONS" >/dev/null
export HARNERY_HOME="$home" HARNERY_NOW=2026-12-01T00:00:00Z
if [ -n "$BEFORE" ]; then
  "$BEFORE" finalize >/dev/null
  for _ in $(seq "$REPEAT"); do
    timed before-sessions-json "$BEFORE" sessions --json
    timed before-sessions "$BEFORE" sessions
  done
  timed upgrade-fill "$BIN/harnery" finalize
else
  "$BIN/harnery" finalize >/dev/null
fi
listed=$("$BIN/harnery" sessions --json | wc -l)
titled=$("$BIN/harnery" sessions --json | grep -c '"title":"[^"]' || true)
for _ in $(seq "$REPEAT"); do
  timed sessions-json "$BIN/harnery" sessions --json
  timed sessions "$BIN/harnery" sessions
done

echo "$listed sessions listed, $titled with a title ($SIGNALS signals)"
printf '%-22s %9s %9s %10s\n' command wall_s cpu_s cpu_ratio
line() { printf '%-22s %9s %9s %10s\n' "$1" "$(median "$1")" "$(median "$1" cpus)" "$2"; }
for c in sessions-json sessions; do
  ratio=-
  if [ -n "$BEFORE" ]; then
    ratio=$(awk -v a="$(median "$c" cpus)" -v b="$(median "before-$c" cpus)" 'BEGIN { printf "%.2f", a / b }')
    line "before-$c" -
  fi
  line "$c" "$ratio"
done
if [ -n "$BEFORE" ]; then line upgrade-fill -; fi
echo "raw outputs: $WORK"
