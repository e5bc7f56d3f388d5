"""`clkt snapshot list|show|build|export|diff` (and `publish|retract`, from `clkt.cli.publish`) and
`clkt audit sample|score` (the open track's form: `clkt.cli.audit_open`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from clkt import clock
from clkt.cli.common import (
    ConfigOption,
    console,
    fail,
    load_cli_settings,
    open_store,
    print_table,
    read_store,
    run_async,
)
from clkt.cli.publish import add_commands as add_publish_commands
from clkt.cli.snapshot_list import latest, list_snapshots_command
from clkt.cli.vocabulary import comma_list
from clkt.errors import UserError

if TYPE_CHECKING:
    from clkt.snapshots.layout import DomainCounts

__all__ = ["register"]

snapshot_app = typer.Typer(help="Frozen monthly benchmark snapshots.", no_args_is_help=True)
audit_app = typer.Typer(help="Human audit of a snapshot's question–document pairs (Appendix B).", no_args_is_help=True)

IdArg = Annotated[str, typer.Argument(help="snapshot id (or a unique prefix)")]


def register(app: typer.Typer) -> None:
    app.add_typer(snapshot_app, name="snapshot")
    app.add_typer(audit_app, name="audit")


def _counts_table(title: str, counts: Mapping[str, DomainCounts]) -> Table:
    t = Table("domain", "#entities", "#fact QAs (pre-split)", "#validation", "#test", title=title)
    for d, c in counts.items():
        t.add_row(d, str(c.entities), str(c.fact_qas), str(c.val), str(c.test))
    return t


def _audit_procedure(audit: Mapping[str, Any]) -> str:
    """How a stored audit's precision was reached: a majority vote of N annotators with their agreement, or a
    single annotator's (an audit stored before the procedure was recorded: told from its number of annotators)."""
    n = audit.get("annotators")
    if n == 1:
        return "single annotator (no majority vote, no agreement)"
    procedure = str(audit.get("procedure") or f"majority vote of {n} annotators")
    agreement = audit.get("agreement")
    if not isinstance(agreement, Mapping):
        return procedure + ("; agreement not recorded" if n else "")
    kappa = agreement.get("kappa")
    if kappa is None:
        return f"{procedure}; {agreement.get('method')} undefined (every verdict the same)"
    return (f"{procedure}; {agreement.get('method')} {kappa:.2f} over {agreement.get('pairs')} pairs, "
            f"{agreement.get('observed', 0):.0%} unanimous")


snapshot_app.command("list", help="Snapshots in the store, newest period first.")(list_snapshots_command)
snapshot_app.command("latest", help="The id of the latest frozen snapshot (newest period), for a script: "
                                    "clkt report \"$(clkt snapshot latest)\".")(latest)


@snapshot_app.command("show", help="A snapshot's Table-3 counts, provenance and audit precision.")
def show(ident: IdArg, config: ConfigOption = None, as_json: Annotated[bool, typer.Option(
        "--json", help="the stored snapshot as one JSON object (its manifest and audit included)")] = False) -> None:
    from clkt.snapshots.stored import stored_manifest
    from storage.snapshots import get_snapshot

    settings = load_cli_settings(config)

    async def read_snapshot() -> Any:
        async with read_store(settings) as store, store.session() as s:
            return await get_snapshot(s, ident)

    r = run_async(read_snapshot)
    if as_json:
        from pydantic import TypeAdapter

        print(TypeAdapter(type(r)).dump_json(r).decode())
        return
    m = stored_manifest(r.manifest)  # None: not frozen yet (what a manifest holds is shown as unknown)
    console.print(f"[bold]{r.id}[/] — {r.status.value}{' (partial)' if r.partial else ''}")
    console.print(f"spec {r.spec}, period {r.period} ({m and m.period_start} – {m and m.period_end}), seed {r.seed}, "
                  f"revision {m.revision if m else 0}, built {r.built_at.isoformat()}")
    console.print(f"languages: {', '.join(m.languages if m else [])}; content sha256 {r.content_sha256}")
    console.print("targets: " + ", ".join(f"{t.name} (cutoff {t.cutoff})" for t in (m.targets if m else [])))
    if m is None:
        console.print("agents: None  producers None")
    else:
        console.print(f"agents: {m.agents.backend} {m.agents.models or ''} producers {m.agents.producers}")
    if r.superseded_by:
        console.print(f"superseded by {r.superseded_by}")
    if m is not None and m.missing:
        console.print(f"[yellow]short of the quotas:[/] {m.missing}")
    for note in m.notes if m else []:
        console.print(f"[yellow]note:[/] {note}")
    print_table(_counts_table("Benchmark statistics (Table 3)", m.counts if m else {}))
    if r.audit:
        t = Table("domain", "pairs", "correct", "precision", title=f"Human audit ({_audit_procedure(r.audit)})")
        for d, v in {**r.audit.get("domains", {}), "overall": r.audit.get("overall", {})}.items():
            t.add_row(d, str(v.get("pairs")), str(v.get("correct")), f"{v.get('precision', 0):.1%}")
        print_table(t)
        if r.audit.get("languages"):
            print_table(_stored_language_table(r.audit))
    console.print(f"files: {r.export_path}")


@snapshot_app.command("build", help="Build and freeze the spec's snapshot of a period now.")
def build(
    period: Annotated[str, typer.Option("--period", help="YYYY-MM (monthly cadence), YYYY-Www, YYYY-MM-DD")],
    config: ConfigOption = None,
    spec: Annotated[str | None, typer.Option("--spec", help="must name the config's spec")] = None,
    force: Annotated[bool, typer.Option("--force", help="rebuild a frozen period as a new revision")] = False,
    partial: Annotated[bool, typer.Option("--partial", help="freeze even if under quota")] = False,
) -> None:
    from clkt.publish.service import freeze_hook
    from clkt.services import agent_backend, snapshot_config
    from clkt.snapshots.builder import BuildStatus, build_snapshot
    from clkt.snapshots.service import enqueue_spec_jobs, post_webhook

    settings = load_cli_settings(config)

    publish_hook = freeze_hook(settings.publish)

    async def on_frozen(session: Any, snap: Any) -> None:
        if settings.gpu.enabled:
            await enqueue_spec_jobs(session, snap.id, spec=settings.spec, gpu=settings.gpu)
        if publish_hook is not None:  # the daemon publishes by itself: it also publishes what this build froze
            await publish_hook(session, snap)

    async def run_build() -> Any:
        async with open_store(settings) as store:
            # the LLM backend's roles write the open track (`agents.backend = "llm"`); the template engine needs none
            roles = agent_backend(settings, store=store) if settings.agents.backend == "llm" else None
            res = await build_snapshot(store, snapshot_config(settings), period=period, spec=spec, force=force,
                                       on_frozen=on_frozen, allow_partial=True if partial else None, open_roles=roles)
        if res.status is BuildStatus.frozen and settings.snapshot.webhook_url:
            import aiohttp

            try:
                async with aiohttp.ClientSession() as http:
                    await post_webhook(http, settings.snapshot.webhook_url,
                                       {"event": "snapshot.frozen", "snapshot_id": res.snapshot_id, "spec": res.spec,
                                        "period": res.period, "trigger": "cli"}, tries=3, backoff_s=1.0, timeout_s=10.0)
            except Exception as e:  # noqa: BLE001 - the build stands; the notice is best effort, its failure said
                console.print(f"[yellow]webhook failed:[/] {type(e).__name__}: {e}")
        return res

    res = run_async(run_build)
    if res.status is not BuildStatus.frozen:
        t = Table("domain", "quota", "selected", "missing", "ready in period", "eligible", title=f"{res.spec} {res.period}: under quota, not frozen")
        for r in res.report:
            t.add_row(r.domain, str(r.quota), str(r.selected), str(r.missing), str(r.ready_in_period), str(r.eligible))
        print_table(t)
        for reason, n in sorted(res.excluded.items()):
            console.print(f"  excluded: {reason}: {n}")
        raise typer.Exit(1)
    console.print(f"[green]{res.describe()}[/]")
    print_table(_counts_table("Benchmark statistics (Table 3)", res.counts))


@snapshot_app.command("export", help="Write a snapshot in one format into a new folder.")
def export(
    ident: IdArg,
    fmt: Annotated[str, typer.Option("--format", help="native | reference | hf | lm-eval")],
    out: Annotated[Path, typer.Option("--out", help="a new (or empty) folder")],
    config: ConfigOption = None,
) -> None:
    from clkt.snapshots.builder import clkt_version
    from clkt.snapshots.export import export_format
    from clkt.snapshots.formats import FORMATS
    from clkt.snapshots.stored import load_snapshot

    if fmt not in FORMATS:
        raise fail(f"--format: unknown format {fmt!r}; choose from {', '.join(FORMATS)}")
    settings = load_cli_settings(config)

    async def run_export() -> list[str]:
        async with read_store(settings) as store, store.session() as s:
            snap = await load_snapshot(s, ident)
        return export_format(snap.content, snap.manifest, fmt, out, built_at=snap.row.built_at.isoformat(),
                             clkt_version=clkt_version())

    files = run_async(run_export)
    console.print(f"wrote {len(files)} files to {out}")


@snapshot_app.command("diff", help="Entities and questions added or removed between two snapshots.")
def diff(a: IdArg, b: IdArg, config: ConfigOption = None, as_json: Annotated[bool, typer.Option(
        "--json", help="one JSON object: both ids and every list of ids")] = False) -> None:
    from clkt.snapshots.stored import diff_snapshots

    settings = load_cli_settings(config)

    async def read_diff() -> Any:
        async with read_store(settings) as store, store.session() as s:
            return await diff_snapshots(s, a, b)

    d = run_async(read_diff)
    if as_json:
        import dataclasses
        import json

        print(json.dumps(dataclasses.asdict(d)))
        return
    console.print(f"{d.a} → {d.b}")
    for label, ids in (("entities added", d.entities_added), ("entities removed", d.entities_removed),
                       ("questions added", d.questions_added), ("questions removed", d.questions_removed),
                       ("questions that changed split", d.split_changed)):
        shown = ", ".join(map(str, ids[:30])) + (" …" if len(ids) > 30 else "")
        console.print(f"{label}: {len(ids)}" + (f" ({shown})" if ids else ""))


@audit_app.command("sample", help="A seeded sample of document–question pairs per language and domain: CSV + HTML "
                                  "form; with --open, of the open track's answers to label, blind to the verdicts.")
def audit_sample(
    ident: IdArg,
    out: Annotated[Path, typer.Option("--out", help="CSV file to write (the HTML form goes next to it)")],
    fraction: Annotated[float | None, typer.Option("--fraction", min=0.0, max=1.0,
                                                   help="the share of each (language, domain) drawn [default: 0.2]")] = None,
    per_language: Annotated[int | None, typer.Option(
        "--per-language", help="instead of --fraction: this many pairs per language, shared over its domains "
                               "in proportion to their sizes (with --open: answers per language, default 50)")] = None,
    language: Annotated[list[str] | None, typer.Option(
        "--language", help="the languages to sample: en,fr (or repeated; default: the source language and every "
                           "translation)")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="default: the snapshot's seed")] = None,
    open_track: Annotated[bool, typer.Option(
        "--open", help="the open track's form: distinct stored answers per language (the question, gold, aliases "
                       "and answer; never a verdict), a CSV with a blank label column and an HTML form that saves it")] = False,
    config: ConfigOption = None,
) -> None:
    from clkt.snapshots.audit import sample_pairs, write_sample
    from clkt.snapshots.stored import load_snapshot

    if open_track:
        from clkt.cli.audit_open import sample_open
        from clkt.snapshots.audit_open import DEFAULT_PER_LANGUAGE

        if fraction is not None:
            raise fail("--fraction: the open form draws --per-language answers per language")
        sample_open(ident, out, per_language=DEFAULT_PER_LANGUAGE if per_language is None else per_language, languages=comma_list(language),
                    seed=seed, config=config)
        return
    fraction = 0.2 if fraction is None else fraction
    settings = load_cli_settings(config)

    async def draw_sample() -> tuple[Path, Path, dict[str, int]]:
        async with read_store(settings) as store, store.session() as s:
            snap = await load_snapshot(s, ident)
        pairs = sample_pairs(snap.content, fraction=fraction, seed=snap.row.seed if seed is None else seed,
                             languages=comma_list(language), per_language=per_language)
        c, h = write_sample(pairs, out)
        counts: dict[str, int] = {}
        for p in pairs:
            counts[p.language] = counts.get(p.language, 0) + 1
        return c, h, counts

    c, h, counts = run_async(draw_sample)
    per = ", ".join(f"{lang} {n}" for lang, n in counts.items())
    console.print(f"{sum(counts.values())} pairs ({per}) → {c} and {h}")


def _language_table(score: Any) -> Table:
    t = Table("language", "pairs", "correct", "precision", "95% CI", "annotators", "agreement",
              title=f"per language ({score.ci_method})")
    for lang, v in score.languages.items():
        t.add_row(lang or "?", str(v.pairs), str(v.correct), f"{v.precision:.1%}", f"[{v.ci_low:.1%}, {v.ci_high:.1%}]",
                  str(v.annotators), _agreement_text(v.agreement))
    return t


def _stored_language_table(audit: Mapping[str, Any]) -> Table:
    """A stored audit's precision per language (as `audit score` prints it)."""
    t = Table("language", "pairs", "correct", "precision", "95% CI", "annotators", "agreement",
              title=f"Human audit per language ({audit.get('ci_method', 'Wilson score interval, 95 %')})")
    for lang, v in audit["languages"].items():
        t.add_row(lang or "?", str(v.get("pairs")), str(v.get("correct")), f"{v.get('precision', 0):.1%}",
                  f"[{v.get('ci_low', 0):.1%}, {v.get('ci_high', 1):.1%}]", str(v.get("annotators")),
                  _agreement_text(v.get("agreement")))
    return t


def _agreement_text(agreement: Any) -> str:
    if agreement is None:
        return "single annotator"
    a = agreement if isinstance(agreement, Mapping) else agreement.model_dump()
    return "undefined" if a.get("kappa") is None else f"{a.get('method')} {a['kappa']:.2f}"


@audit_app.command("score", help="Majority vote over annotators' CSVs; precision per domain and per language, "
                                 "stored with the snapshot. Open-answer forms: each scorer's agreement with the "
                                 "labels (Cohen's κ per language), printed.")
def audit_score(
    files: Annotated[list[Path], typer.Argument(help="annotated CSV files")],
    retract_rejected: Annotated[bool, typer.Option(
        "--retract-rejected", help="retract (errata) every question the majority judged not correct, "
                                   "with the audit as the reason")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="open-answer forms: the score as one JSON object")] = False,
    config: ConfigOption = None,
) -> None:
    from clkt.snapshots.audit import score_files
    from clkt.snapshots.stored import stored_manifest
    from storage.snapshots import get_snapshot, set_snapshot_audit

    if _open_forms(files):
        from clkt.cli.audit_open import score_open_forms

        if retract_rejected:
            raise fail("--retract-rejected: an open-answer form judges answers, not questions")
        score_open_forms(files, as_json=as_json, config=config)
        return
    if as_json:
        raise fail("--json: only for open-answer forms")
    settings = load_cli_settings(config)

    async def store_score() -> tuple[Any, list[tuple[int, bool]] | None]:
        score = score_files(files)
        wanted = _rejected_qids(files) if retract_rejected else None
        async with read_store(settings) as store, store.transaction() as s:  # the audit and its retractions: all or nothing
            snap = await get_snapshot(s, score.snapshot_id)
            m = stored_manifest(snap.manifest)
            have = list(m.languages) if m else []
            unknown = [lang for lang in score.languages if lang and lang not in have]
            if unknown:
                raise UserError(f"the audit form has language(s) {', '.join(unknown)} that snapshot {snap.id} does "
                                f"not have (it has {', '.join(have) or 'none'})")
            await set_snapshot_audit(
                s, score.snapshot_id, {**score.model_dump(mode="json"), "scored_at": clock.now().isoformat()}
            )
            done = None if wanted is None else await _retract_rejected(s, files, wanted, snap.id, settings)
        return score, done

    score, done = run_async(store_score)
    t = Table("domain", "pairs", "correct", "precision", *(f"#{c}" for c in ("unrelated", "too_general", "unverifiable", "wrong_answer")),
              title=f"{score.snapshot_id}: {_audit_procedure(score.model_dump(mode='json'))}")
    for d, v in {**score.domains, "overall": score.overall}.items():
        t.add_row(d, str(v.pairs), str(v.correct), f"{v.precision:.1%}", *(str(n) for n in v.violations.values()))
    print_table(t)
    if score.languages:
        print_table(_language_table(score))
    if done is not None:
        new = [q for q, n in done if n]
        console.print(f"retracted {len(new)} question(s) of {score.snapshot_id} the audit rejected"
                      + (f": {', '.join(map(str, new))}" if new else "")
                      + (f"; {len(done) - len(new)} already retracted" if len(done) > len(new) else ""))


def _open_forms(files: list[Path]) -> bool:
    """Whether the files are open-answer forms (all of them; a mix is refused)."""
    from clkt.snapshots.audit_open_score import is_open_form

    try:
        kinds = {is_open_form(f) for f in files}
    except UserError as e:
        raise fail(str(e)) from None
    if len(kinds) > 1:
        raise fail("the files mix open-answer forms and MCQ audit sheets: score each kind on its own")
    return kinds == {True}


def _rejected_qids(files: list[Path]) -> dict[int, list[str]]:
    """The questions the audit's majority rejected (in any language), each with its rejected languages."""
    from clkt.snapshots.audit import rejected

    _, pairs = rejected(files)
    langs: dict[int, list[str]] = {}
    for lang, qid in pairs:
        langs.setdefault(qid, []).append(lang or "?")
    return langs


async def _retract_rejected(
    s: Any, files: list[Path], langs: dict[int, list[str]], snapshot_id: str, settings: Any,
) -> list[tuple[int, bool]]:
    """Retract every rejected question in the audit's transaction (a refusal, e.g. a snapshot not frozen, rolls
    the stored audit back as well); already retracted ones stand. (qid, new) per question."""
    from clkt.publish.errata import retract_in

    done = []
    for qid, ls in sorted(langs.items()):
        reason = f"rejected by the human audit ({', '.join(Path(f).name for f in files)}; {', '.join(ls)})"
        r = await retract_in(s, snapshot_id, qid, reason=reason, publish=settings.publish)
        done.append((qid, r.new))
    return done


add_publish_commands(snapshot_app)  # `clkt snapshot publish` and `clkt snapshot retract`
