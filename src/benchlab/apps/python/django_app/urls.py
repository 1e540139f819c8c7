from django.conf import settings
from django.urls import path

from django_app import views

# /static/ is not a view: WhiteNoise serves it around the WSGI application (wsgi.py); under
# ASGI nothing does (WhiteNoise 6 is WSGI only, and Django serves no files in production).

if settings.ASGI:
    urlpatterns = [
        path("plaintext", views.async_plaintext),
        path("json", views.async_json),
        path("db", views.async_db),
        path("db-delay", views.async_db_delay),
        path("cache/<str:username>", views.async_cache),
        path("sleep", views.async_sleep),
        path("fortunes", views.async_fortunes),
        path("queries", views.async_queries),
        path("updates", views.async_updates),
        path("upload", views.async_upload),
        path("gzip/json", views.async_gzip_json),
    ]
else:
    urlpatterns = [
        path("plaintext", views.plaintext),
        path("json", views.json_endpoint),
        path("db", views.db),
        path("db-delay", views.db_delay),
        path("cache/<str:username>", views.cache),
        path("sleep", views.sleep),
        path("fortunes", views.fortunes),
        path("queries", views.queries),
        path("updates", views.updates),
        path("upload", views.upload),
        path("gzip/json", views.gzip_json),
    ]
