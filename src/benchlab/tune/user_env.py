"""The environment `benchlab tune` gives the user's app: `--env KEY=VALUE` and `--env-file
FILE`, read exactly as the printed deploy command's shell reads them (`set -a; . FILE`), or
refused, so that what tune measures is what the command deploys.

The file is not run: every line is one the shell reads literally (a name, `=`, a value
that is plain, or in single quotes, or in double quotes with nothing the shell expands), and
any other line is refused with its number and the fix. Values are secrets as far as benchlab
knows: they reach the app through its environment, never a command line, and reports name
the variables, never their values (see `masked_command`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path

from benchlab.core.errors import UserError
from benchlab.core.text import MASK

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What bash itself reads as a separator or an expansion: a blank (space, tab: only these),
# a quote, $ ` \ ~, an operator (; & | < > ( )); anything else, a control character or a
# Unicode separator too, is part of an unquoted value as written.
PLAIN = r"[^ \t'\"$`\\;&|<>()~]*"
SINGLE = r"'[^']*'"
DOUBLE = r"\"[^\"$`\\]*\""
LINE = re.compile(
    rf"[ \t]*(?:export[ \t]+)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)="
    rf"(?P<value>{SINGLE}|{DOUBLE}|{PLAIN})(?:[ \t]+#.*)?[ \t]*"
)
# Variables bash keeps for itself: read-only (UID), computed (RANDOM), or not exported as
# assigned; a line setting one is refused, since the shell would not pass it on as written.
SHELL_OWN = frozenset(
    {
        "BASHOPTS", "BASHPID", "BASH_ALIASES", "BASH_ARGC", "BASH_ARGV", "BASH_ARGV0",
        "BASH_CMDS", "BASH_COMMAND", "BASH_COMPAT", "BASH_ENV", "BASH_EXECUTION_STRING",
        "BASH_LINENO", "BASH_LOADABLES_PATH", "BASH_REMATCH", "BASH_SOURCE", "BASH_SUBSHELL",
        "BASH_VERSINFO", "BASH_VERSION", "BASH_XTRACEFD", "COMP_WORDBREAKS", "DIRSTACK",
        "EPOCHREALTIME", "EPOCHSECONDS", "EUID", "FUNCNAME", "GROUPS", "HISTCMD", "LINENO",
        "OPTIND", "PPID", "PWD", "OLDPWD", "RANDOM", "SECONDS", "SHELLOPTS", "SHLVL", "SRANDOM",
        "UID", "_",
    }
)  # fmt: skip


def env_pairs(pairs: Iterable[str], option: str = "--env") -> dict[str, str]:
    """`KEY=VALUE` arguments; a key the shell cannot take as a name is refused."""
    found: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not NAME.fullmatch(key):
            shown = key if NAME.fullmatch(key) or not key else repr(key)
            raise UserError(
                f"{option} {shown}=…: give KEY=VALUE with KEY a shell variable name (letters, "
                "digits and _, not starting with a digit)"
            )
        if "\0" in value:
            raise UserError(f"{option} {key}=…: a value cannot hold a NUL byte")
        found[key] = value
    return found


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines as `set -a; . FILE` reads them; a line it would read otherwise (an
    expansion, a space that ends the value, a command) is refused, naming the line. Lines
    end at a newline only, as bash's do (a form feed or U+2028 is part of the line)."""
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise UserError(f"--env-file {path}: cannot read it ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise UserError(f"--env-file {path}: not UTF-8 text") from None
    found: dict[str, str] = {}
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip(" \t") or line.lstrip(" \t").startswith("#"):
            continue
        problem = _line_problem(line)
        match = None if problem else LINE.fullmatch(line)
        if match is None:
            raise UserError(
                f"--env-file {path}: line {number} ({_shown(line)}) "
                + (problem or "is not read by the shell as it looks (a space, a quote, $, `, "
                   "\\, ~ or a command in the value); write it KEY='value', in single quotes, "
                   "which the shell takes as written")
            )  # fmt: skip
        if match["name"] in SHELL_OWN:
            raise UserError(
                f"--env-file {path}: line {number} sets {match['name']}, which the shell keeps "
                "for itself (it would not pass that value on); use another name"
            )
        value = match["value"]
        if value[:1] in ("'", '"'):
            value = value[1:-1]
        found[match["name"]] = value
    return found


def _line_problem(line: str) -> str | None:
    if "\0" in line:
        return "holds a NUL byte, which the shell drops; remove it"
    if "\r" in line:
        return (
            "ends in a carriage return (a file saved with Windows line endings: the shell keeps "
            "the \\r in the value); convert it with dos2unix or sed -i 's/\\r$//'"
        )
    return None


def _shown(line: str) -> str:
    """A refused line, its value hidden: the message may be pasted where others read it."""
    name, sep, _ = line.strip().partition("=")
    return f"{name}=…" if sep and len(name) < 60 else f"{len(line)} characters"


def deploy_assignments(env: Mapping[str, str]) -> str:
    """How the printed command passes --env: by name, each value from the deploying shell
    (`KEY="$KEY"`), never spelled out where a pull request would show it."""
    return " ".join(f'{key}="${key}"' for key in env)


# The options whose value is a shell command: stored and shown as *** (it may hold a
# password, a token in a URL).
COMMANDS = ("--setup", "--reset-between")


def masked_command(argv: list[str]) -> str:
    """A tune's command line as stored and reported: --env values and --setup hidden
    (`--env "KEY=$KEY"` reproduces it from the user's own environment)."""
    shown: list[str] = []
    pending: str | None = None
    for arg in argv:
        if pending is not None:
            shown.append(_masked(pending, arg))
            pending = None
        elif arg in ("--env", *COMMANDS):
            shown.append(arg)
            pending = arg
        elif arg.startswith(("--env=", *(f"{c}=" for c in COMMANDS))):
            option, _, value = arg.partition("=")
            shown.append(f"{option}={_masked(option, value)}")
        else:
            shown.append(shlex.quote(arg))
    return " ".join(shown)


def _masked(option: str, value: str) -> str:
    if option in COMMANDS:
        return shlex.quote(MASK)
    key = value.partition("=")[0]
    return f'"{key}=${key}"' if NAME.fullmatch(key) else shlex.quote(MASK)
