/**
 * A UUIDv7 (RFC 9562): 48 bits of millisecond time, then random bits. Run ids
 * sort by time, so inserting a run appends to the primary-key b-tree instead of
 * splitting a random page (measurable on the fire endpoint's path).
 *
 * @example
 * uuidv7() // "0190f5c2-7a1b-7c3d-9e4f-1a2b3c4d5e6f"
 */
export function uuidv7(now: number = Date.now()): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let time = now;
  for (let i = 5; i >= 0; i--) {
    bytes[i] = time % 256;
    time = Math.floor(time / 256);
  }
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = Buffer.from(bytes).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
