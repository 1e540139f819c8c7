#!/usr/bin/env bash
# Installs the acceptance apps for `benchlab tune` (what each is: docs/research/2026-11-24-acceptance-apps.md
# and examples/README.md; tune them all: examples/acceptance/tune-all.sh):
# one venv per app in $ACCEPTANCE_ROOT/<name>/ (default /work/acceptance), CPython 3.11,
# every package pinned (full `pip freeze` of 2026-11-24 as a constraints file), the app's
# files, its database or data, and a tune-requests.toml for `benchlab tune --requests-file`.
# Idempotent: an existing venv, project or seed is kept, and pip only adds what is missing.
# It installs and imports only; it starts no server (seeds run the apps in-process).
#   examples/acceptance/setup.sh                 # all apps
#   examples/acceptance/setup.sh django kinto    # only these
#   ACCEPTANCE_ROOT=/tmp/acc examples/acceptance/setup.sh
# The normal user's copy of every app (tune-all.sh tunes each as root and as that user) is
# made by examples/acceptance/normal-user.sh, which runs this script as that user.
set -euo pipefail

ROOT=${ACCEPTANCE_ROOT:-/work/acceptance}
# The system's Python first: a venv on an interpreter under /root (pyenv's) cannot be run by
# the normal user's copy, nor by another account benchlab may run an app as.
PY=${PYTHON311:-$(command -v /usr/bin/python3.11 || command -v python3.11 || command -v python3)}
ALL=(httpbin django datasette radicale kinto wagtail ihatemoney wsgidav pypiserver drf ariadne
    rqdashboard sqladmin)
APPS=("$@")
[ ${#APPS[@]} -eq 0 ] && APPS=("${ALL[@]}")
mkdir -p "$ROOT"
say() { printf '\n== %s\n' "$*"; }

# venv NAME PKG... : the venv, its constraints (stdin), then the pinned top-level packages.
venv() {
    local name=$1; shift
    [ -x "$ROOT/$name/bin/python" ] || "$PY" -m venv "$ROOT/$name"
    cat > "$ROOT/$name/constraints.txt"
    "$ROOT/$name/bin/python" -m pip install -q --disable-pip-version-check \
        -c "$ROOT/$name/constraints.txt" "$@"
}

setup_httpbin() {  # 1. Flask: httpbin:app
    venv httpbin 'httpbin[mainapp]==0.10.4' gunicorn==27.0.1 <<'EOF'
attrs==26.1.0
blinker==1.9.0
brotlicffi==1.2.1.0
cffi==2.1.1
click==8.5.1
decorator==5.3.1
flasgger==0.9.7.1
Flask==3.1.3
gevent==23.9.0.post1
greenlet==2.0.2
gunicorn==27.0.1
httpbin==0.10.4
itsdangerous==2.2.0
Jinja2==3.1.6
jsonschema==4.26.0
jsonschema-specifications==2025.9.1
MarkupSafe==3.0.4
mistune==3.4.0
packaging==26.3
pycparser==3.12
PyYAML==6.0.4
referencing==0.37.0
rpds-py==2026.9.1
six==1.17.0
typing_extensions==4.16.0
Werkzeug==3.1.9
zope.event==6.2
zope.interface==8.7
EOF
    cat > "$ROOT/httpbin/tune-requests.toml" <<'EOF'
[[request]]
path = "/get?id=7"
contains = '"id": "7"'
json_key = "args"
EOF
}

setup_django() {  # 2. Django startproject, ORM on PostgreSQL through DATABASE_URL
    venv django Django==5.2.19 dj-database-url==3.1.2 'psycopg[binary]==3.3.9' gunicorn==27.0.1 <<'EOF'
asgiref==3.13.0
dj-database-url==3.1.2
Django==5.2.19
gunicorn==27.0.1
psycopg==3.3.9
psycopg-binary==3.3.9
sqlparse==0.6.1
typing_extensions==4.16.0
EOF
    cd "$ROOT/django"
    [ -f mysite/manage.py ] || bin/django-admin startproject mysite
    cd mysite
    grep -q 'benchlab acceptance' mysite/settings.py || cat >> mysite/settings.py <<'EOF'

# --- benchlab acceptance: production-style settings from the environment ---
import os  # noqa: E402

import dj_database_url  # noqa: E402

SECRET_KEY = os.environ.get("SECRET_KEY", SECRET_KEY)
DEBUG = os.environ.get("DJANGO_DEBUG", "") == "1"
ALLOWED_HOSTS = os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]").split(",")
DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=int(os.environ.get("CONN_MAX_AGE", "0")),
    )
}
EOF
    cat > bench_seed.py <<'EOF'
# Seed for benchlab acceptance (run once after migrate, idempotent): an admin user and a
# logged-in session with a fixed key, so "Cookie: sessionid=benchlabadminsession0000000001"
# makes /admin/auth/user/ read the database (session, user, permissions, the user list).
from datetime import timedelta

from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session
from django.utils import timezone

KEY = "benchlabadminsession0000000001"
User = get_user_model()
user = User.objects.filter(username="admin").first()
if user is None:
    user = User.objects.create_superuser("admin", "admin@example.com", "benchlab-admin-pw")
data = {
    SESSION_KEY: str(user.pk),
    BACKEND_SESSION_KEY: "django.contrib.auth.backends.ModelBackend",
    HASH_SESSION_KEY: user.get_session_auth_hash(),
}
Session.objects.update_or_create(
    session_key=KEY,
    defaults={"session_data": SessionStore().encode(data),
              "expire_date": timezone.now() + timedelta(days=3650)},
)
print("session", KEY, "for user", user.pk)
EOF
    # The database named by DATABASE_URL (default: SQLite db.sqlite3 here).
    ../bin/python manage.py migrate --noinput -v0
    ../bin/python manage.py shell -v0 -c "$(cat bench_seed.py)"
    cat > tune-requests.toml <<'EOF'
[[request]]
path = "/admin/auth/user/"
headers = { Cookie = "sessionid=benchlabadminsession0000000001" }
contains = "admin@example.com"
EOF
}

setup_datasette() {  # 3. ASGI: datasette, app.py:app
    venv datasette datasette==0.65.5 uvicorn==0.54.0 uvicorn-worker==0.4.0 gunicorn==27.0.1 <<'EOF'
aiofiles==25.1.0
anyio==4.16.0
asgi-csrf==0.11
asgiref==3.13.0
certifi==2026.10.19.post1
click==8.5.1
click-default-group==1.2.4
datasette==0.65.5
flexcache==0.3
flexparser==0.4
gunicorn==27.0.1
h11==0.16.0
httpcore==1.0.9
httpx==0.28.1
hupper==1.12.1
idna==3.20
itsdangerous==2.2.0
janus==2.0.0
Jinja2==3.1.6
MarkupSafe==3.0.4
mergedeep==1.3.4
platformdirs==4.14.8
pluggy==1.7.0
python-multipart==0.0.34
PyYAML==6.0.4
typing_extensions==4.16.0
uvicorn==0.54.0
uvicorn-worker==0.4.0
EOF
    mkdir -p "$ROOT/datasette/app" && cd "$ROOT/datasette/app"
    cat > make_db.py <<'EOF'
# Builds demo.db: 10,000 items in 20 categories (deterministic).
import sqlite3
from pathlib import Path

path = Path(__file__).with_name("demo.db")
path.unlink(missing_ok=True)
db = sqlite3.connect(path)
db.execute("create table categories (id integer primary key, name text)")
db.execute("create table items (id integer primary key, name text,"
           " category_id integer references categories(id), price real)")
db.executemany("insert into categories values (?, ?)", [(i, f"category {i}") for i in range(20)])
db.executemany("insert into items values (?, ?, ?, ?)",
               [(i, f"item {i}", i % 20, (i * 37 % 1000) / 10) for i in range(10_000)])
db.execute("create index items_category on items(category_id)")
db.commit()
print(path, db.execute("select count(*) from items").fetchone()[0])
EOF
    cat > app.py <<'EOF'
from pathlib import Path

from datasette.app import Datasette

app = Datasette([str(Path(__file__).with_name("demo.db"))]).app()
EOF
    [ -f demo.db ] || ../bin/python make_db.py
    cat > tune-requests.toml <<'EOF'
[[request]]
path = "/demo/items.json?_shape=array&category_id=7&_size=20"
contains = '"name": "item 7"'
EOF
}

setup_radicale() {  # 4. bare WSGI function: radicale:application (RADICALE_CONFIG)
    venv radicale Radicale==3.9.0 gunicorn==27.0.1 <<'EOF'
certifi==2026.10.19.post1
charset-normalizer==3.5.2
defusedxml==0.7.1
gunicorn==27.0.1
idna==3.20
libpass==1.9.4
pika==1.4.4
python-dateutil==4.0.0
pytz==2026.6
Radicale==3.9.0
requests==2.34.2
six==1.17.0
tzdata==2026.6
urllib3==2.8.0
vobject==0.9.9
EOF
    mkdir -p "$ROOT/radicale/app" && cd "$ROOT/radicale/app"
    cat > radicale.conf <<EOF
# benchlab acceptance: Radicale under an external WSGI server (RADICALE_CONFIG=this file).
[auth]
# any user name and password are accepted (the user comes from Basic auth when sent)
type = none

[rights]
type = owner_only

[storage]
filesystem_folder = $ROOT/radicale/app/collections

[logging]
level = warning
EOF
    cat > seed.py <<'EOF'
# Seeds a calendar of 50 events for user "bench" by calling radicale.application in-process
# (MKCALENDAR, then one PUT per event): what a CalDAV client does; no server is started.
import base64, io, os, sys
from wsgiref.util import setup_testing_defaults

os.environ.setdefault("RADICALE_CONFIG", os.path.join(os.path.dirname(os.path.abspath(__file__)), "radicale.conf"))
import radicale

AUTH = "Basic " + base64.b64encode(b"bench:bench").decode()

def call(method, path, body=b"", ctype="text/calendar"):
    env = {"REQUEST_METHOD": method, "PATH_INFO": path, "SCRIPT_NAME": "", "HTTP_AUTHORIZATION": AUTH,
           "CONTENT_LENGTH": str(len(body)), "CONTENT_TYPE": ctype, "wsgi.input": io.BytesIO(body),
           "wsgi.errors": sys.stderr}
    setup_testing_defaults(env)
    status = []
    b"".join(radicale.application(env, lambda s, h, e=None: status.append(s)))
    return status[0]

print("MKCALENDAR", call("MKCALENDAR", "/bench/calendar/", b"", "application/xml"))
for i in range(50):
    ics = (f"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//benchlab//acceptance//EN\r\n"
           f"BEGIN:VEVENT\r\nUID:event-{i}@benchlab\r\nDTSTAMP:20260101T000000Z\r\n"
           f"DTSTART:202601{i % 28 + 1:02d}T{i % 10 + 8:02d}0000Z\r\nDURATION:PT1H\r\n"
           f"SUMMARY:Meeting {i}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n").encode()
    status = call("PUT", f"/bench/calendar/event-{i}.ics", ics)
print("PUT x50, last", status)
EOF
    [ -d collections/collection-root/bench/calendar ] || \
        RADICALE_CONFIG="$PWD/radicale.conf" ../bin/python seed.py 2>/dev/null
    cat > tune-requests.toml <<'EOF'
[[request]]
path = "/bench/calendar/"
headers = { Authorization = "Basic YmVuY2g6YmVuY2g=" }
contains = "UID:event-7@benchlab"
EOF
}

setup_kinto() {  # 5. path prefix: Kinto (Pyramid) answers under /v1/, 307 at /
    venv kinto kinto==26.5.0 gunicorn==27.0.1 <<'EOF'
attrs==26.1.0
bcrypt==5.0.0
certifi==2026.10.19.post1
cffi==2.1.1
charset-normalizer==3.5.2
colander==2.0
colorama==0.4.6
cryptography==50.0.2
dockerflow==2026.3.4
gunicorn==27.0.1
hupper==1.12.1
idna==3.20
iso8601==2.1.0
jsonpatch==1.48
jsonpointer==3.12
jsonschema==4.26.0
jsonschema-specifications==2025.9.1
kinto==26.5.0
logging-color-formatter==1.1.0
PasteDeploy==3.1.0
plaster==1.1.2
plaster-pastedeploy==1.0.1
pycparser==3.12
PyJWT==2.15.1
pyramid==2.1
pyramid_multiauth==1.1.0
pyramid_tm==2.6
python-dateutil==4.0.0
python-rapidjson==1.25
referencing==0.37.0
requests==2.34.2
rpds-py==2026.9.1
transaction==5.1
translationstring==1.4
typing_extensions==4.16.0
tzdata==2026.6
urllib3==2.8.0
venusian==3.1.1
waitress==3.0.2
WebOb==1.8.11
zope.deprecation==6.0
zope.interface==8.7
EOF
    mkdir -p "$ROOT/kinto/app" && cd "$ROOT/kinto/app"
    [ -f kinto.ini ] || ../bin/kinto init --ini kinto.ini --backend memory --cache-backend memory
    # Basic auth (any user:password) beside the accounts plugin, as the template suggests.
    grep -q '^multiauth.policies = account basicauth' kinto.ini || sed -i \
        's|^multiauth.policies = account$|multiauth.policies = account basicauth\nmultiauth.policy.basicauth.use = kinto.core.authentication.BasicAuthAuthenticationPolicy|' \
        kinto.ini
    cat > app.py <<'EOF'
import os
from pathlib import Path

from pyramid.paster import get_app

app = get_app(os.environ.get("KINTO_INI", str(Path(__file__).with_name("kinto.ini"))), "main")
EOF
    cat > tune-requests.toml <<'EOF'
[[request]]
path = "/v1/"
contains = '"project_name":"kinto"'

[[request]]
path = "/v1/buckets/default"
headers = { Authorization = "Basic YmVuY2g6YmVuY2g=" }
contains = '"last_modified"'
EOF
}

setup_wagtail() {  # 6. imports requests at startup (via djangorestframework): wagtail start
    # soupsieve 2.10: the newest for CPython < 3.11.5 (3.0 and later need 3.11.5; Debian 12 has 3.11.2).
    venv wagtail wagtail==8.0.1 Django==5.2.19 dj-database-url==3.1.2 'psycopg[binary]==3.3.9' \
        gunicorn==27.0.1 <<'EOF'
annotated-types==0.8.0
anyascii==0.3.3
asgiref==3.13.0
beautifulsoup4==4.15.0
certifi==2026.10.19.post1
charset-normalizer==3.5.2
defusedxml==0.7.1
dj-database-url==3.1.2
Django==5.2.19
django-filter==26.2
django-modelcluster==6.5
django-ninja==1.7.1
django-permissionedforms==0.1
django-stubs-ext==6.1.2
django-taggit==6.1.0
django-tasks==0.12.0
django-treebeard==5.3.1
djangorestframework==3.18.3
draftjs_exporter==7.3.1
et_xmlfile==2.0.0
filetype==1.2.0
gunicorn==27.0.1
idna==3.20
laces==0.1.2
modelsearch==1.3.2
openpyxl==3.1.5
pillow==13.0.0
pillow_heif==1.8.1
psycopg==3.3.9
psycopg-binary==3.3.9
pydantic==2.14.4
pydantic_core==2.50.5
requests==2.34.2
soupsieve==2.10
sqlparse==0.6.1
swapper==1.5.0
telepath==0.3.1
typing-inspection==0.4.5
typing_extensions==4.16.0
urllib3==2.8.0
wagtail==8.0.1
Willow==1.12.0
EOF
    cd "$ROOT/wagtail"
    [ -f mysite/manage.py ] || bin/wagtail start mysite
    cd mysite
    cat > mysite/settings/local.py <<'EOF'
# benchlab acceptance: read by dev.py and production.py ("from .local import *").
import os

import dj_database_url

from .base import BASE_DIR

SECRET_KEY = os.environ.get("SECRET_KEY", "benchlab-acceptance-not-secret-0123456789abcdef")
ALLOWED_HOSTS = os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]").split(",")
DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=int(os.environ.get("CONN_MAX_AGE", "0")),
    )
}
EOF
    export DJANGO_SETTINGS_MODULE=mysite.settings.production
    [ -f static/staticfiles.json ] || ../bin/python manage.py collectstatic --noinput -v0
    ../bin/python manage.py migrate --noinput -v0
    unset DJANGO_SETTINGS_MODULE
    cat > tune-requests.toml <<'EOF'
[[request]]
path = "/"
contains = "Welcome to your new Wagtail site"
EOF
}

setup_ihatemoney() {  # 7. factory: ihatemoney.run:create_app() (Flask; imports requests too)
    venv ihatemoney ihatemoney==7.2.1 gunicorn==27.0.1 <<'EOF'
alembic==1.20.1
aniso8601==10.0.1
babel==2.18.0
blinker==1.9.0
cachetools==6.2.6
certifi==2026.10.19.post1
charset-normalizer==3.5.2
click==8.5.1
debts==0.5
Deprecated==1.3.1
dnspython==2.9.2
email-validator==2.3.0
Flask==3.1.3
flask-babel==4.0.0
flask-cors==6.0.5
Flask-Limiter==4.1.1
Flask-Mail==0.10.0
Flask-Migrate==4.1.0
Flask-RESTful==0.3.10
Flask-SQLAlchemy==3.1.1
flask-talisman==1.1.0
Flask-WTF==1.2.2
greenlet==3.5.6
gunicorn==27.0.1
idna==3.20
ihatemoney==7.2.1
itsdangerous==2.2.0
Jinja2==3.1.6
limits==5.8.0
Mako==1.4.3
MarkupSafe==3.0.4
ordered-set==4.1.0
packaging==26.3
python-dateutil==4.0.0
pytz==2026.6
qrcode==8.2
requests==2.32.5
six==1.17.0
SQLAlchemy==2.0.58
SQLAlchemy-Continuum==1.5.2
typing_extensions==4.16.0
tzdata==2026.6
urllib3==2.8.0
Werkzeug==3.1.9
wrapt==2.5.2
WTForms==3.2.2
EOF
    mkdir -p "$ROOT/ihatemoney/app" && cd "$ROOT/ihatemoney/app"
    cat > ihatemoney.cfg <<EOF
# benchlab acceptance: read through IHATEMONEY_SETTINGS_FILE_PATH (a Python file).
import os

SQLALCHEMY_DATABASE_URI = os.environ.get(
    "IHATEMONEY_DB", "sqlite:///$ROOT/ihatemoney/app/ihatemoney.db"
)
SECRET_KEY = os.environ.get("SECRET_KEY", "benchlab-acceptance-not-secret")
SESSION_COOKIE_SECURE = False
ACTIVATE_DEMO_PROJECT = True
EOF
    printf 'IHATEMONEY_SETTINGS_FILE_PATH=%s\n' "$PWD/ihatemoney.cfg" > env
    cat > seed.py <<'EOF'
# Seeds project "bench" (4 members, 200 bills) through ihatemoney's own REST API, in-process
# (Flask test client, no server; idempotent), and prints its Bearer token.
import base64
from ihatemoney.run import create_app

app = create_app()
c = app.test_client()
basic = {"Authorization": "Basic " + base64.b64encode(b"bench:bench-pw").decode()}
r = c.get("/api/projects/bench", headers=basic)
if r.status_code != 200:
    r = c.post("/api/projects", data={"name": "bench", "id": "bench", "password": "bench-pw",
                                        "contact_email": "bench@example.com", "default_currency": "XXX"})
    assert r.status_code == 201, (r.status_code, r.data)
    ids = []
    for name in ["alice", "bob", "carol", "dave"]:
        r = c.post("/api/projects/bench/members", data={"name": name}, headers=basic)
        ids.append(int(r.data))
    for i in range(200):
        r = c.post("/api/projects/bench/bills", headers=basic, data={
            "date": f"2026-01-{i % 28 + 1:02d}", "what": f"bill {i}", "payer": ids[i % 4],
            "payed_for": ids[: 2 + i % 3], "amount": f"{10 + i % 50}.{i % 100:02d}"})
        assert r.status_code == 201, (r.status_code, r.data)
print(c.get("/api/projects/bench/token", headers=basic).get_json()["token"])
EOF
    local token
    token=$(IHATEMONEY_SETTINGS_FILE_PATH="$PWD/ihatemoney.cfg" ../bin/python -W ignore seed.py 2>/dev/null | tail -1)
    cat > tune-requests.toml <<EOF
[[request]]
path = "/api/projects/bench/statistics"
headers = { Authorization = "Bearer $token" }
contains = '"name": "alice"'
EOF
}

setup_wsgidav() {  # extra bare WSGI: WsgiDAV (Content-Length) and prometheus_client (none)
    venv wsgidav wsgidav==4.4.0 prometheus-client==0.26.0 gunicorn==27.0.1 <<'EOF'
defusedxml==0.7.1
gunicorn==27.0.1
Jinja2==3.1.6
json5==0.17.3
MarkupSafe==3.0.4
prometheus_client==0.26.0
PyYAML==6.0.4
wsgidav==4.4.0
EOF
    mkdir -p "$ROOT/wsgidav/app/share/docs" && cd "$ROOT/wsgidav/app"
    for i in $(seq 1 20); do
        [ -f "share/docs/note-$i.txt" ] || seq -f "note $i line %g" 1 50 > "share/docs/note-$i.txt"
    done
    # A 256-KiB file, which WsgiDAV's GET streams in 8-KiB blocks (its response is a
    # generator of 32 reads: the streaming endpoint of the set); its last line is the check.
    mkdir -p share/media
    [ -f share/media/track.txt ] || {
        seq -f "%015g 0123456789abcdef0123456789abcdef0123456789abcde" 1 4095
        printf '%-63s\n' "end of track.txt: 4,096 lines of 64 bytes, 256 KiB"
    } > share/media/track.txt
    cat > app.py <<'EOF'
from pathlib import Path

from wsgidav.wsgidav_app import WsgiDAVApp

app = WsgiDAVApp({
    "provider_mapping": {"/": str(Path(__file__).with_name("share"))},
    "simple_dc": {"user_mapping": {"*": True}},  # anonymous access
    "verbose": 1,
    "logging": {"enable": False},
})
EOF
    cat > metrics.py <<'EOF'
from prometheus_client import make_wsgi_app

app = make_wsgi_app()
EOF
    cat > tune-requests.toml <<'EOF'
[[request]]
path = "/media/track.txt"
contains = "end of track.txt"
EOF
}

# The import check of each app, as `benchlab tune` would import it (from the app's root).
setup_pypiserver() {  # 9. Bottle, loaded by its factory with arguments: a PyPI index
    venv pypiserver pypiserver==2.4.2 gunicorn==27.0.1 <<'EOF'
defusedxml==0.7.1
gunicorn==27.0.1
importlib_resources==7.1.0
packaging==26.3
pypiserver==2.4.2
EOF
    mkdir -p "$ROOT/pypiserver/app/packages" && cd "$ROOT/pypiserver/app"
    # A hundred small packages to list: an index's /simple/ page reads the directory each time.
    for i in $(seq -w 1 100); do
        [ -f "packages/pkg$i-1.0.$i.tar.gz" ] || : > "packages/pkg$i-1.0.$i.tar.gz"
    done
    cat > tune-requests.toml <<'EOF'
[[request]]
path = "/simple/pkg042/"
contains = "pkg042-1.0.042.tar.gz"
weight = 3

[[request]]
path = "/simple/"
contains = "pkg100"
EOF
}

setup_drf() {  # 10. Django REST framework's quickstart API, on PostgreSQL (DATABASE_URL)
    venv drf Django==5.2.19 djangorestframework==3.18.3 dj-database-url==3.1.2 \
        'psycopg[binary]==3.3.9' gunicorn==27.0.1 <<'EOF'
asgiref==3.13.0
dj-database-url==3.1.2
Django==5.2.19
djangorestframework==3.18.3
gunicorn==27.0.1
psycopg==3.3.9
psycopg-binary==3.3.9
sqlparse==0.6.1
typing_extensions==4.16.0
EOF
    cd "$ROOT/drf"
    [ -f tutorial/manage.py ] || bin/django-admin startproject tutorial
    cd tutorial
    mkdir -p quickstart && touch quickstart/__init__.py
    # The quickstart's serializers and views (www.django-rest-framework.org/tutorial/quickstart/).
    cat > quickstart/serializers.py <<'EOF'
from django.contrib.auth.models import Group, User
from rest_framework import serializers


class UserSerializer(serializers.HyperlinkedModelSerializer):
    class Meta:
        model = User
        fields = ["url", "username", "email", "groups"]


class GroupSerializer(serializers.HyperlinkedModelSerializer):
    class Meta:
        model = Group
        fields = ["url", "name"]
EOF
    cat > quickstart/views.py <<'EOF'
from django.contrib.auth.models import Group, User
from rest_framework import permissions, viewsets

from quickstart.serializers import GroupSerializer, UserSerializer


class UserViewSet(viewsets.ModelViewSet):
    queryset = User.objects.all().order_by("-date_joined")
    serializer_class = UserSerializer
    permission_classes = [permissions.IsAuthenticatedOrReadOnly]


class GroupViewSet(viewsets.ModelViewSet):
    queryset = Group.objects.all().order_by("name")
    serializer_class = GroupSerializer
    permission_classes = [permissions.IsAuthenticatedOrReadOnly]
EOF
    cat > tutorial/urls.py <<'EOF'
from django.urls import include, path
from rest_framework import routers

from quickstart import views

router = routers.DefaultRouter()
router.register(r"users", views.UserViewSet)
router.register(r"groups", views.GroupViewSet)

urlpatterns = [path("", include(router.urls))]
EOF
    grep -q 'benchlab acceptance' tutorial/settings.py || cat >> tutorial/settings.py <<'EOF'

# --- benchlab acceptance: the quickstart's settings, production-style from the environment ---
import os  # noqa: E402

import dj_database_url  # noqa: E402

INSTALLED_APPS += ["rest_framework"]
REST_FRAMEWORK = {
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 10,
}
SECRET_KEY = os.environ.get("SECRET_KEY", SECRET_KEY)
DEBUG = os.environ.get("DJANGO_DEBUG", "") == "1"
ALLOWED_HOSTS = os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]").split(",")
DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=int(os.environ.get("CONN_MAX_AGE", "0")),
    )
}
EOF
    cat > bench_seed.py <<'EOF'
# Seed for benchlab acceptance (run once after migrate, idempotent): 200 users in 5 groups.
from django.contrib.auth.models import Group, User

groups = [Group.objects.get_or_create(name=f"group {g}")[0] for g in range(5)]
for i in range(200):
    user, made = User.objects.get_or_create(username=f"user{i:03d}",
                                            defaults={"email": f"user{i:03d}@example.com"})
    if made:
        user.groups.add(groups[i % 5])
print("users", User.objects.count())
EOF
    cat > tune-requests.toml <<'EOF'
[[request]]
path = "/users/?page=3"
json_key = "results"
weight = 3

[[request]]
path = "/groups/"
contains = "group 4"
EOF
}

setup_ariadne() {  # 11. ASGI GraphQL (Ariadne, on Starlette's toolkit): a POST with a JSON body
    venv ariadne ariadne==1.1.1 uvicorn==0.54.0 gunicorn==27.0.1 <<'EOF'
anyio==4.16.0
ariadne==1.1.1
click==8.5.1
graphql-core==3.3.2
gunicorn==27.0.1
h11==0.16.0
idna==3.20
starlette==1.10.0
typing_extensions==4.16.0
uvicorn==0.54.0
EOF
    mkdir -p "$ROOT/ariadne/app" && cd "$ROOT/ariadne/app"
    # The schema of Ariadne's introduction (ariadnegraphql.org/docs/intro), with a list field.
    cat > app.py <<'EOF'
from ariadne import QueryType, gql, make_executable_schema
from ariadne.asgi import GraphQL

type_defs = gql("""
    type Query {
        hello: String!
        books(first: Int!): [Book!]!
    }
    type Book {
        id: ID!
        title: String!
    }
""")
query = QueryType()


@query.field("hello")
def resolve_hello(_, info):
    return "Hello, " + info.context["request"].headers.get("user-agent", "guest") + "!"


@query.field("books")
def resolve_books(_, info, first):
    return [{"id": i, "title": f"Book {i}"} for i in range(first)]


app = GraphQL(make_executable_schema(type_defs, query))
EOF
    cat > tune-requests.toml <<'EOF'
[[request]]
method = "POST"
path = "/"
headers = { "Content-Type" = "application/json" }
body = '{"query": "{ hello books(first: 20) { id title } }"}'
contains = "Book 19"
EOF
}

setup_rqdashboard() {  # 12. a job queue's dashboard on Redis (REDIS_URL), by its factory
    # rq-dashboard 0.9.0 imports six (web.py) without declaring it: installed by name.
    venv rqdashboard rq-dashboard==0.9.0 six==1.17.0 gunicorn==27.0.1 <<'EOF'
arrow==1.4.0
async-timeout==5.0.1
blinker==1.9.0
click==8.5.1
croniter==7.0.0
Flask==3.1.3
gunicorn==27.0.1
itsdangerous==2.2.0
Jinja2==3.1.6
MarkupSafe==3.0.4
python-dateutil==4.0.0
redis==8.1.0
Redis-Sentinel-Url==1.0.1
rq==3.0.0
rq-dashboard==0.9.0
six==1.17.0
tzdata==2026.6
Werkzeug==3.1.9
EOF
    mkdir -p "$ROOT/rqdashboard/app" && cd "$ROOT/rqdashboard/app"
    # The state the dashboard shows lives in Redis only: tune's --setup enqueues it, and
    # every candidate must still see it (issue 58: tune used to flush Redis between them).
    cat > enqueue.py <<'EOF'
# Enqueues 30 jobs on queue "benchlab-jobs" in the Redis of REDIS_URL (no worker runs them).
import os

from redis import Redis
from rq import Queue

queue = Queue("benchlab-jobs", connection=Redis.from_url(os.environ["REDIS_URL"]))
for i in range(30):
    queue.enqueue("builtins.len", "x" * i, job_id=f"benchlab-job-{i:02d}")
print(queue.name, len(queue), "jobs")
EOF
}

setup_sqladmin() {  # 13. ASGI (Starlette) that writes its SQLite database beside itself on import
    venv sqladmin sqladmin==0.32.0 'SQLAlchemy[asyncio]==2.1.9' uvicorn==0.54.0 gunicorn==27.0.1 <<'EOF'
anyio==4.16.0
click==8.5.1
greenlet==3.5.6
gunicorn==27.0.1
h11==0.16.0
idna==3.20
Jinja2==3.1.6
MarkupSafe==3.0.4
python-multipart==0.0.34
sqladmin==0.32.0
SQLAlchemy==2.1.9
starlette==1.10.0
typing_extensions==4.16.0
uvicorn==0.54.0
WTForms==3.2.2
EOF
    mkdir -p "$ROOT/sqladmin/app" && cd "$ROOT/sqladmin/app"
    # sqladmin's README quickstart, as published: importing it creates example.db in the
    # directory it runs from (create_all), so the app must be able to write there.
    cat > app.py <<'EOF'
from sqlalchemy import Column, Integer, String, create_engine
from sqlalchemy.orm import declarative_base
from starlette.applications import Starlette
from sqladmin import Admin, ModelView

Base = declarative_base()
engine = create_engine(
    "sqlite:///example.db",
    connect_args={"check_same_thread": False},
)


class User(Base):
    __tablename__ = "users"

    id = Column(Integer, primary_key=True)
    name = Column(String)


Base.metadata.create_all(engine)  # Create tables

app = Starlette()
admin = Admin(app, engine)


class UserAdmin(ModelView, model=User):
    column_list = [User.id, User.name]


admin.add_view(UserAdmin)
EOF
    cat > seed.py <<'EOF'
# Seeds 200 users into example.db (idempotent), through the app's own models.
from sqlalchemy.orm import Session

from app import User, engine

with Session(engine) as session:
    if session.query(User).count() == 0:
        session.add_all(User(name=f"member {i:03d}") for i in range(200))
        session.commit()
    print("users", session.query(User).count())
EOF
    cat > tune-requests.toml <<'EOF'
[[request]]
path = "/admin/user/list?page=2&pageSize=25"
contains = "member 02"
EOF
}

check() {
    local name=$1 dir=$2 code=$3; shift 3
    printf '%-11s ' "$name"
    (cd "$ROOT/$dir" && env "$@" "$ROOT/$name/bin/python" -W ignore -c "$code" 2>&1 | grep -v '^INFO\|WARNING in core' | tail -1)
}

for app in "${APPS[@]}"; do
    say "$app"
    ( "setup_$app" )
done

say "import checks"
for app in "${APPS[@]}"; do
    case $app in
    httpbin) check httpbin httpbin 'from httpbin import app; print(type(app))' ;;
    django) check django django/mysite 'from mysite.wsgi import application; print(type(application))' ;;
    datasette) check datasette datasette/app 'from app import app; print(type(app))' ;;
    radicale) check radicale radicale/app 'from radicale import application; print(type(application))' \
        RADICALE_CONFIG="$ROOT/radicale/app/radicale.conf" ;;
    kinto) check kinto kinto/app 'from app import app; print(type(app))' ;;
    wagtail) check wagtail wagtail/mysite \
        'import sys; from mysite.wsgi import application; print(type(application), "requests" in sys.modules)' \
        DJANGO_SETTINGS_MODULE=mysite.settings.production ;;
    ihatemoney) check ihatemoney ihatemoney/app \
        'import sys; from ihatemoney.run import create_app; print(type(create_app()), "requests" in sys.modules)' \
        IHATEMONEY_SETTINGS_FILE_PATH="$ROOT/ihatemoney/app/ihatemoney.cfg" ;;
    wsgidav) check wsgidav wsgidav/app 'from app import app; from metrics import app as m; print(type(app), m)' ;;
    pypiserver) check pypiserver pypiserver/app 'import pypiserver; print(type(pypiserver.app(roots=["packages"])))' ;;
    drf) check drf drf/tutorial 'from tutorial.wsgi import application; print(type(application))' ;;
    ariadne) check ariadne ariadne/app 'from app import app; print(type(app))' ;;
    rqdashboard) check rqdashboard rqdashboard/app \
        'from rq_dashboard.app import create_app; print(type(create_app()))' REDIS_URL=redis://127.0.0.1:1/0 ;;
    sqladmin) (cd "$ROOT/sqladmin/app" && rm -f example.db)  # tune's import writes it, as its owner
        check sqladmin sqladmin/app 'import os, app; print(type(app.app), os.path.exists("example.db"))'
        rm -f "$ROOT/sqladmin/app/example.db" ;;
    esac
done
