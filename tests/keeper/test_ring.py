"""The shared-memory ring (keeper/ring.py) alone: whatever the writes, it holds the
last ``capacity`` bytes of the stream at their seq, also for a second mapping (the
next server's), and refuses memory that is not a ring of its version."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.errors import RingError
from ptyvisor.keeper import ring


@given(capacity=st.integers(1, 64), writes=st.lists(st.binary(max_size=100), max_size=20))
def test_it_holds_the_streams_last_bytes_at_their_seq(capacity: int, writes: list[bytes]) -> None:
    fd = ring.create(capacity)
    try:
        writer = ring.Ring(fd)
        stream = b""
        for data in writes:
            writer.append(data)
            stream += data
            start, held = writer.contents()
            assert (start, held) == (len(stream) - len(held), stream[-capacity:] if stream else b"")
        reader = ring.Ring(fd)  # what a server started after a crash maps
        assert reader.contents() == writer.contents() and reader.end_seq == len(stream)
        writer.close()
        reader.close()
    finally:
        os.close(fd)


def test_memory_that_is_not_a_ring_is_refused() -> None:
    fd = os.memfd_create("not-a-ring")
    try:
        with pytest.raises(RingError):
            ring.Ring(fd)
        os.ftruncate(fd, 200)
        with pytest.raises(RingError):
            ring.Ring(fd)
    finally:
        os.close(fd)
    with pytest.raises(ValueError):
        ring.create(0)
