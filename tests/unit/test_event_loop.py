"""Every service's event loop (issue 26): uvloop by default, asyncio's own as the named fallback,
anything else refused in one line naming the variable."""

from __future__ import annotations

import asyncio

import pytest
import uvloop

from jackpot.platform.runtime import loop_factory
from jackpot.platform.service_settings import RuntimeSettings
from jackpot.platform.settings import SettingsError, load
from jackpot.pot.settings import PotSettings

pytestmark = pytest.mark.unit


def test_services_run_on_uvloop_by_default() -> None:
    runtime = load(PotSettings, {}).runtime
    factory = loop_factory(runtime)
    assert factory is not None
    with asyncio.Runner(loop_factory=factory) as runner:
        assert isinstance(runner.get_loop(), uvloop.Loop)


def test_JACKPOT_EVENT_LOOP_asyncio_is_the_standard_loop() -> None:
    runtime = load(PotSettings, {"JACKPOT_EVENT_LOOP": "asyncio"}).runtime
    assert runtime == RuntimeSettings(event_loop="asyncio")
    assert loop_factory(runtime) is None
    with asyncio.Runner(loop_factory=loop_factory(runtime)) as runner:
        assert not isinstance(runner.get_loop(), uvloop.Loop)


def test_an_unknown_event_loop_is_refused_naming_the_variable() -> None:
    with pytest.raises(SettingsError) as refused:
        load(PotSettings, {"JACKPOT_EVENT_LOOP": "trio"})
    assert "JACKPOT_EVENT_LOOP" in str(refused.value)
    assert "\n" not in str(refused.value)
