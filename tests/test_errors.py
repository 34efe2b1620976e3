"""The exception tree (errors.py): the drawing in its docstring is the tree the
classes make, so a new error cannot be added without showing where it sits."""

from __future__ import annotations

import re

from ptyvisor import errors


def drawn() -> dict[str, str]:
    """Each class the docstring draws, with the class it hangs from: the nearest one
    above it drawn further left."""
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []  # (column, name) of the branch above
    for line in (errors.__doc__ or "").splitlines():
        found = re.match(r"^[\s│├└─]*([A-Z][A-Za-z]+)(\s|$)", line)
        if found is None or not hasattr(errors, found[1]):
            continue
        column = found.start(1)
        while stack and stack[-1][0] >= column:
            stack.pop()
        if stack:
            parents[found[1]] = stack[-1][1]
        stack.append((column, found[1]))
    return parents


def test_the_drawn_tree_is_the_class_tree() -> None:
    classes = {
        name: cls
        for name in errors.__all__
        if isinstance(cls := getattr(errors, name), type) and issubclass(cls, errors.PtyvisorError)
    }
    actual = {
        name: next(base.__name__ for base in cls.__bases__ if base.__name__ in classes)
        for name, cls in classes.items()
        if cls is not errors.PtyvisorError
    }
    assert drawn() == actual


def test_every_error_is_exported_and_none_escapes_the_root() -> None:
    defined = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, BaseException)
        and value.__module__ == errors.__name__
    }  # fmt: skip
    assert defined == set(errors.__all__)
    assert all(issubclass(getattr(errors, name), errors.PtyvisorError) for name in defined)
