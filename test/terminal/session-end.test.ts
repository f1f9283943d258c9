import { describe, expect, test } from "bun:test";
import { attached, ownerRootSession, runAndSee } from "../helpers/terminal.ts";
import { startWorld } from "../helpers/world.ts";

describe("a session that ends", () => {
  test("every view, an honest observer that fell behind during the last burst included, shows the program's final output before exit", async () => {
    await using world = await startWorld();
    const { owner } = await ownerRootSession(world);
    const holder = await attached(world, owner, "s");
    // A second tab (or a supervisor) that acks as it reads, as the widget does.
    const observer = await attached(world, owner, "s");
    await runAndSee(holder, "echo ready-$((1+1))", "ready-2");
    await observer.sees("ready-2");
    holder.type(`seq 1 200000; printf 'BYE-%s\\n' $((6*7)); exit 3\r`);
    const exit = await observer.control("exit");
    await observer.closed;
    expect(exit.code).toBe(3);
    expect(holder.output).toContain("BYE-42");
    // What the observer's terminal shows when the session is gone: its last snapshot and the output since.
    const shown = observer.screen + observer.output;
    expect({ showsFinalOutput: shown.includes("BYE-42"), tail: shown.slice(-40) }).toMatchObject({ showsFinalOutput: true });
  }, 30_000);

  test("a view far behind (it acked nothing of the last burst) still gets the screen the program left before exit", async () => {
    await using world = await startWorld();
    const { owner } = await ownerRootSession(world);
    const holder = await attached(world, owner, "s");
    // Past 100,000 unacknowledged bytes an observer stops getting output: this one is certain to be behind at the end.
    const observer = await attached(world, owner, "s", { autoAck: false });
    holder.type(`seq 1 100000; printf 'BYE-%s\\n' $((6*7)); exit 3\r`);
    const exit = await observer.control("exit");
    expect(exit.code).toBe(3);
    expect({ lastSnapshotShowsTheEnd: observer.screen.includes("BYE-42") || observer.output.includes("BYE-42") }).toEqual({ lastSnapshotShowsTheEnd: true });
  }, 30_000);
});
