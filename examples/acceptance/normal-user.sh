#!/usr/bin/env bash
# Makes the normal user the acceptance apps are also tuned as (tune-all.sh): a local account
# (default benchacc, made with useradd when missing) with its own home, its own benchlab cache
# (the Go builds of root's cache copied, as tests/test_normal_user.py does) and TMPDIR, and its
# own copy of every app: setup.sh run as that user into ~USER/acceptance, so each app's
# directory and venv are the user's, built from the same pins as root's.
#   examples/acceptance/normal-user.sh              # every app
#   examples/acceptance/normal-user.sh rqdashboard  # only these
# Run as root. The user has no sudo and no control groups; benchlab runs its services as it.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
NAME=${NORMAL_USER:-benchacc}
[ "$(id -u)" = 0 ] || { echo "normal-user.sh: run it as root (it makes the user)" >&2; exit 2; }
id "$NAME" > /dev/null 2>&1 || useradd --create-home --shell /bin/bash "$NAME"
HOME_DIR=$(getent passwd "$NAME" | cut -d: -f6)
GROUP=$(id -g "$NAME")
install -d -o "$NAME" -g "$GROUP" "$HOME_DIR/tmp" "$HOME_DIR/cache"
CACHE_BIN=$("$REPO/.venv/bin/python" -c 'from benchlab.system.build_cache import cache_dir; print(cache_dir())')
if [ ! -d "$HOME_DIR/cache/bin" ]; then
    cp -a "$CACHE_BIN" "$HOME_DIR/cache/bin"
    chown -R "$NAME:$GROUP" "$HOME_DIR/cache/bin"
fi
setpriv "--reuid=$NAME" "--regid=$GROUP" --clear-groups env -i \
    "PATH=/usr/local/bin:/usr/bin:/bin" "HOME=$HOME_DIR" "TMPDIR=$HOME_DIR/tmp" "LANG=C.UTF-8" \
    "ACCEPTANCE_ROOT=$HOME_DIR/acceptance" "PYTHON311=${PYTHON311:-/usr/bin/python3.11}" \
    "$REPO/examples/acceptance/setup.sh" "$@"
