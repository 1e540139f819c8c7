import os

import benchlab_backend as backend
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django_app.settings")
application = get_wsgi_application()
if backend.STATIC_DIR:
    from whitenoise import WhiteNoise

    # WhiteNoise indexes the directory now: benchlab writes the files before it starts us.
    application = WhiteNoise(application, root=backend.STATIC_DIR, prefix="static/")
