/**
 * Where a run's input came from. The source line rendered from it names the
 * platform, peer and linked user for a channel message; those come from the
 * pairing record, never from the message content.
 */
export type RunSource =
  | { kind: "webhook"; triggerId: string }
  | {
      kind: "message";
      triggerId: string;
      /** e.g. `telegram` or `whatsapp`. */
      platform: string;
      /** The linked peer: the platform's stable id and the display name it reported. */
      peer: { id: string; displayName: string };
      /** The service user the pairing record links the peer to. */
      linkedUser: { id: string; email: string };
    }
  | { kind: "schedule"; schedule: string }
  | { kind: "manual"; userId: string; email: string };

/**
 * One line saying where the input came from. Every value is JSON-quoted, so a
 * display name with a newline or a quote cannot forge a second line.
 *
 * @example
 * sourceLine({ kind: "schedule", schedule: "0 9 * * *" }) // 'source: schedule "0 9 * * *"'
 */
export function sourceLine(source: RunSource): string {
  const q = quoted;
  switch (source.kind) {
    case "webhook":
      return `source: fire endpoint, webhook trigger ${q(source.triggerId)}`;
    case "message":
      return `source: platform ${q(source.platform)}, peer ${q(source.peer.id)} (${q(source.peer.displayName)}), linked user ${q(source.linkedUser.email)} (${q(source.linkedUser.id)})`;
    case "schedule":
      return `source: schedule ${q(source.schedule)}`;
    case "manual":
      return `source: run by hand by ${q(source.email)}`;
  }
}

/**
 * `value` as a JSON string with the line breaks JSON leaves bare (U+2028,
 * U+2029, NEL) escaped too: a model may read any of them as a new line.
 */
function quoted(value: string): string {
  return JSON.stringify(value).replace(/[\u0085\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
