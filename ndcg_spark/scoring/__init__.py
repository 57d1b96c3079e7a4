"""Stage 1: from candidates (and judgments) to the per-request table."""
