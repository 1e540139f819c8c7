#!/usr/bin/env bash
# `benchlab tune --rate R` on acceptance apps (installed by setup.sh): the cheapest candidate
# that holds R, proved at R, each answer then replayed independently (replay.py); and one R
# out of every candidate's reach, which must say how far short the most that holds is.
#   examples/acceptance/tune-rate.sh            # httpbin at 300, datasette at 100, httpbin at 5000
# One tune at a time: two at once would make both sets of numbers false.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
ROOT=${ACCEPTANCE_ROOT:-/work/acceptance}
OUT=${OUT:-$REPO/results/acceptance-rate}
NARROW=${NARROW---workers 1,3 --threads 16 --greenlets 100}
mkdir -p "$OUT"

# one NAME DIR APP RATE: tune --rate RATE typed in DIR, then the answer replayed.
one() {
    local name=$1 dir=$2 app=$3 rate=$4 began=$SECONDS
    # shellcheck disable=SC2086 # NARROW is a list of options
    (cd "$ROOT/$dir" && "$REPO/lab" tune "$app" --python "$ROOT/$name/bin/python" $NARROW \
        --requests-file tune-requests.toml --rate "$rate" --budget 5 \
        --results "$OUT/results.db" -f json -o "$OUT/$name-$rate.json") > "$OUT/$name-$rate.log" 2>&1
    echo "$name --rate $rate: exit $? in $((SECONDS - began)) s (log: $OUT/$name-$rate.log)"
    "$REPO/.venv/bin/python" "$REPO/examples/acceptance/replay.py" "$OUT/$name-$rate.json" \
        --cwd "$ROOT/$dir" --python "$ROOT/$name/bin/python" \
        --requests-file "$ROOT/$dir/tune-requests.toml" 2>>"$OUT/$name-$rate.replay.log"
}

one httpbin httpbin httpbin:app 300
one datasette datasette/app app.py:app 100
one httpbin httpbin httpbin:app 5000
