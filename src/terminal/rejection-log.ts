/**
 * Logs refused upgrades and connections closed for a bad frame, without any attacker-supplied bytes, sampled so a flood
 * of bad requests cannot flood the log: the first few of each reason, then one
 * line per interval with the count.
 */
export class RejectionLog {
  readonly #counts = new Map<string, number>();
  #windowStart = 0;

  constructor(
    private readonly write: (line: string) => void,
    private readonly now: () => number = Date.now,
    private readonly perWindow = 5,
    private readonly windowMs = 60_000,
  ) {}

  /** Record a rejection by reason (a fixed string chosen by the server). */
  record(reason: string): void {
    const now = this.now();
    if (now - this.#windowStart >= this.windowMs) {
      const dropped = [...this.#counts].filter(([, n]) => n > this.perWindow);
      for (const [r, n] of dropped) this.write(`hatch: refused ${n - this.perWindow} more terminal connections (${r}) in the last window`);
      this.#counts.clear();
      this.#windowStart = now;
    }
    const count = (this.#counts.get(reason) ?? 0) + 1;
    this.#counts.set(reason, count);
    if (count <= this.perWindow) this.write(`hatch: refused a terminal connection (${reason})`);
  }
}
