#!/usr/bin/env bash
# End to end: `harnery otlp push` into a real OTLP receiver from PyPI, an
# MLflow tracking server (`mlflow server`, SQLite backend; it takes
# OTLP/HTTP protobuf and JSON at /v1/traces, into the experiment named by
# the x-mlflow-experiment-id header). A home is fed corpus sessions
# through the real harnery-hook, one of them only half; then, each step
# checked against `harnery export --format otlp` by scripts/e2e/otlp_check.py
# (every session one trace in MLflow, exactly the exported span ids):
#   first      a push (protobuf) delivers every session;
#   repeat     a second push sends nothing and MLflow is unchanged;
#   grow       the half session's rest is finalized; a push (JSON) sends
#              only the new and changed spans;
#   kill       a push from scratch (--resend, 2 spans a request) SIGKILLed
#              part way, then a push: each trace once, exact;
#   down       MLflow stopped: a push fails (exit 2) naming the endpoint;
#              MLflow restarted on the same store: the next push delivers
#              everything.
# Prints `otlp <step>: OK` or `otlp <step>: FAIL <why>`; exit 0 only when all pass.
# Not part of CI: the first run installs MLflow into a venv (minutes);
# a run took 11 minutes on a loaded two-core machine (2026-12-06), most of
# it MLflow starting twice and its client importing for each check.
#
# Usage: [E2E_BIN=<dir with harnery, harnery-hook>] scripts/e2e/otlp.sh
# Env:   E2E_VENV  the venv with mlflow (default ~/.cache/harnery-e2e/mlflow-venv,
#                  made and filled with mlflow==$MLFLOW_VERSION when missing)
#        E2E_WORK  scratch dir (default: a new temp dir, kept for inspection)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
WORK="${E2E_WORK:-$(mktemp -d /tmp/harnery-e2e-otlp.XXXXXX)}"
VENV="${E2E_VENV:-$HOME/.cache/harnery-e2e/mlflow-venv}"
# 3.18.0 names an mlflow-tracing 3.18.0 the registry does not have (yet).
MLFLOW_VERSION=3.17.2
log() { echo "e2e otlp: $*" >&2; }
mkdir -p "$WORK"
FAILED=0
ok() { echo "otlp $1: OK"; }
fail() { echo "otlp $1: FAIL $2"; FAILED=1; }

if [[ ! -x "$VENV/bin/mlflow" ]]; then
  log "installing mlflow==$MLFLOW_VERSION into $VENV (once; minutes)"
  python3 -m venv "$VENV" && "$VENV/bin/pip" install -q "mlflow==$MLFLOW_VERSION" >&2 || exit 2
fi
if [[ -n "${E2E_BIN:-}" ]]; then
  BIN="$(cd "$E2E_BIN" && pwd)"
else
  log "building harnery"
  (cd "$ROOT" && cargo build --bins >&2) || exit 2
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug"
fi
export HARNERY_HOME="$WORK/home" HARNERY_RECORDS=off
unset OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_TRACES_ENDPOINT OTEL_EXPORTER_OTLP_HEADERS
H="$BIN/harnery"

# --- the home: corpus sessions through the real hook --------------------------
feed() { # feed <scenario> [<first line> [<last line>]]: one hook process a line
  local file="$ROOT/tests/fixtures/claude-code/$1/hooks.jsonl" from=${2:-1} to=${3:-1000000} n=0
  while IFS= read -r line; do
    [[ -z "$line" ]] && continue
    n=$((n + 1))
    ((n < from)) && continue
    ((n > to)) && break
    printf '%s' "$line" | "$BIN/harnery-hook" claude-code || return 1
  done < "$file"
}
for scenario in basic parallel tool-failure kill subagent file-tools; do feed "$scenario"; done
GROW=resume
HALF=$(( $(grep -c . "$ROOT/tests/fixtures/claude-code/$GROW/hooks.jsonl") / 2 ))
feed "$GROW" 1 "$HALF"
"$H" finalize >&2 || exit 2

# --- the receiver ----------------------------------------------------------------
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT"
start_mlflow() {
  "$VENV/bin/mlflow" server --backend-store-uri "sqlite:///$WORK/mlflow.sqlite" \
    --default-artifact-root "$WORK/artifacts" --host 127.0.0.1 --port "$PORT" \
    >> "$WORK/mlflow.log" 2>&1 &
  MLFLOW_PID=$!
  for _ in $(seq 300); do
    curl -sf "$URL/health" >/dev/null 2>&1 && return 0
    sleep 1
  done
  log "mlflow did not start (see $WORK/mlflow.log)"; exit 2
}
MLFLOW_PID=
stop_mlflow() {
  [[ -n "$MLFLOW_PID" ]] || return 0
  # The server and its workers: the process group it leads.
  kill -- "-$MLFLOW_PID" 2>/dev/null
  for _ in $(seq 20); do kill -0 "$MLFLOW_PID" 2>/dev/null || break; sleep 1; done
  kill -9 -- "-$MLFLOW_PID" 2>/dev/null
  wait "$MLFLOW_PID" 2>/dev/null
  MLFLOW_PID=
  for _ in $(seq 60); do curl -sf "$URL/health" >/dev/null 2>&1 || return 0; sleep 1; done
}
set -m # each background job leads its own process group (the server's workers with it)
trap 'stop_mlflow' EXIT
start_mlflow

push() {
  "$H" otlp push --endpoint "$URL" --header x-mlflow-experiment-id=0 --json "$@"
}
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
check() { # check <step>: MLflow against the export
  "$H" export --format otlp > "$WORK/export.jsonl" || { fail "$1" "export failed"; return 1; }
  local said
  said=$("$VENV/bin/python" "$ROOT/scripts/e2e/otlp_check.py" "$URL" "$WORK/export.jsonl" 2>>"$WORK/check.log")
  if [[ "$said" == ok* ]]; then log "$1: mlflow holds $said"; return 0; fi
  fail "$1" "$said"; return 1
}
TOTAL() { python3 -c "
import json,sys; print(sum(len(ss['spans']) for l in open('$WORK/export.jsonl') for rs in json.loads(l)['resourceSpans'] for ss in rs['scopeSpans']))"; }

# first
out=$(push) || fail first "push exited $?"
check first && [[ $(field spans_sent <<<"$out") == $(TOTAL) ]] && ok first

# repeat
out=$(push) || fail repeat "push exited $?"
[[ $(field spans_sent <<<"$out") == 0 ]] || fail repeat "sent $(field spans_sent <<<"$out") spans again"
check repeat && ok repeat

# grow
feed "$GROW" $((HALF + 1))
"$H" finalize >&2 || exit 2
out=$(push --protocol http/json) || fail grow "push exited $?"
sent=$(field spans_sent <<<"$out")
check grow && { [[ $sent -gt 0 && $sent -lt $(TOTAL) ]] || fail grow "sent $sent of $(TOTAL)"; } && ok grow

# kill
push --resend --spans-per-request 2 > /dev/null 2>&1 &
PUSH_PID=$!
sleep 0.$((RANDOM % 9 + 1))
kill -9 "$PUSH_PID" 2>/dev/null
wait "$PUSH_PID" 2>/dev/null
out=$(push --spans-per-request 2) || fail kill "push exited $?"
log "kill: the rerun sent $(field spans_sent <<<"$out") spans"
check kill && ok kill

# down
stop_mlflow
err=$(push --resend --retries 1 2>&1 >/dev/null); code=$?
if [[ $code -ne 2 || "$err" != *"$URL/v1/traces"* ]]; then
  fail down "exit $code, said: $err"
else
  start_mlflow
  out=$(push) || fail down "push exited $?"
  check down && [[ $(field spans_sent <<<"$out") == $(TOTAL) ]] && ok down
fi
exit $FAILED
