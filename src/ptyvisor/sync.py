"""``ptyvisor.sync``: the blocking Python API (public; it lives in
`ptyvisor.client.sync`)."""

from ptyvisor.client.sync import Remote, Session, WaitTimeout, connect

__all__ = ["Remote", "Session", "WaitTimeout", "connect"]
