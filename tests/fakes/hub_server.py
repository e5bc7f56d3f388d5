"""A stand-in for the Hugging Face Hub on 127.0.0.1: the endpoints `huggingface_hub` calls to publish a dataset
(repo info and creation, README metadata validation, pre-upload, commit, tree listing, commit history, branches)
and to read one (`/datasets/<repo>/resolve/<revision>/<path>`, what `hf_hub_download` asks), keeping repos as
git-like histories in memory and recording every request it receives. A revision is a branch or a commit id; a
public repo is read without a token (as on the Hub), a wrong token is refused.

Pre-upload answers `regular` for every file (and the remote blob id of an unchanged one), so every file travels
inline (base64) in the commit: no LFS batch, no Xet storage. A commit is applied whole or not at all, and refused
(412) when its `parentCommit` is not the branch's head. `faults` are consumed one per matching call:

- `500`: answer HTTP 500 without applying anything;
- `drop`: close the connection without an answer, nothing applied;
- `drop-after-apply`: apply the commit, then close the connection without an answer (the client cannot know);
- `hang`: hold the call until `release` is set (or the client goes away), then apply nothing.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from aiohttp import web

__all__ = ["FakeHub", "HubCommitRecord", "Recorded", "git_blob_id"]


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class HubCommitRecord:
    oid: str
    parent: str | None
    title: str
    description: str
    files: dict[str, bytes]  # the whole tree after the commit
    date: datetime
    added: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)


@dataclass
class _Repo:
    repo_id: str
    private: bool
    branches: dict[str, str]
    commits: dict[str, HubCommitRecord]


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str  # decoded
    query: str
    headers: dict[str, str]
    body: bytes
    host: str


class FakeHub:
    def __init__(self, *, token: str) -> None:
        self.token = token
        self.repos: dict[str, _Repo] = {}
        self.requests: list[Recorded] = []
        self.faults: dict[str, list[str]] = {}  # route name -> faults to apply, in order
        self.unexpected: list[str] = []
        self.release = asyncio.Event()
        self.hanging = asyncio.Event()  # set while a `hang` fault holds a call
        self._runner: web.AppRunner | None = None
        self.url = ""
        self._clock = 0

    # -- life cycle ---------------------------------------------------------------------------------------------

    async def start(self) -> str:
        app = web.Application(client_max_size=1 << 30)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        return self.url

    async def close(self) -> None:
        self.release.set()
        if self._runner is not None:
            await self._runner.cleanup()

    # -- what tests read ----------------------------------------------------------------------------------------

    def history(self, repo: str, branch: str = "main") -> list[HubCommitRecord]:
        """The branch's commits, newest first."""
        r = self.repos[repo]
        out: list[HubCommitRecord] = []
        oid: str | None = r.branches[branch]
        while oid is not None:
            c = r.commits[oid]
            out.append(c)
            oid = c.parent
        return out

    def tree(self, repo: str, branch: str = "main") -> dict[str, bytes]:
        r = self.repos[repo]
        return dict(r.commits[r.branches[branch]].files)

    def every_committed_file(self, repo: str) -> list[tuple[str, str, bytes]]:
        """(commit, path, bytes) of every file of every commit ever made to the repo."""
        return [(c.oid, p, b) for c in self.repos[repo].commits.values() for p, b in c.files.items()]

    def write_clone(self, repo: str, dest: Path, branch: str = "main") -> Path:
        """The branch's files written under `dest` (what `git clone` would give)."""
        for path, data in self.tree(repo, branch).items():
            f = dest / path
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_bytes(data)
        return dest

    def calls(self, name: str) -> list[Recorded]:
        return [r for r in self.requests if self._route(r.method, r.path.split("/"))[0] == name]

    # -- the Hub ------------------------------------------------------------------------------------------------

    def _now(self) -> datetime:
        self._clock += 1
        return datetime(2026, 1, 1, tzinfo=UTC).replace(second=self._clock % 60, minute=(self._clock // 60) % 60)

    def _apply(self, repo: _Repo, branch: str, *, title: str, description: str, files: dict[str, bytes],
               added: list[str], deleted: list[str]) -> HubCommitRecord:
        parent = repo.branches.get(branch)
        h = hashlib.sha1(f"{parent}\n{title}\n{description}\n".encode())
        for p in sorted(files):
            h.update(f"{p}\0{git_blob_id(files[p])}\n".encode())
        c = HubCommitRecord(oid=h.hexdigest(), parent=parent, title=title, description=description, files=files,
                            date=self._now(), added=added, deleted=deleted)
        repo.commits[c.oid] = c
        repo.branches[branch] = c.oid
        return c

    @staticmethod
    def _route(method: str, parts: list[str]) -> tuple[str, dict[str, str]]:
        # parts: ["", "api", ...] of the decoded path segments
        p = [unquote(x) for x in parts[1:]]
        if p[:2] == ["api", "validate-yaml"] and method == "POST":
            return "validate-yaml", {}
        if p[:3] == ["api", "repos", "create"] and method == "POST":
            return "create", {}
        if len(p) >= 6 and p[0] == "datasets" and p[3] == "resolve" and method in ("GET", "HEAD"):
            return "resolve", {"repo": f"{p[1]}/{p[2]}", "rev": p[4], "path": "/".join(p[5:])}
        if len(p) >= 4 and p[0] == "api" and p[1] == "datasets":
            repo = f"{p[2]}/{p[3]}"
            rest = p[4:]
            if not rest and method == "GET":
                return "info", {"repo": repo, "rev": "main"}
            if len(rest) >= 2 and rest[0] == "revision" and method == "GET":
                return "info", {"repo": repo, "rev": "/".join(rest[1:])}
            if len(rest) >= 2 and rest[0] == "preupload" and method == "POST":
                return "preupload", {"repo": repo, "rev": "/".join(rest[1:])}
            if len(rest) >= 2 and rest[0] == "commit" and method == "POST":
                return "commit", {"repo": repo, "rev": "/".join(rest[1:])}
            if len(rest) >= 2 and rest[0] == "tree" and method == "GET":
                return "tree", {"repo": repo, "rev": rest[1], "path": "/".join(rest[2:])}
            if len(rest) >= 2 and rest[0] == "commits" and method == "GET":
                return "commits", {"repo": repo, "rev": "/".join(rest[1:])}
            if len(rest) >= 2 and rest[0] == "branch" and method == "POST":
                return "branch", {"repo": repo, "branch": "/".join(rest[1:])}
        return "unknown", {}

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        raw = request.rel_url.raw_path
        self.requests.append(Recorded(method=request.method, path=raw, query=request.rel_url.query_string,
                                      headers=dict(request.headers), body=body, host=request.host))
        name, args = self._route(request.method, raw.split("/"))
        if name == "unknown":
            self.unexpected.append(f"{request.method} {raw}")
            return web.json_response({"error": "not implemented by the stand-in"}, status=404)
        auth = request.headers.get("Authorization")
        held = self.repos.get(args.get("repo", ""))
        public_read = name in self._READS and auth is None and (held is None or not held.private)
        if name != "validate-yaml" and not public_read and auth != f"Bearer {self.token}":
            return web.json_response({"error": "Invalid credentials in Authorization header"}, status=401)
        fault = self.faults.get(name, [])
        kind = fault.pop(0) if fault else None
        if kind == "500":
            return web.json_response({"error": "Internal Error - We're working hard to fix this as soon as possible!"},
                                     status=500)
        if kind == "drop":
            assert request.transport is not None
            request.transport.close()
            return web.Response(status=500)
        if kind == "hang":
            self.hanging.set()
            await self.release.wait()
            return web.json_response({"error": "released"}, status=503)
        handler = getattr(self, "_" + name.replace("-", "_"))
        resp: web.StreamResponse = await handler(request, body, **args)
        if kind == "drop-after-apply":
            assert request.transport is not None
            request.transport.close()
        return resp

    _READS = frozenset({"info", "tree", "commits", "resolve"})

    @staticmethod
    def _head(r: _Repo, rev: str) -> str | None:
        """The commit a revision names: a branch's head, or a commit id."""
        return r.branches.get(rev) or (rev if rev in r.commits else None)

    async def _resolve(self, request: web.Request, body: bytes, *, repo: str, rev: str, path: str) -> web.Response:
        r = self._repo(repo)
        if r is None:
            return self._missing("RepoNotFound", "Repository not found")
        head = self._head(r, rev)
        if head is None:
            return self._missing("RevisionNotFound", "Invalid rev id")
        data = r.commits[head].files.get(path)
        if data is None:
            return self._missing("EntryNotFound", f"{path} does not exist on {rev}")
        headers = {"X-Repo-Commit": head, "ETag": f'"{git_blob_id(data)}"', "Content-Length": str(len(data))}
        if request.method == "HEAD":
            return web.Response(status=200, headers=headers)
        return web.Response(status=200, body=data, headers=headers)

    def _missing(self, code: str, message: str) -> web.Response:
        return web.json_response({"error": message}, status=404, headers={"X-Error-Code": code, "X-Error-Message": message})

    def _repo(self, repo: str) -> _Repo | None:
        return self.repos.get(repo)

    async def _validate_yaml(self, request: web.Request, body: bytes) -> web.Response:
        content = json.loads(body)["content"]
        if not content.startswith("---\n") or "\n---\n" not in content[4:]:
            return web.json_response({"errors": [{"message": "no YAML metadata"}], "warnings": []}, status=400)
        return web.json_response({"errors": [], "warnings": []})

    async def _create(self, request: web.Request, body: bytes) -> web.Response:
        data = json.loads(body)
        repo_id = f"{data['organization']}/{data['name']}"
        if data.get("type") != "dataset":
            return web.json_response({"error": "the stand-in only keeps dataset repos"}, status=400)
        if repo_id in self.repos:
            return web.json_response({"error": "You already created this dataset repo", "url": ""}, status=409)
        repo = _Repo(repo_id=repo_id, private=data.get("visibility") == "private" or bool(data.get("private")),
                     branches={}, commits={})
        self.repos[repo_id] = repo
        self._apply(repo, "main", title="initial commit", description="", files={".gitattributes": b"*.safetensors filter=lfs\n"},
                     added=[".gitattributes"], deleted=[])
        return web.json_response({"url": f"{self.url}/datasets/{repo_id}", "name": repo_id})

    async def _info(self, request: web.Request, body: bytes, *, repo: str, rev: str) -> web.Response:
        r = self._repo(repo)
        if r is None:
            return self._missing("RepoNotFound", "Repository not found")
        head = self._head(r, rev)
        if head is None:
            return self._missing("RevisionNotFound", "Invalid rev id")
        return web.json_response({"id": repo, "author": repo.split("/")[0], "sha": head, "private": r.private,
                                  "siblings": [{"rfilename": p} for p in sorted(r.commits[head].files)]})

    async def _preupload(self, request: web.Request, body: bytes, *, repo: str, rev: str) -> web.Response:
        r = self._repo(repo)
        if r is None:
            return self._missing("RepoNotFound", "Repository not found")
        files = r.commits[r.branches[rev]].files if rev in r.branches else {}
        out = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                "oid": git_blob_id(files[f["path"]]) if f["path"] in files else None}
               for f in json.loads(body)["files"]]
        return web.json_response({"files": out, "commitOid": r.branches.get(rev)})

    async def _commit(self, request: web.Request, body: bytes, *, repo: str, rev: str) -> web.Response:
        r = self._repo(repo)
        if r is None:
            return self._missing("RepoNotFound", "Repository not found")
        if rev not in r.branches:
            return self._missing("RevisionNotFound", "Invalid rev id")
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            return web.json_response({"error": "the first line must be the header"}, status=400)
        header = lines[0]["value"]
        parent = header.get("parentCommit")
        if parent is not None and parent != r.branches[rev]:
            return web.json_response({"error": "A commit has happened since. Please refresh and try again."}, status=412)
        files = dict(r.commits[r.branches[rev]].files)
        added: list[str] = []
        deleted: list[str] = []
        for op in lines[1:]:
            key, value = op.get("key"), op.get("value", {})
            if key == "file" and value.get("encoding") == "base64":
                files[value["path"]] = base64.b64decode(value["content"])
                added.append(value["path"])
            elif key == "deletedFile":
                if value["path"] not in files:
                    return web.json_response({"error": "A file with this name doesn't exist"}, status=404,
                                             headers={"X-Error-Code": "EntryNotFound"})
                del files[value["path"]]
                deleted.append(value["path"])
            elif key == "deletedFolder":
                gone = [p for p in files if p.startswith(value["path"].rstrip("/") + "/")]
                for p in gone:
                    del files[p]
                deleted += gone
            else:  # lfsFile (the stand-in never asks for LFS), or anything else
                return web.json_response({"error": f"the stand-in does not take {key!r} operations"}, status=400)
        c = self._apply(r, rev, title=header.get("summary", ""), description=header.get("description", ""),
                        files=files, added=added, deleted=deleted)
        return web.json_response({"success": True, "commitOid": c.oid,
                                  "commitUrl": f"{self.url}/datasets/{repo}/commit/{c.oid}"})

    async def _tree(self, request: web.Request, body: bytes, *, repo: str, rev: str, path: str) -> web.Response:
        r = self._repo(repo)
        if r is None:
            return self._missing("RepoNotFound", "Repository not found")
        if rev not in r.branches:
            return self._missing("RevisionNotFound", "Invalid rev id")
        files = r.commits[r.branches[rev]].files
        prefix = path.strip("/") + "/" if path.strip("/") else ""
        chosen = {p: b for p, b in files.items() if p.startswith(prefix)}
        if prefix and not chosen:
            return self._missing("EntryNotFound", f"{path} does not exist on {rev}")
        recursive = request.query.get("recursive", "").lower() in ("1", "true")
        entries: list[dict[str, Any]] = []
        dirs: set[str] = set()
        for p, b in sorted(chosen.items()):
            rel = p[len(prefix):]
            if not recursive and "/" in rel:
                dirs.add(prefix + rel.split("/")[0])
                continue
            if recursive:
                parts = rel.split("/")[:-1]
                for i in range(1, len(parts) + 1):
                    dirs.add(prefix + "/".join(parts[:i]))
            entries.append({"type": "file", "path": p, "size": len(b), "oid": git_blob_id(b)})
        entries += [{"type": "directory", "path": d, "oid": hashlib.sha1(d.encode()).hexdigest()}
                    for d in sorted(dirs)]
        return web.json_response(entries)

    async def _commits(self, request: web.Request, body: bytes, *, repo: str, rev: str) -> web.Response:
        r = self._repo(repo)
        if r is None:
            return self._missing("RepoNotFound", "Repository not found")
        if rev not in r.branches:
            return self._missing("RevisionNotFound", "Invalid rev id")
        return web.json_response([
            {"id": c.oid, "title": c.title, "message": c.title + ("\n\n" + c.description if c.description else ""),
             "date": c.date.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "authors": [{"user": "clkt-test"}]}
            for c in self.history(repo, rev)
        ])

    async def _branch(self, request: web.Request, body: bytes, *, repo: str, branch: str) -> web.Response:
        r = self._repo(repo)
        if r is None:
            return self._missing("RepoNotFound", "Repository not found")
        if branch in r.branches:
            return web.json_response({"error": "Reference already exists"}, status=409)
        start = (json.loads(body) if body else {}).get("startingPoint") or "main"
        r.branches[branch] = r.branches.get(start, start)
        return web.json_response({})
