#!/usr/bin/env bash
# Two builds' `harnery search` on the same home, alternating, in one run:
# the index made again from the ledger (`search --reindex`, REPEAT times
# each), then each query of the list below REPEAT times each; per query
# the median wall time of each build, and NEW over OLD. Each build works
# on its own copy of HOME_SRC (never changed), its index made first.
#
#   OLD_BIN=/path/to/old/harnery NEW_BIN=/path/to/new/harnery REPEAT=7 \
#     scripts/bench-search-ab.sh /work/wt/p-bench/harnery-home
#
# Queries: the peer bench's held-out phrases (scripts/peer/queries.txt),
# then words, a prefix, substrings, newest first, and filters.
set -euo pipefail

REPEAT=${REPEAT:-7}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/peer/ab-homes.sh"

runs=("${held_out[@]}")
runs+=(exit "file*" "the	--sort	time" src/ "rm -rf" "exit	--kind	tool-output"
    "exit	--failed" "echo	--tool	bash" "the	--adapter	claude-code	--limit	50")

# The wall time of one run of `$bin search ARGS` on `$side`'s copy, in ms.
took() {
    local bin=$1 side=$2
    shift 2
    local t0 t1
    t0=$(date +%s%N)
    HARNERY_HOME="$work/$side" "$bin" search --json "$@" >/dev/null 2>&1
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000))
}

median() { sort -n | awk '{a[NR]=$1} END {m=int((NR+1)/2); printf "%.1f", a[m]/1000}'; }

row() {
    local label=$1
    shift
    local o=() n=()
    for _ in $(seq "$REPEAT"); do
        o+=("$(took "$OLD_BIN" old "$@")")
        n+=("$(took "$NEW_BIN" new "$@")")
    done
    local mo mn
    mo=$(printf '%s\n' "${o[@]}" | median)
    mn=$(printf '%s\n' "${n[@]}" | median)
    printf '| %s | %s | %s | %s |\n' "$label" "$mo" "$mn" \
        "$(awk -v a="$mo" -v b="$mn" 'BEGIN {printf "%.2f", b / a}')"
}

echo "| search (median of $REPEAT, ms) | old | new | new/old |"
echo "| --- | ---: | ---: | ---: |"
row "--reindex" --reindex exit
for run in "${runs[@]}"; do
    IFS=$'\t' read -r -a args <<<"$run"
    row "${args[*]}" "${args[@]}"
done
for side in old new; do
    echo "$side index: $(stat -c %s "$work/$side/search/index.sqlite") bytes" >&2
done
