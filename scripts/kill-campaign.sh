#!/usr/bin/env bash
# Random-moment kill campaign for one multi-step crash-safe operation.
#
#   scripts/kill-campaign.sh OP N
#
# OP is one of: epoch-advance archive-compact finalize ship restore-apply
#               compact-events otlp-push
#
# A trial: copy a prepared home (real hook records through the real
# harnery-hook from the captured corpus in tests/fixtures/; for
# epoch-advance the generation-1 fixture home; for archive-compact the home
# whose raw archive an older build compressed file by file, and batches
# `finalize --no-compact` added to it), start OP while more hook
# records keep arriving, SIGKILL it after a random delay spread across its
# whole run (the range is calibrated from an uninterrupted run's duration),
# then run cron's `finalize`, deliver new hook records, `finalize` again,
# rerun OP to completion and `finalize` once more. The end state is compared
# with the same steps run without the kill on an identical home: every
# epoch's events, the sessions, `epoch verify`, `verify`, the intake and
# ready spools empty, and for ship the server's rows (`fleet verify
# --local`), for restore-apply the materialized record
# and the new session, for finalize (which compacts the raw archive to the
# end by default) that every raw archive file is compressed, for
# compact-events (a ledger in the plain form an older build wrote, made by
# a failpoints build) that the live epoch is compact, for otlp-push (to a
# local receiver each trial starts, http/json) that the receiver took
# exactly the spans the home exports, each at least once
# (scripts/kill-campaign-snapshot.py says exactly what).
#
# Prints one line per trial and `OP: N trials, K ok, F failed`; exits 1 on
# any failure, keeping the failing home (and its diff) under the work dir.
#
# Environment:
#   BIN=DIR        the harnery and harnery-hook binaries (default target/debug)
#   SEED=N         the random seed (default: from the clock; always printed)
#   WORK=DIR       where homes are made, an empty or new dir (default: a new
#                  dir under /tmp)
#   MAX_DELAY_MS=N the kill delay's upper bound (default: 1.2 x the
#                  uninterrupted run's duration); a delay is MAX x u^2, u
#                  uniform in [0, 1): the whole run, its start more densely
#   KEEP=1         keep every trial's home, not only the failing ones
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

op=${1:-}
trials=${2:-}
case "$op" in
  epoch-advance | archive-compact | finalize | ship | restore-apply | compact-events | otlp-push) ;;
  *)
    echo "usage: scripts/kill-campaign.sh OP N  (OP: epoch-advance archive-compact finalize ship restore-apply compact-events otlp-push)" >&2
    exit 2
    ;;
esac
[[ "$trials" =~ ^[0-9]+$ ]] || { echo "kill-campaign: N must be a number of trials, not '$trials'" >&2; exit 2; }

bin=$(cd "${BIN:-target/debug}" 2>/dev/null && pwd) || { echo "kill-campaign: BIN=${BIN:-target/debug} is not a directory" >&2; exit 2; }
for b in harnery harnery-hook; do
  [ -x "$bin/$b" ] || { echo "kill-campaign: $bin/$b is missing; build it (cargo build --bin harnery --bin harnery-hook) or set BIN=" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "kill-campaign: python3 is needed (the snapshot reads each ledger with Python's sqlite3)" >&2; exit 2; }

seed=${SEED:-$(($(date +%s%N) % 1000000007))}
RANDOM=$seed
work=${WORK:-$(mktemp -d "/tmp/kill-campaign-$op.XXXXXX")}
mkdir -p "$work"
[ -z "$(ls -A "$work")" ] || { echo "kill-campaign: WORK=$work is not empty; every campaign starts from an empty dir" >&2; exit 2; }
# A copy: a campaign that runs for an hour compares every trial by the
# rules it started with.
snapshot="$work/kill-campaign-snapshot.py"
cp "$repo/scripts/kill-campaign-snapshot.py" "$snapshot"
echo "kill-campaign $op: $trials trials, SEED=$seed, BIN=$bin, work $work"

# Every harnery run of a campaign sees the same clock and no agent's own
# records but the restore world's (set there). Nothing runs against the
# real home: a stray run lands in the work dir.
export HARNERY_NOW=2026-11-30T12:00:00Z HARNERY_RECORDS=off
export HARNERY_HOME=$work/no-home HOME=$work/no-user
export CLAUDE_CONFIG_DIR=$work/no-user/.claude COPILOT_HOME=$work/no-user/.copilot
unset HARNERY_FAILPOINTS HARNERY_TEST_SCHEMA_SUFFIX HARNERY_PLAIN_EVENTS

# --- hook records, through the real hook -----------------------------------

# feed HOME AGENT SCENARIO: every captured record of the scenario, one hook
# process per record, as the agent delivers them.
feed() {
  local home=$1 agent=$2 scenario=$3 dir="$repo/tests/fixtures/$2/$3"
  if [ "$agent" = claude-code ]; then
    while IFS= read -r line; do
      [ -n "$line" ] && printf '%s' "$line" | HARNERY_HOME=$home "$bin/harnery-hook" claude-code
    done <"$dir/hooks.jsonl"
  else
    python3 - "$dir/hook-capture.jsonl" "$home/.feed" <<'PY' |
import json, os, sys
os.makedirs(sys.argv[2], exist_ok=True)
for n, line in enumerate(open(sys.argv[1])):
    if line.strip():
        v = json.loads(line)
        path = os.path.join(sys.argv[2], str(n))
        open(path, "wb").write((v.get("stdin_raw") or "").encode())
        print(f"{v['event']}\t{path}")
PY
      while IFS=$'\t' read -r event file; do
        HARNERY_HOME=$home "$bin/harnery-hook" copilot "$event" <"$file"
        rm -f "$file"
      done
    rmdir "$home/.feed" 2>/dev/null
  fi
}

h() { HARNERY_HOME=$1 "$bin/harnery" "${@:2}"; }

# --- what each operation needs ---------------------------------------------

# The records that arrive while OP runs, and the ones between the kill and
# the rerun: sessions the prepared home does not hold.
during=(claude-code subagent)
between=(copilot basic-shell-anthropic)

pg_root=""
stop_pg() {
  [ -n "$pg_root" ] || return 0
  as_postgres pg_ctl -D "$pg_root/data" -m immediate -w stop >/dev/null 2>&1
  rm -rf "$pg_root"
}
trap stop_pg EXIT
as_postgres() {
  local prog=$1
  shift
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$pg_bin/$prog" "$@"; else "$pg_bin/$prog" "$@"; fi
}
# A throwaway PostgreSQL on a Unix socket in a temp dir, as the fleet
# tests start one (tests/it/fleet/support.rs).
start_pg() {
  pg_bin=""
  for d in $(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/x)") $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -r); do
    [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && { pg_bin=$d; break; }
  done
  [ -n "$pg_bin" ] || { echo "kill-campaign: ship needs PostgreSQL (initdb, pg_ctl): apt-get install -y postgresql" >&2; exit 2; }
  pg_root=$(mktemp -d /tmp/kcpg.XXXXXX)
  chmod 755 "$pg_root"
  mkdir "$pg_root/s"
  printf 'kill-campaign-pw' >"$pg_root/pw"
  [ "$(id -u)" -eq 0 ] && chown -R postgres:postgres "$pg_root"
  as_postgres initdb -D "$pg_root/data" -U harnery --auth=scram-sha-256 -E UTF8 --no-sync \
    --pwfile="$pg_root/pw" >"$pg_root/initdb.log" 2>&1 || { cat "$pg_root/initdb.log" >&2; exit 2; }
  as_postgres pg_ctl -D "$pg_root/data" -l "$pg_root/log" \
    -o "-k $pg_root/s -c listen_addresses= -c fsync=off -c max_connections=100" -w start >/dev/null ||
    { cat "$pg_root/log" >&2; exit 2; }
}
# A local OTLP receiver (http/json) for the trial in DIR: it answers every
# request 200 and appends each span's `traceId spanId` to DIR/otlp.received;
# its port in DIR/otlp.port, its pid in DIR/otlp.pid (stopped by stop_otlp).
start_otlp() {
  local dir=$1 waited=0
  python3 - "$dir" >>"$dir/otlp.log" 2>&1 <<'PY' &
import json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
out = os.path.join(sys.argv[1], "otlp.received")
class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        with open(out, "a") as f:
            for rs in body.get("resourceSpans", []):
                for scope in rs.get("scopeSpans", []):
                    for span in scope.get("spans", []):
                        f.write(f"{span['traceId']} {span['spanId']}\n")
        reply = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)
    def log_message(self, *args):
        pass
server = HTTPServer(("127.0.0.1", 0), Receiver)
tmp = os.path.join(sys.argv[1], "otlp.port.tmp")
open(tmp, "w").write(str(server.server_address[1]))
os.rename(tmp, os.path.join(sys.argv[1], "otlp.port"))
server.serve_forever()
PY
  echo $! >"$dir/otlp.pid"
  until [ -s "$dir/otlp.port" ]; do
    sleep 0.05
    waited=$((waited + 1))
    [ "$waited" -lt 200 ] || { echo "kill-campaign: the OTLP receiver did not start; see $dir/otlp.log" >&2; exit 2; }
  done
}
stop_otlp() {
  [ -s "$1/otlp.pid" ] && kill "$(cat "$1/otlp.pid")" 2>/dev/null
  rm -f "$1/otlp.pid"
}

pg_target() { echo "host=$pg_root/s port=5432 user=harnery password=kill-campaign-pw dbname=$1 sslmode=disable"; }
new_database() {
  PGPASSWORD=kill-campaign-pw psql -q -h "$pg_root/s" -U harnery -d postgres -c "CREATE DATABASE $1" >/dev/null
}

# The restore world: Claude Code's interactive session, its own record
# under a private CLAUDE_CONFIG_DIR, finalized with records followed.
restore_session=65f5909b-b66b-419a-a0ed-4fe96f1affac
restore_turn=484a3d1f-b0f6-464d-9676-016ec962767c
restore_new=0b5e6c1e-0000-4000-8000-00000000c0de

# prepare DIR: the home every trial and the reference copy.
prepare() {
  local home=$1/home
  mkdir -p "$home"
  case "$op" in
    epoch-advance)
      cp -a "$repo/tests/fixtures/epoch/gen1/home/." "$home/"
      ;;
    archive-compact)
      # Batches an older build compressed file by file, and batches as
      # `finalize` links them: both packed, one file a batch.
      cp -a "$repo/tests/fixtures/raw-archive/per-file/home/." "$home/"
      for s in basic parallel file-tools compact interactive resume; do feed "$home" claude-code "$s"; done
      feed "$home" copilot basic-shell-openai
      h "$home" finalize --no-compact >/dev/null
      ;;
    compact-events)
      # The plain form an older build wrote: only a failpoints build makes it.
      for s in basic parallel file-tools compact interactive resume; do feed "$home" claude-code "$s"; done
      feed "$home" copilot basic-shell-openai
      HARNERY_PLAIN_EVENTS=1 h "$home" finalize >/dev/null
      [ "$(python3 "$snapshot" "$bin" "$home" compact | tail -1)" = "live epoch's events: plain" ] || {
        echo "kill-campaign: compact-events needs a plain ledger, which only a failpoints build writes (cargo build --features failpoints --bins)" >&2
        exit 2
      }
      ;;
    otlp-push)
      for s in basic parallel file-tools compact interactive; do feed "$home" claude-code "$s"; done
      feed "$home" copilot basic-shell-openai
      h "$home" finalize >/dev/null
      ;;
    finalize)
      for s in basic parallel file-tools compact interactive resume tool-failure hook-events; do feed "$home" claude-code "$s"; done
      for s in basic-shell-openai subagent-task; do feed "$home" copilot "$s"; done
      ;;
    ship)
      for s in basic parallel file-tools compact; do feed "$home" claude-code "$s"; done
      feed "$home" copilot basic-shell-openai
      h "$home" finalize >/dev/null
      # The host id is made once, so every copy is the same host.
      h "$home" ship --status >/dev/null 2>&1
      [ -s "$home/host-id" ] || { echo "kill-campaign: ship --status made no host id" >&2; exit 2; }
      ;;
    restore-apply)
      local user=$1/user project slug dir
      project="$user/work dir"
      slug=$(printf '%s' "$project" | sed 's/[^A-Za-z0-9]/-/g')
      dir="$user/claude/projects/$slug"
      mkdir -p "$project" "$dir"
      cp "$repo/tests/fixtures/records/claude-code/interactive/$restore_session.jsonl" "$dir/"
      python3 - "$repo/tests/fixtures/claude-code/interactive/hooks.jsonl" "$restore_session" "$dir/$restore_session.jsonl" "$project" <<'PY' |
import json, sys
for line in open(sys.argv[1]):
    if sys.argv[2] in line:
        v = json.loads(line)
        v["transcript_path"], v["cwd"] = sys.argv[3], sys.argv[4]
        print(json.dumps(v))
PY
        while IFS= read -r line; do printf '%s' "$line" | HARNERY_HOME=$home "$bin/harnery-hook" claude-code; done
      restore_env "$1"
      h "$home" finalize >/dev/null
      ;;
  esac
}

# The restore world's environment (its agents' homes) for everything that
# runs on a copy of it.
restore_env() {
  [ "$op" = restore-apply ] || return 0
  export HOME=$1/user CLAUDE_CONFIG_DIR=$1/user/claude COPILOT_HOME=$1/user/copilot HARNERY_RECORDS=on
}

# op_cmd DIR: the operation (for the trial in DIR), into the array `cmd`.
# It is started as a simple command so that `$!` is harnery itself (an
# `eval` or a subshell would be the shell, and the kill would miss it).
op_cmd() {
  case "$op" in
    epoch-advance) cmd=("$bin/harnery" epoch advance) ;;
    archive-compact) cmd=("$bin/harnery" archive compact) ;;
    finalize) cmd=("$bin/harnery" finalize) ;;
    ship) cmd=("$bin/harnery" ship --to "$(pg_target "$(cat "$1/db")")" --batch-rows 7) ;;
    restore-apply) cmd=("$bin/harnery" restore "$restore_session" --checkpoint "turn:$restore_turn" --apply --new-id "$restore_new") ;;
    compact-events) cmd=("$bin/harnery" archive compact-events) ;;
    otlp-push) cmd=("$bin/harnery" otlp push --traces-endpoint "http://127.0.0.1:$(cat "$1/otlp.port")/v1/traces"
      --protocol http/json --spans-per-request 3) ;;
  esac
}

snapshot_args() {
  case "$op" in
    ship) echo ship "'$(pg_target "$(cat "$1/db")")'" ;;
    restore-apply) echo restore "'$(find "$1/user/claude/projects" -name "$restore_new.jsonl" | head -1)'" "$restore_new" ;;
    archive-compact) echo raw ;;
    finalize) echo packed ;;
    compact-events) echo compact ;;
    otlp-push) echo otlp "'$1/otlp.received'" ;;
  esac
}

# Where the kill left an epoch advance: its last recorded step and the
# temporary files of its durable writes (empty for other operations).
left_behind() {
  [ "$op" = epoch-advance ] || return 0
  local step tmp
  step=$(sed -n 's/.*"step": *"\([a-z]*\)".*/\1/p' "$1/ledgers/epoch-advance.json" 2>/dev/null)
  tmp=$(find "$1/ledgers" -name '.*.tmp' -printf '%f,' 2>/dev/null)
  echo "step ${step:-none}${tmp:+, left ${tmp%,}}"
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# run_trial DIR DELAY_US (empty: no kill). Leaves DIR/snapshot,
# DIR/log; prints how the first run ended and how long it ran.
run_trial() {
  local dir=$1 delay=$2 home=$1/home pid fed started ended first
  cp -a "$work/template/." "$dir/"
  export HARNERY_HOME=$home
  restore_env "$dir"
  if [ "$op" = ship ]; then
    echo "k$(basename "$dir" | tr -c 'a-z0-9\n' '_')" >"$dir/db"
    new_database "$(cat "$dir/db")"
  fi
  [ "$op" = otlp-push ] && start_otlp "$dir"
  (feed "$home" "${during[@]}") >>"$dir/log" 2>&1 &
  fed=$!
  op_cmd "$dir"
  started=$(now_ms)
  "${cmd[@]}" >>"$dir/log" 2>&1 &
  pid=$!
  if [ -n "$delay" ]; then
    sleep "$(printf '%d.%06d' $((delay / 1000000)) $((delay % 1000000)))"
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid"
  first=$?
  ended=$(now_ms)
  local left
  left=$(left_behind "$home")
  wait "$fed"
  {
    echo "# cron"
    h "$home" finalize
    echo "# hooks"
    feed "$home" "${between[@]}"
    h "$home" finalize
    echo "# rerun"
  } >>"$dir/log" 2>&1
  "${cmd[@]}" >"$dir/rerun.log" 2>&1
  local rerun=$?
  cat "$dir/rerun.log" >>"$dir/log"
  # An apply that already put the session back refuses to write it again:
  # for the rerun, that is done (what it left is compared below).
  if [ "$op" = restore-apply ] && [ "$rerun" = 2 ] && grep -q 'already exists: a session of the agent is never overwritten' "$dir/rerun.log"; then
    rerun=0
  fi
  h "$home" finalize >>"$dir/log" 2>&1
  local fin=$?
  eval "python3 '$snapshot' '$bin' '$home' $(snapshot_args "$dir")" >"$dir/snapshot" 2>>"$dir/log"
  echo "snapshot: exit $?" >>"$dir/snapshot"
  [ "$op" = otlp-push ] && stop_otlp "$dir"
  echo "rerun: exit $rerun" >>"$dir/snapshot"
  echo "last finalize: exit $fin" >>"$dir/snapshot"
  echo "$first $((ended - started)) $left"
}

[ "$op" = ship ] && start_pg

mkdir -p "$work/template"
prepare "$work/template"

# The uninterrupted run: the reference, and the run's duration.
read -r ref_rc ref_ms _ < <(run_trial "$work/reference" "")
if [ "$ref_rc" != 0 ] || ! grep -q '^rerun: exit 0' "$work/reference/snapshot" ||
  ! grep -q '^snapshot: exit 0' "$work/reference/snapshot"; then
  echo "kill-campaign $op: the uninterrupted run failed (exit $ref_rc); see $work/reference/log" >&2
  exit 2
fi
max_delay=$((${MAX_DELAY_MS:-$((ref_ms * 12 / 10 + 1))} * 1000))
echo "uninterrupted run: ${ref_ms} ms; kill delays in [0, $((max_delay / 1000))) ms (max x u^2, u uniform)"

ok=0
failed=0
for i in $(seq 1 "$trials"); do
  # u uniform in [0, 1); the delay is max * u^2 in microseconds: every
  # moment of the run can be hit, the early ones (process start, the first
  # steps, where most of an operation's state changes happen) more often.
  u=$(((RANDOM * 32768 + RANDOM) % 1000000))
  delay=$((max_delay * u / 1000000 * u / 1000000))
  dir="$work/trial-$i"
  read -r rc ran left < <(run_trial "$dir" "$delay")
  case "$rc" in
    137) how="killed after ${ran} ms${left:+ ($left)}" ;;
    0) how="finished first (${ran} ms)" ;;
    *) how="exited $rc first" ;;
  esac
  if diff -u "$work/reference/snapshot" "$dir/snapshot" >"$dir/diff"; then
    ok=$((ok + 1))
    echo "trial $i: delay $((delay / 1000)).$(printf %03d $((delay % 1000))) ms, $how: ok"
    [ "${KEEP:-}" = 1 ] || rm -rf "$dir"
  else
    failed=$((failed + 1))
    echo "trial $i: delay $((delay / 1000)).$(printf %03d $((delay % 1000))) ms, $how: FAILED ($(grep -c '^[-+][^-+]' "$dir/diff") lines differ; home kept: $dir, diff: $dir/diff)"
    grep '^[-+][^-+]' "$dir/diff" | head -6 | sed 's/^/    /'
  fi
done
echo "$op: $trials trials, $ok ok, $failed failed (SEED=$seed)"
[ "$failed" -eq 0 ]
