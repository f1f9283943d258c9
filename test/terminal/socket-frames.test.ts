import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { RawWebSocket } from "../helpers/raw-websocket.ts";
import { attached, ownerRootSession, runAndSee, terminalUrl } from "../helpers/terminal.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { INPUT_TOO_FAST } from "../../src/pty/index.ts";
import { MAX_GATED_MESSAGES } from "../../src/terminal/access-gate.ts";
import { startWorld } from "../helpers/world.ts";

describe("client frames the terminal WebSocket refuses", () => {
  test("a view closed with 4400 for a malformed frame is detached at once: input it sends after the close never reaches the PTY, and the lease passes on", async () => {
    await using world = await startWorld();
    const { owner, session } = await ownerRootSession(world);
    const raw = await RawWebSocket.open(terminalUrl(world, "s"), { cookie: owner.client.cookieHeader });
    await waitFor(() => raw.texts.some((t) => JSON.parse(t).type === "snapshot"), "the raw client's snapshot");
    const other = await attached(world, owner, "s");
    const holderBefore = session.views.leaseHolder!.id;
    try {
      raw.sendText("this is not JSON");
      await waitFor(() => raw.closeCode, "the server's close frame");
      expect(raw.closeCode).toBe(4400);
      // The client neither answers the close nor stops sending: ws waits 30 s for its close frame.
      const marker = join(world.tempDir("marker"), "typed-after-4400");
      raw.sendText(JSON.stringify({ type: "input", data: `touch ${marker}\r` }));
      await Bun.sleep(1500);
      expect({ typedAfterClose: existsSync(marker), viewsLeft: session.views.size, holderIsTheClosedView: session.views.leaseHolder?.id === holderBefore }).toEqual({
        typedAfterClose: false,
        viewsLeft: 1,
        holderIsTheClosedView: false,
      });
      await runAndSee(other, "echo other-$((2+2))", "other-4");
    } finally {
      raw.destroy();
    }
  });

  test("one input message over 1 MiB (a large paste) is dropped whole with a notice, as any message over the 64 KiB burst is, not answered by closing the connection", async () => {
    await using world = await startWorld();
    const { owner } = await ownerRootSession(world);
    const terminal = await attached(world, owner, "s");
    terminal.type("x".repeat((1 << 20) + 10));
    const outcome = await waitFor(
      () => terminal.closeCode !== null ? { closed: terminal.closeCode, reason: terminal.closeReason } : terminal.controls.some((c) => c.type === "notice") ? { closed: null, notice: true } : null,
      "a notice or a close",
    );
    expect(outcome).toEqual({ closed: null, notice: true });
    await runAndSee(terminal, "echo still-$((3+4))", "still-7");
  });

  test("a flood of input frames read in one go is capped while its access decision is under way: the rest are dropped, with one notice for the flood", async () => {
    await using world = await startWorld();
    const { owner } = await ownerRootSession(world);
    const raw = await RawWebSocket.open(terminalUrl(world, "s"), { cookie: owner.client.cookieHeader });
    await waitFor(() => raw.texts.some((t) => JSON.parse(t).type === "snapshot"), "the raw client's snapshot");
    raw.sendTexts(Array.from({ length: MAX_GATED_MESSAGES + 50 }, () => JSON.stringify({ type: "input", data: "x" })));
    const notice = await waitFor(() => raw.texts.map((t) => JSON.parse(t)).find((m) => m.type === "notice"), "a notice");
    expect(notice).toEqual({ type: "notice", message: INPUT_TOO_FAST });
    // The 256 taken reached the shell; the 50 refused were told of once.
    await waitFor(() => raw.tail.includes("x".repeat(MAX_GATED_MESSAGES)), "the taken input's echo");
    expect(raw.texts.map((t) => JSON.parse(t)).filter((m) => m.type === "notice")).toHaveLength(1);
    raw.destroy();
  });
});
