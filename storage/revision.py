"""Developer tool: autogenerate a new migration against a scratch SQLite database at head.

    python -m storage.revision "add column x"
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from alembic import command
from sqlalchemy import create_engine

from storage.engine import _alembic_config


def main(message: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        engine = create_engine(f"sqlite:///{Path(d) / 'scratch.db'}")
        with engine.begin() as conn:
            cfg = _alembic_config(conn)
            command.upgrade(cfg, "head")
            command.revision(cfg, message=message, autogenerate=True)
        engine.dispose()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "schema change")
