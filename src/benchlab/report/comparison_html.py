"""`benchlab compare -o x.html`: the comparison as an offline page (no script, no font, no
network), with the rows, warnings and footer every other format of it shows."""

from __future__ import annotations

from html import escape

from benchlab.report.comparison import (
    STYLES,
    Comparison,
    footer,
    header,
    rows,
    run_lines,
    threshold_line,
)

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>benchlab compare</title>
<style>
body {{ font-family: sans-serif; margin: 1rem auto; max-width: 60rem; padding: 0 1rem;
       color: #1d2733; }}
table {{ border-collapse: collapse; font-size: 0.9rem; }}
th, td {{ padding: 0.2rem 0.6rem; border-bottom: 1px solid #dde2e8; text-align: left; }}
td.number {{ text-align: right; font-variant-numeric: tabular-nums; }}
tr.red td {{ color: #a8211b; }} tr.green td {{ color: #1f7a38; }}
.warning {{ background: #fff6da; padding: 0.5rem; }}
footer {{ font-size: 0.85rem; color: #4a5562; }}
</style></head><body>
<h1>benchlab compare</h1>
<ul>{runs}</ul>
{warnings}
<table id="cells">
<thead><tr>{header}</tr></thead>
<tbody>
{rows}
</tbody>
</table>
{threshold}
<footer>{footer}</footer>
</body></html>
"""
NUMERIC = ("conns", "B / A")


def render_html(comparison: Comparison) -> str:
    columns = header(comparison)
    numeric = [column in NUMERIC for column in columns]
    body = []
    for row, change in rows(comparison):
        cells = "".join(
            f'<td class="number">{escape(v)}</td>' if right else f"<td>{escape(v)}</td>"
            for v, right in zip(row, numeric, strict=True)
        )
        style = STYLES.get(change.verdict)
        body.append(f'<tr class="{style}">{cells}</tr>' if style else f"<tr>{cells}</tr>")
    threshold = threshold_line(comparison)
    return PAGE.format(
        runs="".join(f"<li>{escape(line)}</li>" for line in run_lines(comparison)),
        warnings="".join(
            f'<p class="warning">Warning: {escape(w)}</p>' for w in comparison.warnings()
        ),
        header="".join(f"<th>{escape(column)}</th>" for column in columns),
        rows="\n".join(body),
        threshold=f"<p><strong>{escape(threshold)}</strong></p>" if threshold else "",
        footer="<br>".join(escape(line) for line in footer(comparison)),
    )
