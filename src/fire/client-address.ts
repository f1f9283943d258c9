/** `::ffff:203.0.113.7` and `203.0.113.7` are the same IPv4 peer. */
export function normalizeAddress(address: string): string {
  const trimmed = address.trim();
  return trimmed.toLowerCase().startsWith("::ffff:") && trimmed.includes(".") ? trimmed.slice(7) : trimmed;
}

/**
 * The address a request came from. `X-Forwarded-For` is believed only when the
 * peer is a declared trusted proxy, and then read from the right, skipping
 * trusted proxies: the first other hop is the client (hops further left are
 * whatever the client claimed).
 *
 * @example
 * clientAddress("10.0.0.2", "203.0.113.7, 10.0.0.2", new Set(["10.0.0.2"])) // "203.0.113.7"
 */
export function clientAddress(peer: string | null | undefined, forwardedFor: string | null, trustedProxies: ReadonlySet<string>): string {
  const direct = peer ? normalizeAddress(peer) : "unknown";
  if (!forwardedFor || !trustedProxies.has(direct)) return direct;
  const hops = forwardedFor.split(",").map(normalizeAddress).filter(Boolean);
  for (let i = hops.length - 1; i >= 0; i--) {
    if (!trustedProxies.has(hops[i]!)) return hops[i]!;
  }
  return hops[0] ?? direct;
}
