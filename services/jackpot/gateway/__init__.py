"""The table gateway: table controllers' device streams in, validated table events on Kafka out."""
