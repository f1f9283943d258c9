import { describe, expect, test } from "bun:test";
import { TERMINAL, attached, runAndSee, sessionAnAdminSupervises } from "../helpers/terminal.ts";
import { waitFor } from "../helpers/wait-for.ts";
import { startWorld } from "../helpers/world.ts";

describe("supervision is audited whichever way a supervisor looks", () => {
  test("a supervisor reading another user's screen through GET /read leaves an entry, as attaching a view does; the owner's own reads do not", async () => {
    await using world = await startWorld();
    const { project, member, admin } = await sessionAnAdminSupervises(world);
    const own = await attached(world, member, "s");
    await runAndSee(own, "echo private-$((20+22))", "private-42");
    own.close();
    await own.closed;
    const reads = () => world.platform.audit.query({ projectId: project.id, action: "terminal.session" }).filter((entry) => entry.detail?.event === "read");

    expect((await member.client.get(`${TERMINAL}/sessions/s/read`)).status).toBe(200);
    expect(reads()).toEqual([]);
    const read = await admin.client.get(`${TERMINAL}/sessions/s/read?userId=${member.user.id}`);
    expect((read.body.lines as string[]).some((line) => line.includes("private-42"))).toBe(true);
    expect(reads()).toEqual([
      expect.objectContaining({ userId: admin.user.id, target: "s", detail: { event: "read", sessionUserId: member.user.id, lines: read.body.lines.length } }),
    ]);

    // The same look through a WebSocket view is audited as attach and detach; the session being unwatched, the view
    // held its keyboard from the attach, and that is on the record too.
    const watching = await attached(world, admin, "s", { userId: member.user.id });
    watching.close();
    const byAdmin = () => world.platform.audit.query({ projectId: project.id, action: "terminal.session" }).filter((entry) => entry.userId === admin.user.id);
    await waitFor(() => byAdmin().length >= 4, "the attach, lease and detach entries");
    expect(byAdmin().map((entry) => entry.detail?.event)).toEqual(["detach", "lease", "attach", "read"]);
  });
});
