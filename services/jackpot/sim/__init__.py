"""The floor simulator: simulated tables, dealers, a supervisor and sign watchers on the real
protocols, and the books that judge a floor it played against the ledger.

It is part of the product: ``jackpot demo`` plays it (so it ships in the wheel and the image), and
the load test, the fault suite and the tests in ``loadtest/`` and ``tests/`` drive it too.
It imports the domain, platform, clients and services, never ``jackpot.tools``, the CLI or
``loadtest`` (``tests/unit/test_import_boundary.py``).

- :mod:`~jackpot.sim.floor`: the simulator (``Floor``, ``FloorConfig``, ``FloorStats``).
- :mod:`~jackpot.sim.device_faults`: table controllers that duplicate, delay and reorder events.
- :mod:`~jackpot.sim.hops`: the latency budget of a traced lock, hop by hop.
- :mod:`~jackpot.sim.oracle`: the round oracle, every award predicted from the cards dealt.
- :mod:`~jackpot.sim.ledger_oracle`: that oracle held against a whole ledger, award by award.
- :mod:`~jackpot.sim.books`: the floor's books against the ledger and the payouts.
"""
