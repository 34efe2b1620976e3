"""A smoke test of a real agent turn, driven through ptyvisor from a script.

It starts Pi (``pi`` on PATH) against an OpenAI-compatible model server you point it
at, waits until Pi is ready, asks one question, waits for the turn (working, then
ready again), prints the answer from the screen, and quits. ptyvisor finds its server
as the CLI does (``$PTYVISOR_URL``, ``$PTYVISOR_TOKEN`` or the state directory).

    python examples/smoke_pi.py http://127.0.0.1:8000/v1 my-model "Say hi in one word"

Exit status 0 when the turn worked; the answer is the screen's last non-blank line
before Pi's editor.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import ptyvisor.sync


def main(base_url: str, model: str, prompt: str) -> int:
    with tempfile.TemporaryDirectory() as scratch, ptyvisor.sync.connect() as remote:
        # Pi reads its providers from its agent directory: one that knows this server.
        agent_dir = Path(scratch) / "pi-agent"
        agent_dir.mkdir()
        provider = {"baseUrl": base_url, "api": "openai-completions", "apiKey": "none",
                    "models": [{"id": model, "name": model}]}  # fmt: skip
        (agent_dir / "models.json").write_text(json.dumps({"providers": {"local": provider}}))
        settings = {"defaultProvider": "local", "defaultModel": model}
        (agent_dir / "settings.json").write_text(json.dumps(settings))
        env = {
            "PI_CODING_AGENT_DIR": str(agent_dir),
            "PI_OFFLINE": "1",
            "HOME": scratch,
            "PATH": os.environ.get("PATH", os.defpath),  # where pi is
        }

        pi = remote.spawn(["--offline"], agent="pi", cwd=scratch, env=env, name="smoke")
        try:
            # Ready (Pi's extension says so) and drawn (a second without output).
            pi.wait_for(phase="waiting", quiet=1, timeout=60)
            before = pi.screen().rows
            pi.send_keys(prompt, "Enter")
            pi.wait_for(phase="working", timeout=60)
            # The turn is over; the answer is drawn just after, hence the quiet second.
            pi.wait_for(phase="waiting", quiet=1, timeout=300)
            after = pi.screen().rows
            answer = [row for row in after if row.strip() and row not in before]
            print("\n".join(answer))
            pi.send_keys("C-d")  # an empty editor: Pi quits
            pi.wait_for(exit=True, timeout=30)
            return 0 if pi.summary().process.exit_code == 0 else 1
        finally:
            pi.close()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
