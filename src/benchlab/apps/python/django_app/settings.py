"""Django settings for the reference app: DEBUG off, no middleware, the database of the run.

Under WSGI (gunicorn) connections persist (CONN_MAX_AGE=None). Under ASGI (uvicorn) Django's
docs say to turn persistence off and use the backend's own pool where it has one: PostgreSQL's
(Django 5.1+, psycopg 3); MariaDB has none in Django, so under ASGI it connects per request.
"""

import os

DEBUG = False
ALLOWED_HOSTS = ["*"]
SECRET_KEY = "benchlab-reference-app-not-a-secret"
ROOT_URLCONF = "django_app.urls"
INSTALLED_APPS: list[str] = []
MIDDLEWARE: list[str] = []  # none: under ASGI, any sync middleware forces a thread per request
USE_TZ = True
LOGGING_CONFIG = None
# The fortunes page: Django's own engine, its template compiled once from a string (views.py).
TEMPLATES = [
    {"BACKEND": "django.template.backends.django.DjangoTemplates", "DIRS": [], "APP_DIRS": False}
]
DATA_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024 * 1024  # the upload scenario's largest body (64 MiB)

ASGI = os.environ.get("BENCHLAB_DJANGO_ASGI") == "1"
POOL_SIZE = int(os.environ.get("BENCHLAB_POOL_SIZE", "10"))
DB = os.environ.get("BENCHLAB_DB")

DATABASES: dict = {}
if DB == "postgres" and os.environ.get("BENCHLAB_PG_PORT"):
    DATABASES["default"] = {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": os.environ["BENCHLAB_PG_HOST"],
        "PORT": os.environ["BENCHLAB_PG_PORT"],
        "NAME": "benchlab",
        "USER": "benchlab",
        "PASSWORD": os.environ.get("BENCHLAB_PG_PASSWORD", ""),
        "CONN_MAX_AGE": 0 if ASGI else None,
        "OPTIONS": {"pool": {"min_size": POOL_SIZE, "max_size": POOL_SIZE}} if ASGI else {},
    }
elif DB == "mariadb" and os.environ.get("BENCHLAB_MY_PORT"):
    import pymysql

    pymysql.install_as_MySQLdb()  # Django's MySQL backend on PyMySQL instead of mysqlclient
    DATABASES["default"] = {
        "ENGINE": "django.db.backends.mysql",
        "HOST": os.environ["BENCHLAB_MY_HOST"],
        "PORT": os.environ["BENCHLAB_MY_PORT"],
        "NAME": "benchlab",
        "USER": "benchlab",
        "PASSWORD": os.environ.get("BENCHLAB_MY_PASSWORD", ""),
        "CONN_MAX_AGE": 0 if ASGI else None,
    }
