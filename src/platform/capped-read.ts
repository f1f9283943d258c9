/**
 * A stream's bytes up to `maxBytes`, or null once it passes them: the rest is
 * cancelled unread, so a sender without a declared length (chunked HTTP, a
 * model endpoint streaming without end) cannot make us hold more than the cap.
 * A read that fails (the peer went away) rejects, for the caller to name.
 *
 * @example
 * const bytes = await readCapped(response.body, 2 * 1024 * 1024);
 * if (bytes === null) throw new Error("answer too large");
 */
export async function readCapped(stream: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<Uint8Array | null> {
  if (!stream) return new Uint8Array(0);
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (let part = await reader.read(); !part.done; part = await reader.read()) {
    size += part.value.byteLength;
    if (size > maxBytes) {
      void reader.cancel().catch(() => {});
      return null;
    }
    parts.push(part.value);
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.byteLength;
  }
  return bytes;
}
