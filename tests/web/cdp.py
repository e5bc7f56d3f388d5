"""A small Chrome DevTools Protocol client over aiohttp's websocket, for the browser tests.

Why the protocol and not `chromium --headless --dump-dom`: a dumped DOM says nothing about console errors,
failed loads or CSP violations, and a screenshot run is a second browser start per page. Over the protocol
one headless Chromium loads every page, and we read what the page itself reports: uncaught exceptions
(`Runtime.exceptionThrown`), `console.error` (`Runtime.consoleAPICalled`), the browser's own error log
(`Log.entryAdded`: failed subresources, CSP refusals), JavaScript dialogs (an `alert()` that ran), and the
rendered text (`Runtime.evaluate`), then take a full-page screenshot (`Page.captureScreenshot`).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

__all__ = ["Browser", "PageLoad", "browser", "chromium_path"]

_LISTEN = re.compile(r"DevTools listening on (ws://\S+)")


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


@dataclass
class PageLoad:
    url: str
    status: int | None = None
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, error log entries
    dialogs: list[str] = field(default_factory=list)  # alert/confirm/prompt messages: a script ran
    text: str = ""  # document.body.innerText
    value: Any = None  # the value of the `expression` asked for
    screenshot: Path | None = None


class Browser:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._reader = asyncio.create_task(self._read(), name="cdp-reader")

    async def _read(self) -> None:
        async for msg in self._ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            data = json.loads(msg.data)
            if "id" in data and data["id"] in self._pending:
                self._pending.pop(data["id"]).set_result(data)
            else:
                await self._events.put(data)

    async def send(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None,
                   timeout: float = 30.0) -> dict[str, Any]:
        i = next(self._ids)
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[i] = fut
        msg: dict[str, Any] = {"id": i, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        await self._ws.send_str(json.dumps(msg))
        res = await asyncio.wait_for(fut, timeout)
        if "error" in res:
            raise RuntimeError(f"{method}: {res['error']}")
        return res.get("result", {})

    async def load(self, url: str, *, screenshot: Path | None = None, expression: str | None = None, width: int = 1280,
                   timeout: float = 30.0) -> PageLoad:
        """Open `url` in a fresh tab, wait for its load event and a quiet moment, collect what it reported."""
        out = PageLoad(url=url)
        target = (await self.send("Target.createTarget", {"url": "about:blank"}))["targetId"]
        sid = (await self.send("Target.attachToTarget", {"targetId": target, "flatten": True}))["sessionId"]
        try:
            for dom in ("Page", "Runtime", "Log", "Network"):
                await self.send(f"{dom}.enable", session=sid)
            await self.send("Emulation.setDeviceMetricsOverride",
                            {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session=sid)
            while not self._events.empty():
                self._events.get_nowait()
            await self.send("Page.navigate", {"url": url}, session=sid)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            loaded_at: float | None = None
            while True:
                now = loop.time()
                if now > deadline:
                    raise TimeoutError(f"{url}: no load event within {timeout}s")
                wait = 0.5 if loaded_at is not None else deadline - now
                try:
                    ev = await asyncio.wait_for(self._events.get(), wait)
                except TimeoutError:
                    if loaded_at is not None:
                        break  # half a second without events after the load event: settled
                    continue
                if ev.get("sessionId") != sid:
                    continue
                self._note(ev, out)
                if ev.get("method") == "Page.javascriptDialogOpening":
                    await self.send("Page.handleJavaScriptDialog", {"accept": False}, session=sid)
                if ev.get("method") == "Page.loadEventFired":
                    loaded_at = loop.time()
            res = await self.send("Runtime.evaluate", {"expression": "document.body ? document.body.innerText : ''",
                                                       "returnByValue": True}, session=sid)
            out.text = str(res.get("result", {}).get("value", ""))
            if expression is not None:
                res = await self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=sid)
                out.value = res.get("result", {}).get("value")
            if screenshot is not None:
                m = await self.send("Page.getLayoutMetrics", session=sid)
                size = m.get("cssContentSize") or m["contentSize"]
                h = min(int(size["height"]) + 1, 8000)
                shot = await self.send("Page.captureScreenshot", {
                    "format": "png", "captureBeyondViewport": True,
                    "clip": {"x": 0, "y": 0, "width": width, "height": h, "scale": 1},
                }, session=sid)
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                screenshot.write_bytes(base64.b64decode(shot["data"]))
                out.screenshot = screenshot
        finally:
            await self.send("Target.closeTarget", {"targetId": target})
        return out

    async def evaluate(self, url: str, expression: str) -> Any:
        """Open `url`, wait until it has loaded and settled, return the value of `expression` in the page."""
        return (await self.load(url, expression=expression)).value

    @staticmethod
    def _note(ev: dict[str, Any], out: PageLoad) -> None:
        m, p = ev.get("method"), ev.get("params", {})
        if m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.errors.append(f"exception: {d.get('text')} {d.get('exception', {}).get('description', '')}".strip())
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.errors.append("console." + p["type"] + ": " + " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            out.errors.append(f"log/{e.get('source')}: {e.get('text')} {e.get('url', '')}".strip())
        elif m == "Page.javascriptDialogOpening":
            out.dialogs.append(f"{p.get('type')}: {p.get('message')}")
        elif m == "Network.responseReceived" and p.get("type") == "Document" and out.status is None:
            out.status = int(p.get("response", {}).get("status", 0))
        elif m == "Network.loadingFailed" and not p.get("canceled"):
            out.errors.append(f"network: {p.get('errorText')} ({p.get('type')})")


@asynccontextmanager
async def browser(exe: str, *, timeout: float = 60.0) -> AsyncIterator[Browser]:
    """A headless Chromium on a private profile, driven over its DevTools websocket; killed on exit."""
    profile = tempfile.mkdtemp(prefix="clkt-chromium-")
    args = [
        exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
        "--no-default-browser-check", "--disable-extensions", "--disable-background-networking", "--disable-sync",
        "--mute-audio", "--hide-scrollbars", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
        f"--user-data-dir={profile}", "about:blank",
    ]
    proc = await asyncio.create_subprocess_exec(
        *args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "LANG": "en_US.UTF-8"},
    )
    try:
        assert proc.stderr is not None
        ws_url = None
        seen: list[str] = []

        stderr = proc.stderr
        assert stderr is not None  # started with stderr=PIPE

        async def find() -> str:
            while True:
                line = (await stderr.readline()).decode(errors="replace")
                if not line:
                    raise RuntimeError("chromium exited before its DevTools endpoint came up:\n" + "".join(seen[-20:]))
                seen.append(line)
                m = _LISTEN.search(line)
                if m:
                    return m.group(1)

        ws_url = await asyncio.wait_for(find(), timeout)

        async def drain() -> None:  # keep reading stderr so chromium never blocks on a full pipe
            while await stderr.readline():
                pass

        drainer = asyncio.create_task(drain(), name="chromium-stderr")
        async with aiohttp.ClientSession() as http, http.ws_connect(ws_url, max_msg_size=0) as ws:
            b = Browser(ws)
            try:
                yield b
            finally:
                b._reader.cancel()
        drainer.cancel()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        shutil.rmtree(profile, ignore_errors=True)
