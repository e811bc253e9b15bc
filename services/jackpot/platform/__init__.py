"""Thin I/O edges shared by the services: Kafka clients, settings, logging."""
