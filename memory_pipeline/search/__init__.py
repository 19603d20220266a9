"""Memory search in three layers (index -> timeline -> detail), hybrid-ranked, and the session briefing."""

from memory_pipeline.search.engine import MemorySearch
from memory_pipeline.search.models import Filters, Row
from memory_pipeline.search.open import open_search
from memory_pipeline.search.rrf import reciprocal_rank_fusion

__all__ = ["Filters", "MemorySearch", "Row", "open_search", "reciprocal_rank_fusion"]
