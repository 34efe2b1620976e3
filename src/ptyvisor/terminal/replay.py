"""Terminal queries in replayed output were answered when they were live.

A client that resumes with ``attach {since}`` gets the bytes it missed again, and a
terminal emulator parsing them answers every query in them (DA, DSR/CPR, mode and
colour queries…) again. But each was answered when it was live — by the server's
headless terminal while no client declared ``answers_queries``, or by the client
that was attached — and a second reply reaches the program as typed input (Ink
agents show it in their prompt). So a client that answers queries shows replayed
bytes (before ``attached.live_seq``) without the queries; its stream position still
counts every byte. Nothing a query does is visible, so the screen is the same.

The JavaScript client (and so the web page) has the same rules in
``clients/js/src/replay.js``; both are checked against ``tests/terminal/replay-queries.json``.
"""

from __future__ import annotations

import re

QUERY = re.compile(
    rb"\x1b\[[>?=]?[0-9;]*[cn]"  # DA1/DA2/DA3, DSR and cursor position reports
    rb"|\x1b\[\??[0-9;]*\$p"  # DECRQM / RQM: is this mode set?
    rb"|\x1b\[\?u"  # kitty keyboard: which flags?
    rb"|\x1b\[1[4689](?:;[0-9]*)?t"  # XTWINOPS size reports
    rb"|\x1b\](?:1[0-9]|4;[0-9]+);\?(?:\x07|\x1b\\)"  # OSC colour queries
    rb"|\x1bP[$+]q[^\x07\x1b]{0,256}(?:\x07|\x1b\\)"  # DECRQSS, XTGETTCAP
)
"""Every alternative is a plain sequence with bounded repetition: linear time."""


def without_queries(data: bytes) -> bytes:
    return QUERY.sub(b"", data)


def shown(seq: int, data: bytes, live_seq: int) -> bytes:
    """What a terminal should parse of ``data`` (output from ``seq`` on): replayed
    bytes, before ``live_seq``, lose their queries; live bytes are untouched."""
    replayed = live_seq - seq
    if replayed <= 0:
        return data
    if replayed >= len(data):
        return without_queries(data)
    return without_queries(data[:replayed]) + data[replayed:]
