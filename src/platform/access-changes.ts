/**
 * Tells whoever holds access open (a terminal view streaming a session) that
 * something deciding access changed in this process: a grant, a membership, a
 * sign-out, a project switch, a source's rules. They decide again at once
 * instead of at their next periodic check, so a revoked supervisor or a signed
 * out browser stops seeing output within a decision, not seconds later.
 * Changes made by another process (the CLI on the same database) are only
 * caught by the periodic check.
 *
 * A change names whose access it can touch, so that one user switching
 * projects in a loop costs decisions for their own views only.
 *
 * @example
 * const stop = platform.accessChanges.subscribe((scope) => touches(scope, caller) && gate.recheck());
 * platform.roles.revoke(projectId, "admin", "terminal.supervise"); // the gate decides again now
 * stop();
 */
export class AccessChanges {
  readonly #listeners = new Set<(scope: AccessScope) => void>();

  /** Call `listener` after every change, with whose access it can touch; returns the function that stops it. */
  subscribe(listener: (scope: AccessScope) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Something deciding access changed (already written), for everyone in a project or for one user's sign-ins. */
  notify(scope: AccessScope): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(scope);
      } catch (error) {
        // One listener's failure must not keep the change from the others.
        console.error("hatch: an access-change listener failed", error);
      }
    }
  }
}

/** Whose access a change can touch: everyone in a project (grants, members, sources), or one user (sign-out, project switch). */
export type AccessScope = { projectId: string } | { userId: string };

/** Whether a change of `scope` can touch a caller acting as `userId` in `projectId`. */
export function touches(scope: AccessScope, caller: { userId: string; projectId: string }): boolean {
  return "projectId" in scope ? scope.projectId === caller.projectId : scope.userId === caller.userId;
}
