"""Stage 2: from the per-request table to means with their denominators, intervals and the audit."""
