/**
 * Control characters other than tab and newline: ESC starts the sequences a
 * terminal obeys (OSC 52 writes the clipboard, CSI moves the cursor over
 * lines already printed), CR overwrites a line, and C1 (U+0080-U+009F) is
 * CSI and OSC on terminals that read 8-bit controls.
 */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/**
 * Text for the operator's terminal with every control character shown as an
 * escape (`\x1b`). What the CLI prints holds strings members and webhook
 * callers wrote (workflow names, source labels, a command's stderr echoing
 * its fire text): printed raw, they would drive the operator's terminal.
 */
export function printableText(text: string): string {
  return text
    .replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`)
    .replace(REORDERING, unicodeEscape);
}

/** `\u009b`: the escape JSON reads back as the character. */
function unicodeEscape(c: string): string {
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

/**
 * Unicode line separators and bidirectional embedding, override and isolate
 * controls: U+202E prints the rest of a line backwards, so a name can hide
 * or fake what follows it in a listing.
 */
const REORDERING = /[\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * JSON for the operator's terminal: JSON.stringify escapes C0 but not C1,
 * DEL or the reordering characters, so those are escaped too (`\u009b`,
 * `\u202e`), and the JSON means the same.
 */
export function printableJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(/[\x7f-\x9f]/g, unicodeEscape).replace(REORDERING, unicodeEscape);
}

/**
 * What `human` returned, for the operator's terminal: text as printableText
 * makes it, or a listing one row per line, a line break inside a row shown as `\n`.
 */
export function printableLines(human: string | string[]): string {
  return typeof human === "string" ? printableText(human) : human.map((row) => printableText(row.replaceAll("\n", "\\n"))).join("\n");
}
