import { describe, expect, spyOn, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { MAX_VIEWS_PER_SESSION, MAX_VIEWS_PER_USER } from "../../src/pty/index.ts";
import { RawWebSocket } from "../helpers/raw-websocket.ts";
import { TERMINAL, attached, createSession, localSource, openTerminal, ownerRootSession, runAndSee, sessionAnAdminSupervises, terminalUrl } from "../helpers/terminal.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { startWorld } from "../helpers/world.ts";

describe("the terminal WebSocket", () => {
  test("a first connection gets a snapshot, typing echoes, and attach and detach are audited", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const terminal = await attached(world, owner, "s");
    expect(terminal.controls.find((c) => c.type === "snapshot")).toMatchObject({ cols: 80, rows: 24, fullScreen: false, offset: expect.any(Number) });
    expect(terminal.controls.find((c) => c.type === "lease")).toMatchObject({ you: true, userId: owner.user.id });
    await runAndSee(terminal, "echo hello-$((6*7))", "hello-42");
    terminal.close();
    await terminal.closed;
    const entries = await waitFor(() => {
      const found = world.platform.audit.query({ projectId: project.id, action: "terminal.session" });
      return found.length === 2 ? found : null;
    }, "attach and detach audit entries");
    expect(entries.map((e) => [e.detail!.event, e.userId, e.target])).toEqual([
      ["detach", owner.user.id, "s"],
      ["attach", owner.user.id, "s"],
    ]);
  });

  test("Terminal: Scrollback Lines also sizes the client buffer: the session object and hello carry the session's own", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    world.platform.settings.set("terminalScrollbackLines", 500, null);
    const created = await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    expect(created.body.scrollback).toBe(500);
    // Applied at the next create: the live session keeps the size it was made with.
    world.platform.settings.set("terminalScrollbackLines", 2000, null);
    const terminal = await attached(world, owner, "s");
    expect(terminal.controls.find((c) => c.type === "hello")).toMatchObject({ sessionId: "s", scrollback: 500 });
    expect((await owner.client.get(`${TERMINAL}/sessions`)).body.sessions[0].scrollback).toBe(500);
  });

  test("a reconnect after missed output gets exactly the missed bytes", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const first = await attached(world, owner, "s");
    await runAndSee(first, "echo first-$((1+1))", "first-2");
    // Output that arrives after the view has gone: the command waits for a file the test creates once it is detached.
    const go = join(world.tempDir("go"), "go");
    await runAndSee(first, `g=${go}; echo armed-$((3+4))`, "armed-7");
    first.type("until [ -e $g ]; do sleep 0.05; done; echo missed-$((2+3))\r");
    await first.sees("echo missed-$((2+3))");
    const offset = first.offset;
    first.close();
    await first.closed;
    writeFileSync(go, "");
    const read = () => owner.client.get("/api/packages/agent/terminal/sessions/s/read");
    // Its output and the prompt after it, so nothing more arrives live behind the replay.
    const promptAfterMissed = (lines: string[]) => lines.includes("missed-5") && lines.slice(lines.indexOf("missed-5") + 1).some((l) => l.trim() !== "");
    await waitFor(async () => promptAfterMissed((await read()).body.lines), "output produced while detached");
    const again = await openTerminal(world, owner, "s", { since: offset, instance: first.instance });
    const replay = await again.control("replay");
    await again.sees("missed-5");
    expect(replay.from).toBe(offset);
    expect(again.controls.some((c) => c.type === "snapshot")).toBe(false);
    // Exactly the bytes from the offset on: nothing seen before it, everything after it.
    expect(again.output).not.toContain("first-2");
    expect(again.output).not.toContain("until [");
    expect(again.offset).toBe(replay.to);
  });

  test("an offset from an earlier session under the same id, or from no named instance, gets a snapshot, never a slice of the new output", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "again" });
    const first = await attached(world, owner, "again");
    await runAndSee(first, "echo old-$((1+1))", "old-2");
    const { offset, instance } = first;
    first.close();
    await first.closed;
    expect((await owner.client.delete(`${TERMINAL}/sessions/again`)).status).toBe(200);
    await createSession(owner.client, { sourceSlug: "container-root", id: "again" });
    const second = await attached(world, owner, "again");
    // The new run writes well past the old offset, so a bare byte count would find "missed" bytes to replay.
    await runAndSee(second, `printf 'new-%.0s' $(seq 1 ${Math.ceil(offset / 4) + 50}); echo; echo new-$((2+2))`, "new-4");
    expect(second.instance).not.toBe(instance);
    second.close();
    await second.closed;
    for (const resume of [{ since: offset, instance }, { since: offset }]) {
      const stale = await openTerminal(world, owner, "again", resume);
      const snapshot = await stale.control("snapshot");
      expect({ resume, replayed: stale.controls.some((c) => c.type === "replay"), shows: snapshot.data.includes("new-4") }).toEqual({ resume, replayed: false, shows: true });
      stale.close();
      await stale.closed;
    }
  });

  test("a reconnect during a full-screen program gets a snapshot that renders it", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "fs" });
    const first = await attached(world, owner, "fs");
    // A tiny full-screen program: switch to the alternate screen, draw, wait.
    first.type(`printf '\\033[?1049h\\033[2J\\033[5;10HFULL-SCREEN-APP'; sleep 30\r`);
    await first.control("fullScreen", (c) => c.active === true);
    const offset = first.offset;
    first.close();
    await first.closed;
    const again = await openTerminal(world, owner, "fs", { since: offset, instance: first.instance });
    const snapshot = await again.control("snapshot");
    expect(snapshot.fullScreen).toBe(true);
    expect(snapshot.data).toContain("FULL-SCREEN-APP");
    // DECSET 1047 when the snapshot also carries the shell's saved cursor, which 1049 would overwrite.
    expect(snapshot.data).toMatch(/\x1b\[\?104[79]h/);
    expect(again.controls.some((c) => c.type === "replay")).toBe(false);
  });

  test("an observer cannot type; take control moves the lease and every view learns who holds it", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const first = await attached(world, owner, "s");
    const second = await attached(world, owner, "s");
    expect(second.controls.find((c) => c.type === "lease")).toMatchObject({ you: false });
    const marker = join(world.tempDir("marker"), "observer-typed");
    second.type(`touch ${marker}\r`);
    await runAndSee(first, "echo still-$((3*3))", "still-9");
    expect(existsSync(marker)).toBe(false);
    second.send({ type: "takeControl" });
    await second.control("lease", (c) => c.you === true);
    await first.control("lease", (c) => c.you === false && c.viewId !== null);
    await runAndSee(second, "echo taken-$((4*4))", "taken-16");
    first.type(`touch ${marker}\r`);
    await runAndSee(second, "echo after-$((5*5))", "after-25");
    expect(existsSync(marker)).toBe(false);
  });

  test("a supervisor attaches to a member's session with its full identity, takes control and types", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const owner = await world.signedIn(project, "owner");
    localSource(world, project, "docs", { member: "rwx" });
    const agent = world.agent(project, member.user);
    await createSession(member.client, { sourceSlug: "docs", id: "m", agentId: agent.id });
    const mine = await attached(world, member, "m", { agentId: agent.id });
    const supervisor = await attached(world, owner, "m", { userId: member.user.id, agentId: agent.id });
    expect(supervisor.controls.find((c) => c.type === "lease")).toMatchObject({ you: false, userId: member.user.id });
    supervisor.send({ type: "takeControl" });
    await mine.control("lease", (c) => c.userId === owner.user.id && c.you === false);
    await runAndSee(supervisor, "echo supervised-$((6*6))", "supervised-36");
    await mine.sees("supervised-36");
    // Without the agent the identity is incomplete: the same id in the member's own namespace does not exist.
    expect(await (await openTerminal(world, owner, "m", { userId: member.user.id })).closed).toBe(4404);
  });

  test("the lease of a view that drops goes to its person's newest view (the tab reconnected), not to a supervisor watching", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const owner = await world.signedIn(project, "owner");
    localSource(world, project, "docs", { member: "rwx" });
    await createSession(member.client, { sourceSlug: "docs", id: "m" });
    const tab = await attached(world, member, "m");
    const supervisor = await attached(world, owner, "m", { userId: member.user.id });
    // The member's connection is dropping; the tab has already reconnected as a new view when the old one goes.
    const reconnected = await attached(world, member, "m");
    expect(reconnected.controls.find((c) => c.type === "lease")).toMatchObject({ userId: member.user.id, you: false });
    tab.close();
    await reconnected.control("lease", (c) => c.you === true);
    await runAndSee(reconnected, "echo back-$((7*7))", "back-49");
    expect(supervisor.controls.filter((c) => c.type === "lease").at(-1)).toMatchObject({ userId: member.user.id, you: false });
    // With no view of its person left, the lease goes to whoever may type: the supervisor.
    reconnected.close();
    await supervisor.control("lease", (c) => c.you === true);
    supervisor.close();
  });

  describe("a supervisor drives an unconfined session only with the feature that would give them one of their own", () => {
    test("Container Root: terminal.supervise without terminal.container watches, read-only, and cannot exec", async () => {
      await using world = await startWorld();
      const project = await world.project();
      // Admins do not get core.execute by default; this one types in its own session.
      world.platform.roles.grant(project.id, "admin", "core.execute");
      const admin = await world.signedIn(project, "admin");
      world.platform.roles.grant(project.id, "member", "terminal.supervise");
      const member = await world.signedIn(project, "member");
      expect((await createSession(admin.client, { sourceSlug: "container-root", id: "root" })).status).toBe(201);
      const marker = join(world.tempDir("marker"), "supervisor-ran");
      const watching = await attached(world, member, "root", { userId: admin.user.id });
      await watching.control("readOnly");
      watching.send({ type: "takeControl" });
      watching.type(`touch ${marker}\r`);
      const exec = await member.client.post(`${TERMINAL}/sessions/root/exec?userId=${admin.user.id}`, { command: `touch ${marker}` });
      expect(exec.status).toBe(403);
      expect(exec.body.error).toEqual({ code: "unconfined_session", message: "This session runs unconfined: driving it takes terminal.container, which you do not hold" });
      // The admin's own view still drives it; the member's keys never arrived.
      const own = await attached(world, admin, "root");
      await runAndSee(own, "echo admin-$((5*5))", "admin-25");
      expect(existsSync(marker)).toBe(false);
      // With the feature the same supervisor drives it.
      world.platform.roles.grant(project.id, "member", "terminal.container");
      expect((await member.client.post(`${TERMINAL}/sessions/root/exec?userId=${admin.user.id}`, { command: "echo driven" })).body.output).toBe("driven\n");
    });

    test("an exec.unconfined holder's bare source tab: an admin supervisor without exec.unconfined watches and cannot exec", async () => {
      await using world = await startWorld();
      const project = await world.project();
      const owner = await world.signedIn(project, "owner");
      world.platform.roles.grant(project.id, "admin", "core.execute");
      const admin = await world.signedIn(project, "admin");
      localSource(world, project, "docs", { owner: "rwx", admin: "rwx" });
      expect((await createSession(owner.client, { sourceSlug: "docs", id: "o" })).status).toBe(201);
      expect((await owner.client.get(`${TERMINAL}/sessions`)).body.sessions[0].confinement).toBe("none");
      const watching = await attached(world, admin, "o", { userId: owner.user.id });
      await watching.control("readOnly");
      const exec = await admin.client.post(`${TERMINAL}/sessions/o/exec?userId=${owner.user.id}`, { command: "true" });
      expect(exec.status).toBe(403);
      expect(exec.body.error.code).toBe("unconfined_session");
      // A confined session of the same source is the owner's policy, not a bare process: the supervisor drives it.
      const member = await world.signedIn(project, "member");
      world.hatch.terminal.sources.addRule(world.hatch.terminal.sources.require(project.id, "docs"), { subjectKind: "role", subject: "member", effect: "allow", perms: "rwx" });
      expect((await createSession(member.client, { sourceSlug: "docs", id: "m" })).status).toBe(201);
      expect((await admin.client.post(`${TERMINAL}/sessions/m/exec?userId=${member.user.id}`, { command: "echo confined" })).body.output).toBe("confined\n");
    });
  });

  test("a connection without core.execute gets readOnly and every keystroke and resize is dropped", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    world.platform.roles.grant(project.id, "viewer", "terminal.read");
    const viewer = await world.signedIn(project, "viewer");
    const agent = world.agent(project, viewer.user, { shared: true });
    // The viewer watches a session in their own namespace that the owner cannot type into either: create it as the viewer.
    const created = await createSession(viewer.client, { sourceSlug: "container-root", id: "v" });
    expect(created.status).toBe(403);
    await createSession(owner.client, { sourceSlug: "container-root", id: "w", agentId: agent.id });
    world.platform.roles.grant(project.id, "viewer", "terminal.supervise");
    const watching = await attached(world, viewer, "w", { userId: owner.user.id, agentId: agent.id });
    await watching.control("readOnly");
    const marker = join(world.tempDir("marker"), "viewer-typed");
    watching.type(`touch ${marker}\r`);
    watching.send({ type: "resize", cols: 40, rows: 10 });
    const ownerView = await attached(world, owner, "w", { agentId: agent.id });
    await runAndSee(ownerView, "stty size; echo size-$((2+2))", "size-4");
    expect(ownerView.output).toContain("24 80");
    expect(existsSync(marker)).toBe(false);
  });

  test("the lease holder's resize reaches the program at once", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const terminal = await attached(world, owner, "s");
    terminal.send({ type: "resize", cols: 120, rows: 40 });
    await terminal.control("resize", (c) => c.cols === 120);
    await runAndSee(terminal, "stty size; echo sized-$((1+1))", "sized-2");
    expect(terminal.output).toContain("40 120");
  });

  test("messages a client sends the moment the socket opens, before the server has decided its access, are not lost", async () => {
    await using world = await startWorld();
    const { owner } = await ownerRootSession(world);
    const terminal = await openTerminal(world, owner, "s");
    terminal.send({ type: "resize", cols: 100, rows: 30 });
    terminal.type("echo early-$((3+4))\r");
    await terminal.sees("early-7");
    await runAndSee(terminal, "stty size; echo sized-$((1+1))", "sized-2");
    expect(terminal.output).toContain("30 100");
  });

  test("a burst of resizes (a window being dragged) changes the size once at once and once more, to the last size, when the interval is up", async () => {
    await using world = await startWorld();
    const { owner, session } = await ownerRootSession(world);
    const terminal = await attached(world, owner, "s");
    const snapshotsBefore = terminal.controls.filter((c) => c.type === "snapshot").length;
    for (let cols = 81; cols <= 110; cols++) session.resize({ userId: owner.user.id }, cols, 20 + (cols % 7));
    await terminal.control("resize", (c) => c.cols === 110);
    await runAndSee(terminal, "stty size; echo sized-$((1+1))", "sized-2");
    const resizes = terminal.controls.filter((c) => c.type === "resize").map((c) => `${c.cols}x${c.rows}`);
    expect({ resizes, programSaw: terminal.output.includes(`${20 + (110 % 7)} 110`), snapshots: terminal.controls.filter((c) => c.type === "snapshot").length })
      .toEqual({ resizes: [`81x${20 + (81 % 7)}`, `110x${20 + (110 % 7)}`], programSaw: true, snapshots: snapshotsBefore });
  });

  test("a resize held back in the interval is dropped when its view loses the lease before it is due", async () => {
    await using world = await startWorld();
    const { owner, session } = await ownerRootSession(world);
    await attached(world, owner, "s");
    const second = await attached(world, owner, "s");
    const holder = session.views.leaseHolder!;
    session.resize(holder, 90, 30);
    session.resize(holder, 91, 31);
    // Its user lost the right to type: the lease passes to the second view before the held resize is due.
    session.views.demote(holder);
    await second.control("lease", (c) => c.you === true);
    await runAndSee(second, "stty size; echo sized-$((1+1))", "sized-2");
    await Bun.sleep(150);
    expect({ size: [session.mirror.cols, session.mirror.rows], resizes: second.controls.filter((c) => c.type === "resize").map((c) => c.cols) }).toEqual({ size: [90, 30], resizes: [90] });
  });

  test("the lease holder's resize sent as it connects, before its snapshot arrives, reaches the program and the snapshot is at that size", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const terminal = await openTerminal(world, owner, "s");
    await terminal.control("lease", (c) => c.you === true);
    const before = terminal.controls.some((c) => c.type === "snapshot");
    terminal.send({ type: "resize", cols: 100, rows: 30 });
    const snapshot = await terminal.control("snapshot");
    await runAndSee(terminal, "stty size; echo sized-$((1+1))", "sized-2");
    expect({ before, snapshot: [snapshot.cols, snapshot.rows], size: terminal.output.includes("30 100") }).toEqual({ before: false, snapshot: [100, 30], size: true });
  });

  test("a view that loses its access lets go of the lease at once, though its client never answers the close", async () => {
    await using world = await startWorld();
    const { project, member, admin } = await sessionAnAdminSupervises(world);
    const session = world.hatch.terminal.sessions.find({ userId: member.user.id, projectId: project.id, agentId: null, id: "s" })!;
    const mine = await attached(world, member, "s");
    const supervisor = await RawWebSocket.open(terminalUrl(world, "s", `userId=${member.user.id}`), { cookie: admin.client.cookieHeader });
    await waitFor(() => supervisor.texts.some((t) => JSON.parse(t).type === "snapshot"), "the supervisor's snapshot");
    supervisor.sendText(JSON.stringify({ type: "takeControl" }));
    await mine.control("lease", (c) => c.userId === admin.user.id);
    // The supervisor's client stops reading: it never sees, nor answers, a close frame.
    supervisor.pause();
    world.platform.roles.revoke(project.id, "admin", "terminal.supervise");
    try {
      // Within the wait's limit, far under the 30 s a close handshake nobody answers takes.
      await waitFor(() => session.views.size === 1, "the supervisor's view to be detached");
      expect(session.views.leaseHolder?.userId).toBe(member.user.id);
    } finally {
      supervisor.destroy();
    }
  });

  test("take control by the view that holds the lease answers nothing: a client repeating it while reading nothing queues nothing", async () => {
    await using world = await startWorld();
    const { owner, session } = await ownerRootSession(world);
    const raw = await RawWebSocket.open(terminalUrl(world, "s"), { cookie: owner.client.cookieHeader });
    await waitFor(() => raw.texts.some((t) => JSON.parse(t).type === "snapshot"), "the snapshot");
    const sink = session.views.leaseHolder!.sink;
    raw.pause();
    try {
      // About 10 MB of frames; answered each with a lease message, they filled the kernel's buffers and then this process.
      const take = JSON.stringify({ type: "takeControl" });
      let most = 0;
      for (let round = 0; round < 60; round++) {
        for (let i = 0; i < 5000; i++) raw.sendText(take);
        await Bun.sleep(20);
        most = Math.max(most, sink.buffered());
      }
      expect(most).toBe(0);
      expect(session.views.size).toBe(1);
    } finally {
      raw.destroy();
    }
  }, 60_000);

  test("one person holds at most 16 views of a session: the 17th is closed with 4429, and one closing makes room; a resize to the size it has announces nothing", async () => {
    await using world = await startWorld();
    const { owner, session } = await ownerRootSession(world);
    const open = [];
    for (let i = 0; i < MAX_VIEWS_PER_USER; i++) open.push(await attached(world, owner, "s"));
    const refused = await openTerminal(world, owner, "s");
    expect({ code: await refused.closed, reason: refused.closeReason }).toEqual({ code: 4429, reason: "You have 16 views of the session open, as many as one person may" });
    open.pop()!.close();
    await waitFor(() => session.views.size === MAX_VIEWS_PER_USER - 1, "the closed view to be detached");
    const next = await attached(world, owner, "s");
    // The first view holds the lease; its resize to the current size reaches no view.
    open[0]!.send({ type: "resize", cols: 80, rows: 24 });
    open[0]!.send({ type: "resize", cols: 81, rows: 24 });
    await next.control("resize", (c) => c.cols === 81);
    expect(next.controls.filter((c) => c.type === "resize").map((c) => c.cols)).toEqual([81]);
    for (const view of [...open, next]) view.close();
  });

  test("a member with every view they may have open does not lock a supervisor out; the session takes 32 views in all", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const owner = await world.signedIn(project, "owner");
    const admin = await world.signedIn(project, "admin");
    localSource(world, project, "docs", { member: "rwx" });
    await createSession(member.client, { sourceSlug: "docs", id: "m" });
    const open = [];
    for (let i = 0; i < MAX_VIEWS_PER_USER; i++) open.push(await attached(world, member, "m"));
    for (let i = 0; i < MAX_VIEWS_PER_USER; i++) open.push(await attached(world, owner, "m", { userId: member.user.id }));
    expect(MAX_VIEWS_PER_SESSION).toBe(2 * MAX_VIEWS_PER_USER);
    const refused = await openTerminal(world, admin, "m", { userId: member.user.id });
    expect({ code: await refused.closed, reason: refused.closeReason }).toEqual({ code: 4429, reason: "The session has 32 views open, as many as it takes" });
    for (const view of open) view.close();
  });

  test("an input message larger than the input burst (64 KiB) is refused whole, with a notice that says so", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const terminal = await attached(world, owner, "s");
    terminal.type("x".repeat(64 * 1024 + 1));
    const notice = await terminal.control("notice");
    expect(notice.message).toBe("Input of 65537 bytes in one message was dropped: send at most 65536 bytes per message");
    await runAndSee(terminal, "\x15echo still-$((2+2))\r", "still-4");
    expect(terminal.output).not.toContain("xxxxxxxxxx");
  });

  test("no cookie, a bad cookie and a role without the terminal are closed with 4401", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const viewer = await world.signedIn(project, "viewer");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    expect(await (await openTerminal(world, null, "s")).closed).toBe(4401);
    const forged = world.anonymous();
    forged.cookies.set("hatch_session", "forged-value");
    expect(await (await openTerminal(world, { user: owner.user, client: forged }, "s")).closed).toBe(4401);
    // The owner's own cookie, sent beside another of the same name (one side planted by a page on another port): neither counts.
    const doubled = world.anonymous();
    doubled.cookies.set("hatch_session", `${owner.client.cookies.get("hatch_session")}; hatch_session=${viewer.client.cookies.get("hatch_session")}`);
    expect(await (await openTerminal(world, { user: owner.user, client: doubled }, "s")).closed).toBe(4401);
    expect(await (await openTerminal(world, viewer, "s")).closed).toBe(4401);
    // Authenticated, but no such session in the caller's scope.
    expect(await (await openTerminal(world, owner, "missing")).closed).toBe(4404);
  });

  test("a malformed upgrade has its socket destroyed with no handshake and no close code", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const port = Number(new URL(world.hatch.companionUrl).port);
    // Resolves with the first bytes the server sends, or "" when it closes without a word.
    const raw = (request: string) =>
      new Promise<string>((resolve) => {
        const socket = connect(port, "127.0.0.1", () => socket.write(request));
        socket.on("data", (d) => {
          resolve(d.toString());
          socket.destroy();
        });
        socket.on("close", () => resolve(""));
      });
    const upgrade = (path: string, host: string) =>
      `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nCookie: ${owner.client.cookieHeader}\r\n\r\n`;
    expect(await raw(upgrade("/ws/terminal/s", "bad host\\name"))).toBe("");
    expect(await raw(upgrade("/ws/terminal/%73", "127.0.0.1"))).toBe("");
    expect(await raw(upgrade("/ws/terminal/missing%2F..", "127.0.0.1"))).toBe("");
    // The same request, well formed, gets a handshake: the refusal above was about form alone.
    expect(await raw(upgrade("/ws/terminal/s", "127.0.0.1"))).toStartWith("HTTP/1.1 101");
  });

  test("a frame ws cannot accept (not UTF-8) closes the connection with 1007 and is logged by its code, not thrown", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const warnings: string[] = [];
    const warn = spyOn(console, "warn").mockImplementation((line: string) => void warnings.push(line));
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => void uncaught.push(error);
    process.on("uncaughtException", onUncaught);
    try {
      const client = await RawWebSocket.open(terminalUrl(world, "s"), { cookie: owner.client.cookieHeader });
      await waitFor(() => client.texts.some((t) => JSON.parse(t).type === "snapshot"), "the snapshot");
      client.sendText(Buffer.from([0xff, 0xfe]));
      await waitFor(() => client.closeCode !== null, "the close frame");
      expect(client.closeCode).toBe(1007);
      await waitFor(() => warnings.length > 0, "the log line");
      expect(warnings).toEqual(["hatch: refused a terminal connection (bad_frame WS_ERR_INVALID_UTF8)"]);
      client.destroy();
      await Bun.sleep(50);
    } finally {
      process.off("uncaughtException", onUncaught);
      warn.mockRestore();
    }
    expect(uncaught).toEqual([]);
  });

  test("a page from a foreign origin is refused with 403 before any lookup; the web host's pages, the configured origins and clients that are not browsers get a handshake", async () => {
    await using world = await startWorld({ HATCH_ALLOWED_ORIGINS: "https://hatch.example.com" });
    const owner = await world.signedIn(await world.project(), "owner");
    await createSession(owner.client, { sourceSlug: "container-root", id: "s" });
    const companion = new URL(world.hatch.companionUrl);
    const web = new URL(world.hatch.url);
    const statusLine = (path: string, origin: string | null) =>
      new Promise<string>((resolve) => {
        const socket = connect(Number(companion.port), "127.0.0.1", () =>
          socket.write(
            `GET ${path} HTTP/1.1\r\nHost: ${companion.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n` +
              `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nCookie: ${owner.client.cookieHeader}\r\n${origin === null ? "" : `Origin: ${origin}\r\n`}\r\n`,
          ),
        );
        socket.on("data", (d) => {
          resolve(d.toString().split("\r\n")[0]!);
          socket.destroy();
        });
        socket.on("close", () => resolve(""));
      });
    // Another port of the same host is the same site: the cookie goes along, so only the origin tells it apart.
    const otherPort = [1, 2].map((d) => Number(web.port) + d).find((p) => p !== Number(companion.port));
    for (const origin of [`http://127.0.0.1:${otherPort}`, "http://evil.example", "null", "file://", `http://localhost:${web.port}`]) {
      expect(await statusLine("/ws/terminal/s", origin)).toBe("HTTP/1.1 403 Forbidden");
      // The same answer for a session that does not exist: nothing was looked up.
      expect(await statusLine("/ws/terminal/missing", origin)).toBe("HTTP/1.1 403 Forbidden");
    }
    for (const origin of [world.hatch.url, `https://127.0.0.1:${web.port}`, world.hatch.companionUrl, "https://hatch.example.com", null]) {
      expect(await statusLine("/ws/terminal/s", origin)).toBe("HTTP/1.1 101 Switching Protocols");
    }
  });
});

describe("a supervisor at someone else's keyboard", () => {
  /** The `lease` entries of the project's terminal audit, oldest first: who got which user's keyboard, and how. */
  function leaseEntries(world: { platform: { audit: { query(q: object): { userId: string | null; detail: Record<string, unknown> | null }[] } } }, projectId: string) {
    return world.platform.audit
      .query({ projectId, action: "terminal.session" })
      .reverse()
      .filter((entry) => entry.detail?.event === "lease")
      .map((entry) => ({ userId: entry.userId, via: entry.detail?.via, sessionUserId: entry.detail?.sessionUserId }));
  }

  test("taking control of another user's session is audited (terminal.session, lease via take_control); the owner taking it back is not", async () => {
    await using world = await startWorld();
    const { project, member, admin } = await sessionAnAdminSupervises(world);
    const own = await attached(world, member, "s");
    await own.control("lease", (c) => c.you === true);
    const supervisor = await attached(world, admin, "s", { userId: member.user.id });
    supervisor.send({ type: "takeControl" });
    await own.control("lease", (c) => c.userId === admin.user.id);
    await runAndSee(supervisor, "echo typed-by-supervisor-$((40+2))", "typed-by-supervisor-42");
    own.send({ type: "takeControl" });
    await supervisor.control("lease", (c) => c.userId === member.user.id);
    expect(leaseEntries(world, project.id)).toEqual([{ userId: admin.user.id, via: "take_control", sessionUserId: member.user.id }]);
  });

  test("while the owner's view holds the lease, a supervisor's HTTP resize is refused (409 lease_held) and the size stays the owner's; the owner's own resize goes through", async () => {
    await using world = await startWorld();
    const { member, admin } = await sessionAnAdminSupervises(world);
    const own = await attached(world, member, "s");
    await own.control("lease", (c) => c.you === true);
    const refused = await admin.client.post(`${TERMINAL}/sessions/s/resize?userId=${member.user.id}`, { cols: 40, rows: 10 });
    expect({ status: refused.status, code: refused.body.error?.code }).toEqual({ status: 409, code: "lease_held" });
    expect((await member.client.post(`${TERMINAL}/sessions/s/resize`, { cols: 91, rows: 23 })).status).toBe(200);
    await runAndSee(own, "stty size", "23 91");
    own.close();
    await own.closed;
    // Nobody holds it once the owner's view left: the supervisor may size the session again.
    expect((await admin.client.post(`${TERMINAL}/sessions/s/resize?userId=${member.user.id}`, { cols: 100, rows: 30 })).status).toBe(200);
  });

  test("a user's HTTP resize held back in the interval is dropped when another user's view takes the lease before it is due", async () => {
    await using world = await startWorld();
    const { project, member, admin } = await sessionAnAdminSupervises(world);
    const session = world.hatch.terminal.sessions.find({ userId: member.user.id, projectId: project.id, agentId: null, id: "s" })!;
    const supervising = await attached(world, admin, "s", { userId: member.user.id });
    const supervisorView = session.views.leaseHolder!;
    const own = await attached(world, member, "s");
    own.send({ type: "takeControl" });
    await own.control("lease", (c) => c.you === true);
    // Asked while the member's own view holds the lease: the first applies, the second is held for the interval.
    expect(session.resize({ userId: member.user.id }, 100, 30)).toBe(true);
    expect(session.resize({ userId: member.user.id }, 101, 31)).toBe(true);
    expect(session.views.takeControl(supervisorView)).toBe(true);
    await supervising.control("lease", (c) => c.you === true);
    await Bun.sleep(150);
    await runAndSee(supervising, "stty size; echo sized-$((1+1))", "sized-2");
    expect({ size: [session.mirror.cols, session.mirror.rows], programSaw: supervising.output.includes("30 100") }).toEqual({ size: [100, 30], programSaw: true });
  });

  test("a supervisor attaching to an unwatched session holds its keyboard at once, and one handed it as the owner leaves: both are audited", async () => {
    await using world = await startWorld();
    const { project, member, admin } = await sessionAnAdminSupervises(world);
    const first = await attached(world, admin, "s", { userId: member.user.id });
    await first.control("lease", (c) => c.you === true);
    first.close();
    const own = await attached(world, member, "s");
    await own.control("lease", (c) => c.you === true);
    const watching = await attached(world, admin, "s", { userId: member.user.id });
    await watching.control("lease", (c) => c.you === false);
    own.close();
    await watching.control("lease", (c) => c.you === true);
    expect(leaseEntries(world, project.id)).toEqual([
      { userId: admin.user.id, via: "attach", sessionUserId: member.user.id },
      { userId: admin.user.id, via: "handed_on", sessionUserId: member.user.id },
    ]);
  });

  test("a supervisor's keyboard moving between their own views (a reconnect, a second tab taking control) is not a new lease entry: they held it already", async () => {
    await using world = await startWorld();
    const { project, member, admin } = await sessionAnAdminSupervises(world);
    const first = await attached(world, admin, "s", { userId: member.user.id });
    await first.control("lease", (c) => c.you === true);
    // The tab reconnects before its old connection is found gone: the lease passes to the new one as the old closes.
    const reconnected = await attached(world, admin, "s", { userId: member.user.id });
    await reconnected.control("lease", (c) => c.you === false);
    first.close();
    await reconnected.control("lease", (c) => c.you === true);
    const second = await attached(world, admin, "s", { userId: member.user.id });
    second.send({ type: "takeControl" });
    await second.control("lease", (c) => c.you === true);
    expect(leaseEntries(world, project.id)).toEqual([{ userId: admin.user.id, via: "attach", sessionUserId: member.user.id }]);
  });
});
