/**
 * The seccomp filter refuses a set-ID bit in every chmod, so that a tab cannot
 * leave a set-user-ID root program behind. A filter cannot tell a file from a
 * directory, and on a directory the set-group-ID bit is no privilege at all:
 * it only makes new entries take the directory's group. Shared project trees
 * carry it everywhere (mkdir inherits it; `git init --shared`, i.e.
 * core.sharedRepository, sets it on every directory it makes), and GNU chmod
 * keeps it on a directory unless told otherwise, so an everyday `chmod 755 dir`
 * passes the bit to the kernel.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync } from "node:fs";
import { join } from "node:path";
import { TERMINAL, createSession, localSource } from "../helpers/terminal.ts";
import { startWorld } from "../helpers/world.ts";

const MODES = { auto: "landlock+bwrap", landlock: "landlock" } as const;

for (const [confinement, mode] of Object.entries(MODES)) {
  describe(`HATCH_CONFINEMENT=${confinement}`, () => {
    test("in a group-shared (set-group-ID) project directory, a writable tab can still chmod the directories it makes and commit to a shared git repository", async () => {
      await using world = await startWorld({ HATCH_CONFINEMENT: confinement });
      const project = await world.project();
      const member = await world.signedIn(project, "member");
      const source = localSource(world, project, "team", { member: "rwx" });
      // A team directory as admins set one up: group-writable, set-group-ID.
      chmodSync(source.root, 0o2775);
      Bun.spawnSync(["git", "init", "-q", "--shared=group", join(source.root, "repo")]);
      const created = await createSession(member.client, { sourceSlug: "team", id: "s" });
      expect({ status: created.status, confinement: created.body.confinement }).toEqual({ status: 201, confinement: mode });

      const exec = async (command: string) => (await member.client.post(`${TERMINAL}/sessions/s/exec`, { command: `${command} >/dev/null 2>&1 && echo ok || echo refused` })).body.output.trim();
      const results = {
        chmodOwnDir: await exec("mkdir build && chmod 755 build"),
        gitAddInSharedRepo: await exec("cd repo && echo hi > notes.txt && git add notes.txt"),
        gitInitShared: await exec("git init -q --shared=group other-repo"),
      };
      expect(results).toEqual({ chmodOwnDir: "ok", gitAddInSharedRepo: "ok", gitInitShared: "ok" });
    }, 60000);
  });
}
