"""A tune's subject found and checked before anything runs (`prepare_tune`): a Python app
imported in the user's interpreter with its --with services' addresses fixed, a --command's
template and --grid read, an endpoint's answers checked; what only a Python app takes
refused for the others, and --cpus/--memory refused where the kernel cannot enforce them.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchlab.analysis.target import Target
from benchlab.analysis.tune_options import SubjectKind
from benchlab.core.errors import UserError
from benchlab.core.service_kinds import Service
from benchlab.core.service_kinds import named as service_named
from benchlab.services import planned_address, reserve
from benchlab.services.base import Reserved
from benchlab.system.cpu_account import LimitsUnavailable, create_group
from benchlab.system.process import free_port
from benchlab.system.users import stack_user
from benchlab.tune import app as app_module
from benchlab.tune.command import CommandTemplate, check_template, command_owner
from benchlab.tune.endpoint import Endpoint, check_answers, parse_url
from benchlab.tune.plan import TuneRequest
from benchlab.tune.subject import PythonApp, Subject


@dataclass(frozen=True)
class PreparedTune:
    """The subject found and checked (a Python app imported, a command's template read, an
    endpoint's answers checked), before the machine is claimed or a store made: a mistyped
    path or a missing module costs neither."""

    subject: Subject
    reserved: dict[Service, Reserved]  # the --with services' addresses, fixed


def prepare_tune(request: TuneRequest) -> PreparedTune:
    kind = request.subject_kind
    if kind is not SubjectKind.PYTHON_APP:
        _refuse_for_others(request, kind)
    if kind is SubjectKind.ENDPOINT:
        url = parse_url(request.app)
        check_answers(url, list(request.requests))
        return PreparedTune(Endpoint(url, request.watch), {})
    if kind is SubjectKind.COMMAND:
        assert request.command is not None
        check_template(request.command, request.grid)
        _check_limits(request.target)
        cwd = request.cwd.resolve()
        owner = command_owner(request.command, request.grid, cwd, request.env_file)
        subject = CommandTemplate(
            request.command, request.grid, cwd, request.env, request.env_file,
            request.env_from_file, owner,
        )  # fmt: skip
        return PreparedTune(subject, {})
    return _prepare_app(request)


def _refuse_for_others(request: TuneRequest, kind: SubjectKind) -> None:
    """What only a Python app takes, refused for a command or an endpoint (one line)."""
    python_only = {
        "--with": bool(request.with_services), "--setup": bool(request.setup),
        "--reset-between": bool(request.reset_between), "--factory": request.factory,
        "--interface": request.interface is not None,
        "--servers": request.servers is not None, "--workers": request.workers is not None,
        "--threads": request.threads is not None, "--greenlets": request.greenlets is not None,
        "--check-answer": request.check_answer is not None,
        "--request 'WS …'": request.echo is not None,
    }  # fmt: skip
    if kind is SubjectKind.ENDPOINT:
        python_only |= {
            "--cpus/--memory": request.target.limited,
            "--env": bool(request.env),
            "--env-file": request.env_file is not None,
        }
    if kind is SubjectKind.COMMAND:
        python_only["--pid/--cgroup/--unit"] = request.watch is not None
    given = [name for name, set_ in python_only.items() if set_]
    if given:
        what = kind.words
        fix = (
            "its knobs go in --grid"
            if kind is SubjectKind.COMMAND
            else "it is measured as it runs, with the settings it was started with"
        )
        raise UserError(f"{given[0]}: not for {what} ({fix}); drop it")


def _prepare_app(request: TuneRequest) -> PreparedTune:
    spec = app_module.parse_app(request.app, request.cwd, request.factory)
    env_file = (request.env_file, request.env_from_file) if request.env_file else None
    owner = app_module.app_owner(spec, request.python, request.cwd)
    user = stack_user(owner)  # None unless benchlab is root
    # The --with services' addresses, fixed now: the app is imported with them, as its
    # candidates will be (an app that reads REDIS_URL at import must find it).
    reserved = reserve([service_named(name) for name in request.with_services], free_port)
    planned = {
        variable: planned_address(service, reserved[service])
        for name, variable in request.with_services.items()
        if variable and (service := service_named(name)) in reserved
    }
    info = app_module.probe(
        spec, request.python, request.env, request.interface, request.cwd, env_file, user,
        planned,
    )  # fmt: skip
    if request.echo is not None and info.interface != "asgi":
        raise UserError(
            f"--request '{request.echo.describe()}': {spec.factory_target} is a "
            f"{info.interface.upper()} app, and WSGI has no WebSockets; tune its ASGI app "
            "(--interface asgi if it is one), or drop the WS request"
        )
    _check_limits(request.target)
    subject = PythonApp(
        spec, info, request.servers, request.workers, request.threads, request.greenlets,
        request.python_source, owner,
    )  # fmt: skip
    return PreparedTune(subject, reserved)


def _check_limits(target: Target) -> None:
    """--cpus and --memory are the kernel's to enforce: said now if it cannot here."""
    if not target.limited:
        return
    try:
        group = create_group(limits=target.limits)
    except LimitsUnavailable as why:
        raise UserError(
            f"--cpus/--memory: {why}; the limits are set on a control group, as a container "
            "runtime does: run benchlab as root, or drop them"
        ) from None
    if group is not None:
        group.remove()
