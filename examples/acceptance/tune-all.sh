#!/usr/bin/env bash
# Tunes the acceptance apps (installed by examples/acceptance/setup.sh), each from its own
# directory as its user would, then replays each answer independently (replay.py: the printed
# command at the rate to run at, 3 × 10 s and 60 s of vegeta, each 10-s window's p99), and
# prints what tune answered: the recommendation, the rate to run at, its proof, the replay
# and the time it took (the table in examples/README.md).
#   examples/acceptance/tune-all.sh                  # every app, --budget 5
#   BUDGET=6 examples/acceptance/tune-all.sh django  # only these, a longer search
#   REPLAY=0 examples/acceptance/tune-all.sh         # tune only
#   SLO_MS=150 examples/acceptance/tune-all.sh ihatemoney  # one p99 target for every app
# Each app's p99 target is 100 ms but ihatemoney's, 250 ms: on one worker at its own closed
# loop its p99 is 85-100 ms here, so no rate can hold 100 ms (tune says so: "no rate held").
# NARROW (default: 1 and 3 workers, 16 threads, 100 greenlets) keeps each first pass short;
# NARROW= (empty) tries every candidate tune would.
# One tune at a time: two at once would make both sets of numbers false.
set -uo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
ROOT=${ACCEPTANCE_ROOT:-/work/acceptance}
OUT=${OUT:-$REPO/results/acceptance}
BUDGET=${BUDGET:-5}
SLO_MS=${SLO_MS:-}
declare -A TARGET_MS=([ihatemoney]=250)
target_ms() { echo "${SLO_MS:-${TARGET_MS[$1]:-100}}"; }
REPLAY=${REPLAY:-1}
NARROW=${NARROW---workers 1,3 --threads 16 --greenlets 100}
ALL=(httpbin django datasette radicale kinto wagtail ihatemoney pypiserver drf ariadne)
APPS=("$@")
[ ${#APPS[@]} -eq 0 ] && APPS=("${ALL[@]}")
mkdir -p "$OUT"

# tune NAME DIR ARGS...: benchlab tune typed in DIR, with the app's own interpreter.
tune() {
    local name=$1 dir=$2; shift 2
    local began=$SECONDS
    # shellcheck disable=SC2086 # NARROW is a list of options
    (cd "$ROOT/$dir" && "$REPO/lab" tune "$@" --python "$ROOT/$name/bin/python" $NARROW \
        --budget "$BUDGET" --slo-p99-ms "$(target_ms "$name")" --results "$OUT/results.db" -f json -o "$OUT/$name.json") \
        > "$OUT/$name.log" 2>&1
    local code=$?
    echo "$name: exit $code in $((SECONDS - began)) s (log: $OUT/$name.log)"
    echo "$((SECONDS - began))" > "$OUT/$name.seconds"
    [ "$REPLAY" = 1 ] && replay "$name" "$dir" "$@"
}

# replay NAME DIR ARGS...: the answer replayed by replay.py with tune's requests and --env.
replay() {
    local name=$1 dir=$2; shift 2
    local args=() env=() db=
    while [ $# -gt 0 ]; do
        case $1 in
        --requests-file) args+=(--requests-file "$ROOT/$dir/$2"); shift ;;
        --request) args+=(--request "$2"); shift ;;
        --env) args+=(--env "$2"); shift ;;
        --with) db=$2; shift ;;
        esac
        shift
    done
    if [ -n "$db" ]; then  # the app's database: benchlab's PostgreSQL, set up as tune did
        local dsn
        dsn=$("$REPO/lab" services up --no-pgbouncer --no-mariadb --no-redis | awk '/^postgresql /{print $2}')
        env=(--env "DATABASE_URL=$dsn")
        (cd "$ROOT/$dir" && PATH="$ROOT/$name/bin:$PATH" DATABASE_URL=$dsn bash -c "$SETUP") \
            >> "$OUT/$name.replay.log" 2>&1
    fi
    "$REPO/.venv/bin/python" "$REPO/examples/acceptance/replay.py" "$OUT/$name.json" \
        --cwd "$ROOT/$dir" --python "$ROOT/$name/bin/python" --slo-ms "$(target_ms "$name")" "${args[@]}" "${env[@]}" \
        2>> "$OUT/$name.replay.log" | tee "$OUT/$name.replay"
    [ -n "$db" ] && "$REPO/lab" services down > /dev/null
    return 0
}

for app in "${APPS[@]}"; do
    case $app in
    httpbin) tune httpbin httpbin httpbin:app --requests-file tune-requests.toml ;;
    django) SETUP='python manage.py migrate --noinput -v0 && python manage.py shell -v0 -c "$(cat bench_seed.py)"'
        tune django django/mysite mysite.wsgi:application \
        --requests-file tune-requests.toml --with postgres=DATABASE_URL --setup "$SETUP" ;;
    datasette) tune datasette datasette/app app.py:app --requests-file tune-requests.toml ;;
    radicale) tune radicale radicale/app radicale:application --requests-file tune-requests.toml \
        --env "RADICALE_CONFIG=$ROOT/radicale/app/radicale.conf" ;;
    kinto) tune kinto kinto/app app.py:app --requests-file tune-requests.toml ;;
    wagtail) tune wagtail wagtail/mysite mysite.wsgi:application \
        --env DJANGO_SETTINGS_MODULE=mysite.settings.production \
        --request 'GET /' --check-body 'Welcome to your new Wagtail site' ;;
    ihatemoney) tune ihatemoney ihatemoney/app 'ihatemoney.run:create_app()' \
        --env-file env --requests-file tune-requests.toml ;;
    pypiserver) tune pypiserver pypiserver/app 'pypiserver:app(roots=["packages"])' \
        --requests-file tune-requests.toml ;;
    drf) SETUP='python manage.py migrate --noinput -v0 && python manage.py shell -v0 -c "$(cat bench_seed.py)"'
        tune drf drf/tutorial tutorial.wsgi:application \
        --requests-file tune-requests.toml --with postgres=DATABASE_URL --setup "$SETUP" ;;
    ariadne) tune ariadne ariadne/app app:app --requests-file tune-requests.toml ;;
    *) echo "unknown app '$app': use ${ALL[*]}" >&2; exit 2 ;;
    esac
done
"$REPO/.venv/bin/python" "$REPO/examples/acceptance/summarise.py" "$OUT" "${APPS[@]}"
