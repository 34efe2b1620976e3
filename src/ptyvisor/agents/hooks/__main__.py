"""``python -m ptyvisor.agents.hooks <agent>``: one hook invocation.

Exit status is always 0, and nothing is printed except an agent's native answer to
a request a client decided (through the control socket, see ``decide``) or a Stop /
AfterAgent hook's block carrying a queued message: a failing or chatty hook would
change the agent's behaviour (Claude treats exit 2 as "block" and stdout JSON as a
decision).
"""

from __future__ import annotations

import importlib
import os
import sys
import time

MAX_STDIN = 1024 * 1024
MAPPERS = {
    "claude-code": "ptyvisor.agents.hooks.claude_code",
    "codex": "ptyvisor.agents.hooks.codex",
    "gemini-cli": "ptyvisor.agents.hooks.gemini_cli",
    "qwen-code": "ptyvisor.agents.hooks.qwen_code",
    "copilot": "ptyvisor.agents.hooks.copilot",
    "droid": "ptyvisor.agents.hooks.droid",
    "cline": "ptyvisor.agents.hooks.cline",
}
MAX_EVENT_NAME = 64


def main(argv: list[str]) -> int:
    if not os.environ.get("PTYVISOR_SESSION") or not os.environ.get("PTYVISOR_NONCE"):
        return 0  # outside a ptyvisor session: not even stdin is read
    try:
        raw = sys.stdin.buffer.read(MAX_STDIN)
        from ptyvisor.wire import cjson  # not json: see cjson

        event = cjson.loads(raw or b"{}")
        if not isinstance(event, dict):
            return 0
        module_name = MAPPERS.get(argv[0] if argv else "")
        if module_name is None:
            return 0
        if len(argv) > 1:
            # The configuration we wrote names the event (Copilot's and Cline's
            # payloads do not).
            event["hook_event_name"] = argv[1][:MAX_EVENT_NAME]
        at = time.time_ns() // 1_000_000
        mapper = importlib.import_module(module_name)
        from ptyvisor.agents.emit import write_frame
        from ptyvisor.agents.hooks.normalise import fit

        payloads = mapper.map_event(event, at)
        for payload in payloads:
            write_frame(payload, encode=fit)
        decide = getattr(mapper, "decide", None)
        answer = decide(event, payloads) if decide is not None else None
        if answer is not None:
            sys.stdout.write(cjson.dumps(answer, ensure_ascii=False))
            sys.stdout.flush()
    except Exception:  # never break the agent
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
