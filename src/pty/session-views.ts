import type { ScreenMirror } from "../screen/index.ts";
import type { ControlMessage, ViewSink } from "./control-message.ts";
import { ACK_EVERY_BYTES, HIGH_WATERMARK_BYTES, LOW_WATERMARK_BYTES } from "./flow-control.ts";

/** How often a lagging view's connection is looked at while it drains. */
const DRAIN_POLL_MS = 50;
/**
 * What a paused PTY may still hand over (its kernel buffer, and reads already
 * queued on the event loop), with room to spare; a holder whose connection
 * backs up past this meanwhile is cut over to a snapshot.
 */
const PAUSED_SPILL_BYTES = HIGH_WATERMARK_BYTES;
/** What an honest connection may hold beyond the output it has not acked: control messages. */
const CONTROL_SLACK_BYTES = 64 * 1024;
/** WebSocket close code for "the server hit an unexpected condition". */
const CLOSE_INTERNAL_ERROR = 1011;
/**
 * Views one person holds of one session at once. Each attach costs a snapshot
 * (megabytes with a full scrollback) built on the parser thread every session
 * shares, so views without limit would let one user's connections slow
 * everyone's. A person needs a few tabs.
 */
export const MAX_VIEWS_PER_USER = 16;
/**
 * Views one session holds at once, everyone's: twice one person's, so an
 * owner with every tab they may have open never locks a supervisor out.
 */
export const MAX_VIEWS_PER_SESSION = 2 * MAX_VIEWS_PER_USER;
/**
 * What a connection may hold beyond its last snapshot before the client is
 * taken for one that does not read. An honest one stays well under it (the
 * output it has not acked, capped near the watermark; a paused PTY's spill;
 * one read past the watermark; control messages), with room for a slow link.
 */
export const MAX_UNREAD_BYTES = 1024 * 1024;
/** WebSocket close code for a policy violation: here, a client that sends but does not read. */
const CLOSE_NOT_READING = 1008;

/** Who a view belongs to and what it may do. */
export interface ViewOptions {
  userId: string;
  /** Holds core.execute: may type and resize when it has the lease. */
  canWrite: boolean;
  /** Last output offset this client saw (reconnect); absent for a first connection. */
  since?: number;
  /** The session instance `since` counts in (from its hello); another one's offset is ignored. */
  instance?: string;
}

/** What the views need from their session. */
export interface ViewHost {
  readonly mirror: ScreenMirror;
  /**
   * Names this run of the session: an id ended and created again starts a new
   * output stream, whose offsets say nothing about the old one's.
   */
  readonly instance: string;
  /** Pause the PTY; false when it cannot be paused right now. */
  pauseOutput(): boolean;
  resumeOutput(): void;
}

/** One connected view of a session. */
export class View {
  /** Bytes sent but not yet acknowledged by the client. */
  unacked = 0;
  /** A snapshot is being prepared: live output and resize are withheld. */
  catchingUp = false;
  /** Fell behind: receives nothing until it acks, then gets a fresh snapshot. */
  lagging = false;
  /** What the connection held just after the last snapshot or replay went out (a snapshot is never acked; a replay may be a whole ring). */
  snapshotAllowance = 0;
  /** Waiting for the connection to drain before a catch-up snapshot. */
  waitingToDrain = false;
  closed = false;
  #canWrite: boolean;

  constructor(
    readonly id: string,
    readonly options: ViewOptions,
    readonly sink: ViewSink,
  ) {
    this.#canWrite = options.canWrite;
  }

  get userId() {
    return this.options.userId;
  }

  /** May type and resize when it has the lease; false from the start, or once demoted. */
  get canWrite() {
    return this.#canWrite;
  }

  /** Take writing away for good (the view's access narrowed); see SessionViews.demote. */
  revokeWrite(): void {
    this.#canWrite = false;
  }
}

/**
 * The views of one session: the input lease, the fan-out of output and the
 * per-view flow control. The mirror is always fed at full speed elsewhere; only
 * the lease holder can pause the PTY, and a lagging observer is cut over to a
 * fresh snapshot instead of stalling everyone.
 */
export class SessionViews {
  readonly #views = new Map<string, View>();
  #leaseHolder: string | null = null;
  #paused = false;
  #counter = 0;

  constructor(
    private readonly sessionId: string,
    private readonly host: ViewHost,
  ) {}

  /** Number of attached views. */
  get size(): number {
    return this.#views.size;
  }

  /** Why the session takes no more views from `userId` (their MAX_VIEWS_PER_USER, or everyone's MAX_VIEWS_PER_SESSION), or null when it does. */
  fullFor(userId: string): string | null {
    if (this.#views.size >= MAX_VIEWS_PER_SESSION) return `The session has ${MAX_VIEWS_PER_SESSION} views open, as many as it takes`;
    let theirs = 0;
    for (const view of this.#views.values()) if (view.userId === userId) theirs++;
    return theirs >= MAX_VIEWS_PER_USER ? `You have ${MAX_VIEWS_PER_USER} views of the session open, as many as one person may` : null;
  }

  /** The view holding the input lease, if any. */
  get leaseHolder(): View | null {
    return this.#leaseHolder ? (this.#views.get(this.#leaseHolder) ?? null) : null;
  }

  /** Attach a view: it gets a hello, then the missed bytes or a snapshot, and learns the lease. */
  attach(sink: ViewSink, options: ViewOptions): View {
    const view = new View(`v${++this.#counter}`, options, sink);
    this.#views.set(view.id, view);
    const { mirror } = this.host;
    const { instance } = this.host;
    sink.control({ type: "hello", viewId: view.id, sessionId: this.sessionId, instance, readOnly: !options.canWrite, cols: mirror.cols, rows: mirror.rows, scrollback: mirror.scrollback });
    if (!options.canWrite) sink.control({ type: "readOnly" });
    // An offset is only a resume point in the stream it was counted in: from another (or unnamed) one, the
    // bytes past it would be a slice of a different session's output, cut anywhere. The view gets a snapshot.
    const since = options.instance === instance ? options.since : undefined;
    // A full-screen app is never replayed as bytes, even when nothing was missed: the view gets its screen.
    const missed = since === undefined || mirror.fullScreen ? null : mirror.missedSince(since);
    if (missed) {
      sink.control({ type: "replay", from: since!, to: since! + missed.length });
      this.#send(view, missed);
      // Like a snapshot, a replay is one catch-up of up to the whole ring: on a slow link it is still queued here
      // when the next control message is due, and must not be taken for a client that reads nothing (1008).
      view.snapshotAllowance = sink.buffered();
    } else {
      this.#catchUp(view);
    }
    if (options.canWrite && !this.leaseHolder) this.#setLease(view);
    else sink.control(this.#leaseMessage(view));
    return view;
  }

  /** Detach a view; if it held the lease, the lease passes on (see `#passLease`). */
  detach(view: View): void {
    view.closed = true;
    if (!this.#views.delete(view.id)) return;
    if (this.#leaseHolder === view.id) this.#passLease(view.userId);
    if (this.#views.size === 0 || this.#leaseHolder === null) this.#resumeIfPaused();
  }

  /**
   * The lease goes to the latest writable view of the person who held it (a
   * tab whose connection dropped has reconnected as a new view by the time the
   * old one is found dead), else to the earliest remaining writable view, or to
   * nobody. So a supervisor watching is handed the keyboard only when its
   * holder has no view left, not while the holder's tab is reconnecting.
   */
  #passLease(fromUserId: string): void {
    const writable = [...this.#views.values()].filter((v) => v.canWrite);
    this.#setLease(writable.findLast((v) => v.userId === fromUserId) ?? writable[0] ?? null);
  }

  /**
   * Make a view read-only for the rest of its connection (its user lost the
   * right to type here): it is told `readOnly`, and if it held the lease, the
   * lease passes on as on a detach. Reconnecting is how a view regains writing.
   */
  demote(view: View): void {
    if (!view.canWrite || view.closed) return;
    view.revokeWrite();
    this.control(view, { type: "readOnly" });
    if (this.#leaseHolder === view.id) this.#passLease(view.userId);
  }

  /** Move the lease to a writable view (Take Control); the holder taking it again changes (and announces) nothing. */
  takeControl(view: View): boolean {
    if (!view.canWrite || view.closed) return false;
    if (this.#leaseHolder !== view.id) this.#setLease(view);
    return true;
  }

  /**
   * May this view's input or resize reach the PTY right now? Only the lease
   * holder's, even while a snapshot is on its way to it: keys are typed ahead,
   * as in any terminal (under a flood that cannot be paused a snapshot is on
   * its way most of the time, and a key silently lost is worse than one typed
   * before the screen caught up), and a resize cannot be undone by that
   * snapshot, which the mirror takes again at the new size when a resize
   * lands meanwhile. A client that sends its size as it connects keeps it.
   */
  mayDrive(view: View): boolean {
    return view.canWrite && !view.closed && this.#leaseHolder === view.id;
  }

  /** Fan new output out to every view that is keeping up. */
  broadcast(chunk: Uint8Array): void {
    for (const view of this.#views.values()) {
      if (view.catchingUp || view.lagging) continue;
      this.#send(view, chunk);
    }
  }

  /** Send a control message to every view. */
  announce(message: ControlMessage): void {
    for (const view of [...this.#views.values()]) this.control(view, message);
  }

  /**
   * Send one view a control message, unless its connection shows the client
   * is not reading: holding more than MAX_UNREAD_BYTES beyond its last
   * snapshot, it is closed (1008) and detached instead, so a client that sends
   * frames but reads nothing cannot grow the server's memory with the answers
   * (lease, notice, blocked, resize).
   */
  control(view: View, message: ControlMessage): void {
    if (view.closed) return;
    if (view.sink.buffered() - view.snapshotAllowance > MAX_UNREAD_BYTES) {
      this.detach(view);
      view.sink.close(CLOSE_NOT_READING, "The connection is not reading what it is sent");
      return;
    }
    view.sink.control(message);
  }

  /** A client acknowledged `bytes` of output. */
  ack(view: View, bytes: number): void {
    view.unacked = Math.max(0, view.unacked - bytes);
    if (view.unacked >= LOW_WATERMARK_BYTES) return;
    if (view.lagging && !view.catchingUp) this.#catchUpOnceDrained(view);
    if (this.#leaseHolder === view.id) this.#resumeIfPaused();
  }

  /**
   * Catch a lagging view up once its connection has (nearly) drained. Acks are
   * the client's word; the connection's queue is the fact: a client that acks
   * output it never read must not be sent snapshot after snapshot into a
   * socket nobody reads. An honest client's queue drains as it reads, and the
   * view is caught up then, ack or no ack.
   */
  #catchUpOnceDrained(view: View): void {
    if (view.waitingToDrain || view.closed) return;
    if (view.sink.buffered() < HIGH_WATERMARK_BYTES) return this.#catchUp(view);
    view.waitingToDrain = true;
    const poll = () => {
      if (view.closed) return;
      if (view.sink.buffered() >= HIGH_WATERMARK_BYTES) return void setTimeout(poll, DRAIN_POLL_MS);
      view.waitingToDrain = false;
      if (view.lagging && !view.catchingUp) this.#catchUp(view);
    };
    setTimeout(poll, DRAIN_POLL_MS);
  }

  /**
   * Send a view a snapshot. If none can be taken (the session ended meanwhile,
   * or its parser thread failed), a view still open is closed with 1011
   * rather than left waiting without output.
   */
  #catchUp(view: View): void {
    this.#sendSnapshot(view).catch((error: unknown) => {
      if (view.closed) return;
      console.error(`hatch: cannot send session ${this.sessionId} a snapshot:`, error);
      // Detached now, not when the close handshake ends: until then it would hold the lease, and a PTY paused for it.
      this.detach(view);
      view.sink.close(CLOSE_INTERNAL_ERROR, "The screen could not be sent");
    });
  }

  /** Replace what a view shows with a fresh snapshot, then the bytes since it. */
  async #sendSnapshot(view: View): Promise<void> {
    view.catchingUp = true;
    const snapshot = await this.host.mirror.snapshot();
    if (view.closed) return;
    // Under a flood the snapshot is taken between two escape sequences, behind the live offset:
    // the bytes after it follow. Null only when a resize intervened: take a new snapshot then.
    const tail = this.host.mirror.bytesSince(snapshot.offset);
    if (tail === null) return this.#sendSnapshot(view);
    view.unacked = 0;
    view.lagging = false;
    view.catchingUp = false;
    view.sink.control({ type: "snapshot", ...snapshot });
    view.snapshotAllowance = view.sink.buffered();
    if (tail.length) this.#send(view, tail);
  }

  /**
   * Before the session ends: each view that fell behind (lagging, or waiting
   * for its catch-up) is sent the screen as the program left it. Otherwise a
   * second tab or a supervisor that lagged during the last burst would be
   * closed on a stale screen, and with the session gone, no reconnect could
   * show it the rest. A snapshot not had within `waitMs` is given up.
   */
  async catchUpBeforeEnd(waitMs: number): Promise<void> {
    const behind = [...this.#views.values()].filter((view) => !view.closed && (view.lagging || view.catchingUp));
    if (behind.length === 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const givenUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)));
    await Promise.race([Promise.all(behind.map((view) => this.#sendSnapshot(view).catch(() => {}))), givenUp]);
    clearTimeout(timer);
  }

  /** Close every view (session destroyed). */
  closeAll(code: number, reason: string): void {
    for (const view of [...this.#views.values()]) {
      view.closed = true;
      view.sink.close(code, reason);
    }
    this.#views.clear();
    this.#leaseHolder = null;
  }

  #send(view: View, bytes: Uint8Array): void {
    const holder = this.#leaseHolder === view.id;
    // An observer never gets past the high watermark by more than one read: it lags instead and catches up by snapshot.
    // Nor does any view whose client is not reading, whatever it acks. An honest client cannot have
    // more queued here (beyond its last snapshot) than it has not acked, give or take frame headers
    // and control messages. The holder's unacked output can pass the watermark, as a paused PTY still
    // hands over its kernel buffer, and must not get it cut off; but that credit is capped, so a pause
    // that does not hold (a backend that cannot pause) cannot queue output without bound for a
    // holder that reads nothing.
    const queued = view.sink.buffered() - view.snapshotAllowance;
    const owed = Math.min(view.unacked, HIGH_WATERMARK_BYTES + PAUSED_SPILL_BYTES);
    const backedUp = queued > HIGH_WATERMARK_BYTES && queued > 2 * owed + CONTROL_SLACK_BYTES;
    // A view that owes no ack yet (less than ACK_EVERY_BYTES unacked) takes the read whole, even one past the
    // watermark (Bun hands over up to ~135 KB): cut off now, it would wait for an ack its client has no reason to send.
    if ((!holder && view.unacked >= ACK_EVERY_BYTES && view.unacked + bytes.length > HIGH_WATERMARK_BYTES) || backedUp) {
      view.lagging = true;
      return;
    }
    view.sink.output(bytes);
    view.unacked += bytes.length;
    if (view.unacked <= HIGH_WATERMARK_BYTES) return;
    if (holder && (this.#paused || this.host.pauseOutput())) {
      this.#paused = true;
      return;
    }
    view.lagging = true;
  }

  #resumeIfPaused(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.host.resumeOutput();
  }

  #setLease(view: View | null): void {
    if (this.#leaseHolder !== (view?.id ?? null)) this.#resumeIfPaused();
    this.#leaseHolder = view?.id ?? null;
    for (const v of [...this.#views.values()]) this.control(v, this.#leaseMessage(v));
  }

  #leaseMessage(to: View): ControlMessage {
    const holder = this.leaseHolder;
    return { type: "lease", viewId: holder?.id ?? null, userId: holder?.userId ?? null, you: holder?.id === to.id };
  }
}
