from django.conf import settings
from django.urls import path

from django_app import views

if settings.ASGI:
    urlpatterns = [
        path("plaintext", views.async_plaintext),
        path("json", views.async_json),
        path("db", views.async_db),
        path("db-delay", views.async_db_delay),
        path("cache/<str:username>", views.async_cache),
        path("sleep", views.async_sleep),
    ]
else:
    urlpatterns = [
        path("plaintext", views.plaintext),
        path("json", views.json_endpoint),
        path("db", views.db),
        path("db-delay", views.db_delay),
        path("cache/<str:username>", views.cache),
        path("sleep", views.sleep),
    ]
