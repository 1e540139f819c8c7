#!/usr/bin/env bash
# The steps of examples/ci/benchmark.yml, runnable on any machine benchlab runs on:
#
#   examples/ci/benchmark.sh baseline   measure RECIPE into the store BASELINE (on the main
#                                       branch; CI keeps that store as an artifact)
#   examples/ci/benchmark.sh check      measure RECIPE into the store BRANCH, compare its run
#                                       with the latest run of BASELINE and with main's
#                                       history (its current segment), write OUT/compare.md
#                                       (for the pull request; also on stdout, the run's
#                                       output on stderr) and exit 1 if a cell is slower
#                                       by more than FAIL_ABOVE % beyond its interval, or
#                                       failed, or is missing; 4 if the branch's run was
#                                       partial and nothing regressed; 3 if benchlab could
#                                       not measure (docs/commands.md, "Exit codes")
#
# Settings (environment): RECIPE (default examples/ci/recipe.toml), OUT (ci-results),
# BASELINE (OUT/baseline.db), BRANCH (OUT/branch.db), FAIL_ABOVE (10, in %), and BENCHLAB,
# the command that runs benchlab (default ./lab; it is split into words).
set -euo pipefail
cd "$(dirname "$0")/../.."

BENCHLAB=${BENCHLAB:-./lab}
RECIPE=${RECIPE:-examples/ci/recipe.toml}
OUT=${OUT:-ci-results}
BASELINE=${BASELINE:-$OUT/baseline.db}
BRANCH=${BRANCH:-$OUT/branch.db}
FAIL_ABOVE=${FAIL_ABOVE:-10}
mkdir -p "$OUT"

case "${1:-}" in
  baseline)
    # BASELINE keeps every run on main (CI downloads the last one's store first): it is the
    # history each run is added to.
    $BENCHLAB run "$RECIPE" --results "$BASELINE" --html "$OUT/baseline.html"
    $BENCHLAB history "$RECIPE" --results "$BASELINE" --format html -o "$OUT/history.html" >&2
    $BENCHLAB history "$RECIPE" --results "$BASELINE" --format md >"$OUT/history.md"
    ;;
  check)
    if [ ! -f "$BASELINE" ]; then
      echo "error: no baseline store at $BASELINE; run '$0 baseline' on the main branch first" >&2
      exit 2
    fi
    # The run's table goes to stderr too: stdout is the comparison alone. A partial
    # run (exit 4: cells failed) is still compared; a harness failure (3) ends here.
    ran=0
    $BENCHLAB run "$RECIPE" --results "$BRANCH" --html "$OUT/branch.html" >&2 || ran=$?
    [ "$ran" = 0 ] || [ "$ran" = 4 ] || exit "$ran"
    status=0
    $BENCHLAB compare latest latest --results "$BASELINE" --results-b "$BRANCH" \
      --format md --fail-above "$FAIL_ABOVE" >"$OUT/compare.md" || status=$?
    # The branch's run at the end of main's history: within main's current segment, or not.
    echo >>"$OUT/compare.md"
    $BENCHLAB history "$RECIPE" --results "$BASELINE" --results "$BRANCH" --format md \
      >>"$OUT/compare.md" || status=$?
    cat "$OUT/compare.md"
    # A regression (1) first; else the partial run's 4; else 0.
    [ "$status" = 0 ] && status=$ran
    exit "$status"
    ;;
  *)
    echo "usage: $0 baseline|check   (see the top of this file)" >&2
    exit 2
    ;;
esac
