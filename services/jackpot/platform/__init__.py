"""Thin edges shared by the services: Kafka clients, settings, logging; and, pure of I/O, the
protobuf enum codec (``codec``) and the dead-letter builder (``deadletter``)."""
