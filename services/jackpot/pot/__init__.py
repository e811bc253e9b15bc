"""The pot service: owns every pot group's money; applies table events exactly once via Kafka."""
