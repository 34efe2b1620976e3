"""The agents: how each is started with ptyvisor's extension (launch), what their
reports mean (activity, interaction, failures), and what runs inside them (emit, the
hooks, masking, and the JavaScript extensions in ``extensions``).

Nothing is imported here: hooks import their modules on every tool call."""
