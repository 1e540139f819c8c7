"""nginx returning the contract's bytes itself: the ceiling of this machine."""

from __future__ import annotations

import signal

from benchlab.http.scenarios import SCENARIOS, Expectation
from benchlab.stacks.base import Launch, LaunchContext, Stack
from benchlab.stacks.servers import LISTEN_BACKLOG

NGINX_BINARY = "/usr/sbin/nginx"


PLAINTEXT = SCENARIOS["plaintext"].expectations()[0]
JSON = SCENARIOS["json"].expectations()[0]


def _exact_body(expectation: Expectation) -> str:
    """The body nginx returns itself: these scenarios' answers are exact, never unchecked."""
    assert expectation.body is not None, expectation.path
    return expectation.body.decode()


PLAINTEXT_BODY, JSON_BODY = _exact_body(PLAINTEXT), _exact_body(JSON)


def nginx_config(work, workers: int, http_body: str, modules: tuple[str, ...] = ()) -> str:
    """What every nginx of benchlab shares: in the foreground, files under `work`, no access
    log, keep-alive that never cuts a load tool's connection; `http_body` adds the rest."""
    temp = "\n".join(
        f"    {kind}_temp_path {work}/{kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    loads = "".join(f"load_module {m};\n" for m in modules)
    return f"""{loads}
daemon off;
master_process on;
worker_processes {workers};
pid {work}/nginx.pid;
error_log {work}/error.log warn;
events {{ worker_connections 16384; }}
http {{
    access_log off;
{temp}
    keepalive_requests 10000000;
    keepalive_timeout 120s;
{http_body}
}}
"""


def nginx_launch(work, config_text: str) -> Launch:
    config = work / "nginx.conf"
    config.write_text(config_text)
    return Launch(argv=[NGINX_BINARY, "-p", str(work), "-c", str(config), "-e", "stderr"])


def static_config(ctx: LaunchContext) -> str:
    return nginx_config(
        ctx.workdir,
        ctx.workers,
        f"""    server {{
        listen {ctx.host}:{ctx.port} backlog={LISTEN_BACKLOG};
        location = {PLAINTEXT.path} {{
            default_type {PLAINTEXT.content_type};
            return 200 '{PLAINTEXT_BODY}';
        }}
        location = {JSON.path} {{
            default_type {JSON.content_type};
            return 200 '{JSON_BODY}';
        }}{_static_files(ctx)}
    }}""",
    )


def _static_files(ctx: LaunchContext) -> str:
    """The static scenario's files, served from disk: the ceiling for a framework's own
    static handler."""
    if ctx.static_dir is None:
        return ""
    return f"""
        location /static/ {{
            alias {ctx.static_dir}/;
            default_type application/octet-stream;
        }}"""


def _nginx_static(ctx: LaunchContext) -> Launch:
    return nginx_launch(ctx.workdir, static_config(ctx))


NGINX_STACKS: tuple[Stack, ...] = (
    Stack(
        name="nginx-static",
        framework="none (nginx return)",
        server="nginx",
        worker_model="event loop per worker process",
        scenarios=("plaintext", "json", "static"),
        unserved=tuple(
            (name, "nginx answers fixed bytes and files: no application runs behind it")
            for name in SCENARIOS
            if name not in ("plaintext", "json", "static")
        ),
        launch=_nginx_static,
        needs_programs=(NGINX_BINARY,),
        fix="apt-get install nginx-light",
        note="ceiling",
        stop_signal=signal.SIGQUIT,
    ),
)


LUA_MODULES = (
    "/usr/lib/nginx/modules/ndk_http_module.so",
    "/usr/lib/nginx/modules/ngx_http_lua_module.so",
)


def lua_config(ctx: LaunchContext) -> str:
    json_body = JSON_BODY
    body = f"""    lua_code_cache on;
    server {{
        listen {ctx.host}:{ctx.port} backlog={LISTEN_BACKLOG};
        location = /plaintext {{
            default_type text/plain;
            content_by_lua_block {{ ngx.print("Hello, World!") }}
        }}
        location = /json {{
            default_type application/json;
            content_by_lua_block {{ ngx.print('{json_body}') }}
        }}
        location = /sleep {{
            content_by_lua_block {{
                local ms = tonumber(ngx.var.arg_ms)
                if not ms or ms < 0 or ms > 60000 or ms % 1 ~= 0 then
                    ngx.status = 400
                    ngx.header["Content-Type"] = "application/json"
                    ngx.print('{{"code":400,"message":"bad request","data":{{}}}}')
                    return
                end
                ngx.sleep(ms / 1000)
                ngx.header["Content-Type"] = "text/plain"
                ngx.print("ok")
            }}
        }}
    }}"""
    return nginx_config(ctx.workdir, ctx.workers, body, modules=LUA_MODULES)


def _nginx_lua(ctx: LaunchContext) -> Launch:
    return nginx_launch(ctx.workdir, lua_config(ctx))


NGINX_STACKS = (
    *NGINX_STACKS,
    Stack(
        name="nginx-lua",
        framework="Lua (lua-nginx-module: the OpenResty stack)",
        server="nginx",
        worker_model="event loop per worker process, Lua coroutines",
        scenarios=("plaintext", "json", "sleep"),
        launch=_nginx_lua,
        needs_programs=(NGINX_BINARY,),
        needs_files=LUA_MODULES,
        fix="apt-get install nginx-light libnginx-mod-http-lua",
        stop_signal=signal.SIGQUIT,
    ),
)
