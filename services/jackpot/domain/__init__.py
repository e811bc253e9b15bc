"""The jackpot rules as pure code: no I/O library is imported anywhere below this package.

Rule ids (M, C, E, P, S, X, D) refer to ``docs/rules.md``. The same code
resolves ``jackpot resolve`` files, runs inside the pot service and recomputes the ledger in
``jackpot audit``. A unit test enforces the import boundary.
"""
