import { Terminal } from "@xterm/headless";
import { bufferInternals, coreOf } from "./xterm-internals.ts";

/** Final characters of the character sets xterm.js designates (its CHARSETS table); "B", US ASCII, is the default. */
const KNOWN_FINALS = "0A4C5RQKYE6ZH7=";

/** The intermediates that designate G0, G1, G2 and G3 (SCS). */
const DESIGNATORS = ["(", ")", "*", "+"];

/** SI, SO, LS2 and LS3: invoke G0, G1, G2 or G3 as the character set in use. */
const INVOKERS = ["\x0f", "\x0e", "\x1bn", "\x1bo"];

/** A character set as xterm.js keeps it: a table from ASCII to replacement characters, or undefined for US ASCII. */
type Charset = object | undefined;

let finalsByCharset: Map<Charset, string> | undefined;

/**
 * The designations and the invocation that give a client, whose character
 * sets are a fresh terminal's, the terminal's: a program that switched to
 * DEC line drawing (`ESC ( 0`) goes on drawing lines after a reconnect
 * instead of letters. "" when they are the defaults or cannot be read.
 * Written last, since they change how the client prints the ASCII of the
 * snapshot itself.
 *
 * xterm.js can be left using a set other than the invoked one (DECRC
 * restores the set without the designation); such a state is given as the
 * invoked set.
 *
 * @example
 * ```ts
 * data += charsetSequence(terminal); // "\x1b(0" while DEC line drawing is in use
 * ```
 */
export function charsetSequence(terminal: Terminal): string {
  const service = coreOf(terminal)?._charsetService;
  if (!service || !Array.isArray(service._charsets) || typeof service.glevel !== "number") return "";
  let sequence = "";
  for (const [g, designator] of DESIGNATORS.entries()) {
    const final = finalOf(service._charsets[g] as Charset);
    if (final) sequence += `\x1b${designator}${final}`;
  }
  return sequence + (service.glevel === 0 ? "" : (INVOKERS[service.glevel] ?? ""));
}

/**
 * The designation that makes G0 of a fresh client, invoked, a buffer's saved
 * character set (what DECSC saved and DECRC restores): "" for US ASCII or a
 * set that cannot be read.
 *
 * @example
 * ```ts
 * data += savedCharsetDesignation(terminal, "normal") + "\x1b7\x1b(B";
 * ```
 */
export function savedCharsetDesignation(terminal: Terminal, buffer: "normal" | "alt"): string {
  const final = finalOf(bufferInternals(terminal, buffer)?.savedCharset as Charset);
  return final ? `\x1b${DESIGNATORS[0]}${final}` : "";
}

/** The final character that designates `charset`, or undefined for US ASCII and sets this version does not know. */
function finalOf(charset: Charset): string | undefined {
  if (charset === undefined || charset === null) return undefined;
  finalsByCharset ??= readFinals();
  return finalsByCharset.get(charset);
}

/**
 * xterm.js's character set tables by final character. They are not exported,
 * and a terminal refers to them by identity, so a scratch terminal designates
 * each one (synchronously, through its internal handler) to find them.
 */
function readFinals(): Map<Charset, string> {
  const finals = new Map<Charset, string>();
  const scratch = new Terminal({ cols: 2, rows: 1, scrollback: 0, logLevel: "off" });
  try {
    const core = coreOf(scratch);
    const select = core?._inputHandler?.selectCharset;
    if (typeof select !== "function") return finals;
    for (const final of KNOWN_FINALS) {
      select.call(core!._inputHandler, `(${final}`);
      const charset = core?._charsetService?.charset;
      if (typeof charset === "object" && charset !== null && !finals.has(charset)) finals.set(charset, final);
    }
  } finally {
    scratch.dispose();
  }
  return finals;
}

/**
 * Whether the character set in use is not the invoked one but the one
 * `buffer`'s saved cursor holds, as DECRC leaves it: DECRC restores the set
 * DECSC saved and leaves the designations alone (a status-line painter
 * saves the cursor, draws a rule in DEC line drawing, and restores). A
 * client whose saved cursor is the buffer's gets there by a DECRC of its
 * own after the designations; nothing else sets the one without the other.
 */
export function charsetInUseIsSaved(terminal: Terminal, buffer: "normal" | "alt"): boolean {
  const service = coreOf(terminal)?._charsetService;
  if (!service || !Array.isArray(service._charsets) || typeof service.glevel !== "number") return false;
  const inUse = service.charset as Charset;
  const invoked = service._charsets[service.glevel] as Charset;
  if (sameCharset(inUse, invoked)) return false;
  // A set this version cannot name never reached the client's saved cursor.
  if (!isAscii(inUse) && finalOf(inUse) === undefined) return false;
  return sameCharset(inUse, bufferInternals(terminal, buffer)?.savedCharset as Charset);
}

/** US ASCII is kept as no table, undefined or null depending on the path that set it. */
function isAscii(charset: Charset): boolean {
  return charset === undefined || charset === null;
}

function sameCharset(a: Charset, b: Charset): boolean {
  return a === b || (isAscii(a) && isAscii(b));
}

/**
 * Whether `text`, printed with the character set in use, comes out as
 * itself. A cell holds what its character became, so printing a cell's text
 * again is exact only where the set leaves that text alone: xterm.js's Dutch
 * set turns `]` into `|`, and `|` into `f`.
 */
export function printsAsItself(terminal: Terminal, text: string): boolean {
  const table = coreOf(terminal)?._charsetService?.charset as Record<string, string> | undefined | null;
  if (!table) return true;
  for (const char of text) {
    const printed = table[char];
    if (printed !== undefined && printed !== char) return false;
  }
  return true;
}
