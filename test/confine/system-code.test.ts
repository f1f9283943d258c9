/**
 * "Nor does it ever write the system's code and configuration, where any
 * write is code that root runs later ... whoever the policy grants it to"
 * (README, Confinement). /run holds such configuration too, read by root
 * programs exactly like their /etc counterparts: modprobe reads
 * /run/modprobe.d/*.conf (an `install` line there is a command root runs at
 * the next module autoload, which any process can trigger by opening a socket
 * of an unloaded family), systemd loads units and drop-ins from
 * /run/systemd/system, udev rules (RUN+=) from /run/udev/rules.d, and
 * tmpfiles/sysctl read /run/tmpfiles.d and /run/sysctl.d. isSystemPath only
 * refuses /run itself, and SYSTEM_CODE_PATHS does not name it, so a source
 * there is opened writable, in both modes (bwrap binds it over its /run tmpfs).
 */
import { describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { TERMINAL, createSession } from "../helpers/terminal.ts";
import { startWorld } from "../helpers/world.ts";

const MODES = { auto: "landlock+bwrap", landlock: "landlock" } as const;

for (const [confinement, mode] of Object.entries(MODES)) {
  describe(`HATCH_CONFINEMENT=${confinement}`, () => {
    test("a source at /run/modprobe.d is refused writable (root_invalid), as one at /etc/modprobe.d would be: members never write root's module-loading commands", async () => {
      const dir = "/run/modprobe.d";
      const made = !existsSync(dir);
      mkdirSync(dir, { recursive: true, mode: 0o755 });
      const planted = join(dir, `hatch-review-${crypto.randomUUID()}.conf`);
      try {
        await using world = await startWorld({ HATCH_CONFINEMENT: confinement });
        const project = await world.project();
        const admin = await world.signedIn(project, "admin");
        const member = await world.signedIn(project, "member");
        // An admin shares the directory with members over the source routes.
        expect((await admin.client.post("/api/sources", { slug: "modprobe", kind: "local", root: dir })).status).toBe(201);
        expect((await admin.client.post("/api/sources/modprobe/rules", { subjectKind: "role", subject: "member", effect: "allow", perms: "rwx" })).status).toBe(201);

        const listed = (await member.client.get(`${TERMINAL}/sources`)).body.sources.find((s: any) => s.slug === "modprobe");
        const created = await createSession(member.client, { sourceSlug: "modprobe", id: "m" });
        if (created.status === 201) {
          expect(created.body.confinement).toBe(mode);
          // What the tab can do with it: a harmless comment where an `install` line would go.
          await member.client.post(`${TERMINAL}/sessions/m/exec`, { command: `echo '# written from a member tab' > ${planted}` });
        }
        const written = existsSync(planted) ? readFileSync(planted, "utf8") : null;
        expect({ selectable: listed?.selectable, status: created.status, code: created.body.error?.code, written }).toEqual({ selectable: false, status: 400, code: "root_invalid", written: null });
      } finally {
        rmSync(planted, { force: true });
        if (made) rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
