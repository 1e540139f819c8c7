"""The catalogue of stacks, by name."""

from benchlab.stacks.base import Availability, Launch, LaunchContext, Stack
from benchlab.stacks.go_stacks import GO_STACKS
from benchlab.stacks.nginx_stacks import NGINX_STACKS
from benchlab.stacks.python_stacks import PYTHON_STACKS

CATALOGUE: dict[str, Stack] = {s.name: s for s in (*NGINX_STACKS, *GO_STACKS, *PYTHON_STACKS)}


def catalogue_markdown() -> str:
    """The catalogue as a Markdown table (docs/stacks.md's is this, regenerated)."""
    rows = [
        "| stack | framework | server | worker model | flavours | scenarios | status here |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for stack in CATALOGUE.values():
        available = stack.availability()
        status = "available" if available.ok else f"unavailable: {available.reason}"
        if stack.note:
            status += f" ({stack.note})"
        cells = (
            f"`{stack.name}`",
            stack.framework,
            stack.server,
            stack.worker_model,
            ", ".join(stack.flavours) or "–",
            ", ".join(stack.scenarios),
            status,
        )
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"


__all__ = ["CATALOGUE", "Availability", "Launch", "LaunchContext", "Stack", "catalogue_markdown"]
