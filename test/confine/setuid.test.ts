/**
 * hatch runs as root on many machines and a confined program keeps uid 0
 * (with no capabilities and no_new_privs, which stop it from gaining anything
 * itself). But the owner of a file may set its set-user-ID bit without any
 * capability: a tab that may write a source's root could leave a root-owned,
 * set-user-ID copy of a shell there, and any other account on the host that
 * reaches the directory would run it as root.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { TERMINAL, createSession, localSource } from "../helpers/terminal.ts";
import { startWorld } from "../helpers/world.ts";

const MODES = { auto: "landlock+bwrap", landlock: "landlock" } as const;
const S_ISUID = 0o4000;

/** Every way a program sets the set-user-ID bit: chmod (fchmodat), a mode at creation (open, openat), fchmod, mknod. */
const ATTEMPTS = [
  "cp /bin/bash chmodded && chmod 4755 chmodded",
  `perl -e 'use Fcntl; sysopen(my $f, "created", O_CREAT|O_WRONLY, 04755) or exit 1'`,
  `perl -e 'open(my $f, ">", "fchmodded") or die; chmod(04755, $f)'`,
  // mknod(2) of a regular file: x86-64's number 133 (arm64 has only mknodat, 33 with AT_FDCWD first).
  // (perl's syscall needs the path in a variable: it may write into a string argument.)
  `perl -e 'my $path = "mknodded"; ${process.arch === "arm64" ? "syscall(33, -100, $path, 0100000|04755, 0)" : "syscall(133, $path, 0100000|04755, 0)"}'`,
];

for (const [confinement, mode] of Object.entries(MODES)) {
  describe(`HATCH_CONFINEMENT=${confinement}`, () => {
    test("a member's writable tab cannot leave a set-user-ID program for other host accounts, by any call; plain modes still work", async () => {
      await using world = await startWorld({ HATCH_CONFINEMENT: confinement });
      const project = await world.project();
      const member = await world.signedIn(project, "member");
      const source = localSource(world, project, "shared", { member: "rwx" });
      // A shared project directory, as other local accounts see it.
      chmodSync(source.root, 0o755);
      const created = await createSession(member.client, { sourceSlug: "shared", id: "s" });
      expect({ status: created.status, confinement: created.body.confinement }).toEqual({ status: 201, confinement: mode });

      for (const command of ATTEMPTS) await member.client.post(`${TERMINAL}/sessions/s/exec`, { command });
      const setUserId = readdirSync(source.root).filter((name) => (statSync(join(source.root, name)).mode & S_ISUID) !== 0);
      expect(setUserId).toEqual([]);
      // What tabs do every day is untouched: create, chmod +x and run a script.
      const daily = await member.client.post(`${TERMINAL}/sessions/s/exec`, { command: "printf '#!/bin/sh\\necho ran\\n' > run.sh && chmod 755 run.sh && ./run.sh" });
      expect(daily.body.output.trim()).toBe("ran");
      expect(statSync(join(source.root, "run.sh")).mode & 0o7777).toBe(0o755);
      // And the copy that would have been the root shell runs as nobody for nobody.
      const planted = join(source.root, "chmodded");
      if (existsSync(planted)) {
        const run = Bun.spawnSync(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", planted, "-p", "-c", "id -u"]);
        expect(run.stdout.toString().trim()).toBe("65534");
      }
    });
  });
}
