"""What crosses a boundary between ptyvisor's processes, or between a peer and them:
each message typed once and validated where it is received.

- `link`: the keeper <-> server link (stdlib only: the keeper uses it);
- `control`: the control socket, between an agent's hook and the server (stdlib
  only, and cheap to import: hooks run on every tool call).

Nothing is imported here: each module is loaded only by what needs it.
"""
