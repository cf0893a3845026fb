#!/usr/bin/env bash
# End to end with the real Codex CLI, offline: `harnery install codex` in a
# scratch HOME, Codex pointed at a scripted OpenAI Responses API server on
# 127.0.0.1 (scripts/e2e/codex_model.py), four scenarios under a 0.3 s
# `harnery finalize` loop, each checked against what Codex itself reported:
#   basic      one prompt, one shell call (`echo hello-from-harnery-e2e`), text
#   fail       the shell call fails (`ls /nonexistent-harnery`, exit 2)
#   two-turns  a second prompt through `codex exec resume <id>`
#   kill       SIGKILL during `sleep 30`, then `codex exec resume <id>`
# Checks per scenario: every hook Codex ran (its own "hook: <Event>
# Completed" lines on stderr, plus the SessionEnd each clean exit fires) is
# in the ledger exactly once; every hook span closed (natively, or for the
# killed call by a recovery terminal); the rollout joined with no
# record.problem and no recorded call left without its span; the session's
# tokens equal the rollout's, kind by kind; `search` finds the tool output;
# at the end `serve` lists the sessions as Codex's.
# Prints one line per scenario, `codex <scenario>: OK` or `codex <scenario>:
# FAIL <why>`, and exits 0 only when all pass.
#
# Usage: E2E_NPM=<npm prefix holding @openai/codex> E2E_BIN=<dir with harnery,
#        harnery-hook> scripts/e2e/codex.sh
# Env:   E2E_WORK  scratch dir (default: a new temp dir, kept for inspection)
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="${E2E_WORK:-$(mktemp -d /tmp/harnery-e2e-codex.XXXXXX)}"
: "${E2E_NPM:?E2E_NPM must name the npm prefix holding @openai/codex}"
: "${E2E_BIN:?E2E_BIN must name the dir holding harnery and harnery-hook}"
HARNERY="$(cd "$E2E_BIN" && pwd)/harnery"
CODEX="$E2E_NPM/node_modules/.bin/codex"
export HARNERY
log() { echo "e2e codex: $*" >&2; }
mkdir -p "$WORK"
[[ -x "$CODEX" ]] || { echo "codex basic: FAIL no codex under $E2E_NPM"; exit 1; }

MODEL_LOG="$WORK/model-requests.jsonl" python3 "$HERE/codex_model.py" "$WORK/port" \
  2> "$WORK/model.stderr" &
MODEL_PID=$!
trap 'kill $MODEL_PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do [[ -s "$WORK/port" ]] && break; sleep 0.1; done
PORT=$(cat "$WORK/port")
log "scripted model on 127.0.0.1:$PORT, work in $WORK"

# A scratch HOME whose Codex talks to the scripted model, with harnery's
# hooks installed as a user would.
setup() {
  local D="$1"
  mkdir -p "$D/home/.codex" "$D/work" "$D/hh"
  cat > "$D/home/.codex/config.toml" <<TOML
model = "gpt-5.1-codex"
model_provider = "harnery_e2e"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.harnery_e2e]
name = "harnery e2e"
base_url = "http://127.0.0.1:$PORT/v1"
wire_api = "responses"
env_key = "HARNERY_E2E_KEY"
TOML
  HOME="$D/home" "$HARNERY" install codex --no-schedule --scope user > "$D/install.txt" 2>&1
}

codex_env() {
  local D="$1"; shift
  env -i HOME="$D/home" PATH="$PATH" LANG=C.UTF-8 SHELL=/bin/bash TERM=dumb \
    HARNERY_HOME="$D/hh" HARNERY_E2E_KEY=dummy "$@"
}

# $1: run dir; $2: log name; $3...: codex arguments after `exec`.
run_codex() {
  local D="$1" name="$2"; shift 2
  (cd "$D/work" && codex_env "$D" timeout 120 "$CODEX" exec --skip-git-repo-check "$@" \
     < /dev/null > "$D/$name.out" 2> "$D/$name.err")
  echo $? > "$D/$name.rc"
}

start_finalize_loop() {
  local D="$1"
  rm -f "$D/loop.stop"
  ( while [[ ! -e "$D/loop.stop" ]]; do
      HOME="$D/home" HARNERY_HOME="$D/hh" "$HARNERY" finalize > /dev/null 2>> "$D/loop.log" \
        || echo "finalize exited $?" >> "$D/loop.log"
      sleep 0.3
    done ) &
  LOOP_PID=$!
}

stop_finalize_loop() {
  local D="$1"
  sleep 1
  touch "$D/loop.stop"; wait "$LOOP_PID" || true
  HOME="$D/home" HARNERY_HOME="$D/hh" "$HARNERY" finalize >> "$D/loop.log" 2>&1 \
    || echo "finalize exited $?" >> "$D/loop.log"
}

session_id_of() { grep -m1 '^session id:' "$1" | awk '{print $3}'; }

scenario() {
  local name="$1" D="$WORK/$1"
  mkdir -p "$D"
  if ! setup "$D"; then echo "codex $name: FAIL harnery install codex: $(tail -1 "$D/install.txt")"; return 1; fi
  start_finalize_loop "$D"
  case "$name" in
    basic) run_codex "$D" run1 "Please run a shell command that greets us." ;;
    fail) run_codex "$D" run1 "HARNERY-FAIL: list a directory that is not there." ;;
    two-turns)
      run_codex "$D" run1 "First turn: greet us from the shell."
      run_codex "$D" run2 resume "$(session_id_of "$D/run1.err")" "Second turn: greet us again." ;;
    kill) kill_mid_tool "$D"
      run_codex "$D" run2 resume "$(session_id_of "$D/run1.err")" "Carry on please." ;;
  esac
  stop_finalize_loop "$D"
  [[ "$name" == kill ]] && settle_held_call "$D"
  python3 "$WORK/check.py" "$D" "$name"
}

# Codex writes a call to its rollout before it runs PreToolUse, so a
# finalize in between reads the killed call before its hook: the call waits
# 30 s (by its line's time) for the hook request, then joins it. The killed
# call never finishes, so nothing settles it sooner; finalize once it is due.
settle_held_call() {
  local D="$1" wait
  wait=$(( $(cat "$D/killed_at") + 31 - $(date +%s) ))
  (( wait > 0 )) && sleep "$wait"
  HOME="$D/home" HARNERY_HOME="$D/hh" "$HARNERY" finalize >> "$D/loop.log" 2>&1 \
    || echo "finalize exited $?" >> "$D/loop.log"
}

# Run the slow command and SIGKILL Codex (the native binary the npm wrapper
# started) while it sleeps; then end the sleep too.
kill_mid_tool() {
  local D="$1" wrapper native kids
  (cd "$D/work" && exec env -i HOME="$D/home" PATH="$PATH" LANG=C.UTF-8 SHELL=/bin/bash TERM=dumb \
     HARNERY_HOME="$D/hh" HARNERY_E2E_KEY=dummy "$CODEX" exec --skip-git-repo-check \
     "HARNERY-SLOW: wait a while in the shell." < /dev/null > "$D/run1.out" 2> "$D/run1.err") &
  wrapper=$!
  for _ in $(seq 300); do
    grep -q '^hook: PreToolUse Completed' "$D/run1.err" 2>/dev/null && break
    sleep 0.1
  done
  sleep 0.5
  native=$(pgrep -P "$wrapper" | head -1)
  kids=$(descendants "${native:-$wrapper}")
  kill -9 "${native:-$wrapper}" 2>/dev/null
  date +%s > "$D/killed_at"
  wait "$wrapper"; echo $? > "$D/run1.rc"
  for k in $kids; do kill "$k" 2>/dev/null; done
}

descendants() { local c; for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done; }

# `serve` lists the basic scenario's session, as Codex's.
serve_lists_codex() {
  local D="$WORK/basic" url="" page="" sid pid
  HARNERY_HOME="$D/hh" "$HARNERY" serve --addr 127.0.0.1:0 > "$WORK/serve.out" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    url=$(grep -o 'http://[^ ]*' "$WORK/serve.out" 2>/dev/null | head -1)
    [[ -n "$url" ]] && break
    sleep 0.1
  done
  [[ -n "$url" ]] && page=$(python3 -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' "$url" 2>&1)
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  sid=$(session_id_of "$D/run1.err")
  if [[ -n "$sid" ]] && grep -q "$sid" <<<"$page" && grep -qi "codex" <<<"$page"; then
    echo "codex serve: OK"
  else
    echo "codex serve: FAIL the sessions page does not list ${sid:-the session} as Codex's"; return 1
  fi
}

cat > "$WORK/check.py" <<'PY'
#!/usr/bin/env python3
"""Check one Codex e2e scenario's ledger against what Codex itself reported.

Usage: check.py <run dir> <scenario>   (HARNERY names the binary)
Prints `codex <scenario>: OK` or `codex <scenario>: FAIL <why>`; exits 0/1.

Expectations come from the client, never from harnery's output: its own
stderr lines `hook: <Event> Completed` (one per hook it ran; the SessionEnd
that a clean exit fires comes after the last line it prints), and its
rollout (`~/.codex/sessions/**/rollout-*.jsonl`: token_usage_record lines,
function_call / function_call_output call ids).
"""
import collections
import glob
import json
import os
import subprocess
import sys

D, NAME = sys.argv[1], sys.argv[2]
HARNERY = os.environ["HARNERY"]
ENV = dict(os.environ, HARNERY_HOME=f"{D}/hh", HOME=f"{D}/home")
# The text each scenario's tool call prints, which `search` must find.
MARKER = {"fail": "nonexistent-harnery"}.get(NAME, "hello-from-harnery-e2e")


def run(*args):
    return subprocess.run([HARNERY, *args], capture_output=True, text=True, check=True, env=ENV).stdout


def client_hooks():
    """Hook runs per event, as Codex reported them."""
    counts = collections.Counter()
    for err in sorted(glob.glob(f"{D}/run*.err")):
        for line in open(err, errors="replace"):
            if line.startswith("hook: ") and line.rstrip().endswith(" Completed"):
                counts[line.split()[1]] += 1
        rc = open(err[:-4] + ".rc").read().strip()
        if rc == "0":
            counts["SessionEnd"] += 1
    return counts


def rollout_lines():
    for f in sorted(glob.glob(f"{D}/home/.codex/sessions/*/*/*/rollout-*.jsonl")):
        for line in open(f, errors="replace"):
            if line.strip():
                yield json.loads(line)


def record_tokens(lines):
    """The rollout's token kinds, summed over its model responses."""
    tokens = collections.Counter()
    for line in lines:
        if line.get("type") != "token_usage_record":
            continue
        u = line["payload"]["usage"]
        tokens["input"] += u["input_tokens"] - u.get("cached_input_tokens", 0)
        tokens["cache_read"] += u.get("cached_input_tokens", 0)
        tokens["output"] += u["output_tokens"]
        tokens["reasoning"] += u.get("reasoning_output_tokens", 0)
    return tokens


def ledger_hooks(events):
    """Distinct raw hook records per event name, as the ledger cites them."""
    seen = collections.defaultdict(set)
    for e in events:
        for raw in e.get("raw") or []:
            name = raw.get("event_name")
            if name and not name.startswith("harnery."):
                seen[name].add(raw["record_digest"])
    return collections.Counter({k: len(v) for k, v in seen.items()})


def check(problems):
    events = [json.loads(l) for l in run("export", "--format", "jsonl").splitlines()]
    kinds = collections.Counter(e["type"] for e in events)
    sessions = {(e["session"]["adapter"], e["session"]["session_id"]) for e in events}
    if len(sessions) != 1 or next(iter(sessions))[0] != "codex":
        problems.append(f"sessions {sorted(sessions)}, not one of codex's")
    client, ledger = client_hooks(), ledger_hooks(events)
    if client != ledger:
        problems.append(f"hooks: codex ran {dict(client)}, the ledger has {dict(ledger)}")
    if kinds["record.problem"]:
        problems.append(f"{kinds['record.problem']} record.problem events")
    requested = {e["id"]: e for e in events if e["type"] == "tool.requested"}
    closers = collections.defaultdict(list)
    for e in events:
        if e["type"] == "tool.completed":
            closers[e["payload"]["requested_event_id"]].append(e)
    native = {i for i, e in requested.items() if e["provenance"]["attestation"] == "native"}
    open_spans = [i for i in native if not closers.get(i)]
    if open_spans:
        problems.append(f"{len(open_spans)} hook spans never closed")
    recovered = [i for i in native for c in closers.get(i, []) if c["provenance"]["attestation"] != "native"]
    want_recovered = 1 if NAME == "kill" else 0
    if len(recovered) != want_recovered:
        problems.append(f"{len(recovered)} spans closed by recovery, expected {want_recovered}")
    recorded = [e for e in events if e["type"] == "tool.recorded"]
    joined = {e["payload"].get("span_request_event_id") for e in recorded}
    if native - joined:
        problems.append(f"{len(native - joined)} of {len(native)} hook spans not joined to the rollout")
    lost = [e for e in recorded if not e["payload"].get("span_request_event_id")]
    if lost:
        problems.append(f"{len(lost)} recorded calls without a hook span")
    if NAME == "fail" and not any(e["payload"].get("exit_code") == 2 for e in recorded):
        problems.append("the failing command's exit code 2 is not in the ledger")
    lines = list(rollout_lines())
    want = record_tokens(lines)
    got = json.loads(run("usage", "--json"))["total"]["tokens"]
    got = {k: got.get(k) or 0 for k in want}
    if got != dict(want) or not want["input"]:
        problems.append(f"tokens {got}, the rollout's {dict(want)}")
    prompts = kinds["prompt.submitted"]
    want_prompts = 2 if NAME in ("two-turns", "kill") else 1
    if prompts != want_prompts:
        problems.append(f"{prompts} prompts, expected {want_prompts}")
    hits = run("search", MARKER, "--json").strip().splitlines()
    if not hits:
        problems.append(f"search finds no {MARKER!r}")
    loop = open(f"{D}/loop.log").read() if os.path.exists(f"{D}/loop.log") else ""
    if "finalize exited" in loop:
        problems.append("a finalize failed: " + loop[-200:].replace("\n", " "))
    run("validate")
    run("verify")


def main():
    problems = []
    try:
        check(problems)
    except subprocess.CalledProcessError as e:
        problems.append(f"{' '.join(e.cmd[1:3])} exited {e.returncode}: {e.stderr.strip()[-200:]}")
    except (OSError, ValueError, KeyError) as e:
        problems.append(f"{type(e).__name__}: {e}")
    print(f"codex {NAME}: " + ("OK" if not problems else "FAIL " + "; ".join(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
PY

status=0
for s in basic fail two-turns kill; do
  scenario "$s" || status=1
done
serve_lists_codex || status=1
exit $status
