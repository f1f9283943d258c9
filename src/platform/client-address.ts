/** A dotted IPv4 address followed by a port, as some proxies write a forwarded hop. */
const IPV4_WITH_PORT = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/;
/** A bracketed IPv6 address, with or without a port: `[2001:db8::1]`, `[2001:db8::1]:443`. */
const BRACKETED_IPV6 = /^\[([^\]]+)\](?::\d{1,5})?$/;

/**
 * One spelling per peer: `::ffff:203.0.113.7` is the IPv4 peer `203.0.113.7`,
 * and an IPv6 address is written out in full (`2001:db8:0:0:0:0:0:1`), so a
 * trusted proxy matches however the operator or the request wrote it. A port
 * is dropped (`203.0.113.7:51234`, `[2001:db8::1]:443`), as are the brackets
 * of an IPv6 address: a proxy that writes the client's source port into
 * `X-Forwarded-For` would otherwise make every connection a new client.
 *
 * @example
 * normalizeAddress("[2001:db8::1]:443") // "2001:db8:0:0:0:0:0:1"
 */
export function normalizeAddress(address: string): string {
  let trimmed = address.trim();
  const ipv4 = IPV4_WITH_PORT.exec(trimmed);
  if (ipv4) return ipv4[1]!;
  const bracketed = BRACKETED_IPV6.exec(trimmed);
  // Only an IPv6 address loses its brackets: anything else stays as written (and then matches nothing).
  if (bracketed && ipv6Groups(bracketed[1]!)) trimmed = bracketed[1]!;
  if (!trimmed.includes(":")) return trimmed;
  const groups = ipv6Groups(trimmed);
  if (!groups) return trimmed;
  if (groups.slice(0, 5).every((g) => g === "0") && groups[5] === "ffff") {
    const [high, low] = [parseInt(groups[6]!, 16), parseInt(groups[7]!, 16)];
    return [high >> 8, high & 0xff, low >> 8, low & 0xff].join(".");
  }
  return groups.join(":");
}

/**
 * Did the client reach us over TLS? Directly (an https URL), or through a
 * trusted proxy that ended TLS and says so in `X-Forwarded-Proto`; anyone
 * else's say-so is ignored.
 */
export function cameOverTls(url: string, peer: string | null | undefined, forwardedProto: string | null, trustedProxies: ReadonlySet<string>): boolean {
  if (url.startsWith("https:")) return true;
  if (!peer || !trustedProxies.has(normalizeAddress(peer))) return false;
  // A proxy chain lists one protocol per hop; the first is what the client used.
  return forwardedProto?.split(",")[0]?.trim().toLowerCase() === "https";
}

/**
 * The key a per-address cap counts under: an IPv4 address, or an IPv6
 * address's /64. One IPv6 host is usually given a whole /64, so counting per
 * address would give it 2^64 caps.
 *
 * @example
 * rateKey("2001:db8:1:2:aaaa::1") // "2001:db8:1:2::/64"
 */
export function rateKey(address: string): string {
  const groups = address.includes(":") ? ipv6Groups(address) : null;
  return groups ? `${groups.slice(0, 4).join(":")}::/64` : address;
}

/** The eight groups of an IPv6 address (lower case, no leading zeros), or null when it is not one. */
function ipv6Groups(address: string): string[] | null {
  const halves = address.split("%")[0]!.toLowerCase().split("::");
  if (halves.length > 2) return null;
  // A dotted IPv4 part may only end the address.
  const parse = (part: string, last: boolean) =>
    part === "" ? [] : part.split(":").flatMap((g, i, all) => (g.includes(".") ? (last && i === all.length - 1 ? ipv4Groups(g) : ["invalid"]) : [g]));
  const head = parse(halves[0]!, halves.length === 1);
  const tail = halves.length === 2 ? parse(halves[1]!, true) : [];
  const missing = 8 - head.length - tail.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0) || (halves.length === 2 && missing === 0)) return null;
  const groups = [...head, ...Array<string>(missing).fill("0"), ...tail];
  return groups.every((g) => /^[0-9a-f]{1,4}$/.test(g)) ? groups.map((g) => parseInt(g, 16).toString(16)) : null;
}

/** A dotted IPv4 tail of an IPv6 address as its two groups; an invalid one as a group that fails the check. */
function ipv4Groups(dotted: string): string[] {
  const parts = dotted.split(".");
  const bytes = parts.map(Number);
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p)) || !bytes.every((b) => b <= 255)) return ["invalid"];
  return [((bytes[0]! << 8) | bytes[1]!).toString(16), ((bytes[2]! << 8) | bytes[3]!).toString(16)];
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
