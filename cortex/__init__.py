"""cortex: an embedded memory engine for AI agents.

    import cortex
    with cortex.open("agent-store", actor="agent-ops-1") as c:
        uri = c.write(cortex.Fact(statement="...", subject="...", predicate="..."),
                      frames=[cortex.Frame("acquire", "service", "gpu_inference")])
        bundle = c.context(verb="acquire", objects={"service": "gpu_inference"})

Everything not in `__all__` is private and may change.
"""

from .context import Bundle, ContextOpts
from .model import Edge
from .facade import Cortex, list_actors, migrate, open, store_actor
from .interop.migrate import Migration
from .writes import Write
from .recall import Recalled
from .errors import *  # noqa: F403 - every error class is public
from .errors import __all__ as _errors
from .memory import Memory
from .provenance import Origin
from .model import (
    Belief,
    EdgeType,
    Capability,
    Constraint,
    Event,
    Fact,
    Frame,
    Goal,
    Identity,
    MemoryType,
    ObjKind,
    Pattern,
    Preference,
    Tier,
    Verb,
)
from .salience import Score, Weights
from .salience.score import FACTUAL_ERROR, WRONG_ASSUMPTION
from .scope import Scope, Selector, SignedScope
from .tuning import Tuning

__version__ = "0.1.0"

__all__ = [
    "open",
    "migrate",
    "Migration",
    "store_actor",
    "list_actors",
    "Cortex",
    "Identity",
    "Fact",
    "Preference",
    "Belief",
    "Event",
    "Goal",
    "Constraint",
    "Capability",
    "Pattern",
    "Frame",
    "Write",
    "Recalled",
    "ContextOpts",
    "Bundle",
    "Memory",
    "Score",
    "Weights",
    "MemoryType",
    "Verb",
    "ObjKind",
    "Tier",
    "Edge",
    "EdgeType",
    "Origin",
    "Scope",
    "Selector",
    "SignedScope",
    "Tuning",
    "FACTUAL_ERROR",
    "WRONG_ASSUMPTION",
    *_errors,
]
