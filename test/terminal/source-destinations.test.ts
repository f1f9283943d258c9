import { describe, expect, test } from "bun:test";
import { readdirSync, statSync } from "node:fs";
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
