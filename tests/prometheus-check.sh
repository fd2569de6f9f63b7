#!/usr/bin/env bash
# Validates Prometheus text exposition files (format 0.0.4, what
# node_exporter's textfile collector reads) with two independent readers, so
# that gpumem's --format prometheus is never checked by eye:
#   - promtool check metrics (Debian's prometheus package): the Go parser
#     Prometheus itself uses, and its lint (a counter without _total, a
#     gauge named ..._count, missing HELP...): a lint warning is a failure;
#   - python3's prometheus_client parser (python3-prometheus-client), with
#     checks it leaves out: every family typed and described once, no series
#     (name and labels) twice, legal names.
#   tests/prometheus-check.sh FILE...
# Exit status: 0 when every reader available accepts every file; 1 when one
# rejects one (its message on stderr, FILE: first); 2 for a usage error or a
# file that cannot be read; 77 when neither reader is installed (a test
# that calls it counts as skipped).
# PROMTOOL and PROMETHEUS_PYTHON name the programs to use; set one empty to
# leave that reader out (the tests check each reader alone).
set -u
if [ $# -eq 0 ]; then
  echo "usage: tests/prometheus-check.sh FILE..." >&2
  exit 2
fi

# A file that is not there is the caller's mistake, whatever is installed.
for file in "$@"; do
  if [ ! -f "$file" ] || [ ! -r "$file" ]; then
    echo "prometheus-check: $file: not a readable file" >&2
    exit 2
  fi
done

promtool=${PROMTOOL-promtool}
[ -n "$promtool" ] && ! command -v "$promtool" >/dev/null 2>&1 && promtool=
# The first python3 with the module: Debian's (what CI installs), then the
# one on PATH (a pyenv or venv python3 first on PATH often lacks the Debian
# package, and a pyenv shim takes half a second to start).
python=
if [ -n "${PROMETHEUS_PYTHON+set}" ]; then candidates=("$PROMETHEUS_PYTHON"); else candidates=(/usr/bin/python3 python3); fi
for p in "${candidates[@]}"; do
  if [ -n "$p" ] && "$p" -c 'import prometheus_client.parser' >/dev/null 2>&1; then python=$p; break; fi
done
if [ -z "$promtool" ] && [ -z "$python" ]; then
  echo "prometheus-check: neither promtool nor python3's prometheus_client is installed: skipped" >&2
  exit 77
fi

# Reads every file (one interpreter for them all: it takes longer to start
# than to read); prints each problem as FILE: problem and exits 1 if there is any.
read -r -d '' python_check <<'EOF'
import re, sys
from prometheus_client.parser import text_string_to_metric_families
name_ok = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
label_ok = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")

def problems_of(text):
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # the parser's own error: a malformed line
        return [f"{type(e).__name__}: {e}"]
    problems = []
    seen_families, seen_series = set(), set()
    for fam in families:
        if fam.name in seen_families:
            problems.append(f"family {fam.name} appears twice (a second # HELP or # TYPE)")
        seen_families.add(fam.name)
        if fam.type == "unknown":
            problems.append(f"family {fam.name} has no # TYPE line")
        if not fam.documentation:
            problems.append(f"family {fam.name} has no # HELP text")
        for s in fam.samples:
            if not name_ok.match(s.name):
                problems.append(f"bad metric name {s.name!r}")
            for label in s.labels:
                if not label_ok.match(label) or label.startswith("__"):
                    problems.append(f"{s.name}: bad label name {label!r}")
            series = (s.name, tuple(sorted(s.labels.items())))
            if series in seen_series:
                problems.append(f"series {s.name}{dict(s.labels)} appears twice")
            seen_series.add(series)
    return problems

failed = False
for path in sys.argv[1:]:
    try:
        with open(path, encoding="utf-8") as f:
            problems = problems_of(f.read())
    except UnicodeDecodeError as e:  # the format is UTF-8
        problems = [f"not UTF-8: {e}"]
    for p in problems:
        print(f"{path}: prometheus_client: {p}")
    failed = failed or bool(problems)
sys.exit(1 if failed else 0)
EOF

status=0
for file in "$@"; do
  if [ -n "$promtool" ]; then
    # promtool prints lint problems on stdout, parse errors on stderr; any
    # output at all is a problem.
    out=$("$promtool" check metrics <"$file" 2>&1)
    rc=$?
    if [ $rc -ne 0 ] || [ -n "$out" ]; then
      printf '%s: promtool check metrics (exit %d):\n%s\n' "$file" "$rc" "$out" >&2
      status=1
    fi
  fi
done
if [ -n "$python" ] && ! "$python" -c "$python_check" "$@" >&2; then
  status=1
fi
exit $status
