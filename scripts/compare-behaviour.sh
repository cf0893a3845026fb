#!/usr/bin/env bash
# Compare what an old build and this checkout print for the same homes:
# the proof that a refactor left behaviour unchanged.
#
# For the demo (the two sessions `harnery demo` bundles, in one home), every
# corpus scenario under tests/fixtures/{claude-code,copilot} of the OLD
# revision (so the fixtures' new place does not matter), and every one of
# those again as `<scenario>+records`, with the agent's own record from
# tests/fixtures/records placed where the hooks say (as in
# tests/it/finalize/records_corpus.rs) and followed:
#   1. hook: the payloads go through the OLD `harnery-hook`, one process per
#      signal, into a home at one fixed path; `spool ls/cat --json` of the
#      OLD build is kept. The same again with the NEW hook and NEW build.
#      The hook stamps clock and process facts no knob fixes: those
#      envelope fields alone are blanked before the diff (see `spool_norm`).
#   2. the OLD hook's spool is then the seed: copied to the fixed home path,
#      finalized and read by the OLD build, then copied afresh to the same
#      path and finalized and read by the NEW build. Captured, stdout plus
#      exit code: finalize --json, sessions --json, replay --json (each
#      session), export (jsonl, otlp), usage --json (by session, day,
#      model), verify and verify --json. These need no normalising:
#      HARNERY_NOW fixes the clock, the home path is the same, the agents'
#      own records are off (as in tests/it/finalize/corpus.rs) but for the
#      `+records` runs, and every command runs under `env -i` with the same
#      few variables.
#   3. the demo command itself: `harnery demo` stdout and exit code, its
#      hooks run now under no knob: what that decides is blanked (see
#      `demo_output`).
# One line per output, then a count and the first 40 lines of each diff.
# Exit 1 if anything differs. Not here, as the test suite checks them:
# the spool vectors (crates/harnery-spool/tests/spool_vectors.rs), the
# pinned digests (schema and generations in
# crates/harnery/src/contract/{tests,generation}.rs, closure in
# crates/harnery/src/ledger/genesis.rs) and the `show` snapshots
# (tests/it/ledger/snapshot.rs).
#
# Usage: scripts/compare-behaviour.sh [OLD_REV]      (default b4dedac)
#   OLD_BIN_DIR / NEW_BIN_DIR: directories holding `harnery` and
#     `harnery-hook`; each skips its build.
#   OLD_TARGET_DIR: cargo target dir for the old build (default: a temp
#     dir, or CARGO_TARGET_DIR; reuse one to save a full compile).
#   ONLY=REGEX runs only the scenarios it matches (e.g. demo, copilot/).
#   KEEP=1 keeps the work dir (outputs under $WORK/out/{old,new}).
# Needs git, cargo, jq, diff.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
old_rev=${1:-b4dedac}
old_sha=$(git -C "$repo" rev-parse --verify "$old_rev^{commit}")
work=$(mktemp -d -t harnery-compare.XXXXXX)
work=$(cd "$work" && pwd -P)
old_tree="$work/old-src"
now="2026-11-30T12:00:00Z"
start=$SECONDS

cleanup() {
  if [[ -d $old_tree/.git || -f $old_tree/.git ]]; then
    git -C "$repo" worktree remove --force "$old_tree" >/dev/null 2>&1 || true
  fi
  if [[ ${KEEP:-} == 1 ]]; then
    echo "work dir kept at $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

# The binaries, copied out so one target dir may serve both builds.
bin_copy() { # from to
  mkdir -p "$2"
  for b in harnery harnery-hook; do
    [[ -x $1/$b ]] || { echo "no executable $1/$b" >&2; exit 2; }
    cp "$1/$b" "$2/$b"
  done
}

# The old revision's fixtures, whatever this checkout's layout.
mkdir -p "$work/fixtures"
git -C "$repo" archive "$old_sha" tests/fixtures | tar -x -C "$work/fixtures"
fixtures="$work/fixtures/tests/fixtures"

if [[ -n ${OLD_BIN_DIR:-} ]]; then
  bin_copy "$OLD_BIN_DIR" "$work/old"
else
  echo "building $old_rev ($old_sha) in a temporary worktree" >&2
  git -C "$repo" worktree add --detach --quiet "$old_tree" "$old_sha"
  target=${OLD_TARGET_DIR:-${CARGO_TARGET_DIR:-$work/old-target}}
  (cd "$old_tree" && CARGO_TARGET_DIR="$target" cargo build --quiet --bins)
  bin_copy "$target/debug" "$work/old"
fi
if [[ -n ${NEW_BIN_DIR:-} ]]; then
  bin_copy "$NEW_BIN_DIR" "$work/new"
else
  echo "building this checkout" >&2
  (cd "$repo" && cargo build --quiet --bins)
  # A workspace puts every member's binaries in the shared target dir.
  target=$(cd "$repo" && cargo metadata --format-version 1 --no-deps | jq -r .target_directory)
  bin_copy "$target/debug" "$work/new"
fi
echo "built in $((SECONDS - start)) s" >&2

# One fixed home path for every run, old then new: paths never differ.
home="$work/home"
# Every command sees only these variables.
base_env=(env -i "PATH=/usr/bin:/bin" "HOME=$work/user" "LANG=C" "TZ=UTC"
  "HARNERY_HOME=$home" "HARNERY_NOW=$now")
run_env=("${base_env[@]}" "HARNERY_RECORDS=off" "COPILOT_HOME=$home/copilot")
mkdir -p "$work/user"

# Deliver one fixture through a hook binary, as tests/common's `deliver`;
# with `repoint` set (a jq filter), each payload is rewritten by it first.
feed() { # hook agent file
  local line event raw
  while IFS= read -r line || [[ -n $line ]]; do
    [[ -n ${line//[[:space:]]/} ]] || continue
    if [[ $2 == copilot ]]; then
      event=$(jq -r '.event // ""' <<<"$line")
      raw=$(jq -r '.stdin_raw // ""' <<<"$line"; echo .)
      raw=${raw%$'\n.'}
      if [[ -n $repoint ]] && jq -e . >/dev/null 2>&1 <<<"$raw"; then
        raw=$(jq -c "$repoint" <<<"$raw")
      fi
      printf '%s' "$raw" | "${run_env[@]}" "$1" copilot "$event"
    elif [[ -n $repoint ]]; then
      jq -j -c "$repoint" <<<"$line" | "${run_env[@]}" "$1" claude-code
    else
      printf '%s' "$line" | "${run_env[@]}" "$1" claude-code
    fi
  done <"$3"
}

# A `+records` scenario: the agent's own records put where the agent keeps
# them under the home (as tests/it/finalize/records_corpus.rs does), and the
# hook payloads repointed at them; finalize then follows them. Sets
# `repoint`. Copilot's home is $home/copilot (COPILOT_HOME).
place_records() { # scenario
  local agent=${1%%/*} name=${1#*/} f sid dir
  name=${name%+records}
  if [[ $agent == claude-code ]]; then
    dir="$home/claude/projects/-proj"
    mkdir -p "$dir"
    if [[ -d $fixtures/records/claude-code/$name ]]; then
      for f in "$fixtures/records/claude-code/$name"/*.jsonl; do
        if [[ ${f##*/} == agent-* ]]; then
          sid=$(head -n1 "$f" | jq -r .sessionId)
          mkdir -p "$dir/$sid/subagents" && cp "$f" "$dir/$sid/subagents/"
        else
          cp "$f" "$dir/"
        fi
      done
    else
      f="$fixtures/records/claude-code/$name.jsonl"
      sid=$(jq -r 'select(.sessionId) | .sessionId' "$f" | sed -n 1p)
      cp "$f" "$dir/$sid.jsonl"
    fi
    repoint='(.session_id // .sessionId // "") as $s
      | reduce ("transcript_path", "transcriptPath") as $k (.;
          if has($k) then .[$k] = "'"$dir"'/\($s).jsonl" else . end)
      | if (.agent_transcript_path | type) == "string" then
          .agent_transcript_path = "'"$dir"'/\(.session_id // "")/subagents/\(.agent_transcript_path | split("/") | last)"
        else . end'
  else
    f="$fixtures/records/copilot/$name.events.jsonl"
    sid=$(jq -r 'select(.type == "session.start" or .type == "session.resume")
      | .data.sessionId' "$f" | sed -n 1p)
    dir="$home/copilot/session-state/$sid"
    mkdir -p "$dir" && cp "$f" "$dir/events.jsonl"
    repoint='reduce ("transcript_path", "transcriptPath") as $k (.;
      if has($k) then .[$k] = "'"$dir"'/events.jsonl" else . end)'
  fi
}

# The fixture files a scenario feeds, in order.
scenario_files() { # scenario
  case $1 in
    demo) echo "claude-code $fixtures/claude-code/file-tools/hooks.jsonl"
          echo "copilot $fixtures/copilot/subagent-task/hook-capture.jsonl" ;;
    claude-code/*) echo "claude-code $fixtures/${1%+records}/hooks.jsonl" ;;
    copilot/*) echo "copilot $fixtures/${1%+records}/hook-capture.jsonl" ;;
  esac
}

# One captured output: stdout, then the exit code.
capture() { # out-file bin-dir args...
  local out=$1 bin=$2 rc=0
  shift 2
  "${run_env[@]}" "$bin/harnery" "$@" >"$out" 2>"$out.stderr" || rc=$?
  echo "exit: $rc" >>"$out"
}

# The hook's envelope facts that come from the clock and the process
# (receive time, record uuid v7, boot id and time, pid), and the record's
# offset (the envelope is JSON: it moves with the pid's digit count):
# blanked, every other field kept, the payload too.
spool_norm() {
  jq -c 'if .envelope then
      .envelope.received_ns = "N" | .envelope.record_id = "N"
      | .envelope.boot_id = "N" | .envelope.boottime_ns = "N"
      | .envelope.pid = "N" | .offset = "N"
    elif has("first_received_ns") then
      .first_received_ns = "N" | .last_received_ns = "N"
    else . end'
}

hook_outputs() { # side scenario
  local bin="$work/$1" out="$work/out/$1/$2" agent file key
  rm -rf "$home" && mkdir -p "$home" "$out"
  repoint=""
  [[ $2 == *+records ]] && place_records "$2"
  while read -r agent file; do
    feed "$bin/harnery-hook" "$agent" "$file"
  done < <(scenario_files "$2")
  capture "$out/spool-ls.raw" "$bin" spool ls --json
  { head -n -1 "$out/spool-ls.raw" | spool_norm; tail -n1 "$out/spool-ls.raw"; } >"$out/spool"
  while read -r key; do
    capture "$out/cat.raw" "$bin" spool cat "${key%%/*}" "${key#*/}" --json
    { head -n -1 "$out/cat.raw" | spool_norm; tail -n1 "$out/cat.raw"; } >>"$out/spool"
  done < <(head -n -1 "$out/spool-ls.raw" | jq -r 'select(.session_id) | "\(.adapter)/\(.session_id)"')
  rm -f "$out"/*.raw "$out"/*.raw.stderr
}

read_outputs() { # side scenario seed
  local bin="$work/$1" out="$work/out/$1/$2" id f
  rm -rf "$home" && cp -a "$3" "$home"
  capture "$out/finalize--json" "$bin" finalize --json
  capture "$out/sessions--json" "$bin" sessions --json
  while read -r id; do
    capture "$out/replay--json@$id" "$bin" replay "$id" --json
  done < <(head -n -1 "$out/sessions--json" | jq -r '.session.session_id' | sort)
  for f in jsonl otlp; do
    capture "$out/export--format-$f" "$bin" export --format "$f"
  done
  # A new epoch's genesis id is random past its time: the OTLP resource
  # names it, so it is blanked there.
  sed -E -i 's/"gen_[0-9a-f]{32}"/"gen_N"/g' "$out/export--format-otlp"
  for f in session day model; do
    capture "$out/usage--json--by-$f" "$bin" usage --json --by "$f"
  done
  capture "$out/verify" "$bin" verify
  capture "$out/verify--json" "$bin" verify --json
}

# `harnery demo` as a user runs it: its own temporary home, the hooks now.
demo_output() { # side
  local bin="$work/$1" out="$work/out/$1/demo-command"
  mkdir -p "$out"
  capture "$out/demo" "$bin" demo
  # Blanked: the hook path it names; the Claude Code session's FIRST and
  # LAST in the sessions table (its hooks carry no time: the hook's clock
  # gives it); the stamped turn id's tail (the signal's record id, a v7
  # uuid). Copilot's times come from its payloads and stay.
  sed -i -e "s#through $bin/harnery-hook#through BIN/harnery-hook#" \
    -e '/^claude-code /s#[0-9-]\{10\}T[0-9:.]\{8,\}Z#TIME#g' \
    -e 's#turn:stamped-\([0-9]*\)-[0-9a-f]\{12\}#turn:stamped-\1-ID#' \
    "$out/demo"
}

scenarios=(demo)
for d in "$fixtures"/claude-code/*/hooks.jsonl "$fixtures"/copilot/*/hook-capture.jsonl; do
  d=${d%/*}
  scenarios+=("${d#"$fixtures"/}")
done
# Again with the agent's own record, where the corpus has one.
for d in "$fixtures"/claude-code/*/hooks.jsonl; do
  d=${d%/*} && d=${d##*/}
  [[ -e $fixtures/records/claude-code/$d.jsonl || -d $fixtures/records/claude-code/$d ]] &&
    scenarios+=("claude-code/$d+records")
done
for d in "$fixtures"/copilot/*/hook-capture.jsonl; do
  d=${d%/*} && d=${d##*/}
  [[ -e $fixtures/records/copilot/$d.events.jsonl ]] && scenarios+=("copilot/$d+records")
done
if [[ -n ${ONLY:-} ]]; then
  only=()
  for s in "${scenarios[@]}"; do [[ $s =~ $ONLY ]] && only+=("$s"); done
  scenarios=("${only[@]}")
fi

for s in "${scenarios[@]}"; do
  seed="$work/seed/$s"
  records=off
  [[ $s == *+records ]] && records=on
  run_env=("${base_env[@]}" "HARNERY_RECORDS=$records" "COPILOT_HOME=$home/copilot")
  hook_outputs old "$s"
  mkdir -p "${seed%/*}" && cp -a "$home" "$seed"
  hook_outputs new "$s"
  read_outputs old "$s" "$seed"
  read_outputs new "$s" "$seed"
done
run_env=("${base_env[@]}" "HARNERY_RECORDS=off")
demo_output old
demo_output new

# Compare every output either side produced.
same=0 different=0 diffs=""
while read -r rel; do
  if cmp -s "$work/out/old/$rel" "$work/out/new/$rel"; then
    printf '%-60s same\n' "$rel"
    same=$((same + 1))
  else
    printf '%-60s DIFFERENT\n' "$rel"
    different=$((different + 1))
    diffs+="$rel"$'\n'
  fi
done < <(cd "$work/out" && find old new -type f ! -name '*.stderr' | cut -d/ -f2- | sort -u)

echo "$same same, $different different, ${#scenarios[@]} scenarios ($((SECONDS - start)) s)"
while read -r rel; do
  [[ -n $rel ]] || continue
  echo
  diff -u --label "old/$rel" --label "new/$rel" \
    "$work/out/old/$rel" "$work/out/new/$rel" 2>&1 | head -n 40 || true
done <<<"$diffs"
[[ $different -eq 0 ]]
