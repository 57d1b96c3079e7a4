"""Guardrails beside NDCG (SPEC §5): release outcomes and offline flags, per arm and slice, with
bootstrap intervals, a non-inferiority verdict per guardrail and an overall verdict."""
