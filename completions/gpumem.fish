# fish completion for gpumem. Installed by `meson install` into
# share/fish/vendor_completions.d; or: source completions/gpumem.fish
#
# Names come from the gpumem being completed: its commands and modes from
# `gpumem --list commands`, the values of an option from `gpumem --list LIST`
# (__gpumem_names LIST), so a new direction, strategy or field needs nothing
# here. Kept here: each command's options, under a condition variable named
# after it (dashes as underscores: `set -l NAME "__fish_seen_subcommand_from
# NAME"`, then `complete -c gpumem -n $NAME ...`), with -x -a
# '(__gpumem_names LIST)' for a list's names, -a '(__gpumem_comma_list LIST)'
# for comma lists, -r -F for file names; a mode's options under $NAME_MODE.
# reuse-sim's jobs share groups of options: each group is written once, in a
# loop over the jobs that take it.
# tests/test_completions.cpp checks these against `gpumem --help` and
# `gpumem --list`.

# The lines of `gpumem --list $argv[1]` as name<TAB>description (fish shows
# the description), without the columns some lists add after those two
# (--list checks: levels, threshold...); nothing, and no message, when
# gpumem cannot run.
function __gpumem_names
    set -l cmd (commandline -opc)[1]
    $cmd --list $argv[1] --format value 2>/dev/null | string replace -r '^([^\t]*\t[^\t]*)\t.*$' '$1'
end

# Commands (no argument), or the modes of command $argv[1].
function __gpumem_commands
    for row in (__gpumem_names commands)
        set -l name (string split -m 1 \t -- $row)[1]
        if test (count $argv) -eq 0
            string match -q -- '* *' $name; or echo $row
        else if string match -q -- "$argv[1] *" $name
            string replace -- "$argv[1] " '' $row
        end
    end
end

# No command yet on the line; or, with an argument, that command but none of
# the words of list $argv[2] (its modes, with `modes`, or a list's names).
function __gpumem_needs_word
    set -l tokens (commandline -opc)[2..-1]
    if test (count $argv) -eq 0
        set -l names (__gpumem_commands | string replace -r '\t.*' '')
        for t in $tokens
            contains -- $t $names; and return 1
        end
        return 0
    end
    contains -- $argv[1] $tokens; or return 1
    set -l words
    if test "$argv[2]" = modes
        set words (__gpumem_commands $argv[1] | string replace -r '\t.*' '')
    else
        set words (__gpumem_names $argv[2] | string replace -r '\t.*' '')
    end
    for t in $tokens
        contains -- $t $words; and return 1
    end
    return 0
end

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

# The last item of a comma list of gpumem's list $argv[-1] (--all: `all`
# first): `all` is offered first only, no item twice, and nothing after `all`.
function __gpumem_comma_list
    set -l words (__gpumem_names $argv[-1])
    contains -- --all $argv; and set words all\t'every one' $words
    set -l token (commandline -ct | string replace -r -- '^--[^=]*=' '')
    set -l head (string match -r -- '^.*,' $token); or set head ''
    set -l used (string split , -- $head)
    contains -- all $used; and return 0  # all already names every item
    for word in $words
        set -l name (string split -m 1 \t -- $word)[1]
        if test -n "$head"
            test "$name" = all; and continue
            contains -- $name $used; and continue
        end
        echo $head$word
    end
end

complete -c gpumem -f

# Global options (before or after the subcommand).
complete -c gpumem -s d -l device -x -a '(__gpumem_devices)' -d 'GPU(s): CUDA index, UUID or prefix, PCI bus id, list, or all'
complete -c gpumem -l format -x -a '(__gpumem_names formats)' -d 'Output format'
complete -c gpumem -l json -d 'Same as --format json'
complete -c gpumem -l csv -d 'Same as --format csv'
complete -c gpumem -l no-header -d 'Omit the header line of table and CSV output'
complete -c gpumem -l wide -d 'Tables with every column, however wide'
complete -c gpumem -l units -x -a '(__gpumem_names units)' -d 'Units for sizes and bandwidths'
complete -c gpumem -s v -l verbose -d 'More log output on stderr (-vv for debug)'
complete -c gpumem -s q -l quiet -d 'Only errors on stderr; no progress'
complete -c gpumem -s V -l version -d 'Print the version, the CUDA runtime and the driver'
complete -c gpumem -l list -x -a '(__gpumem_names "")' -d 'Print the names a list holds'
complete -c gpumem -l schema -d 'Print the JSON Schema of every command\'s document'
complete -c gpumem -s h -l help -d 'Print help'

# Commands.
complete -c gpumem -n __gpumem_needs_word -a '(__gpumem_commands)'

# info
set -l info "__fish_seen_subcommand_from info"
complete -c gpumem -n $info -l query -x -a '(__gpumem_comma_list fields)' -d 'Comma list of fields to report'
complete -c gpumem -n $info -l processes -d 'Also list compute processes'
complete -c gpumem -n $info -l pick -x -d 'Print the N devices with the most free memory'
complete -c gpumem -n $info -l min-free -x -d 'With --pick: at least this much free (SIZE or % of total)'
complete -c gpumem -n $info -s l -l loop -x -d 'Repeat every SECONDS'
complete -c gpumem -n $info -l count -x -d 'With --loop: stop after N samples'

# memset
set -l memset "__fish_seen_subcommand_from memset"
complete -c gpumem -n $memset -s s -l size -x -d 'Buffer size (SIZE, or PCT% of free device memory)'
complete -c gpumem -n $memset -l sizes -x -d 'Sweep: sizes A,B,C or a range A..B, A..B:xF, A..B:+S'
complete -c gpumem -n $memset -l plot -r -F -d 'With --sizes: draw bandwidth against size as SVG'
complete -c gpumem -n $memset -l value -x -d 'Word value, decimal or 0x hexadecimal'
complete -c gpumem -n $memset -l width -x -a '(__gpumem_names widths)' -d 'Word width in bits'
complete -c gpumem -n $memset -l offset -x -d 'First byte set'
complete -c gpumem -n $memset -l target -x -a '(__gpumem_names targets)' -d 'Memory to set'
complete -c gpumem -n $memset -l host-memory -x -a '(__gpumem_names host-memory)' -d 'Host memory kind with --target host'
complete -c gpumem -n $memset -s n -l iterations -x -d 'Memsets per timed sample'
complete -c gpumem -n $memset -l warmup -x -d 'Untimed memsets first'
complete -c gpumem -n $memset -l samples -x -d 'Timed samples (the median is reported)'
complete -c gpumem -n $memset -l verify -d 'Check every word afterwards; exit 4 on mismatch'
complete -c gpumem -n $memset -l lock-timeout -x -d 'Seconds to wait for another gpumem measuring the GPU'

# copy DIRECTION
set -l copy "__fish_seen_subcommand_from copy"
complete -c gpumem -n '__gpumem_needs_word copy directions' -a '(__gpumem_names directions)'
complete -c gpumem -n $copy -s s -l size -x -d 'Bytes per copy'
complete -c gpumem -n $copy -l sizes -x -d 'Sweep: sizes A,B,C or a range A..B, A..B:xF, A..B:+S'
complete -c gpumem -n $copy -l host-memory -x -a '(__gpumem_names host-memory)' -d 'Host memory kind'
complete -c gpumem -n $copy -l engine -x -a '(__gpumem_names engines)' -d 'Who copies'
complete -c gpumem -n $copy -s n -l iterations -x -d 'Copies per timed sample'
complete -c gpumem -n $copy -l samples -x -d 'Timed samples; the median is reported'
complete -c gpumem -n $copy -l warmup -x -d 'Untimed copies before the samples'
complete -c gpumem -n $copy -l sample-time -x -d 'Seconds one sample should last'
complete -c gpumem -n $copy -l verify -d 'Check every destination byte; exit 4 on mismatch'
complete -c gpumem -n $copy -l peer -x -a '(__gpumem_devices)' -d 'p2p: destination device(s), a -d style spec'
complete -c gpumem -n $copy -l no-affinity -d 'Do not pin host threads to the CPUs next to the GPU'
complete -c gpumem -n $copy -l no-chart -d 'No bar chart after a sweep'
complete -c gpumem -n $copy -l plot -r -F -d 'With --sizes: draw bandwidth against size as SVG'
complete -c gpumem -n $copy -l expect-min -x -d 'Exit 6 when a median bandwidth is below GBPS'
complete -c gpumem -n $copy -l lock-timeout -x -d 'Seconds to wait for another gpumem measuring the GPU'

# alloc-test MODE
set -l alloc_test "__fish_seen_subcommand_from alloc-test"
complete -c gpumem -n '__gpumem_needs_word alloc-test modes' -a '(__gpumem_commands alloc-test)'

set -l alloc_test_latency "$alloc_test; and __fish_seen_subcommand_from latency"
complete -c gpumem -n $alloc_test_latency -l api -x -a '(__gpumem_comma_list --all apis)' -d 'Allocation APIs (comma list or repeated)'
complete -c gpumem -n $alloc_test_latency -l sizes -x -d 'Sizes: SIZE, A,B,C or a range A..B'
complete -c gpumem -n $alloc_test_latency -l iterations -x -d 'Timed allocate/free pairs per size'
complete -c gpumem -n $alloc_test_latency -l warmup -x -d 'Untimed pairs before them'
complete -c gpumem -n $alloc_test_latency -l no-sync-probe -d 'Skip the probe of whether allocation and free synchronize'
complete -c gpumem -n $alloc_test_latency -l save-costs -r -F -d 'Write the medians as a cost table (JSON) for reuse-sim'
complete -c gpumem -n $alloc_test_latency -l lock-timeout -x -d 'Seconds to wait for another gpumem measuring the GPU'

set -l alloc_test_max "$alloc_test; and __fish_seen_subcommand_from max"
complete -c gpumem -n $alloc_test_max -l granularity -x -d 'Precision of the search and smallest back-off piece'
complete -c gpumem -n $alloc_test_max -l chunk -x -d 'Piece size for the total obtainable'
complete -c gpumem -n $alloc_test_max -l lock-timeout -x -d 'Seconds to wait for another gpumem measuring the GPU'

set -l alloc_test_fill "$alloc_test; and __fish_seen_subcommand_from fill"
complete -c gpumem -n $alloc_test_fill -l chunk -x -d 'Allocation piece size'
complete -c gpumem -n $alloc_test_fill -l verify -d 'Read every pattern back and compare'
complete -c gpumem -n $alloc_test_fill -l pattern -x -a '(__gpumem_comma_list --all patterns)' -d 'Patterns (comma list or repeated)'
complete -c gpumem -n $alloc_test_fill -l passes -x -d 'Repeat all patterns N times'
complete -c gpumem -n $alloc_test_fill -l seed -x -d 'Seed of the walking and random patterns'
complete -c gpumem -n $alloc_test_fill -l lock-timeout -x -d 'Seconds to wait for another gpumem measuring the GPU'

set -l alloc_test_churn "$alloc_test; and __fish_seen_subcommand_from churn"
complete -c gpumem -n $alloc_test_churn -l sizes -x -d 'Sizes to draw from: a list or range'
complete -c gpumem -n $alloc_test_churn -l ops -x -d 'Operations'
complete -c gpumem -n $alloc_test_churn -l duration -x -d 'Run this long: 30s, 500ms, 2m'
complete -c gpumem -n $alloc_test_churn -l seed -x -d 'Seed of the operation stream'
complete -c gpumem -n $alloc_test_churn -l via -x -a '(__gpumem_names via)' -d 'The API\'s own calls or MixMemory slots'
complete -c gpumem -n $alloc_test_churn -l api -x -a '(__gpumem_names apis)' -d 'Allocation API for --via direct'
complete -c gpumem -n $alloc_test_churn -l slots -x -d 'MixMemory objects'
complete -c gpumem -n $alloc_test_churn -l growth -x -a '(__gpumem_names growth)' -d 'MixMemory growth'
complete -c gpumem -n $alloc_test_churn -l max-live -x -d 'Most live bytes at once: SIZE or PCT% of free'
complete -c gpumem -n $alloc_test_churn -l lock-timeout -x -d 'Seconds to wait for another gpumem measuring the GPU'

set -l alloc_test_hold "$alloc_test; and __fish_seen_subcommand_from hold"
complete -c gpumem -n $alloc_test_hold -l duration -x -d 'Hold this long (default: until a signal)'
complete -c gpumem -n $alloc_test_hold -l chunk -x -d 'Allocation piece size'

# reuse-sim JOB
complete -c gpumem -n '__gpumem_needs_word reuse-sim modes' -a '(__gpumem_commands reuse-sim)'

# The option groups several jobs take are defined once each, as in the C++
# (InputOptions, TorchOptions, CapOptions, GridOptions, ProgramOptions), for
# the jobs that take them; then each job's own options.
function __gpumem_reuse_sim_job -a job
    __fish_seen_subcommand_from reuse-sim; and __fish_seen_subcommand_from $job
end

# The program's memory as input: a built-in workload or a trace: replay, tune
for job in replay tune
    set -l in_job "__gpumem_reuse_sim_job $job"
    complete -c gpumem -n $in_job -l workload -x -a '(__gpumem_names workloads)' -d 'Built-in workload'
    complete -c gpumem -n $in_job -l steps -x -d 'Steps of the workload'
    complete -c gpumem -n $in_job -l seed -x -d 'Seed of the workload\'s random choices'
    complete -c gpumem -n $in_job -l change-rate -x -d 'dynamic: chance per step that the batch size changes'
    complete -c gpumem -n $in_job -l batch -x -d 'Batch size N, or MIN..MAX for dynamic'
    complete -c gpumem -n $in_job -l layers -x -d 'Layers of the model'
    complete -c gpumem -n $in_job -l sample-bytes -x -d 'Activation bytes per sample at the first layer'
    complete -c gpumem -n $in_job -l max-detections -x -d 'detector: detections per image'
    complete -c gpumem -n $in_job -l prompt -x -d 'llm-decode: prompt tokens MIN..MAX'
    complete -c gpumem -n $in_job -l tokens -x -d 'llm-decode: generated tokens per request MIN..MAX'
    complete -c gpumem -n $in_job -l streams -x -d 'Run steps on N streams in turn'
    complete -c gpumem -n $in_job -l trace -r -F -d 'Replay this trace instead of a workload (- for stdin)'
    complete -c gpumem -n $in_job -l trace-format -x -a '(__gpumem_names trace-formats)' -d 'Trace format'
    complete -c gpumem -n $in_job -l trace-device -x -d 'PyTorch snapshot: the device whose history to replay'
end

# PyTorch's allocator settings as flags: replay, tune, max-batch
for job in replay tune max-batch
    set -l in_job "__gpumem_reuse_sim_job $job"
    complete -c gpumem -n $in_job -l max-split-size -x -d 'torch-caching: max_split_size, in bytes'
    complete -c gpumem -n $in_job -l max-non-split-rounding -x -d 'torch-caching: max_non_split_rounding'
    complete -c gpumem -n $in_job -l roundup-power2-divisions -x -d 'torch-caching: roundup_power2_divisions'
end

# The device memory to fit in: replay, tune, max-batch, record
for job in replay tune max-batch record
    set -l in_job "__gpumem_reuse_sim_job $job"
    complete -c gpumem -n $in_job -l capacity -x -d 'Device memory to fit in (record: the program\'s cap)'
    complete -c gpumem -n $in_job -l memory-fraction -x -d 'Capacity as a share of the device\'s memory'
end

# The device total, for --memory-fraction (a real run's cap takes the device's own): replay, tune, max-batch
for job in replay tune max-batch
    set -l in_job "__gpumem_reuse_sim_job $job"
    complete -c gpumem -n $in_job -l device-total -x -d 'The device total memory, for --memory-fraction'
end

# The model's costs and picture: replay, tune, max-batch
for job in replay tune max-batch
    set -l in_job "__gpumem_reuse_sim_job $job"
    complete -c gpumem -n $in_job -l costs -r -F -d 'Cost table (JSON, from alloc-test latency --save-costs)'
    complete -c gpumem -n $in_job -l plot -r -F -d 'Draw the run as an SVG picture'
end

# The grid of settings: tune, max-batch
for job in tune max-batch
    set -l in_job "__gpumem_reuse_sim_job $job"
    complete -c gpumem -n $in_job -l sweep -x -a '(__gpumem_names knobs | string replace -r \t \=\t)' -d 'KNOB=V1,V2,...: torch-caching with each value of a knob (repeatable)'
    complete -c gpumem -n $in_job -l full-grid -d 'The default grid of every knob, with --sweep\'s values'
    complete -c gpumem -n $in_job -l all-settings -d 'The table lists every setting'
end

# A program run for real, after --: tune, record, max-batch
for job in tune record max-batch
    set -l in_job "__gpumem_reuse_sim_job $job"
    complete -c gpumem -n $in_job -l max-entries -x -d 'Events a recording keeps'
end

# The recordings written: record, max-batch
for job in record max-batch
    set -l in_job "__gpumem_reuse_sim_job $job"
    complete -c gpumem -n $in_job -s o -l output -r -F -d 'The snapshot to write (max-batch: the recordings kept, FILE.bsN)'
end

set -l reuse_sim_replay "__gpumem_reuse_sim_job replay"
complete -c gpumem -n $reuse_sim_replay -l strategy -x -a '(__gpumem_comma_list --all strategies)' -d 'Strategies to compare (comma list, or all)'
complete -c gpumem -n $reuse_sim_replay -l growth -x -a '(__gpumem_names growth)' -d 'grow-only: growth when a request exceeds the buffer'
complete -c gpumem -n $reuse_sim_replay -l zero-fill -d 'grow-only: cudaMemset every new buffer'
complete -c gpumem -n $reuse_sim_replay -l ring-buffers -x -d 'ring: number of buffers'
complete -c gpumem -n $reuse_sim_replay -l ring-size -x -d 'ring: buffer size'
complete -c gpumem -n $reuse_sim_replay -l pool-initial -x -d 'pool, binning: initial pool size'
complete -c gpumem -n $reuse_sim_replay -l pool-max -x -d 'pool, binning: maximum pool size'
complete -c gpumem -n $reuse_sim_replay -l bins -x -d 'binning: bin sizes as a RANGE'
complete -c gpumem -n $reuse_sim_replay -l bin-blocks -x -d 'binning: blocks per chunk a bin takes from the pool'
complete -c gpumem -n $reuse_sim_replay -l release-threshold -x -d 'async-pool: memory the pool keeps across synchronizations'
complete -c gpumem -n $reuse_sim_replay -l sync-every -x -d 'Also synchronize the device every N requests'
complete -c gpumem -n $reuse_sim_replay -l timeline -r -F -d 'Write reserved bytes per strategy over the run as CSV'
complete -c gpumem -n $reuse_sim_replay -l timeline-points -x -d 'Points kept for --timeline'
complete -c gpumem -n $reuse_sim_replay -l save-trace -r -F -d 'Also write the input\'s events as a gpumem trace (CSV)'
complete -c gpumem -n $reuse_sim_replay -l no-chart -d 'Table mode: no chart of reserved bytes'
complete -c gpumem -n $reuse_sim_replay -l execute -d 'Also replay each strategy for real on the GPU (-d)'

set -l reuse_sim_tune "__gpumem_reuse_sim_job tune"
complete -c gpumem -n $reuse_sim_tune -l sync-every -x -d 'Also synchronize the device every N requests'
complete -c gpumem -n $reuse_sim_tune -l confirm -d 'Rerun the program for real under the best setting'
complete -c gpumem -n $reuse_sim_tune -l max-runs -x -d 'Most real runs of --confirm, the next setting after an OOM (default 1)'

set -l reuse_sim_record "__gpumem_reuse_sim_job record"
complete -c gpumem -n $reuse_sim_record -l python-stacks -d 'Also record Python stacks'

set -l reuse_sim_max_batch "__gpumem_reuse_sim_job max-batch"
complete -c gpumem -n $reuse_sim_max_batch -l confirm -d 'Real runs at the answer and the next batch'
complete -c gpumem -n $reuse_sim_max_batch -l batch-trace -r -F -d 'B=FILE: a recording of the program at batch B (repeatable)'
complete -c gpumem -n $reuse_sim_max_batch -l record-batches -x -d 'B1,B2,...: the batches the program is recorded at first'
complete -c gpumem -n $reuse_sim_max_batch -l no-refine -d 'Record only at --record-batches, not again near the first answer'
complete -c gpumem -n $reuse_sim_max_batch -l max-runs -x -d 'N: the most real runs of the program, recordings and repeats included (default 16)'
complete -c gpumem -n $reuse_sim_max_batch -l repeats -x -d 'N: the runs an answer needs, all without an OOM (default 2; 3 where timing matters)'
complete -c gpumem -n $reuse_sim_max_batch -l jobs -x -a auto -d 'N or auto: runs of the program at once (default auto: as free GPU memory and cores allow)'
complete -c gpumem -n $reuse_sim_max_batch -l no-fork-server -d 'Start each run of python SCRIPT afresh, not forked from a process that imported it once'
complete -c gpumem -n $reuse_sim_max_batch -l multiple-of -x -d 'N: search and run only multiples of N'
complete -c gpumem -n $reuse_sim_max_batch -l headroom -x -d 'SIZE: keep the modelled peak this far below the cap'
# report
set -l report "__fish_seen_subcommand_from report"
complete -c gpumem -n $report -l outlier-fraction -x -d 'Flag a GPU this fraction below its model\'s median'
complete -c gpumem -n $report -l strict -d 'A warned check, or one that could not run, counts as failed'
complete -c gpumem -n $report -l drain-list -d 'Print only the nodes to drain: HOST<TAB>REMEDIATION: reason'

# check
set -l check "__fish_seen_subcommand_from check"
complete -c gpumem -n $check -l level -x -a '(__gpumem_names levels)' -d 'What to run: quick, standard or long'
complete -c gpumem -n $check -l threshold -x -a '(__gpumem_names checks)' -d 'A check\'s threshold, ID=VALUE'
complete -c gpumem -n $check -l thresholds -r -F -d 'JSON file of check id to threshold'
complete -c gpumem -n $check -l strict -d 'A warning fails too (exit 7)'
complete -c gpumem -n $check -l kernel-log -r -F -d 'A saved kernel log for xid.events'
complete -c gpumem -n $check -l xid-since -x -a 'boot 1h 24h 7d' -d 'Xid events since boot, a duration or a time'
complete -c gpumem -n $check -l expect-gpus -x -d 'GPUs the node must have'
complete -c gpumem -n $check -l lock-timeout -x -d 'Seconds to wait for another gpumem measuring the GPU'
complete -c gpumem -n $check -l judge-shared -d 'Judge a rate measured beside another process as the GPU'\''s own'
