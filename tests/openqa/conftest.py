from __future__ import annotations

from tests.targets.conftest import models_data_dir  # noqa: F401  (shared fixture)
