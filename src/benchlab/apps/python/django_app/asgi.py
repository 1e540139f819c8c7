import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django_app.settings")
os.environ.setdefault("BENCHLAB_DJANGO_ASGI", "1")
application = get_asgi_application()
