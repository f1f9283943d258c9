/**
 * A path the URI policy allows again below one it denies: the most specific
 * path decides, so a source tab reads it (and only it) inside the denied path,
 * in both confinement modes, through the real HTTP API. The service's own
 * protected paths are never re-opened, whatever a policy says.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TERMINAL, createSession, localSource, roleRules } from "../helpers/terminal.ts";
import { tempDir } from "../helpers/temp-dir.ts";
import { startWorld } from "../helpers/world.ts";

/** Which confinement each HATCH_CONFINEMENT value gives on this host (the tests need bwrap for `auto`). */
const MODES = { auto: "landlock+bwrap", landlock: "landlock" } as const;

/** Write `files` (path below `root` → content), creating their directories. */
function plant(root: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), content, { mode: content.startsWith("#!") ? 0o755 : 0o644 });
  }
}

for (const [confinement, mode] of Object.entries(MODES)) {
  describe(`HATCH_CONFINEMENT=${confinement}`, () => {
    test("member may do everything but read secret, except secret/pub: the tab is selectable and opens, reads secret/pub and below, nothing else in secret, and the rest as before", async () => {
      await using world = await startWorld({ HATCH_CONFINEMENT: confinement });
      const project = await world.project();
      const member = await world.signedIn(project, "member");
      const source = localSource(world, project, "vault", { member: "rwx" });
      plant(source.root, { "top.txt": "top\n", "work/w.txt": "w\n", "secret/other.txt": "other\n", "secret/sub/s.txt": "sub\n", "secret/pub/p.txt": "pub\n", "secret/pub/deep/d.txt": "deep\n" });
      roleRules(world, source, "member", "deny r on secret", "allow r on secret/pub");

      const listed = (await member.client.get(`${TERMINAL}/sources`)).body.sources.find((s: any) => s.slug === "vault");
      expect(listed).toMatchObject({ selectable: true, confinement: mode });
      const created = await createSession(member.client, { sourceSlug: "vault", id: "v" });
      expect({ status: created.status, confinement: created.body.confinement }).toEqual({ status: 201, confinement: mode });

      const probe = await member.client.post(`${TERMINAL}/sessions/v/exec`, {
        command: [
          "cat top.txt secret/pub/p.txt secret/pub/deep/d.txt",
          "cat secret/other.txt 2>/dev/null || echo other-denied",
          "cat secret/sub/s.txt 2>/dev/null || echo sub-denied",
          "echo $(ls secret 2>/dev/null)",
          "echo more >> top.txt && echo top-writable",
          "touch work/new && echo work-writable",
          "touch secret/planted 2>/dev/null || echo secret-unwritable",
        ].join("; "),
      });
      // Landlock alone lets names inside a denied directory be listed (a known limit); bwrap shows only what is re-opened there.
      const names = mode === "landlock" ? "other.txt pub sub" : "pub";
      expect(probe.body.output).toBe(`top\npub\ndeep\nother-denied\nsub-denied\n${names}\ntop-writable\nwork-writable\nsecret-unwritable\n`);
      expect(existsSync(join(source.root, "secret", "planted"))).toBe(false);
    });

    test("write and exec below a denied path follow the policy as anywhere else: rw on secret/pub makes it writable, a deny x inside it runs nothing there", async () => {
      await using world = await startWorld({ HATCH_CONFINEMENT: confinement });
      const project = await world.project();
      const member = await world.signedIn(project, "member");
      const source = localSource(world, project, "drop", { member: "rx" });
      plant(source.root, { "secret/other.txt": "other\n", "secret/pub/tool.sh": "#!/bin/sh\necho tool-ran\n", "secret/pub/bin/t.sh": "#!/bin/sh\necho bin-ran\n" });
      roleRules(world, source, "member", "deny r on secret", "allow rw on secret/pub", "deny x on secret/pub/bin");

      expect((await member.client.get(`${TERMINAL}/sources`)).body.sources[0]).toMatchObject({ slug: "drop", selectable: true, readOnly: false });
      expect((await createSession(member.client, { sourceSlug: "drop", id: "d" })).body).toMatchObject({ readOnly: false, confinement: mode });
      const probe = await member.client.post(`${TERMINAL}/sessions/d/exec`, {
        command: [
          "echo new > secret/pub/new.txt && echo pub-writable",
          "touch top-new 2>/dev/null || echo top-read-only",
          "./secret/pub/tool.sh",
          "./secret/pub/bin/t.sh 2>/dev/null || echo bin-no-exec",
          "grep -c bin-ran secret/pub/bin/t.sh",
          "cat secret/other.txt 2>/dev/null || echo other-denied",
        ].join("; "),
      });
      expect(probe.body.output).toBe("pub-writable\ntop-read-only\ntool-ran\nbin-no-exec\n1\nother-denied\n");
      expect(readFileSync(join(source.root, "secret", "pub", "new.txt"), "utf8")).toBe("new\n");
      expect(existsSync(join(source.root, "top-new"))).toBe(false);
    });

    test("a path re-opened read-only below a denied one inside a writable source is readable and stays read-only", async () => {
      await using world = await startWorld({ HATCH_CONFINEMENT: confinement });
      const project = await world.project();
      const member = await world.signedIn(project, "member");
      const source = localSource(world, project, "docs", { member: "rwx" });
      plant(source.root, { "top.txt": "top\n", "secret/other.txt": "other\n", "secret/pub/p.txt": "pub\n" });
      roleRules(world, source, "member", "deny r on secret", "allow r on secret/pub", "deny w on secret/pub");

      expect((await createSession(member.client, { sourceSlug: "docs", id: "r" })).status).toBe(201);
      const probe = await member.client.post(`${TERMINAL}/sessions/r/exec`, {
        command: "cat secret/pub/p.txt; { echo x >> secret/pub/p.txt; } 2>/dev/null || echo pub-read-only; touch secret/pub/n 2>/dev/null || echo pub-no-create; echo more >> top.txt && echo top-writable",
      });
      expect(probe.body.output).toBe("pub\npub-read-only\npub-no-create\ntop-writable\n");
      expect(readFileSync(join(source.root, "secret", "pub", "p.txt"), "utf8")).toBe("pub\n");
    });

    test("a policy path a member turns into a symlink is not followed into the denied path, nor onto a read-only dir: create refuses it (root_invalid)", async () => {
      await using world = await startWorld({ HATCH_CONFINEMENT: confinement });
      const project = await world.project();
      const member = await world.signedIn(project, "member");
      const source = localSource(world, project, "links", { member: "rx" });
      plant(source.root, { "secret/private/key.txt": "the-private-key\n", "ro/sub/r.txt": "ro\n", "work/w.txt": "w\n" });
      const store = world.hatch.terminal.sources;
      // work is writable; work/notes and work/out are named by rules but do not exist yet, so the member can create them.
      for (const path of ["work", "work/notes", "work/out"]) store.addRule(source, { subjectKind: "role", subject: "member", path, effect: "allow", perms: "rwx" });
      store.addRule(source, { subjectKind: "role", subject: "member", path: "secret", effect: "deny", perms: "r" });

      expect((await createSession(member.client, { sourceSlug: "links", id: "a" })).status).toBe(201);
      const link = (target: string) => member.client.post(`${TERMINAL}/sessions/a/exec`, { command: `rm -rf work/notes work/out; ln -s ${target} && echo linked` });
      const cases = [
        { link: "../secret/private work/notes", leadsTo: "secret/private", problem: "which lies inside a denied path" },
        { link: "../ro/sub work/out", leadsTo: "ro/sub", problem: "where writing is not allowed" },
      ];
      for (const { link: target, leadsTo, problem } of cases) {
        expect((await link(target)).body.output).toBe("linked\n");
        const asked = join(source.root, target.split(" ")[1]!);
        const refused = await createSession(member.client, { sourceSlug: "links", id: "b" });
        expect({ status: refused.status, error: refused.body.error }).toEqual({
          status: 400,
          error: { code: "root_invalid", message: `Cannot use root "${asked}": it leads through a symlink to "${join(source.root, leadsTo)}", ${problem}` },
        });
      }
      expect(world.hatch.terminal.sessions.count()).toBe(1);
      expect(existsSync(join(source.root, "ro", "sub", "planted"))).toBe(false);
    });
  });
}

describe("hatch's own protected paths are never re-opened", () => {
  test("a source rooted inside the data dir, or whose policy allows a path inside it again, is listed unselectable and refused on create with the same reason (root_invalid)", async () => {
    // A data dir inside a directory a source can be rooted at.
    using parent = tempDir("parent");
    await using world = await startWorld({ HATCH_DATA_DIR: join(parent.path, "data") });
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const store = world.hatch.terminal.sources;
    writeFileSync(join(parent.path, "data", "home", "planted.txt"), "inside the data dir");
    const above = store.add(project.id, { slug: "above", kind: "local", root: parent.path });
    store.addRule(above, { subjectKind: "role", subject: "member", effect: "allow", perms: "rwx" });
    store.addRule(above, { subjectKind: "role", subject: "member", path: "data", effect: "deny", perms: "r" });
    store.addRule(above, { subjectKind: "role", subject: "member", path: "data/home", effect: "allow", perms: "r" });
    const inside = store.add(project.id, { slug: "inside", kind: "local", root: join(parent.path, "data", "home") });
    store.addRule(inside, { subjectKind: "role", subject: "member", effect: "allow", perms: "rx" });

    const never = "inside a path hatch never lets a tab read (its data dir or a .env file)";
    const reasons = { above: `Your policy opens "data/home", which lies ${never}`, inside: `The source's root lies ${never}` };
    const listed = (await member.client.get(`${TERMINAL}/sources`)).body.sources;
    expect(listed.map((s: any) => ({ slug: s.slug, selectable: s.selectable, reason: s.reason }))).toEqual([
      { slug: "above", selectable: false, reason: reasons.above },
      { slug: "inside", selectable: false, reason: reasons.inside },
    ]);
    for (const [slug, reason] of Object.entries(reasons)) {
      const refused = await createSession(member.client, { sourceSlug: slug });
      expect({ status: refused.status, error: refused.body.error }).toEqual({ status: 400, error: { code: "root_invalid", message: `Cannot open "${slug}": ${reason}` } });
    }
    expect(world.hatch.terminal.sessions.count()).toBe(0);
  });
});
