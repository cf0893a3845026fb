#!/usr/bin/env bash
# End to end with the real agent clients, offline (each against a scripted
# model on 127.0.0.1): one script per client under scripts/e2e/, run here for
# every agent asked for, or by default every agent whose client is installed
# in E2E_NPM. Prints one line per scenario, `<adapter id> <scenario>: OK` (or
# `: FAIL <why>`), and exits 0 only when every scenario of every agent passed.
# Not part of CI (the clients come from npm).
#
# Usage: E2E_NPM=<prefix with node_modules> [E2E_AGENTS=codex,gemini-cli,...]
#        [E2E_BIN=<dir with harnery and harnery-hook>] scripts/e2e-real-clients.sh
# Env:   E2E_WORK  scratch dir (default: a new temp dir; kept for inspection)
#        and each agent script's own variables (see its header).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export E2E_WORK="${E2E_WORK:-$(mktemp -d /tmp/harnery-e2e.XXXXXX)}"
mkdir -p "$E2E_WORK"
NPM="${E2E_NPM:-$E2E_WORK/npm}"
export E2E_NPM="$NPM"
if [[ -z "${E2E_BIN:-}" ]]; then
  echo "e2e: building harnery (release)" >&2
  (cd "$ROOT" && cargo build --release --bins >&2) || exit 2
  export E2E_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release"
fi

# Each agent, the npm package that holds its client.
declare -A PACKAGE=(
  [claude-code]=@anthropic-ai/claude-code
  [copilot]=@github/copilot
  [codex]=@openai/codex
  [gemini-cli]=@google/gemini-cli
  [qwen-code]=@qwen-code/qwen-code
  [opencode]=opencode-ai
)
ORDER=(claude-code copilot codex gemini-cli qwen-code opencode)

if [[ -n "${E2E_AGENTS:-}" ]]; then
  IFS=, read -r -a AGENTS <<< "$E2E_AGENTS"
else
  AGENTS=()
  for id in "${ORDER[@]}"; do
    [[ -d "$NPM/node_modules/${PACKAGE[$id]}" ]] && AGENTS+=("$id")
  done
  [[ ${#AGENTS[@]} -gt 0 ]] || { echo "e2e: no agent client found in $NPM/node_modules (set E2E_AGENTS to install some)" >&2; exit 2; }
fi

fail=0
ran_pair=0
for id in "${AGENTS[@]}"; do
  [[ -n "${PACKAGE[$id]:-}" ]] || { echo "$id setup: FAIL unknown agent (one of ${ORDER[*]})"; fail=1; continue; }
  case "$id" in
    claude-code|copilot)
      # One script drives both (they share the scripted Anthropic model).
      [[ $ran_pair == 1 ]] && continue
      ran_pair=1
      log="$E2E_WORK/claude-code-copilot.log"
      E2E_WORK="$E2E_WORK/claude-code-copilot" "$ROOT/scripts/e2e/claude-code-copilot.sh" > "$log" 2>&1
      rc=$?
      # Its checks print `<check>: … OK` or `… MISMATCH …`, some after the
      # `e2e: ` of its log lines; a check that names no agent belongs to the
      # agent of the check before it (the script runs each agent's in turn).
      awk '/(^| )(OK|MISMATCH)( |,|$)/ {
             line = $0; sub(/^e2e: /, "", line)
             split(line, p, ": "); check = p[1]; sub(/ \([0-9a-f-]+\)$/, "", check)
             if (check ~ /^copilot/) agent = "copilot"
             else if (check ~ /^claude/) agent = "claude-code"
             if ($0 ~ /^e2e: /) check = check " (finalize, validate, verify, show)"
             print agent " " check ": " (($0 ~ /MISMATCH/) ? "FAIL see the log" : "OK")
           }' "$log"
      [[ $rc == 0 ]] || { echo "claude-code+copilot script: FAIL exit $rc, see $log"; fail=1; }
      # harnery mcp, registered by `install --mcp`, called by each client's
      # scripted model for a tool output of an earlier session.
      mcp=()
      for a in "${AGENTS[@]}"; do [[ $a == claude-code || $a == copilot ]] && mcp+=("$a"); done
      E2E_WORK="$E2E_WORK/mcp" E2E_MCP_AGENTS="${mcp[*]}" "$ROOT/scripts/e2e/mcp.sh" || fail=1
      ;;
    *)
      E2E_WORK="$E2E_WORK/$id" "$ROOT/scripts/e2e/$id.sh" || fail=1
      ;;
  esac
done
exit $fail
