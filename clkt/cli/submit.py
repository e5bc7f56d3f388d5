"""`clkt submit PACK`: verify a result pack (`clkt evaluate`'s) against this store's snapshot and store it once
(`clkt.packs.intake`). A refusal is one line, exit 2, and the store as it was.

`clkt submit --reproduce K PACK_OR_ID` re-runs the pack's jobs on this service's GPU engine (`[gpu] engine`: local, or
the Ray cluster at `ray_address`; `--engine` / `--ray-address` override it, as `clkt evaluate`'s) and compares the
letters of K sampled questions (or `all`) and, with open answers, the normaliser's verdicts of K re-generated ones,
storing the result on the pack's row (`clkt.packs.reproduce`); a pack
given as a file or folder is submitted first, once the engine is ready, a stored one is named by its sha256 (or a
prefix of it).

`clkt submit --url URL PACK` stores nothing here: it uploads the pack to a service's `POST /packs`
(`clkt.packs.upload`) with the intake token read from the environment variable `--token-env` names, and prints the
service's verdict as a local submission prints its own."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from clkt.cli.common import ConfigOption, console, err_console, fail, load_cli_settings, plain, read_store, run_async
from clkt.cli.evaluate import ENGINE_HELP, RAY_ADDRESS_HELP, gpu_for_engine

if TYPE_CHECKING:
    from clkt.config import GpuSettings, Settings
    from clkt.inject.engine import JobEngine
    from clkt.packs.intake import Intake
    from clkt.packs.metrics import KeptCell, OpenCell, OpenMetrics, ScorerMetrics
    from clkt.packs.pack import Pack
    from storage.engine import Store

__all__ = ["kept_lines", "parse_k", "register"]

_REPRODUCE_HELP = (
    "re-run the pack's jobs on this service's engine and compare the letters of K test questions (or 'all') drawn "
    "after the re-run from a fresh random nonce, stored with the verdict, so nothing the submitter knows decides "
    "them (with open answers, also the normaliser's verdicts of K of them re-generated with the pack's prompt "
    "version); the result marks its leaderboard rows reproduced or flagged, and a later "
    "re-run replaces an earlier one. The injection trains on the whole documents of each train language whatever K "
    "is: K limits the questions compared, not the training"
)


DEFAULT_TOKEN_ENV = "CLKT_INTAKE_TOKEN"  # what the README names the service's `[http] intake_token_env`
_URL_HELP = (
    "upload the pack to a clkt service's POST /packs (http://HOST:PORT, or the whole .../packs address) in place of "
    "storing it here: the service verifies it and answers accepted, already had, or refused with its reason; the "
    "token is read from the environment (--token-env), never from the command line"
)
_TOKEN_ENV_HELP = "with --url: the environment variable that holds the service's intake token"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def register(app: typer.Typer) -> None:
    app.command("submit", help="Verify a result pack (clkt evaluate) against this store's snapshot and store it; "
                               "the same pack twice changes nothing. With --reproduce K: re-run it here and compare "
                               "letters. With --url: upload it to a service's POST /packs instead.")(submit)
    app.command("intake-token", help="A new upload token for one submitter of POST /packs: the token is printed once; "
                                     "only its sha256 is written, as a line of [http] intake_tokens_file")(intake_token)


def intake_token(
    name: Annotated[str, typer.Argument(help="the submitter (letters, digits, _ . @ -)")],
    file: Annotated[Path, typer.Option("--file", help="the tokens file to add the line to ([http] intake_tokens_file)")],
) -> None:
    import secrets

    from clkt.web.intake_gate import read_tokens_file, token_line

    token = secrets.token_urlsafe(32)
    line = token_line(name, token)
    if file.exists() and name in read_tokens_file(file).values():
        raise fail(f"{file} already has a token for {name} (remove its line to replace it)")
    fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    err_console.print(f"added {name} to {file} (its sha256 only); the token, shown once, is on stdout", markup=False)
    typer.echo(token)


def parse_k(text: str) -> int | None:
    """`--reproduce`'s K: a number of questions above 0, or `all` (None)."""
    if text.strip().lower() == "all":
        return None
    try:
        k = int(text)
    except ValueError:
        k = 0
    if k <= 0:
        raise fail(f"--reproduce {text!r}: a number of questions above 0, or all")
    return k


def _report(got: Intake, *, remote: bool = False) -> None:
    from clkt.report.probed import probe_label

    here, key = ("by the service", "the service's answer key") if remote else ("here", "this store's answer key")
    if not got.stored:
        console.print(plain(f"pack {got.pack_sha256[:12]} ({got.target} on {got.snapshot_id}) was submitted before: "
                            "nothing changed"))
        return
    if not got.claims_match:
        err_console.print(plain(f"clkt: warning: the pack's metrics.json does not match its predictions "
                                f"({got.claims_note}); the metrics recomputed {here} are stored, the pack's claims ignored"),
                          highlight=False)
    if got.flags_fixed:
        err_console.print(plain(f"clkt: warning: {got.flags_fixed} answers' `correct` disagreed with their letter "
                                f"against {key}; scored by the letters"), highlight=False)
    console.print(plain(f"submitted pack {got.pack_sha256[:12]}: {got.target} on {got.snapshot_id}"))
    probe = got.metrics.probe if got.metrics is not None else None
    console.print(plain(f"  probe: {probe_label([probe])}" + (f", judged {here} ({probe.judge} judge); the figures "
                                                             "leave the excluded entities out" if probe else "")))
    if got.metrics is not None:
        for scorer, m in got.metrics.scorers.items():
            console.print(plain(f"  {scorer}: {_means_line(m)}"))
            for line in kept_lines(scorer, m.locality):
                console.print(plain(line))
        for line in open_lines(got.metrics.open, here=here):
            console.print(plain(line))


def open_lines(m: OpenMetrics | None, *, here: str) -> list[str]:
    """The open track's figures, apart from the MCQ scorers' (none without open answers): its means, then the test
    split's accuracy per train language and variant in each language with n and the interval over entities, or
    "too few" with the counts (`OpenCell.too_few`)."""
    if m is None:
        return ["  open track: none (the pack holds no open answers)"]
    out = [f"  open track ({m.scorer}, the answers scored {here}; never pooled with the multiple-choice figures): "
           f"{_means_line(m.figures)}"]
    by: dict[tuple[str, str], list[OpenCell]] = {}
    for c in m.cells:
        if c.split == "test":
            by.setdefault((c.train_lang, c.variant), []).append(c)
    for (train, variant), cells in sorted(by.items()):
        out.append(f"    trained in {train}, {variant}: " + "; ".join(f"{c.lang} {_open_cell(c)}" for c in cells))
    return out


def _open_cell(c: OpenCell) -> str:
    """`75.0 % [60.0, 90.0] (n=20, 8 entities)`, or `too few (3 of n=4 right, 1 entities)`: the counts, no rate."""
    from clkt.report.basics import ci1_text

    other = f", {c.other_language} in another language" if c.other_language else ""
    if c.too_few or c.accuracy is None:
        return f"too few ({c.correct} of n={c.n} right, {c.entities} entities{other})"
    return f"{c.accuracy * 100:.1f} %{ci1_text(c.ci)} (n={c.n}, {c.entities} entities{other})"


def kept_lines(scorer: str, cells: Sequence[KeptCell]) -> list[str]:
    """Kept % of a scorer's locality answers, one line per train language (none without them)."""
    from clkt.report.locality import kept_text

    by_train: dict[str, list[KeptCell]] = {}
    for c in cells:
        by_train.setdefault(c.train_lang, []).append(c)
    return [f"  {scorer}, trained in {train}: kept % of the questions about entities the target knew (right before "
            "injection, still right after) " + "; ".join(f"{c.lang} {kept_text(c)}" + ("" if c.too_few else f" of {c.right_before}")
                                                         for c in cs)
            for train, cs in sorted(by_train.items())]


def submit(
    pack: Annotated[str, typer.Argument(help="the pack: a folder or a .tar.gz archive; with --reproduce also the "
                                             "sha256 (or a prefix) of a pack submitted before", metavar="PACK_OR_ID")],
    reproduce: Annotated[str | None, typer.Option("--reproduce", metavar="K", help=_REPRODUCE_HELP)] = None,
    model_path: Annotated[str | None, typer.Option("--model-path", help="with --reproduce: the model to re-run (a local folder, a "
                                                             "cached Hub id, embedded:<name>) in place of the one the pack "
                                                             "names, where this service holds the same weights")] = None,
    model: Annotated[str | None, typer.Option("--model", hidden=True, help="old spelling of --model-path")] = None,
    url: Annotated[str | None, typer.Option("--url", help=_URL_HELP)] = None,
    token_env: Annotated[str, typer.Option("--token-env", metavar="NAME", help=_TOKEN_ENV_HELP)] = DEFAULT_TOKEN_ENV,
    engine: Annotated[str | None, typer.Option("--engine", metavar="local|ray", help="with --reproduce: " + ENGINE_HELP)] = None,
    ray_address: Annotated[str | None, typer.Option("--ray-address", metavar="ADDRESS",
                                                    help="with --reproduce: " + RAY_ADDRESS_HELP)] = None,
    config: ConfigOption = None,
) -> None:
    from clkt.packs.intake import submit_pack
    from clkt.packs.pack import read_pack

    if url is not None and reproduce is not None:
        raise fail("--url uploads a pack to a service; --reproduce re-runs one on this service: run --reproduce there")
    k = parse_k(reproduce) if reproduce is not None else None
    from clkt.cli.vocabulary import renamed

    model = renamed(model_path, model, new="--model-path", old="--model")
    if model is not None and reproduce is None:
        raise fail("--model-path is an option of --reproduce (the model re-run here)")
    if (engine is not None or ray_address is not None) and reproduce is None:
        raise fail("--engine and --ray-address are options of --reproduce (where the jobs re-run here)")
    if url is not None:
        _upload(Path(pack), url, token_env)
        return
    if token_env != DEFAULT_TOKEN_ENV:
        raise fail("--token-env is an option of --url (the upload's token)")
    settings = load_cli_settings(config)
    gpu = gpu_for_engine(settings.gpu, engine, ray_address) if reproduce is not None else settings.gpu
    path = Path(pack)
    if reproduce is not None and not path.exists():
        _reproduce_stored(settings, gpu, pack, k, model)
        return
    store_ = read_store(settings)  # never creates a store: a pack is checked against an existing one
    from clkt.report.window import default_query

    board = default_query(settings.spec, settings.snapshot)  # its rows on the default board are kept at intake

    async def go() -> tuple[Intake, Pack]:
        from clkt.packs.reproduce import open_plan_engine

        loaded = read_pack(path)  # the files first: a bad pack never opens the store
        async with store_ as store:
            if reproduce is None:
                return await submit_pack(store, loaded, buffer_days=settings.spec.temporal_buffer_days, board=board), loaded
            plan = await _plan(store, settings, gpu, loaded.sha256, loaded.manifest, {r.qid for r in loaded.predictions},
                               k, model, open_qids={r.qid for r in loaded.open_answers})
            async with open_plan_engine(plan) as ready:  # ready to run before the pack is stored
                got = await submit_pack(store, loaded, buffer_days=settings.spec.temporal_buffer_days, board=board)
                _report(got)
                await _rerun(store, plan, _pack_answers(loaded), ready, opened=loaded.open_answers)
            return got, loaded

    got, _ = run_async(go)
    if reproduce is None:
        _report(got)


def _intake_url(url: str) -> str:
    """`--url` as the address of `POST /packs`: a service's base address gets the path appended."""
    from urllib.parse import urlsplit

    from clkt.web.intake import INTAKE_PATH

    try:
        parts = urlsplit(url.strip())
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port or 1) > 0  # a bad port raises
    except ValueError:
        ok = False
    if not ok:
        raise fail(f"--url {url!r}: an http:// or https:// address of a clkt service (http://HOST:8765)")
    if parts.username or parts.password:
        raise fail("--url: no user or password in the address; the token is read from the environment (--token-env)")
    path = parts.path.rstrip("/")
    return parts._replace(path=path if path.endswith(INTAKE_PATH) else path + INTAKE_PATH).geturl()


def _upload(path: Path, url: str, token_env: str) -> None:
    """`clkt submit --url URL PACK`: the pack uploaded (`clkt.packs.upload`), the service's verdict printed."""
    from clkt.logs import register_secrets
    from clkt.packs.upload import post_pack, upload_body

    if not _ENV_NAME.match(token_env):
        raise fail("--token-env takes the NAME of an environment variable that holds the token, not the token")
    target = _intake_url(url)
    token = os.environ.get(token_env, "").strip()
    if not token:
        raise fail(f"no intake token: the environment variable {token_env} is unset or empty (--token-env names "
                   "another)")
    register_secrets([token])  # from here on, redacted wherever text goes out
    body = upload_body(path)
    err_console.print(plain(f"uploading pack {path} ({len(body):,} bytes) to {target}"), highlight=False)
    got = run_async(lambda: post_pack(target, body, token=token, token_env=token_env))
    _report(got, remote=True)


def _pack_answers(loaded: Pack) -> Any:
    from clkt.packs.reproduce import answers_of_rows

    return answers_of_rows(loaded.predictions)


async def _plan(store: Store, settings: Settings, gpu: GpuSettings, sha: str, manifest: Any, qids: Any, k: int | None,
                model: str | None, *, open_qids: Any = ()) -> Any:
    from clkt.packs.reproduce import plan_reproduction

    return await plan_reproduction(store, sha, manifest, qids, k=k, gpu=gpu, data_dir=Path(settings.data_dir), model=model,
                                   open_qids=open_qids)


async def _rerun(store: Store, plan: Any, answers: Any, engine: JobEngine, *, opened: Any = ()) -> None:
    from clkt.packs.reproduce import run_reproduction, save_reproduction

    for note in plan.notes:
        err_console.print(plain(f"clkt: warning: {note}"), highlight=False)
    where = f" at {plan.request.gpu.ray_address}" if engine.name == "ray" else ""
    also = " and the verdicts of the re-generated answers to open questions" if plan.open_qids else ""
    console.print(plain(f"re-running pack {plan.pack_sha256[:12]}'s jobs on the {engine.name} engine{where} to compare "
                        f"{plan.compared} questions{also} (drawn when the jobs are done)"))
    result = await run_reproduction(plan, answers, engine=engine, opened=opened,
                                    progress=lambda line: err_console.print(plain(line), highlight=False))
    await save_reproduction(store, plan, result)
    verdict = "reproduced" if result.reproduced else f"NOT REPRODUCED ({result.failed})"
    console.print(plain(f"pack {plan.pack_sha256[:12]}: {verdict}: {result.agreed}/{result.checked} letters agree in "
                        f"{len(result.cells)} cells (each needs {100 * result.threshold:.0f} %; Learn, Overall and Transfer "
                        f"within {result.tolerance}) on {result.questions} questions drawn by nonce {result.nonce} on the "
                        f"{result.engine} engine; stored (replaces any earlier re-run)"))
    if result.open is not None:
        o = result.open
        console.print(plain(f"  open answers (prompt {o.prompt_version}, greedy): {o.agreed}/{o.checked} normaliser verdicts "
                            f"agree in {len(o.cells)} cells on {o.questions} open questions"
                            + (f"; {o.failed}" if o.failed else "")))


def _reproduce_stored(settings: Settings, gpu: GpuSettings, ident: str, k: int | None, model: str | None) -> None:
    from clkt.errors import UserError
    from clkt.packs.format import PackManifest
    from clkt.packs.reproduce import answers_of, open_answers_of, open_plan_engine
    from storage.submissions import find_submissions_by_prefix, submission_answers, submissions_open_answers

    ident = ident.strip().lower()
    if len(ident) < 6 or any(c not in "0123456789abcdef" for c in ident):
        raise fail(f"{ident!r}: no such pack file or folder, nor the sha256 (6 hex digits at least) of a submitted pack")
    store_ = read_store(settings)

    async def go() -> None:
        async with store_ as store:
            async with store.session() as s:
                found = await find_submissions_by_prefix(s, ident)
                if len(found) != 1:
                    why = "no submitted pack" if not found else "more than one submitted pack"
                    raise UserError(f"{why} in this store has a sha256 starting {ident}")
                record = found[0]
                answers = answers_of(await submission_answers(s, record.pack_sha256))
                opened = open_answers_of((await submissions_open_answers(s, [record.pack_sha256])).get(record.pack_sha256))
            manifest = PackManifest.model_validate(record.manifest)
            plan = await _plan(store, settings, gpu, record.pack_sha256, manifest, {key[4] for key in answers}, k, model,
                               open_qids={r.qid for r in opened})
            async with open_plan_engine(plan) as engine:
                await _rerun(store, plan, answers, engine, opened=opened)

    run_async(go)


def _means_line(m: ScorerMetrics) -> str:
    """A scorer's means as `clkt submit` prints them: a metric that needs learning (Transfer) says which train
    languages did not learn, whose pairs it leaves out (`clkt.report.metric_table`), and reads "not interpretable"
    when none learned."""
    from clkt.report.metric_table import PAIR_METRICS

    not_learned = sorted(lt for lt, learn in m.learn.items() if not learn.learned)

    def one(key: str, v: float | None) -> str:
        if v is not None:
            return f"{key} {v * 100:.1f} %"
        needs = key in PAIR_METRICS.ordered_keys() and PAIR_METRICS[key].needs_learned
        return f"{key} not interpretable" if needs and not_learned else f"{key} n/a"

    left = f"; did not learn: {', '.join(not_learned)} (its pairs left out of Transfer)" if not_learned else ""
    return ", ".join(one(k, v) for k, v in m.means.items()) + f" (mean over {len(m.pairs)} language pairs{left})"
