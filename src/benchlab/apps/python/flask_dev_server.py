"""Flask's development server (Werkzeug), as the articles ran it: labelled as such, never a
production choice. python flask_dev_server.py HOST PORT [async]"""

import sys

if __name__ == "__main__":
    host, port = sys.argv[1], int(sys.argv[2])
    if len(sys.argv) > 3 and sys.argv[3] == "async":
        from flask_async_views import app
    else:
        from flask_app import app
    # threaded=True is Flask's default for app.run: a thread per request.
    app.run(host=host, port=port, threaded=True, debug=False, use_reloader=False)
