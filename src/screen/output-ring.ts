/**
 * Chunks smaller than this are copied into a shared block instead of being
 * kept one by one: a shell echoing keystrokes produces thousands of one-byte
 * chunks, and each kept `Uint8Array` costs far more than its byte.
 */
const COALESCE_BYTES = 4096;

/**
 * Dropped slots at the front of the chunk list are compacted away only once
 * there are this many and they are the majority, so eviction stays O(1)
 * amortised instead of shifting the array on every drop.
 */
const COMPACT_AFTER_DROPPED = 32;

/**
 * The most recent raw PTY output bytes, addressed by absolute stream offset,
 * so a reconnecting client can be sent exactly what it missed.
 *
 * It is a list of chunks capped by total bytes: the oldest chunks are dropped
 * whole and the start offset moves past them, so a slice is either complete
 * or refused, never truncated. Nothing is preallocated; an idle ring holds at
 * most one small coalescing block.
 *
 * @example
 * ```ts
 * const ring = new OutputRing(1024);
 * ring.append(new TextEncoder().encode("hello"));
 * ring.slice(2); // bytes "llo"
 * ring.slice(9); // null: in the future
 * ```
 */
export class OutputRing {
  readonly #capacity: number;
  /** Sealed chunks; entries before `#head` were dropped (compacted lazily). */
  #chunks: (Uint8Array | undefined)[] = [];
  #head = 0;
  /** Open block that small chunks are copied into; logically after `#chunks`. */
  #block: Uint8Array | undefined;
  #blockUsed = 0;
  #start: number;
  #bytes = 0;

  /**
   * @param capacity most bytes held; older chunks are dropped whole beyond it.
   * @param start the stream offset of the first byte that will be appended.
   */
  constructor(capacity: number, start = 0) {
    if (!Number.isSafeInteger(capacity) || capacity < 0) {
      throw new RangeError(`Cannot create output ring: capacity must be a non-negative integer, got ${capacity}`);
    }
    this.#capacity = capacity;
    this.#start = start;
  }

  /** Stream offset of the oldest byte held. */
  get start(): number {
    return this.#start;
  }

  /** Stream offset just past the newest byte held. */
  get end(): number {
    return this.#start + this.#bytes;
  }

  /**
   * Append the next bytes of the stream. Large chunks are kept by reference,
   * so the caller must not reuse the array afterwards. Bytes from `keepFrom`
   * on are kept even past the capacity: the mirror passes the offset its
   * parser has reached, so the bytes after a snapshot taken there are always
   * at hand (xterm.js holds the same chunks until it has parsed them anyway).
   */
  append(chunk: Uint8Array, keepFrom = Number.POSITIVE_INFINITY): void {
    if (chunk.length === 0) return;
    if (chunk.length >= COALESCE_BYTES) {
      this.#sealBlock();
      this.#chunks.push(chunk);
    } else {
      if (this.#block && this.#blockUsed + chunk.length > this.#block.length) this.#sealBlock();
      this.#block ??= new Uint8Array(COALESCE_BYTES);
      this.#block.set(chunk, this.#blockUsed);
      this.#blockUsed += chunk.length;
    }
    this.#bytes += chunk.length;
    this.#evict(keepFrom);
  }

  /**
   * Forget everything held; the next appended byte is at `offset`. Used when
   * earlier bytes must never be replayed (alternate screen, resize).
   */
  reset(offset: number): void {
    this.#chunks = [];
    this.#head = 0;
    this.#blockUsed = 0;
    this.#start = offset;
    this.#bytes = 0;
  }

  /**
   * A copy of the bytes from `from` to the end, or null when the ring does not
   * hold all of them (dropped already, or `from` is past the end).
   */
  slice(from: number): Uint8Array | null {
    if (!Number.isSafeInteger(from) || from < this.#start || from > this.end) return null;
    const out = new Uint8Array(this.end - from);
    let skip = from - this.#start;
    let at = 0;
    const copy = (part: Uint8Array): void => {
      if (skip >= part.length) {
        skip -= part.length;
        return;
      }
      out.set(skip === 0 ? part : part.subarray(skip), at);
      at += part.length - skip;
      skip = 0;
    };
    for (let i = this.#head; i < this.#chunks.length; i++) copy(this.#chunks[i]!);
    if (this.#block) copy(this.#block.subarray(0, this.#blockUsed));
    return out;
  }

  #sealBlock(): void {
    if (!this.#block || this.#blockUsed === 0) return;
    if (this.#blockUsed === this.#block.length) {
      this.#chunks.push(this.#block);
      this.#block = undefined;
    } else {
      // Copy out the used part so the block can be reused: a block sealed
      // early by a large chunk would otherwise pin 4 KiB for a few bytes.
      this.#chunks.push(this.#block.slice(0, this.#blockUsed));
    }
    this.#blockUsed = 0;
  }

  #evict(keepFrom: number): void {
    while (this.#bytes > this.#capacity && this.#head < this.#chunks.length) {
      const oldest = this.#chunks[this.#head]!;
      if (this.#start + oldest.length > keepFrom) break;
      this.#chunks[this.#head++] = undefined;
      this.#start += oldest.length;
      this.#bytes -= oldest.length;
    }
    if (this.#bytes > this.#capacity && this.end <= keepFrom) {
      // Only the open block is left and it alone is over capacity.
      this.#start += this.#blockUsed;
      this.#bytes -= this.#blockUsed;
      this.#blockUsed = 0;
    }
    if (this.#head > COMPACT_AFTER_DROPPED && this.#head * 2 > this.#chunks.length) {
      this.#chunks = this.#chunks.slice(this.#head);
      this.#head = 0;
    }
  }
}
