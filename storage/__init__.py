"""The store: SQLModel tables, the async engine, repositories and migrations."""

# a table in a module of its own that `storage.models` does not import, registered in `SQLModel.metadata` here
# (the migrations' `env.py` and `tests/storage/test_engine.py` compare that metadata with the migrations)
import storage.open_judgement_table  # noqa: F401
