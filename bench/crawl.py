"""Crawl bench: politeness and ingest throughput against the bundled replay server.

1. Rate: every source's client, with the source's REAL configured limit (MusicBrainz 1/s, TheSportsDB 0.5/s,
   TMDB 20/s, arXiv one request every 3 s...), sends requests as fast as its limiter allows for about
   `--seconds`, all sources at once over one shared aiohttp session, while the replay server ENFORCES the same
   limits (429 beyond them). Figures: achieved steady rate / allowed rate per source (server-side timestamps;
   the initial burst excluded), the busiest 1-second window, the number of 429s provoked (goal: 0), the fewest
   spare requests the provider's bucket had left at any arrival (`provider_spare_min`; below 0 is a 429) and
   the closest two arXiv requests came (goal: >= 3 s).
   Launch Library 2 allows 15 requests an HOUR (one per 240 s): by default its client runs alone with its limit
   scaled by `--ll2-speed` (240: one request a second) on both sides, the same limiter at a faster rate, its
   arrival times read back in the real limit's seconds. `--ll2-speed 1` measures it at the real limit (3
   requests: about 8 minutes).
2. Crawl: every poller runs one cycle over the re-dated recordings into a fresh SQLite store (limits lifted):
   records (ingested + skipped) per second end to end.
3. Store: ingest throughput of the write path (render + upsert + document + gate task, one transaction
   each) over SYNTHETIC variants of the recorded records (distinct external ids, bench-only temp store).

Ends with one JSON line: {"bench": "crawl", "figures": {...}, "goals": {...}, "met": bool}.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from clkt.config import ReplaySettings, Settings, load_settings
from clkt.context import ServiceContext
from clkt.replay import ReplayServer
from clkt.sources.base import SourceRef
from clkt.sources.board import SourceBoard
from clkt.sources.http import SourceClient
from clkt.sources.poller import CycleReport, SourcePoller
from clkt.sources.registry import SOURCE_TYPES
from clkt.telemetry import Metrics
from storage.engine import Store

# one cheap recorded route per source
PROBES: dict[str, tuple[str, dict[str, Any]]] = {
    "tmdb": ("movie/550", {"append_to_response": "credits,release_dates"}),
    "musicbrainz": ("release/94ad3a58-a1cc-46a3-acf4-9cb6c1d6f032", {"inc": "recordings", "fmt": "json"}),
    "deezer": ("album/302127", {}),
    "thesportsdb": ("123/lookupevent.php", {"id": "441613"}),
    "usgs": ("query", {"format": "geojson", "eventid": "usp0006dzc"}),
    "gdacs": ("xml/rss.xml", {}),
    "arxiv": ("query", {"search_query": "cat:cs.CV AND submittedDate:[202501010000 TO 202701010000]", "max_results": 1}),
}
XML_PROBES = frozenset({"gdacs", "arxiv"})
LL2 = "launchlibrary"
LL2_PROBE = ("launch/previous/", {"limit": 1, "net__gte": "2025-01-01T00:00:00Z"})


async def _hammer(client: SourceClient, path: str, params: dict[str, Any], seconds: float) -> int:
    """Requests back to back (more in flight than the limiter allows) for about `seconds`."""
    n = max(int(client.settings.rate_per_s * seconds) + client.settings.burst, 3)
    decode = (lambda b: b) if client.name in XML_PROBES else json.loads
    await asyncio.gather(*(client.get(path, params=params, decode=decode) for _ in range(n)))
    return n


def _spare_tokens(times: list[float], rate: float, burst: int) -> float:
    """The fewest spare requests the provider's bucket (the replay server's: burst plus its slack) had left at
    any arrival; below 0 a request was refused."""
    cap = burst + max(1.0, ReplayServer.LIMIT_SLACK_FRACTION * burst)
    tokens, last, low = cap, (min(times) if times else 0.0), cap
    for t in sorted(times):
        tokens = min(cap, tokens + (t - last) * rate)
        last = t
        low = min(low, tokens - 1.0)
        if tokens >= 1.0:
            tokens -= 1.0
    return round(low, 2)


def _min_gap(times: list[float]) -> float | None:
    """The shortest time between two consecutive arrivals (None for fewer than two)."""
    t = sorted(times)
    return round(min(b - a for a, b in itertools.pairwise(t)), 3) if len(t) > 1 else None


def _busiest(times: list[float], width: float = 1.0) -> int:
    times = sorted(times)
    best, j = 0, 0
    for i, t in enumerate(times):
        while times[j] < t - width + 1e-9:
            j += 1
        best = max(best, i - j + 1)
    return best


class _ThreadedReplay:
    """The replay server on its own event loop in a thread, so the clients' load does not bunch the
    arrival times the server measures (as a remote API would see them)."""

    def __init__(self, limits: dict[str, tuple[float, int]]) -> None:
        self.limits = limits
        self.ready = threading.Event()
        self.server: ReplayServer | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stop: asyncio.Event | None = None
        self.thread = threading.Thread(target=self._run, name="replay", daemon=True)

    def _run(self) -> None:
        async def serve() -> None:
            self.loop = asyncio.get_running_loop()
            self.stop = asyncio.Event()
            async with ReplayServer(settings=ReplaySettings(enabled=True, redate=False), limits=self.limits) as srv:
                self.server = srv
                self.ready.set()
                await self.stop.wait()

        asyncio.run(serve())

    def __enter__(self) -> ReplayServer:
        self.thread.start()
        self.ready.wait(30)
        assert self.server is not None
        return self.server

    def __exit__(self, *exc: object) -> None:
        assert self.loop is not None and self.stop is not None
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(10)


async def bench_rate(seconds: float) -> dict[str, Any]:
    settings = _real_limits()
    limits = {n: (s.rate_per_s, s.burst) for n, s in settings.sources.items() if n in PROBES}
    out: dict[str, Any] = {}
    with _ThreadedReplay(limits) as server:
        async with aiohttp.ClientSession() as http:
            snap = await _measure(server, http, settings, seconds)
    return _rate_figures(snap, limits, out)


def _real_limits() -> Settings:
    """The real sources' documented limits (an empty config file: no demo overrides)."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "real.toml"
        path.write_text("")
        return load_settings(path, environ={})


async def _measure(server: ReplayServer, http: aiohttp.ClientSession, settings: Any, seconds: float) -> dict[str, Any]:
    clients = {
        name: SourceClient(name=name, settings=settings.sources[name].model_copy(update={"base_url": server.base_url(name)}),
                           session=http, metrics=Metrics())
        for name in PROBES
    }
    t0 = time.perf_counter()
    sent = await asyncio.gather(*(_hammer(clients[n], *PROBES[n], seconds) for n in PROBES))
    wall = time.perf_counter() - t0
    async with http.get(f"{server.url}/_control/stats") as r:
        snap = await r.json()
    snap["_sent"] = dict(zip(PROBES, sent, strict=True))
    snap["_wall_s"] = wall
    return snap


def _rate_figures(snap: dict[str, Any], limits: dict[str, tuple[float, int]], out: dict[str, Any]) -> dict[str, Any]:
    for name, n in snap["_sent"].items():
        route = next(r for r in snap["routes"] if r.startswith(f"/{name}/"))
        st = snap["routes"][route]
        times = sorted(st["times"])
        rate, burst = limits[name]
        steady = (len(times) - burst) / (times[-1] - times[0]) if len(times) > burst and times[-1] > times[0] else 0.0
        out[name] = {
            "allowed_per_s": rate, "burst": burst, "requests": n, "achieved_per_s": round(steady, 3),
            "fraction": round(steady / rate, 3), "busiest_1s": _busiest(times), "allowed_1s": rate + burst,
            "429s": st["statuses"].get("429", 0), "spare_min": _spare_tokens(times, rate, burst),
            "min_gap_s": _min_gap(times),
        }
    out["_wall_s"] = round(snap["_wall_s"], 1)
    return out


async def bench_ll2(speed: float) -> dict[str, Any]:
    """Launch Library 2 alone, its limit (15 an hour) scaled by `speed` on both sides (1: the real limit). The
    limiter paces in real time (`clkt.sources._limiter`), so a scaled run is the same limiter at a faster rate;
    the arrival times are read back in the real limit's seconds (multiplied by `speed`)."""
    settings = _real_limits()
    src = settings.sources[LL2]
    scaled = src.model_copy(update={"rate_per_s": src.rate_per_s * speed})
    n = 3 if speed == 1 else 6
    with _ThreadedReplay({LL2: (scaled.rate_per_s, scaled.burst)}) as server:
        async with aiohttp.ClientSession() as http:
            client = SourceClient(name=LL2, settings=scaled.model_copy(update={"base_url": server.base_url(LL2)}),
                                  session=http, metrics=Metrics())
            t0 = time.perf_counter()
            sent = await _hammer(client, *LL2_PROBE, (n - scaled.burst) / scaled.rate_per_s)
            wall = time.perf_counter() - t0
            async with http.get(f"{server.url}/_control/stats") as r:
                snap = await r.json()
    snap["_sent"], snap["_wall_s"] = {LL2: sent}, wall
    for st in snap["routes"].values():
        st["times"] = [t * speed for t in st["times"]]
    fig = _rate_figures(snap, {LL2: (src.rate_per_s, src.burst)}, {})
    fig[LL2]["rate_scaled_by"] = speed
    return fig


async def bench_crawl(tmp: Path) -> dict[str, Any]:
    base = load_settings(None, environ={})
    async with ReplayServer(settings=ReplaySettings(enabled=True, redate=True)) as server, \
            Store(url=f"sqlite+aiosqlite:///{tmp / 'crawl.db'}") as store, aiohttp.ClientSession() as http:
        fast = {"rate_per_s": 1000.0, "burst": 50, "concurrency": 8, "lookback_days": 30}
        sources = {n: s.model_copy(update={"base_url": server.base_url(n), **fast}) for n, s in base.sources.items()}
        sports = base.sources.thesportsdb
        sources["thesportsdb"] = sources["thesportsdb"].model_copy(
            update={"options": sports.options.model_copy(update={"leagues": ["4328", "4424"]})})
        settings = base.model_copy(update={"sources": base.sources.model_copy(update=sources)})
        ctx = ServiceContext(store=store, http=http, owner="bench", metrics=Metrics())
        board = SourceBoard()
        t0 = time.perf_counter()
        reports: list[CycleReport] = await asyncio.gather(*(
            SourcePoller(source_name=n, settings=settings.sources[n], daemon=settings.daemon, board=board).run_cycle(ctx)
            for n in SOURCE_TYPES if settings.sources[n].enabled
        ))
        dt = time.perf_counter() - t0
    inserted = sum(r.inserted for r in reports)
    records = inserted + sum(sum(r.skipped.values()) for r in reports)
    return {"entities": inserted, "records": records, "seconds": round(dt, 2), "records_per_s": round(records / dt, 1),
            "entities_per_s": round(inserted / dt, 1)}


async def bench_store(tmp: Path, n: int) -> dict[str, Any]:
    """Store write path over synthetic variants (distinct ids) of the recorded records."""
    base = load_settings(None, environ={})
    async with ReplayServer(settings=ReplaySettings(enabled=True, redate=True)) as server, \
            Store(url=f"sqlite+aiosqlite:///{tmp / 'ingest.db'}") as store, aiohttp.ClientSession() as http:
        ctx = ServiceContext(store=store, http=http, owner="bench", metrics=Metrics())
        records = []
        for name, ext in (("tmdb", "550"), ("musicbrainz", "94ad3a58-a1cc-46a3-acf4-9cb6c1d6f032"), ("deezer", "302127"),
                          ("thesportsdb", "441613"), ("usgs", "ci3144585")):
            src = base.sources[name].model_copy(update={"base_url": server.base_url(name), "rate_per_s": 1000.0, "burst": 50})
            poller = SourcePoller(source_name=name, settings=src, daemon=base.daemon, board=SourceBoard())
            records.append((poller, await poller.build_source(ctx).fetch(SourceRef(external_id=ext))))
        report = CycleReport()
        t0 = time.perf_counter()
        for i in range(n):
            poller, rec = records[i % len(records)]
            variant = rec.model_copy(update={"external_id": f"{rec.external_id}~synthetic-{i}",
                                             "payload": {**rec.payload, "_clkt_synthetic_variant": i}})
            await poller._ingest(ctx, variant, report)
        dt = time.perf_counter() - t0
    return {"synthetic_entities": report.inserted, "seconds": round(dt, 2), "entities_per_s": round(report.inserted / dt, 1)}


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0, help="length of the rate measurement per source")
    ap.add_argument("--variants", type=int, default=400)
    ap.add_argument("--ll2-speed", type=float, default=240.0, help="Launch Library 2's limit scaled by (1: the real limit)")
    args = ap.parse_args()
    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory() as d:
        rate = await bench_rate(args.seconds)
        ll2 = await bench_ll2(args.ll2_speed)
        rate = {**rate, LL2: ll2[LL2]}
        crawl = await bench_crawl(Path(d))
        store = await bench_store(Path(d), args.variants)
    per_source = {k: v for k, v in rate.items() if not k.startswith("_")}
    for name, fig in per_source.items():
        print(f"{name:12s} allowed {fig['allowed_per_s']:>5}/s achieved {fig['achieved_per_s']:>7}/s "
              f"({fig['fraction']:.3f}) busiest 1s {fig['busiest_1s']} (<= {fig['allowed_1s']}) 429s {fig['429s']} "
              f"spare {fig['spare_min']}",
              file=sys.stderr)
    min_fraction = min(v["fraction"] for v in per_source.values())
    total_429 = sum(v["429s"] for v in per_source.values())
    never_exceeded = all(v["busiest_1s"] <= v["allowed_1s"] for v in per_source.values())
    arxiv_gap = per_source["arxiv"]["min_gap_s"]
    figures = {
        "rate_fraction_min": min_fraction,
        "rate_fraction": {k: v["fraction"] for k, v in per_source.items()},
        "busiest_1s": {k: v["busiest_1s"] for k, v in per_source.items()},
        "429s_provoked": total_429,
        "provider_spare_min": {k: v["spare_min"] for k, v in per_source.items()},
        "arxiv_min_gap_s": arxiv_gap,
        "arxiv_requests": per_source["arxiv"]["requests"],
        "launchlibrary_requests": per_source[LL2]["requests"],
        "launchlibrary_min_gap_s": per_source[LL2]["min_gap_s"],
        "launchlibrary_rate_scaled_by": args.ll2_speed,
        "crawl_records_per_s": crawl["records_per_s"],
        "crawl_entities": crawl["entities"],
        "crawl_entities_per_s": crawl["entities_per_s"],
        "store_ingest_entities_per_s": store["entities_per_s"],
        "rate_wall_s": rate["_wall_s"],
        "total_s": round((datetime.now(UTC) - started).total_seconds(), 1),
    }
    goals = {"rate_fraction_min": ">= 0.95", "429s_provoked": "== 0", "limit_never_exceeded": True,
             "arxiv_min_gap_s": ">= 3.0"}
    met = min_fraction >= 0.95 and total_429 == 0 and never_exceeded and arxiv_gap is not None and arxiv_gap >= 3.0
    print(json.dumps({"bench": "crawl", "figures": figures, "goals": goals, "met": met}))


if __name__ == "__main__":
    asyncio.run(main())
