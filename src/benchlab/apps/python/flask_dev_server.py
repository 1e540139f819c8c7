"""Flask's development server (Werkzeug), as the articles ran it: labelled as such, never a
production choice. python flask_dev_server.py HOST PORT [async]"""

import os
import sys

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler


class QuietRequestHandler(WSGIRequestHandler):
    """Access log off, as on every other stack (Werkzeug writes a line per request)."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass


if __name__ == "__main__":
    host, port = sys.argv[1], int(sys.argv[2])
    if len(sys.argv) > 3 and sys.argv[3] == "async":
        from flask_async_views import app
    else:
        from flask_app import app
    # The same listen backlog as every other stack (Werkzeug's own is 128).
    BaseWSGIServer.request_queue_size = int(os.environ.get("BENCHLAB_BACKLOG", "2048"))
    # threaded=True is Flask's default for app.run: a thread per request.
    app.run(
        host=host,
        port=port,
        threaded=True,
        debug=False,
        use_reloader=False,
        request_handler=QuietRequestHandler,
    )
