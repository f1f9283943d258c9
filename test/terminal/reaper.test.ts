import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RawWebSocket } from "../helpers/raw-websocket.ts";
import { attached, createSession, runAndSee, TERMINAL, terminalUrl } from "../helpers/terminal.ts";
import { waitFor } from "../helpers/wait-for.ts";
import type { HatchOverrides } from "../../src/main.ts";
import { startWorld } from "../helpers/world.ts";

/**
 * As the owner of a new project, in a world whose clock the test moves (`clock.now += ms`) and whose reaper runs
 * only when the test sweeps, with Terminal: Idle Shutdown at 5 minutes.
 */
async function idleClockWorld(overrides: HatchOverrides = {}) {
  const clock = { now: Date.now() };
  const world = await startWorld({}, { now: () => clock.now, reaperIntervalMs: 3_600_000, ...overrides });
  const project = await world.project();
  const owner = await world.signedIn(project, "owner");
  world.platform.settings.set("terminalIdleShutdownMinutes", 5, null);
  return { world, project, owner, clock };
}

describe("the reaper", () => {
  test("an idle detached session is reaped with its scratch removed, an attached one survives and gets a countdown", async () => {
    const { world, project, owner, clock } = await idleClockWorld();
    await using _world = world;
    await createSession(owner.client, { sourceSlug: "container-root", id: "idle" });
    await createSession(owner.client, { sourceSlug: "container-root", id: "watched" });
    const view = await attached(world, owner, "watched");
    const { sessions } = world.hatch.terminal;
    const scratch = join(world.config.dataDir, "scratch");
    expect(readdirSync(scratch)).toHaveLength(2);

    clock.now += 4.5 * 60_000;
    expect(await sessions.sweep()).toEqual([]);
    const countdown = await view.control("countdown");
    expect(countdown.secondsLeft).toBe(30);

    clock.now += 60_000;
    expect(await sessions.sweep()).toEqual(["idle"]);
    expect(readdirSync(scratch)).toHaveLength(1);
    expect((await owner.client.get("/api/packages/agent/terminal/sessions")).body.sessions.map((s: { id: string }) => s.id)).toEqual(["watched"]);

    // Settings are read at each sweep.
    world.platform.settings.set("terminalIdleShutdownMinutes", 60, null);
    view.close();
    await waitFor(() => sessions.listProject(project.id)[0]?.views === 0, "the server to see the detach");
    clock.now += 10 * 60_000;
    expect(await sessions.sweep()).toEqual([]);
    clock.now += 60 * 60_000;
    expect(await sessions.sweep()).toEqual(["watched"]);
    expect(readdirSync(scratch)).toEqual([]);
  });

  test("a countdown is withdrawn (secondsLeft null) once the session is used again, and once it is watched past its limit", async () => {
    const { world, owner, clock } = await idleClockWorld();
    await using _world = world;
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const view = await attached(world, owner, "s");
    const { sessions } = world.hatch.terminal;
    const countdowns = () => view.controls.filter((c) => c.type === "countdown").map((c) => c.secondsLeft);

    clock.now += 4.5 * 60_000;
    await sessions.sweep();
    await waitFor(() => countdowns().length === 1, "the countdown");
    // The user types: the clock starts again, and the next sweep says no reap is coming.
    await runAndSee(view, "echo back-$((6*7))", "back-42");
    await sessions.sweep();
    await waitFor(() => countdowns().length === 2, "the withdrawal");
    // Nothing more to withdraw while nothing is counted down.
    await sessions.sweep();
    clock.now += 4.5 * 60_000;
    await sessions.sweep();
    // Watched past the limit: it is not reaped, so its countdown is withdrawn too.
    clock.now += 60_000;
    await sessions.sweep();
    await runAndSee(view, "echo still-$((6*7))", "still-42");
    expect(countdowns()).toEqual([30, null, 30, null]);
  });

  test("a connection whose client vanished without closing (it answers no ping) is dropped, so its idle session is reaped; one that answers keeps its view", async () => {
    const { world, project, owner, clock } = await idleClockWorld({ heartbeatMs: 50 });
    await using _world = world;
    await createSession(owner.client, { sourceSlug: "container-root", id: "here" });
    await createSession(owner.client, { sourceSlug: "container-root", id: "gone" });
    // A browser answers pings by itself (so does the ws client); a raw socket that answers none is, to the
    // server, a peer whose laptop went to sleep: TCP alone keeps such a connection open for ever.
    const here = await attached(world, owner, "here");
    const gone = await RawWebSocket.open(terminalUrl(world, "gone"), { cookie: owner.client.cookieHeader });
    const { sessions } = world.hatch.terminal;
    const views = (id: string) => sessions.listProject(project.id).find((s) => s.id === id)?.views;
    await waitFor(() => views("gone") === 1, "the raw connection's view");
    await waitFor(() => views("gone") === 0, "the connection that answers no ping to be dropped");
    expect(views("here")).toBe(1);
    clock.now += 10 * 60_000;
    expect(await sessions.sweep()).toEqual(["gone"]);
    expect(here.closeCode).toBeNull();
    gone.destroy();
  });

  test("a session terminated while the reaper waits on another's end does not break the sweep", async () => {
    const { world, project, owner, clock } = await idleClockWorld();
    await using _world = world;
    await createSession(owner.client, { sourceSlug: "container-root", id: "slow" });
    await createSession(owner.client, { sourceSlug: "container-root", id: "other" });
    const view = await attached(world, owner, "slow");
    // Ignoring SIGHUP makes the reaper wait out the kill grace on this one.
    await runAndSee(view, "trap '' HUP; echo trapped-$((5*5))", "trapped-25");
    view.close();
    const { sessions } = world.hatch.terminal;
    await waitFor(() => sessions.listProject(project.id).every((s) => s.views === 0), "the detach");
    clock.now += 10 * 60_000;
    const sweep = sessions.sweep().then((reaped) => ({ reaped }), (error: unknown) => ({ error: String(error) }));
    await waitFor(async () => (await owner.client.get(`${TERMINAL}/sessions`)).body.sessions.length === 1, "the reaper to take the slow one");
    expect((await owner.client.delete(`${TERMINAL}/sessions/other`)).status).toBe(200);
    expect(await sweep).toEqual({ reaped: ["slow"] });
  });

  test("a running exec is use: the session is not reaped while it runs, and its end counts as activity", async () => {
    const { world, owner, clock } = await idleClockWorld();
    await using _world = world;
    await createSession(owner.client, { sourceSlug: "container-root", id: "busy" });
    const dir = world.tempDir("exec");
    const running = owner.client.post(`${TERMINAL}/sessions/busy/exec`, { command: `touch ${dir}/started; while [ ! -e ${dir}/go ]; do sleep 0.05; done; echo finished`, timeoutSeconds: 60 });
    await waitFor(() => existsSync(join(dir, "started")), "the exec to start");
    const { sessions } = world.hatch.terminal;
    clock.now += 10 * 60_000;
    expect(await sessions.sweep()).toEqual([]);
    writeFileSync(join(dir, "go"), "");
    expect((await running).body).toMatchObject({ output: "finished\n", exitCode: 0 });
    clock.now += 4 * 60_000;
    expect(await sessions.sweep()).toEqual([]);
    clock.now += 60_000;
    expect(await sessions.sweep()).toEqual(["busy"]);
  });

  test("a PTY that exits is destroyed and its scratch removed; orphaned scratch from an unclean exit is swept at start", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "bye" });
    const view = await attached(world, owner, "bye");
    view.type("exit 3\r");
    const exit = await view.control("exit");
    expect(exit.code).toBe(3);
    expect(await view.closed).toBe(4000);
    // The views are told first; the processes are ended and the scratch dir removed after.
    await waitFor(() => readdirSync(join(world.config.dataDir, "scratch")).length === 0, "the scratch dir to be removed");
    expect(existsSync(join(world.config.dataDir, "scratch"))).toBe(true);
    // What an unclean exit leaves: a scratch-named dir no live session owns, beside a stranger that must survive.
    const orphan = join(world.config.dataDir, "scratch", "hatch-scratch-" + "0".repeat(32));
    const stranger = join(world.config.dataDir, "scratch", "keep-me");
    mkdirSync(orphan, { mode: 0o700 });
    mkdirSync(stranger);
    await createSession(owner.client, { sourceSlug: "container-root", id: "live" });
    const removed = await world.hatch.terminal.sessions.sweepOrphans();
    expect(removed).toEqual([orphan]);
    expect(existsSync(stranger)).toBe(true);
    expect(readdirSync(join(world.config.dataDir, "scratch"))).toHaveLength(2);
  });
});

describe("ends nobody asked for", () => {
  test("an idle reap is on the record (terminal.terminate, reason idle), keyed to the session's owner as a former member's end is", async () => {
    const { world, project, owner, clock } = await idleClockWorld();
    await using _world = world;
    await createSession(owner.client, { sourceSlug: "container-root", id: "idle" });
    clock.now += 10 * 60_000;
    expect(await world.hatch.terminal.sessions.sweep()).toEqual(["idle"]);
    const ends = world.platform.audit.query({ projectId: project.id, action: "terminal.terminate" });
    expect(ends.map((entry) => ({ userId: entry.userId, target: entry.target, detail: entry.detail }))).toEqual([
      { userId: owner.user.id, target: "idle", detail: { sessionUserId: owner.user.id, reason: "idle" } },
    ]);
  });

  test("a shell that exits by itself is on the record with its exit code; a session someone terminated is recorded once, as terminated", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "quits" });
    await createSession(owner.client, { sourceSlug: "container-root", id: "ended" });
    const terminal = await attached(world, owner, "quits");
    terminal.type("exit 3\r");
    await terminal.control("exit");
    expect((await owner.client.delete(`${TERMINAL}/sessions/ended`)).status).toBe(200);
    await waitFor(() => world.platform.audit.query({ projectId: project.id, action: "terminal.terminate" }).length >= 2, "both ends on the record");
    const ends = world.platform.audit.query({ projectId: project.id, action: "terminal.terminate" });
    expect(ends.map((entry) => ({ target: entry.target, reason: entry.detail?.reason ?? null, exitCode: entry.detail?.exitCode ?? null })).sort((a, b) => a.target!.localeCompare(b.target!))).toEqual([
      { target: "ended", reason: null, exitCode: null },
      { target: "quits", reason: "exited", exitCode: 3 },
    ]);
  });
});
