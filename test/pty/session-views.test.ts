import { describe, expect, test } from "bun:test";
import { ACK_EVERY_BYTES, HIGH_WATERMARK_BYTES, LOW_WATERMARK_BYTES, MAX_UNREAD_BYTES, type ControlMessage, type ViewSink } from "../../src/pty/index.ts";
import { SessionViews } from "../../src/pty/session-views.ts";
import { ParserThread, ScreenMirror } from "../../src/screen/index.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { parser } from "../helpers/parser-thread.ts";

/** What a WebSocket would have carried to one view. */
function recordingSink(): ViewSink & { controls: ControlMessage[]; bytes: number } {
  const sink = {
    controls: [] as ControlMessage[],
    bytes: 0,
    output: (b: Uint8Array) => void (sink.bytes += b.length),
    control: (m: ControlMessage) => void sink.controls.push(m),
    close: () => {},
    buffered: () => 0,
  };
  return sink;
}

/** A connection whose peer reads nothing until the test says so: every byte sent stays queued (`queued`, what `buffered()` reports). */
function queuingSink() {
  const sink = Object.assign(recordingSink(), { queued: 0 });
  sink.output = (b: Uint8Array) => void ((sink.bytes += b.length), (sink.queued += b.length));
  sink.buffered = () => sink.queued;
  return sink;
}

function views() {
  const mirror = new ScreenMirror({ parser, cols: 80, rows: 24, scrollback: 100 });
  const pauses: string[] = [];
  const set = new SessionViews("s", { mirror, instance: "i1", pauseOutput: () => (pauses.push("pause"), true), resumeOutput: () => void pauses.push("resume") });
  return { mirror, set, pauses };
}

/** A lease holder on a queuing connection, past its first snapshot, then sent `chunks` chunks of 10 KB output. */
async function holderSent(chunks: number) {
  const { mirror, set, pauses } = views();
  const sink = queuingSink();
  const holder = set.attach(sink, { userId: "u", canWrite: true });
  await waitFor(() => sink.controls.some((c) => c.type === "snapshot"), "the snapshot");
  sink.queued = 0;
  const chunk = new Uint8Array(10_000).fill(0x79);
  for (let i = 0; i < chunks; i++) {
    mirror.write(chunk);
    set.broadcast(chunk);
  }
  return { set, sink, holder, pauses, sent: chunks * chunk.length };
}

describe("session views", () => {
  test("a reconnect whose replay of a full ring has not left the server yet (a slow link) is not taken for a client that does not read", async () => {
    const { mirror, set } = views();
    const first = set.attach(recordingSink(), { userId: "u", canWrite: true });
    // A megabyte of output the reconnecting view missed: the whole ring.
    const chunk = new Uint8Array(64 * 1024).fill(0x79);
    for (let i = 0; i < 16; i++) {
      mirror.write(chunk);
      set.broadcast(chunk);
    }
    await mirror.settled();
    const slow = Object.assign(queuingSink(), { closed: [] as [number, string][] });
    slow.control = (m: ControlMessage) => void (slow.controls.push(m), (slow.queued += JSON.stringify(m).length));
    slow.close = (code: number, reason: string) => void slow.closed.push([code, reason]);
    const since = mirror.offset - mirror.missedSince(0)!.length;
    set.attach(slow, { userId: "u", canWrite: true, since, instance: "i1" });
    // It is told who holds the lease (the first view), and later control messages reach it as well.
    set.detach(first);
    expect({ replayed: slow.controls.some((c) => c.type === "replay"), closed: slow.closed, lastControl: slow.controls.at(-1)?.type }).toEqual({ replayed: true, closed: [], lastControl: "lease" });
  });

  test("a view whose connection holds more than an honest client's could is closed (1008) and detached when a control message is due, and the lease moves on", async () => {
    const { set } = views();
    const stuck = Object.assign(queuingSink(), { closed: [] as [number, string][] });
    stuck.control = (m: ControlMessage) => void (stuck.controls.push(m), (stuck.queued += JSON.stringify(m).length));
    stuck.close = (code: number, reason: string) => void stuck.closed.push([code, reason]);
    const holder = set.attach(stuck, { userId: "u", canWrite: true });
    const otherSink = recordingSink();
    const other = set.attach(otherSink, { userId: "u", canWrite: true });
    await waitFor(() => stuck.controls.some((c) => c.type === "snapshot") && otherSink.controls.some((c) => c.type === "snapshot"), "the snapshots");
    // As much as a connection may hold beyond its snapshot; one byte more shows a client that does not read.
    stuck.queued = holder.snapshotAllowance + MAX_UNREAD_BYTES;
    set.announce({ type: "notice", message: "still reading?" });
    expect({ closed: stuck.closed, size: set.size }).toEqual({ closed: [], size: 2 });
    stuck.queued += 1;
    set.announce({ type: "notice", message: "still reading?" });
    expect({ closed: stuck.closed, size: set.size, holder: set.leaseHolder?.id }).toEqual({ closed: [[1008, "The connection is not reading what it is sent"]], size: 1, holder: other.id });
    expect(otherSink.controls.filter((c) => c.type === "notice")).toHaveLength(2);
  });

  test("the holder drives (keys and resizes) while its snapshot is in flight, and after", async () => {
    const { set } = views();
    const sink = recordingSink();
    const view = set.attach(sink, { userId: "u", canWrite: true });
    expect(set.leaseHolder?.id).toBe(view.id);
    expect(view.catchingUp).toBe(true);
    expect(set.mayDrive(view)).toBe(true);
    await waitFor(() => sink.controls.some((c) => c.type === "snapshot"), "the snapshot");
    expect(set.mayDrive(view)).toBe(true);
  });

  test("a view whose snapshot is on its way while the session is resized ends at the new size, not the one the snapshot was taken at", async () => {
    const { mirror, set } = views();
    const sink = recordingSink();
    set.attach(sink, { userId: "u", canWrite: false });
    // Another view (or the resize route) resizes meanwhile, as PtySession.resize does.
    mirror.resize(100, 30);
    set.announce({ type: "resize", cols: 100, rows: 30 });
    await waitFor(() => sink.controls.some((c) => c.type === "snapshot"), "the snapshot");
    // The view is told the new size first; a snapshot arriving after it must not take it back.
    const sizes = sink.controls.filter((c) => c.type === "resize" || c.type === "snapshot").map((c) => [c.type, (c as { cols: number }).cols, (c as { rows: number }).rows]);
    expect(sizes).toEqual([["resize", 100, 30], ["snapshot", 100, 30]]);
  });

  test("while a snapshot is in flight to the lease holder its keys (typed ahead) get through; nobody else's do", async () => {
    const { set } = views();
    const holderSink = recordingSink();
    const holder = set.attach(holderSink, { userId: "u", canWrite: true });
    const observer = set.attach(recordingSink(), { userId: "u", canWrite: true });
    const reader = set.attach(recordingSink(), { userId: "u", canWrite: false });
    expect(holder.catchingUp).toBe(true);
    expect([set.mayDrive(holder), set.mayDrive(observer), set.mayDrive(reader)]).toEqual([true, false, false]);
    await waitFor(() => holderSink.controls.some((c) => c.type === "snapshot"), "the snapshot");
  });

  test("only the lease holder pauses the PTY; a lagging observer is cut off at the high watermark and caught up by snapshot", async () => {
    const { mirror, set, pauses } = views();
    const holderSink = recordingSink();
    const observerSink = recordingSink();
    const holder = set.attach(holderSink, { userId: "u", canWrite: true });
    const observer = set.attach(observerSink, { userId: "u", canWrite: true });
    await waitFor(() => observerSink.controls.some((c) => c.type === "snapshot") && holderSink.controls.some((c) => c.type === "snapshot"), "snapshots");
    const chunk = new Uint8Array(10_000).fill(0x79);
    for (let i = 0; i < 15; i++) {
      mirror.write(chunk);
      set.broadcast(chunk);
    }
    expect(observerSink.bytes).toBeLessThanOrEqual(HIGH_WATERMARK_BYTES);
    expect(observer.lagging).toBe(true);
    expect(holderSink.bytes).toBe(150_000);
    expect(pauses).toEqual(["pause"]);
    set.ack(holder, holderSink.bytes - LOW_WATERMARK_BYTES);
    expect(pauses).toEqual(["pause"]);
    set.ack(holder, 1);
    expect(pauses).toEqual(["pause", "resume"]);
    const snapshotsBefore = observerSink.controls.filter((c) => c.type === "snapshot").length;
    set.ack(observer, observerSink.bytes);
    await waitFor(() => observerSink.controls.filter((c) => c.type === "snapshot").length > snapshotsBefore, "the catch-up snapshot");
    expect(observer.lagging).toBe(false);
  });

  test("an observer whose client acks every ACK_EVERY_BYTES, as documented, is caught up after one PTY read larger than the watermark", async () => {
    const { mirror, set } = views();
    set.attach(recordingSink(), { userId: "h", canWrite: true });
    // The widget: acks what it rendered once ACK_EVERY_BYTES have built up (as bench/terminal.ts does).
    const sink = recordingSink();
    let rendered = 0;
    sink.output = (b: Uint8Array) => {
      sink.bytes += b.length;
      rendered += b.length;
      if (rendered < ACK_EVERY_BYTES) return;
      const bytes = rendered;
      rendered = 0;
      setTimeout(() => set.ack(observer, bytes), 1);
    };
    const observer = set.attach(sink, { userId: "o", canWrite: false });
    await waitFor(() => sink.controls.some((c) => c.type === "snapshot"), "the first snapshot");
    // A prompt's worth of output (no ack due), then one read of a flood past the watermark.
    for (const bytes of [new TextEncoder().encode("$ yes\r\n"), new Uint8Array(HIGH_WATERMARK_BYTES + 20_000).fill(0x79), new TextEncoder().encode("\r\n$ echo done\r\ndone\r\n")]) {
      mirror.write(bytes);
      set.broadcast(bytes);
    }
    await waitFor(() => sink.controls.filter((c) => c.type === "snapshot").length > 1, "a catch-up snapshot for the observer");
    expect(sink.controls.filter((c) => c.type === "snapshot")).toHaveLength(2);
  });

  test("a client that acks output it never read lags once its connection holds a high watermark, and gets no snapshot until the connection drains", async () => {
    const { mirror, set } = views();
    // Connections whose peers stop reading after the first snapshot: every byte sent from then on stays queued here.
    const holderSink = queuingSink();
    const observerSink = queuingSink();
    const holder = set.attach(holderSink, { userId: "u", canWrite: true });
    const observer = set.attach(observerSink, { userId: "u", canWrite: true });
    await waitFor(() => observerSink.controls.some((c) => c.type === "snapshot") && holderSink.controls.some((c) => c.type === "snapshot"), "snapshots");
    const chunk = new Uint8Array(10_000).fill(0x79);
    for (let i = 0; i < 50; i++) {
      mirror.write(chunk);
      set.broadcast(chunk);
      // Both clients claim to have read everything, after every chunk.
      set.ack(holder, 1 << 30);
      set.ack(observer, 1 << 30);
    }
    for (const [view, sink] of [[holder, holderSink], [observer, observerSink]] as const) {
      expect(view.lagging).toBe(true);
      expect(sink.bytes).toBeLessThanOrEqual(HIGH_WATERMARK_BYTES + chunk.length);
    }
    await Bun.sleep(120);
    expect(observerSink.controls.filter((c) => c.type === "snapshot")).toHaveLength(1);
    // Once the client really reads, the view is caught up without another ack.
    observerSink.queued = 0;
    await waitFor(() => observerSink.controls.filter((c) => c.type === "snapshot").length === 2, "the catch-up snapshot once drained");
    expect(observer.lagging).toBe(false);
  });

  test("an honest holder on a slow link keeps its output after the PTY pauses: what the PTY had buffered is queued, not a catch-up", async () => {
    // A client that reads slowly and acks only what it read: everything it has not acked is still queued here.
    // The PTY pauses past the watermark, then hands over what it had already buffered (60 KB more).
    const { set, sink, holder, pauses, sent } = await holderSent(16);
    expect(pauses).toEqual(["pause"]);
    expect(holder.lagging).toBe(false);
    expect(holder.catchingUp).toBe(false);
    expect(sink.bytes).toBe(sent);
    // It reads and acks it all: the PTY resumes, and no snapshot was needed.
    sink.queued = 0;
    set.ack(holder, sink.bytes);
    expect(pauses).toEqual(["pause", "resume"]);
    await Bun.sleep(120);
    expect(sink.controls.filter((c) => c.type === "snapshot")).toHaveLength(1);
  });

  test("a holder that reads nothing cannot make the server queue without bound when the PTY's pause does not hold", async () => {
    // It neither reads nor acks, and the pause does not hold (the fake PTY goes on), so output keeps coming.
    const { sink, holder, pauses } = await holderSent(200);
    expect(pauses).toEqual(["pause"]);
    expect(holder.lagging).toBe(true);
    expect(sink.bytes).toBeLessThan(1_000_000);
  });

  test("a holder cut off while its pause lands late is caught up by snapshot once it has read what was queued, and gets live output again", async () => {
    // Output the PTY and the event loop held when the pause came still arrives, which can be more than the holder's
    // connection may hold (bench/terminal.ts sees this with its client on the server's event loop).
    const { set, sink, holder, pauses } = await holderSent(200);
    expect(holder.lagging).toBe(true);
    // The client reads everything queued and acks it: the PTY resumes, and the view is sent the screen it skipped.
    sink.queued = 0;
    set.ack(holder, sink.bytes);
    expect(pauses).toEqual(["pause", "resume"]);
    await waitFor(() => sink.controls.filter((c) => c.type === "snapshot").length === 2, "the catch-up snapshot");
    expect(holder.lagging).toBe(false);
    const before = sink.bytes;
    set.broadcast(new TextEncoder().encode("after\r\n"));
    expect(sink.bytes).toBe(before + 7);
  });

  test("a big snapshot still queued on a slow link does not hold back the output after it", async () => {
    const { mirror, set } = views();
    const sink = queuingSink();
    // The snapshot's JSON (a long scrollback) takes a while to leave; output queues behind it.
    sink.control = (m: ControlMessage) => void (sink.controls.push(m), m.type === "snapshot" && (sink.queued += 6_000_000));
    const view = set.attach(sink, { userId: "u", canWrite: true });
    await waitFor(() => sink.controls.some((c) => c.type === "snapshot"), "the snapshot");
    for (let i = 0; i < 10; i++) {
      const line = new TextEncoder().encode(`line ${i}\r\n`);
      mirror.write(line);
      set.broadcast(line);
    }
    expect(view.lagging).toBe(false);
    expect(sink.bytes).toBeGreaterThan(0);
  });

  test("acks that arrive while a snapshot is queued still bring the holder under the low watermark, and the PTY resumes", async () => {
    const { mirror, set, pauses } = views();
    const sink = Object.assign(recordingSink(), { queued: 0 });
    sink.buffered = () => sink.queued;
    const holder = set.attach(sink, { userId: "u", canWrite: true });
    await waitFor(() => sink.controls.some((c) => c.type === "snapshot"), "the snapshot");
    const chunk = new Uint8Array(1_000).fill(0x79);
    for (let i = 0; i < 101; i++) {
      mirror.write(chunk);
      set.broadcast(chunk);
    }
    expect(pauses).toEqual(["pause"]);
    // 80 KB of control frames (a snapshot, say) wait in the connection; the client acks every frame it read.
    sink.queued = 80_000;
    for (let i = 0; i < 101; i++) set.ack(holder, 1_000);
    expect(holder.unacked).toBe(0);
    expect(pauses).toEqual(["pause", "resume"]);
  });

  test("when the lease holder leaves, the earliest remaining writable view gets the lease and everyone is told", async () => {
    const { set } = views();
    const a = recordingSink();
    const reader = recordingSink();
    const b = recordingSink();
    const first = set.attach(a, { userId: "a", canWrite: true });
    set.attach(reader, { userId: "r", canWrite: false });
    const second = set.attach(b, { userId: "b", canWrite: true });
    expect(reader.controls).toContainEqual({ type: "readOnly" });
    set.detach(first);
    expect(set.leaseHolder?.id).toBe(second.id);
    expect(b.controls.at(-1)).toEqual({ type: "lease", viewId: second.id, userId: "b", you: true });
    expect(reader.controls.at(-1)).toEqual({ type: "lease", viewId: second.id, userId: "b", you: false });
  });

  test("a view that cannot be sent a snapshot is closed with 1011 instead of being left without output, and detached at once", async () => {
    const thread = new ParserThread();
    const mirror = new ScreenMirror({ parser: thread, cols: 80, rows: 24, scrollback: 100 });
    const set = new SessionViews("s", { mirror, instance: "i1", pauseOutput: () => true, resumeOutput: () => {} });
    thread.dispose();
    const closes: [number, string][] = [];
    const errors: string[] = [];
    const log = console.error;
    console.error = (...args: unknown[]) => void errors.push(args.map(String).join(" "));
    try {
      set.attach({ ...recordingSink(), close: (code, reason) => void closes.push([code, reason]) }, { userId: "u", canWrite: true });
      await waitFor(() => closes.length > 0, "the view to be closed");
    } finally {
      console.error = log;
    }
    expect(closes).toEqual([[1011, "The screen could not be sent"]]);
    // Not left holding the lease until its client answers the close.
    expect({ leaseHolder: set.leaseHolder, views: set.size }).toEqual({ leaseHolder: null, views: 0 });
    expect(errors).toEqual([expect.stringContaining("hatch: cannot send session s a snapshot: Error: Cannot snapshot screen: the parser thread is stopped")]);
  });

  test("a demoted view is told readOnly, passes the lease on, and cannot take it back", async () => {
    const { set, pauses } = views();
    const holderSink = recordingSink();
    const holder = set.attach(holderSink, { userId: "u", canWrite: true });
    const reader = set.attach(recordingSink(), { userId: "r", canWrite: false });
    const next = set.attach(recordingSink(), { userId: "w", canWrite: true });
    await waitFor(() => holderSink.controls.some((c) => c.type === "snapshot"), "the snapshot");
    // The holder is paused on a flood when it is demoted: the PTY must not stay paused for a view that can no longer drive it.
    set.broadcast(new Uint8Array(HIGH_WATERMARK_BYTES + 1));
    expect(pauses).toEqual(["pause"]);
    set.demote(holder);
    expect(holderSink.controls.at(-2)).toEqual({ type: "readOnly" });
    expect(set.leaseHolder).toBe(next);
    expect(pauses).toEqual(["pause", "resume"]);
    expect(set.takeControl(holder)).toBe(false);
    expect(set.mayDrive(holder)).toBe(false);
    // Demoting a view that does not hold the lease leaves the lease where it is.
    const third = set.attach(recordingSink(), { userId: "t", canWrite: true });
    set.demote(third);
    expect(set.leaseHolder).toBe(next);
    // With no writable view left, nobody holds it.
    set.demote(next);
    expect(set.leaseHolder).toBe(null);
    expect(set.takeControl(reader)).toBe(false);
  });
});
