// Parser states, after the VT500 state diagram (https://vt100.net/emu/dec_ansi_parser)
// that xterm.js implements. DCS and SOS/PM/APC strings are merged: nothing in
// them matters here except how they end.
const GROUND = 0;
const ESCAPE = 1;
const ESCAPE_INTERMEDIATE = 2;
const CSI_ENTRY = 3;
const CSI_PARAM = 4;
const CSI_INTERMEDIATE = 5;
const CSI_IGNORE = 6;
const OSC_STRING = 7;
const OTHER_STRING = 8;

/** DECSET/DECRST modes that switch xterm.js to the alternate screen (47 and 1047 without, 1049 with cursor save). */
const ALT_SCREEN_MODES = new Set([47, 1047, 1049]);

/** xterm.js keeps the first 32 parameters of a sequence and ignores the rest (`Params` default length). */
const MAX_PARAMS = 32;

/** Parameter values stop growing here: anything this large is no mode we look for, and it keeps the arithmetic small. */
const PARAM_CAP = 100_000;

/** Code point class that xterm.js gives every code point at or above U+00A0. */
const NON_ASCII = 0xa0;

/** U+FEFF, which xterm.js's UTF-8 decoder drops. */
const BYTE_ORDER_MARK = 0xfeff;

/**
 * Bytes of an unfinished sequence kept so a snapshot can hand them on. An
 * unfinished sequence longer than this (a large OSC 52 or image) is given up:
 * a snapshot taken inside it gives the client `restAbsorber` instead.
 */
const MAX_TAIL_BYTES = 64 * 1024;

/**
 * Follows raw PTY output byte by byte through the same state machine as the
 * xterm.js parser (UTF-8 decoding, then ESC/CSI/OSC/DCS states), without
 * interpreting anything but what the mirror must know synchronously, before
 * xterm.js has parsed the bytes:
 *
 * - whether the alternate screen is active (DECSET/DECRST 47, 1047, 1049 and
 *   RIS), even when a sequence is split across chunks;
 * - where the unfinished sequence at the end of the stream began, and its
 *   bytes, so a snapshot can end with them and stay byte-exact.
 *
 * @example
 * ```ts
 * const scanner = new StreamScanner();
 * const bytes = new TextEncoder().encode("\x1b[?1049h");
 * scanner.scan(bytes.subarray(0, 5), 0);
 * scanner.fullScreen; // false: the sequence is not complete yet
 * scanner.scan(bytes.subarray(5), 5);
 * scanner.fullScreen; // true
 * ```
 */
export class StreamScanner {
  #state = GROUND;
  /** Continuation bytes still expected for the current UTF-8 character. */
  #utf8Need = 0;
  #utf8Lead = 0;
  /** The current UTF-8 character's code point, as far as its bytes have come. */
  #utf8Value = 0;
  #charStart = 0;
  #seqStart = 0;
  #prefix = 0;
  #intermediate = false;
  #paramCount = 0;
  #paramValue = 0;
  #inSubParam = false;
  #altParam = false;
  #fullScreen = false;
  #resets = 0;
  #lastExit = -1;
  #tail: Uint8Array[] = [];
  #tailStart = 0;
  #tailBytes = 0;
  #tailLost = false;
  /**
   * Stream offsets of the C0 controls executed inside the current sequence
   * (xterm.js executes them in escape and CSI states without ending it).
   */
  #executed: number[] = [];
  readonly #decoder = new TextDecoder();

  /** True while the alternate screen is active after the bytes scanned so far. */
  get fullScreen(): boolean {
    return this.#fullScreen;
  }

  /** True when the bytes scanned so far end between sequences and characters. */
  get clean(): boolean {
    return this.#isClean();
  }

  /** How many full resets (RIS, `ESC c`) were scanned; xterm.js replaces its buffers on each. */
  get resets(): number {
    return this.#resets;
  }

  /**
   * Scan the next chunk of the stream, which starts at stream offset `base`.
   * Returns the stream offset just after the last switch back from the
   * alternate screen inside this chunk, or -1 when there was none.
   */
  scan(chunk: Uint8Array, base: number): number {
    this.#lastExit = -1;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i]!;
      // Fast path: printable ASCII on the ground state changes nothing.
      if (this.#state === GROUND && this.#utf8Need === 0 && byte >= 0x20 && byte < 0x7f) continue;
      this.#byte(byte, base + i);
    }
    this.#keepTail(chunk, base);
    return this.#lastExit;
  }

  /**
   * Stream offset where a UTF-8 character cut off at the end of the stream
   * began, or null unless the stream ends inside a character between
   * sequences. Such a character has not reached the screen yet.
   */
  get splitCharacterStart(): number | null {
    return this.#state === GROUND && this.#utf8Need > 0 ? this.#charStart : null;
  }

  /**
   * Text that opens a string sequence a terminal ignores to its end, which
   * ends where the unfinished one does: after it, the rest of the unfinished
   * sequence is taken in and dropped rather than printed. For a client whose
   * snapshot cannot carry the sequence's own start (see pendingText); null
   * outside an OSC, DCS, SOS, PM or APC string.
   */
  get restAbsorber(): string | null {
    // xterm.js aborts an OSC whose identifier is not a number, and ignores it up to BEL, ST, CAN or SUB.
    if (this.#state === OSC_STRING) return "\x1b]x";
    // An APC is ignored up to ST, CAN or SUB: where a DCS, SOS or PM ends too.
    if (this.#state === OTHER_STRING) return "\x1b_";
    return null;
  }

  /**
   * The unfinished sequence at the end of the stream as text ("" when the
   * stream ends cleanly), or null when it cannot be given as text: it ends
   * inside a UTF-8 character, or it grew past what is kept. The C0 controls
   * already executed inside it are left out: a terminal that has executed
   * them continues the sequence from this text without executing them twice.
   */
  pendingText(): string | null {
    if (this.#isClean()) return "";
    if (this.#tailLost || this.#utf8Need > 0) return null;
    const executed = new Set(this.#executed);
    let text = "";
    let at = this.#tailStart;
    for (const part of this.#tail) {
      const kept = executed.size === 0 ? part : part.filter((_, i) => !executed.has(at + i));
      text += this.#decoder.decode(kept, { stream: true });
      at += part.length;
    }
    return text + this.#decoder.decode();
  }

  #isClean(): boolean {
    return this.#state === GROUND && this.#utf8Need === 0;
  }

  #byte(byte: number, at: number): void {
    if (this.#utf8Need > 0) {
      if ((byte & 0xc0) === 0x80) {
        this.#utf8Value = (this.#utf8Value << 6) | (byte & 0x3f);
        if (--this.#utf8Need === 0 && !droppedByXterm(this.#utf8Lead, this.#utf8Value)) {
          // U+0080..U+009F arrive as C2 80..C2 9F and are C1 controls to xterm.js.
          this.#codePoint(this.#utf8Lead === 0xc2 && byte < NON_ASCII ? byte : NON_ASCII, this.#charStart, at + 1);
        }
        return;
      }
      // A broken character is dropped, as xterm.js's decoder does; the byte starts afresh.
      this.#utf8Need = 0;
    }
    this.#charStart = at;
    if (byte < 0x80) {
      this.#codePoint(byte, at, at + 1);
    } else if (byte >= 0xc2 && byte <= 0xf4) {
      this.#utf8Lead = byte;
      this.#utf8Need = byte < 0xe0 ? 1 : byte < 0xf0 ? 2 : 3;
      this.#utf8Value = byte & (byte < 0xe0 ? 0x1f : byte < 0xf0 ? 0x0f : 0x07);
    }
    // Other bytes are never valid UTF-8 lead bytes; xterm.js skips them too.
  }

  /** One decoded code point (C1 controls as themselves, everything from U+00A0 as NON_ASCII). */
  #codePoint(cp: number, at: number, end: number): void {
    // Transitions from any state.
    if (cp === 0x1b) return this.#begin(ESCAPE, at);
    if (cp === 0x18 || cp === 0x1a) return this.#ground();
    if (cp >= 0x80 && cp < NON_ASCII) {
      if (cp === 0x9b) {
        this.#begin(CSI_ENTRY, at);
        return this.#enterCsi();
      }
      if (cp === 0x9d) return this.#begin(OSC_STRING, at);
      if (cp === 0x90 || cp === 0x98 || cp === 0x9e || cp === 0x9f) return this.#begin(OTHER_STRING, at);
      return this.#ground();
    }
    switch (this.#state) {
      case GROUND:
      case OTHER_STRING:
        return;
      case OSC_STRING:
        if (cp === 0x07) this.#ground();
        return;
    }
    // Escape and CSI states: C0 controls (but CAN, SUB and ESC, handled above) are executed without leaving the sequence.
    if (cp < 0x20) return this.#executedInside(at);
    switch (this.#state) {
      case ESCAPE:
        return this.#escape(cp, end);
      case ESCAPE_INTERMEDIATE:
        // Intermediates and DEL keep the sequence open; anything else ends it.
        if (cp >= 0x30 && cp !== 0x7f) this.#ground();
        return;
      default:
        return this.#csi(cp, end);
    }
  }

  #executedInside(at: number): void {
    // Past this many the sequence is too long to be handed on anyway (see MAX_TAIL_BYTES).
    if (this.#executed.length <= MAX_TAIL_BYTES) this.#executed.push(at);
  }

  #escape(cp: number, end: number): void {
    if (cp === 0x7f) return; // ignored inside the sequence
    if (cp === 0x5b) this.#enterCsi();
    else if (cp === 0x5d) this.#state = OSC_STRING;
    else if (cp === 0x50 || cp === 0x58 || cp === 0x5e || cp === 0x5f) this.#state = OTHER_STRING;
    else if (cp >= 0x20 && cp < 0x30) this.#state = ESCAPE_INTERMEDIATE;
    else {
      if (cp === 0x63) {
        // RIS: xterm.js resets everything, including back to the normal screen.
        this.#resets++;
        this.#setAltScreen(false, end);
      }
      this.#ground();
    }
  }

  #csi(cp: number, end: number): void {
    const state = this.#state;
    if (cp === 0x7f || (state === CSI_IGNORE && (cp < 0x40 || cp >= NON_ASCII))) return;
    if (cp >= 0x40 && cp < 0x7f) {
      if (state !== CSI_IGNORE) this.#dispatch(cp, end);
      return this.#ground();
    }
    if (cp >= NON_ASCII) return this.#ground();
    if (cp < 0x30) {
      this.#intermediate = true;
      this.#state = CSI_INTERMEDIATE;
    } else if (cp >= 0x3c) {
      // A prefix (< = > ?) is only recognised first; anywhere else it spoils the sequence.
      if (state === CSI_ENTRY) {
        this.#prefix = cp;
        this.#state = CSI_PARAM;
      } else {
        this.#state = CSI_IGNORE;
      }
    } else if (state === CSI_INTERMEDIATE) {
      this.#state = CSI_IGNORE;
    } else {
      this.#state = CSI_PARAM;
      this.#param(cp);
    }
  }

  #param(cp: number): void {
    if (this.#paramCount === 0) this.#paramCount = 1;
    if (cp === 0x3b) {
      this.#endParam();
      this.#paramCount++;
      this.#paramValue = 0;
      this.#inSubParam = false;
    } else if (cp === 0x3a) {
      this.#inSubParam = true;
    } else if (!this.#inSubParam) {
      this.#paramValue = Math.min(this.#paramValue * 10 + (cp - 0x30), PARAM_CAP);
    }
  }

  #endParam(): void {
    if (this.#paramCount > 0 && this.#paramCount <= MAX_PARAMS && ALT_SCREEN_MODES.has(this.#paramValue)) {
      this.#altParam = true;
    }
  }

  #dispatch(final: number, end: number): void {
    if (this.#prefix !== 0x3f || this.#intermediate || (final !== 0x68 && final !== 0x6c)) return;
    this.#endParam();
    if (this.#altParam) this.#setAltScreen(final === 0x68, end);
  }

  #setAltScreen(on: boolean, end: number): void {
    if (this.#fullScreen === on) return;
    this.#fullScreen = on;
    if (!on) this.#lastExit = end;
  }

  /** Start a new sequence at stream offset `at` (ESC or a C1 introducer). */
  #begin(state: number, at: number): void {
    this.#state = state;
    this.#seqStart = at;
    this.#executed = [];
  }

  /** Enter the CSI states, from ESC [ or a C1 CSI, within the sequence begun. */
  #enterCsi(): void {
    this.#state = CSI_ENTRY;
    this.#prefix = 0;
    this.#intermediate = false;
    this.#paramCount = 0;
    this.#paramValue = 0;
    this.#inSubParam = false;
    this.#altParam = false;
  }

  #ground(): void {
    this.#state = GROUND;
  }

  /** Keep (by reference) the bytes of the sequence left unfinished at the end of `chunk`. */
  #keepTail(chunk: Uint8Array, base: number): void {
    if (this.#isClean()) {
      this.#tail = [];
      this.#tailBytes = 0;
      this.#tailLost = false;
      return;
    }
    const start = this.#state === GROUND ? this.#charStart : this.#seqStart;
    if (start >= base) {
      this.#tail = [chunk.subarray(start - base)];
      this.#tailStart = start;
      this.#tailBytes = chunk.length - (start - base);
      this.#tailLost = false;
    } else if (!this.#tailLost) {
      this.#tail.push(chunk);
      this.#tailBytes += chunk.length;
      // The sequence began in an earlier chunk, whose tail must start at the same byte.
      if (this.#tailStart !== start || this.#tailBytes > MAX_TAIL_BYTES) this.#tailLost = true;
    }
    if (this.#tailLost) {
      this.#tail = [];
      this.#tailBytes = 0;
    }
  }
}

/**
 * Whether xterm.js's UTF-8 decoder drops the character rather than passing
 * it on: an overlong form, a surrogate, a byte order mark or a code point
 * past U+10FFFF. A dropped character leaves its parser state as it was (an
 * escape sequence goes on), where any other would end the sequence.
 */
function droppedByXterm(lead: number, codePoint: number): boolean {
  if (lead < 0xe0) return false; // C0 and C1, the overlong two-byte leads, are never taken as leads
  if (lead < 0xf0) return codePoint < 0x800 || (codePoint >= 0xd800 && codePoint <= 0xdfff) || codePoint === BYTE_ORDER_MARK;
  return codePoint < 0x10000 || codePoint > 0x10ffff;
}
