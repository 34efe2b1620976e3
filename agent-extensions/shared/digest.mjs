// The digest of a prompt, as ptyvisor.agents.digest.prompt_digest computes it: runs
// of ASCII whitespace are one space, the ends trimmed, SHA-256 of the UTF-8, the
// first 16 hex digits. It confirms to a client that the prompt it typed was taken.

import { createHash } from "node:crypto";

export function promptDigest(text) {
  const normal = String(text)
    .split(/[ \t\n\r\f\v]+/)
    .filter((word) => word.length > 0)
    .join(" ");
  return createHash("sha256").update(normal, "utf8").digest("hex").slice(0, 16);
}
