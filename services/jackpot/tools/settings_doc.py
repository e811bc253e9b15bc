"""docs/settings.md from every service's settings model (`jackpot settings`).

The list of services lives here, above them all: ``jackpot.platform.settings`` is imported by
every service and so imports none of them.
"""

from __future__ import annotations

from jackpot.display.settings import DisplaySettings
from jackpot.gateway.settings import GatewaySettings
from jackpot.payout.settings import PayoutSettings
from jackpot.platform.settings import ServiceSettings, settings_markdown
from jackpot.pot.settings import PotSettings
from jackpot.terminal.settings import TerminalSettings


def service_settings() -> list[type[ServiceSettings]]:
    """Every service's settings class, in the order docs/settings.md lists them."""
    return [PotSettings, PayoutSettings, DisplaySettings, GatewaySettings, TerminalSettings]


def markdown() -> str:
    """The whole of docs/settings.md."""
    return settings_markdown(service_settings())
