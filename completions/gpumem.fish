# fish completion for gpumem. Installed by `meson install` into
# share/fish/vendor_completions.d; or: source completions/gpumem.fish
#
# To add a subcommand: add it to the `set -l subcommands` line and the
# descriptions below, then add its options under a `__fish_seen_subcommand_from
# NAME` condition, as for info.

set -l subcommands info

# Device specs: `all` and the indices the gpumem being completed reports
# (nothing more, and no message, when it cannot: no driver, no GPU).
function __gpumem_devices
    echo -e "all\tevery visible GPU"
    set -l cmd (commandline -opc)[1]
    set -l out
    if command -q timeout
        set out (timeout 3 $cmd info --query index --format value 2>/dev/null); or return 0
    else
        set out ($cmd info --query index --format value 2>/dev/null); or return 0
    end
    for index in $out
        echo -e "$index\tCUDA device $index"
    end
end

function __gpumem_info_fields
    printf '%s\n' index nvml_index name uuid pci_bus_id total reserved used free bar1_total bar1_used bar1_free \
        compute_capability pcie_gen pcie_width pcie_gen_max pcie_width_max driver_version cuda_driver_version \
        visible_devices_id
end

complete -c gpumem -f

# Global options (before or after the subcommand).
complete -c gpumem -s d -l device -x -a '(__gpumem_devices)' -d 'GPU(s): CUDA index, UUID or prefix, PCI bus id, list, or all'
complete -c gpumem -l format -x -a 'table json csv value' -d 'Output format'
complete -c gpumem -l json -d 'Same as --format json'
complete -c gpumem -l csv -d 'Same as --format csv'
complete -c gpumem -l no-header -d 'Omit the header line of table and CSV output'
complete -c gpumem -l units -x -a 'auto B KiB MiB GiB TiB KB MB GB TB' -d 'Units for sizes and bandwidths'
complete -c gpumem -s v -l verbose -d 'More log output on stderr (-vv for debug)'
complete -c gpumem -s q -l quiet -d 'Only errors on stderr; no progress'
complete -c gpumem -s V -l version -d 'Print the version, the CUDA runtime and the driver'
complete -c gpumem -s h -l help -d 'Print help'

# Subcommands.
complete -c gpumem -n "not __fish_seen_subcommand_from $subcommands" -a info -d 'Show device memory (NVML; no CUDA context)'

# info
set -l info "__fish_seen_subcommand_from info"
complete -c gpumem -n $info -l query -x -a '(__fish_complete_list , __gpumem_info_fields)' -d 'Comma list of fields to report'
complete -c gpumem -n $info -l processes -d 'Also list compute processes'
complete -c gpumem -n $info -l pick -x -d 'Print the N devices with the most free memory'
complete -c gpumem -n $info -l min-free -x -d 'With --pick: at least this much free (SIZE or % of total)'
complete -c gpumem -n $info -s l -l loop -x -d 'Repeat every SECONDS'
complete -c gpumem -n $info -l count -x -d 'With --loop: stop after N samples'
