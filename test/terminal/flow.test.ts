import { describe, expect, test } from "bun:test";
import { RawWebSocket } from "../helpers/raw-websocket.ts";
import { attached, createSession, terminalUrl } from "../helpers/terminal.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { startWorld } from "../helpers/world.ts";
import { ACK_EVERY_BYTES, HIGH_WATERMARK_BYTES } from "../../src/pty/index.ts";

/** How much of a flood the first test waits for: a hundred times what a view may lag behind. */
const FLOOD_BYTES = 100 * HIGH_WATERMARK_BYTES;
/** The flood a lying client is offered: several times what loopback sockets can hold for it (4 MiB to send, more to receive). */
const LIAR_FLOOD_BYTES = 64 * 1024 * 1024;

describe("flow control", () => {
  test("a flood (yes, many times the high watermark) leaves server memory bounded and Ctrl+C still stops it", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "flood" });
    const holder = await attached(world, owner, "flood");
    const observer = await attached(world, owner, "flood", { autoAck: false });
    const observerStart = observer.offset;
    Bun.gc(true);
    const rssBefore = process.memoryUsage().rss;
    holder.type("yes\r");
    // A byte target, not a duration (waitFor fails the test if it is never reached): the holder gets far past what the observer may lag.
    const target = holder.offset + FLOOD_BYTES;
    let peak = 0;
    await waitFor(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
      return holder.offset > target;
    }, `the holder to receive ${FLOOD_BYTES} bytes of flood`, 30_000);
    // The observer never acked: it was cut off at the high watermark instead of stalling the holder.
    // (A view that owes no ack yet, under ACK_EVERY_BYTES unacked, still takes one whole read, which can itself pass the watermark.)
    expect(observer.offset - observerStart).toBeLessThanOrEqual(Math.max(HIGH_WATERMARK_BYTES, observer.largestFrame + ACK_EVERY_BYTES));
    holder.type("\x03");
    holder.type("echo stopped-$((9*9))\r");
    await holder.sees("stopped-81", 15_000);
    // Bounded: a flood of 100 watermarks through a 10,000-line mirror must not grow the server by more than its buffers.
    expect(peak - rssBefore).toBeLessThan(256 * 1024 * 1024);
    // Once it acks, the lagging observer is cut over to a fresh snapshot.
    observer.ack();
    await observer.control("snapshot", (c) => c.offset > HIGH_WATERMARK_BYTES);
  }, 60_000);

  test("a client that acks output it never read cannot make the server queue the flood for it: it lags, and catches up by snapshot once it reads", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "liar" });
    const holder = await attached(world, owner, "liar");
    const liar = await RawWebSocket.open(terminalUrl(world, "liar"), { cookie: owner.client.cookieHeader });
    liar.pause();
    // It claims to have read everything, over and over, while it reads nothing.
    const lie = setInterval(() => liar.sendText(JSON.stringify({ type: "ack", bytes: 1 << 30 })), 1);
    world.onDispose(() => clearInterval(lie));
    holder.type("yes\r");
    // A byte target, not a duration (waitFor fails the test if it is never reached).
    const target = holder.offset + LIAR_FLOOD_BYTES;
    await waitFor(() => holder.offset > target, `the holder to receive ${LIAR_FLOOD_BYTES} bytes of flood`, 30_000);
    holder.type("\x03");
    holder.type("echo stopped-$((9*9))\r");
    await holder.sees("stopped-81", 15_000);
    clearInterval(lie);
    // From here on it reads, and acks what it read, as the widget does.
    liar.resume();
    let acked = 0;
    await waitFor(() => {
      if (liar.binaryBytes > acked) liar.sendText(JSON.stringify({ type: "ack", bytes: liar.binaryBytes - acked }));
      acked = liar.binaryBytes;
      return liar.tail.includes("stopped-81") || liar.texts.some((t) => t.includes("stopped-81"));
    }, "the reading client to see the end of the flood", 15_000);
    // What was queued for it is bounded by the sockets' buffers and the watermark, not by the flood.
    expect(liar.receivedBytes).toBeLessThan(LIAR_FLOOD_BYTES / 4);
    expect(liar.texts.some((t) => JSON.parse(t).type === "snapshot")).toBe(true);
    liar.destroy();
  }, 60_000);

  test("a flood from a program that turned flow control off is not paused, yet the mirror's backlog stays bounded and the session lives", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "raw-flood" });
    const session = world.hatch.terminal.sessions.find({ userId: owner.user.id, projectId: project.id, agentId: null, id: "raw-flood" })!;
    const holder = await attached(world, owner, "raw-flood");
    // Without IXON the program asked for no flow control, so hatch does not pause its tty: neither the lease nor the mirror can.
    holder.type("stty -ixon; yes\r");
    // A byte target, not a duration (waitFor fails the test if it is never reached): more than the backlog bound goes through the mirror.
    const target = session.mirror.offset + 16 * 1024 * 1024;
    let peakBacklog = 0;
    await waitFor(() => {
      peakBacklog = Math.max(peakBacklog, session.mirror.backlog);
      return session.mirror.offset > target;
    }, "16 MiB of flood through the mirror", 30_000);
    expect(session.destroyed).toBe(false);
    expect(peakBacklog).toBeLessThanOrEqual(16 * 1024 * 1024);
    // The holder's keys get through even while a catch-up snapshot is on its way to it (most of the time
    // under this flood). Each is typed once: the line only prints stopped-64 once `yes` has exited.
    holder.type("\x03");
    holder.type("stty ixon; echo stopped-$((8*8))\r");
    await holder.sees("stopped-64", 15_000);
    expect(await session.mirror.readLines(5)).toContain("stopped-64");
  }, 60_000);
});

describe("pausing the PTY puts no key on the line", () => {
  /**
   * As the lease holder who acks nothing yet, run `line` (a burst past the high watermark, then `then`, then
   * `cat -v`, which shows a control key it reads as ^X); once the burst has reached the holder and the server
   * paused the PTY, wait a while (the program goes on where it writes nothing), then ack (the PTY resumes),
   * type a line, and answer what the holder was shown (a catch-up snapshot may stand for some of it).
   */
  async function pauseAndResume(then: string, before = "") {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "p" });
    const holder = await attached(world, owner, "p", { autoAck: false });
    holder.ack();
    const start = holder.output.length;
    holder.type(`${before}head -c ${HIGH_WATERMARK_BYTES + 20_000} /dev/zero | tr '\\0' y; ${then}; echo; echo ready-$((1+2)); cat -v\r`);
    await waitFor(() => holder.output.length - start >= HIGH_WATERMARK_BYTES, "the burst to reach the holder");
    await Bun.sleep(1500);
    holder.ack();
    await holder.sees(/ready-3/, 15_000);
    holder.type("typed\r");
    await holder.sees(/typed\r?\n[^]*typed/, 10_000);
    return holder.output;
  }

  test("a program that turns tty flow control off while the PTY is paused (as vim does as it starts) reads no stray ^Q when it resumes", async () => {
    const shown = await pauseAndResume("stty -ixon; sleep 1");
    // The tty echoes a control key as ^X, and cat -v prints it so: the line cat read is the one typed.
    expect({ strayKeys: shown.match(/\^[QS]/g) ?? [], catRead: shown.endsWith("typed\r\ntyped\r\n") }).toEqual({ strayKeys: [], catRead: true });
  }, 40_000);

  test("a tty whose stop and start characters were changed (`stty stop undef start undef`, to free Ctrl+S for history search) reads no ^S or ^Q", async () => {
    const shown = await pauseAndResume("sleep 1", "stty stop undef start undef; ");
    expect({ strayKeys: shown.match(/\^[QS]/g) ?? [], catRead: shown.endsWith("typed\r\ntyped\r\n") }).toEqual({ strayKeys: [], catRead: true });
  }, 40_000);
});
