"""The status pages over HTTP on a seeded store: content, escaping, filters, files, and the guards."""

from __future__ import annotations

import os
import re

from yarl import URL

from clkt.web.files import safe_join
from clkt.web.security import CSP, HostGuard, host_name
from tests.web.conftest import Pages
from tests.web.seed import SNAPSHOT_ID


async def test_hostile_name_is_escaped_everywhere(pages: Pages) -> None:
    for path in ("/entities", f"/entities/{pages.ids['hostile']}", "/entities?q=%3Cscript%3E"):
        r = await pages.client.get(path)
        html = await r.text()
        assert r.status == 200, path
        assert "<script>alert" not in html and "<b>x</b>" not in html and not re.search(r"<img[^>]*onerror", html)
        assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;" in html, path
    # the one failed task's error text carries markup as well
    html = await (await pages.client.get("/")).text()
    assert "&lt;i&gt;bad&lt;/i&gt;" in html and "<i>bad</i>" not in html


async def test_overview_shows_every_section(pages: Pages) -> None:
    html = await (await pages.client.get("/")).text()
    for section in ('id="sources"', 'id="queue"', 'id="failures"', 'id="gpu"', 'id="fill"', 'id="disk"', 'id="cost"',
                    'id="accounting"'):
        assert section in html
    assert "<tr><td>1994-06</td>" in html and "ineligible 1" in html  # where every entity is, per month of its date
    assert "missing_id: 2" in html and "bad_date: 1" in html  # skips by reason, per source
    assert "no daemon in this process" in html  # clkt serve: the live state is said to be unknown
    assert re.search(r"of a \$20\.00 budget", html)
    assert html.count('class="result done"') == 2  # both GPU jobs
    assert "ValueError: &lt;i&gt;bad&lt;/i&gt; output" in html


async def test_entity_table_filters_search_and_pages(pages: Pages) -> None:
    c = pages.client
    html = await (await c.get("/entities?domain=music")).text()
    assert "evil1" in html and "777" not in html
    html = await (await c.get("/entities?status=known")).text()
    assert "550</span>" in html and "evil1" not in html
    assert "1 entities match" in html
    html = await (await c.get("/entities?q=777")).text()  # exact external id
    assert "1 entities match" in html
    html = await (await c.get("/entities?q=%25")).text()  # `%` is a literal, not a wildcard
    assert "0 entities match" in html
    assert (await c.get("/entities?domain=nope")).status == 400
    assert (await c.get("/entities?since=yesterday")).status == 400
    assert (await c.get("/entities?page=0")).status == 400
    html = await (await c.get("/entities?scope=all&since=2026-01-01")).text()
    assert "Velmora Tide" not in html and "777" in html  # occurred 2025-06-01 / in the last days
    html = await (await c.get("/entities?scope=all&until=2025-06-30")).text()
    assert "Velmora Tide" in html and "777" not in html
    from clkt.cutoff import fresh_after

    html = await (await c.get("/entities")).text()  # fresh only by default
    assert f"fresh only (from {fresh_after(pages.settings.spec).date().isoformat()})" in html and 'value="fresh" selected' in html
    assert "ci3144585" not in html  # 1994: not fresh
    assert "ci3144585" in await (await c.get("/entities?scope=all")).text()
    assert (await c.get("/entities?scope=some")).status == 400


async def test_entity_page_documents_questions_probes(pages: Pages) -> None:
    html = await (await pages.client.get(f"/entities/{pages.ids['ready']}")).text()
    from tests.web.seed import JA_TEXT

    assert JA_TEXT in html
    for lang in ("en", "ja", "fr"):
        if lang != "ja":
            assert f"[{lang}] Document about sports 777" in html
        assert f"[{lang}] Q0 about sports 777?" in html
    assert 'class="answer"' in html and "gemma-3-270m" in html
    assert (await pages.client.get("/entities/999999")).status == 404
    assert (await pages.client.get("/entities/abc")).status == 404


async def test_snapshot_pages_show_counts_quotas_report_and_files(pages: Pages) -> None:
    html = await (await pages.client.get("/snapshots")).text()
    assert SNAPSHOT_ID in html and "sports 1/2" in html and "movies 1/1" in html
    html = await (await pages.client.get(f"/snapshots/{SNAPSHOT_ID}")).text()
    assert "1 short" in html
    assert "Table 2" in html and "not interpretable" in html and "too few" in html.lower()
    # base 1 of 2 (two entities): its 95% interval from a bootstrap over entities, with n
    assert "Learn (train language" in html and "McNemar" in html and "<td>50.0 [0, 100]</td>" in html
    assert f'src="/files/report/{SNAPSHOT_ID}/heatmap-m-cpt-lora-generate.png"' in html
    assert f'href="/files/snapshot/{SNAPSHOT_ID}/questions/en.jsonl"' in html
    r = await pages.client.get(f"/files/report/{SNAPSHOT_ID}/heatmap-m-cpt-lora-generate.png")
    assert r.status == 200 and r.headers["Content-Type"] == "image/png" and (await r.read())[:8] == b"\x89PNG\r\n\x1a\n"
    r = await pages.client.get(f"/files/snapshot/{SNAPSHOT_ID}/questions/en.jsonl")
    assert r.status == 200 and r.headers["Content-Type"].startswith("text/plain") and "Velmora Tide" in await r.text()
    assert (await pages.client.get("/snapshots/nope")).status == 404


async def test_files_are_traversal_safe_and_never_markup(pages: Pages) -> None:
    snap = pages.root / "snap"
    (snap / "card.html").write_text("<script>alert(1)</script>")
    (pages.root / "secret.txt").write_text("outside")
    os.symlink(pages.root / "secret.txt", snap / "link.txt")
    c = pages.client
    r = await c.get(f"/files/snapshot/{SNAPSHOT_ID}/card.html")
    assert r.status == 200 and r.headers["Content-Type"].startswith("text/plain")  # shown as text, never rendered
    for rel in ("..%2Fsecret.txt", "%2E%2E/secret.txt", "docs/..%2F..%2Fsecret.txt", "link.txt", "%2Fetc%2Fpasswd", "docs%5C..%5C..%5Csecret.txt"):
        r = await c.get(URL(f"/files/snapshot/{SNAPSHOT_ID}/{rel}", encoded=True))
        assert r.status == 404, rel
        assert "outside" not in await r.text()
    r = await c.get(URL(f"/files/report/{SNAPSHOT_ID}/..%2F..%2F..%2Fsecret.txt", encoded=True))
    assert r.status == 404
    assert safe_join(snap, "../secret.txt") is None and safe_join(snap, "/etc/passwd") is None and safe_join(snap, "link.txt") is None
    assert safe_join(snap, "docs/en.jsonl") == (snap / "docs/en.jsonl").resolve()


async def test_read_only_and_security_headers(pages: Pages) -> None:
    c = pages.client
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        r = await c.request(method, "/entities")
        assert r.status == 405 and r.headers["Allow"] == "GET, HEAD", method
    assert (await c.request("HEAD", "/")).status == 200
    r = await c.get("/")
    assert r.headers["Content-Security-Policy"] == CSP and "frame-ancestors 'none'" in CSP and "unsafe-inline" not in CSP
    assert r.headers["X-Content-Type-Options"] == "nosniff" and r.headers["X-Frame-Options"] == "DENY"
    assert r.headers["Cache-Control"] == "no-store"
    html = await r.text()
    assert "<script>" not in html and re.findall(r"<script[^>]*>", html) == ['<script src="/static/refresh.js" defer>']
    assert not re.search(r"<[^>]*\son\w+\s*=", html)  # no inline event handlers


async def test_host_header_is_checked(pages: Pages) -> None:
    c = pages.client
    port = c.port
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", "localhost.evil", "10.0.0.1", "[::2]"):
        r = await c.get("/", headers={"Host": host})
        assert r.status == 421, host
        assert "clkt" not in (await r.text()).lower().replace("misdirected", "")
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}", "127.0.0.2"):
        assert (await c.get("/", headers={"Host": host})).status == 200, host
    g = HostGuard(host="0.0.0.0", allowed=["clkt.lab"])
    assert g.accepts("clkt.lab:8765") and not g.accepts("0.0.0.0:8765") and not g.accepts(None) and not g.accepts("a b")
    assert host_name("[::1]:80") == "::1" and host_name("::1") is None and host_name("x:y") is None



async def test_running_gpu_job_shows_its_progress(pages: Pages) -> None:
    from clkt.inject.contract import JobProgress, write_json_atomic
    from clkt.layout import PROGRESS_FILE, job_dir
    from storage.models import GpuJob, LeaseStatus

    async with pages.store.transaction() as s:
        job = await s.get(GpuJob, 1)
        assert job is not None
        job.status = LeaseStatus.leased
        job.device = "cpu"
    d = job_dir(pages.settings.data_dir, 1)
    d.mkdir(parents=True, exist_ok=True)
    write_json_atomic(d / PROGRESS_FILE, JobProgress(phase="train", done=3, total=12, epoch=2, loss=1.25))
    html = await (await pages.client.get("/")).text()
    assert "train epoch 2 3/12" in html and 'value="0.25"' in html and "loss 1.250" in html
    assert html.count('class="result leased"') == 1 and html.count('class="result done"') == 1


async def test_overview_says_why_gpu_jobs_wait(pages: Pages) -> None:
    from storage.gpu_engines import record_engine_status

    html = await (await pages.client.get("/")).text()
    assert 'id="gpu-engine"' not in html  # the local engine: nothing to say
    async with pages.store.transaction() as s:
        await record_engine_status(s, owner="h:1:x", engine="ray", state="unschedulable", address="10.0.0.5:6379",
                                   detail="a GPU job asks for GPU 4 and no node of the cluster offers it; <b>1 node</b>")
    html = await (await pages.client.get("/")).text()
    assert 'id="gpu-engine" class="bad"' in html
    assert "GPU engine ray (10.0.0.5:6379): unschedulable — GPU jobs wait: a GPU job asks for GPU 4" in html
    assert "&lt;b&gt;1 node&lt;/b&gt;" in html
