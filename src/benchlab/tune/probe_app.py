"""Run by the user's own interpreter (never benchlab's): import the app, say what it is and
which servers this environment has. Standard library only; prints one JSON line.

    python probe_app.py MODULE ATTR
"""

import importlib
import importlib.util
import inspect
import json
import resource
import sys
import traceback

SERVERS = {
    "uvicorn": "uvicorn",
    "gunicorn": "gunicorn",
    "gevent": "gevent",
    "uvicorn-worker": "uvicorn_worker",
    "granian": "granian",
    "hypercorn": "hypercorn",
    "waitress": "waitress",
    "uwsgi": "pyuwsgi",
    "uvloop": "uvloop",
}


def interface(app):
    """asgi, wsgi, or None: ASGI apps are awaitable with (scope, receive, send), WSGI apps
    callable with (environ, start_response)."""
    target = app if inspect.isfunction(app) or inspect.ismethod(app) else type(app).__call__
    if not callable(app):
        return None
    if inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(app):
        return "asgi"
    try:
        params = [
            p
            for p in inspect.signature(app).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return None
    if len(params) == 3:
        return "asgi"  # an ASGI app written as a class with a sync-looking __call__ wrapper
    if len(params) == 2:
        return "wsgi"
    return None


def main():
    module_name, attr = sys.argv[1], sys.argv[2]
    sys.path.insert(0, ".")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = {
        "python": ".".join(map(str, sys.version_info[:3])),
        "executable": sys.executable,
        "servers": {
            name: importlib.util.find_spec(mod) is not None for name, mod in SERVERS.items()
        },
    }
    try:
        module = importlib.import_module(module_name)
    except BaseException as exc:
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        out["error"] = f"import of '{module_name}' failed: {last}"
        print(json.dumps(out))
        return
    app = getattr(module, attr, None)
    if app is None:
        names = [n for n in dir(module) if not n.startswith("_")]
        out["error"] = (
            f"module '{module_name}' has no attribute '{attr}' (it has: {', '.join(names[:12])})"
        )
    else:
        out["interface"] = interface(app)
        out["kind"] = type(app).__name__
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["import_rss_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    print(json.dumps(out))


main()
