#!/usr/bin/env bash
# Whether two builds of harnery search a home alike: every query below,
# run with `search --json` by OLD_BIN and by NEW_BIN, each on its own copy
# of HOME_SRC (never changed), gives the same lines. The copies keep the
# home's index as it is, so a NEW_BIN whose index format differs makes
# its index again on the first search (the rebuild path is compared too),
# then each build is compared once more after `--reindex`.
#
#   OLD_BIN=/path/to/old/harnery NEW_BIN=/path/to/new/harnery \
#     scripts/compare-search.sh /work/wt/p-bench/harnery-home
#
# Queries: the peer bench's held-out phrases (scripts/peer/queries.txt),
# then words, prefixes, substrings, both orders, every filter (kind, tool,
# failed, adapter, three sessions, a time window) and small limits.
# Prints each build's index size; exits 1 at the first difference.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/peer/ab-homes.sh"

queries=("${held_out[@]}")

# Three sessions and a time window, read from the home itself.
sessions=$(HARNERY_HOME="$work/old" "$OLD_BIN" sessions --json |
    python3 -c 'import json,sys; r=[json.loads(l) for l in sys.stdin]; print(" ".join(x["session"]["session_id"] for x in r[::max(1,len(r)//3)][:3]))')
window=$(HARNERY_HOME="$work/old" "$OLD_BIN" search --json --sort time --limit 400 exit |
    python3 -c 'import json,sys; t=sorted(json.loads(l)["time"] for l in sys.stdin); print(t[len(t)//4], t[3*len(t)//4])')
since=${window% *}
until=${window#* }

# One query a line: its arguments, separated by a tab.
runs=()
for q in "${queries[@]}"; do
    runs+=("$q" "$q	--sort	time" "$q	--limit	3")
done
for q in exit error test "file*" "upd*" src/ "rm -rf" "*Effect" "echo hi" ".py"; do
    runs+=("$q" "$q	--sort	time" "$q	--limit	5")
done
runs+=(
    "exit	--kind	tool-output" "exit	--kind	tool-input,prompt" "the	--kind	message	--limit	50"
    "the	--kind	reasoning" "echo	--tool	bash" "exit	--tool	Bash	--sort	time"
    "exit	--failed" "code	--failed	--sort	time" "exit	--adapter	claude-code	--limit	30"
    "exit	--adapter	copilot" "exit	--since	$since	--until	$until	--limit	40"
    "the	--since	$since	--sort	time	--limit	40" "exit	--limit	1000" "the	--limit	1000	--sort	time"
    "exit	--kind	tool-output	--adapter	claude-code	--limit	50"
    "code	--kind	tool-output	--failed	--since	$since	--limit	50"
)
for s in $sessions; do
    runs+=("the	--session	$s	--limit	100" "exit	--session	$s	--sort	time" "ech	--session	${s:0:8}"
        "the	--session	$s	--kind	prompt,message")
done

compare() {
    local label=$1 n=0
    for run in "${runs[@]}"; do
        IFS=$'\t' read -r -a args <<<"$run"
        local a b
        a=$(HARNERY_HOME="$work/old" "$OLD_BIN" search --json "${args[@]}" 2>"$work/old.err") ||
            { echo "old build failed: ${args[*]}: $(cat "$work/old.err")" >&2; exit 1; }
        b=$(HARNERY_HOME="$work/new" "$NEW_BIN" search --json "${args[@]}" 2>"$work/new.err") ||
            { echo "new build failed: ${args[*]}: $(cat "$work/new.err")" >&2; exit 1; }
        if [[ $a != "$b" ]]; then
            echo "$label: differs: search ${args[*]}" >&2
            diff <(echo "$a") <(echo "$b") | head -20 >&2
            exit 1
        fi
        n=$((n + $(printf '%s' "$a" | grep -c . || true)))
    done
    echo "$label: ${#runs[@]} searches, $n hits, the same"
}

compare "as found"
HARNERY_HOME="$work/old" "$OLD_BIN" search --reindex --json exit >/dev/null
HARNERY_HOME="$work/new" "$NEW_BIN" search --reindex --json exit >/dev/null
compare "after --reindex"
for side in old new; do
    echo "$side index: $(stat -c %s "$work/$side/search/index.sqlite") bytes"
done
