#!/usr/bin/env bash
# tessera's bash completion under the real bash-completion package, as an
# interactive shell on Debian gets it: bash_completion sourced first, then
# our file found by bash-completion's own on-demand loader (from
# BASH_COMPLETION_USER_DIR/completions/tessera, the layout `meson install`
# makes under its datadir), then _tessera driven through COMP_WORDS and
# COMP_CWORD as readline would: commands by prefix, a command's options,
# subcommands after the global --key FILE, option values (words, and
# directories only for --state), nothing offered after a complete word.
# No daemon and no mount: it only needs bash and bash-completion.
set -euo pipefail
BASH_COMPLETION=/usr/share/bash-completion/bash_completion
[ -r "$BASH_COMPLETION" ] || { echo "SKIP: bash-completion is not installed"; exit 77; }
SOURCE=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/tessera-test_bash_completion.XXXXXX")
trap 'rm -rf --one-file-system "$T"' EXIT
mkdir -p "$T/user/completions" "$T/states/alpha" "$T/states/beta"
touch "$T/states/afile"
ln -s "$SOURCE/packaging/bash-completion/tessera" "$T/user/completions/tessera"

# Each case: the words of the command line (the last one being completed),
# then "=>" and the words the completion must offer, then "!" and words it
# must not offer.
cat >"$T/driver.sh" <<'DRIVER'
set -u
source "$1"
BASH_COMPLETION_USER_DIR=$2
complete -p tessera >/dev/null 2>&1 && { echo "tessera completion loaded before it was asked for"; exit 1; }
__load_completion tessera || { echo "bash-completion's loader did not find tessera in $2"; exit 1; }
spec=$(complete -p tessera) || { echo "no completion registered for tessera"; exit 1; }
function=$(sed -n 's/.* -F \([^ ]*\) .*/\1/p' <<<"$spec")
[ "$function" = _tessera ] || { echo "tessera completes with '$spec'"; exit 1; }
failed=0
check() {
    local -a words=() want=() refuse=()
    local mode=words
    for arg in "$@"; do
        case $arg in
        "=>") mode=want ;;
        "!") mode=refuse ;;
        *) case $mode in words) words+=("$arg") ;; want) want+=("$arg") ;; refuse) refuse+=("$arg") ;; esac ;;
        esac
    done
    COMP_WORDS=("${words[@]}")
    COMP_CWORD=$((${#words[@]} - 1))
    COMP_LINE="${words[*]}"
    COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    "$function" tessera "${words[COMP_CWORD]}" "${words[COMP_CWORD - 1]}"
    local offered=" ${COMPREPLY[*]} "
    for word in "${want[@]}"; do
        [[ $offered == *" $word "* ]] || { echo "'${words[*]}' does not offer $word (offers:$offered)"; failed=1; }
    done
    for word in "${refuse[@]}"; do
        [[ $offered != *" $word "* ]] || { echo "'${words[*]}' offers $word (offers:$offered)"; failed=1; }
    done
}
check tessera st "=>" status stats "!" df up
check tessera "" "=>" up down status stats df health rebalance keys config
check tessera stats --i "=>" --interval "!" --json
check tessera stats -- "=>" --interval --count --json --meta --state --timeout-ms --help
check tessera --key k.key rebalance "" "=>" plan apply status abort
check tessera rebalance apply --policy "" "=>" frequent balanced lbm
check tessera keys add --role "" "=>" meta datanode mount admin
check tessera up --state "$3/" "=>" "$3/alpha" "$3/beta" "!" "$3/afile"
check tessera stats --interval "" "!" --json --count
exit "$failed"
DRIVER
bash --norc --noprofile "$T/driver.sh" "$BASH_COMPLETION" "$T/user" "$T/states" ||
    { echo "FAIL: test_bash_completion: the completion under bash-completion is wrong (above)"; exit 1; }
echo "# test_bash_completion: tessera's completion loaded by bash-completion offers what it should"
