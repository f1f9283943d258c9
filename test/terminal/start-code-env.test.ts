import { describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createSession, TERMINAL } from "../helpers/terminal.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { startWorld } from "../helpers/world.ts";

describe("the create body's env", () => {
  test("cannot point HOME at an rc file that the shell runs before the first line, past input screening (as ZDOTDIR cannot for zsh)", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    const marker = join(world.tempDir("ran"), "ran-at-start");
    const home = world.tempDir("home");
    // What the input screen blocks when typed; here nobody types it.
    writeFileSync(join(home, ".bashrc"), `touch ${marker}\n`);
    expect((await createSession(owner.client, { sourceSlug: "container-root", id: "h", env: { HOME: home }, shell: "/bin/bash" })).status).toBe(201);
    await waitFor(async () => (await owner.client.get(`${TERMINAL}/sessions/h/read`)).body.lines?.some((line: string) => line.trim() !== ""), "the shell's first prompt");
    expect(existsSync(marker)).toBe(false);
  });
});
