"""The reference dealer terminal (rule D3): ``jackpot terminal --table ID``."""
