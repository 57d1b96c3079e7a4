"""Comparing two rankers: pool summary, pool guard, paired statistics."""
