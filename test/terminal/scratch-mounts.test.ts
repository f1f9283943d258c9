import { describe, expect, spyOn, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSession, TERMINAL } from "../helpers/terminal.ts";
import { startWorld } from "../helpers/world.ts";

/** Mount points below `dir`, from /proc/self/mounts. */
function mountsUnder(dir: string): string[] {
  return Bun.spawnSync(["findmnt", "-rn", "-o", "TARGET"]).stdout.toString().split("\n").filter((t) => t.startsWith(`${dir}/`));
}

describe("scratch removal", () => {
  test("ending a session never deletes what is mounted inside its scratch dir (a bind or network mount left in $TMPDIR)", async () => {
    const precious = mkdtempSync(join(tmpdir(), "hatch-precious-"));
    writeFileSync(join(precious, "keep-me"), "data that lives elsewhere");
    const world = await startWorld();
    const scratchBase = join(world.config.dataDir, "scratch");
    try {
      const owner = await world.signedIn(await world.project(), "owner");
      await createSession(owner.client, { sourceSlug: "container-root", id: "m" });
      // Container Root runs as the service's user (root here): a mount in the session's temp dir, as for an NFS export or a bind mount.
      const mounted = await owner.client.post(`${TERMINAL}/sessions/m/exec`, { command: `mkdir "$TMPDIR/m" && mount --bind ${precious} "$TMPDIR/m" && ls "$TMPDIR/m"` });
      expect(mounted.body).toMatchObject({ exitCode: 0, output: "keep-me\n" });
      const logged: string[] = [];
      const failed = spyOn(console, "error").mockImplementation((...args: unknown[]) => void logged.push(args.map(String).join(" ")));
      try {
        expect((await owner.client.delete(`${TERMINAL}/sessions/m`)).status).toBe(200);
      } finally {
        failed.mockRestore();
      }
      expect(readdirSync(precious)).toEqual(["keep-me"]);
      // The scratch dir stays, and the operator is told why.
      expect(logged.some((line) => line.includes("is mounted inside it"))).toBe(true);
    } finally {
      for (const target of mountsUnder(scratchBase).reverse()) Bun.spawnSync(["umount", "-l", target]);
      await world[Symbol.asyncDispose]();
      if (existsSync(precious)) rmSync(precious, { recursive: true, force: true });
    }
  });
});
