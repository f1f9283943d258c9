const UTF8 = new TextEncoder();
const LOSSY_UTF8 = new TextDecoder();

/**
 * The line as readline holds it in a locale that is not UTF-8 (the C locale
 * of an image without LANG): a string of bytes, where Backspace erases one
 * byte, not one character. `é` then `\x7f\x7f` leaves the character before
 * the é gone in a UTF-8 locale but still there here, and the screen, decoding
 * UTF-8, agrees with neither. The input guard keeps one beside its own line so
 * it can check both readings.
 *
 * Characters arrive one UTF-16 code unit at a time, as the guard reads them; a
 * surrogate pair is encoded once its second half comes.
 */
export class ByteLine {
  /** One char (U+0000-U+00FF) per byte. */
  #bytes = "";
  #highSurrogate = "";
  #nonAscii = false;

  /** Add a typed or pasted code unit. */
  append(unit: string): void {
    const code = unit.charCodeAt(0);
    if (code < 0x80 && !this.#highSurrogate) {
      this.#bytes += unit;
      return;
    }
    this.#nonAscii = true;
    if (code >= 0xd800 && code <= 0xdbff) {
      this.#flushSurrogate();
      this.#highSurrogate = unit;
      return;
    }
    const pair = code >= 0xdc00 && code <= 0xdfff ? this.#highSurrogate + unit : unit;
    if (pair === unit) this.#flushSurrogate();
    this.#highSurrogate = "";
    for (const byte of UTF8.encode(pair)) this.#bytes += String.fromCharCode(byte);
  }

  /** Backspace: one byte. */
  eraseByte(): void {
    this.#flushSurrogate();
    this.#bytes = this.#bytes.slice(0, -1);
  }

  /** Replace the whole line (Ctrl+U, Ctrl+W: word edits cut at ASCII blanks, so bytes and characters agree). */
  replaceWith(keep: (bytes: string) => string): void {
    this.#flushSurrogate();
    this.#bytes = keep(this.#bytes);
  }

  /** Start a new line. */
  clear(): void {
    this.#bytes = "";
    this.#highSurrogate = "";
    this.#nonAscii = false;
  }

  /** The line as text (stray bytes as U+FFFD), or null when nothing past ASCII was typed, so both readings agree. */
  reading(): string | null {
    if (!this.#nonAscii) return null;
    this.#flushSurrogate();
    return LOSSY_UTF8.decode(Uint8Array.from(this.#bytes, (c) => c.charCodeAt(0)));
  }

  /** A high surrogate with no low one after it reaches the PTY as U+FFFD, as TextEncoder writes it. */
  #flushSurrogate(): void {
    if (!this.#highSurrogate) return;
    this.#highSurrogate = "";
    for (const byte of UTF8.encode("\ufffd")) this.#bytes += String.fromCharCode(byte);
  }
}
