"""ptyvisor: a supervisor for coding-agent terminals."""

__version__ = "0.1.0"
