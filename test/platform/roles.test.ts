import { describe, expect, test } from "bun:test";
import { hatchCli } from "../helpers/cli.ts";
import { TERMINAL, createSession } from "../helpers/terminal.ts";
import { startWorld } from "../helpers/world.ts";

describe("what an admin's grants can add up to", () => {
  // Spec 000, input screening 7: terminal.container, terminal.native and exec.unconfined are trusted-operator modes,
  // not for ordinary multi-tenant roles. The admin role holds terminal.container but not core.execute, so it never
  // gets a shell it can type into; handing terminal.container to a role that executes would.
  test("an admin cannot turn every member into the holder of an unconfined root shell by granting the member role terminal.container", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const admin = await world.signedIn(project, "admin");
    const member = await world.signedIn(project, "member");

    // The admin alone cannot run anything unconfined: Container Root opens for them, but exec needs core.execute.
    expect((await createSession(admin.client, { sourceSlug: "container-root", id: "adm" })).status).toBe(201);
    const adminExec = await admin.client.post(`${TERMINAL}/sessions/adm/exec`, { command: "id -u" });
    expect({ status: adminExec.status, code: adminExec.body.error?.code }).toEqual({ status: 403, code: "feature_required" });

    const grant = await admin.client.put("/api/roles/member/features/terminal.container");
    const created = await createSession(member.client, { sourceSlug: "container-root", id: "mem" });
    expect({ grant: grant.status, code: grant.body.error?.code, memberCreate: created.status }).toEqual({ grant: 403, code: "combination_not_held", memberCreate: 403 });
  });

  test("nor hand members terminal.native, or terminal.supervise (typing into each other's sessions); a role that runs nothing may have them", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const admin = await world.signedIn(project, "admin");
    const before = world.platform.roles.featuresOf(project.id, "member");
    for (const feature of ["terminal.native", "terminal.supervise"]) {
      const refused = await admin.client.put(`/api/roles/member/features/${feature}`);
      expect({ feature, status: refused.status, code: refused.body.error?.code }).toEqual({ feature, status: 403, code: "combination_not_held" });
    }
    expect(world.platform.roles.featuresOf(project.id, "member")).toEqual(before);
    // Viewers run nothing: watching and terminating is what the admin role itself does.
    expect((await admin.client.put("/api/roles/viewer/features/terminal.supervise")).status).toBe(200);
    // The owner grants the combination; and an admin the owner gave core.execute holds it, so may hand it on.
    expect((await owner.client.put("/api/roles/member/features/terminal.native")).status).toBe(200);
    expect((await owner.client.put("/api/roles/admin/features/core.execute")).status).toBe(200);
    expect((await admin.client.put("/api/roles/member/features/terminal.supervise")).status).toBe(200);
  });
});

describe("grants that change nothing", () => {
  test("granting a feature a role holds, or revoking one it lacks, over HTTP or the CLI, answers as before and writes no audit entry", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    expect((await owner.client.put("/api/roles/member/features/terminal.supervise", {})).status).toBe(200);
    const again = await owner.client.put("/api/roles/member/features/terminal.supervise", {});
    expect({ status: again.status, holds: again.body.features.includes("terminal.supervise") }).toEqual({ status: 200, holds: true });
    expect((await owner.client.delete("/api/roles/member/features/terminal.supervise")).status).toBe(200);
    expect((await owner.client.delete("/api/roles/member/features/terminal.supervise")).status).toBe(200);
    await hatchCli(world.config.dataDir, ["admin", "grant", "--project", project.slug, "--role", "member", "--feature", "core.execute"]);
    await hatchCli(world.config.dataDir, ["admin", "revoke", "--project", project.slug, "--role", "member", "--feature", "terminal.native"]);
    const entries = [...world.platform.audit.query({ projectId: project.id, action: "role.grant" }), ...world.platform.audit.query({ projectId: project.id, action: "role.revoke" })];
    expect(entries.map((e) => `${e.action} ${e.target} ${(e.detail as { feature: string }).feature}`)).toEqual(["role.grant member terminal.supervise", "role.revoke member terminal.supervise"]);
  });
});

