"""The JSON Schemas shipped with the package (cortex/interop/schemas/), and event validation.

    schema = schema_check.load("hmx_event")        # a dict, Draft 2020-12
    schema_check.check_event(3, event)             # MalformedEvent("line 3: content.role: ...") unless valid

`hmx_event` is the HMX-1.0 event as `ingest_hmx` takes it (seed 001's envelope and
the content fields each type reads); `contextos_pack` the ContextOS ten-layer
projection `compile_context` writes. The ingest runs every event through
`check_event` after its own field checks, so the shipped schema and the reader
cannot drift apart: anything the schema refuses is refused, naming the field.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from ..errors import MalformedEvent
from .canonical import JSONDict

__all__ = ["load", "check_event", "SCHEMA_NAMES"]

SCHEMA_NAMES = ("hmx_event", "contextos_pack")


@functools.cache
def _text(name: str) -> str:
    return resources.files("cortex.interop").joinpath("schemas", f"{name}.schema.json").read_text(encoding="utf-8")


def load(name: str) -> JSONDict:
    """A fresh copy of the shipped schema `name` (one of `SCHEMA_NAMES`)."""
    if name not in SCHEMA_NAMES:
        raise KeyError(name)
    schema: JSONDict = json.loads(_text(name))
    return schema


@functools.cache
def _validator(name: str) -> Any:
    import jsonschema  # imported on first use: the import alone costs tens of milliseconds

    return jsonschema.Draft202012Validator(load(name))


def check_event(line: int, event: object) -> None:
    """Raise `MalformedEvent` naming the line and the field unless `event` passes `hmx_event`."""
    import jsonschema

    error = jsonschema.exceptions.best_match(_validator("hmx_event").iter_errors(event))
    if error is not None:
        field = ".".join(str(part) for part in error.absolute_path) or "event"
        raise MalformedEvent(line, field, f"breaks the HMX event schema: {error.message}")
