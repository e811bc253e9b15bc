"""Debian's Chromium driven by Playwright (no browser download): the one launcher used by the
load report's screenshot and by every browser test.

The flags are the ones this machine needs: without the background-networking ones Chromium
keeps dialling Google's hosts, which the closed network refuses.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

CHROMIUM = "/usr/bin/chromium"  # Debian's package (make browser)
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    """A headless Chromium browser, closed on the way out."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, args=list(CHROMIUM_ARGS)
        )
        try:
            yield browser
        finally:
            await browser.close()
