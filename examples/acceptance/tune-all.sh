#!/usr/bin/env bash
# Tunes the acceptance apps (installed by examples/acceptance/setup.sh), each from its own
# directory as its user would, and prints what tune answered: the recommendation, the rate to
# run at, its proof and the time it took (the table in examples/README.md).
#   examples/acceptance/tune-all.sh                  # every app, --budget 3
#   BUDGET=6 examples/acceptance/tune-all.sh django  # only these, a longer search
# NARROW (default: 1 and 3 workers, 16 threads, 100 greenlets) keeps each first pass short;
# NARROW= (empty) tries every candidate tune would.
# One tune at a time: two at once would make both sets of numbers false.
set -uo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
ROOT=${ACCEPTANCE_ROOT:-/work/acceptance}
OUT=${OUT:-$REPO/results/acceptance}
BUDGET=${BUDGET:-3}
NARROW=${NARROW---workers 1,3 --threads 16 --greenlets 100}
ALL=(httpbin django datasette radicale kinto)
APPS=("$@")
[ ${#APPS[@]} -eq 0 ] && APPS=("${ALL[@]}")
mkdir -p "$OUT"

# tune NAME DIR ARGS...: benchlab tune typed in DIR, with the app's own interpreter.
tune() {
    local name=$1 dir=$2; shift 2
    local began=$SECONDS
    # shellcheck disable=SC2086 # NARROW is a list of options
    (cd "$ROOT/$dir" && "$REPO/lab" tune "$@" --python "$ROOT/$name/bin/python" $NARROW \
        --budget "$BUDGET" --results "$OUT/results.db" -f json -o "$OUT/$name.json") \
        > "$OUT/$name.log" 2>&1
    local code=$?
    echo "$name: exit $code in $((SECONDS - began)) s (log: $OUT/$name.log)"
    echo "$((SECONDS - began))" > "$OUT/$name.seconds"
}

for app in "${APPS[@]}"; do
    case $app in
    httpbin) tune httpbin httpbin httpbin:app --requests-file tune-requests.toml ;;
    django) tune django django/mysite mysite.wsgi:application \
        --requests-file tune-requests.toml --with postgres=DATABASE_URL \
        --setup 'python manage.py migrate --noinput -v0 && python manage.py shell -v0 -c "$(cat bench_seed.py)"' ;;
    datasette) tune datasette datasette/app app.py:app --requests-file tune-requests.toml ;;
    radicale) tune radicale radicale/app radicale:application --requests-file tune-requests.toml \
        --env "RADICALE_CONFIG=$ROOT/radicale/app/radicale.conf" ;;
    kinto) tune kinto kinto/app app.py:app --requests-file tune-requests.toml ;;
    wagtail) tune wagtail wagtail/mysite mysite.wsgi:application \
        --env DJANGO_SETTINGS_MODULE=mysite.settings.production \
        --request 'GET /' --check-body 'Welcome to your new Wagtail site' ;;
    ihatemoney) tune ihatemoney ihatemoney/app 'ihatemoney.run:create_app()' \
        --env-file env --requests-file tune-requests.toml ;;
    *) echo "unknown app '$app': use ${ALL[*]} wagtail ihatemoney" >&2; exit 2 ;;
    esac
done
"$REPO/.venv/bin/python" "$REPO/examples/acceptance/summarise.py" "$OUT" "${APPS[@]}"
