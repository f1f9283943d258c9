import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TERMINAL, attached, createSession, localSource, openTerminal, roleRules, runAndSee } from "../helpers/terminal.ts";
import type { Project } from "../../src/platform/index.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { commandWorkflow, fire, issueToken, waitForRun } from "../helpers/workflows.ts";
import { startWorld, type World } from "../helpers/world.ts";

describe("GET /terminal/sources", () => {
  test("a member sees exactly the tabs the specification says, with reasons and badges", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const store = world.hatch.terminal.sources;
    localSource(world, project, "docs", { member: "rwx" });
    localSource(world, project, "readonly", { member: "rx" });
    localSource(world, project, "noexec", { member: "rw" });
    const disabled = localSource(world, project, "off", { member: "rwx" });
    store.setEnabled(project.id, disabled.slug, false);
    const stopped = localSource(world, project, "stopped", { member: "rwx" });
    store.setRunning(project.id, stopped.slug, false);
    localSource(world, project, "hidden", { admin: "rwx" });
    store.add(project.id, { slug: "brain", kind: "brain" });
    store.add(project.id, { slug: "desk", kind: "webtop" });
    store.add(project.id, { slug: "host", kind: "host", root: "/srv" });

    const listing = await member.client.get(`${TERMINAL}/sources`);
    expect(listing.status).toBe(200);
    const bySlug = Object.fromEntries(listing.body.sources.map((s: any) => [s.slug, s]));
    expect(Object.keys(bySlug).sort()).toEqual(["docs", "noexec", "off", "readonly", "stopped"]);
    expect(bySlug.docs).toMatchObject({ selectable: true, readOnly: false, kind: "local" });
    expect(bySlug.docs.reason).toBeUndefined();
    expect(bySlug.readonly).toMatchObject({ selectable: true, readOnly: true });
    expect(bySlug.noexec).toMatchObject({ selectable: false, reason: expect.stringContaining("not allow running commands") });
    expect(bySlug.off).toMatchObject({ selectable: false, reason: "The source is disabled" });
    expect(bySlug.stopped).toMatchObject({ selectable: false, reason: "The source is not running" });
    expect(listing.body.confinement).toMatch(/^landlock/);
  });

  test("Container Root appears only to terminal.container holders, labelled for bare metal or a container; host tabs need terminal.native and say why they cannot open", async () => {
    await using world = await startWorld({ HATCH_IN_CONTAINER: "0" });
    const project = await world.project();
    const admin = await world.signedIn(project, "admin");
    const member = await world.signedIn(project, "member");
    const store = world.hatch.terminal.sources;
    const host = store.add(project.id, { slug: "host", kind: "host", root: "/srv" });
    store.addRule(host, { subjectKind: "user", subject: admin.user.id, effect: "allow", perms: "rwx" });
    store.add(project.id, { slug: "other-host", kind: "host", root: "/opt" });
    const adminTabs = (await admin.client.get(`${TERMINAL}/sources`)).body.sources;
    expect(adminTabs.find((s: any) => s.slug === "container-root")).toMatchObject({ label: "Process Root (/)", selectable: true, cwd: "/" });
    expect(adminTabs.find((s: any) => s.slug === "host")).toMatchObject({ selectable: false, unconfined: false, reason: expect.stringContaining("host broker") });
    const memberTabs = (await member.client.get(`${TERMINAL}/sources`)).body.sources;
    expect(memberTabs.map((s: any) => s.slug)).toEqual([]);
    const hostCreate = await createSession(admin.client, { sourceSlug: "host" });
    expect(hostCreate.status).toBe(503);
    // Without terminal.native: a host source their policy gives them nothing on is unknown to them (404); one it does, 403 for the feature.
    expect((await createSession(member.client, { sourceSlug: "host" })).status).toBe(404);
    store.addRule(host, { subjectKind: "role", subject: "member", effect: "allow", perms: "rx" });
    const noFeature = await createSession(member.client, { sourceSlug: "host" });
    expect({ status: noFeature.status, code: noFeature.body.error.code }).toEqual({ status: 403, code: "feature_required" });
    // terminal.native is not sufficient alone: a host source whose policy gives the caller nothing is not listed, and 404 like an unknown one.
    expect(adminTabs.map((s: any) => s.slug)).not.toContain("other-host");
    const unseen = await createSession(admin.client, { sourceSlug: "other-host" });
    const unknown = await createSession(admin.client, { sourceSlug: "nope" });
    expect({ status: unseen.status, code: unseen.body.error.code }).toEqual({ status: 404, code: unknown.body.error.code });
    // Disabled, it says so, as a local source does, rather than blaming the broker.
    store.setEnabled(project.id, "host", false);
    expect((await admin.client.get(`${TERMINAL}/sources`)).body.sources.find((s: any) => s.slug === "host")).toMatchObject({ selectable: false, reason: "The source is disabled" });
    const disabled = await createSession(admin.client, { sourceSlug: "host" });
    expect({ status: disabled.status, code: disabled.body.error.code }).toEqual({ status: 403, code: "source_disabled" });
    // Exec denied, it says that first, on the listing and on create (403, not the broker's 503).
    const readOnlyHost = store.add(project.id, { slug: "host-ro", kind: "host", root: "/srv" });
    store.addRule(readOnlyHost, { subjectKind: "user", subject: admin.user.id, effect: "allow", perms: "r" });
    const execDenied = "Your policy does not allow running commands here";
    expect((await admin.client.get(`${TERMINAL}/sources`)).body.sources.find((s: any) => s.slug === "host-ro")).toMatchObject({ selectable: false, reason: execDenied });
    const noExec = await createSession(admin.client, { sourceSlug: "host-ro" });
    expect({ status: noExec.status, error: noExec.body.error }).toEqual({ status: 403, error: { code: "exec_denied", message: `Cannot open "host-ro": ${execDenied}` } });

    await using inContainer = await startWorld({ HATCH_IN_CONTAINER: "1" });
    const other = await inContainer.signedIn(await inContainer.project(), "admin");
    expect((await other.client.get(`${TERMINAL}/sources`)).body.sources[0]).toMatchObject({ slug: "container-root", label: "Container Root (/)" });
  });

  test("a terminal.native holder offered no host source still sees the host tab, not selectable, saying why (and no fallback to /)", async () => {
    await using world = await startWorld({ HATCH_IN_CONTAINER: "0" });
    const project = await world.project();
    const admin = await world.signedIn(project, "admin");
    const member = await world.signedIn(project, "member");
    // One host source exists, but its policy gives the admin nothing.
    world.hatch.terminal.sources.add(project.id, { slug: "prod", kind: "host", root: "/srv" });
    const hostTabs = (await admin.client.get(`${TERMINAL}/sources`)).body.sources.filter((s: any) => s.kind === "host");
    expect(hostTabs).toEqual([
      { slug: "host", label: "Host", kind: "host", selectable: false, reason: "No host source is available to you, and the host broker is not provisioned", cwd: null, hostCwd: null, readOnly: true, unconfined: false, confinement: "unavailable" },
    ]);
    expect((await createSession(admin.client, { sourceSlug: "host" })).status).toBe(404);
    // Without terminal.native there is no host plane to explain.
    expect((await member.client.get(`${TERMINAL}/sources`)).body.sources).toEqual([]);
  });

  test("defaults are seeded at first attach for a source inside a deployment OS mount: owners and admins rwx, members read only; explicit entries win", async () => {
    using mount = tempDir("mount");
    await using world = await startWorld({ HATCH_OS_MOUNTS: mount.path });
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const owner = await world.signedIn(project, "owner");
    const store = world.hatch.terminal.sources;
    mkdirSync(join(mount.path, "a"));
    mkdirSync(join(mount.path, "b"));
    store.add(project.id, { slug: "seeded", kind: "local", root: join(mount.path, "a") });
    const explicit = store.add(project.id, { slug: "explicit", kind: "local", root: join(mount.path, "b") });
    store.addRule(explicit, { subjectKind: "role", subject: "member", effect: "allow", perms: "rx" });
    const memberTabs = Object.fromEntries((await member.client.get(`${TERMINAL}/sources`)).body.sources.map((s: any) => [s.slug, s]));
    expect(memberTabs.seeded).toMatchObject({ selectable: false, readOnly: true });
    expect(memberTabs.explicit).toMatchObject({ selectable: true, readOnly: true });
    const ownerTabs = Object.fromEntries((await owner.client.get(`${TERMINAL}/sources`)).body.sources.map((s: any) => [s.slug, s]));
    expect(ownerTabs.seeded).toMatchObject({ selectable: true, readOnly: false });
    expect(store.rules(store.require(project.id, "seeded").id).map((r) => [r.subject, r.perms, r.seeded])).toEqual([
      ["owner", "rwx", true],
      ["admin", "rwx", true],
      ["member", "r", true],
    ]);
  });
  test("a source rooted in a directory of an OS mount whose name starts with two dots is inside the mount and gets the defaults", async () => {
    using mount = tempDir("mount");
    await using world = await startWorld({ HATCH_OS_MOUNTS: mount.path });
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    mkdirSync(join(mount.path, "..data"));
    world.hatch.terminal.sources.add(project.id, { slug: "dotted", kind: "local", root: join(mount.path, "..data") });
    expect((await owner.client.get(`${TERMINAL}/sources`)).body.sources.find((s: any) => s.slug === "dotted")).toMatchObject({ selectable: true, readOnly: false });
  });

  test("an OS mount configured through a symlink (/data -> /mnt/data) still seeds the sources below its real path", async () => {
    using mount = tempDir("mount");
    const link = `${mount.path}-link`;
    symlinkSync(mount.path, link);
    await using world = await startWorld({ HATCH_OS_MOUNTS: link });
    world.onDispose(() => rmSync(link, { force: true }));
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    mkdirSync(join(mount.path, "docs"));
    // A source's root is stored as its real path (one reached through a symlink is refused), so only that can match.
    const source = world.hatch.terminal.sources.add(project.id, { slug: "docs", kind: "local", root: join(mount.path, "docs") });
    expect((await owner.client.get(`${TERMINAL}/sources`)).body.sources.find((s: any) => s.slug === "docs")).toMatchObject({ selectable: true, readOnly: false });
    expect(world.hatch.terminal.sources.rules(source.id).map((r) => [r.subject, r.perms, r.seeded])).toEqual([
      ["owner", "rwx", true],
      ["admin", "rwx", true],
      ["member", "r", true],
    ]);
  });
});

describe("create re-checks everything", () => {
  test("exec denied is 403, a source the caller cannot see is 404, an unknown source is 404", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    localSource(world, project, "noexec", { member: "rw" });
    localSource(world, project, "hidden", { admin: "rwx" });
    const denied = await createSession(member.client, { sourceSlug: "noexec" });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe("exec_denied");
    const hidden = await createSession(member.client, { sourceSlug: "hidden" });
    const unknown = await createSession(member.client, { sourceSlug: "nope" });
    expect(hidden.status).toBe(404);
    expect(hidden.body.error.code).toBe(unknown.body.error.code);
    expect(world.hatch.terminal.sessions.count()).toBe(0);
  });

  test("a disabled source is 403 source_disabled on create, whatever the caller's policy says of exec", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    for (const [slug, perms] of [["off-rwx", "rwx"], ["off-r", "r"]] as const) {
      localSource(world, project, slug, { member: perms });
      world.hatch.terminal.sources.setEnabled(project.id, slug, false);
      const refused = await createSession(member.client, { sourceSlug: slug });
      expect({ slug, status: refused.status, error: refused.body.error }).toEqual({ slug, status: 403, error: { code: "source_disabled", message: `Cannot open "${slug}": The source is disabled` } });
    }
    expect(world.hatch.terminal.sessions.count()).toBe(0);
  });

  test("a caller whose policy denies read at the source root gets no tab there, though exec is allowed: listed with a reason, 403 on create", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const source = localSource(world, project, "docs", { member: "rwx" });
    writeFileSync(join(source.root, "secret.txt"), "not for this member");
    world.hatch.terminal.sources.addRule(source, { subjectKind: "user", subject: member.user.id, effect: "deny", perms: "r" });
    const reason = "Your policy does not allow reading here";
    expect((await member.client.get(`${TERMINAL}/sources`)).body.sources).toEqual([expect.objectContaining({ slug: "docs", selectable: false, reason })]);
    const refused = await createSession(member.client, { sourceSlug: "docs", id: "d" });
    expect({ status: refused.status, error: refused.body.error }).toEqual({ status: 403, error: { code: "source_unavailable", message: `Cannot open "docs": ${reason}` } });
    expect(world.hatch.terminal.sessions.count()).toBe(0);
  });

  test("a local source served by a connector that is not a terminal plane is listed with a reason and refused on create", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const admin = await world.signedIn(project, "admin");
    const member = await world.signedIn(project, "member");
    expect((await admin.client.post("/api/sources", { slug: "indexed", kind: "local", root: world.tempDir("indexed"), connector: "vector" })).status).toBe(201);
    expect((await admin.client.post("/api/sources/indexed/rules", { subjectKind: "role", subject: "member", effect: "allow", perms: "rwx" })).status).toBe(201);
    const reason = "The source's connector (vector) is not a terminal plane";
    expect((await member.client.get(`${TERMINAL}/sources`)).body.sources).toEqual([expect.objectContaining({ slug: "indexed", selectable: false, reason })]);
    const refused = await createSession(member.client, { sourceSlug: "indexed" });
    expect({ status: refused.status, error: refused.body.error }).toEqual({ status: 403, error: { code: "source_unavailable", message: `Cannot open "indexed": ${reason}` } });
    expect(world.hatch.terminal.sessions.count()).toBe(0);
  });

  test("a cwd inside the source whose name starts with two dots opens there; one above the root is refused", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const source = localSource(world, project, "docs", { member: "rx" });
    mkdirSync(join(source.root, "..cache"));
    const created = await createSession(member.client, { sourceSlug: "docs", id: "c", cwd: "..cache" });
    expect({ status: created.status, cwd: created.body.cwd }).toEqual({ status: 201, cwd: join(source.root, "..cache") });
    const above = await createSession(member.client, { sourceSlug: "docs", id: "u", cwd: ".." });
    expect({ status: above.status, code: above.body.error.code }).toEqual({ status: 400, code: "invalid_cwd" });
  });

  test("a cwd answers alike whether it is missing, outside the source, a file, or hidden by the policy or by hatch: no name leaks", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const source = localSource(world, project, "docs", { member: "rwx" });
    mkdirSync(join(source.root, "secret", "layoffs-2025"), { recursive: true });
    mkdirSync(join(source.root, "open"));
    writeFileSync(join(source.root, "open", "notes.txt"), "x");
    symlinkSync(join(source.root, "secret"), join(source.root, "open", "way-in"));
    roleRules(world, source, "member", "deny r on secret");
    const tries = {
      deniedExisting: "secret/layoffs-2025",
      deniedMissing: "secret/layoffs-2026",
      deniedThroughLink: "open/way-in/layoffs-2025",
      missing: "open/nope",
      file: "open/notes.txt",
      above: "../..",
      dataDir: world.config.dataDir,
      dataDirMissing: join(world.config.dataDir, "nope"),
      elsewhere: "/etc",
    };
    const answers: Record<string, string> = {};
    for (const [name, cwd] of Object.entries(tries)) {
      const refused = await createSession(member.client, { sourceSlug: "docs", id: name, cwd });
      answers[name] = `${refused.status} ${refused.body.error.code} ${refused.body.error.message.replace(JSON.stringify(cwd), "CWD")}`;
    }
    const one = `400 invalid_cwd Cannot open "docs" in CWD: not a directory inside the source that you may read`;
    expect(answers).toEqual(Object.fromEntries(Object.keys(tries).map((name) => [name, one])));
    expect((await createSession(member.client, { sourceSlug: "docs", id: "ok", cwd: "open" })).status).toBe(201);
  });

  test("a read-only tab cannot write anywhere but scratch; a writable one writes in its root only", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const ro = localSource(world, project, "ro", { member: "rx" });
    const rw = localSource(world, project, "rw", { member: "rwx" });
    expect((await createSession(member.client, { sourceSlug: "ro", id: "ro" })).body).toMatchObject({ readOnly: true });
    const roTry = await member.client.post(`${TERMINAL}/sessions/ro/exec`, { command: `touch ${ro.root}/x 2>&1; touch $TMPDIR/y && echo scratch-ok` });
    expect(roTry.body.output).toContain("scratch-ok");
    expect(existsSync(join(ro.root, "x"))).toBe(false);
    expect((await createSession(member.client, { sourceSlug: "rw", id: "rw" })).body).toMatchObject({ readOnly: false, cwd: rw.root });
    const rwTry = await member.client.post(`${TERMINAL}/sessions/rw/exec`, { command: `touch ${rw.root}/x && echo wrote; touch ${ro.root}/z 2>/dev/null || echo denied` });
    expect(rwTry.body.output).toBe("wrote\ndenied\n");
    expect(existsSync(join(ro.root, "z"))).toBe(false);
  });

  test("a writable rule on a path that does not exist yet leaves the tab read-only (RO badge) until the path exists", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const source = localSource(world, project, "later", { member: "rx" });
    roleRules(world, source, "member", "allow rwx on drafts");
    const tab = async () => (await member.client.get(`${TERMINAL}/sources`)).body.sources.find((s: any) => s.slug === "later");
    expect(await tab()).toMatchObject({ selectable: true, readOnly: true });
    expect((await createSession(member.client, { sourceSlug: "later", id: "before" })).body.readOnly).toBe(true);
    // And it is: the tab can create nothing, drafts included.
    const probe = await member.client.post(`${TERMINAL}/sessions/before/exec`, { command: "mkdir drafts 2>/dev/null || echo denied" });
    expect(probe.body.output).toBe("denied\n");

    mkdirSync(join(source.root, "drafts"));
    expect(await tab()).toMatchObject({ selectable: true, readOnly: false });
    expect((await createSession(member.client, { sourceSlug: "later", id: "after" })).body.readOnly).toBe(false);
  });

  test("a source whose rules differ by path is confined path by path; its tab is read-only only when nothing is writable", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const source = localSource(world, project, "mixed", { member: "rx" });
    mkdirSync(join(source.root, "out"));
    mkdirSync(join(source.root, "secret"));
    writeFileSync(join(source.root, "secret", "key.txt"), "top secret");
    roleRules(world, source, "member", "allow rwx on out", "deny r on secret");
    const created = await createSession(member.client, { sourceSlug: "mixed", id: "m" });
    expect(created.body.readOnly).toBe(false);
    const probe = await member.client.post(`${TERMINAL}/sessions/m/exec`, {
      command: `touch out/ok && echo out-ok; touch top 2>/dev/null || echo top-denied; cat secret/key.txt 2>/dev/null || echo secret-denied`,
    });
    expect(probe.body.output).toBe("out-ok\ntop-denied\nsecret-denied\n");
  });

  for (const confinement of ["auto", "landlock"]) {
    test(`a path a rule makes read-only cannot be created and written from a session opened before it exists (HATCH_CONFINEMENT=${confinement})`, async () => {
      await using world = await startWorld({ HATCH_CONFINEMENT: confinement });
      const project = await world.project();
      const member = await world.signedIn(project, "member");
      const source = localSource(world, project, "frozen-src", { member: "rwx" });
      mkdirSync(join(source.root, "work"));
      roleRules(world, source, "member", "deny w on frozen");
      expect((await createSession(member.client, { sourceSlug: "frozen-src", id: "f" })).status).toBe(201);
      const probe = await member.client.post(`${TERMINAL}/sessions/f/exec`, {
        command: "mkdir frozen 2>/dev/null && echo made; { echo data > frozen/x; } 2>/dev/null && echo wrote; touch work/ok && echo work-ok",
      });
      expect(probe.body.output).toBe("work-ok\n");
      expect(existsSync(join(source.root, "frozen"))).toBe(false);
    });
  }

  for (const confinement of ["auto", "landlock"]) {
    test(`a path whose rule denies x runs no program, yet stays readable and writable; a deeper allow runs again (HATCH_CONFINEMENT=${confinement})`, async () => {
      await using world = await startWorld({ HATCH_CONFINEMENT: confinement });
      const project = await world.project();
      const member = await world.signedIn(project, "member");
      const source = localSource(world, project, "uploads-src", { member: "rwx" });
      const script = (path: string, says: string) => writeFileSync(join(source.root, path), `#!/bin/sh\necho ${says}\n`, { mode: 0o755 });
      mkdirSync(join(source.root, "uploads", "tools"), { recursive: true });
      script("tool.sh", "tool-ran");
      script("uploads/run.sh", "upload-ran");
      script("uploads/tools/ok.sh", "tools-ran");
      roleRules(world, source, "member", "deny x on uploads", "allow x on uploads/tools");
      expect((await createSession(member.client, { sourceSlug: "uploads-src", id: "u" })).status).toBe(201);
      const probe = await member.client.post(`${TERMINAL}/sessions/u/exec`, {
        command: "./tool.sh; ./uploads/run.sh 2>/dev/null || echo upload-denied; grep -c upload-ran uploads/run.sh; touch uploads/new && echo upload-writable; ./uploads/tools/ok.sh; touch top-new && echo top-writable",
      });
      // The source's own top level stays writable: Landlock carves the no-exec dir out of it without taking create rights.
      expect(probe.body.output).toBe("tool-ran\nupload-denied\n1\nupload-writable\ntools-ran\ntop-writable\n");
    });
  }

  test("a source tab carries no agent context: rules naming an agent never apply", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const agent = world.agent(project, member.user);
    const source = localSource(world, project, "agenty", {});
    world.hatch.terminal.sources.addRule(source, { subjectKind: "agent", subject: agent.id, effect: "allow", perms: "rwx" });
    expect((await createSession(member.client, { sourceSlug: "agenty", agentId: agent.id })).status).toBe(404);
    expect((await member.client.get(`${TERMINAL}/sources`)).body.sources).toEqual([]);
  });

  test("a root that is a symlink out of its source, or missing, is refused before spawn", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const source = localSource(world, project, "linky", { member: "rx" });
    const outside = world.tempDir("outside");
    symlinkSync(outside, join(source.root, "escape"));
    roleRules(world, source, "member", "allow rwx on escape");
    const refused = await createSession(member.client, { sourceSlug: "linky" });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe("root_invalid");
    expect(world.hatch.terminal.sessions.count()).toBe(0);
  });

  test("a source inside the system's code (/usr/local) opens read-only but is refused writable, even to its admins", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const admin = await world.signedIn(project, "admin");
    const store = world.hatch.terminal.sources;
    const source = store.add(project.id, { slug: "usr-local", kind: "local", root: "/usr/local" });
    store.addRule(source, { subjectKind: "role", subject: "member", effect: "allow", perms: "rx" });
    store.addRule(source, { subjectKind: "role", subject: "admin", effect: "allow", perms: "rwx" });

    const tab = async (person: typeof member) => (await person.client.get(`${TERMINAL}/sources`)).body.sources.find((s: any) => s.slug === "usr-local");
    expect(await tab(member)).toMatchObject({ selectable: true, readOnly: true });
    expect((await createSession(member.client, { sourceSlug: "usr-local", id: "ro" })).status).toBe(201);
    // The listing says so before a create can fail.
    const reason = "Your policy lets you write the source's root, which lies inside /usr: no tab may write hatch's own code or the system's";
    expect(await tab(admin)).toMatchObject({ selectable: false, reason });
    const refused = await createSession(admin.client, { sourceSlug: "usr-local", id: "rw" });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: "root_invalid", message: `Cannot open "usr-local": ${reason}` });
    expect(world.hatch.terminal.sessions.count()).toBe(1);

    // A writable rule below a read-only root is named by its path.
    roleRules(world, source, "member", "allow rwx on share");
    expect(await tab(member)).toMatchObject({ selectable: false, reason: expect.stringContaining(`Your policy lets you write "share", which lies inside /usr:`) });
    expect((await createSession(member.client, { sourceSlug: "usr-local", id: "share" })).body.error.code).toBe("root_invalid");
  });

  test("a source at a shared system dir (/home) opens read-only, and writable is refused on the listing before create", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const admin = await world.signedIn(project, "admin");
    const store = world.hatch.terminal.sources;
    const source = store.add(project.id, { slug: "homes", kind: "local", root: "/home" });
    store.addRule(source, { subjectKind: "role", subject: "member", effect: "allow", perms: "rx" });
    store.addRule(source, { subjectKind: "role", subject: "admin", effect: "allow", perms: "rwx" });
    const tab = async (person: typeof member) => (await person.client.get(`${TERMINAL}/sources`)).body.sources.find((s: any) => s.slug === "homes");
    expect(await tab(member)).toMatchObject({ selectable: true, readOnly: true });
    expect((await createSession(member.client, { sourceSlug: "homes", id: "ro" })).status).toBe(201);
    const reason = "Your policy lets you write the source's root, which is or contains a shared system directory (such as /home, /tmp or /var): a tab may write below one, never all of it";
    expect(await tab(admin)).toMatchObject({ selectable: false, reason });
    const refused = await createSession(admin.client, { sourceSlug: "homes", id: "rw" });
    expect({ status: refused.status, error: refused.body.error }).toMatchObject({ status: 400, error: { code: "root_invalid", message: `Cannot open "homes": ${reason}` } });
  });

  describe("a source whose root another tab turned into a symlink cannot be opened, wherever the link points", () => {
    const targets: [string, (world: World, project: Project) => string][] = [
      ["another team's source", (world, project) => localSource(world, project, "payroll", { admin: "rwx" }).root],
      ["a dir under /root (a hidden host secret)", (world) => ownDir(world, "/root")],
      ["a dir under /etc (as /etc/cron.d would be)", (world) => ownDir(world, "/etc")],
      ["a dir under /tmp that bwrap hides (unix sockets of unconfined processes)", (world) => ownDir(world, "/tmp")],
    ];
    for (const [name, target] of targets) {
      test(name, async () => {
        await using world = await startWorld();
        const project = await world.project();
        const member = await world.signedIn(project, "member");
        // A monorepo the member may write, and a narrower source for one of its folders.
        const mono = localSource(world, project, "mono", { member: "rwx" });
        mkdirSync(join(mono.root, "docs"));
        const docs = world.hatch.terminal.sources.add(project.id, { slug: "docs", kind: "local", root: join(mono.root, "docs") });
        world.hatch.terminal.sources.addRule(docs, { subjectKind: "role", subject: "member", effect: "allow", perms: "rwx" });
        const destination = target(world, project);
        writeFileSync(join(destination, "secret"), "not for members");
        expect((await createSession(member.client, { sourceSlug: "docs", id: "before" })).status).toBe(201);
        expect((await createSession(member.client, { sourceSlug: "mono", id: "mono" })).status).toBe(201);

        const swap = await member.client.post(`${TERMINAL}/sessions/mono/exec`, { command: `rmdir docs && ln -s ${destination} docs && echo swapped` });
        expect(swap.body.output).toBe("swapped\n");

        const reason = "The source's root is reached through a symbolic link; an admin must add it by its real path";
        const refused = await createSession(member.client, { sourceSlug: "docs", id: "after" });
        expect(refused.status).toBe(403);
        expect(refused.body.error).toEqual({ code: "source_unavailable", message: `Cannot open "docs": ${reason}` });
        const listed = (await member.client.get(`${TERMINAL}/sources`)).body.sources.find((s: any) => s.slug === "docs");
        expect(listed).toMatchObject({ selectable: false, reason });
        // The session opened before the swap is held to the source as it is now.
        const exec = await member.client.post(`${TERMINAL}/sessions/before/exec`, { command: "cat secret" });
        expect(exec.status).toBe(403);
        expect(exec.body.error.code).toBe("source_narrowed");
        expect(world.hatch.terminal.sessions.count()).toBe(2);
      });
    }
  });

  test("a source rooted above a shared temp dir (/var holds /var/tmp) does not bring the host's copy of it into the sandbox", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const source = world.hatch.terminal.sources.add(project.id, { slug: "var", kind: "local", root: "/var" });
    world.hatch.terminal.sources.addRule(source, { subjectKind: "role", subject: "member", effect: "allow", perms: "rx" });
    // Where unconfined programs keep their sockets and temp files.
    const shared = ownDir(world, "/var/tmp");
    writeFileSync(join(shared, "flag"), "host-only");
    expect((await createSession(member.client, { sourceSlug: "var", id: "v" })).status).toBe(201);
    const confinement = (await member.client.get(`${TERMINAL}/sessions`)).body.sessions[0].confinement;
    const seen = await member.client.post(`${TERMINAL}/sessions/v/exec`, { command: `cat ${shared}/flag 2>/dev/null || echo hidden; ls /var/lib >/dev/null && echo root-readable` });
    // Only bwrap hides the shared dirs; Landlock alone reads them like any other path.
    expect(seen.body.output).toBe(confinement === "landlock+bwrap" ? "hidden\nroot-readable\n" : "host-only\nroot-readable\n");
  });

  test("a holder of exec.unconfined gets the bare spawn, without an RO badge the policy would give a confined tab", async () => {
    await using world = await startWorld();
    const project = await world.project();
    world.platform.roles.grant(project.id, "member", "exec.unconfined");
    const member = await world.signedIn(project, "member");
    const source = localSource(world, project, "bare", { member: "rx" });
    const entry = (await member.client.get(`${TERMINAL}/sources`)).body.sources.find((s: { slug: string }) => s.slug === "bare");
    expect(entry).toMatchObject({ selectable: true, readOnly: false, confinement: "none" });
    const created = await createSession(member.client, { sourceSlug: "bare", id: "b" });
    expect(created.status).toBe(201);
    expect(created.body.readOnly).toBe(false);
    const listed = (await member.client.get(`${TERMINAL}/sessions`)).body.sessions[0];
    expect(listed).toMatchObject({ confinement: "none", readOnly: false });
    const write = await member.client.post(`${TERMINAL}/sessions/b/exec`, { command: `touch ${source.root}/x && echo bare-write` });
    expect(write.body.output).toContain("bare-write");
  });
});

describe("what one user's sandbox sees of another's", () => {
  /** Alice and Bob, members with tabs on one source, and a token-like value only Bob's side knows. */
  async function aliceAndBob(world: World) {
    const project = await world.project();
    const alice = await world.signedIn(project, "member");
    const bob = await world.signedIn(project, "member");
    localSource(world, project, "docs", { member: "rwx" });
    expect((await createSession(alice.client, { sourceSlug: "docs", id: "a" })).status).toBe(201);
    return { alice, bob, value: `ghp_${crypto.randomUUID().replaceAll("-", "")}` };
  }

  test("with Landlock alone, a session's environment never shows on the command line other sandboxes can read", async () => {
    await using world = await startWorld({ HATCH_CONFINEMENT: "landlock" });
    const { alice, bob, value } = await aliceAndBob(world);
    // A name the sanitiser lets through, with a value only Bob knows; each of his execs starts a helper with it.
    expect((await createSession(bob.client, { sourceSlug: "docs", id: "b", env: { BOB_NOTE: value } })).status).toBe(201);
    // It reached his session: a name the sanitiser strips would make what follows prove nothing.
    expect((await bob.client.post(`${TERMINAL}/sessions/b/exec`, { command: "echo $BOB_NOTE" })).body.output).toBe(`${value}\n`);
    // Alice polls every process's command line and environment while Bob's helpers start.
    const watch = `/usr/bin/python3 -c '
import os, time
end = time.time() + 2.5
while time.time() < end:
    for pid in os.listdir("/proc"):
        if not pid.isdigit(): continue
        for name in ("cmdline", "environ"):
            try: raw = open("/proc/%s/%s" % (pid, name), "rb").read()
            except OSError: continue
            if any(entry.startswith(b"BOB_NOTE=") for entry in raw.split(b"\\0")): print("seen in", name); raise SystemExit
print("scanned")
'`;
    const watching = alice.client.post(`${TERMINAL}/sessions/a/exec`, { command: watch, timeoutSeconds: 10 });
    await Bun.sleep(200);
    for (let i = 0; i < 20; i++) expect((await bob.client.post(`${TERMINAL}/sessions/b/exec`, { command: "true" })).status).toBe(200);
    expect((await watching).body.output).toBe("scanned\n");
  });

  test("with Landlock alone, the text of another user's exec or workflow run never shows on a command line", async () => {
    await using world = await startWorld({ HATCH_CONFINEMENT: "landlock" });
    const { alice, bob, value } = await aliceAndBob(world);
    expect((await createSession(bob.client, { sourceSlug: "docs", id: "b" })).status).toBe(201);
    // Alice lists every command line for a while: she must see Bob's sleeps (so his processes are in view; the host's
    // others are not counted) but never his value, which her own command line holds only in two halves.
    const watch = `/usr/bin/python3 -c '
import os, time
value = b"${value.slice(0, 10)}" + b"${value.slice(10)}"
end, sleeps = time.time() + 3, set()
while time.time() < end:
    for pid in os.listdir("/proc"):
        if not pid.isdigit(): continue
        try: args = open("/proc/%s/cmdline" % pid, "rb").read().split(b"\\0")
        except OSError: continue
        if any(value in arg for arg in args): print("seen"); raise SystemExit
        if args[0].endswith(b"sleep") and args[1] in (b"1.31", b"1.71"): sleeps.add(args[1].decode())
print("scanned", *sorted(sleeps))
'`;
    const watching = alice.client.post(`${TERMINAL}/sessions/a/exec`, { command: watch, timeoutSeconds: 10 });
    await Bun.sleep(300);
    const workflow = await commandWorkflow(bob, `sleep 1.31; : ${value}`);
    const { token } = await issueToken(bob.client, workflow.id);
    const run = fire(world, workflow.id, token);
    const exec = await bob.client.post(`${TERMINAL}/sessions/b/exec`, { command: `sleep 1.71; : ${value}; echo done` });
    expect(exec.body.output).toBe("done\n");
    expect((await waitForRun(bob.client, workflow.id, (await run).body.runId)).status).toBe("succeeded");
    expect((await watching).body.output).toBe("scanned 1.31 1.71\n");
  });

  test("with bwrap, a session's environment never shows on the host's command lines while it runs", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const bob = await world.signedIn(project, "member");
    localSource(world, project, "docs", { member: "rwx" });
    const value = `ghp_${crypto.randomUUID().replaceAll("-", "")}`;
    const created = await createSession(bob.client, { sourceSlug: "docs", id: "b", env: { BOB_NOTE: value } });
    expect(created.status).toBe(201);
    const exec = await bob.client.post(`${TERMINAL}/sessions/b/exec`, { command: "echo $BOB_NOTE" });
    expect(exec.body.output).toBe(`${value}\n`);
    // Nor can the program read it, or the server's, off bwrap's own PID 1 inside the sandbox. The input screen refuses
    // `cat /proc/1/environ` before it runs; the sandbox is what is tested here, so the read is one the screen cannot parse.
    const environ = `/usr/bin/python3 -c '
import sys
for pid in sys.argv[1:]:
    try: open("/proc/" + pid + "/env" + "iron", "rb").read(); print(pid + "-readable")
    except OSError: print(pid + "-refused")
' self 1`;
    const init = await bob.client.post(`${TERMINAL}/sessions/b/exec`, { command: environ });
    expect(init.body.output).toBe("self-readable\n1-refused\n");
    // bwrap's outer process stays on the host for the session's whole life; anyone there can read its command line.
    const commandLines = readdirSync("/proc")
      .filter((pid) => /^\d+$/.test(pid))
      .map((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, "latin1");
        } catch {
          return "";
        }
      });
    expect(commandLines.some((line) => line.includes("bwrap"))).toBe(true);
    expect(commandLines.filter((line) => line.includes(value))).toEqual([]);
  });
});

describe("reattach re-checks authority", () => {
  test("when the source narrows after creation the session cannot be reopened or exec'd in, but a supervisor still sees and terminates it", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const admin = await world.signedIn(project, "admin");
    localSource(world, project, "docs", { member: "rwx" });
    await createSession(member.client, { sourceSlug: "docs", id: "d" });
    const first = await attached(world, member, "d");
    await runAndSee(first, "echo confined-$((2+2))", "confined-4");
    first.close();
    await first.closed;
    world.hatch.terminal.sources.setEnabled(project.id, "docs", false);
    const refused = await openTerminal(world, member, "d");
    expect(await refused.closed).toBe(4403);
    const exec = await member.client.post(`${TERMINAL}/sessions/d/exec`, { command: "echo ran" });
    expect({ status: exec.status, code: exec.body.error.code }).toEqual({ status: 403, code: "source_narrowed" });
    // Resizing over HTTP is driving the session too: refused like a read-only view's resize.
    const resize = await member.client.post(`${TERMINAL}/sessions/d/resize`, { cols: 100, rows: 30 });
    expect({ status: resize.status, code: resize.body.error.code }).toEqual({ status: 403, code: "source_narrowed" });
    const all = (await admin.client.get(`${TERMINAL}/sessions?scope=project`)).body.sessions;
    expect(all.map((s: any) => [s.cols, s.rows])).toEqual([[80, 24]]);
    expect(all.map((s: any) => s.id)).toEqual(["d"]);
    expect((await admin.client.delete(`${TERMINAL}/sessions/d?userId=${member.user.id}`)).status).toBe(200);
  });

  test("once the source narrowed for its owner, the owner cannot read the session's screen over HTTP either, while a supervisor still can", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const admin = await world.signedIn(project, "admin");
    localSource(world, project, "docs", { member: "rwx" });
    expect((await createSession(member.client, { sourceSlug: "docs", id: "d" })).status).toBe(201);
    const first = await attached(world, member, "d");
    await runAndSee(first, "echo visible-$((6*7))", "visible-42");
    first.close();
    await first.closed;
    const supervised = () => admin.client.get(`${TERMINAL}/sessions/d/read?userId=${member.user.id}`);
    await waitFor(async () => (await supervised()).body.lines?.includes("visible-42"), "the printed line in the scrollback");
    world.hatch.terminal.sources.setEnabled(project.id, "docs", false);
    expect(await (await openTerminal(world, member, "d")).closed).toBe(4403);
    const read = await member.client.get(`${TERMINAL}/sessions/d/read`);
    expect({ status: read.status, code: read.body.error?.code }).toEqual({ status: 403, code: "source_narrowed" });
    expect(JSON.stringify(read.body)).not.toContain("visible-42");
    // A supervisor may still look at it (as its WebSocket view may), to see what it shows before terminating it.
    const watched = await supervised();
    expect({ status: watched.status, sees: watched.body.lines?.includes("visible-42") }).toEqual({ status: 200, sees: true });
  });

  test("once write is taken away an exec is refused rather than run with the write access the session was created with", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const source = localSource(world, project, "docs", { member: "rwx" });
    await createSession(member.client, { sourceSlug: "docs", id: "w" });
    const before = await member.client.post(`${TERMINAL}/sessions/w/exec`, { command: `touch ${source.root}/before && echo wrote` });
    expect(before.body.output).toBe("wrote\n");
    world.hatch.terminal.sources.addRule(source, { subjectKind: "role", subject: "member", effect: "deny", perms: "w" });
    const after = await member.client.post(`${TERMINAL}/sessions/w/exec`, { command: `touch ${source.root}/after` });
    expect({ status: after.status, code: after.body.error.code }).toEqual({ status: 403, code: "source_narrowed" });
    expect([existsSync(join(source.root, "before")), existsSync(join(source.root, "after"))]).toEqual([true, false]);
    // Asking to create it again is a reattach, and it is refused the same way (not 200 with the old readOnly: false).
    const again = await createSession(member.client, { sourceSlug: "docs", id: "w" });
    expect({ status: again.status, code: again.body.error?.code }).toEqual({ status: 403, code: "source_narrowed" });
  });

  test("a supervisor is held to the owner's current policy: no exec, and an attach only watches, once the source narrowed for the owner", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    // The project owner supervises and holds core.execute (the wildcard), so only the narrowing can stop them.
    const owner = await world.signedIn(project, "owner");
    const source = localSource(world, project, "docs", { member: "rwx" });
    await createSession(member.client, { sourceSlug: "docs", id: "s" });
    const asSupervisor = `?userId=${member.user.id}`;
    const before = await owner.client.post(`${TERMINAL}/sessions/s/exec${asSupervisor}`, { command: "echo supervised-$((3+4))" });
    expect(before.body.output).toBe("supervised-7\n");

    world.hatch.terminal.sources.addRule(source, { subjectKind: "role", subject: "member", effect: "deny", perms: "w" });
    const exec = await owner.client.post(`${TERMINAL}/sessions/s/exec${asSupervisor}`, { command: `touch ${source.root}/exec-ran` });
    expect({ status: exec.status, code: exec.body.error.code }).toEqual({ status: 403, code: "source_narrowed" });
    // Watching is allowed (to see what it shows before terminating it); the view is read-only, so what it types is dropped.
    const watching = await attached(world, owner, "s", { userId: member.user.id });
    await watching.control("readOnly");
    expect(await (await openTerminal(world, member, "s")).closed).toBe(4403);
    expect((await owner.client.delete(`${TERMINAL}/sessions/s${asSupervisor}`)).status).toBe(200);
    expect(existsSync(join(source.root, "exec-ran"))).toBe(false);
  });

  test("a session whose owner was demoted to a role without the source counts as narrowed for a supervisor too", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const owner = await world.signedIn(project, "owner");
    localSource(world, project, "docs", { member: "rwx" });
    await createSession(member.client, { sourceSlug: "docs", id: "d" });
    world.platform.projects.setMember(project.id, member.user.id, "viewer");
    const exec = await owner.client.post(`${TERMINAL}/sessions/d/exec?userId=${member.user.id}`, { command: "echo ran" });
    expect({ status: exec.status, code: exec.body.error.code }).toEqual({ status: 403, code: "source_narrowed" });
  });
});

/** A fresh dir of the test's own under `parent`, removed with the world. */
function ownDir(world: World, parent: string): string {
  const dir = mkdtempSync(join(parent, "hatch-test-"));
  world.onDispose(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe("a path the policy denies, below a directory the tab may write", () => {
  for (const confinement of ["auto", "landlock"]) {
    test(`renaming the directory above it does not carry the denied files out to where a later tab reads them (HATCH_CONFINEMENT=${confinement})`, async () => {
      await using world = await startWorld({ HATCH_CONFINEMENT: confinement });
      const project = await world.project();
      const member = await world.signedIn(project, "member");
      const source = localSource(world, project, "hr", { member: "rwx" });
      mkdirSync(join(source.root, "team", "salaries"), { recursive: true });
      writeFileSync(join(source.root, "team", "salaries", "2026.txt"), "top secret");
      roleRules(world, source, "member", "deny r on team/salaries");
      expect((await createSession(member.client, { sourceSlug: "hr", id: "a" })).status).toBe(201);
      const moved = await member.client.post(`${TERMINAL}/sessions/a/exec`, {
        command: `/usr/bin/python3 -c '
import os
try: os.rename("team", "moved"); print("renamed")
except OSError: print("refused")
'`,
      });
      expect((await createSession(member.client, { sourceSlug: "hr", id: "b" })).status).toBe(201);
      const read = await member.client.post(`${TERMINAL}/sessions/b/exec`, { command: "cat moved/salaries/2026.txt 2>/dev/null || echo hidden" });
      expect({ moved: moved.body.output, read: read.body.output }).toEqual({ moved: "refused\n", read: "hidden\n" });
    });
  }
});
