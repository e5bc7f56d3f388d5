"""`clkt evaluate hf://owner/name[/snapshot-id][@revision]`: a snapshot published by clkt (`clkt.publish`) read from
the Hub and laid out as a snapshot folder the GPU queue's jobs read (`clkt.snapshots.layout`).

The Hub is reached through huggingface_hub with its documented endpoint setting: `[publish] endpoint` when set,
else `HF_ENDPOINT` (else the Hub); a token only when `[publish] token_env` names one that is set (a public repo needs
none). The revision (a branch, a tag or a commit; `main` when none is given) is resolved to its commit once and
every file is read at that commit. A repo holds one folder per snapshot (`snapshots/<id>/`): the one named, else the
only one, else the newest period's released one (a held-back snapshot publishes no question and cannot be
evaluated).

A published folder holds the frozen `manifest.json` and the `hf/` export's rows (minus retracted questions); the
snapshot folder is rebuilt from them: `docs/<lang>.jsonl` and `questions/<lang>.jsonl` in the native order and
bytes, and the control split regenerated from the manifest's seed (`clkt.snapshots.control`); the locality split is
never published, so the rebuilt folder has none (its manifest's `locality` dropped: a pack from it has no
`locality.jsonl`). Each rebuilt file is
compared with the frozen manifest's sha256 (a difference is reported: questions retracted since freezing), and the
folder's `manifest.json` lists the rebuilt files' hashes, the snapshot's id and content hash unchanged (what
`clkt submit` checks). The folder is kept under `<data_dir>/cache/hub/` by repo and commit: a second run reads it
back. A repo, revision or snapshot that is not there, or a Hub that cannot be reached, is one line (`UserError`).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from pydantic import ValidationError

from clkt.errors import SnapshotError, UserError
from clkt.snapshots.content import SnapshotContent
from clkt.snapshots.control import attach_control, check_control_engine, write_control
from clkt.snapshots.layout import (
    MANIFEST_FILE,
    DocRow,
    QuestionRow,
    SnapshotManifest,
    docs_path,
    dumps_row,
    load_snapshot_dir,
    questions_path,
    sha256_file,
)

__all__ = ["HUB_SCHEME", "HubRef", "fetch_hub_snapshot", "is_hub_ref", "parse_hub_ref"]

HUB_SCHEME = "hf://"
SOURCE_FILE = "hub.json"  # where the folder came from (repo, revision, commit, files that differ from the frozen ones)
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
_REF = re.compile(rf"^hf://(?P<repo>{_PART}/{_PART})(?:/(?P<snapshot>[A-Za-z0-9._-]{{1,160}}))?(?:@(?P<rev>[A-Za-z0-9._/-]{{1,128}}))?$")
_SPLITS = (("val", "validation"), ("test", "test"))

Progress = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class HubRef:
    repo: str
    snapshot: str | None = None
    revision: str | None = None

    def __str__(self) -> str:
        return f"{HUB_SCHEME}{self.repo}" + (f"/{self.snapshot}" if self.snapshot else "") + (f"@{self.revision}" if self.revision else "")


def is_hub_ref(text: str) -> bool:
    return text.startswith(HUB_SCHEME)


def parse_hub_ref(text: str) -> HubRef:
    m = _REF.fullmatch(text)
    if m is None or ".." in text or "--" in m["repo"]:
        raise UserError(f"{text!r} is not hf://owner/name[/snapshot-id][@revision] (a Hub dataset published by clkt)")
    return HubRef(repo=m["repo"], snapshot=m["snapshot"], revision=m["rev"])


@contextlib.contextmanager
def _translated(ref: HubRef, endpoint: str) -> Iterator[None]:
    """huggingface_hub's errors as one line naming the reference."""
    import httpx2
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        yield
    except OfflineModeIsEnabled as e:
        raise UserError(f"{ref}: huggingface_hub is in offline mode (HF_HUB_OFFLINE is set); reading from the Hub "
                        "needs it unset") from e
    except RepositoryNotFoundError as e:
        raise UserError(f"{ref}: no dataset repo {ref.repo} on {endpoint} (or it is private and no token may read it)") from e
    except RevisionNotFoundError as e:
        raise UserError(f"{ref}: the repo {ref.repo} has no revision {ref.revision or 'main'!r} on {endpoint}") from e
    except EntryNotFoundError as e:
        raise UserError(f"{ref}: a file of the snapshot is missing on {endpoint} ({e.__class__.__name__})") from e
    except HfHubHTTPError as e:
        status = e.response.status_code if e.response is not None else None
        raise UserError(f"{ref}: the Hub at {endpoint} answered HTTP {status}") from e
    except (httpx2.TransportError, httpx2.TimeoutException) as e:
        raise UserError(f"{ref}: the Hub at {endpoint} could not be reached ({type(e).__name__})") from e


def _choose(ref: HubRef, files: list[str]) -> str:
    """The snapshot folder to read: the one named, the only one, else the newest released one (by its id's period)."""
    ids = sorted({p.split("/")[1] for p in files if p.startswith("snapshots/") and p.endswith(f"/{MANIFEST_FILE}")
                  and p.count("/") == 2})
    if not ids:
        raise UserError(f"{ref}: the repo holds no snapshot published by clkt (no snapshots/<id>/{MANIFEST_FILE})")
    if ref.snapshot is not None:
        if ref.snapshot not in ids:
            raise UserError(f"{ref}: no snapshot {ref.snapshot} in {ref.repo} (it holds: {', '.join(ids)})")
        return ref.snapshot
    released = [i for i in ids if any(p.startswith(f"snapshots/{i}/hf/data/qa_") and p.endswith("-test.jsonl") for p in files)]
    if len(ids) == 1 or not released:
        return ids[-1]
    return sorted(released, key=lambda i: (re.sub(r"-[0-9a-f]{12}$", "", i), i))[-1]


def _rows(path: Path, model: type[DocRow] | type[QuestionRow]) -> list[DocRow | QuestionRow]:
    out: list[DocRow | QuestionRow] = []
    if not path.is_file():
        return out
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        data = json.loads(line)
        data.pop("text_answer", None)
        try:
            out.append(model.model_validate(data))
        except ValidationError as e:
            raise SnapshotError(f"{path.name} line {n}: not a {model.__name__} ({e.errors()[0]['msg']})") from e
    return out


def _rebuild(raw: Path, dest: Path, ref: HubRef) -> list[str]:
    """The snapshot folder at `dest` from the published folder `raw` (see the module docstring); the rebuilt files
    that differ from the frozen manifest's hashes."""
    manifest = SnapshotManifest.model_validate_json((raw / MANIFEST_FILE).read_bytes())
    dest.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    for lang in manifest.languages:
        questions = [r for _, split in _SPLITS for r in _rows(raw / "hf" / "data" / f"qa_{lang}-{split}.jsonl", QuestionRow)]
        if not any(isinstance(q, QuestionRow) and q.split == "test" for q in questions):
            raise UserError(f"{ref}: snapshot {manifest.snapshot_id} publishes no test question in {lang} (held back "
                            "until a later period is published?); it cannot be evaluated yet")
        docs = _rows(raw / "hf" / "data" / f"docs_{lang}-train.jsonl", DocRow)
        for path, rows in ((docs_path(dest, lang), docs), (questions_path(dest, lang), sorted(questions, key=lambda q: getattr(q, "qid", 0)))):
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("w", encoding="utf-8", newline="\n") as fh:
                fh.write("".join(dumps_row(r) + "\n" for r in rows))
            written.append(path.relative_to(dest).as_posix())
    if manifest.control is not None and manifest.control.questions:
        check_control_engine(manifest.control, manifest.snapshot_id)
        empty = SnapshotContent(spec=manifest.spec, period=manifest.period, seed=manifest.seed, revision=manifest.revision,
                                languages=tuple(manifest.languages), items=(), docs=(), questions=(), producers=(),
                                prompt_versions={}, redated_entities=0)
        content = attach_control(empty, start=date.fromisoformat(manifest.period_start),
                                 end=date.fromisoformat(manifest.period_end), domains=manifest.control.domains,
                                 per_domain=manifest.control.per_domain)
        written += write_control(content, dest)
    hashes = {rel: sha256_file(dest / rel) for rel in written}
    differ = [rel for rel, h in hashes.items() if manifest.files.get(rel, h) != h]
    # the locality split is never published: the rebuilt folder has none (its manifest says so, or reading it fails)
    local = manifest.model_copy(update={"files": hashes, "locality": None})
    (dest / MANIFEST_FILE).write_text(local.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return differ


def fetch_hub_snapshot(
    ref: HubRef, *, cache_dir: Path, endpoint: str | None = None, token: str | None = None,
    progress: Progress = lambda _: None,
) -> Path:
    """The snapshot folder of `ref` under `cache_dir` (read from the Hub, or kept from an earlier read of the same
    commit); see the module docstring."""
    from huggingface_hub import HfApi, constants, hf_hub_download

    constants.HF_HUB_DISABLE_TELEMETRY = True  # every request to `endpoint`, none to fetch a telemetry registry
    api = HfApi(endpoint=endpoint, library_name="clkt")
    where = api.endpoint
    with _translated(ref, where):
        if constants.is_offline_mode():
            from huggingface_hub.errors import OfflineModeIsEnabled

            raise OfflineModeIsEnabled("offline")
        info = api.dataset_info(ref.repo, revision=ref.revision, token=token or False, files_metadata=False)
        commit = str(info.sha)
        files = [s.rfilename for s in info.siblings or []]
        sid = _choose(ref, files)
        dest = cache_dir / ref.repo.replace("/", "__") / commit / sid
        if (dest / SOURCE_FILE).is_file():
            progress(f"{ref}: snapshot {sid} at commit {commit[:12]}, read before ({dest})")
            return dest
        base = f"snapshots/{sid}/"
        wanted = [p for p in files if p == base + MANIFEST_FILE or (p.startswith(base + "hf/data/") and p.endswith(".jsonl"))]
        raw = dest.with_name(f".{sid}.download")
        shutil.rmtree(raw, ignore_errors=True)
        progress(f"{ref}: reading snapshot {sid} at commit {commit[:12]} from {where} ({len(wanted)} files)")
        for p in wanted:
            hf_hub_download(ref.repo, p, repo_type="dataset", revision=commit, endpoint=endpoint, token=token or False,
                            local_dir=raw)
    try:
        shutil.rmtree(dest, ignore_errors=True)
        differ = _rebuild(raw / base, dest, ref)
        load_snapshot_dir(dest)  # what the jobs will read: checked now
    except (SnapshotError, ValidationError, ValueError, OSError) as e:
        shutil.rmtree(dest, ignore_errors=True)
        raise UserError(f"{ref}: snapshot {sid} cannot be read as a clkt snapshot ({e})") from e
    finally:
        shutil.rmtree(raw, ignore_errors=True)
    if differ:
        progress(f"{ref}: {', '.join(differ)} differ from the frozen snapshot's (questions retracted since it froze; "
                 "see its ERRATA.md)")
    (dest / SOURCE_FILE).write_text(json.dumps({"ref": str(ref), "repo": ref.repo, "revision": ref.revision, "commit": commit,
                                                "snapshot": sid, "differ": differ}, indent=1) + "\n", encoding="utf-8")
    return dest
