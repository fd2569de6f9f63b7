# bash completion for gpumem                                -*- shell-script -*-
# Installed by `meson install` as share/bash-completion/completions/gpumem;
# or: source completions/gpumem.bash
#
# To add a subcommand: append its name to _gpumem_subcommands, list its
# options in _gpumem_opts_<name> (dashes as underscores), add those that take
# a value to _gpumem_value_opts, and give value lists in _gpumem_values below.

_gpumem_subcommands="info"

_gpumem_global_opts="-d --device --format --json --csv --no-header --units -v --verbose -q --quiet -V --version -h --help"
_gpumem_opts_info="--query --processes --pick --min-free -l --loop --count"

# Options whose next word is their value.
_gpumem_value_opts="-d --device --format --units --query --pick --min-free -l --loop --count"

_gpumem_info_fields="index nvml_index name uuid pci_bus_id total reserved used free bar1_total bar1_used bar1_free compute_capability pcie_gen pcie_width pcie_gen_max pcie_width_max driver_version cuda_driver_version visible_devices_id"

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

# Words that complete the value of option $1 ("" when free-form).
_gpumem_values() {
    case $1 in
        -d | --device) _gpumem_devices "$2" ;;
        --format) echo "table json csv value" ;;
        --units) echo "auto B KiB MiB GiB TiB KB MB GB TB" ;;
        --query) echo "$_gpumem_info_fields" ;;
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

    if [[ " $_gpumem_value_opts " == *" $prev "* ]]; then
        local values
        values=$(_gpumem_values "$prev" "$bin")
        [[ -z $values ]] && return 0  # a number or a size: nothing to offer
        if [[ $prev == --query ]]; then
            # Comma list: complete the last field.
            local head=${cur%"${cur##*,}"}
            COMPREPLY=($(compgen -P "$head" -W "$values" -- "${cur##*,}"))
            compopt -o nospace 2>/dev/null
        else
            COMPREPLY=($(compgen -W "$values" -- "$cur"))
        fi
        return 0
    fi

    # The subcommand, if one was given (skipping option values).
    local i sub="" skip=0
    for ((i = 1; i < cword; i++)); do
        if ((skip)); then skip=0; continue; fi
        if [[ " $_gpumem_value_opts " == *" ${words[i]} "* ]]; then skip=1; continue; fi
        if [[ " $_gpumem_subcommands " == *" ${words[i]} "* ]]; then sub=${words[i]}; break; fi
    done

    if [[ $cur == -* ]]; then
        local opts=$_gpumem_global_opts
        if [[ -n $sub ]]; then
            local var="_gpumem_opts_${sub//-/_}"
            opts="$opts ${!var}"
        fi
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    elif [[ -z $sub ]]; then
        COMPREPLY=($(compgen -W "$_gpumem_subcommands" -- "$cur"))
    fi
    return 0
}

complete -F _gpumem gpumem
