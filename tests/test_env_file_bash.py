"""`tune --env-file` reads a file as the printed deploy command's shell does (`set -a; .
FILE`): on generated lines — carriage returns, CRLF, form feeds, U+001C, U+0085, U+2028,
NUL bytes, the shell's own read-only and computed names, quotes, expansions, operators —
every line the reader accepts gives exactly the variables real bash gives, and a line it
refuses is one line naming the line and the fix, never a traceback."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from benchlab.core.errors import UserError
from benchlab.tune.user_env import SHELL_OWN, read_env_file

LINES = 1500
NAMES = ("A", "DB_URL", "secret_key", "export", "if", "PATH_2", "_x", "Z9", "HOME_DIR")
PIECES = (
    "a", "Z", "7", "/", ":", "=", "@", "%", "+", ",", ".", "-", "_", "*", "?", "[", "]", "{",
    "}", "!", "^", "#", " ", "\t", "'", '"', "$", "`", "\\", ";", "&", "|", "<", ">", "(",
    ")", "~", "\r", "\f", "\v", "\x1c", "\x1f", "\x85", "\u2028", "\u2029", "\x00", "é",
    "中", "\x1b", "$HOME", "${A}", "$(id)", "\\n",
)  # fmt: skip


def _line(rng: random.Random) -> str:
    shell_own = sorted(SHELL_OWN | {"UID", "EUID", "PPID", "RANDOM", "SECONDS", "LINENO"})
    name = rng.choice(NAMES) if rng.random() < 0.85 else rng.choice(shell_own)
    value = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 6)))
    quoting = rng.random()
    if quoting < 0.3:
        value = "'" + value.replace("'", "") + "'"
    elif quoting < 0.5:
        value = '"' + value + '"'
    lead = rng.choice(("", "", "", " ", "\t", "export ", "  export\t", "\f", "\r"))
    tail = rng.choice(("", "", "", " # a comment", "\r", " ", "\t#x", "#x", "\f"))
    return f"{lead}{name}={value}{tail}"


def _bash_sets(directory: Path, count: int) -> list[dict[str, str] | None]:
    """What bash's `set -a; . FILE` adds to an empty environment, file by file (None: bash
    said something on stderr, i.e. it did not read the line as an assignment)."""
    script = (
        'for ((i = 0; i < $1; i++)); do f="$2/$i"; '
        '( set -a; . "$f"; set +a; /usr/bin/env -0 > "$f.env" ) 2> "$f.err" < /dev/null; done'
    )
    bash = shutil.which("bash") or "/bin/bash"
    # A line may hold a redirection or a command: bash runs in an empty directory of its own,
    # with no program it could find (PATH names none), so nothing it does leaves that place.
    sandbox = directory / "cwd"
    sandbox.mkdir()
    subprocess.run(
        ["env", "-i", "PATH=/nonexistent", bash, "--norc", "--noprofile", "-c", script, "_",
         str(count), str(directory)],
        check=True, timeout=300, cwd=sandbox,
    )  # fmt: skip
    found: list[dict[str, str] | None] = []
    for index in range(count):
        if (directory / f"{index}.err").read_bytes():
            found.append(None)
            continue
        found.append(_environ((directory / f"{index}.env").read_bytes()))
    return found


def _environ(raw: bytes) -> dict[str, str]:
    pairs = (entry.split(b"=", 1) for entry in raw.split(b"\0") if b"=" in entry)
    return {k.decode(): v.decode("utf-8", "surrogateescape") for k, v in pairs}


@pytest.mark.slow
def test_the_env_file_reader_gives_what_bash_gives(tmp_path: Path) -> None:
    rng = random.Random(20261128)
    lines = [_line(rng) for _ in range(LINES)]
    for index, line in enumerate(lines):
        (tmp_path / str(index)).write_bytes(line.encode("utf-8", "surrogatepass") + b"\n")
    (tmp_path / "empty").write_bytes(b"")
    empty = subprocess.run(
        ["env", "-i", "PATH=/nonexistent", shutil.which("bash") or "/bin/bash", "--norc",
         "--noprofile", "-c", 'set -a; . "$1"; set +a; /usr/bin/env -0', "_",
         str(tmp_path / "empty")],
        capture_output=True, check=True, timeout=30, cwd=tmp_path,
    )  # fmt: skip
    baseline = _environ(empty.stdout)
    by_bash = _bash_sets(tmp_path, LINES)
    accepted = refused = 0
    for index, line in enumerate(lines):
        try:
            ours = read_env_file(tmp_path / str(index))
        except UserError as exc:
            refused += 1
            assert "\n" not in str(exc) and "line 1" in str(exc), str(exc)
            continue
        accepted += 1
        bash = by_bash[index]
        assert bash is not None, f"benchlab read {line!r} as {ours}; bash refused it"
        added = {
            k: v
            for k, v in bash.items()
            if k not in ("_", "PWD", "SHLVL", "OLDPWD") and baseline.get(k) != v
        }
        assert ours == added, f"{line!r}: benchlab {ours}, bash {added}"
    # The reader is not "safe" by refusing everything: most plain and quoted lines pass.
    assert accepted >= LINES // 4, (accepted, refused)
    assert refused >= LINES // 10, (accepted, refused)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("A=b\r\n", "dos2unix"),
        ("A=b\0c\n", "NUL"),
        ("UID=5\n", "keeps for itself"),
        ("RANDOM=1\n", "keeps for itself"),
        ("A=b c\n", "single quotes"),
    ],
)
def test_lines_bash_reads_otherwise_are_refused_in_one_line(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "app.env"
    path.write_bytes(text.encode())
    with pytest.raises(UserError) as refused:
        read_env_file(path)
    message = str(refused.value)
    assert problem in message and str(path) in message and "\n" not in message


def test_a_form_feed_or_a_unicode_separator_does_not_end_a_line(tmp_path: Path) -> None:
    """Python's splitlines ends a line there; bash does not: the value holds it."""
    path = tmp_path / "app.env"
    path.write_text("A=x\fB=y\nC='p\u2028D=q'\nE=r\x85s\n", encoding="utf-8")
    assert read_env_file(path) == {"A": "x\fB=y", "C": "p\u2028D=q", "E": "r\x85s"}
    assert os.environ.get("B") is None
