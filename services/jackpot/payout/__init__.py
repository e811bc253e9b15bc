"""The payout service: prize awards in, one payout each, dealer terminals and supervisors."""
