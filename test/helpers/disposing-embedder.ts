/**
 * An embedder that starts a session manager with one shell, disposes of it and
 * its parser thread, then arms an unref'd one-second timer: the line it prints
 * shows that something hatch left behind still held the process open.
 * Run as a child process: `bun test/helpers/disposing-embedder.ts`.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bunTerminalBackend, createPtySpawner, openProcessCgroups, SessionManager } from "../../src/pty/index.ts";
import { ParserThread } from "../../src/screen/index.ts";

const base = mkdtempSync(join(tmpdir(), "hatch-embedder-"));
const parser = new ParserThread();
const cgroups = await openProcessCgroups({ dataDir: base });
const manager = new SessionManager({
  scratchBase: base,
  parser,
  spawner: createPtySpawner(bunTerminalBackend, null),
  cgroups,
  limits: { maxSessions: () => 8, scrollbackLines: () => 1000, idleShutdownMs: () => 60_000 },
  protectedPaths: [],
  inputBucket: { capacity: 65536, refillPerSecond: 32768 },
  now: () => Date.now(),
});
const namespace = { userId: "u", projectId: "p", agentId: null };
await manager.create({ namespace, id: "s", cols: 80, rows: 24, readOnly: false, authority: "{}", sourceSlug: "x", cwd: "/", launch: (scratch) => ({ sourceSlug: "x", cwd: "/", argv: ["/bin/sh"], env: {}, scratch, confine: null }) });
await manager.dispose();
await cgroups.close();
parser[Symbol.dispose]();
rmSync(base, { recursive: true, force: true });
console.log("disposed");
setTimeout(() => console.log("still running a second after the dispose"), 1000).unref();
