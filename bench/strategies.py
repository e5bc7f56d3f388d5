"""Bench: strategies compared on the demo's snapshot (issue 31): `cpt-lora` against the knowledge-editing `memit`.

The snapshot is the demo's, frozen on its fixed calendar day (`clkt.cli.demo.DEMO_DAY`, the day the README's
demo figures come from): without `--snapshot`, `clkt demo` runs once with its GPU jobs off in `<work>/demo/`
(about the demo's crawl-to-freeze minutes) and its export is reused by every later run; `--snapshot DIR` names
another frozen snapshot folder (then the figures are that snapshot's, and the JSON line says so).

For each strategy, `clkt evaluate` runs the queue's own job code on the snapshot with the embedded target (train
language en) and writes a result pack; this script times each run (wall and peak RSS from `/usr/bin/time`) and
computes from the pack's predictions, on the `option-loglik` scorer:

- Learn in the train language: base -> injected accuracy on the same test questions, n, exact McNemar p;
- Transfer: the mean over the ordered pairs (en -> L) of A / (A + B) (A: right in en and in L after injection, B:
  right in en only), with a 95% interval from a bootstrap over entities (an entity's questions drawn together);
- kept %: from the job summary's locality counts, when the snapshot has a locality split (null otherwise: a
  snapshot frozen before the split existed has none);
- for `memit`, its requests (every fact the relation templates cover, issue 45: no longer the facts the questions
  ask), the one-time key statistics over the fixed corpus (`edits.json`'s `stats_seconds`, its sha256) reported
  apart from its wall time;
- each job's own seconds and its injection step's (`inject_s`: training and validation, or the edit), and
  memit's injection step over cpt-lora's (figures, not goals).

Each strategy's Learn and kept % are printed (stderr) as its run ends. Goals: every strategy is measured (Learn
and kept % with their n) on the demo's fixed-day snapshot, and memit's requests come from the entities' typed
facts with its statistics from the fixed corpus. No goal asks memit to beat cpt-lora on Learn, kept % or time:
a fair edit that learns less and keeps more is a finding (issue 45), reported as it comes. That the
leaderboard's paired comparison equals a recomputation from the stored per-question results is a test
(`tests/report/test_strategy_compare.py`), not a figure here.

    .venv/bin/python bench/strategies.py [--snapshot DIR] [--work DIR] [--reuse]

`--reuse` reads a strategy's earlier run in `--work` (its pack and timing) instead of running it again.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clkt.report.stats import mcnemar_exact  # noqa: E402

TARGET = "embedded:gemma-3-270m"
SCORER = "option-loglik"
SAMPLES = 2000


def run(strategy: str, snapshot: Path, work: Path, train: str, reuse: bool) -> dict[str, Any]:
    """Run (or reuse) one strategy's `clkt evaluate`; its timing (wall s, peak RSS bytes)."""
    out = work / strategy
    timing = out / "timing.json"
    if reuse and timing.is_file() and (out / "pack" / "predictions.jsonl").is_file():
        return dict(json.loads(timing.read_text()))
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "CLKT_DATA_DIR": str(work / "data")}
    times = out / "time.txt"
    cmd = ["/usr/bin/time", "-f", "%e %M", "-o", str(times), str(ROOT / ".venv" / "bin" / "clkt"), "evaluate", str(snapshot),
           "--model-path", TARGET, "--strategy", strategy, "--train-languages", train, "--out", str(out / "pack"), "--keep-work"]
    with (out / "run.log").open("w") as log:
        rc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    if rc != 0:
        raise SystemExit(f"{strategy}: clkt evaluate exited {rc} (see {out / 'run.log'})")
    wall, rss_kb = times.read_text().split()[-2:]
    got = {"wall_s": float(wall), "peak_rss_bytes": int(rss_kb) * 1024}
    timing.write_text(json.dumps(got))
    return got


def _answers(pack: Path) -> dict[tuple[int, str, str], tuple[int, bool]]:
    """(qid, lang, variant) -> (entity, correct) of the scorer."""
    out: dict[tuple[int, str, str], tuple[int, bool]] = {}
    for line in (pack / "predictions.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r["scorer"] == SCORER and r.get("split", "test") == "test":
            out[(r["qid"], r["lang"], r["variant"])] = (r["entity_id"], bool(r["correct"]))
    return out


def learn(ans: dict[tuple[int, str, str], tuple[int, bool]], train: str) -> dict[str, Any]:
    qs = sorted({q for q, lang, v in ans if lang == train and (q, lang, "base") in ans and (q, lang, "injected") in ans})
    base = [ans[(q, train, "base")][1] for q in qs]
    inj = [ans[(q, train, "injected")][1] for q in qs]
    gained = sum(1 for b, i in zip(base, inj, strict=True) if i and not b)
    lost = sum(1 for b, i in zip(base, inj, strict=True) if b and not i)
    return {"n": len(qs), "base": round(sum(base) / len(qs), 4), "injected": round(sum(inj) / len(qs), 4),
            "gained": gained, "lost": lost, "p": float(f"{mcnemar_exact(gained, lost):.3g}")}


def transfer(ans: dict[tuple[int, str, str], tuple[int, bool]], train: str, seed: int = 0) -> dict[str, Any]:
    """Mean over the pairs (train -> L) of A / (A + B), with an entity-bootstrap interval."""
    langs = sorted({lang for _, lang, _ in ans} - {train})
    ents = sorted({e for e, _ in ans.values()})
    idx = {e: i for i, e in enumerate(ents)}
    a = np.zeros((len(ents), len(langs)))
    ab = np.zeros((len(ents), len(langs)))
    for (q, lang, v), (e, ok) in ans.items():
        if lang != train or v != "injected" or not ok:
            continue
        for j, other in enumerate(langs):
            got = ans.get((q, other, "injected"))
            if got is not None:
                ab[idx[e], j] += 1
                a[idx[e], j] += got[1]

    def mean(rows: np.ndarray) -> float:
        tot_a, tot_ab = a[rows].sum(0), ab[rows].sum(0)
        ok = tot_ab > 0
        return float(np.mean(tot_a[ok] / tot_ab[ok])) if ok.any() else float("nan")

    rng = np.random.default_rng(seed)
    boot = [mean(rng.integers(0, len(ents), len(ents))) for _ in range(SAMPLES)]
    lo, hi = np.nanpercentile(boot, [2.5, 97.5])
    return {"mean": round(mean(np.arange(len(ents))), 4), "ci": [round(float(lo), 4), round(float(hi), 4)],
            "pairs": len(langs), "entities": len(ents), "a_plus_b": int(ab.sum())}


def job_files(work: Path, strategy: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the job summary's locality counts of the scorer, edits.json) from the kept work folder."""
    base = work / strategy / "pack.work"
    locality = edits = None
    for f in base.rglob("outcome.json"):
        summary = json.loads(f.read_text()).get("summary") or {}
        locality = (summary.get("locality") or {}).get(SCORER) or locality
    for f in base.rglob("edits.json"):
        edits = json.loads(f.read_text())
    return locality, edits


def job_times(work: Path, strategy: str) -> dict[str, float | None]:
    """The job's own seconds (its summary): the whole job, and its injection step alone (training with its
    validation, or the edit with its statistics), the base and test passes being the rest."""
    got: dict[str, float | None] = {"job_s": None, "inject_s": None}
    for f in (work / strategy / "pack.work").rglob("outcome.json"):
        summary = json.loads(f.read_text()).get("summary") or {}
        got = {"job_s": summary.get("wall_s"), "inject_s": summary.get("inject_s")}
    return {k: round(v, 1) if v is not None else None for k, v in got.items()}


def kept(locality: dict[str, Any] | None) -> dict[str, Any] | None:
    if not locality:
        return None
    k = sum(int(c["kept"]) for c in locality.values())
    lost = sum(int(c["lost"]) for c in locality.values())
    return {"kept": round(k / (k + lost), 4) if k + lost else None, "n_right_before": k + lost}


def demo_snapshot(work: Path, timeout_min: float) -> Path:
    """The demo's snapshot on its fixed calendar day: `clkt demo` (`DEMO_DAY`, GPU jobs off) in `<work>/demo/`,
    once; its export folder (reused while it is there)."""
    from clkt.cli.demo import DEMO_DAY

    folder = work / "demo"
    found = _exports(folder)
    if len(found) == 1 and (folder / "day.txt").read_text(encoding="utf-8").strip() == f"{DEMO_DAY}":
        return found[0]
    if folder.exists():
        raise SystemExit(f"{folder} holds no single demo snapshot of {DEMO_DAY}: remove it, or pass --snapshot")
    folder.mkdir(parents=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "CLKT_GPU__ENABLED": "false"}
    print(f"building the demo's snapshot of {DEMO_DAY} in {folder} (clkt demo, GPU jobs off)", file=sys.stderr, flush=True)
    with (folder / "demo.log").open("wb") as log:
        rc = subprocess.run([sys.executable, "-m", "clkt.cli", "demo", "--timeout-min", str(timeout_min)], cwd=folder,
                            env=env, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    found = _exports(folder)
    if rc != 0 or len(found) != 1:
        raise SystemExit(f"clkt demo exited {rc} with {len(found)} snapshot export(s); see {folder / 'demo.log'}")
    (folder / "day.txt").write_text(f"{DEMO_DAY}\n", encoding="utf-8")
    return found[0]


def _exports(folder: Path) -> list[Path]:
    """The snapshot export folders under `folder` (a manifest beside a `docs/` folder)."""
    return sorted(m.parent for m in folder.rglob("manifest.json") if (m.parent / "docs").is_dir()) if folder.is_dir() else []


def measure(s: str, snapshot: Path, work: Path, train: str, reuse: bool) -> dict[str, Any]:
    """One strategy's figures (its run, or its earlier run with `reuse`)."""
    t = run(s, snapshot, work, train, reuse)
    ans = _answers(work / s / "pack")
    locality, edits = job_files(work, s)
    f: dict[str, Any] = {**t, **job_times(work, s), "learn": learn(ans, train), "transfer": transfer(ans, train),
                         "kept": kept(locality)}
    if edits is not None:
        f.update(stats_s=edits.get("stats_seconds"), stats_cached=all(v.get("cached") for v in edits["stats"].values()),
                 edit_s=edits.get("edit_seconds"), requests=edits.get("requests"), subjects=edits.get("subjects"),
                 entities_from_facts=edits.get("entities_from_facts"), stats_corpus=edits.get("stats_corpus"))
    lr, k = f["learn"], f["kept"] or {}
    kept_pct = "n/a" if k.get("kept") is None else f"{100 * k['kept']:.0f} %"
    print(f"{s}: Learn {train} {100 * lr['base']:.0f} % -> {100 * lr['injected']:.0f} % (n = {lr['n']}, gained "
          f"{lr['gained']}, lost {lr['lost']}, McNemar p = {lr['p']}); kept % {kept_pct} (n = {k.get('n_right_before')}); "
          f"wall {f['wall_s']:.0f} s", file=sys.stderr, flush=True)
    return f


def goals_met(figures: dict[str, Any], *, fixed_day: bool) -> tuple[dict[str, str], bool]:
    """The goals and whether they are met: none asks memit to beat cpt-lora (see the module docstring)."""
    goals = {"snapshot": "the demo's fixed day", "every_strategy_learn_and_kept": "measured, with n",
             "memit_requests_from_facts": "> 0 entities", "memit_stats_corpus": "the fixed corpus (sha256 recorded)"}
    measured = all(f["learn"]["n"] > 0 and (f["kept"] or {}).get("kept") is not None
                   for name, f in figures.items() if isinstance(f, dict) and "learn" in f)
    edit = figures.get("memit")
    fair = edit is None or ((edit.get("entities_from_facts") or 0) > 0 and bool((edit.get("stats_corpus") or {}).get("sha256")))
    return goals, fixed_day and measured and fair


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snapshot", type=Path, help="a frozen snapshot folder (default: the demo's, on its fixed day)")
    ap.add_argument("--work", type=Path, default=ROOT / "bench" / "results" / "strategies-work")
    ap.add_argument("--strategies", default="cpt-lora,memit")
    ap.add_argument("--train", default="en")
    ap.add_argument("--reuse", action="store_true")
    ap.add_argument("--timeout-min", type=float, default=30.0, help="for building the demo's snapshot")
    args = ap.parse_args()
    snapshot = args.snapshot or demo_snapshot(args.work, args.timeout_min)
    manifest = json.loads((snapshot / "manifest.json").read_text(encoding="utf-8"))
    figures: dict[str, Any] = {"snapshot": {"id": manifest.get("snapshot_id"), "period": manifest.get("period"),
                                            "fixed_day": args.snapshot is None}}
    for s in args.strategies.split(","):
        figures[s] = measure(s, snapshot, args.work, args.train, args.reuse)
    cpt, edit = figures.get("cpt-lora"), figures.get("memit")
    if cpt and edit:  # figures, not goals
        ratio = (edit["wall_s"] - (0 if edit.get("stats_cached") else edit.get("stats_s") or 0)) / cpt["wall_s"]
        figures["memit_wall_ratio_without_stats"] = round(ratio, 3)
        if edit.get("inject_s") and cpt.get("inject_s"):  # the injection steps alone (the edit's statistics apart)
            edit_only = edit["inject_s"] - (0 if edit.get("stats_cached") else edit.get("stats_s") or 0)
            figures["memit_inject_ratio_without_stats"] = round(edit_only / cpt["inject_s"], 3)
    goals, met = goals_met(figures, fixed_day=args.snapshot is None)
    print(json.dumps({"bench": "strategies", "figures": figures, "goals": goals, "met": met}))


if __name__ == "__main__":
    main()
