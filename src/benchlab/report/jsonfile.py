"""The JSON report: the machine interface (every figure of the registry per cell, rankings,
flips), with the takeaways and the reading guide in words."""

from __future__ import annotations

from benchlab.analysis.summary import RunSummary
from benchlab.report.json_formats import RUN, TUNE
from benchlab.report.takeaways import reading_guide, takeaways
from benchlab.report.tune_report import tune_json


def render_json(summary: RunSummary) -> str:
    data = summary.to_json()
    if summary.options.tune is not None:
        data = {**tune_json(summary), **data}
    else:
        data["takeaways"] = [
            {
                "point": t.point.as_json(),
                "label": t.label,
                "sentence": t.sentence,
                "settings": t.settings,
                "notes": list(t.notes),
                "tiers": t.tiers_json(),
            }
            for t in takeaways(summary)
        ]
        data["reading_guide"] = reading_guide(summary)
    return (TUNE if summary.options.tune is not None else RUN).dumps(data)
