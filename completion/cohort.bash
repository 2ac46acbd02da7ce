# bash completion for cohort: bash-completion's loader sources this file (installed as
# share/bash-completion/completions/cohort) the first time `cohort` is completed; the modulefiles
# register the same completer themselves. The completer, share/cohort/cohort-complete, is
# generated from cohort's --help by scripts/cli-docs.
complete -o nospace -o default \
  -C "$(cd "$(dirname "${BASH_SOURCE[0]}")/../../cohort" && pwd)/cohort-complete" cohort
