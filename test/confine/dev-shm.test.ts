/**
 * bwrap gives each sandbox a /dev of its own, on a tmpfs sized at half the
 * host's RAM. Its /dev/shm is writable (POSIX shared memory needs it), so it
 * gets a tmpfs of its own with a cap: otherwise any tab, a read-only one
 * included, could pin gigabytes of host memory that no process's RSS shows.
 */
import { describe, expect, test } from "bun:test";
import { DEV_SHM_BYTES } from "../../src/confine/index.ts";
import { Sandbox } from "./sandbox-fixture.ts";

const MIB = 1024 * 1024;

describe("confined bash (landlock+bwrap)", () => {
  test("a read-only tab's /dev/shm holds shared memory up to its cap, and no more of the host's RAM", async () => {
    await using sb = await Sandbox.create("landlock+bwrap");
    const tooMuch = DEV_SHM_BYTES / MIB + 36;
    const r = await sb.run(
      `echo hi > /dev/shm/small && cat /dev/shm/small; head -c ${tooMuch}M /dev/zero > /dev/shm/fill 2>/dev/null || echo refused; du -m /dev/shm/fill | cut -f1`,
      { roots: [{ path: sb.root, write: false }] },
    );
    expect(r.stdout).toBe(`hi\nrefused\n${DEV_SHM_BYTES / MIB}\n`);
  });
});

describe("confined bash (landlock)", () => {
  test("a tab cannot write the host's /dev/shm, which every session shares", async () => {
    await using sb = await Sandbox.create("landlock");
    const r = await sb.run("echo hi > /dev/shm/hatch-probe 2>/dev/null && echo wrote || echo refused", { roots: [{ path: sb.root, write: false }] });
    expect(r.stdout).toBe("refused\n");
  });
});
