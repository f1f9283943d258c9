/**
 * Output flow control per view, by client acknowledgements (VS Code's pty host
 * constants, src/vs/platform/terminal/common/terminal.ts FlowControlConstants).
 * We count bytes rather than UTF-16 chars because the offsets are bytes.
 */

/** Unacknowledged bytes at which a view stops receiving live output. */
export const HIGH_WATERMARK_BYTES = 100_000;
/** Unacknowledged bytes below which a paused view resumes. */
export const LOW_WATERMARK_BYTES = 5_000;
/** How often a client should ack; must not exceed the low watermark or a view never resumes. */
export const ACK_EVERY_BYTES = 5_000;
