# Sourced by scripts/compare-search.sh and scripts/bench-search-ab.sh, which
# run two builds' searches over one home: checks the caller's HARNERY_HOME
# argument and OLD_BIN / NEW_BIN, copies the home once for each build
# ($work/old, $work/new; $work is removed on exit), and fills `held_out`
# with the peer bench's held-out phrases (queries.txt beside this file),
# each quoted as a phrase search.
HOME_SRC=${1:?usage: OLD_BIN=... NEW_BIN=... $0 HARNERY_HOME}
: "${OLD_BIN:?OLD_BIN: the harnery binary to compare against}"
: "${NEW_BIN:?NEW_BIN: the harnery binary to compare}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -a "$HOME_SRC" "$work/old"
cp -a "$HOME_SRC" "$work/new"

held_out=()
while IFS= read -r q; do
    [[ -z $q || $q == \#* ]] && continue
    held_out+=("\"$q\"")
done <"$(dirname "${BASH_SOURCE[0]}")/queries.txt"
