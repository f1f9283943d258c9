import { Terminal } from "@xterm/headless";

/**
 * xterm.js options that stop reflow on resize: text keeps the line breaks it
 * was written with, as on a hardware terminal, and lines in the scrollback
 * never change again (which is what makes their serialized form cacheable).
 *
 * xterm.js 6 has no reflow switch. `Buffer._isReflowEnabled` returns false
 * whenever `windowsPty.buildNumber` is set unless the backend is ConPTY
 * 21376 or later, because older Windows PTYs wrap lines themselves. The
 * other Windows workaround, marking a line as wrapped whenever the previous
 * one ends in a non-blank cell, is only switched on for `backend: "conpty"`
 * (or the deprecated `windowsMode`), so leaving `backend` unset gets no reflow
 * and keeps real wrap flags.
 *
 * The option also switches xterm.js to ConPTY's way of growing rows (blank
 * rows pushed at the bottom), which breaks the alternate buffer after a
 * shrink and a grow; resize with `resizeWithoutReflow`, which changes rows
 * with the option off. The browser widget should do the same, so that its
 * screen and the mirror agree after a resize.
 *
 * @example
 * ```ts
 * const terminal = new Terminal({ cols: 80, rows: 24, ...NO_REFLOW_OPTIONS });
 * ```
 */
export const NO_REFLOW_OPTIONS = { windowsPty: { buildNumber: 1 } } as const;

/** Size and history of a mirror terminal. */
export interface MirrorTerminalOptions {
  cols: number;
  rows: number;
  scrollback: number;
}

/**
 * A headless xterm.js terminal configured as a mirror: no reflow, markers
 * allowed, and no console logging (its input is untrusted program output).
 */
export function createMirrorTerminal({ cols, rows, scrollback }: MirrorTerminalOptions): Terminal {
  return new Terminal({
    cols,
    rows,
    scrollback,
    allowProposedApi: true,
    logLevel: "off",
    ...NO_REFLOW_OPTIONS,
  });
}

/** The parts of an xterm.js terminal (headless or browser) that a resize touches. */
export interface ResizableTerminal {
  readonly cols: number;
  readonly rows: number;
  options: { windowsPty?: { backend?: "conpty" | "winpty"; buildNumber?: number } };
  resize(cols: number, rows: number): void;
}

/**
 * Resize a terminal created with `NO_REFLOW_OPTIONS` without reflowing it:
 * the width changes with the options in place (no reflow); the height then
 * changes with them off, since reflow only ever happens when the width
 * changes, and xterm.js's own row logic keeps the alternate buffer whole
 * (ConPTY's pushes rows past the end of an alternate buffer scrolled by an
 * earlier shrink, which then shows stale rows).
 *
 * @example
 * ```ts
 * resizeWithoutReflow(terminal, 120, 40);
 * ```
 */
export function resizeWithoutReflow(terminal: ResizableTerminal, cols: number, rows: number): void {
  if (cols !== terminal.cols) terminal.resize(cols, terminal.rows);
  if (rows === terminal.rows) return;
  const noReflow = terminal.options.windowsPty;
  terminal.options.windowsPty = {};
  try {
    terminal.resize(cols, rows);
  } finally {
    terminal.options.windowsPty = noReflow;
  }
}
