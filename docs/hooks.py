"""MkDocs hook: the site's home is the guide (the README, its links made the site's), and
the reference pages are generated from benchlab's code (benchlab.reference_docs)."""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from benchlab.reference_docs import PAGES

# The README links to the docs as a repository does (docs/x.md); on the site they are x.md.
DOCS_LINK = re.compile(r"\]\(docs/")


def on_files(files: Files, config: MkDocsConfig) -> Files:
    readme = Path(config.config_file_path).parent / "README.md"
    guide = DOCS_LINK.sub("](", readme.read_text(encoding="utf-8"))
    files.append(File.generated(config, "index.md", content=guide))
    for path, make in PAGES.items():
        files.append(File.generated(config, path, content=make()))
    return files
