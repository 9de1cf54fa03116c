"""`cortex.Tuning`: the read path's thresholds, one frozen value per handle. Each
field chooses between ways of computing the same answer, so a handle with extreme
thresholds answers byte for byte as a handle with the defaults; a bad value is a
`ValidationError` naming the field, raised before the store is opened."""

from __future__ import annotations

import json
import random
from dataclasses import FrozenInstanceError
from datetime import timedelta

import pytest

import cortex
from cortex import Fact, Frame, Tuning

from conftest import START, FakeClock, open_store

NOW = START + timedelta(days=3)
# Every fast path at every size: rank one row first, a short reachable list, dedup by
# search, frames scored group by group wherever bounds apply, every call's join kept
# under its frame.
EXTREME = Tuning(first_ranked=1, reachable_uris=3, sort_dedup_rows=0, bounded_from=1, always_bound=True, joined_below_rows=0)
SLOW = Tuning(first_ranked=1 << 40, reachable_uris=3, sort_dedup_rows=1 << 40, bounded_from=1 << 40, joined_below_rows=1 << 40)


@pytest.mark.parametrize(("field", "value", "rule"), [
    ("first_ranked", 0, "must be at least 1"),
    ("bounded_from", -1, "must be a non-negative integer"),
    ("joined_bytes", 2.5, "must be a non-negative integer"),
    ("reachable_uris", True, "must be a non-negative integer"),
    ("always_bound", 1, "must be a bool"),
])
def test_a_bad_threshold_names_its_field(field, value, rule):
    with pytest.raises(cortex.ValidationError) as caught:
        Tuning(**{field: value})
    assert (caught.value.field, caught.value.rule) == (f"tuning.{field}", rule)


def test_open_refuses_what_is_not_a_tuning_and_writes_nothing(tmp_path):
    with pytest.raises(cortex.ValidationError) as caught:
        open_store(tmp_path / "s", tuning={"first_ranked": 1})
    assert caught.value.field == "tuning"
    assert not (tmp_path / "s").exists()


def test_a_tuning_is_a_frozen_value_held_by_the_handle(tmp_path):
    with open_store(tmp_path / "s", tuning=EXTREME) as c:
        assert c._engine.tuning is EXTREME
        with pytest.raises(FrozenInstanceError):
            EXTREME.first_ranked = 2  # type: ignore[misc]
    with open_store(tmp_path / "s") as c:
        assert c._engine.tuning == Tuning()


def test_handles_with_any_tuning_answer_byte_for_byte_alike(tmp_path):
    rng = random.Random(5)
    clock = FakeClock()
    frames = [Frame("acquire", "service", "gpu"), Frame("acquire", "model", "acme")]
    with open_store(tmp_path / "s", clock) as c:
        for i in range(300):
            clock.now = START + timedelta(minutes=rng.choice((0, 1, 60)) * i)
            c.write(Fact(statement=f"fact {i}" + " x" * rng.randint(0, 20), subject="s", predicate="p"),
                    frames=rng.sample(frames, rng.randint(1, 2)), importance=rng.choice((2, 5, 5, 8)))
    asks = [{"verb": "acquire", "objects": objects, "budget_tokens": budget, "form": form, "now": NOW}
            for objects in ({"service": "gpu"}, {"service": "gpu", "model": "acme"})
            for budget in (1, 60, 400, 4000) for form in ("short", "full")]
    answers = []
    for tuning in (Tuning(), EXTREME, SLOW):
        with open_store(tmp_path / "s", clock, tuning=tuning) as c:
            answers.append([(b.to_json(), list(b.scores.items()), list(b.dropped_ids))
                            for b in (c.context(**ask) for _ in range(2) for ask in asks)])
    # The reachable list is as long as the tuning says (its first entries the same);
    # everything else is the same, and most calls trimmed.
    default, extreme, slow = answers
    assert extreme == slow
    assert [a[1:] for a in default] == [a[1:] for a in extreme]
    for (d, _, _), (x, _, _) in zip(default, extreme):
        d_json, x_json = json.loads(d), json.loads(x)
        assert x_json["reachable_uris"] == d_json["reachable_uris"][:3]
        assert {**d_json, "reachable_uris": None} == {**x_json, "reachable_uris": None}
    assert sum(json.loads(d)["trimmed"] > 0 for d, _, _ in default) > len(default) // 2
