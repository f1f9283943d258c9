import { describe, expect, test } from "bun:test";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createScratchDir, isScratchDirName, SCRATCH_DIR_PREFIX, sweepOrphanScratch } from "../../src/pty/scratch-dir.ts";

/** A throwaway directory, removed by `await using`. */
function tempDir() {
  const path = mkdtempSync(join(tmpdir(), "hatch-scratch-test-"));
  return { path, [Symbol.asyncDispose]: async () => rmSync(path, { recursive: true, force: true }) };
}

const mode = (path: string) => statSync(path).mode & 0o777;
const orphanName = (digit: string) => SCRATCH_DIR_PREFIX + digit.repeat(32);

/** Run `body` with the process umask set to `mask`, restoring it afterwards. */
async function withUmask<T>(mask: number, body: () => Promise<T>): Promise<T> {
  const previous = process.umask(mask);
  try {
    return await body();
  } finally {
    process.umask(previous);
  }
}

describe("createScratchDir", () => {
  test("creates the base and an unguessable directory inside it, both mode 0700", async () => {
    await using tmp = tempDir();
    const base = join(tmp.path, "data", "scratch");
    await using scratch = await createScratchDir(base);
    const name = scratch.path.slice(base.length + 1);
    expect({ parent: scratch.path.startsWith(base + "/"), pattern: /^hatch-scratch-[0-9a-f]{32}$/.test(name), base: mode(base), dir: mode(scratch.path) }).toEqual({
      parent: true,
      pattern: true,
      base: 0o700,
      dir: 0o700,
    });
  });

  test("is 0700 whatever the umask, permissive or restrictive", async () => {
    await using tmp = tempDir();
    for (const mask of [0o000, 0o022, 0o077, 0o277]) {
      const scratch = await withUmask(mask, () => createScratchDir(tmp.path));
      expect({ mask, mode: mode(scratch.path) }).toEqual({ mask, mode: 0o700 });
      await scratch.remove();
    }
  });

  test("tightens a base directory that already exists with a wider mode", async () => {
    await using tmp = tempDir();
    const base = join(tmp.path, "scratch");
    mkdirSync(base, { mode: 0o755 });
    await using _scratch = await createScratchDir(base);
    expect(mode(base)).toBe(0o700);
  });

  test("two directories never share a name", async () => {
    await using tmp = tempDir();
    await using a = await createScratchDir(tmp.path);
    await using b = await createScratchDir(tmp.path);
    expect(a.path).not.toBe(b.path);
  });

  test("remove deletes everything inside and is idempotent, concurrently too", async () => {
    await using tmp = tempDir();
    const scratch = await createScratchDir(tmp.path);
    mkdirSync(join(scratch.path, "a", "b"), { recursive: true });
    writeFileSync(join(scratch.path, "a", "b", "image.png"), "png");
    await Promise.all([scratch.remove(), scratch.remove()]);
    await scratch.remove();
    await scratch[Symbol.asyncDispose]();
    expect(existsSync(scratch.path)).toBe(false);
  });

  test("await using removes the directory at the end of the scope", async () => {
    await using tmp = tempDir();
    let path = "";
    {
      await using scratch = await createScratchDir(tmp.path);
      path = scratch.path;
      expect(existsSync(path)).toBe(true);
    }
    expect(existsSync(path)).toBe(false);
  });

  test("a scratch directory swapped for a symlink by the shell: the link goes, its target survives", async () => {
    await using tmp = tempDir();
    const precious = join(tmp.path, "precious");
    mkdirSync(precious);
    writeFileSync(join(precious, "keep.txt"), "keep");
    const scratch = await createScratchDir(join(tmp.path, "scratch"));
    rmSync(scratch.path, { recursive: true });
    symlinkSync(precious, scratch.path);
    await scratch.remove();
    expect({ link: existsSync(scratch.path), target: existsSync(join(precious, "keep.txt")) }).toEqual({ link: false, target: true });
  });
});

describe("removing a scratch dir its program locked", () => {
  test("a subdirectory chmod 000 by the program (which stops a server that is not root) is opened and removed; a symlink's target is not touched", () => {
    const base = mkdtempSync(join(tmpdir(), "hatch-scratch-locked-"));
    const outside = join(base, "outside");
    mkdirSync(outside, { mode: 0o555 });
    // As an unprivileged user (root ignores the mode bits, so it would not show the problem).
    const script = [
      `import { createScratchDir } from ${JSON.stringify(join(import.meta.dir, "../../src/pty/scratch-dir.ts"))};`,
      `import { chmodSync, existsSync, mkdirSync, symlinkSync } from "node:fs";`,
      `const scratch = await createScratchDir(${JSON.stringify(join(base, "scratch"))});`,
      `mkdirSync(scratch.path + "/a/b", { recursive: true });`,
      `symlinkSync(${JSON.stringify(outside)}, scratch.path + "/a/link");`,
      `chmodSync(scratch.path + "/a", 0);`,
      `await scratch.remove();`,
      `console.log(existsSync(scratch.path) ? "LEFT" : "REMOVED");`,
    ].join("\n");
    const file = join(base, "remove.ts");
    writeFileSync(file, script);
    Bun.spawnSync(["chown", "-R", "65534:65534", base]);
    Bun.spawnSync(["chown", "0:0", outside]);
    const asNobody = process.getuid!() === 0 ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : [];
    const result = Bun.spawnSync([...asNobody, process.execPath, file], { env: { PATH: process.env.PATH!, HOME: base } });
    try {
      expect({ out: result.stdout.toString().trim(), err: result.stderr.toString() }).toEqual({ out: "REMOVED", err: "" });
      expect(statSync(outside).mode & 0o777).toBe(0o555);
    } finally {
      Bun.spawnSync(["chmod", "-R", "u+rwx", base]);
      rmSync(base, { recursive: true, force: true });
    }
  });
});

describe("sweepOrphanScratch", () => {
  test("removes orphaned scratch directories and nothing else", async () => {
    await using tmp = tempDir();
    const base = join(tmp.path, "scratch");
    const outside = join(tmp.path, "outside");
    mkdirSync(outside);
    writeFileSync(join(outside, "keep.txt"), "keep");
    const live = await createScratchDir(base);
    const orphan = join(base, orphanName("a"));
    mkdirSync(join(orphan, "nested"), { recursive: true });
    writeFileSync(join(orphan, "nested", "tmp.bin"), "x");
    mkdirSync(join(base, "hatch-scratch-notrandom"));
    mkdirSync(join(base, orphanName("B")));
    mkdirSync(join(base, "unrelated"));
    writeFileSync(join(base, orphanName("c")), "a file, not a directory");
    symlinkSync(outside, join(base, orphanName("d")));

    const { removed } = await sweepOrphanScratch(base, { isLive: (path) => path === live.path });

    expect(removed).toEqual([orphan]);
    expect(readdirSync(base).sort()).toEqual(
      [live.path.slice(base.length + 1), "hatch-scratch-notrandom", orphanName("B"), "unrelated", orphanName("c"), orphanName("d")].sort(),
    );
    expect(lstatSync(join(base, orphanName("d"))).isSymbolicLink()).toBe(true);
    expect(existsSync(join(outside, "keep.txt"))).toBe(true);
    await live.remove();
  });

  test("ends the processes a crashed server's session left running from an orphaned dir, and no one else's", async () => {
    await using tmp = tempDir();
    const base = join(tmp.path, "scratch");
    const orphan = join(base, orphanName("e"));
    const live = await createScratchDir(base);
    mkdirSync(orphan, { recursive: true });
    // As a session's programs are started: their temp dir is the scratch dir, whatever process group they are in.
    const left = Bun.spawn(["sleep", "300"], { env: { PATH: process.env.PATH!, TMPDIR: orphan }, detached: true });
    const kept = Bun.spawn(["sleep", "300"], { env: { PATH: process.env.PATH!, TMPDIR: live.path }, detached: true });
    try {
      await sweepOrphanScratch(base, { isLive: (path) => path === live.path });
      expect(await left.exited).toBe(137);
      expect(existsSync(orphan)).toBe(false);
      expect(kept.killed || kept.exitCode !== null).toBe(false);
    } finally {
      left.kill("SIGKILL");
      kept.kill("SIGKILL");
      await live.remove();
    }
  });

  test("a base that does not exist yet has nothing to sweep", async () => {
    await using tmp = tempDir();
    expect(await sweepOrphanScratch(join(tmp.path, "missing"), { isLive: () => false })).toEqual({ removed: [] });
  });

  test("looks at no more than maxEntries entries", async () => {
    await using tmp = tempDir();
    for (const digit of ["1", "2", "3"]) mkdirSync(join(tmp.path, orphanName(digit)));
    const first = await sweepOrphanScratch(tmp.path, { isLive: () => false, maxEntries: 1 });
    expect(first.removed.length).toBe(1);
    expect(readdirSync(tmp.path).length).toBe(2);
    expect((await sweepOrphanScratch(tmp.path, { isLive: () => false })).removed.length).toBe(2);
  });

  test("refuses a nonsensical bound", async () => {
    await using tmp = tempDir();
    await expect(sweepOrphanScratch(tmp.path, { isLive: () => false, maxEntries: -1 })).rejects.toThrow("maxEntries -1");
  });
});

test("isScratchDirName accepts exactly the generated pattern", () => {
  expect(["hatch-scratch-" + "0f".repeat(16), "hatch-scratch-" + "0F".repeat(16), "hatch-scratch-", "x" + orphanName("a"), orphanName("a") + "/"].map(isScratchDirName)).toEqual([
    true,
    false,
    false,
    false,
    false,
  ]);
});

describe("removing a scratch dir its program locked, while the program still runs", () => {
  test("a directory the walk already listed, swapped for a symlink before its subdirectories are opened, does not make the service chmod the link's target", () => {
    const base = mkdtempSync(join(tmpdir(), "hatch-scratch-swap-"));
    // Directories of the service's user outside the scratch dir that other accounts read (a shared source, say).
    const victim = join(base, "victim");
    const names = Array.from({ length: 3000 }, (_, i) => `d${i}`);
    mkdirSync(victim, { mode: 0o755 });
    for (const name of names) mkdirSync(join(victim, name), { mode: 0o755 });
    // The program (same uid as a server that is not root) locks `a`, so the removal walks the tree, and swaps
    // `a` for a link to the victim once the walk has opened and listed it.
    const script = [
      `import { createScratchDir } from ${JSON.stringify(join(import.meta.dir, "../../src/pty/scratch-dir.ts"))};`,
      `import { chmodSync, mkdirSync, renameSync, statSync, symlinkSync } from "node:fs";`,
      `const scratch = await createScratchDir(${JSON.stringify(join(base, "scratch"))});`,
      `const a = scratch.path + "/a";`,
      `mkdirSync(a);`,
      `for (const name of ${JSON.stringify(names)}) mkdirSync(a + "/" + name);`,
      `chmodSync(a, 0);`,
      `let swapped = false;`,
      `const poll = setInterval(() => {`,
      `  if (swapped || (statSync(a).mode & 0o777) !== 0o700) return;`,
      `  swapped = true;`,
      `  setTimeout(() => { renameSync(a, a + ".moved"); symlinkSync(${JSON.stringify(victim)}, a); }, 5);`,
      `}, 0);`,
      `await scratch.remove();`,
      `clearInterval(poll);`,
      `console.log(swapped ? "SWAPPED" : "NOT-SWAPPED");`,
    ].join("\n");
    const file = join(base, "remove.ts");
    writeFileSync(file, script);
    Bun.spawnSync(["chown", "-R", "65534:65534", base]);
    const asNobody = process.getuid!() === 0 ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : [];
    const result = Bun.spawnSync([...asNobody, process.execPath, file], { env: { PATH: process.env.PATH!, HOME: base } });
    try {
      const narrowed = names.filter((name) => mode(join(victim, name)) !== 0o755);
      expect({ out: result.stdout.toString().trim(), narrowed: narrowed.length, example: narrowed.slice(0, 2).map((n) => `${n} ${mode(join(victim, n)).toString(8)}`) }).toEqual({
        out: "SWAPPED",
        narrowed: 0,
        example: [],
      });
    } finally {
      Bun.spawnSync(["chmod", "-R", "u+rwx", base]);
      rmSync(base, { recursive: true, force: true });
    }
  }, 60000);
});
