"""No secret in the store nor in any report, in any form it may be written in: a server's log
tail quoting an --env value percent-encoded in a URL, escaped in JSON, inside a DSN, a short
password standing alone, the --setup command itself. The store masks what it is told to keep
out (Store.keep_out) in every text it writes; every report format then reads the store."""

from __future__ import annotations

import io
import json
import shutil
import urllib.parse
from pathlib import Path

import pytest
from rich.console import Console

from benchlab.analysis.summary import summarise
from benchlab.cli.formats import REPORT
from benchlab.core.text import MASK, redact
from benchlab.report.exporters import choose
from benchlab.report.terminal import render_table
from benchlab.store import Store
from tests.conftest import REPO

SECRETS = {
    "long": "s3cr3t/with space&plus+",
    "short": "pw1",  # a password under six characters
    "setup": "psql postgres://app:setup-pass-77@127.0.0.1/db -c 'select 1'",
}


def _forms(secret: str) -> list[str]:
    return [
        secret,
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret),
        json.dumps(secret)[1:-1],
    ]


LOG_TAIL = (
    f"connecting to postgres://app:{urllib.parse.quote(SECRETS['long'], safe='')}@db/x; "
    f"settings {json.dumps({'key': SECRETS['long']})}; raw {SECRETS['long']}; "
    f"form {urllib.parse.quote_plus(SECRETS['long'])}; password={SECRETS['short']} "
    f"redis://:{SECRETS['short']}@127.0.0.1:6379; ran {SECRETS['setup']}; "
    "postgres://app:setup-pass-77@127.0.0.1/db; worker pw10 kept"
)


def test_masking_reaches_every_form() -> None:
    masked = redact(LOG_TAIL, SECRETS.values())
    for name, secret in SECRETS.items():
        for form in _forms(secret):
            if len(form) >= 6:
                assert form not in masked, (name, form, masked)
    assert "setup-pass-77" not in masked  # a DSN's password inside the --setup command
    assert f"password={MASK}" in masked and f"redis://:{MASK}@" in masked
    # A short value is masked where it stands alone, not inside a longer word.
    assert "pw10" in masked


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "results.db"
    shutil.copy(REPO / "tests" / "data" / "readme-quick.db", path)
    return path


def test_no_secret_in_the_store_or_any_report_format(store: Path) -> None:
    writer = Store(store)
    writer.keep_out(*SECRETS.values())
    run = writer.run("latest")
    cells = writer.cells(run.id)
    writer.mark_cell(cells[0].id, "failed", f"the server exited; its log: {LOG_TAIL}")
    writer.add_cell_facts(cells[1].id, {"log_tail": LOG_TAIL})
    writer.finish_run(run.id, "partial", LOG_TAIL)
    writer.close()
    outputs: dict[str, str] = {}
    reader = Store(store, create=False)
    summary = summarise(reader, run.id)
    reader.close()
    for fmt in REPORT:
        exporter = choose(fmt, None, allowed=REPORT)
        if exporter.name == "table":
            shown = io.StringIO()
            render_table(summary, Console(file=shown, width=200))
            outputs["table"] = shown.getvalue()
        else:
            outputs[fmt] = exporter.render(summary, True)
    outputs["store"] = b"".join(p.read_bytes() for p in store.parent.glob("results.db*")).decode(
        errors="replace"
    )
    assert any("the server exited" in text for text in outputs.values())
    for where, text in outputs.items():
        for name, secret in SECRETS.items():
            for form in _forms(secret):
                if len(form) >= 6:
                    assert form not in text, f"the {name} secret ({form!r}) is in {where}"
        assert "setup-pass-77" not in text, where
        assert f"redis://:{SECRETS['short']}@" not in text, where


def test_masking_reaches_base64_lower_case_escapes_html_and_fragments() -> None:
    import base64
    import html

    secret = "s3cr3t/with space&plus'"
    setup = "TOKEN=abcdef123456 ./seed.sh"
    kept = (
        f"b64 {base64.b64encode(secret.encode()).decode()} "
        f"url-safe {base64.urlsafe_b64encode(secret.encode()).decode().rstrip('=')} "
        f"lower {urllib.parse.quote(secret, safe='').lower()} html {html.escape(secret)} "
        "bash: line 1: TOKEN=abcdef123456: command not found; cut: TOKEN=abcdef1"
    )
    masked = redact(kept, [secret, setup], fragments=True)
    for form in (
        base64.b64encode(secret.encode()).decode(),
        urllib.parse.quote(secret, safe="").lower(),
        html.escape(secret),
        "abcdef123456",
        "TOKEN=abcdef1",
    ):
        assert form not in masked, (form, masked)
    assert "command not found" in masked and masked.startswith("b64 ***")
    # In a record's structure, only whole forms: a word of --setup leaves names alone.
    assert redact("seed.sh-runner", [setup]) == "seed.sh-runner"


def test_a_cells_command_keeps_the_paths_it_shares_with_setup_when_facts_are_added(
    tmp_path: Path,
) -> None:
    """A tune's deploy command (a planned cell's fact) and its --setup may name one directory:
    the command is structure, masked by the secret's whole forms only, and a fact learnt later
    (its proof, a log tail: prose, masked in parts too) leaves it as planned. It printed
    `set -a && .***app.env` once the proof's facts were added."""
    directory = "/srv/shop-orders/deploy"
    setup = f'printf %s "$REDIS_URL" > {directory}/redis-url # s3cr3t-of-setup-7a60'
    command = f"set -a && . {directory}/app.env && set +a && gunicorn app:app"
    path = tmp_path / "results.db"
    shutil.copy(REPO / "tests" / "data" / "readme-quick.db", path)
    writer = Store(path)
    writer.keep_out(setup)
    run = writer.run("latest")
    cell = writer.cells(run.id)[0]
    writer.db.execute(
        "UPDATE cells SET facts = ? WHERE id = ?", (json.dumps({"command": command}), cell.id)
    )
    writer.add_cell_facts(cell.id, {"log_tail": f"sh: {directory}/redis-url: s3cr3t-of-setup"})
    writer.close()
    reader = Store(path, create=False)
    (kept,) = [c for c in reader.cells(run.id) if c.id == cell.id]
    reader.close()
    assert kept.facts["command"] == command
    assert "s3cr3t" not in kept.facts["log_tail"] and MASK in kept.facts["log_tail"]
