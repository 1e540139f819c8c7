"""Run by the user's own interpreter (never benchlab's), as `python -c <this file's text>
REQUEST` from the app's root, so that nothing of benchlab's is on its path: import the app
(calling its factory if it has one), say what it is and which servers this environment has.
Standard library only (Python 3.8+); prints one JSON line that starts with {"probe".

REQUEST is JSON: {"module": "pkg.wsgi", "attr": "application", "call": null or "(...)",
"servers": {name: module to import}, "distributions": {name: distribution, where it differs}}
(the servers as benchlab/stacks/servers.py declares them).
"""

import ast
import contextlib
import importlib
import importlib.util
import inspect
import json
import os
import resource
import sys
import traceback


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


def chain(exc):
    """The exception and its causes, outermost first (`raise ... from`, or raised while
    handling another)."""
    found = []
    while exc is not None and all(exc is not seen for seen in found):
        found.append(exc)
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return found


def described(exc):
    """Type: message (file:line where it was raised; a syntax error's: the user's file and
    line with its text, not the importer's frame that compiled it)."""
    text = traceback.format_exception_only(type(exc), exc)[-1].strip()
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        line = (exc.text or "").strip()
        return f"{text} ({exc.filename}:{exc.lineno}" + (f": {line!r})" if line else ")")
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        text += f" ({frames[-1].filename}:{frames[-1].lineno})"
    return text


def root_cause(exc):
    """The innermost exception of the chain, then the outer one when it says more."""
    found = chain(exc)
    inner, outer = found[-1], found[0]
    text = described(inner)
    outer_message = str(outer)
    if outer is not inner and outer_message and outer_message not in str(inner):
        text += f"; raised again as {type(outer).__name__}: {outer_message}"
    return text


def call_arguments(call):
    expression = ast.parse("f" + call, mode="eval").body
    args = [ast.literal_eval(a) for a in expression.args]
    kwargs = {k.arg: ast.literal_eval(k.value) for k in expression.keywords}
    return args, kwargs


def versions(app, servers, distributions):
    """The versions that define the tune's cells: each server this environment has (by its
    distribution's name, where `distributions` says it differs), and the distribution the app
    object's class comes from (flask, django, fastapi...)."""
    from importlib import metadata

    names = [distributions.get(name, name) for name, present in servers.items() if present]
    top = type(app).__module__.split(".")[0] if app is not None else ""
    owners = getattr(metadata, "packages_distributions", None)  # Python 3.10+
    if owners is not None and top not in ("builtins", "__main__"):
        # A broken distribution's metadata: the framework's version is just not known.
        with contextlib.suppress(Exception):
            names += owners().get(top, [])
    found = {}
    for name in dict.fromkeys(names):
        try:
            found[name] = metadata.version(name)
        except Exception:
            continue
    return found


def shadowing(module, module_name, root):
    """Why the module imported is not the app's own file of that name (one Python loads first:
    io.py, a standard module), or None."""
    base = os.path.join(root, *module_name.split("."))
    own = [p for p in (base + ".py", os.path.join(base, "__init__.py")) if os.path.exists(p)]
    found = getattr(module, "__file__", None)
    if not own or (found and os.path.realpath(found) in map(os.path.realpath, own)):
        return None
    where = found or "built into Python"
    return (
        f"'{module_name}' is another module of that name ({where}), not {own[0]}: Python "
        f"loads its own '{module_name}' first; rename the file (e.g. {module_name}_app.py)"
    )


def main():
    request = json.loads(sys.argv[1])
    module_name, attr, call = request["module"], request["attr"], request.get("call")
    root = os.getcwd()
    # As a server started here would have it: the app's root first, and '' (which -c puts
    # there) gone, so that a later chdir cannot change what is importable.
    sys.path[:] = [root, *(p for p in sys.path if p not in ("", root))]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = {
        "probe": 1,
        "python": ".".join(map(str, sys.version_info[:3])),
        "executable": sys.executable,
        "servers": {
            name: importlib.util.find_spec(mod) is not None
            for name, mod in request["servers"].items()
        },
    }
    shown = f"{module_name}:{attr}{call or ''}"
    try:
        module = importlib.import_module(module_name)
    except BaseException as exc:
        out["error"] = f"import of '{module_name}' failed: {root_cause(exc)}"
        out["traceback"] = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        print(json.dumps(out))
        return
    shadowed = shadowing(module, module_name, root)
    app = None if shadowed else getattr(module, attr, None)
    if shadowed:
        out["error"] = shadowed
    elif app is None:
        names = [n for n in dir(module) if not n.startswith("_")]
        out["error"] = (
            f"module '{module_name}' has no attribute '{attr}' (it has: {', '.join(names[:12])})"
        )
    elif call is not None:
        try:
            args, kwargs = call_arguments(call)
            app = app(*args, **kwargs)
        except BaseException as exc:
            out["error"] = f"the factory '{shown}' failed: {root_cause(exc)}"
            out["traceback"] = "".join(
                traceback.format_exception(type(exc), exc, exc.__traceback__)
            )
            app = None
    if app is not None:
        out["interface"] = interface(app)
        out["kind"] = type(app).__name__
    out["versions"] = versions(app, out["servers"], request.get("distributions", {}))
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["import_rss_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    print(json.dumps(out))


main()
