"""The settings of the one exactly-once processor (:mod:`jackpot.platform.exactly_once`): how it
joins its consumer group, paces its transactions and waits for brokers that are gone."""

from __future__ import annotations

from pydantic import Field, ValidationInfo, field_validator, model_validator

from jackpot.platform.settings import Settings, default_instance_id


class ExactlyOnceSettings(Settings):
    """How a service's exactly-once processor joins its consumer group and paces its
    transactions. A section of the pot's and the payout's settings, read under the service's own
    prefix (``JACKPOT_CONSUMER_GROUP``, ``JACKPOT_PAYOUT_CONSUMER_GROUP``), each with its own
    default group and transactional ids.

    Batches are sized by load, not by a linger (issue 26): a partition's worker takes what
    arrived during its previous transaction, so that transaction is the linger. Hence
    ``batch_linger_ms`` 0: at low load a batch never reaches ``batch_min_records``, so a linger
    adds its whole length to every record; under load (600 records/s over 6 partitions,
    measured on a 2-core machine with other work running) 2 or 5 ms did not beat 0 beyond the
    run-to-run noise (p50 21-30 ms against 19-38 ms).

    A transaction begun right after a commit meets CONCURRENT_TRANSACTIONS on its first
    AddPartitionsToTxn while the coordinator still writes the previous one's markers (1-3 ms on
    an idle broker). aiokafka retries that after a fixed 20 ms whatever ``retry_backoff_ms``
    says (Java's client takes the smaller of ``retry.backoff.ms`` and 20 ms), and that wait was
    most of every back-to-back transaction: p50 25-29 ms against 4-8 ms with it at 1-3 ms
    (2026-12-03, one idle broker, begin/send/offsets/commit in a loop). Hence
    ``concurrent_transactions_backoff_ms`` 2. ``producer_retry_backoff_ms`` 20 paces every other
    retry (AddOffsetsToTxn met the same error with aiokafka's default 100 ms).
    """

    consumer_group: str = Field(
        description="consumer group of every instance; its offsets commit in transactions"
    )
    transactional_id_prefix: str = Field(
        description="transactional ids are `<prefix>-<partition>`: one per input partition "
        "fences a zombie"
    )
    instance_id: str = Field(
        default_factory=default_instance_id,
        description="names this instance in logs, client ids and the access log (the pod name in "
        "Kubernetes)",
        json_schema_extra={"shown_default": "<hostname>-<pid>"},
    )
    session_timeout_ms: int = Field(
        3_000,
        description="consumer group session: a killed instance's partitions move after this "
        "long (brokers need group.min.session.timeout.ms at most this; fencing keeps it safe)",
    )
    heartbeat_ms: int = Field(500, description="the consumer group's heartbeat")
    max_poll_interval_ms: int = Field(
        60_000,
        description="a stalled instance leaves the group after this long; its successor fences it",
    )
    transaction_timeout_ms: int = Field(30_000, description="Kafka transaction timeout")
    transaction_deadline_ms: int = Field(
        10_000,
        ge=100,
        description="the longest a transaction, an abort or a fence may wait for the brokers "
        "before the partition's producer is replaced and the partition taken over again (the "
        "brokers gone or stalled: aiokafka retries those requests for ever); below "
        "transaction_timeout_ms",
    )
    retry_backoff_ms: int = Field(500, description="pause before retrying a failed transaction")
    poll_timeout_ms: int = Field(100, description="longest wait for input")
    max_batch_records: int = Field(200, description="input records per transaction at most")
    batch_linger_ms: int = Field(
        0,
        description="how long a partition's worker waits for more input while fewer than "
        "batch_min_records wait (0: it takes what is there; its transaction in flight gathers "
        "the next batch)",
    )
    batch_min_records: int = Field(
        200,
        description="input records a batch waits for, up to batch_linger_ms (never without a "
        "linger; at most max_batch_records)",
    )
    pending_batches: int = Field(
        4,
        description="a partition is not fetched for while this many batches (of "
        "max_batch_records) wait for its worker",
    )
    producer_retry_backoff_ms: int = Field(
        20,
        description="the transactional producers' pause before retrying a request (a "
        "transaction begun right after a commit often meets CONCURRENT_TRANSACTIONS)",
    )
    group_commit_interval_ms: int = Field(
        1_000,
        ge=0,
        description="the consumer group's offsets go into a transaction at most this often "
        "(and within this long of the last input); every transaction writes the next offset to "
        "the changelog, which a takeover reads (0: every batch commits the group's offsets)",
    )
    concurrent_transactions_backoff_ms: int = Field(
        2,
        ge=1,
        le=100,
        description="pause before a transaction's first AddPartitionsToTxn is retried after "
        "CONCURRENT_TRANSACTIONS (the previous commit's markers still being written; aiokafka's "
        "own is a fixed 20 ms, most of a back-to-back transaction)",
    )

    broker_probe_ms: int = Field(
        1_000,
        ge=100,
        description="when nothing was written for this long, the brokers are asked whether they "
        "answer; none within transaction_deadline_ms: NOT_SERVING until one does",
    )
    recovery_backoff_max_ms: int = Field(
        5_000,
        ge=1,
        description="the longest pause between two attempts to take a partition over again "
        "while the brokers cannot be reached (the pause doubles from retry_backoff_ms up to "
        "this); meanwhile the partition is not served and the service reports NOT_SERVING",
    )

    @field_validator("consumer_group", "transactional_id_prefix")
    @classmethod
    def _not_empty(cls, value: str, info: ValidationInfo) -> str:
        if not value:
            raise ValueError(f"{info.field_name} must not be empty")
        return value

    @field_validator("max_batch_records", "batch_min_records", "pending_batches")
    @classmethod
    def _at_least_one(cls, value: int, info: ValidationInfo) -> int:
        if value < 1:
            raise ValueError(f"{info.field_name} must be at least 1")
        return value

    @field_validator("batch_linger_ms", "producer_retry_backoff_ms")
    @classmethod
    def _not_negative(cls, value: int, info: ValidationInfo) -> int:
        if value < 0:
            raise ValueError(f"{info.field_name} must not be negative")
        return value

    @model_validator(mode="after")
    def _deadline_within_timeout(self) -> ExactlyOnceSettings:
        if self.transaction_deadline_ms >= self.transaction_timeout_ms:
            raise ValueError(
                f"transaction_deadline_ms ({self.transaction_deadline_ms}) must be below "
                f"transaction_timeout_ms ({self.transaction_timeout_ms})"
            )
        return self

    def transactional_id(self, partition: int) -> str:
        """The transactional id of input partition ``partition``'s producer."""
        return f"{self.transactional_id_prefix}-{partition}"
