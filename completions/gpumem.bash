# bash completion for gpumem: the copy subcommand.
# _gpumem_copy completes the words after `gpumem copy`; a main _gpumem
# dispatcher calls _gpumem_<subcommand> when it is defined. The dispatcher at
# the end of this part is installed only when no other one exists.
_gpumem_copy() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    case $prev in
        --host-memory)
            COMPREPLY=($(compgen -W "pinned pageable pageable-huge huge-only write-combined mapped registered" -- "$cur"))
            return ;;
        --engine) COMPREPLY=($(compgen -W "ce sm" -- "$cur")); return ;;
        --format) COMPREPLY=($(compgen -W "table json csv value" -- "$cur")); return ;;
        --units) COMPREPLY=($(compgen -W "auto B KiB MiB GiB TiB KB MB GB TB" -- "$cur")); return ;;
        -d|--device|--peer)
            local ids="all" n
            n=$(nvidia-smi -L 2>/dev/null | wc -l)
            for ((i = 0; i < n; i++)); do ids+=" $i"; done
            COMPREPLY=($(compgen -W "$ids" -- "$cur"))
            return ;;
        -s|--size|--sizes|-n|--iterations|--samples|--warmup|--sample-time|--expect-min) return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "--size --sizes --host-memory --engine --iterations --samples --warmup --sample-time
            --verify --peer --no-affinity --no-chart --expect-min -d --device --json --csv --format --no-header --units
            -v --verbose -q --quiet --help" -- "$cur"))
        return
    fi
    local w
    for w in "${COMP_WORDS[@]:2:COMP_CWORD-2}"; do
        case $w in h2d|d2h|d2d|h2h|bidir|p2p) return ;; esac
    done
    COMPREPLY=($(compgen -W "h2d d2h d2d h2h bidir p2p" -- "$cur"))
}

if ! declare -F _gpumem >/dev/null; then
    _gpumem() {
        local i sub=
        for ((i = 1; i < COMP_CWORD; i++)); do
            case ${COMP_WORDS[i]} in
                -d|--device|--format|--units) ((i++)) ;;
                -*) ;;
                *) sub=${COMP_WORDS[i]}; break ;;
            esac
        done
        if [[ -n $sub ]] && declare -F "_gpumem_${sub//-/_}" >/dev/null; then
            "_gpumem_${sub//-/_}"
        elif [[ -z $sub ]]; then
            COMPREPLY=($(compgen -W "info memset copy alloc-test reuse-sim --help --version" -- "${COMP_WORDS[COMP_CWORD]}"))
        fi
    }
    complete -F _gpumem gpumem
fi

# bash completion for gpumem: the reuse-sim subcommand (the dispatcher above
# calls _gpumem_reuse_sim).
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
