"""Long chaos run (issue 7): the real daemon against the replay server with faults on and the fake
OpenAI-compatible server for the LLM path, killed with SIGKILL at random moments many times, compared with
one uninterrupted run. With --gpu, a second phase builds the snapshot and runs the GPU jobs (Gemma 3 270M on
the CPU, 1 epoch, 2 languages), killing the daemon during the jobs too.

    python bench/chaos.py [--kills 20] [--gpu --gpu-kills 3] [--no-save]

Ends with one JSON line, also appended to bench/results/chaos.json (with the load and the commit beside it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.support.spread import commit
from tests import chaos_harness as ch

RESULTS = Path(__file__).resolve().parent / "results" / "chaos.json"


def _compare(a: dict[str, Any], b: dict[str, Any], keys: list[str]) -> dict[str, bool]:
    return {k: a[k] == b[k] for k in keys}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--gpu", action="store_true", help="also kill the daemon during GPU jobs (slow on CPU)")
    ap.add_argument("--gpu-kills", type=int, default=3)
    ap.add_argument("--languages", nargs="+", default=["en", "fr", "ja", "zh", "es"])
    ap.add_argument("--no-save", action="store_true", help=f"do not append the result line to {RESULTS.name}")
    args = ap.parse_args()
    figures: dict[str, object] = {}
    held: dict[str, bool] = {}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        fake, url = ch.start_fake_llm(root / "fake.log")
        try:
            ref = ch.run(root / "ref", url, languages=args.languages, kills=0, seed=1)
            chaos = ch.run(root / "chaos", url, languages=args.languages, kills=args.kills, seed=2,
                           kill_window=(0.5, 3.0), drain_timeout=900)
            # built while the fake provider runs: the LLM roles write the open track at freeze
            r1, r2 = ch.build_snapshot(ref.root / "clkt.toml"), ch.build_snapshot(chaos.root / "clkt.toml")
        finally:
            fake.kill()
        a, b = ch.store_facts(ref.db), ch.store_facts(chaos.db)
        held.update(_compare(a, b, ["entities", "questions", "translations", "statuses"]))
        held["no_duplicates"] = not (b["entity_dups"] or b["question_dups"] or b["translation_dups"])
        held["no_stale_lease"] = all(n == 0 for _, n in b["stale_leases"])
        held["llm_repeats_bounded"] = chaos.llm_repeated <= chaos.kills * 4 and ref.llm_repeated == 0
        f1, f2 = ch.snapshot_files(ref.root), ch.snapshot_files(chaos.root)
        held["snapshot_byte_identical"] = r1.returncode == 0 and r2.returncode == 0 and bool(f1) and f1 == f2
        figures.update(
            kills_survived=chaos.kills, entities=len(a["entities"]), questions=len(a["questions"]),
            translations=len(a["translations"]), llm_calls_uninterrupted=ref.llm_calls,
            llm_calls_chaos=chaos.llm_calls, llm_repeated_calls_chaos=chaos.llm_repeated,
            snapshot_files=len(f1),
        )
        if args.gpu:
            fake, url = ch.start_fake_llm(root / "fake2.log")
            try:
                gref = ch.run(root / "gref", url, languages=args.languages[:2], kills=0, seed=3, gpu=True)
                gchaos = ch.run(root / "gchaos", url, languages=args.languages[:2], kills=2, seed=4, gpu=True,
                                kill_window=(5.0, 20.0), drain_timeout=1200)
                for r in (gref, gchaos):  # while the fake provider runs: the LLM roles write the open track
                    built = ch.build_snapshot(r.root / "clkt.toml")
                    if built.returncode != 0:
                        raise SystemExit(built.stdout + built.stderr)
            finally:
                fake.kill()
            ch.run_gpu_phase(gref, kills=0, seed=5)
            ch.run_gpu_phase(gchaos, kills=args.gpu_kills, seed=6)
            ga, gb = ch.store_facts(gref.db), ch.store_facts(gchaos.db)
            held["gpu_snapshot_byte_identical"] = ch.snapshot_files(gref.root) == ch.snapshot_files(gchaos.root)
            held["gpu_results_identical"] = bool(ga["results"]) and ga["results"] == gb["results"]
            held["gpu_no_stale_lease"] = all(n == 0 for _, n in gb["stale_leases"])
            figures.update(gpu_kills_survived=gchaos.kills, gpu_results=len(ga["results"]))
    figures["wall_s"] = round(time.monotonic() - t0, 1)
    figures.update(load_1m=round(os.getloadavg()[0], 2), commit=commit(dirty=True))
    figures["invariants_held"] = held
    goals = {"invariants_held": "all true", "kills_survived": f">= {args.kills}"}
    met = all(held.values()) and figures["kills_survived"] == args.kills
    line = json.dumps({"bench": "chaos", "figures": figures, "goals": goals, "met": met})
    if not args.no_save:
        with RESULTS.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    print(line)


if __name__ == "__main__":
    main()
