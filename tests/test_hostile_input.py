"""Input benchlab did not write — a recipe, a tune request, a store, an environment
variable — gets one line and exit 2, never a traceback; nothing of it reaches a terminal as
an escape sequence (issue 36). Generated recipes and requests (hypothesis) look for the
inputs nobody thought of."""

from __future__ import annotations

import http.client
import io
import json
import math
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.table import Table

from benchlab.core.errors import UserError
from benchlab.core.text import SafeConsole
from benchlab.http.scenarios import SCENARIOS
from benchlab.recipe import apply_overrides, build_plan, load_recipe
from benchlab.recipe.host_spec import HOST_NAME, SpecError, parse_spec
from benchlab.runner.estimates import Costs, plan_lines
from benchlab.stacks import CATALOGUE
from benchlab.store import Store
from benchlab.tune.requests import (
    EchoEndpoint,
    check_header,
    check_path,
    load_requests,
    parse_request,
)
from benchlab.tune.user_env import env_pairs
from tests.conftest import REPO, benchlab, error_line, write_recipe

# --- the command line: each input of the audit, one line and exit 2 ---------------------------

ONE_STACK = """
name = "hostile"
stacks = ["gin"]
scenarios = ["json"]
[[load]]
connections = 8
duration = 1
"""


def _one_line_exit_2(result, *phrases: str) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "Traceback" not in output, output
    line = error_line(result.stderr)
    for phrase in phrases:
        assert phrase in line, (phrase, line)


@pytest.mark.slow
def test_each_hostile_input_gets_one_line_and_exit_2(tmp_path: Path) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text("x = " + "[" * 600 + "]" * 600 + "\n")
    _one_line_exit_2(benchlab("run", str(deep), "--dry-run"), "nested hundreds deep")
    requests = tmp_path / "requests.toml"
    requests.write_text("request = " + "[" * 600 + "]" * 600 + "\n")
    app = tmp_path / "app.py"
    app.write_text("app = None\n")
    _one_line_exit_2(
        benchlab("tune", f"{app}:app", "--requests-file", str(requests)), "nested hundreds deep"
    )
    _one_line_exit_2(
        benchlab("tune", f"{app}:app", "--request", "GET /café"), "percent-encode", "/caf%C3%A9"
    )
    headers = tmp_path / "headers.toml"
    headers.write_text('[[request]]\npath = "/"\nheaders = {X-Evil = "a\\r\\nSet-Cookie: b"}\n')
    _one_line_exit_2(benchlab("tune", f"{app}:app", "--requests-file", str(headers)), "line break")
    _one_line_exit_2(
        benchlab("tune", f"{app}:app", "--env", "X;touch /tmp/owned;Y=1"), "shell variable name"
    )
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE runs (x INTEGER)")
    for command in (("runs",), ("report",), ("history", "quick")):
        _one_line_exit_2(
            benchlab(*command, "--results", str(foreign)), "not a benchlab results store"
        )
    assert not (tmp_path / "foreign.db-wal").exists()
    assert [row[1] for row in sqlite3.connect(foreign).execute("PRAGMA table_info(runs)")] == [
        "x"
    ]  # not migrated: another program's file is left as it was
    version = benchlab("--version", env={"BENCHLAB_STORE_TIMEOUT_S": "abc"})
    assert version.returncode == 0 and version.stdout.startswith("benchlab "), version.stderr
    hosts = write_recipe(
        tmp_path,
        ONE_STACK + '[hosts.far]\nat = "ssh://-Fevil@x"\nroles = ["server", "load"]\n'
        "cores = [0, 1]\n",
        "hosts.toml",
    )
    _one_line_exit_2(benchlab("run", str(hosts), "--dry-run"), "hosts.far.at", "letter or a digit")
    long = write_recipe(tmp_path, ONE_STACK.replace("duration = 1", "duration = 3600"), "long.toml")
    _one_line_exit_2(
        benchlab("run", str(long), "--trials", "3", "--results", str(tmp_path / "r.db")),
        "over an hour",
        "--yes",
    )
    assert not (tmp_path / "r.db").exists()  # refused before anything started


def test_a_bad_store_timeout_is_one_line_when_a_store_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHLAB_STORE_TIMEOUT_S", "abc")
    with pytest.raises(UserError, match=r"BENCHLAB_STORE_TIMEOUT_S='abc': give the seconds"):
        Store(tmp_path / "s.db")


@pytest.mark.parametrize(
    ("address", "phrase"),
    [
        ("10.0.0.5/0 trust", "not an IPv4 address"),
        ("10.0.0.5'; DROP USER root; --", "not an IPv4 address"),
        ("0.0.0.0", "unspecified, multicast"),
        ("224.0.0.1", "unspecified, multicast"),
        ("db.example", "not an IPv4 address"),
    ],
)
def test_an_ssh_hosts_address_is_one_ipv4_address(
    tmp_path: Path, address: str, phrase: str
) -> None:
    """It goes into pg_hba.conf, MariaDB's accounts (as SQL run by its root), pgbouncer,
    nginx and Redis: anything else is refused at the recipe."""
    body = (
        ONE_STACK.replace('"json"', '"db"')
        + f'[hosts.db]\nat = "ssh://root@10.0.0.5"\naddress = {json.dumps(address)}\n'
        'roles = ["database"]\ncores = [0]\n'
        '[hosts.here]\nat = "local"\nroles = ["server", "load"]\n'
        "cores = {server = [0], load = [1]}\n"
    )
    path = write_recipe(tmp_path, body)
    with pytest.raises(UserError, match=r"hosts\.db\.address") as caught:
        recipe, text = load_recipe(path, CATALOGUE)
        build_plan(path, recipe, text, CATALOGUE, cpu_count=2)
    assert phrase in str(caught.value) and "\n" not in str(caught.value)


def test_the_terminal_gets_no_escape_sequence() -> None:
    out = io.StringIO()
    console = SafeConsole(file=out, width=80, force_terminal=False)
    console.print("run \x1b[31mred\x1b[0m \x1b]52;c;aGk=\x07 done\x9b2J", markup=False)
    console.print(f"[bold]{'evil'}[/] \x1b]0;title\x07")
    table = Table()  # a table's cells too (stored runs are shown in tables)
    table.add_column("stack\x1b[31m")
    table.add_row("x\x1b]52;c;aGk=\x07")
    console.print(table)
    text = out.getvalue()
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
    assert "run [31mred[0m ]52;c;aGk= done2J" in text and "stack[31m" in text


# --- generated recipes: a UserError or a plan, nothing else -----------------------------------

BASE: dict[str, Any] = {
    "name": "generated",
    "stacks": ["gin", "nginx-static"],
    "scenarios": ["json"],
    "trials": 2,
    "load": [{"connections": 8, "duration": 1}],
    "stack": {"gin": {"workers": 1}},
}
# Where a mutation lands: keys of every table a recipe has, and some that it has not.
PLACES: list[tuple[Any, ...]] = [
    ("name",), ("question",), ("stacks",), ("scenarios",), ("trials",), ("max_trials",),
    ("warmup",), ("baseline",), ("rank_by",), ("min_effect_pct",), ("target_half_width_pct",),
    ("load", 0, "connections"), ("load", 0, "rate"), ("load", 0, "tool"),
    ("load", 0, "duration"), ("load", 0, "threads"), ("load", 0, "mix"),
    ("load", 0, "protocol"), ("load", 0, "keepalive"), ("load", 0, "timeout"),
    ("stack", "gin", "workers"), ("stack", "gin", "threads"), ("stack", "gin", "flavour"),
    ("stack", "gin", "pool_size"), ("services", "database"), ("services", "max_connections"),
    ("services", "pgbouncer"), ("services", "proxy"), ("params", "pool_size"),
    ("params", "db_delay_ms"), ("params", "queries"), ("points",), ("exclude",),
    ("cores", "server"), ("cores", "load"), ("slo", "p99_ms"), ("slo", "sustain_s"),
    ("hosts", "far", "at"), ("hosts", "far", "roles"), ("hosts", "far", "address"),
    ("hosts", "far", "cores"), ("unknown",),
]  # fmt: skip
INTERESTING = st.sampled_from(
    [
        0, -1, 1, 2, 2**63, 10**23, 1e23, math.inf, math.nan, "60%", "0%", "1e400%", "",
        " ", "gin", "json", "db", "vegeta", "h2", "wrk", "postgres", "ssh://-Fevil@x",
        "ssh://root@10.0.0.5", "netns:x", "local", "10.0.0.5/0 trust", "x'; DROP USER root; --",
        "\x1b[31m", "a\nb", "../../etc/passwd", ["server", "load"], ["database"], [0, 1],
        {"server": [0], "load": [1]}, [{"name": "p"}], [{"scenario": "json", "weight": 3}],
        [{"stack": "gin"}], list(range(300)),
    ]
)  # fmt: skip
SCALARS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.text(max_size=20),
    st.booleans(),
)
VALUES = st.one_of(
    INTERESTING,
    st.recursive(
        SCALARS,
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
        ),
        max_leaves=8,
    ),
)


STACK_NAMES = st.sampled_from(sorted(CATALOGUE)) | st.text(max_size=12)
SCENARIO_NAMES = st.sampled_from(sorted(SCENARIOS)) | st.text(max_size=12)
COUNTS = st.integers(min_value=-1, max_value=2_000_000)
SMALL = st.integers(min_value=0, max_value=2_000)
RATES = st.floats(min_value=-1, max_value=2e7) | st.builds(
    lambda n: f"{n}%", st.integers(min_value=-5, max_value=300)
)
HOST_SPECS = st.sampled_from(
    ["local", "netns:a", "netns:-x", "ssh://root@10.0.0.5", "ssh://-Fevil@x", "ssh://u@-oProxy"]
) | st.text(max_size=20)
# What each key is given most often: values of about its type, so that generated recipes
# get past the schema and into the checks, the matrix and the plan.
PLAUSIBLE: dict[str, Any] = {
    "name": st.text(max_size=30),
    "question": st.text(max_size=60),
    "stacks": st.lists(STACK_NAMES, min_size=1, max_size=4),
    "scenarios": st.lists(SCENARIO_NAMES, max_size=4),
    "trials": SMALL,
    "max_trials": SMALL,
    "warmup": SMALL,
    "baseline": STACK_NAMES,
    "connections": COUNTS | st.lists(COUNTS, min_size=1, max_size=3),
    "rate": RATES | st.lists(RATES, min_size=1, max_size=3),
    "tool": st.sampled_from(["wrk", "vegeta", "ab", "hey", "siege", "h2load", "curl"]),
    "duration": SMALL,
    "timeout": SMALL,
    "threads": COUNTS | st.lists(COUNTS, min_size=1, max_size=2),
    "workers": COUNTS | st.lists(COUNTS, min_size=1, max_size=2),
    "protocol": st.sampled_from(["h1", "h1-tls", "h2", "h2c", "h3"]),
    "mix": st.lists(
        st.fixed_dictionaries({"scenario": SCENARIO_NAMES, "weight": SMALL}), max_size=3
    ),
    "points": st.lists(
        st.fixed_dictionaries({"name": st.text(max_size=10)}, optional={"connections": COUNTS}),
        max_size=3,
    ),
    "exclude": st.lists(
        st.fixed_dictionaries({}, optional={"stack": STACK_NAMES, "scenario": SCENARIO_NAMES}),
        max_size=2,
    ),
    "at": HOST_SPECS,
    "roles": st.lists(st.sampled_from(["server", "database", "load", "x"]), max_size=3),
    "address": st.sampled_from(["198.18.0.9", "10.0.0.5", "0.0.0.0", "::1"]) | st.text(max_size=20),
    "cores": st.lists(st.integers(min_value=-1, max_value=4), max_size=3),
}


def values_for(place: tuple[Any, ...]) -> Any:
    plausible = PLAUSIBLE.get(place[-1])
    return VALUES if plausible is None else st.one_of(plausible, plausible, plausible, VALUES)


MUTATIONS = st.sampled_from(PLACES).flatmap(lambda p: st.tuples(st.just(p), values_for(p)))


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        # JSON's escapes are TOML's, but DEL and the C1 controls must be escaped too.
        text = json.dumps(value, ensure_ascii=False)
        return "".join(f"\\u{ord(c):04x}" if 0x7F <= ord(c) <= 0x9F else c for c in text)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return (
        "{" + ", ".join(f"{toml_value(str(k))} = {toml_value(v)}" for k, v in value.items()) + "}"
    )


def toml_document(recipe: dict[str, Any]) -> str:
    return "".join(f"{toml_value(key)} = {toml_value(value)}\n" for key, value in recipe.items())


def _mutated(changes: list[tuple[tuple[Any, ...], Any]]) -> dict[str, Any]:
    recipe = json.loads(json.dumps(BASE))
    for place, value in changes:
        table: Any = recipe
        for key in place[:-1]:
            if isinstance(key, int):
                table = table[key] if isinstance(table, list) and table else {}
            else:
                table = table.setdefault(key, {}) if isinstance(table, dict) else {}
                if not isinstance(table, (dict, list)):
                    break
        else:
            if isinstance(table, dict):
                table[place[-1]] = value
    return recipe


def _expect_plan_or_one_line(path: Path) -> None:
    try:
        recipe, text = load_recipe(path, CATALOGUE)
        plan = build_plan(path, recipe, text, CATALOGUE, cpu_count=2)
        apply_overrides(plan.recipe, duration=2, connections=4, trials=3, path=path)
        plan_lines(plan.cells, plan.recipe, plan.catalogue, Costs())
    except UserError as exc:
        message = str(exc)
        assert "\n" not in message and "\x1b" not in message, message
        assert str(path) in message or "--" in message, message


@settings(
    max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(changes=st.lists(MUTATIONS, min_size=1, max_size=4))
def test_generated_recipes_give_a_plan_or_one_line(changes: list) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "recipe.toml"
        path.write_text(toml_document(_mutated(changes)), encoding="utf-8")
        _expect_plan_or_one_line(path)


# --- generated tune requests: refused, or sendable exactly as given ---------------------------


def _sendable(method: str, path: str, headers: tuple[tuple[str, str], ...]) -> None:
    """What benchlab's verification clients do with a request, without a network: the
    standard library's request line and headers, and httpx's request."""
    connection = http.client.HTTPConnection("127.0.0.1", 9)
    connection.putrequest(method, path, skip_accept_encoding=True)
    for name, value in headers:
        connection.putheader(name, value)
    httpx.Request(method, f"http://127.0.0.1{path}", headers=list(headers))


@settings(max_examples=300, deadline=None, database=None)
@given(
    text=st.text(max_size=40)
    | st.builds(
        lambda m, p: f"{m} /{p}", st.sampled_from(["GET", "WS", "ws"]), st.text(max_size=30)
    )
)
def test_generated_request_lines_are_refused_or_sendable(text: str) -> None:
    try:
        expectation = parse_request(text, 200, None)
    except UserError as exc:
        assert "\n" not in str(exc), str(exc)
        return
    if isinstance(expectation, EchoEndpoint):  # 'WS /path': the path goes on the upgrade's line
        _sendable("GET", expectation.path, ())
        return
    _sendable(expectation.method, expectation.path, expectation.headers)


def test_a_request_without_its_path_is_shown_an_example_of_its_own_kind() -> None:
    for text, example in (("WS echo", "--request 'WS /echo'"), ("GET", "'GET /items?id=7'")):
        with pytest.raises(UserError, match=example.replace("?", "\\?")):
            parse_request(text, 200, None)


REQUEST_TABLES = st.fixed_dictionaries(
    {"path": st.text(max_size=20) | st.just("/ok")},
    optional={
        "method": st.sampled_from(["GET", "post", "FETCH", "PUT"]) | st.text(max_size=5),
        "headers": st.dictionaries(st.text(max_size=10), st.text(max_size=20), max_size=3),
        "body": st.text(max_size=20),
        "weight": st.integers(min_value=-2, max_value=200),
        "status": st.integers(min_value=0, max_value=1000),
    },
)


@settings(max_examples=200, deadline=None, database=None)
@given(tables=st.lists(REQUEST_TABLES, min_size=1, max_size=3))
def test_generated_requests_files_are_refused_or_sendable(tables: list[dict]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "requests.toml"
        path.write_text(toml_document({"request": tables}), encoding="utf-8")
        try:
            expectations = load_requests(path)
        except UserError as exc:
            assert "\n" not in str(exc), str(exc)
            return
    for expectation in expectations:
        _sendable(expectation.method, expectation.path, expectation.headers)


# --- every validator takes the whole string: a trailing newline is not a name --------------

# Each validator with a value it accepts: the value, then one line break more (or another
# ending `$` would have let through), must be refused as a user's mistake, in one line.
VALIDATED = {
    "--env KEY": lambda v: env_pairs([f"{v}=1"]),
    "--request path": lambda v: check_path(v, "--request"),
    "a header's name": lambda v: check_header(v, "x", "--requests-file"),
    "a header's value": lambda v: check_header("X-A", v, "--requests-file"),
    "a host": lambda v: parse_spec(v),
    "a namespace": lambda v: parse_spec(f"netns:{v}"),
    "a [hosts] name": lambda v: _host_name(v),
}
ACCEPTED = {
    "--env KEY": "DB_URL", "--request path": "/users/7", "a header's name": "X-Trace",
    "a header's value": "abc", "a host": "ssh://root@10.0.0.5:22", "a namespace": "bl-server",
    "a [hosts] name": "db-1",
}  # fmt: skip


def _host_name(name: str) -> None:
    if HOST_NAME.fullmatch(name) is None:
        raise SpecError(f"host name {name!r}")


ENDINGS = st.sampled_from(["\n", "\r\n", "\n\n", "\r", "\x0b", "\x0c", "\x85", "\u2028"])


@pytest.mark.parametrize("what", sorted(VALIDATED))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ending=ENDINGS)
def test_a_trailing_line_break_is_refused_by_every_validator(what: str, ending: str) -> None:
    check = VALIDATED[what]
    check(ACCEPTED[what])  # accepted as it is
    with pytest.raises((UserError, SpecError)):
        check(ACCEPTED[what] + ending)


def test_no_validator_matches_only_a_prefix() -> None:
    """A validator pattern is used whole (fullmatch), never anchored with `$`, which lets one
    line break through, nor with `match`, which checks a prefix only."""
    import ast

    found = []
    for path in sorted((REPO / "src" / "benchlab").rglob("*.py")):
        tree = ast.parse(path.read_text())
        compiled = {
            target.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "attr", "") == "compile"
            for target in node.targets if isinstance(target, ast.Name)
        }  # fmt: skip
        for node in ast.walk(tree):
            called = node.func if isinstance(node, ast.Call) else None
            if (
                isinstance(called, ast.Attribute) and called.attr == "match"
                and isinstance(called.value, ast.Name) and called.value.id in compiled
            ):  # fmt: skip
                found.append(f"{path.name}:{node.lineno} {called.value.id}.match")
    assert not found, found
