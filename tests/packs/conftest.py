from __future__ import annotations

from tests.cli.conftest import wide_console  # noqa: F401 - the CLI tests' fixture, for the submit tests here
