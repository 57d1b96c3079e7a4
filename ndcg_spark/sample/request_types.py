"""The request types of the sample (equipment technicians search for) and how requests are drawn.

Each request belongs to a *request type* with a traffic weight: a heavy head (centrifugal pumps,
gate valves) and a long rare tail (gas turbine lube skids, cryogenic pumps). The evaluation
sample over-represents the tail relative to traffic, as real judged sets do, so the
traffic-weighted mean and the macro mean differ.

Examples
--------
>>> REQUEST_TYPES[0]
RequestType(name='centrifugal pump', rarity='common', monthly_searches=5200)
>>> round(sum(share for _, share in sample_shares()), 12)
1.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class RequestType:
    """An equipment type technicians search for.

    Parameters
    ----------
    name : the request type, e.g. ``"centrifugal pump"``.
    rarity : ``"common"``, ``"uncommon"`` or ``"rare"``.
    monthly_searches : traffic: how often requests of this type are seen per month.
    """

    name: str
    rarity: str
    monthly_searches: float


REQUEST_TYPES: tuple[RequestType, ...] = (
    RequestType("centrifugal pump", "common", 5200),
    RequestType("gate valve", "common", 4100),
    RequestType("air compressor", "common", 3600),
    RequestType("belt conveyor", "common", 3100),
    RequestType("electric motor", "common", 2900),
    RequestType("ball valve", "common", 2400),
    RequestType("shell and tube heat exchanger", "common", 2000),
    RequestType("air handling unit", "common", 1800),
    RequestType("diaphragm pump", "uncommon", 700),
    RequestType("cooling tower", "uncommon", 600),
    RequestType("steam trap", "uncommon", 520),
    RequestType("helical gearbox", "uncommon", 480),
    RequestType("hydraulic press", "uncommon", 400),
    RequestType("overhead crane", "uncommon", 350),
    RequestType("boiler feedwater pump", "uncommon", 300),
    RequestType("screw conveyor", "uncommon", 240),
    RequestType("gas turbine lube skid", "rare", 60),
    RequestType("cryogenic pump", "rare", 45),
    RequestType("reciprocating gas compressor", "rare", 35),
    RequestType("emergency diesel generator", "rare", 30),
    RequestType("rotary kiln drive", "rare", 20),
    RequestType("vacuum distillation column", "rare", 15),
    RequestType("magnetic bearing chiller", "rare", 12),
    RequestType("molten salt pump", "rare", 8),
)
"""Request types with their traffic; heavy head, long rare tail."""

# Share of the *evaluation sample* per rarity (the tail is over-sampled relative to traffic);
# within a rarity, types are drawn proportionally to sqrt(traffic).
_SAMPLE_SHARE = {"common": 0.62, "uncommon": 0.28, "rare": 0.10}

DOC_AGE_BUCKETS = ("<1y", "1-3y", "3-10y", ">10y")
DOC_AGE_SHARE = {  # rare equipment is old equipment: its documents are older
    "common": (0.22, 0.38, 0.28, 0.12),
    "uncommon": (0.15, 0.32, 0.33, 0.20),
    "rare": (0.05, 0.20, 0.40, 0.35),
}
PERMISSION_GROUPS = (("public", 0.60), ("contractor", 0.28), ("restricted", 0.12))


def sample_shares() -> list[tuple[object, float]]:
    """Request type index -> share of the evaluation sample."""
    options: list[tuple[object, float]] = []
    for rarity, share in _SAMPLE_SHARE.items():
        members = [(i, t) for i, t in enumerate(REQUEST_TYPES) if t.rarity == rarity]
        norm = sum(math.sqrt(t.monthly_searches) for _, t in members)
        options += [(i, share * math.sqrt(t.monthly_searches) / norm) for i, t in members]
    return options
