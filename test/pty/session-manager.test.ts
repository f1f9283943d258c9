import { expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HatchError } from "../../src/platform/index.ts";
import { bunTerminalBackend, createPtySpawner, INPUT_NOT_READ, openProcessCgroups, type PtyProcess, SessionManager } from "../../src/pty/index.ts";
import { ParserThread } from "../../src/screen/index.ts";
import { managerOptions, shellAtRoot } from "../helpers/session-manager.ts";
import { waitFor } from "../helpers/wait-for.ts";

/** A parser thread that counts the terminals open on it. */
class CountingParser extends ParserThread {
  openTerminals = 0;
  override open(...args: Parameters<ParserThread["open"]>) {
    const terminal = super.open(...args);
    this.openTerminals++;
    let closed = false;
    return {
      ...terminal,
      close: () => {
        if (!closed) this.openTerminals--;
        closed = true;
        terminal.close();
      },
    };
  }
}

test("a create whose spawn fails leaves no scratch dir, no cgroup and no terminal open on the parser thread", async () => {
  const base = mkdtempSync(join(tmpdir(), "hatch-manager-"));
  using parser = new CountingParser();
  const cgroups = await openProcessCgroups({ dataDir: base });
  const refuse = () => {
    throw new HatchError("root_invalid", 400, "Cannot use root: it leads outside the source");
  };
  const manager = new SessionManager(managerOptions({ base, parser, spawner: refuse, cgroups }));
  try {
    for (let i = 0; i < 5; i++) {
      const create = manager.create(shellAtRoot(`s${i}`));
      await expect(create).rejects.toThrow("outside the source");
    }
    expect(readdirSync(base)).toEqual([]);
    expect(parser.openTerminals).toBe(0);
    if (cgroups.dir) expect(readdirSync(cgroups.dir, { withFileTypes: true }).filter((entry) => entry.isDirectory())).toEqual([]);
  } finally {
    await cgroups.close();
    rmSync(base, { recursive: true, force: true });
  }
});

test("shutdown refuses new creates with 503 and ends a create that was still spawning, so no shell outlives the service", async () => {
  const base = mkdtempSync(join(tmpdir(), "hatch-manager-"));
  using parser = new ParserThread();
  const spawned: PtyProcess[] = [];
  const spawner = createPtySpawner((options) => {
    const process = bunTerminalBackend(options);
    spawned.push(process);
    return process;
  }, null);
  const cgroups = await openProcessCgroups({ dataDir: base });
  const manager = new SessionManager(managerOptions({ base, parser, spawner, cgroups }));
  try {
    await manager.create(shellAtRoot("live"));
    // create() runs up to its first await (the scratch dir) before dispose() begins: it is mid-spawn.
    const midSpawn = manager.create(shellAtRoot("mid-spawn")).then(() => null, (error: HatchError) => error);
    await manager.dispose();
    // dispose() returns only once the create it interrupted has ended its shell too.
    expect(await Promise.race([Promise.all(spawned.map((process) => process.exited)).then(() => "all exited"), Bun.sleep(0).then(() => "still running")])).toBe("all exited");
    const refused = await midSpawn;
    expect({ status: refused?.status, code: refused?.code }).toEqual({ status: 503, code: "shutting_down" });
    const late = await manager.create(shellAtRoot("late")).then(() => null, (error: HatchError) => error);
    expect({ status: late?.status, code: late?.code }).toEqual({ status: 503, code: "shutting_down" });
    expect(spawned.length).toBe(2);
    expect(manager.count()).toBe(0);
    expect(readdirSync(base)).toEqual([]);
  } finally {
    await cgroups.close();
    rmSync(base, { recursive: true, force: true });
  }
});

test("a disposed manager leaves nothing holding its embedder's process open (the kill grace of a shell that exited is cancelled)", async () => {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "../helpers/disposing-embedder.ts")], { stdout: "pipe", stderr: "inherit" });
  const [out, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
  // The unref'd timer prints only if something else kept the event loop alive for a second after the dispose.
  expect({ code, out }).toEqual({ code: 0, out: "disposed\n" });
});

test("a view that typed and then detached is let go: the session keeps no hold on it or its connection", async () => {
  const base = mkdtempSync(join(tmpdir(), "hatch-manager-"));
  using parser = new ParserThread();
  const cgroups = await openProcessCgroups({ dataDir: base });
  const manager = new SessionManager(managerOptions({ base, parser, spawner: createPtySpawner(bunTerminalBackend, null), cgroups }));
  try {
    const { session } = await manager.create(shellAtRoot("s"));
    // In a function of its own, so nothing in this test's scope holds the view or its sink.
    const typeThenLeave = () => {
      let seen = "";
      const sink = { output: (bytes: Uint8Array) => void (seen += new TextDecoder().decode(bytes)), control: () => {}, close: () => {}, buffered: () => 0 };
      const view = session.attach(sink, { userId: "u", canWrite: true });
      session.input(view, "echo typed-$((20+22))\r");
      return { left: waitFor(() => seen.includes("typed-42"), "the typed line's output").then(() => session.detach(view)), sink: new WeakRef(sink) };
    };
    const { left, sink } = typeThenLeave();
    await left;
    await waitFor(() => {
      Bun.gc(true);
      return sink.deref() === undefined;
    }, "the detached view's sink to be collected");
    expect(sink.deref()).toBeUndefined();
  } finally {
    await manager.dispose();
    await cgroups.close();
    rmSync(base, { recursive: true, force: true });
  }
});

test("input a busy program does not read is held up to a bound, not without one: the rest is dropped with one notice, and typing works again once it reads", async () => {
  const base = mkdtempSync(join(tmpdir(), "hatch-manager-"));
  using parser = new ParserThread();
  const cgroups = await openProcessCgroups({ dataDir: base });
  // The production bucket's burst, refilled faster: what 32 KiB/s piles up in ten minutes is typed in a second.
  const manager = new SessionManager({ ...managerOptions({ base, parser, spawner: createPtySpawner(bunTerminalBackend, null), cgroups }), inputBucket: { capacity: 65536, refillPerSecond: 64 * 1024 * 1024 } });
  const counted = join(base, "count");
  // The program is busy until the test has typed everything: it waits on this FIFO.
  const busyUntil = join(base, "busy-until");
  expect(Bun.spawnSync(["mkfifo", busyUntil]).exitCode).toBe(0);
  try {
    const { session } = await manager.create(shellAtRoot("s"));
    let seen = "";
    const told: unknown[] = [];
    const sink = { output: (bytes: Uint8Array) => void (seen += new TextDecoder().decode(bytes)), control: (message: { type: string }) => void ((message.type === "notice" || message.type === "blocked") && told.push(message)), close: () => {}, buffered: () => 0 };
    const view = session.attach(sink, { userId: "u", canWrite: true });
    // Busy elsewhere (a build, a sleep) while the user keeps typing; then it reads what reached it, and the tty is set back.
    session.input(view, `/bin/stty -icanon -echo min 0 time 10; echo busy-$((6*7)); read _ < ${busyUntil}; /bin/cat | /usr/bin/wc -c > ${counted}; echo done-$((6*8)); /bin/stty sane\r`);
    await waitFor(() => seen.includes("busy-42"), "the program to be busy");
    const chunk = "a".repeat(60 * 1024);
    for (let i = 0; i < 256; i++) {
      session.input(view, chunk);
      // A turn of the event loop, as between two WebSocket messages: the PTY may take what it can.
      await Bun.sleep(0);
    }
    writeFileSync(busyUntil, "done\n");
    await waitFor(() => seen.includes("done-48"), "the program to read what waited for it", 30_000);
    // 15 MiB typed; what reached the program waited in the kernel's tty buffer (4 KiB) or the server, which took
    // messages until 256 KiB waited (the last of them one 60 KiB message past it).
    const held = Number(readFileSync(counted, "utf8"));
    expect({ heldWithinBound: held >= 256 * 1024 && held <= (256 + 60 + 4) * 1024, told }).toEqual({ heldWithinBound: true, told: [{ type: "notice", message: INPUT_NOT_READ }] });
    // Ctrl+U first: the input screen took the a's for the prompt's line, though cat read them.
    session.input(view, "\x15echo back-$((7*7))\r");
    await waitFor(() => seen.includes("back-49") || told.length > 1, "typing to reach the shell again, or be refused");
    expect({ told: told.slice(1), ranAgain: seen.includes("back-49") }).toEqual({ told: [], ranAgain: true });
  } finally {
    await manager.dispose();
    await cgroups.close();
    rmSync(base, { recursive: true, force: true });
  }
}, 40_000);
