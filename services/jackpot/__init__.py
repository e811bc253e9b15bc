"""Linked progressive jackpot system for casino table games.

Packages: ``jackpot.domain`` (the pure rules), ``jackpot.v1`` (protobuf code generated at build
time from ``protos/``), ``jackpot.platform`` (Kafka, settings, logging), and one package per
deployable service.
"""

__version__ = "0.1.0"
