"""Salience: the per-memory record, the live score, and the store's weights."""

from .score import DEFAULT_WEIGHTS, PINNED_FLOOR, Score, Weights, live_scores, score_of

__all__ = ["DEFAULT_WEIGHTS", "PINNED_FLOOR", "Score", "Weights", "live_scores", "score_of"]
