"""Text from outside benchlab (a recipe, a store, a server's log, an exception) made safe to
show: no control character reaches a terminal, where an escape sequence could recolour,
retitle, rewrite the screen or set the clipboard (OSC 52)."""

from __future__ import annotations

import base64
import difflib
import html
import json
import re
import urllib.parse
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.text import Text

# C0 controls but tab and newline, DEL, and the C1 controls (a lone 0x9b is a CSI in some
# terminals).
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# The same, with newline and tab too: for text that must stay on one line.
ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` without control characters (tab and newline kept)."""
    return CONTROLS.sub("", text)


def one_line(text: str) -> str:
    """`text` on one line: newlines and tabs become spaces, other controls go."""
    return CONTROLS.sub("", text.replace("\r\n", " ").replace("\n", " ").replace("\t", " "))


def control_character(text: str, allow_newline: bool = False) -> str | None:
    """The first control character of `text`, shown as an escape (\\x1b); None if none."""
    found = (CONTROLS if allow_newline else ANY_CONTROL).search(text)
    return None if found is None else repr(found.group())[1:-1]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """' (did you mean 'X'?)' for the closest of `choices` to a mistyped `word`, or ''."""
    options = list(choices)
    close = [o for o in options if o.startswith(word) or word in o.split("+")]
    close = close or difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def quoted(text: str) -> str:
    """How a message shows a name it was given: 'gin', or, when the name holds a quote or a
    control character, in double quotes with those escaped ("\\u001b[31m")."""
    if text.isprintable() and "'" not in text:
        return f"'{text}'"
    return toml_key(text)


def toml_key(text: str) -> str:
    """A key as TOML writes it in double quotes (and JSON would), controls escaped."""
    written = json.dumps(text, ensure_ascii=False)
    return CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", written)


MASK = "***"


# A secret this short is masked only where it stands alone (not inside a longer word or
# number): masked everywhere, a value like `1` or `prod` would hide the rest of the text.
SHORT = 6


def secret_forms(secret: str) -> set[str]:
    """Every way a secret may be written in text benchlab keeps: as is, percent-encoded (in
    a URL or a DSN, `+` for a space too, its hex digits in either case), escaped in JSON or
    as HTML entities, in base64 (standard and URL-safe, with and without its padding), and
    each password of a URL it holds (`postgres://user:PASSWORD@host`)."""
    forms = {
        secret,
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret, safe=""),
        urllib.parse.quote(secret),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        *_html_forms(secret),
        *_base64_forms(secret),
    }
    for password in URL_PASSWORD.findall(secret):
        forms |= {password, urllib.parse.unquote(password)}
    forms |= {PERCENT.sub(lambda m: m.group().lower(), form) for form in forms}
    return {form for form in forms if form}


URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*:([^@/\s]+)@")
PERCENT = re.compile(r"%[0-9A-F]{2}")


def _html_forms(secret: str) -> set[str]:
    escaped = html.escape(secret)
    return {escaped, html.escape(secret, quote=False), escaped.replace("&#x27;", "&#39;"),
            escaped.replace("&#x27;", "&apos;").replace("&quot;", "&#34;")}  # fmt: skip


def _base64_forms(secret: str) -> set[str]:
    raw = secret.encode()
    forms = {base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()}
    return forms | {form.rstrip("=") for form in forms}


# A part of a secret this long found in kept text is masked too (a shell's error line
# quoting one word of --setup, a log line cut in the middle of a value).
FRAGMENT = 6


def redact(text: str, secrets: Iterable[str], fragments: bool = False) -> str:
    """`text` with every secret of `secrets`, in each of its forms, replaced by ***; one
    under SHORT characters only where it stands alone. `fragments`: any part of a form at
    least FRAGMENT characters long is masked too (for prose: a reason, a log's tail; never
    for a record's structure, whose keys and names a secret's word could match)."""
    forms = {form for secret in secrets for form in secret_forms(secret)}
    for form in sorted(forms, key=len, reverse=True):
        if len(form) >= SHORT:
            text = text.replace(form, MASK)
        else:
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(form)}(?![A-Za-z0-9])", MASK, text)
    if fragments:
        text = _without_fragments(text, [form for form in forms if len(form) >= FRAGMENT])
    return text


def _without_fragments(text: str, forms: list[str]) -> str:
    """`text` with every stretch of FRAGMENT characters or more that is part of a form
    replaced by ***."""
    grams = {form[i : i + FRAGMENT] for form in forms for i in range(len(form) - FRAGMENT + 1)}
    if not grams:
        return text
    spans: list[tuple[int, int]] = []
    start = 0
    while start <= len(text) - FRAGMENT:
        if text[start : start + FRAGMENT] not in grams:
            start += 1
            continue
        end = start + FRAGMENT
        while end < len(text) and any(text[start : end + 1] in form for form in forms):
            end += 1
        spans.append((start, end))
        start = end
    for begin, end in reversed(spans):
        text = text[:begin] + MASK + text[end:]
    return text


class SafeConsole(Console):
    """A rich Console that drops control characters from every string it is given to show,
    table cells included (rich passes ESC through: a recipe's name, a stored run or a
    server's log line could otherwise write escape sequences to the terminal), and reads no
    markup in any of them unless a call asks (`markup=True`, for benchlab's own words
    alone): `[link=…]` in an app's answer or a server's log would be a hyperlink, and a
    stray `[/]` an exception."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("markup", False)
        super().__init__(*args, **kwargs)

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(printable(text), **kwargs)


def minutes(seconds: float) -> str:
    """A duration as a run's estimates and progress write it: 12m05s, 1h02m."""
    seconds = max(0, round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"
