# gpumem reuse-sim: completes its options and their values. A main _gpumem
# function that dispatches on the subcommand can call _gpumem_reuse_sim;
# without one, this file registers a minimal one.
_gpumem_reuse_sim() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    case $prev in
        --workload) COMPREPLY=($(compgen -W "inference dynamic detector llm-decode training" -- "$cur")); return ;;
        --trace-format) COMPREPLY=($(compgen -W "auto gpumem rmm" -- "$cur")); return ;;
        --strategy) COMPREPLY=($(compgen -W "all naive grow-only shape-persistent ring pool binning torch-caching async-pool" -- "$cur")); return ;;
        --growth) COMPREPLY=($(compgen -W "exact 512B 2MiB x1.5 x2" -- "$cur")); return ;;
        --trace|--save-trace|--costs|--timeline) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --steps|--seed|--change-rate|--batch|--layers|--sample-bytes|--max-detections|--prompt|--tokens|--streams|\
        --ring-buffers|--ring-size|--pool-initial|--pool-max|--bins|--bin-blocks|--max-split-size|\
        --max-non-split-rounding|--roundup-power2-divisions|--release-threshold|--sync-every|--capacity|--timeline-points)
            return ;;
    esac
    COMPREPLY=($(compgen -W "--workload --steps --seed --change-rate --batch --layers --sample-bytes --max-detections
        --prompt --tokens --streams --trace --trace-format --save-trace --strategy --growth --zero-fill --ring-buffers
        --ring-size --pool-initial --pool-max --bins --bin-blocks --max-split-size --max-non-split-rounding
        --roundup-power2-divisions --release-threshold --sync-every --capacity --costs --timeline --timeline-points
        --no-chart --execute -d --device --json --csv --format --units --no-header -q -v --help" -- "$cur"))
}
if ! declare -F _gpumem >/dev/null; then
    _gpumem() {
        local i
        for ((i = 1; i < COMP_CWORD; i++)); do
            if [ "${COMP_WORDS[i]}" = reuse-sim ]; then _gpumem_reuse_sim; return; fi
        done
        COMPREPLY=($(compgen -W "info memset copy alloc-test reuse-sim --help --version --json --csv -d" -- "${COMP_WORDS[COMP_CWORD]}"))
    }
    complete -F _gpumem gpumem
fi
