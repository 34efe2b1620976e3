"""The replay log against a plain model: every held range reads back exactly."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ptyvisor.server.outputlog import MAX_TIMES, OutputLog


@given(
    capacity=st.integers(min_value=1, max_value=300),
    writes=st.lists(st.binary(max_size=120), max_size=40),
    data=st.data(),
)
def test_matches_model(capacity: int, writes: list[bytes], data: st.DataObject) -> None:
    log = OutputLog(capacity)
    everything = b""
    for chunk in writes:
        assert log.append(chunk) == len(everything)
        everything += chunk
        assert log.end_seq == len(everything)
        # At least `capacity` bytes (or all of them) stay readable.
        assert log.start_seq <= max(0, len(everything) - capacity)
        start = data.draw(st.integers(min_value=log.start_seq, max_value=log.end_seq))
        end = data.draw(st.integers(min_value=start, max_value=log.end_seq))
        assert log.read(start, end) == everything[start:end]
        assert log.read(start) == everything[start:]
        assert log.holds(start)
        # Timed, it is the same bytes, in order, with times that never go back.
        timed = log.timed()
        assert b"".join(piece for _, piece in timed) == everything[log.start_seq :]
        assert [at for at, _ in timed] == sorted(at for at, _ in timed)


def test_memory_is_bounded_and_old_bytes_refused() -> None:
    log = OutputLog(1000)
    for _ in range(10_000):
        log.append(b"x" * 37)
    assert log.end_seq == 370_000
    assert log.end_seq - log.start_seq < 1000 + 300
    assert not log.holds(0)
    with pytest.raises(LookupError):
        log.read(0)
    with pytest.raises(LookupError):
        log.read(log.end_seq, log.end_seq + 1)


def test_timed_pieces_follow_pauses_and_stay_bounded() -> None:
    clock = iter(float(n) for n in range(10**6))
    log = OutputLog(100_000, clock=lambda: next(clock))
    for n in range(MAX_TIMES * 3):
        log.append(b"%d," % n)  # each one second after the last: a time noted each
    timed = log.timed()
    # The oldest times go; their bytes stay, with the oldest time kept.
    assert len(timed) == MAX_TIMES + 1
    assert timed[0][0] == timed[1][0] == float(MAX_TIMES * 2)
    assert b"".join(piece for _, piece in timed) == log.read(log.start_seq)
    assert timed[-1] == (float(MAX_TIMES * 3 - 1), b"%d," % (MAX_TIMES * 3 - 1))
