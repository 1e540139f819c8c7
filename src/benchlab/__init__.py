"""benchlab: benchmark web stacks fairly, with real services and honest statistics."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("benchlab")  # pyproject.toml's, the one place it is written
except PackageNotFoundError:  # a source tree on sys.path, never installed
    __version__ = "0+unknown"
