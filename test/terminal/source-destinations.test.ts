import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TERMINAL, createSession } from "../helpers/terminal.ts";
import { startWorld } from "../helpers/world.ts";

describe("where a source tab may open", () => {
  test("a read-only source rooted at / is listed selectable, opens under bwrap, and its shell really runs there", async () => {
    await using world = await startWorld({ HATCH_CONFINEMENT: "auto" });
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const store = world.hatch.terminal.sources;
    const whole = store.add(project.id, { slug: "machine", kind: "local", root: "/" });
    store.addRule(whole, { subjectKind: "role", subject: "member", effect: "allow", perms: "rx" });
    const listing = await member.client.get(`${TERMINAL}/sources`);
    expect(listing.body.confinement).toBe("landlock+bwrap");
    expect(listing.body.sources).toEqual([expect.objectContaining({ slug: "machine", selectable: true, readOnly: true, cwd: "/" })]);
    expect((await createSession(member.client, { sourceSlug: "machine", id: "m" })).status).toBe(201);
    // bwrap's own /dev (not the host's, bound over it by the root) is what the helper opens /dev/null in.
    const exec = await member.client.post(`${TERMINAL}/sessions/m/exec`, { command: "echo alive; ls -d /usr; ls /dev | grep -c . " });
    expect({ status: exec.status, lines: exec.body.output.split("\n").slice(0, 2) }).toEqual({ status: 200, lines: ["alive", "/usr"] });
    expect(Number(exec.body.output.split("\n")[2])).toBeLessThan(readdirSync("/dev").length);
    await Bun.sleep(1000);
    expect((await member.client.get(`${TERMINAL}/sessions`)).body.sessions.map((s: { id: string }) => s.id)).toEqual(["m"]);
  });

  for (const mode of ["auto", "landlock"]) {
    test(`a cwd inside a dir the sandbox hides (a host secret) answers as a missing one, so a create cannot tell which names exist there (HATCH_CONFINEMENT=${mode})`, async () => {
      // /var/log is on the host-secret list: a tab never reads it, and under bwrap never sees its names.
      const existing = readdirSync("/var/log").find((name) => statSync(join("/var/log", name)).isDirectory());
      expect(existing).toBeDefined();
      await using world = await startWorld({ HATCH_CONFINEMENT: mode });
      const project = await world.project();
      const member = await world.signedIn(project, "member");
      const store = world.hatch.terminal.sources;
      const source = store.add(project.id, { slug: "var", kind: "local", root: "/var" });
      store.addRule(source, { subjectKind: "role", subject: "member", effect: "allow", perms: "rx" });
      const answers: Record<string, unknown> = {};
      for (const [i, cwd] of [`log/${existing}`, "log/no-such-dir", "log"].entries()) {
        const answer = await createSession(member.client, { sourceSlug: "var", id: `v${i}`, cwd });
        answers[cwd] = { status: answer.status, code: answer.body.error?.code };
      }
      const refused = { status: 400, code: "invalid_cwd" };
      expect(answers).toEqual({ [`log/${existing}`]: refused, "log/no-such-dir": refused, log: refused });
      // Elsewhere in the same source a cwd still opens.
      expect((await createSession(member.client, { sourceSlug: "var", id: "ok", cwd: "lib" })).status).toBe(201);
    });
  }
});

/**
 * A project tree with hatch's data dir at `dataDirIn` inside it (an operator running hatch from a checkout),
 * as a source the member may read, write and run in; the server confined with `mode`.
 */
async function treeHoldingTheDataDir(mode: string, dataDirIn: string) {
  const tree = mkdtempSync(join(tmpdir(), "hatch-tree-"));
  const dataDir = join(tree, dataDirIn);
  const world = await startWorld({ HATCH_DATA_DIR: dataDir, HATCH_CONFINEMENT: mode });
  world.onDispose(() => rmSync(tree, { recursive: true, force: true }));
  const project = await world.project();
  const member = await world.signedIn(project, "member");
  const store = world.hatch.terminal.sources;
  const source = store.add(project.id, { slug: "tree", kind: "local", root: tree });
  store.addRule(source, { subjectKind: "role", subject: "member", effect: "allow", perms: "rwx" });
  return { world, member, tree, dataDir };
}

describe("a writable source that holds hatch's data dir", () => {
  for (const mode of ["auto", "landlock"]) {
    test(`the data dir stays out of reach, and no directory above it can be moved: the source's own level takes no new entries, its sub-directories do (HATCH_CONFINEMENT=${mode})`, async () => {
      const { world: opened, member, tree } = await treeHoldingTheDataDir(mode, ".hatch-data");
      await using world = opened;
      mkdirSync(join(tree, "src"));
      expect((await createSession(member.client, { sourceSlug: "tree", id: "t" })).status).toBe(201);
      // The input screen refuses a line naming the data dir; the sandbox is what is tested, so python names it.
      const exec = await member.client.post(`${TERMINAL}/sessions/t/exec`, {
        command: `touch notes.txt 2>/dev/null && echo created || echo not-created; touch src/x && echo sub-written
/usr/bin/python3 -c '
try: open(".hatch" + "-data/secret.key", "rb").read(); print("key-read")
except OSError: print("key-hidden")
'`,
      });
      // Landlock carves the data dir out of the root's rule even under bwrap, whose mount alone would not stop a
      // directory above it from being renamed away on the host; a carved directory takes no new entries.
      expect(exec.body.output).toBe("not-created\nsub-written\nkey-hidden\n");
    });
  }
});

describe("a writable source that holds hatch's data dir one level down", () => {
  for (const mode of ["auto", "landlock"]) {
    test(`a tab cannot move the data dir out from under its cover by renaming its parent, so a later tab never reads the key (HATCH_CONFINEMENT=${mode})`, async () => {
      // The data dir two levels below the source root: <tree>/state/hatch-data.
      const { world: opened, member, dataDir } = await treeHoldingTheDataDir(mode, "state/hatch-data");
      await using world = opened;
      expect((await createSession(member.client, { sourceSlug: "tree", id: "a" })).status).toBe(201);
      // The data dir is a mount point (EBUSY), but the directory holding it is not.
      const moved = await member.client.post(`${TERMINAL}/sessions/a/exec`, {
        command: `/usr/bin/python3 -c '
import os
try: os.rename("sta" + "te", "elsewhere"); print("renamed")
except OSError as e: print("refused")
'`,
      });
      // A second tab, opened afterwards (the server makes a fresh data dir for its scratch dir).
      expect((await createSession(member.client, { sourceSlug: "tree", id: "b" })).status).toBe(201);
      const read = await member.client.post(`${TERMINAL}/sessions/b/exec`, {
        command: `/usr/bin/python3 -c '
try: print("key-read", len(open("elsewhere/hatch" + "-data/secret.key", "rb").read()))
except OSError: print("key-hidden")
'`,
      });
      expect({ moved: moved.body.output, read: read.body.output, keyStillThere: existsSync(join(dataDir, "secret.key")) }).toEqual({
        moved: "refused\n",
        read: "key-hidden\n",
        keyStillThere: true,
      });
    });
  }
});

describe("the empty mount over a path a writable source hides", () => {
  for (const mode of ["auto", "landlock"]) {
    test(`takes no writes, so a tab cannot park host memory in it past the 64 MiB /dev/shm allows (HATCH_CONFINEMENT=${mode})`, async () => {
      const { world: opened, member } = await treeHoldingTheDataDir(mode, ".hatch-data");
      await using world = opened;
      expect((await createSession(member.client, { sourceSlug: "tree", id: "t" })).status).toBe(201);
      // 80 MiB into the data dir's cover (bwrap's tmpfs there has no size limit: half the host's RAM).
      const exec = await member.client.post(`${TERMINAL}/sessions/t/exec`, {
        command: `/usr/bin/python3 -c '
try:
  with open(".hatch" + "-data/fill", "wb") as f:
    for _ in range(80): f.write(bytes(1 << 20))
  print("parked")
except OSError: print("refused")
'`,
      });
      expect(exec.body.output).toBe("refused\n");
    });
  }
});

describe("what a tab on one source may read of another source", () => {
  // Roots outside /tmp, so bwrap's private /tmp does not hide the other source by accident.
  for (const mode of ["auto", "landlock"]) {
    test(`(${mode}) a member's tab on "docs" is restricted to that one source: it reads no other source, one whose policy denies them, one they may read or one of another project, but what the system keeps in its own trees stays readable`, async () => {
      await using world = await startWorld({ HATCH_CONFINEMENT: mode });
      const project = await world.project();
      const member = await world.signedIn(project, "member");
      const store = world.hatch.terminal.sources;
      const made = (name: string) => {
        const dir = mkdtempSync(`/srv/hatch-review-${name}-`);
        world.onDispose(() => rmSync(dir, { recursive: true, force: true }));
        return dir;
      };
      const docs = store.add(project.id, { slug: "docs", kind: "local", root: made("docs") });
      store.addRule(docs, { subjectKind: "role", subject: "member", effect: "allow", perms: "rwx" });
      // "hr": admins only, and this member explicitly denied reading.
      const hrRoot = made("hr");
      writeFileSync(join(hrRoot, "salaries.txt"), "HR-SECRET-1");
      const hr = store.add(project.id, { slug: "hr", kind: "local", root: hrRoot });
      store.addRule(hr, { subjectKind: "role", subject: "admin", effect: "allow", perms: "rwx" });
      store.addRule(hr, { subjectKind: "user", subject: member.user.id, effect: "deny", perms: "rwx" });
      // A source of another project this member does not belong to.
      const other = await world.project();
      const vaultRoot = made("vault");
      writeFileSync(join(vaultRoot, "keys.txt"), "VAULT-SECRET-2");
      store.add(other.id, { slug: "vault", kind: "local", root: vaultRoot });
      // One the member may read: they open its own tab for that.
      const wikiRoot = made("wiki");
      writeFileSync(join(wikiRoot, "page.txt"), "WIKI-PAGE-3");
      const wiki = store.add(project.id, { slug: "wiki", kind: "local", root: wikiRoot });
      store.addRule(wiki, { subjectKind: "role", subject: "member", effect: "allow", perms: "rx" });
      // A source inside the system's own trees: hiding it would hide what shells read (terminfo, locales).
      store.add(other.id, { slug: "shared-docs", kind: "local", root: "/usr/share" });
      // And one that holds a tree package managers install programs in (conda's /opt, the Nix store).
      store.add(other.id, { slug: "programs", kind: "local", root: "/opt" });
      const tool = mkdtempSync("/opt/hatch-review-tool-");
      world.onDispose(() => rmSync(tool, { recursive: true, force: true }));
      writeFileSync(join(tool, "tool.sh"), "echo TOOL");
      // A source below such a tree is hidden like any other.
      const app = mkdtempSync("/opt/hatch-review-app-");
      world.onDispose(() => rmSync(app, { recursive: true, force: true }));
      writeFileSync(join(app, "config.txt"), "APP-CONFIG-5");
      store.add(other.id, { slug: "app", kind: "local", root: app });
      writeFileSync(join(docs.root!, "mine.txt"), "DOCS-OWN-4");

      expect((await member.client.get(`${TERMINAL}/sources`)).body.sources.map((s: any) => s.slug)).toEqual(["docs", "wiki"]);
      expect((await createSession(member.client, { sourceSlug: "hr" })).status).toBe(404);
      expect((await createSession(member.client, { sourceSlug: "docs", id: "d" })).status).toBe(201);
      const read = async (path: string) => (await member.client.post(`${TERMINAL}/sessions/d/exec`, { command: `cat ${path} >/dev/null 2>&1 && echo read || echo refused` })).body.output;
      expect({
        hr: await read(`${hrRoot}/salaries.txt`),
        vault: await read(`${vaultRoot}/keys.txt`),
        wiki: await read(`${wikiRoot}/page.txt`),
        belowProgramTree: await read(`${app}/config.txt`),
        own: await read(`${docs.root}/mine.txt`),
        system: await read("/etc/passwd"),
        systemSource: (await member.client.post(`${TERMINAL}/sessions/d/exec`, { command: `ls /usr/share >/dev/null && cat ${tool}/tool.sh >/dev/null && echo listed` })).body.output,
      }).toEqual({ hr: "refused\n", vault: "refused\n", wiki: "refused\n", belowProgramTree: "refused\n", own: "read\n", system: "read\n", systemSource: "listed\n" });
      expect((await createSession(member.client, { sourceSlug: "wiki", id: "w" })).status).toBe(201);
      expect((await member.client.post(`${TERMINAL}/sessions/w/exec`, { command: `cat ${wikiRoot}/page.txt` })).body.output).toBe("WIKI-PAGE-3");
    });
  }
});
