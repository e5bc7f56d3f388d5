"""`clkt evaluate SNAPSHOT --model-path MODEL --out PACK`: measure a model on a snapshot folder, with no daemon and no
store, and write a result pack (`clkt.packs`). The jobs are the GPU queue's own (`clkt.packs.runner`); the
settings are the config's (`--config`, else the embedded default), a `--set gpu-key=value` overrides one, and the
pack says which were overridden. The jobs run on the config's `[gpu] engine` (`--engine local|ray` overrides it;
`--ray-address` names the cluster in place of `[gpu] ray_address`), as the GPU queue's do."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Annotated, Any

import typer

from clkt.cli.common import ConfigOption, console, err_console, fail, load_cli_settings, plain, run_async

__all__ = ["ENGINE_HELP", "RAY_ADDRESS_HELP", "gpu_for_engine", "hub_endpoint", "parse_overrides", "register"]

ENGINE_HELP = ("where the jobs run: local (a child process on this machine, on the device) or ray (Ray work on the "
               "cluster at --ray-address, else [gpu] ray_address), as the GPU queue's jobs; default: [gpu] engine")
RAY_ADDRESS_HELP = ("the Ray cluster the jobs run on (HOST:6379, ray://HOST:10001, or auto: this machine's); default: "
                    "[gpu] ray_address")


def register(app: typer.Typer) -> None:
    app.command("evaluate", help="Measure a model on a snapshot folder (no daemon, no store) and write a result pack; "
                                 "resumable.")(evaluate)


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_overrides(gpu: Any, pairs: list[str]) -> tuple[Any, dict[str, object]]:
    """`[gpu]` with the `<setting>=<value>` overrides applied (VALUE read as JSON, else as text), and what each replaced;
    `UserError` for an unknown key, one that says where jobs run, or a value `[gpu]` refuses."""
    from pydantic import ValidationError

    from clkt.config import GpuSettings
    from clkt.errors import UserError
    from clkt.packs.runner import job_settings

    data = gpu.model_dump()
    settings = job_settings(gpu)
    changed: dict[str, object] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip().removeprefix("gpu.")
        if not sep or key not in settings:
            raise UserError(f"--set {pair!r}: not <setting>=<value> for a job setting of [gpu] (one of {', '.join(sorted(settings))})")
        data[key] = _value(raw)
        changed[key] = {"config": settings[key]}
    try:
        new = GpuSettings.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise UserError(f"--set {'.'.join(str(x) for x in err['loc'])}: {err['msg']}") from e
    used = job_settings(new)
    return new, {k: {"config": v["config"], "used": used[k]} for k, v in changed.items()}  # type: ignore[index]


def gpu_for_engine(gpu: Any, engine: str | None, address: str | None) -> Any:
    """`[gpu]` with `--engine` and `--ray-address` applied (`clkt.packs.runner.engine_settings`); a refusal is one
    line, exit 2."""
    from clkt.errors import UserError
    from clkt.packs.runner import engine_settings

    try:
        return engine_settings(gpu, engine, address)
    except UserError as e:
        raise fail(str(e)) from None


def _target(model: str, name: str | None, kind: str | None, cutoff: str | None) -> Any:
    from clkt.config import TargetSettings
    from clkt.cutoff import lookup_cutoff
    from clkt.errors import UserError
    from clkt.targets.embedded import EMBEDDED_PREFIX, embedded_model

    embedded = embedded_model(model) if model.startswith(EMBEDDED_PREFIX) else None
    label = name or (embedded.name if embedded else Path(model.rstrip("/")).name or model)
    try:
        day = date.fromisoformat(cutoff) if cutoff else None
    except ValueError as e:
        raise UserError(f"--cutoff {cutoff!r}: not a date (YYYY-MM-DD)") from e
    if day is None:
        known = lookup_cutoff(model) or lookup_cutoff(label)
        day = known.cutoff if known else None
    return TargetSettings.model_validate(
        {"name": label, "model": model, "cutoff": day, "kind": kind or (embedded.kind if embedded else "base")})


def _model_and_name(model_path: str | None, target: str | None, name: str | None) -> tuple[str, str | None]:
    """The model and the target's name from `--model-path` and `--target`, or from the old spellings: `--target MODEL`
    without `--model-path` (the model, as before), `--name` (the name)."""
    from clkt.cli.vocabulary import deprecated, renamed

    if model_path is not None:
        return model_path, renamed(target, name, new="--target", old="--name")
    if target is None:
        raise fail("--model-path is required: the model to measure (a local folder, a cached Hub id, or embedded:<name>)")
    deprecated("--target MODEL (the model)", "--model-path MODEL (--target is the target's name)")
    return target, renamed(None, name, new="--target", old="--name")


def _train_langs(spec: Any, snapshot: Path, chosen: list[str] | None) -> tuple[list[str], dict[str, object]]:
    """The train languages: the ones given, else the config's `train_languages` that the snapshot has, else all of
    the snapshot's."""
    from clkt.snapshots.layout import MANIFEST_FILE, SnapshotManifest

    try:
        langs = SnapshotManifest.model_validate_json((snapshot / MANIFEST_FILE).read_bytes()).languages
    except (OSError, ValueError):
        langs = []  # the snapshot's own check says why, with the right words
    own = [x for x in (spec.train_languages or []) if x in langs] or list(langs)
    if not chosen:
        return own, {}
    picked = [x.strip() for item in chosen for x in item.split(",") if x.strip()]
    return picked, ({"train_languages": {"config": own, "used": picked}} if picked != own else {})


def hub_endpoint(configured: str | None, environ: Mapping[str, str]) -> str | None:
    """The Hub's address: `[publish] endpoint` when set, else `HF_ENDPOINT` (read at the call: huggingface_hub
    reads it only when imported), else None (huggingface_hub's default, the Hub)."""
    return configured or environ.get("HF_ENDPOINT", "").strip().rstrip("/") or None


def _snapshot_dir(settings: Any, text: str) -> Path:
    """The snapshot folder: `text` itself, or one read from the Hub (`clkt.packs.hub`: `[publish] endpoint`, else
    HF_ENDPOINT; `[publish] token_env`'s token when set)."""
    from clkt.layout import hub_cache_dir
    from clkt.packs.hub import fetch_hub_snapshot, is_hub_ref, parse_hub_ref

    if not is_hub_ref(text):
        return Path(text)
    token = settings.secret(settings.publish.token_env)
    return fetch_hub_snapshot(
        parse_hub_ref(text), cache_dir=hub_cache_dir(Path(settings.data_dir)),
        endpoint=hub_endpoint(settings.publish.endpoint, os.environ),
        token=token.get_secret_value() if token is not None else None,
        progress=lambda line: err_console.print(plain(line), highlight=False),
    )


def evaluate(
    snapshot_arg: Annotated[str, typer.Argument(metavar="SNAPSHOT", help="a snapshot folder (clkt snapshot export --format native, or "
                                                 "the frozen one), or hf://owner/name[/snapshot-id][@revision]: one published by clkt")],
    out: Annotated[Path, typer.Option("--out", help="the pack to write: a new folder, or a file ending in .tar.gz")],
    model_path: Annotated[str | None, typer.Option("--model-path", help="the model: a local folder, a cached Hub id, or "
                                                   "embedded:<name> (required)")] = None,
    strategy: Annotated[str | None, typer.Option("--strategy", help="the injection strategy (default: the config's first)")] = None,
    train_languages: Annotated[list[str] | None, typer.Option("--train-languages", help="inject in these (repeatable or comma-separated)")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="override a [gpu] job setting: <setting>=<value> (repeatable)")] = None,
    target: Annotated[str | None, typer.Option("--target", help="the target's name in the pack (default: from the "
                                                "model)")] = None,
    name: Annotated[str | None, typer.Option("--name", hidden=True, help="old spelling of --target")] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="base or instruct (default: base; an embedded model's own)")] = None,
    cutoff: Annotated[str | None, typer.Option("--cutoff", help="the model's knowledge cutoff, YYYY-MM-DD (default: the registry's)")] = None,
    device: Annotated[str | None, typer.Option("--device", help="cpu, cuda, cuda:N or auto (default: the config's first)")] = None,
    keep_work: Annotated[bool, typer.Option("--keep-work", help="keep the job folders (<out>.work) after the pack is written")] = False,
    engine: Annotated[str | None, typer.Option("--engine", metavar="local|ray", help=ENGINE_HELP)] = None,
    ray_address: Annotated[str | None, typer.Option("--ray-address", metavar="ADDRESS", help=RAY_ADDRESS_HELP)] = None,
    probe: Annotated[bool, typer.Option("--probe", help="also ask the model the recognition probe about every entity "
                                        "(probe.jsonl): the taker judges the answers and excludes what it knew")] = False,
    config: ConfigOption = None,
) -> None:
    from clkt.config.strategies import check_strategy
    from clkt.errors import ClktError
    from clkt.packs.runner import EvaluateRequest, run_evaluate

    settings = load_cli_settings(config)
    try:
        snapshot = _snapshot_dir(settings, snapshot_arg)
        if kind not in (None, "base", "instruct"):
            raise fail(f"--kind {kind!r}: base or instruct")
        gpu, overridden = parse_overrides(gpu_for_engine(settings.gpu, engine, ray_address), set_ or [])
        own = settings.spec.strategies[0]
        used = check_strategy(strategy) if strategy else own
        if used != own:
            overridden["strategy"] = {"config": own, "used": used}
        langs, changed = _train_langs(settings.spec, snapshot, train_languages)
        req = EvaluateRequest(
            snapshot_dir=snapshot, target=_target(*_model_and_name(model_path, target, name), kind, cutoff), strategy=used, train_langs=langs, gpu=gpu,
            overridden={**overridden, **changed}, out=out, data_dir=Path(settings.data_dir),
            device=device or settings.gpu.devices[0], keep_work=keep_work, probe=probe,
            probe_max_new_tokens=settings.agents.probe_max_new_tokens,
        )
    except (ClktError, ValueError) as e:  # a refused option: one line, nothing run
        raise fail(str(e)) from None
    if req.target.cutoff is None:
        err_console.print("clkt: warning: no knowledge cutoff for this model (--cutoff YYYY-MM-DD); clkt submit refuses "
                          "a pack without one", highlight=False, markup=False)

    if gpu.engine == "ray":
        err_console.print(plain(f"the jobs run on the Ray cluster at {gpu.ray_address}"), highlight=False)

    async def go() -> Any:
        return await run_evaluate(req, progress=lambda line: err_console.print(plain(line), highlight=False))

    done = run_async(go)
    resumed = f" ({', '.join(done.resumed)} read back from an earlier run)" if done.resumed else ""
    locality = f" and {done.locality} locality answers" if done.locality else ""
    locality += f" and {done.probed} probe answers" if done.probed else ""
    locality += f" and {done.open_answers} open answers" if done.open_answers else ""
    console.print(plain(f"wrote {done.out}: {done.predictions} predictions{locality}{resumed}; pack sha256 {done.pack_sha256}"))
    console.print(plain(f"then: clkt submit {done.out}"))
