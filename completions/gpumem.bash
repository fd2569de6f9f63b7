# bash completion for gpumem                                -*- shell-script -*-
# Installed by `meson install` as share/bash-completion/completions/gpumem;
# or: source completions/gpumem.bash
#
# To add a subcommand: append its name to _gpumem_subcommands and list its
# options in _gpumem_opts_<name> (dashes as underscores). Options that take a
# value go in _gpumem_value_opts too; give fixed value lists in _gpumem_values,
# mark comma-list values in _gpumem_list_opts and file names in
# _gpumem_file_opts. Words for its first positional argument go in
# _gpumem_args_<name>. A subcommand with modes (alloc-test) lists them in
# _gpumem_modes_<name>, each with its options in _gpumem_opts_<name>_<mode>.
# tests/test_completions.cpp checks these against `gpumem --help`.

_gpumem_subcommands="info memset copy alloc-test reuse-sim"

_gpumem_global_opts="-d --device --format --json --csv --no-header --units -v --verbose -q --quiet -V --version --list --schema -h --help"
_gpumem_opts_info="--query --processes --pick --min-free -l --loop --count"
_gpumem_opts_memset="-s --size --value --width --offset --target --host-memory -n --iterations --warmup --samples --verify"
_gpumem_opts_copy="-s --size --sizes --host-memory --engine -n --iterations --samples --warmup --sample-time --verify
    --peer --no-affinity --no-chart --expect-min"
_gpumem_args_copy="h2d d2h d2d h2h bidir p2p"
_gpumem_opts_alloc_test=""
_gpumem_modes_alloc_test="latency max fill churn hold"
_gpumem_opts_alloc_test_latency="--api --sizes --iterations --warmup --no-sync-probe --save-costs"
_gpumem_opts_alloc_test_max="--granularity --chunk"
_gpumem_opts_alloc_test_fill="--total --chunk --verify --pattern --passes --seed"
_gpumem_opts_alloc_test_churn="--sizes --ops --duration --seed --via --api --slots --growth --max-live"
_gpumem_opts_alloc_test_hold="--total --duration --chunk"
_gpumem_opts_reuse_sim="--workload --steps --seed --change-rate --batch --layers --sample-bytes --max-detections
    --prompt --tokens --streams --trace --trace-format --strategy --growth --zero-fill --ring-buffers --ring-size
    --pool-initial --pool-max --bins --bin-blocks --max-split-size --max-non-split-rounding
    --roundup-power2-divisions --release-threshold --sync-every --capacity --costs --timeline --timeline-points
    --save-trace --no-chart --execute"

# Options whose next word is their value (all subcommands).
_gpumem_value_opts="-d --device --format --units --list
    --query --pick --min-free -l --loop --count
    -s --size --value --width --offset --target --host-memory -n --iterations --warmup --samples
    --sizes --engine --sample-time --peer --expect-min
    --api --save-costs --granularity --chunk --total --pattern --passes --seed --ops --duration --via --slots --growth
    --max-live
    --workload --steps --change-rate --batch --layers --sample-bytes --max-detections --prompt --tokens --streams
    --trace --trace-format --strategy --ring-buffers --ring-size --pool-initial --pool-max --bins --bin-blocks
    --max-split-size --max-non-split-rounding --roundup-power2-divisions --release-threshold --sync-every --capacity
    --costs --timeline --timeline-points --save-trace"

# Values that are comma lists, as CONTEXT:OPTION (CONTEXT: subcommand or
# subcommand_mode, dashes as underscores).
_gpumem_list_opts="info:--query alloc_test_latency:--api alloc_test_fill:--pattern reuse_sim:--strategy"

# Values that are file names.
_gpumem_file_opts="--trace --costs --timeline --save-trace --save-costs"

_gpumem_info_fields="index nvml_index name uuid pci_bus_id total reserved used free bar1_total bar1_used bar1_free
    compute_capability pcie_gen pcie_width pcie_gen_max pcie_width_max peak_memory_bandwidth driver_version
    cuda_driver_version visible_devices_id"
_gpumem_host_memory_kinds="pinned pageable pageable-huge huge-only write-combined mapped registered"
_gpumem_alloc_apis="device async async-pool managed host host-wc host-mapped registered vmm"
_gpumem_strategies="naive grow-only shape-persistent ring pool binning torch-caching async-pool"

_gpumem_takes_value() {
    [[ -n $1 && " $_gpumem_value_opts " == *[[:space:]]"$1"[[:space:]]* ]]
}

# Device specs: `all` and the indices the gpumem being completed reports
# (nothing more, and no message, when it cannot: no driver, no GPU).
_gpumem_devices() {
    local bin=$1 out
    echo all
    command -v -- "$bin" >/dev/null 2>&1 || return 0
    if command -v timeout >/dev/null 2>&1; then
        out=$(timeout 3 "$bin" info --query index --format value 2>/dev/null) || return 0
    else
        out=$("$bin" info --query index --format value 2>/dev/null) || return 0
    fi
    printf '%s\n' "$out"
}

# Words that complete the value of option $1 ("" when free-form); $2 is the
# gpumem command, $3 the context (subcommand[_mode], dashes as underscores).
_gpumem_values() {
    case $1 in
        -d | --device | --peer) _gpumem_devices "$2" ;;
        --format) echo "table json csv value" ;;
        --units) echo "auto B KiB MiB GiB TiB KB kB MB GB TB" ;;
        --query) echo "$_gpumem_info_fields" ;;
        --width) echo "8 16 32" ;;
        --target) echo "device host" ;;
        --host-memory) echo "$_gpumem_host_memory_kinds" ;;
        --engine) echo "ce sm" ;;
        --api)
            # latency takes a list (or all); churn one API.
            if [[ $3 == alloc_test_churn ]]; then echo "$_gpumem_alloc_apis"; else echo "all $_gpumem_alloc_apis"; fi ;;
        --pattern) echo "all zeros ones walking address random" ;;
        --via) echo "direct mixmemory" ;;
        --growth) echo "exact 512B 2MiB x1.5 x2" ;;
        --workload) echo "inference dynamic detector llm-decode training" ;;
        --trace-format) echo "auto gpumem rmm" ;;
        --strategy) echo "all $_gpumem_strategies" ;;
    esac
}

_gpumem() {
    local cur prev words cword split=false
    if declare -F _init_completion >/dev/null 2>&1; then
        # -s: --opt=value gives prev=--opt, cur=value; -n :, keeps PCI ids whole.
        _init_completion -s -n : || return
    else
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]}
        # readline splits --opt=value at '=' (COMP_WORDBREAKS).
        if [[ $cur == = ]]; then
            prev=${COMP_WORDS[COMP_CWORD - 1]}
            cur=""
        elif [[ $prev == = ]] && ((cword >= 2)); then
            prev=${COMP_WORDS[COMP_CWORD - 2]}
        fi
    fi
    local bin=${words[0]}

    # The subcommand, its mode and how many positional words follow them
    # (skipping options and their values).
    local i w sub="" mode="" npos=0 skip=0
    for ((i = 1; i < cword; i++)); do
        w=${words[i]}
        if ((skip)); then skip=0; continue; fi
        if [[ $w == = ]]; then skip=1; continue; fi  # OPTION = VALUE, split by readline
        if _gpumem_takes_value "$w"; then
            [[ ${words[i + 1]-} == = ]] || skip=1
            continue
        fi
        [[ $w == -* ]] && continue
        if [[ -z $sub ]]; then
            [[ " $_gpumem_subcommands " == *" $w "* ]] && sub=$w
            continue
        fi
        local modes_var="_gpumem_modes_${sub//-/_}"
        if [[ -n ${!modes_var-} && -z $mode ]]; then
            [[ " ${!modes_var} " == *" $w "* ]] && mode=$w
            continue
        fi
        ((npos++))
    done
    local ctx=${sub//-/_}
    [[ -n $mode ]] && ctx+=_${mode//-/_}

    if _gpumem_takes_value "$prev"; then
        if [[ " $_gpumem_file_opts " == *" $prev "* ]]; then
            if declare -F _filedir >/dev/null 2>&1; then
                _filedir
            else
                compopt -o filenames 2>/dev/null
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            return 0
        fi
        local values
        values=$(_gpumem_values "$prev" "$bin" "$ctx")
        [[ -z $values ]] && return 0  # a number or a size: nothing to offer
        if [[ " $_gpumem_list_opts " == *" $ctx:$prev "* ]]; then
            # Comma list: complete the last item; `all` only first, no item
            # twice, nothing after `all`.
            local head=${cur%"${cur##*,}"} item
            if [[ ,$head == *,all,* ]]; then
                values=""  # all already names every item
            elif [[ -n $head ]]; then
                local rest=""
                for item in $values; do
                    [[ $item == all || ,$head == *,"$item",* ]] || rest+=" $item"
                done
                values=$rest
            fi
            [[ -n $values ]] && COMPREPLY=($(compgen -P "$head" -W "$values" -- "${cur##*,}"))
            compopt -o nospace 2>/dev/null
        else
            COMPREPLY=($(compgen -W "$values" -- "$cur"))
        fi
        return 0
    fi

    if [[ $cur == -* ]]; then
        local opts=$_gpumem_global_opts var
        if [[ -n $sub ]]; then
            var="_gpumem_opts_$ctx"
            opts="$opts ${!var-}"
        fi
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    elif [[ -z $sub ]]; then
        COMPREPLY=($(compgen -W "$_gpumem_subcommands" -- "$cur"))
    else
        local modes_var="_gpumem_modes_$ctx" args_var="_gpumem_args_$ctx"
        if [[ -z $mode && -n ${!modes_var-} ]]; then
            COMPREPLY=($(compgen -W "${!modes_var}" -- "$cur"))
        elif ((npos == 0)) && [[ -n ${!args_var-} ]]; then
            COMPREPLY=($(compgen -W "${!args_var}" -- "$cur"))
        fi
    fi
    return 0
}

complete -F _gpumem gpumem
