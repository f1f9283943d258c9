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
import { managerOptions, shellAtRoot } from "./session-manager.ts";

const base = mkdtempSync(join(tmpdir(), "hatch-embedder-"));
const parser = new ParserThread();
const cgroups = await openProcessCgroups({ dataDir: base });
const manager = new SessionManager(managerOptions({ base, parser, spawner: createPtySpawner(bunTerminalBackend, null), cgroups }));
await manager.create(shellAtRoot("s"));
await manager.dispose();
await cgroups.close();
parser[Symbol.dispose]();
rmSync(base, { recursive: true, force: true });
console.log("disposed");
setTimeout(() => console.log("still running a second after the dispose"), 1000).unref();
