import { describe, expect, test } from "bun:test";
import { attached, createSession } from "../helpers/terminal.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { startWorld } from "../helpers/world.ts";
import { HIGH_WATERMARK_BYTES } from "../../src/pty/index.ts";

describe("flow control", () => {
  test("a flood (yes for 10 s) leaves server memory bounded and Ctrl+C still stops it", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "flood" });
    const holder = await attached(world, owner, "flood");
    const observer = await attached(world, owner, "flood", { autoAck: false });
    const observerStart = observer.offset;
    Bun.gc(true);
    const rssBefore = process.memoryUsage().rss;
    holder.type("yes\r");
    const started = performance.now();
    let peak = 0;
    await waitFor(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
      return performance.now() - started > 10_000;
    }, "ten seconds of flood", 15_000);
    // The observer never acked: it was cut off at the high watermark instead of stalling the holder.
    expect(observer.offset - observerStart).toBeLessThanOrEqual(HIGH_WATERMARK_BYTES);
    expect(holder.offset).toBeGreaterThan(10 * HIGH_WATERMARK_BYTES);
    holder.type("\x03");
    holder.type("echo stopped-$((9*9))\r");
    await holder.sees("stopped-81", 15_000);
    // Bounded: a 10 s flood through a 10,000-line mirror must not grow the server by more than its buffers.
    expect(peak - rssBefore).toBeLessThan(256 * 1024 * 1024);
    // Once it acks, the lagging observer is cut over to a fresh snapshot.
    observer.ack();
    await observer.control("snapshot", (c) => c.offset > HIGH_WATERMARK_BYTES);
  }, 40_000);
});
