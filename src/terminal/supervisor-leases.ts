import type { Platform, ProjectCaller } from "../platform/index.ts";
import type { ControlMessage, PtySession } from "../pty/index.ts";
import { auditSessionEvent } from "./session-audit.ts";

/** How a view came to hold the input lease. */
export type LeaseVia = "attach" | "take_control" | "handed_on";

/**
 * Audits a supervisor's view getting the input lease of someone else's
 * session (`terminal.session`, event `lease`, with how): from then on its
 * keys reach that user's shell. An `attach` entry alone cannot tell a
 * supervisor who watched from one who typed, and the lease can reach them
 * three ways: first writable view at attach, Take Control, or handed on
 * when the holder's last view left. The owner's own views are not audited:
 * a user taking their keyboard back is no event.
 *
 * It watches the `lease` control messages sent to one view, which every
 * lease change sends synchronously, so nothing in the views needs a hook.
 */
export class SupervisorLeases {
  #holding = false;
  #attached = false;
  #heldAtAttach = false;
  #takingControl = false;
  /** Whose view held the lease as last told to this view. */
  #holderUserId: string | null = null;

  constructor(
    private readonly platform: Platform,
    private readonly caller: ProjectCaller,
    private readonly session: PtySession,
  ) {}

  /** A control message on its way to this view. */
  told(message: ControlMessage): void {
    if (message.type !== "lease") return;
    const gained = message.you && !this.#holding;
    const previousHolder = this.#holderUserId;
    this.#holding = message.you;
    this.#holderUserId = message.userId;
    // From another view of the same person (a reconnect, a second tab): they already had the keyboard.
    if (!gained || previousHolder === this.caller.user.id) return;
    // At attach the lease is sent before the attach entry is written: it follows that entry.
    if (!this.#attached) this.#heldAtAttach = true;
    else this.#audit(this.#takingControl ? "take_control" : "handed_on");
  }

  /** The view is attached and its `attach` entry written. */
  attached(): void {
    this.#attached = true;
    if (this.#heldAtAttach) this.#audit("attach");
  }

  /** Run a Take Control: a lease it moves here is audited as taken. */
  takingControl(take: () => unknown): void {
    this.#takingControl = true;
    try {
      take();
    } finally {
      this.#takingControl = false;
    }
  }

  #audit(via: LeaseVia): void {
    if (this.caller.user.id === this.session.key.userId) return;
    auditSessionEvent(this.platform, this.caller, this.session, "lease", { via });
  }
}
