/**
 * Tells whoever holds access open (a terminal view streaming a session) that
 * something deciding access changed in this process: a grant, a membership, a
 * sign-out, a project switch, a source's rules. They decide again at once
 * instead of at their next periodic check, so a revoked supervisor or a signed
 * out browser stops seeing output within a decision, not seconds later.
 * Changes made by another process (the CLI on the same database) are only
 * caught by the periodic check.
 *
 * @example
 * const stop = platform.accessChanges.subscribe(() => gate.recheck());
 * platform.roles.revoke(projectId, "admin", "terminal.supervise"); // the gate decides again now
 * stop();
 */
export class AccessChanges {
  readonly #listeners = new Set<() => void>();

  /** Call `listener` after every change; returns the function that stops it. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Something deciding access changed (already written). */
  notify(): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener();
      } catch (error) {
        // One listener's failure must not keep the change from the others.
        console.error("hatch: an access-change listener failed", error);
      }
    }
  }
}
