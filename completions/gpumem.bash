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

# bash completion for gpumem: the alloc-test subcommand.
# _gpumem_alloc_test completes the words after `gpumem alloc-test` (its mode
# first, then the mode's options); a main _gpumem dispatcher calls
# _gpumem_<subcommand> (dashes as underscores) when it is defined. The
# dispatcher at the end of this part is installed only when no other exists.
_gpumem_alloc_test() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local mode="" seen=0 i
    for ((i = 1; i < COMP_CWORD; i++)); do
        case ${COMP_WORDS[i]} in
            alloc-test) seen=1 ;;
            latency|max|fill|churn|hold) [ $seen = 1 ] && { mode=${COMP_WORDS[i]}; break; } ;;
        esac
    done
    case $prev in
        --api)
            COMPREPLY=($(compgen -W "device async async-pool managed host host-wc host-mapped registered vmm all" -- "$cur"))
            return ;;
        --pattern) COMPREPLY=($(compgen -W "zeros ones walking address random all" -- "$cur")); return ;;
        --via) COMPREPLY=($(compgen -W "direct mixmemory" -- "$cur")); return ;;
        --growth) COMPREPLY=($(compgen -W "exact 512B 2MiB x1.5 x2" -- "$cur")); return ;;
        --save-costs) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --format) COMPREPLY=($(compgen -W "table json csv value" -- "$cur")); return ;;
        --units) COMPREPLY=($(compgen -W "auto B KiB MiB GiB TiB KB MB GB TB" -- "$cur")); return ;;
        -d|--device)
            local ids="all" n
            n=$(nvidia-smi -L 2>/dev/null | wc -l)
            for ((i = 0; i < n; i++)); do ids+=" $i"; done
            COMPREPLY=($(compgen -W "$ids" -- "$cur"))
            return ;;
        --sizes|--iterations|--warmup|--granularity|--chunk|--total|--passes|--seed|--ops|--duration|--slots|--max-live)
            return ;;
    esac
    if [ -z "$mode" ]; then
        COMPREPLY=($(compgen -W "latency max fill churn hold --help" -- "$cur"))
        return
    fi
    local opts
    case $mode in
        latency) opts="--api --sizes --iterations --warmup --no-sync-probe --save-costs" ;;
        max) opts="--granularity --chunk" ;;
        fill) opts="--total --chunk --verify --pattern --passes --seed" ;;
        churn) opts="--sizes --ops --duration --seed --via --api --slots --growth --max-live" ;;
        hold) opts="--total --duration --chunk" ;;
    esac
    COMPREPLY=($(compgen -W "$opts -d --device --json --csv --format --no-header --units -v --verbose -q --quiet --help" -- "$cur"))
}
if ! declare -F _gpumem >/dev/null; then
    _gpumem() {
        local i sub=""
        for ((i = 1; i < COMP_CWORD; i++)); do
            case ${COMP_WORDS[i]} in info|memset|copy|alloc-test|reuse-sim) sub=${COMP_WORDS[i]//-/_}; break ;; esac
        done
        if [ -n "$sub" ] && declare -F "_gpumem_$sub" >/dev/null; then "_gpumem_$sub"; return; fi
        COMPREPLY=($(compgen -W "info memset copy alloc-test reuse-sim --help --version --json --csv -d" -- "${COMP_WORDS[COMP_CWORD]}"))
    }
    complete -F _gpumem gpumem
fi
