#!/bin/sh
# bench/ratio.sh: the three figures of issue 18 in one run, with the load average beside each.
#
#   bench/ratio.sh            # as the machine is
#   bench/ratio.sh --burn     # with a CPU burner pinned to core 0 for the whole run
#   make bench-ratio [BURN=1]
#
# Prints, each as the median of COUNT runs of ITER lookups (each run's figure is itself the median
# of its iterations, guarded and plain interleaved):
#   lookup http   guarded/plain   (BenchmarkLookup/settle=default)
#   lookup https  guarded/plain   (BenchmarkLookupHTTPS)
#   cold start    agent/plain     (BenchmarkColdStart: browser-agent run --preset lookup vs
#                                  bench/plaincold, medians of COLD_ITER interleaved processes)
# COUNT (5), ITER (5) and COLD_ITER (ITER) set the sizes.
# Raw output goes to .state/bench-ratio.txt. Needs BROWSER_AGENT_DRIVER_DIR (or scripts/setup).
set -eu
cd "$(dirname "$0")/.."
COUNT=${COUNT:-5}
ITER=${ITER:-5}
COLD_ITER=${COLD_ITER:-$ITER}
out=.state/bench-ratio.txt
mkdir -p .state
: >"$out"

burn=
if [ "${1:-}" = "--burn" ] || [ "${BURN:-}" = 1 ]; then
	taskset -c 0 sh -c 'while :; do :; done' &
	burn=$!
	trap 'kill "$burn" 2>/dev/null || true' EXIT INT TERM
	echo "CPU burner: pid $burn pinned to core 0"
fi

load() { cut -d' ' -f1-3 /proc/loadavg; }

# median of the values of metric $2 over the lines of benchmark $1 in $out
med() {
	grep "^$1-[0-9]* " "$out" | awk -v m="$2" '{ for (i = 2; i < NF; i++) if ($(i+1) == m) print $i }' |
		sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a (0 runs:"; else print v[int((NR + 1) / 2)] " (" NR " runs:" ; }'
}
runs() {
	grep "^$1-[0-9]* " "$out" | awk -v m="$2" '{ for (i = 2; i < NF; i++) if ($(i+1) == m) printf " %s", $i }'
}

l0=$(load)
# Two commands: a pattern with a sub-benchmark level would skip LookupHTTPS, which has none.
go test ./bench -run '^$' -bench 'Lookup$/settle=default' -benchtime "${ITER}x" -count "$COUNT" -timeout 90m | tee -a "$out"
go test ./bench -run '^$' -bench 'LookupHTTPS$' -benchtime "${ITER}x" -count "$COUNT" -timeout 90m | tee -a "$out"
l1=$(load)
go test ./bench -run '^$' -bench 'ColdStart' -benchtime "${COLD_ITER}x" -count 1 -timeout 60m | tee -a "$out"
l2=$(load)

echo
echo "== issue 18 figures ($(date -u +%FT%TZ), $(nproc) CPUs${burn:+, burner on core 0}) =="
echo "lookup http   guarded/plain: $(med BenchmarkLookup/settle=default guarded/plain)$(runs BenchmarkLookup/settle=default guarded/plain))   target <= 1.8 quiet, <= 2.0 burner (issue 25)"
echo "lookup https  guarded/plain: $(med BenchmarkLookupHTTPS guarded/plain)$(runs BenchmarkLookupHTTPS guarded/plain))   target <= 1.8 quiet, <= 2.0 burner (issue 25)"
echo "cold start    agent/plain:   $(med BenchmarkColdStart agent/plain)$(runs BenchmarkColdStart agent/plain))   target <= 1.5   (agent $(med BenchmarkColdStart wall-ms | cut -d' ' -f1) ms, plain $(med BenchmarkColdStart plain-wall-ms | cut -d' ' -f1) ms)"
echo "load average (1 5 15 min): before $l0; after the lookups $l1; after the cold starts $l2"
