"""The LangGraph store's `search(namespace, query=...)` ranks by content: the items'
BM25 relevance (`find(near=...)` on the same store) as their `score`, best first."""

from __future__ import annotations

import pytest

pytest.importorskip("langgraph")

from cortex.integrations.langgraph import CortexStore, STORE_TAG  # noqa: E402

from integration_helpers import ACTOR, TickClock  # noqa: E402


def test_search_with_a_query_ranks_items_by_relevance(tmp_path):
    with CortexStore(str(tmp_path / "s"), actor=ACTOR, clock=TickClock()) as store:
        store.put(("users", "alice"), "food", {"likes": "pizza and Italian food"})
        store.put(("users", "alice"), "music", {"likes": "jazz"})
        store.put(("users", "bob"), "food", {"likes": "sushi", "dislikes": "Italian restaurants"})
        store.put(("other",), "food", {"likes": "Italian food, always Italian"})
        found = store.search(("users",), query="who likes italian food?")
        assert [(i.namespace, i.key) for i in found] == [(("users", "alice"), "food"), (("users", "bob"), "food"),
                                                          (("users", "alice"), "music")]
        c = store._c
        hits = c.find(near="who likes italian food?", tags=[STORE_TAG], limit=10)
        by_item = {(m.data.subject, m.data.predicate): hits.relevance[m.id] for m in hits}
        assert [i.score for i in found[:2]] == [by_item[("users/alice", "food")], by_item[("users/bob", "food")]]
        assert found[0].score > found[1].score > 0
        assert found[2].score > 0  # "likes": every item holds the word
        assert [i.key for i in store.search(("users",), query="italian", limit=1, offset=1)] == ["food"]
        assert [i.namespace for i in store.search(("users",), query="italian", limit=1, offset=1)] == [("users", "bob")]
        plain = store.search(("users",))
        assert all(i.score is None for i in plain)
        stop = store.search(("users",), query="the and of")
        assert [(i.namespace, i.key) for i in stop] == [(i.namespace, i.key) for i in plain] and all(i.score == 0.0 for i in stop)
        assert store.search(("users",), query="italian", filter={"likes": "jazz"})[0].score == 0.0
