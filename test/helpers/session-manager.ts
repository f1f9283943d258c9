import type { CreateSessionRequest, ProcessCgroups, PtySpawner } from "../../src/pty/index.ts";
import type { ParserThread } from "../../src/screen/index.ts";

/** A session manager's options as the manager tests need them: 8 sessions, 1,000 lines of scrollback, the usual input bucket. */
export function managerOptions(options: { base: string; parser: ParserThread; spawner: PtySpawner; cgroups: ProcessCgroups }) {
  return {
    scratchBase: options.base,
    parser: options.parser,
    spawner: options.spawner,
    cgroups: options.cgroups,
    limits: { maxSessions: () => 8, scrollbackLines: () => 1000, idleShutdownMs: () => 60_000 },
    protectedPaths: [],
    inputBucket: { capacity: 65536, refillPerSecond: 32768 },
    now: () => Date.now(),
  };
}

/** A create of session `id`: `/bin/sh` at `/`, bare, for user u in project p. */
export function shellAtRoot(id: string): CreateSessionRequest {
  const namespace = { userId: "u", projectId: "p", agentId: null };
  return { namespace, id, cols: 80, rows: 24, readOnly: false, authority: "{}", sourceSlug: "x", cwd: "/", launch: (scratch) => ({ sourceSlug: "x", cwd: "/", argv: ["/bin/sh"], env: {}, scratch, confine: null }) };
}
