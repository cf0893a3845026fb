#!/usr/bin/env bash
# Search latency under load, before and after a change, in one run.
#
#   1. build `harnery` at BASE (default: main) from its files and at
#      the working tree, same PROFILE (release by default; debug when the
#      machine has no time for two release builds), sharing one target dir;
#   2. write N signals (default 20000 over 200 sessions) with
#      examples/bench_search_spool.rs, finalize them once, and give each
#      build its own copy of the home, its index made by that build alone
#      (`search --reindex`);
#   3. ROUNDS rounds (default 3), the builds alternating which goes first:
#      a writer delivers BATCH prompts through `harnery-hook` and runs
#      `harnery finalize`, WRITES times over; beside it READERS loops each
#      run `harnery search` over six queries until the writer is done. Each
#      search's wall time and exit code are kept;
#   4. per build: searches run, failures (exit not 0), p50, p90, p99 and the
#      slowest search; whether the index file was ever made again (its
#      inode before and after each round); then after / before.
#
# Usage: PROFILE=debug BASE=main scripts/bench-search-load.sh [signals]
#   (needs git, python3)
set -euo pipefail

cd "$(dirname "$0")/.."
N=${1:-20000}
SESSIONS=${SESSIONS:-200}
ROUNDS=${ROUNDS:-3}
WRITES=${WRITES:-8}
BATCH=${BATCH:-50}
READERS=${READERS:-3}
BASE=${BASE:-main}
PROFILE=${PROFILE:-release}
WORK=${BENCH_DIR:-$(mktemp -d -t harnery-search-load.XXXXXX)}
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
flag=(); [ "$PROFILE" = release ] && flag=(--release)

# The two builds: BASE's files (git archive, no worktree made), then this tree.
base_tree="$WORK/base-tree"
mkdir -p "$base_tree"
git archive "$BASE" | tar -x -C "$base_tree"
mkdir -p "$WORK/before" "$WORK/after"
(cd "$base_tree" && CARGO_TARGET_DIR=$TARGET cargo build "${flag[@]}" --quiet --bin harnery)
cp "$TARGET/$PROFILE/harnery" "$WORK/before/harnery"
CARGO_TARGET_DIR=$TARGET cargo build "${flag[@]}" --quiet --bin harnery --bin harnery-hook \
  --example bench_search_spool
cp "$TARGET/$PROFILE/harnery" "$TARGET/$PROFILE/harnery-hook" "$WORK/after/"
HOOK=$WORK/after/harnery-hook

export HARNERY_NOW=2026-12-01T00:00:00Z HARNERY_RECORDS=off NO_COLOR=1
seed="$WORK/seed"
"$TARGET/$PROFILE/examples/bench_search_spool" "$seed" "$N" "$SESSIONS"
HARNERY_HOME="$seed" "$WORK/after/harnery" finalize >/dev/null
for build in before after; do
  rm -rf "$WORK/home-$build" && cp -a "$seed" "$WORK/home-$build"
  rm -rf "$WORK/home-$build/search"
  HARNERY_HOME="$WORK/home-$build" "$WORK/$build/harnery" search --reindex 2>/dev/null
  : >"$WORK/$build.runs"
  : >"$WORK/$build.rebuilds"
done

QUERIES=("commit" "\"exit code\"" "instruct*" "not-allowed" "echo --kind tool-input" "papaya*")

reader() { # reader BUILD HOME STOPFILE
  local build=$1 home=$2 stop=$3 bin=$WORK/$1/harnery i=0 t0 t1 rc q
  set -f
  while [ ! -e "$stop" ]; do
    q=${QUERIES[$((i % ${#QUERIES[@]}))]}
    eval "set -- $q"
    t0=$(date +%s%N)
    rc=0
    HARNERY_HOME="$home" "$bin" search --json "$@" >/dev/null 2>>"$WORK/$build.stderr" || rc=$?
    t1=$(date +%s%N)
    echo "$((t1 - t0)) $rc" >>"$WORK/$build.runs"
    i=$((i + 1))
  done
}

round() { # round BUILD ROUND
  local build=$1 r=$2 home=$WORK/home-$1 stop=$WORK/stop-$1-$2 pids=() w b
  local inode; inode=$(stat -c %i "$home/search/index.sqlite")
  for _ in $(seq "$READERS"); do
    reader "$build" "$home" "$stop" &
    pids+=($!)
  done
  for w in $(seq "$WRITES"); do
    for b in $(seq "$BATCH"); do
      printf '{"hook_event_name":"UserPromptSubmit","session_id":"load-%s-%s","prompt_id":"p-%s-%s","prompt":"round %s write %s: papaya%s ripens"}' \
        "$r" "$w" "$w" "$b" "$r" "$w" "$b" | HARNERY_HOME="$home" "$HOOK" claude-code
    done
    HARNERY_HOME="$home" "$WORK/$build/harnery" finalize >/dev/null 2>>"$WORK/$build.stderr"
  done
  touch "$stop"
  wait "${pids[@]}"
  [ "$(stat -c %i "$home/search/index.sqlite")" = "$inode" ] || echo "$r" >>"$WORK/$build.rebuilds"
}

for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order=(before after); else order=(after before); fi
  for build in "${order[@]}"; do round "$build" "$r"; done
done

python3 - "$WORK" <<'EOF'
import sys
work = sys.argv[1]
def pct(xs, p):
    xs = sorted(xs)
    r = max(1, int(-(-p * len(xs) // 100)))
    return xs[r - 1]
stats = {}
for build in ("before", "after"):
    runs = [l.split() for l in open(f"{work}/{build}.runs") if l.strip()]
    ms = [int(t) / 1e6 for t, _ in runs]
    failed = sum(1 for _, rc in runs if rc != "0")
    rebuilds = sum(1 for l in open(f"{work}/{build}.rebuilds") if l.strip())
    s = dict(n=len(ms), failed=failed, rebuilds=rebuilds,
             p50=pct(ms, 50), p90=pct(ms, 90), p99=pct(ms, 99), max=max(ms))
    stats[build] = s
    print(f"{build:6} searches {s['n']:5}  failed {failed:4}  rounds with the index made again {rebuilds}  "
          f"p50 {s['p50']:8.1f} ms  p90 {s['p90']:8.1f}  p99 {s['p99']:8.1f}  slowest {s['max']:8.1f}")
b, a = stats["before"], stats["after"]
print("after / before: " + ", ".join(f"{k} {a[k] / b[k]:.2f}x" for k in ("p50", "p90", "p99", "max")))
EOF
echo "stderr lines: before $(wc -l <"$WORK/before.stderr" 2>/dev/null || echo 0), after $(wc -l <"$WORK/after.stderr" 2>/dev/null || echo 0)"
echo "raw outputs: $WORK"
