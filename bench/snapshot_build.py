"""Snapshot benchmark: a month of `--entities` ready entities (5 questions each, 5 languages) and the build
of a snapshot with quotas of `--quota` per domain (selection, layout, every export format, commit).
Goal: the paper-sized release (30/30/20/20 entities) builds in under 10 s, a 4x larger one in under 40 s.

    python bench/snapshot_build.py [--entities 800]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert

from clkt.config import load_settings
from clkt.services import snapshot_config
from clkt.snapshots.builder import build_snapshot
from storage.engine import Store
from storage.models import Document, Entity, EntityStatus, Probe, Question, QuestionStatus, Translation

LANGS = ["en", "ja", "zh", "fr", "es"]
SOURCES = {"movies": ["tmdb"], "music": ["musicbrainz", "deezer"], "sports": ["thesportsdb"], "disasters": ["usgs", "gdacs"]}
JUNE = datetime(2025, 6, 1, tzinfo=UTC)


async def fill(store: Store, n: int) -> None:
    async with store.transaction() as s:
        ents, docs, probes, qs, trs = [], [], [], [], []
        for i in range(n):
            dom = list(SOURCES)[i % 4]
            eid = i + 1
            ents.append(dict(id=eid, source=SOURCES[dom][i % len(SOURCES[dom])], external_id=f"e{i}", domain=dom,
                             name=f"entity {i}", occurred_at=JUNE + timedelta(hours=i % 700), payload={}, facts={},
                             content_hash="h", status=EntityStatus.ready))
            for lang in LANGS:
                docs.append(dict(entity_id=eid, lang=lang, origin="source", text=f"[{lang}] document {i} " + "fact. " * 60,
                                 text_hash="h", producer="template", content_hash="h"))
            probes.append(dict(entity_id=eid, target_model="gemma-3-270m", lang="en", prompt="p", response="r",
                               known=False, matched_facts=[], reason="", judge="j", prompt_version="1"))
            for k in range(5):
                qid = eid * 10 + k
                opts = [f"o{k}{j}" for j in range(4)]
                qs.append(dict(id=qid, entity_id=eid, slot=f"s{k}", lang="en", question=f"q{k} {i}?", options=opts,
                               answer_index=k % 4, evidence="e", generator="template", prompt_version="1",
                               status=QuestionStatus.translated))
                for lang in LANGS:
                    trs.append(dict(question_id=qid, lang=lang, question=f"[{lang}] q{k} {i}?", options=opts,
                                    answer_index=k % 4, translator="template", prompt_version="1", checks={}))
        for table, rows in ((Entity, ents), (Document, docs), (Probe, probes), (Question, qs), (Translation, trs)):
            for j in range(0, len(rows), 2000):
                await s.execute(insert(table), rows[j : j + 2000])


async def main(entities: int, quota: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        toml = Path(tmp) / "clkt.toml"
        toml.write_text(
            f'offline_demo = true\ndata_dir = "{tmp}"\n[spec]\nname = "bench"\n[snapshot]\ncadence = "monthly"\n'
            f'out_dir = "{tmp}/snapshots"\n[snapshot.quotas]\n' + "".join(f"{d} = {quota}\n" for d in SOURCES)
        )
        settings = load_settings(toml, environ={})
        async with Store(url=f"sqlite+aiosqlite:///{tmp}/s.db") as store:
            await fill(store, entities)
            t0 = time.perf_counter()
            res = await build_snapshot(store, snapshot_config(settings), period="2025-06", now=datetime(2025, 7, 2, tzinfo=UTC))
            dt = time.perf_counter() - t0
            assert res.path is not None, res.describe()
            size = sum(p.stat().st_size for p in res.path.rglob("*") if p.is_file())
    return {"build_s": round(dt, 3), "questions": quota * 4 * 5, "export_mb": round(size / 2**20, 2)}


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--entities", type=int, default=800)
    args = ap.parse_args()
    small = asyncio.run(main(args.entities, 30))
    large = asyncio.run(main(args.entities, 120))
    goals = {"paper_build_s": 10.0, "large_build_s": 40.0}
    met = small["build_s"] < goals["paper_build_s"] and large["build_s"] < goals["large_build_s"]
    figures = {"paper_build_s": small["build_s"], "paper_export_mb": small["export_mb"], "large_build_s": large["build_s"],
               "large_questions": large["questions"], "large_export_mb": large["export_mb"], "entities_in_store": args.entities}
    print(json.dumps({"bench": "snapshot_build", "figures": figures, "goals": goals, "met": met}))
