"""docs/reference/pack-format.md and snapshot-layout.md: the two folder formats others build on, from their
models and constants (`clkt.packs.format`, `clkt.packs.metrics`, `clkt.snapshots.layout`)."""

from __future__ import annotations

from pydantic import BaseModel

from clkt.reference._models import model_sections, reachable
from clkt.reference._text import code, escape, generated_header, prose, table

__all__ = ["render_pack_format", "render_snapshot_layout"]


def _constants(rows: list[tuple[str, object, str]]) -> str:
    return table(["constant", "value", "meaning"], [[code(n), code(v), escape(m)] for n, v, m in rows]) + "\n"


def render_pack_format() -> str:
    from clkt.packs import format as f
    from clkt.packs.metrics import PackMetrics

    intro = (f"Format **{f.FORMAT_NAME}**, version **{f.FORMAT_VERSION}** (`clkt.packs.format.FORMAT_VERSION`; "
             "CHANGELOG.md says what each version changed).")
    out = generated_header("Result pack format", intro) + prose(f.__doc__)
    out += "## Constants\n\n" + _constants([
        ("FORMAT_NAME", f.FORMAT_NAME, "manifest.json's `format`"),
        ("FORMAT_VERSION", f.FORMAT_VERSION, "manifest.json's `format_version`"),
        ("PACK_FILES", ", ".join(f.PACK_FILES), "the files every pack holds"),
        ("OPTIONAL_FILES", ", ".join(f.OPTIONAL_FILES), "the only other files a pack may hold"),
        ("PROBE_MAX_BYTES", f.PROBE_MAX_BYTES, "a larger probe.jsonl is refused before it is read"),
        ("PROBE_SUMMARY_MAX_CHARS", f.PROBE_SUMMARY_MAX_CHARS, "the longest answer in probe.jsonl"),
        ("LOCALITY_SPLIT", f.LOCALITY_SPLIT, "the `split` of every locality.jsonl row"),
    ])
    roots: list[type[BaseModel]] = [f.PackManifest, f.PredictionRow, f.LocalityRow, f.ProbeRow, PackMetrics]
    return out + "## Models\n\n" + model_sections(reachable(roots))


def render_snapshot_layout() -> str:
    from clkt.snapshots import layout as s

    intro = (f"Layout version **{s.LAYOUT_VERSION}** (`clkt.snapshots.layout.LAYOUT_VERSION`, manifest.json's "
             "`layout_version`; CHANGELOG.md says what each version changed).")
    out = generated_header("Snapshot folder layout", intro) + prose(s.__doc__)
    out += "## Constants\n\n" + _constants([
        ("LAYOUT_VERSION", s.LAYOUT_VERSION, "manifest.json's `layout_version`"),
        ("MANIFEST_FILE", s.MANIFEST_FILE, "the manifest"),
        ("BUILD_FILE", s.BUILD_FILE, "the build's non-deterministic facts"),
        ("CARD_FILE", s.CARD_FILE, "the dataset card"),
        ("CONTROL_DIR", s.CONTROL_DIR, "the control split's folder"),
        ("LOCALITY_DIR", s.LOCALITY_DIR, "the locality split's folder"),
        ("OPEN_DIR", s.OPEN_DIR, "the open track's folder"),
        ("FACTS_FILE", s.FACTS_FILE, "the entities' typed facts"),
        ("LETTERS", " ".join(s.LETTERS), "the answer letters, in option order"),
    ])
    roots: list[type[BaseModel]] = [s.SnapshotManifest, s.BuildInfo, s.DocRow, s.QuestionRow, s.FactsRow, s.OpenRow]
    return out + "## Models\n\n" + model_sections(reachable(roots))
