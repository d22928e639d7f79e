"""Moved: `where_backward_stops` to helpers.trace, `saved_states` to helpers.snapshot.

This module only keeps `from helpers.retain import ...` in existing notebooks working
(its name suggested retain_graph, which it was not about). Import from the new homes.
"""
from .snapshot import saved_states
from .trace import Stop, where_backward_stops

__all__ = ["Stop", "saved_states", "where_backward_stops"]
