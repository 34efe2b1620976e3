"""Select Graphic Rendition: SGR parameters applied to a pen (a `Cell` of style).

Colon sub-parameters (``38:2::r:g:b``, ``4:3``) are read as well as semicolons, as
xterm.js reads them;
256-colour indices are kept apart from truecolor.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ptyvisor.terminal.snapshot import (
    ANSI_COLOURS,
    BLANK,
    BRIGHT_COLOURS,
    Cell,
)


def _num(text: str) -> int:
    """A parameter: empty is 0, junk is -1 (matches nothing), large is capped."""
    if text.isdigit():
        return min(int(text), 9999)
    return 0 if text == "" else -1


@lru_cache(maxsize=2048)
def int_params(params: str) -> tuple[int, ...]:
    """CSI parameters as ints, sub-parameters after ``:`` dropped."""
    if not params:
        return ()
    return tuple(_num(part.split(":", 1)[0]) for part in params.split(";"))


def _colour_from_subparams(sub: list[str]) -> str | None:
    """``5:n`` or ``2:colourspace:r:g:b`` (the colon forms of 38/48), read as xterm.js
    reads them, the page's terminal: after ``2`` the first value is always the colour
    space, so ``2:r:g:b`` is green, blue and 0 for red, green, blue; a missing value is 0."""
    if not sub:
        return None
    if sub[0] == "5":
        index = _num(sub[1]) if len(sub) >= 2 else 0
        return str(index) if 0 <= index <= 255 else None
    if sub[0] == "2":
        return _rgb([_num(c) for c in [*sub[2:5], "", "", ""][:3]])
    return None


def _rgb(values: list[int]) -> str | None:
    if len(values) == 3 and all(0 <= v <= 255 for v in values):
        return "{:02x}{:02x}{:02x}".format(*values)
    return None


# Indices into a Cell, for building one from a list.
_FG, _BG, _BOLD, _ITALICS, _UNDERSCORE, _STRIKE, _REVERSE, _BLINK, _DIM, _HIDDEN, _OVER = range(
    1, 12
)
_SIMPLE_SGR: dict[int, tuple[tuple[int, object], ...]] = {
    1: ((_BOLD, True),),
    2: ((_DIM, True),),
    3: ((_ITALICS, True),),
    4: ((_UNDERSCORE, True),),
    5: ((_BLINK, True),),
    6: ((_BLINK, True),),
    7: ((_REVERSE, True),),
    8: ((_HIDDEN, True),),
    9: ((_STRIKE, True),),
    21: ((_UNDERSCORE, True),),  # double underline
    22: ((_BOLD, False), (_DIM, False)),
    23: ((_ITALICS, False),),
    24: ((_UNDERSCORE, False),),
    25: ((_BLINK, False),),
    27: ((_REVERSE, False),),
    28: ((_HIDDEN, False),),
    29: ((_STRIKE, False),),
    39: ((_FG, "default"),),
    49: ((_BG, "default"),),
    53: ((_OVER, True),),
    55: ((_OVER, False),),
    **{30 + i: ((_FG, name),) for i, name in enumerate(ANSI_COLOURS)},
    **{40 + i: ((_BG, name),) for i, name in enumerate(ANSI_COLOURS)},
    **{90 + i: ((_FG, name),) for i, name in enumerate(BRIGHT_COLOURS)},
    **{100 + i: ((_BG, name),) for i, name in enumerate(BRIGHT_COLOURS)},
}


def apply_sgr(attrs: Cell, params: str) -> Cell:
    """The pen after ``CSI params m``, semicolon and colon forms alike."""
    values: list[Any] = list(attrs)
    parts = params.split(";")
    count = len(parts)
    i = 0
    while i < count:
        part = parts[i]
        i += 1
        if ":" in part:
            sub = part.split(":")
            code = _num(sub[0])
            if code in (38, 48):
                colour = _colour_from_subparams(sub[1:])
                if colour is not None:
                    values[_FG if code == 38 else _BG] = colour
            elif code == 4:  # underline style: 0 off, 1-5 single..dashed
                values[_UNDERSCORE] = len(sub) < 2 or _num(sub[1]) != 0
            elif code != 58:  # 58 (underline colour) is not kept
                for index, value in _SIMPLE_SGR.get(code, ()):
                    values[index] = value
            continue
        code = _num(part)
        if code == 0:  # a hyperlink is not SGR: it outlives a reset
            values = [*BLANK[:-1], values[-1]]
        elif code in (38, 48, 58):
            kind = parts[i] if i < count else ""
            extended: str | None = None
            if kind == "5":
                index = _num(parts[i + 1]) if i + 1 < count else -1
                extended = str(index) if 0 <= index <= 255 else None
                i += 2
            elif kind == "2":
                extended = _rgb([_num(p) for p in parts[i + 1 : i + 4]])
                i += 4
            if extended is not None and code != 58:
                values[_FG if code == 38 else _BG] = extended
        else:
            for index, value in _SIMPLE_SGR.get(code, ()):
                values[index] = value
    values[0] = " "
    return Cell._make(values)
