#!/usr/bin/env bash
# Tunes the acceptance apps (installed by examples/acceptance/setup.sh), each from its own
# directory as its user would, twice: as root in root's copy ($ACCEPTANCE_ROOT, default
# /work/acceptance) and as a normal user in that user's own copy (~USER/acceptance, made by
# examples/acceptance/normal-user.sh; the user runs benchlab with its own HOME,
# BENCHLAB_CACHE and TMPDIR, no control groups, its services as itself). Each answer is then
# replayed independently as the same user (replay.py: the printed command at the rate to run
# at, 3 × 10 s and 60 s of vegeta, each 10-s window's p99), and summarise.py prints the table
# of examples/README.md: both tunes of each app, their rates to run at and the ratio.
#   examples/acceptance/tune-all.sh                       # every app, as root and as benchacc
#   BUDGET=6 examples/acceptance/tune-all.sh django       # only these, a longer search
#   USERS=root examples/acceptance/tune-all.sh            # as root only
#   REPLAY=0 examples/acceptance/tune-all.sh              # tune only
#   SLO_MS=150 examples/acceptance/tune-all.sh ihatemoney # one p99 target for every app
# Each app's p99 target is 100 ms but ihatemoney's, 250 ms: on one worker at its own closed
# loop its p99 is 85-100 ms here, so no rate can hold 100 ms (tune says so: "no rate held").
# NARROW (default: 1 and 3 workers, 16 threads, 100 greenlets) keeps each first pass short;
# NARROW= (empty) tries every candidate tune would.
# One load at a time: each single tune and each single replay runs under the machine's shared
# lock ($LOCK, flock), not the whole script, so that other work can run between them.
set -uo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
SELF=$REPO/examples/acceptance/tune-all.sh
ROOT=${ACCEPTANCE_ROOT:-/work/acceptance}
OUT=${OUT:-$REPO/results/acceptance}
BUDGET=${BUDGET:-5}
SLO_MS=${SLO_MS:-}
NORMAL_USER=${NORMAL_USER:-benchacc}
USERS=${USERS:-root $NORMAL_USER}
LOCK=${LOCK:-/tmp/benchlab-load.lock}
declare -A TARGET_MS=([ihatemoney]=250)
target_ms() { echo "${SLO_MS:-${TARGET_MS[$1]:-100}}"; }
REPLAY=${REPLAY:-1}
NARROW=${NARROW---workers 1,3 --threads 16 --greenlets 100}
ALL=(httpbin django datasette radicale kinto wagtail ihatemoney pypiserver drf ariadne
    rqdashboard sqladmin wsgidav)

# replay_step NAME DIR SLO JSON ARGS... (run as the app's owner, under the lock): the --with
# services started again and set up as tune did, the answer replayed, the services stopped.
replay_step() {
    local name=$1 dir=$2 slo=$3 json=$4; shift 4
    local args=() env=() with=
    while [ $# -gt 0 ]; do
        case $1 in
        --requests-file) args+=(--requests-file "$dir/$2"); shift ;;
        --request) args+=(--request "$2"); shift ;;
        --env) args+=(--env "$2"); shift ;;
        --with) with=$2; shift ;;
        esac
        shift
    done
    local venv=$PYTHON_BIN
    if [ -n "$with" ]; then  # one service: postgres=VAR or redis=VAR
        local service=${with%%=*} variable=${with#*=} only url
        case $service in
        postgres) only=(--no-pgbouncer --no-mariadb --no-redis) ;;
        redis) only=(--no-postgres --no-pgbouncer --no-mariadb) ;;
        esac
        url=$("$REPO/lab" services up "${only[@]}" | awk -v s="$service" \
            '($1 == "postgresql" && s == "postgres") || $1 == s {print $2}')
        env=(--env "$variable=$url")
        (cd "$dir" && PATH="$(dirname "$venv"):$PATH" env "$variable=$url" bash -c "$SETUP") >&2
    fi
    "$REPO/.venv/bin/python" "$REPO/examples/acceptance/replay.py" "$json" \
        --cwd "$dir" --python "$venv" --slo-ms "$slo" --json "${json%.json}.replay.json" \
        "${args[@]}" "${env[@]}"
    [ -n "$with" ] && "$REPO/lab" services down > /dev/null
    return 0
}

if [ "${1:-}" = --replay-step ]; then
    shift
    replay_step "$@"
    exit $?
fi

# as USER: AS, the argv prefix that runs a command as USER (`env` alone for root), with a
# home, a benchlab cache and a TMPDIR of its own and nothing else of this shell's environment.
as() {
    AS=(env)
    [ "$1" = root ] && return 0
    local home
    home=$(getent passwd "$1" | cut -d: -f6)
    AS=(setpriv "--reuid=$1" "--regid=$(id -g "$1")" --clear-groups env -i
        "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" "HOME=$home" "USER=$1" "LOGNAME=$1"
        "BENCHLAB_CACHE=$home/cache" "TMPDIR=$home/tmp" "LANG=C.UTF-8" "COLUMNS=200")
}
root_of() { if [ "$1" = root ]; then echo "$ROOT"; else echo "$(getent passwd "$1" | cut -d: -f6)/acceptance"; fi; }

# tune USER NAME DIR ARGS...: benchlab tune typed in DIR by USER, with the app's own
# interpreter, under the lock; then its answer replayed (under the lock again).
tune() {
    local user=$1 name=$2 dir=$3; shift 3
    local top out began=$SECONDS AS=()
    top=$(root_of "$user")
    out=$OUT/$user
    as "$user"
    mkdir -p "$out"
    [ "$user" = root ] || chown "$user:" "$out"  # tune and replay.py write there as the user
    # The app's SQLite file is written by its import (sqladmin): made anew by each tune.
    [ "$name" = sqladmin ] && rm -f "$top/$dir/example.db"
    # shellcheck disable=SC2086 # NARROW is a list of options
    flock -o "$LOCK" "${AS[@]}" env --chdir="$top/$dir" "$REPO/lab" tune "$@" \
        --python "$top/$name/bin/python" $NARROW --budget "$BUDGET" \
        --slo-p99-ms "$(target_ms "$name")" --results "$out/results.db" -f json -o "$out/$name.json" \
        > "$out/$name.log" 2>&1
    local code=$?
    echo "$name as $user: exit $code in $((SECONDS - began)) s (log: $out/$name.log)"
    echo "$((SECONDS - began))" > "$out/$name.seconds"
    [ "$REPLAY" = 1 ] || return 0
    flock -o "$LOCK" "${AS[@]}" "SETUP=${SETUP:-}" "PYTHON_BIN=$top/$name/bin/python" \
        "$SELF" --replay-step "$name" "$top/$dir" "$(target_ms "$name")" "$out/$name.json" "$@" \
        2>> "$out/$name.replay.log" | tee "$out/$name.replay"
}

mkdir -p "$OUT"
APPS=("$@")
[ ${#APPS[@]} -eq 0 ] && APPS=("${ALL[@]}")
for app in "${APPS[@]}"; do
    for user in $USERS; do
        top=$(root_of "$user")
        SETUP=
        case $app in
        httpbin) tune "$user" httpbin httpbin httpbin:app --requests-file tune-requests.toml ;;
        django) SETUP='python manage.py migrate --noinput -v0 && python manage.py shell -v0 -c "$(cat bench_seed.py)"'
            tune "$user" django django/mysite mysite.wsgi:application \
            --requests-file tune-requests.toml --with postgres=DATABASE_URL --setup "$SETUP" ;;
        datasette) tune "$user" datasette datasette/app app.py:app --requests-file tune-requests.toml ;;
        radicale) tune "$user" radicale radicale/app radicale:application --requests-file tune-requests.toml \
            --env "RADICALE_CONFIG=$top/radicale/app/radicale.conf" ;;
        kinto) tune "$user" kinto kinto/app app.py:app --requests-file tune-requests.toml ;;
        wagtail) tune "$user" wagtail wagtail/mysite mysite.wsgi:application \
            --env DJANGO_SETTINGS_MODULE=mysite.settings.production \
            --request 'GET /' --check-body 'Welcome to your new Wagtail site' ;;
        ihatemoney) tune "$user" ihatemoney ihatemoney/app 'ihatemoney.run:create_app()' \
            --env-file env --requests-file tune-requests.toml ;;
        pypiserver) tune "$user" pypiserver pypiserver/app 'pypiserver:app(roots=["packages"])' \
            --requests-file tune-requests.toml ;;
        drf) SETUP='python manage.py migrate --noinput -v0 && python manage.py shell -v0 -c "$(cat bench_seed.py)"'
            tune "$user" drf drf/tutorial tutorial.wsgi:application \
            --requests-file tune-requests.toml --with postgres=DATABASE_URL --setup "$SETUP" ;;
        ariadne) tune "$user" ariadne ariadne/app app:app --requests-file tune-requests.toml ;;
        rqdashboard) SETUP='python enqueue.py'
            tune "$user" rqdashboard rqdashboard/app 'rq_dashboard.app:create_app()' \
            --request 'GET /rq-dashboard/0/data/queues.json' --check-body benchlab-jobs \
            --with redis=REDIS_URL --setup "$SETUP" ;;
        sqladmin) SETUP='python seed.py'
            tune "$user" sqladmin sqladmin/app app:app --requests-file tune-requests.toml \
            --setup "$SETUP" ;;
        wsgidav) tune "$user" wsgidav wsgidav/app app.py:app --requests-file tune-requests.toml ;;
        *) echo "unknown app '$app': use ${ALL[*]}" >&2; exit 2 ;;
        esac
    done
done
# shellcheck disable=SC2086 # USERS is a list
"$REPO/.venv/bin/python" "$REPO/examples/acceptance/summarise.py" "$OUT" --users $USERS -- "${APPS[@]}"
