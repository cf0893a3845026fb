#!/usr/bin/env bash
# harnery against agentsview (the peer, 0.46.1 from PyPI) on the same
# Claude Code sessions, in one run, offline (issue 51).
#
# The data (scripts/peer/make-sessions.py, cached in the bench dir): SESSIONS
# (default 200) sessions of about MB (default 170) megabytes in all, built
# from the real captures in tests/fixtures (transcripts, their subagents,
# the hook payloads Claude Code sent): several runs appended to one
# transcript as resumes, every copy with fresh session, message, request,
# tool and agent ids, times spread over the last 14 days. The payloads go
# through the release `harnery-hook` exactly as `harnery install
# claude-code --no-schedule` (run in a scratch HOME) registers it, once;
# each round starts from a copy of that spool.
#
# REPEAT rounds (default 3), the tools' order alternating, each on fresh
# homes, with `sync` and a pause before each timed step:
#   harnery   `harnery finalize` (its default: spools drained, records
#             followed, raw bytes kept);
#   peer      `agentsview sync`, then its raw archive: `archive capture
#             --writers-stopped` and `archive import --seed` into a new data
#             dir (the capture, a copy of the sources, is deleted).
# Then, on the last round's homes: `harnery verify` against `agentsview
# archive verify` (REPEAT each, alternating); storage (the harnery home; its ledger
# files alone; the peer's data dir with its raw archive; its sessions.db
# alone), and with both servers up (`harnery serve`, `agentsview serve
# --no-sync`), scripts/peer/reads.py: the sessions page and API, the usage
# command lines, the 10 held-out queries of scripts/peer/queries.txt (the
# sessions found against those whose text holds the query) and their
# latency, the servers' peak RSS.
#
# Prints a table of medians and harnery ÷ agentsview ratios; the figures in
# JSON in the bench dir. Exits 1 only on a failed step (each says which).
#
# Usage: scripts/bench-peer.sh
#   env: SESSIONS=200 MB=170 REPEAT=3 REQUESTS=15 SEARCH_REPS=3 SEED=51
#        BENCH_DIR=dir (a dir of its own, kept: the venv and the data
#          are reused from it; default: a new temporary dir)
#        BIN=target/release (skips the release build)
#        PEER=path/to/agentsview (skips the venv)
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
SESSIONS=${SESSIONS:-200}
MB=${MB:-170}
REPEAT=${REPEAT:-3}
REQUESTS=${REQUESTS:-15}
SEARCH_REPS=${SEARCH_REPS:-3}
SEED=${SEED:-51}
PEER_VERSION=0.46.1
KEEP=${BENCH_DIR:+1}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-peer.XXXXXX)}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)

fail() { echo "bench-peer: $*" >&2; exit 1; }
for tool in python3 curl du; do
  command -v "$tool" >/dev/null || fail "needs $tool on PATH"
done

# The servers this script started and the step under way, stopped on any
# exit. Long steps run through `step`, in the background with the script
# waiting, so that a TERM or INT reaches the trap at once.
PIDS=()
STEP=
cleanup() {
  local pid
  for pid in $STEP "${PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in $STEP "${PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'echo "bench-peer: line $LINENO failed (exit $?)" >&2' ERR
trap 'exit 130' INT TERM
# step CMD...: run CMD as the step under way; its exit status.
step() {
  local rc=0
  "$@" &
  STEP=$!
  wait "$STEP" || rc=$?
  STEP=
  return "$rc"
}

if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet --bins || fail "cargo build --release --bins failed"
  BIN=$ROOT/target/release
fi
BIN=$(cd "$BIN" && pwd)
[ -x "$BIN/harnery" ] && [ -x "$BIN/harnery-hook" ] || fail "no harnery and harnery-hook in $BIN"

if [ -z "${PEER:-}" ]; then
  venv="$WORK/venv"
  if [ ! -e "$venv/.agentsview-$PEER_VERSION" ]; then
    echo "installing agentsview $PEER_VERSION into $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv" || fail "python3 -m venv failed (Debian: apt-get install python3-venv)"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "agentsview==$PEER_VERSION" ||
      fail "pip install agentsview==$PEER_VERSION failed"
    touch "$venv/.agentsview-$PEER_VERSION"
  fi
  # The Go program the package ships, not its Python launcher (whose start
  # would count against the peer).
  PEER=$(ls "$venv"/lib/python3*/site-packages/agentsview/bin/agentsview 2>/dev/null | awk 'NR == 1')
  [ -n "$PEER" ] || PEER=$venv/bin/agentsview
fi
[ -x "$PEER" ] || fail "no agentsview at $PEER"
"$PEER" version 2>/dev/null | grep -q "$PEER_VERSION" ||
  echo "bench-peer: warning: $PEER is not agentsview $PEER_VERSION ($("$PEER" version 2>&1 | awk "NR == 1"))" >&2

# Nothing of the user's: both tools see a scratch HOME; the peer sends no
# telemetry and checks for no update.
SCRATCH=$WORK/scratch-home
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH"
export HOME=$SCRATCH AGENTSVIEW_TELEMETRY_ENABLED=0 DO_NOT_TRACK=1
unset HARNERY_HOME AGENTSVIEW_DATA_DIR CLAUDE_CONFIG_DIR

# The data, reused while its knobs and generator are the same.
stamp=$(cat scripts/peer/make-sessions.py scripts/peer/queries.txt | sha256sum | cut -c1-12)
DATA=$WORK/data-$SESSIONS-$MB-$SEED-$stamp
if [ ! -e "$DATA/.done" ]; then
  echo "building $SESSIONS sessions (~$MB MB) in $DATA" >&2
  rm -rf "$WORK"/data-* && mkdir -p "$DATA"
  step python3 scripts/peer/make-sessions.py "$ROOT/tests/fixtures" "$DATA" "$SESSIONS" "$MB" "$SEED" \
    scripts/peer/queries.txt || fail "make-sessions.py failed"
  touch "$DATA/.done"
fi
PROJECTS=$DATA/claude/projects
transcript_bytes=$(du -sb "$DATA/claude" | cut -f1)

# The hooks, as an install runs them, into a spool kept as the template of
# every round's harnery home.
install_home=$WORK/install-home
rm -rf "$install_home" && mkdir -p "$install_home"
HOME=$install_home PATH="$BIN:$PATH" HARNERY_HOME="$install_home/.harnery" \
  "$BIN/harnery" install claude-code --no-schedule >"$WORK/install.out" 2>&1 ||
  fail "harnery install claude-code --no-schedule failed: $(tail -3 "$WORK/install.out")"
settings=$install_home/.claude/settings.json
[ -f "$settings" ] || fail "the install wrote no $settings"
SPOOLED=$WORK/spooled
rm -rf "$SPOOLED" && mkdir -p "$SPOOLED"
echo "feeding $(wc -l <"$DATA/hooks.jsonl") hook payloads through the installed hook" >&2
HARNERY_HOME=$SPOOLED step python3 scripts/peer/feed-hooks.py "$settings" "$DATA/hooks.jsonl" "$WORK/hooks.json" ||
  fail "feeding the hooks failed"

median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) exit 1; print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
# Let the last step's writes and deletions settle, and find the sources
# just read, as a scheduled run meets an agent's fresh writes.
settle() { sync; sleep 3; cat "$PROJECTS"/*/*.jsonl >/dev/null; }
# timed NAME CMD...: run CMD; its wall seconds appended to NAME.secs.
timed() {
  local name=$1 t0 t1
  shift
  t0=$(date +%s%N)
  step "$@" >"$WORK/$name.out" 2>&1 || fail "$name: '$*' failed: $(tail -5 "$WORK/$name.out")"
  t1=$(date +%s%N)
  awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.3f\n", ns / 1e9 }' >>"$WORK/$name.secs"
}

H=$WORK/harnery-home
P=$WORK/peer
harnery_round() {
  rm -rf "$H" && cp -a "$SPOOLED" "$H"
  settle
  HARNERY_HOME=$H timed finalize "$BIN/harnery" finalize
}
peer_round() {
  rm -rf "$P" && mkdir -p "$P"
  settle
  AGENTSVIEW_NO_DAEMON=1 AGENTSVIEW_DATA_DIR=$P/sync CLAUDE_PROJECTS_DIR=$PROJECTS \
    timed peer-sync "$PEER" sync
  settle
  AGENTSVIEW_NO_DAEMON=1 AGENTSVIEW_DATA_DIR=$P/sync CLAUDE_PROJECTS_DIR=$PROJECTS \
    timed peer-capture "$PEER" archive capture "$P/capture" --root "claude=$PROJECTS" --writers-stopped
  settle
  AGENTSVIEW_NO_DAEMON=1 AGENTSVIEW_DATA_DIR=$P/data CLAUDE_PROJECTS_DIR=$PROJECTS \
    timed peer-import "$PEER" archive import --seed --spec "$P/capture/capture.json"
  rm -rf "$P/capture"
}

rm -f "$WORK"/*.secs
for round in $(seq "$REPEAT"); do
  echo "round $round of $REPEAT" >&2
  if [ $((round % 2)) = 1 ]; then harnery_round; peer_round; else peer_round; harnery_round; fi
done
# Checking what was kept, on the last round's homes: `harnery verify` (the
# hash chain, every raw signal where its row says) against `agentsview
# archive verify` (every retained object and manifest).
for round in $(seq "$REPEAT"); do
  verify_h() { HARNERY_HOME=$H timed verify "$BIN/harnery" verify; }
  verify_p() { AGENTSVIEW_NO_DAEMON=1 AGENTSVIEW_DATA_DIR=$P/data timed peer-verify "$PEER" archive verify; }
  if [ $((round % 2)) = 1 ]; then verify_h; verify_p; else verify_p; verify_h; fi
done
# The peer's whole ingest with its raw archive, per round.
paste "$WORK/peer-sync.secs" "$WORK/peer-capture.secs" "$WORK/peer-import.secs" |
  awk '{ printf "%.3f\n", $1 + $2 + $3 }' >"$WORK/peer-ingest.secs"

# Storage: the sizes of the regular files, in bytes.
bytes() { find "$@" -type f -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }
h_home=$(bytes "$H")
# The ledger alone: the live epoch's ledger.sqlite and its WAL, if any.
h_ledger=$(bytes "$H"/ledgers/v*/ledger.sqlite*)
[ "$h_ledger" -gt 0 ] || fail "no ledger.sqlite under $H/ledgers/"
# Everything else the ledgers/ dir holds: the raw archive, chiefly.
h_raw=$(($(bytes "$H/ledgers") - h_ledger))
h_search=$(bytes "$H/search")
p_data=$(bytes "$P/data")
p_db=$(bytes "$P/data"/sessions.db*)
p_raw=$(bytes "$P/data/raw-archive")
p_sync=$(bytes "$P/sync")
du -ab "$H" | sort -rn | awk 'NR <= 25' >"$WORK/harnery-home.du"
du -ab "$P/data" | sort -rn | awk 'NR <= 25' >"$WORK/peer-data.du"

# Both servers on the last round's homes.
HARNERY_HOME=$H "$BIN/harnery" serve --addr 127.0.0.1:0 >"$WORK/serve.out" 2>"$WORK/serve.err" &
h_pid=$!
PIDS+=("$h_pid")
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
AGENTSVIEW_DATA_DIR=$P/data CLAUDE_PROJECTS_DIR=$PROJECTS \
  "$PEER" serve --no-browser --no-sync --no-update-check --host 127.0.0.1 --port "$port" \
  >"$WORK/peer-serve.out" 2>&1 &
p_pid=$!
PIDS+=("$p_pid")
for _ in $(seq 600); do
  grep -q '^harnery serve: ' "$WORK/serve.out" 2>/dev/null && grep -q 'listening at' "$WORK/peer-serve.out" 2>/dev/null && break
  kill -0 "$h_pid" 2>/dev/null || fail "harnery serve exited: $(tail -3 "$WORK/serve.err")"
  kill -0 "$p_pid" 2>/dev/null || fail "agentsview serve exited: $(tail -3 "$WORK/peer-serve.out")"
  sleep 0.1
done
url=$(sed -n 's/^harnery serve: //p' "$WORK/serve.out")
[ -n "$url" ] || fail "harnery serve did not say where it listens: $(tail -3 "$WORK/serve.err")"
grep -q 'listening at' "$WORK/peer-serve.out" || fail "agentsview serve did not start: $(tail -3 "$WORK/peer-serve.out")"
h_base=${url%%/\?token=*}
# The token's cookie, as the server sets it on the first page.
h_cookie=$(curl -s -D - -o /dev/null "$url" | tr -d '\r' | sed -n 's/^[Ss]et-[Cc]ookie: \([^;]*\).*/\1/p' | awk 'NR == 1')
[ -n "$h_cookie" ] || fail "harnery serve set no token cookie at $url"
p_token=$(sed -n 's/^auth_token = "\(.*\)"$/\1/p' "$P/data/config.toml")
[ -n "$p_token" ] || fail "no auth_token in $P/data/config.toml"
one=$(awk -F'\t' '$3 > 1 { print $1; exit }' "$DATA/sessions.tsv")

python3 - "$WORK/reads-config.json" <<PY
import json, sys
json.dump({
  "harnery": {"base": "$h_base", "cookie": "$h_cookie", "bin": "$BIN/harnery",
              "page": "${HARNERY_PAGE:-/sessions}", "env": {"HARNERY_HOME": "$H"}},
  "peer": {"base": "http://127.0.0.1:$port", "token": "$p_token", "bin": "$PEER",
           "env": {"AGENTSVIEW_DATA_DIR": "$P/data", "CLAUDE_PROJECTS_DIR": "$PROJECTS"}},
  "pids": {"harnery": $h_pid, "peer": $p_pid},
  "session": "$one", "expected": "$DATA/expected.json", "agents": "$DATA/agents.tsv",
  "sessions": "$DATA/sessions.tsv", "requests": $REQUESTS, "search_reps": $SEARCH_REPS,
}, open(sys.argv[1], "w"))
PY
echo "reads: $REQUESTS each, alternating; 10 queries x $SEARCH_REPS" >&2
step python3 scripts/peer/reads.py "$WORK/reads-config.json" "$WORK/reads.json" || fail "reads.py failed"

for f in finalize peer-sync peer-capture peer-import peer-ingest verify peer-verify; do
  median <"$WORK/$f.secs" >"$WORK/$f.median"
done
python3 scripts/peer/report.py "$WORK" <<EOF
{"sessions": $SESSIONS, "transcript_bytes": $transcript_bytes, "repeat": $REPEAT,
 "finalize": $(cat "$WORK/finalize.median"), "peer_sync": $(cat "$WORK/peer-sync.median"),
 "peer_capture": $(cat "$WORK/peer-capture.median"), "peer_import": $(cat "$WORK/peer-import.median"),
 "peer_ingest": $(cat "$WORK/peer-ingest.median"),
 "verify": $(cat "$WORK/verify.median"), "peer_verify": $(cat "$WORK/peer-verify.median"),
 "h_home": $h_home, "h_ledger": $h_ledger, "h_raw": $h_raw, "h_search": $h_search, "p_data": $p_data, "p_db": $p_db, "p_raw": $p_raw, "p_sync": $p_sync,
 "peer_version": "$PEER_VERSION"}
EOF
if [ -z "$KEEP" ]; then
  # A temporary bench dir keeps the figures and each step's output only.
  cleanup
  PIDS=()
  rm -rf "$WORK"/venv "$WORK"/data-* "$H" "$P" "$SPOOLED" "$install_home" "$SCRATCH"
fi
echo "raw outputs: $WORK"
