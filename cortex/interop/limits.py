"""The bounds every import holds to, in one place (docs/trust.md).

Inputs that come from outside the store (an export file, HMX events, a fingerprint)
are read a bounded line at a time, and what an untrusted input may plant is capped.
"""

from __future__ import annotations

# The longest line an export file (`cortex.interop.jsonl`) or a JSON-RPC message to
# `cortex mcp` may hold, newline included: a longer one is refused
# with an error naming it, after reading no more than this many bytes of it. A
# memory line holds every version of one memory; 64 MiB is far above what the data
# limits let a memory of a few hundred versions reach.
MAX_LINE_BYTES = 64 << 20

# The longest line of an HMX events file (`cortex.interop.hmx_events`), newline
# included: one event, whose content the ingest keeps whole; a longer line is refused
# naming its line number, after reading no more than this of it.
MAX_EVENT_LINE_BYTES = 8 << 20

# What a fingerprint whose envelope no key the store trusts has signed may write
# (`cortex.interop.fingerprint`): never a pinned or hard memory, at most this many
# memories of each kind it carries, each of at most this many bytes of text.
UNTRUSTED_MAX_ITEMS = 32
UNTRUSTED_MAX_TEXT_BYTES = 2048
