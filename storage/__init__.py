"""The store: SQLModel tables, the async engine, repositories and migrations."""
