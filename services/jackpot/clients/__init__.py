"""Clients of the services' gRPC APIs, for whoever calls them: simulators, tools, tests, and the
services themselves (a layer between ``platform`` and the services, so no service imports another).

- :mod:`jackpot.clients.device`: a table controller's side of the gateway's device protocol.
- :mod:`jackpot.clients.payout`: how dealer terminals and supervisors reach the payout instance
  that owns the payouts (and the metadata key it names the owner with).
"""
