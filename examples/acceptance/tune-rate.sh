#!/usr/bin/env bash
# `benchlab tune --rate R` on acceptance apps (installed by setup.sh): the cheapest candidate
# that holds R, proved at R, each answer then replayed independently (replay.py); and one R
# out of every candidate's reach, which must say how far short the most that holds is.
#   examples/acceptance/tune-rate.sh                        # httpbin at 300, datasette at 100, httpbin at 5000
#   examples/acceptance/tune-rate.sh kinto:150 httpbin:400  # these apps at these rates
# One tune at a time: two at once would make both sets of numbers false.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
ROOT=${ACCEPTANCE_ROOT:-/work/acceptance}
OUT=${OUT:-$REPO/results/acceptance-rate}
BUDGET=${BUDGET:-5}
NARROW=${NARROW---workers 1,3 --threads 16 --greenlets 100}
RUNS=("$@")
[ ${#RUNS[@]} -eq 0 ] && RUNS=(httpbin:300 datasette:100 httpbin:5000)
mkdir -p "$OUT"

# one NAME DIR APP RATE: tune --rate RATE typed in DIR, then the answer replayed.
one() {
    local name=$1 dir=$2 app=$3 rate=$4 began=$SECONDS
    # shellcheck disable=SC2086 # NARROW is a list of options
    (cd "$ROOT/$dir" && "$REPO/lab" tune "$app" --python "$ROOT/$name/bin/python" $NARROW \
        --requests-file tune-requests.toml --rate "$rate" --budget "$BUDGET" \
        --results "$OUT/results.db" -f json -o "$OUT/$name-$rate.json") > "$OUT/$name-$rate.log" 2>&1
    echo "$name --rate $rate: exit $? in $((SECONDS - began)) s (log: $OUT/$name-$rate.log)"
    "$REPO/.venv/bin/python" "$REPO/examples/acceptance/replay.py" "$OUT/$name-$rate.json" \
        --cwd "$ROOT/$dir" --python "$ROOT/$name/bin/python" \
        --requests-file "$ROOT/$dir/tune-requests.toml" 2>>"$OUT/$name-$rate.replay.log"
}

for run in "${RUNS[@]}"; do
    name=${run%%:*} rate=${run#*:}
    case $name in
    httpbin) one httpbin httpbin httpbin:app "$rate" ;;
    datasette) one datasette datasette/app app.py:app "$rate" ;;
    kinto) one kinto kinto/app app.py:app "$rate" ;;
    ariadne) one ariadne ariadne/app app:app "$rate" ;;
    pypiserver) one pypiserver pypiserver/app 'pypiserver:app(roots=["packages"])' "$rate" ;;
    *) echo "tune-rate.sh: no --rate run set up for '$name': use httpbin, datasette, kinto, ariadne or pypiserver" >&2; exit 2 ;;
    esac
done
