"""One client's send queue (server/outbox.py) alone: whatever is put and popped, in
any order, the output it sends is the program's in order until the client lags, it
never holds more output than its limit, events keep their order, and a client that
lags gets nothing more of the output until it is resynced."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.server.outbox import Outbox

LIMIT = 64
SNAPSHOT = '{"type": "snapshot"}'
"""Not an event the steps can put: ``text`` holds at most 10 characters."""

actions = st.lists(
    st.one_of(
        st.tuples(st.just("output"), st.binary(min_size=1, max_size=40)),
        st.tuples(st.just("event"), st.text(min_size=1, max_size=10)),
        st.tuples(st.just("pop"), st.just(None)),
    ),
    max_size=60,
)


@given(actions)
def test_output_is_in_order_bounded_and_cut_only_by_a_lag(
    steps: list[tuple[str, bytes | str | None]],
) -> None:
    box = Outbox(limit=LIMIT, text_limit=1 << 20)
    written = b""
    sent = b""
    events_in: list[str] = []
    events_out: list[str] = []
    lagged_at: int | None = None

    def drain_one() -> bool:
        nonlocal sent
        item = box.pop()
        if isinstance(item, bytes):
            sent += item
        elif isinstance(item, str):
            events_out.append(item)
        return item is not None

    for kind, value in steps:
        if kind == "output":
            assert isinstance(value, bytes)
            box.put_output(value)
            written += value
            if box.lagging and lagged_at is None:
                lagged_at = len(written)
        elif kind == "event":
            assert isinstance(value, str)
            box.put_text(value)
            events_in.append(value)
        else:
            drain_one()
        queued_output = box.size - sum(map(len, events_in)) + sum(map(len, events_out))
        assert 0 <= queued_output <= LIMIT
    while drain_one():
        pass
    if lagged_at is None:
        assert box.size == 0
        assert sent == written  # nothing lost, nothing twice, in order
    else:
        # What the sender does for a lagging client: a snapshot, then what was held.
        assert written[:lagged_at].startswith(sent) and box.lagging
        box.resynced()
        box.hold()
        box.release(SNAPSHOT, covered=0)
        while drain_one():
            pass
        assert box.size == 0
        assert SNAPSHOT in events_out
        events_out.remove(SNAPSHOT)
    assert events_out == events_in  # every event, in its order
