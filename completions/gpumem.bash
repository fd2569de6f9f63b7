# bash completion for gpumem                                -*- shell-script -*-
# Installed by `meson install` as share/bash-completion/completions/gpumem;
# or: source completions/gpumem.bash
#
# Names come from the gpumem being completed: its commands and modes from
# `gpumem --list commands`, the values of an option from `gpumem --list LIST`
# (the tables gpumem parses them with), so a new direction, strategy or field
# needs nothing here. Kept here: each command's options (_gpumem_opts_<ctx>,
# ctx = command or command_mode, dashes as underscores), which options take a
# value (_gpumem_value_opts), which of them name a list (_gpumem_values),
# take a comma list (_gpumem_list_opts) or a file (_gpumem_file_opts), and
# the list that names a command's first positional word (_gpumem_args_<ctx>).
# tests/test_completions.cpp checks all of it against `gpumem --help` and
# `gpumem --list`.

_gpumem_global_opts="-d --device --format --json --csv --no-header --wide --units -v --verbose -q --quiet -V --version --list --schema -h --help"
_gpumem_opts_info="--query --processes --pick --min-free -l --loop --count"
_gpumem_opts_memset="-s --size --sizes --plot --value --width --offset --target --host-memory -n --iterations --warmup --samples --verify --lock-timeout"
_gpumem_opts_copy="-s --size --sizes --host-memory --engine -n --iterations --samples --warmup --sample-time --verify
    --peer --no-affinity --no-chart --plot --expect-min --lock-timeout"
_gpumem_args_copy=directions
_gpumem_opts_alloc_test_latency="--api --sizes --iterations --warmup --no-sync-probe --save-costs --lock-timeout"
_gpumem_opts_alloc_test_max="--granularity --chunk --lock-timeout"
_gpumem_opts_alloc_test_fill="--chunk --verify --pattern --passes --seed --lock-timeout"
_gpumem_opts_alloc_test_churn="--sizes --ops --duration --seed --via --api --slots --growth --max-live --lock-timeout"
_gpumem_opts_alloc_test_hold="--duration --chunk"
_gpumem_opts_reuse_sim=""
_gpumem_opts_reuse_sim_replay="--workload --steps --seed --change-rate --batch --layers --sample-bytes --max-detections --prompt --tokens
    --streams --trace --trace-format --trace-device --strategy --growth --zero-fill --ring-buffers --ring-size
    --pool-initial --pool-max --bins --bin-blocks --max-split-size --max-non-split-rounding
    --roundup-power2-divisions --release-threshold --capacity --memory-fraction --device-total --sync-every
    --costs --timeline --timeline-points --save-trace --no-chart --plot --execute"
_gpumem_opts_reuse_sim_tune="--workload --steps --seed --change-rate --batch --layers --sample-bytes --max-detections --prompt --tokens
    --streams --trace --trace-format --trace-device --max-split-size --max-non-split-rounding
    --roundup-power2-divisions --capacity --memory-fraction --device-total --sync-every --costs --plot --sweep
    --full-grid --all-settings --confirm --max-runs --max-entries"
_gpumem_opts_reuse_sim_record="--capacity --memory-fraction -o --output --max-entries --python-stacks"
_gpumem_opts_reuse_sim_max_batch="--max-split-size --max-non-split-rounding --roundup-power2-divisions --capacity --memory-fraction
    --device-total --costs --plot --sweep --full-grid --all-settings --confirm -o --output --max-entries
    --batch-trace --record-batches --no-refine --max-runs --repeats --jobs --no-fork-server --multiple-of --headroom"
_gpumem_opts_report="--outlier-fraction --strict --drain-list"
_gpumem_opts_check="--level --threshold --thresholds --strict --kernel-log --xid-since --expect-gpus --lock-timeout --judge-shared"

# Options whose next word is their value (all commands).
_gpumem_value_opts="-d --device --format --units --list
    --query --pick --min-free -l --loop --count
    -s --size --value --width --offset --target --host-memory -n --iterations --warmup --samples
    --sizes --engine --sample-time --peer --expect-min
    --api --save-costs --granularity --chunk --pattern --passes --seed --ops --duration --via --slots --growth
    --max-live
    --workload --steps --change-rate --batch --layers --sample-bytes --max-detections --prompt --tokens --streams
    --trace --trace-format --strategy --ring-buffers --ring-size --pool-initial --pool-max --bins --bin-blocks
    --max-split-size --max-non-split-rounding --roundup-power2-divisions --release-threshold --sync-every --capacity
    --costs --timeline --timeline-points --save-trace --plot --trace-device --memory-fraction --device-total --sweep
    -o --output --max-entries --batch-trace --record-batches --headroom --max-runs --repeats --jobs --multiple-of
    --outlier-fraction
    --level --threshold --thresholds --kernel-log --xid-since --expect-gpus --lock-timeout"

# Values that are comma lists, as CONTEXT:OPTION; `all` is offered where the
# option takes it.
_gpumem_list_opts="info:--query alloc_test_latency:--api alloc_test_fill:--pattern reuse_sim_replay:--strategy"
_gpumem_all_opts="alloc_test_latency:--api alloc_test_fill:--pattern reuse_sim_replay:--strategy"

# Values that are file names.
_gpumem_file_opts="-o --output --batch-trace --trace --costs --timeline --save-trace --plot --save-costs --thresholds --kernel-log"

# Whether option $1 takes the next word as its value. An option is a flag
# or takes a value in every command that has it (--confirm is a flag in
# tune and max-batch alike), so the command ($2) does not decide it.
_gpumem_takes_value() {
    [[ -n $1 && " $_gpumem_value_opts " == *[[:space:]]"$1"[[:space:]]* ]]
}

# The names of gpumem's list $2 (`gpumem --list $2`), one per line; $1 is the
# gpumem command being completed. Nothing, and no message, when it cannot run.
_gpumem_list() {
    local bin=$1 name _
    command -v -- "$bin" >/dev/null 2>&1 || return 0
    while IFS=$'\t' read -r name _; do
        printf '%s\n' "$name"
    done < <("$bin" --list "$2" --format value 2>/dev/null)
}

# Commands ($2 empty) or the modes of command $2.
_gpumem_commands() {
    local name
    while read -r name; do
        if [[ -z $2 ]]; then
            [[ $name == *" "* ]] || printf '%s\n' "$name"
        elif [[ $name == "$2 "* ]]; then
            printf '%s\n' "${name#"$2 "}"
        fi
    done < <(_gpumem_list "$1" commands)
}

# Device specs: `all`, `local` and the indices the gpumem being completed
# reports (nothing more, and no message, when it cannot: no driver, no GPU).
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
# gpumem command.
_gpumem_values() {
    case $1 in
        -d | --device | --peer) _gpumem_devices "$2" ;;
        --list) _gpumem_list "$2" "" ;;
        --format) _gpumem_list "$2" formats ;;
        --units) _gpumem_list "$2" units ;;
        --query) _gpumem_list "$2" fields ;;
        --width) _gpumem_list "$2" widths ;;
        --target) _gpumem_list "$2" targets ;;
        --host-memory) _gpumem_list "$2" host-memory ;;
        --engine) _gpumem_list "$2" engines ;;
        --api) _gpumem_list "$2" apis ;;
        --pattern) _gpumem_list "$2" patterns ;;
        --via) _gpumem_list "$2" via ;;
        --growth) _gpumem_list "$2" growth ;;
        --workload) _gpumem_list "$2" workloads ;;
        --trace-format) _gpumem_list "$2" trace-formats ;;
        --strategy) _gpumem_list "$2" strategies ;;
        --level) _gpumem_list "$2" levels ;;
        --sweep) _gpumem_list "$2" knobs | sed 's/$/=/' ;;  # KNOB=, its values typed after it
    esac
}

# COMPREPLY for the last item of a comma list of $1 (words, one per line):
# `all` first only (where $2 says the option takes it), no item twice,
# nothing after `all`.
_gpumem_complete_list() {
    local values=$1 with_all=$2 head=${cur%"${cur##*,}"} item rest=""
    [[ ,$head == *,all,* ]] && return 0  # all already names every item
    [[ -z $head && -n $with_all ]] && rest="all"
    for item in $values; do
        [[ ,$head == *,"$item",* ]] || rest+=" $item"
    done
    [[ -n $rest ]] && COMPREPLY=($(compgen -P "$head" -W "$rest" -- "${cur##*,}"))
    compopt -o nospace 2>/dev/null
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
    local commands
    commands=$(_gpumem_commands "$bin" "")

    # The command, its mode and how many positional words follow them
    # (skipping options and their values).
    local i w here sub="" mode="" modes="" npos=0 skip=0
    for ((i = 1; i < cword; i++)); do
        w=${words[i]}
        if ((skip)); then skip=0; continue; fi
        if [[ $w == = ]]; then skip=1; continue; fi  # OPTION = VALUE, split by readline
        here=${sub//-/_}
        [[ -n $mode ]] && here+=_${mode//-/_}
        if _gpumem_takes_value "$w" "$here"; then
            [[ ${words[i + 1]-} == = ]] || skip=1
            continue
        fi
        [[ $w == -* ]] && continue
        if [[ -z $sub ]]; then
            if [[ $'\n'$commands$'\n' == *$'\n'"$w"$'\n'* ]]; then
                sub=$w
                modes=$(_gpumem_commands "$bin" "$sub")
            fi
            continue
        fi
        if [[ -n $modes && -z $mode ]]; then
            [[ $'\n'$modes$'\n' == *$'\n'"$w"$'\n'* ]] && mode=$w
            continue
        fi
        ((npos++))
    done
    local ctx=${sub//-/_}
    [[ -n $mode ]] && ctx+=_${mode//-/_}

    if _gpumem_takes_value "$prev" "$ctx"; then
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
        values=$(_gpumem_values "$prev" "$bin")
        [[ -z $values ]] && return 0  # a number or a size: nothing to offer
        if [[ " $_gpumem_list_opts " == *" $ctx:$prev "* ]]; then
            local with_all=""
            [[ " $_gpumem_all_opts " == *" $ctx:$prev "* ]] && with_all=1
            _gpumem_complete_list "$values" "$with_all"
        else
            COMPREPLY=($(compgen -W "$values" -- "$cur"))
            [[ ${COMPREPLY[0]-} == *= ]] && compopt -o nospace 2>/dev/null
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
        COMPREPLY=($(compgen -W "$commands" -- "$cur"))
    elif [[ -n $modes && -z $mode ]]; then
        COMPREPLY=($(compgen -W "$modes" -- "$cur"))
    else
        local args_var="_gpumem_args_$ctx"
        if ((npos == 0)) && [[ -n ${!args_var-} ]]; then
            COMPREPLY=($(compgen -W "$(_gpumem_list "$bin" "${!args_var}")" -- "$cur"))
        fi
    fi
    return 0
}

complete -F _gpumem gpumem
