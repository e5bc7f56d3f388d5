"""clkt: a live benchmark of cross-lingual knowledge transfer (LiveCLKTBench as a service)."""

__version__ = "0.1.0"
