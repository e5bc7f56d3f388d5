"""The status pages' `/publish`: the publish queue with its errors (escaped), the revisions, the retractions."""

from __future__ import annotations

from datetime import timedelta

from storage.publish import claim_publish_tasks, defer_publish_task, enqueue_publish
from storage.publish_revisions import record_revision
from storage.retractions import add_retraction
from tests.web.conftest import Pages
from tests.web.seed import SNAPSHOT_ID


async def test_publish_page_shows_the_queue_revisions_and_errata(pages: Pages) -> None:
    html = await (await pages.client.get("/publish")).text()
    assert "Nothing published yet" in html and 'href="/publish"' in html
    async with pages.store.transaction() as s:
        await enqueue_publish(s, repo="lab/bench", branch="main", snapshot_id=SNAPSHOT_ID, private=False, reason="report",
                              max_attempts=3)
        [lease] = await claim_publish_tasks(s, owner="me", lease=timedelta(seconds=30))
        await defer_publish_task(s, lease.id, owner="me", reason="the Hub answered HTTP 503: <i>busy</i>",
                                 defer=timedelta(minutes=2))
        await record_revision(s, repo="lab/bench", branch="main", snapshot_id=SNAPSHOT_ID, revision=1, state_key="a" * 64,
                              commit_oid="0123456789abcdef0123", held=True, retracted=0, report_fingerprint=None, files=20)
        await add_retraction(s, snapshot_id=SNAPSHOT_ID, qid=7, question_id=None, reason="wrong")
    r = await pages.client.get("/publish")
    html = await r.text()
    assert r.status == 200
    assert "lab/bench@main" in html and "0123456789ab" in html and "held back" in html
    assert "&lt;i&gt;busy&lt;/i&gt;" in html and "<i>busy</i>" not in html
    assert "1 retracted question(s)" in html and "pending 1" in html
    assert 'href="/publish"' in await (await pages.client.get("/")).text()  # in the nav of every page
