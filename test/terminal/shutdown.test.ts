import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CLOSE_SESSION_ENDED } from "../../src/pty/index.ts";
import { attached, createSession, runAndSee, TERMINAL } from "../helpers/terminal.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { startWorld } from "../helpers/world.ts";
import { isAlive } from "../helpers/workflows.ts";

describe("shutdown", () => {
  test("stop() does not return while a session that is being terminated still has its program running", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "slow" });
    const view = await attached(world, owner, "slow");
    const pidFile = join(world.tempDir("pid"), "pid");
    // A program that ignores SIGHUP: its end waits out the kill grace before SIGKILL.
    await runAndSee(view, `trap '' HUP; echo $$ > ${pidFile}; echo trapped-$((5*5))`, "trapped-25");
    const pid = Number(readFileSync(pidFile, "utf8"));
    view.close();
    const { sessions } = world.hatch.terminal;
    await waitFor(() => sessions.listAll().every((s) => s.views === 0), "the detach");

    // A terminate is under way (the same holds for an idle reap or a former member's end) when the operator stops hatch.
    const terminating = owner.client.delete(`${TERMINAL}/sessions/slow`).catch(() => null);
    await waitFor(() => sessions.count() === 0, "the terminate to begin");
    await world.hatch.stop();
    // `hatch serve` calls process.exit(0) right here: whatever is still running now outlives the service.
    const scratch = readdirSync(join(world.config.dataDir, "scratch"));
    expect({ shellAlive: isAlive(pid), scratchLeft: scratch.length }).toEqual({ shellAlive: false, scratchLeft: 0 });
    await terminating;
  });

  test("stop() does not return while a session whose program exited by itself is still being ended (its scratch dir left behind)", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "done" });
    const view = await attached(world, owner, "done");
    await runAndSee(view, "echo ready-$((6*7))", "ready-42");
    const { sessions } = world.hatch.terminal;
    // The program ends by itself (the user typed exit) just as the operator stops hatch.
    view.type("exit\r");
    await waitFor(() => sessions.count() === 0, "the program's exit to begin its session's end");
    await world.hatch.stop();
    // `hatch serve` calls process.exit(0) right here: what the session's end has not done yet is never done.
    const scratch = readdirSync(join(world.config.dataDir, "scratch"));
    expect({ scratchLeft: scratch.length }).toEqual({ scratchLeft: 0 });
  });

  test("an attached view is told its session ended because the service is stopping (exit, then close 4000), not dropped like a lost network", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "watched" });
    const view = await attached(world, owner, "watched");
    await world.hatch.stop();
    const code = await view.closed;
    const exit = view.controls.find((c) => c.type === "exit");
    expect({ code, exitReason: exit?.reason ?? null }).toEqual({ code: CLOSE_SESSION_ENDED, exitReason: "The service is shutting down" });
  });
});
