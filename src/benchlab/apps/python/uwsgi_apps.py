"""The WSGI apps as uWSGI serves them: uWSGI sends no Date header, which HTTP/1.1 asks of an
origin server (and the contract checks), so a wrapper adds one, formatted once a second."""

import importlib
import os
import time
from email.utils import formatdate

_date = {"second": 0, "value": ""}


def with_date(app):
    def wrapped(environ, start_response):
        second = int(time.time())
        if second != _date["second"]:
            _date["second"], _date["value"] = second, formatdate(second, usegmt=True)

        def start(status, headers, exc_info=None):
            return start_response(status, [*headers, ("Date", _date["value"])], exc_info)

        return app(environ, start)

    return wrapped


# uWSGI looks the callable up in the module's dict: the app module comes from the environment.
application = with_date(importlib.import_module(os.environ["BENCHLAB_WSGI_MODULE"]).app)
