"""Read the summary table and verdict badges of a benchlab HTML report with the standard
library's parser: what the page says, not how it is spelled."""

from __future__ import annotations

from html.parser import HTMLParser


class ReportPage(HTMLParser):
    def __init__(self, html: str) -> None:
        super().__init__()
        self.header: list[str] = []
        self.rows: list[dict] = []  # {"status": ..., "cells": [...], "badges": {name: title}}
        self.banners: list[str] = []
        self._in_table = False
        self._cell: list[str] | None = None
        self._badge: tuple[str, str] | None = None
        self._banner: list[str] | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "table" and a.get("id") == "summary-table":
            self._in_table = True
        elif self._in_table and tag == "tr" and "data-status" in a:
            self.rows.append({"status": a["data-status"], "cells": [], "badges": {}})
        elif self._in_table and tag in ("td", "th"):
            self._cell = []
        elif self._in_table and tag == "span" and "badge" in (a.get("class") or ""):
            self._badge = (a.get("title") or "", "")
        elif tag == "p" and "banner" in (a.get("class") or ""):
            self._banner = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self._in_table:
            self._in_table = False
        elif self._in_table and tag in ("td", "th") and self._cell is not None:
            text = " ".join("".join(self._cell).split())
            if tag == "th":
                self.header.append(text)
            else:
                self.rows[-1]["cells"].append(text)
            self._cell = None
        elif tag == "span" and self._badge is not None:
            title, name = self._badge
            self.rows[-1]["badges"][name.strip()] = title
            self._badge = None
        elif tag == "p" and self._banner is not None:
            self.banners.append(" ".join("".join(self._banner).split()))
            self._banner = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._badge is not None:
            self._badge = (self._badge[0], self._badge[1] + data)
        if self._banner is not None:
            self._banner.append(data)
