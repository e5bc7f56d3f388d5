"""docs/reference/pack-format.md and snapshot-layout.md: the two folder formats others build on, from their
models and constants (`clkt.packs.format`, `clkt.packs.metrics`, `clkt.snapshots.layout`)."""

from __future__ import annotations

from types import ModuleType

from pydantic import BaseModel

from clkt.reference._fields import module_comments
from clkt.reference._models import model_sections, reachable
from clkt.reference._text import code, escape, generated_header, prose, table

__all__ = ["render_pack_format", "render_snapshot_layout"]


def _page(title: str, intro: str, module: ModuleType, constants: str, roots: list[type[BaseModel]]) -> str:
    """A format's page: its version line, its module's docstring, the named constants (value and the comment beside
    each in the code), then every model it holds."""
    said = module_comments(module)
    rows = []
    for name in constants.split():
        value = getattr(module, name)
        shown = ", ".join(map(str, value)) if isinstance(value, tuple) else value
        rows.append([code(name), code(shown), escape(said.get(name, ""))])
    out = generated_header(title, intro) + prose(module.__doc__) + "## Constants\n\n"
    return out + table(["constant", "value", "meaning"], rows) + "\n## Models\n\n" + model_sections(reachable(roots))


def render_pack_format() -> str:
    from clkt.packs import format as f
    from clkt.packs.metrics import PackMetrics

    intro = (f"Format **{f.FORMAT_NAME}**, version **{f.FORMAT_VERSION}** (`clkt.packs.format.FORMAT_VERSION`; "
             "CHANGELOG.md says what each version changed).")
    names = ("FORMAT_NAME FORMAT_VERSION PACK_FILES OPTIONAL_FILES PROBE_MAX_BYTES PROBE_SUMMARY_MAX_CHARS LOCALITY_SPLIT "
             "OPEN_FILE_VERSION OPEN_MAX_BYTES OPEN_ANSWER_MAX_CHARS")
    return _page("Result pack format", intro, f, names, [f.PackManifest, f.PredictionRow, f.LocalityRow, f.ProbeRow,
                                                         f.OpenAnswerRow, PackMetrics])


def render_snapshot_layout() -> str:
    from clkt.snapshots import layout as s

    intro = (f"Layout version **{s.LAYOUT_VERSION}** (`clkt.snapshots.layout.LAYOUT_VERSION`, manifest.json's "
             "`layout_version`; CHANGELOG.md says what each version changed).")
    names = "LAYOUT_VERSION MANIFEST_FILE BUILD_FILE CARD_FILE CONTROL_DIR LOCALITY_DIR OPEN_DIR FACTS_FILE LETTERS"
    return _page("Snapshot folder layout", intro, s, names, [s.SnapshotManifest, s.BuildInfo, s.DocRow, s.QuestionRow,
                                                             s.FactsRow, s.OpenRow])
