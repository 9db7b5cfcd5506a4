#!/usr/bin/env bash
# Runs every fuzz target of the module, one after another (go test runs
# one -fuzz target per invocation), each for FUZZTIME, with one worker
# (-parallel 1: the machine is shared). Used by `make fuzz` and
# `make fuzz-short`.
#
#   FUZZTIME      time per target (default 30s)
#   FUZZMINTIME   time to minimize each new input (default 5s; Go's 60s
#                 would stall the slow targets)
#   FUZZPKGS      packages to search for targets (default ./...)
#   FUZZRUN       only targets matching this regexp (default all)
#
# A target fails if go test fails and either wrote a failing input to
# testdata/fuzz/<target>/ or said something else than the fuzzing
# coordinator's "context deadline exceeded" at the end of a duration
# (go.dev/issue/75804, fixed in Go 1.27: a worker still in an iteration
# when the time is up is reported as a failure). Such a run is reported
# as a flake and does not fail the whole run.
set -uo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
FUZZMINTIME=${FUZZMINTIME:-5s}
FUZZPKGS=${FUZZPKGS:-./...}
FUZZRUN=${FUZZRUN:-.}

failed=0
flaked=0
ran=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
while read -r dir pkg; do
	for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(f \*testing\.F).*/\1/p' "$dir"/*_test.go 2>/dev/null | sort -u); do
		[[ $target =~ $FUZZRUN ]] || continue
		corpus="$dir/testdata/fuzz/$target"
		before=$(ls "$corpus" 2>/dev/null | sort)
		ran=$((ran + 1))
		start=$SECONDS
		$GO test -run '^$' -fuzz "^$target\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINTIME" \
			-parallel 1 -timeout 0 "$pkg" >"$out" 2>&1
		rc=$?
		execs=$(grep -o 'execs: [0-9]*' "$out" | tail -1)
		after=$(ls "$corpus" 2>/dev/null | sort)
		if [[ $rc -eq 0 ]]; then
			printf 'ok     %-40s %-22s %s in %ds\n' "$pkg" "$target" "${execs:-execs: ?}" $((SECONDS - start))
		elif [[ $before == "$after" ]] && grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written' "$out"; then
			flaked=$((flaked + 1))
			printf 'flake  %-40s %-22s %s (the coordinator'"'"'s end-of-time race, go.dev/issue/75804)\n' "$pkg" "$target" "${execs:-execs: ?}"
		else
			failed=$((failed + 1))
			printf 'FAIL   %-40s %s\n' "$pkg" "$target"
			grep -v '^fuzz: elapsed' "$out" | tail -40
		fi
	done
done < <($GO list -f '{{.Dir}} {{.ImportPath}}' $FUZZPKGS)
echo "fuzz: $ran targets, $failed failed, $flaked flaked, FUZZTIME=$FUZZTIME each"
[[ $failed -eq 0 && $ran -gt 0 ]]
