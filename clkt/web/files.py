"""Read-only files under a root folder (a snapshot's export, a report), safe against path traversal.

A relative path is accepted only when every part is a plain name (no `..`, no empty or dot parts, no
backslashes, NUL or control characters, not absolute), and the file it resolves to, symlinks followed, is
still inside the resolved root. Anything else is 404, like a missing file: the answer never says what
exists outside. Files are served with a type from a fixed table; anything that could run in the browser
(HTML, SVG, JavaScript...) is served as `text/plain` (with `nosniff`), so a crawled text inside a snapshot
file can never become markup.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from aiohttp import web

__all__ = ["MAX_FILE_BYTES", "file_response", "list_files", "safe_join"]

MAX_FILE_BYTES = 512 * 2**20
_TYPES = {
    ".png": "image/png",
    ".json": "text/plain",
    ".jsonl": "text/plain",
    ".csv": "text/plain",
    ".md": "text/plain",
    ".txt": "text/plain",
    ".yaml": "text/plain",
    ".yml": "text/plain",
    ".log": "text/plain",
}
_DEFAULT_TYPE = "text/plain"  # html, svg, js, anything unknown: shown as text, never rendered
_BINARY = "application/octet-stream"
_BINARY_SUFFIXES = {".parquet", ".arrow", ".gz", ".zip", ".tar", ".safetensors", ".bin", ".pt"}


def safe_join(root: Path, rel: str) -> Path | None:
    """`root/rel` when it is a regular file inside `root` (symlinks resolved), else None."""
    if not rel or len(rel) > 1024 or "\\" in rel or any(ord(c) < 32 or ord(c) == 127 for c in rel):
        return None
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute():
        return None
    if any(p in ("", ".", "..") or p.startswith("~") for p in parts):
        return None
    try:
        base = root.resolve(strict=True)
        target = (base.joinpath(*parts)).resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if not target.is_relative_to(base) or not target.is_file():
        return None
    return target


def file_response(path: Path, *, download_name: str | None = None) -> web.StreamResponse:
    suffix = path.suffix.lower()
    ctype = _BINARY if suffix in _BINARY_SUFFIXES else _TYPES.get(suffix, _DEFAULT_TYPE)
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        return web.Response(status=413, text=f"file too large to show here ({size} bytes)\n", content_type="text/plain")
    headers = {"Content-Type": ctype + ("; charset=utf-8" if ctype == "text/plain" else "")}
    if ctype == _BINARY:
        headers["Content-Disposition"] = f'attachment; filename="{download_name or "file" + suffix}"'
    return web.FileResponse(path, headers=headers)


def list_files(root: Path, *, limit: int = 500) -> list[tuple[str, int]]:
    """(relative path, bytes) of the regular files under `root` that `safe_join` would serve, sorted."""
    out: list[tuple[str, int]] = []
    try:
        base = root.resolve(strict=True)
    except OSError:
        return out
    for p in sorted(base.rglob("*")):
        if len(out) >= limit:
            break
        rel = p.relative_to(base).as_posix()
        q = safe_join(base, rel)
        if q is not None:
            out.append((rel, q.stat().st_size))
    return out
