"""clkt: a live benchmark of cross-lingual knowledge transfer (LiveCLKTBench as a service).

`__version__` is the installed package's version, read from its metadata (pyproject.toml's `version` is the one
place it is written): `clkt --version`, the manifests, the result packs and the cards all print this one string."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("clkt")
except PackageNotFoundError:  # run from a checkout that was never installed
    __version__ = "0+unknown"
