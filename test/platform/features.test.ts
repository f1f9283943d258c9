import { describe, expect, test } from "bun:test";
import { hatchCli } from "../helpers/cli.ts";
import { TERMINAL } from "../helpers/terminal.ts";
import { startWorld } from "../helpers/world.ts";

const HEALTH = "/api/packages/agent/terminal/health";

describe("roles and feature grants", () => {
  test("a new project's roles carry exactly the specification's default grants", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const grants = Object.fromEntries(world.platform.roles.list(project.id).map((r) => [r.name, r.features]));
    expect(grants).toEqual({
      owner: ["*"],
      admin: ["channels.connect", "channels.manage", "terminal.container", "terminal.native", "terminal.read", "terminal.supervise", "workflows.manage"],
      manager: ["channels.connect", "core.execute", "terminal.read"],
      member: ["channels.connect", "core.execute", "terminal.read"],
      viewer: [],
    });
  });

  test("a member reads the health route; a viewer gets 403", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const viewer = await world.signedIn(project, "viewer");
    const health = await member.client.get(HEALTH);
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: "ok", sessions: 0 });
    expect(typeof health.body.uptimeSeconds).toBe("number");
    const denied = await viewer.client.get(HEALTH);
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe("feature_required");
  });

  test("a custom role starts with no features; granting and revoking terminal.read opens and closes the route", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const admin = await world.signedIn(project, "admin");
    expect((await admin.client.post("/api/roles", { name: "auditor" })).body).toEqual({ name: "auditor", builtin: false, features: [] });
    const auditor = await world.signedIn(project, "auditor");
    expect((await auditor.client.get(HEALTH)).status).toBe(403);
    expect((await admin.client.put("/api/roles/auditor/features/terminal.read")).status).toBe(200);
    expect((await auditor.client.get(HEALTH)).status).toBe(200);
    expect((await admin.client.delete("/api/roles/auditor/features/terminal.read")).status).toBe(200);
    expect((await auditor.client.get(HEALTH)).status).toBe(403);
  });

  test("only owners and admins edit grants; nobody edits the owner's wildcard", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const member = await world.signedIn(project, "member");
    const admin = await world.signedIn(project, "admin");
    const before = world.platform.roles.list(project.id);
    expect((await member.client.put("/api/roles/member/features/terminal.container")).status).toBe(403);
    expect((await admin.client.delete("/api/roles/owner/features/*")).status).toBe(403);
    expect((await admin.client.put("/api/roles/admin/features/exec.unconfined")).status).toBe(403);
    // Nor can anyone hand the wildcard (which holds exec.unconfined) to another role.
    const wildcard = await admin.client.put("/api/roles/manager/features/*");
    expect({ status: wildcard.status, code: wildcard.body.error.code }).toEqual({ status: 403, code: "wildcard_owner_only" });
    expect((await admin.client.put("/api/roles/nope/features/terminal.read")).status).toBe(404);
    expect((await admin.client.put("/api/roles/member/features/Not%20A%20Feature")).status).toBe(400);
    expect(world.platform.roles.list(project.id)).toEqual(before);
  });

  test("a revoke of what no grant can be (a malformed name, the wildcard) is refused as that grant is, over HTTP and in the CLI, and audits nothing", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const malformed = await owner.client.delete("/api/roles/member/features/Not%20A%20Feature");
    expect({ status: malformed.status, code: malformed.body.error.code }).toEqual({ status: 400, code: "invalid_feature" });
    const wildcard = await owner.client.delete("/api/roles/manager/features/*");
    expect({ status: wildcard.status, code: wildcard.body.error.code }).toEqual({ status: 403, code: "wildcard_owner_only" });
    for (const feature of ["Core.Execute", "*"]) {
      const cli = await hatchCli(world.config.dataDir, ["admin", "revoke", "--project", project.slug, "--role", "member", "--feature", feature, "--json"]);
      expect({ feature, code: cli.code, error: JSON.parse(cli.err).error.code }).toEqual({ feature, code: 1, error: feature === "*" ? "wildcard_owner_only" : "invalid_feature" });
    }
    expect(world.platform.audit.query({ projectId: project.id, action: "role.revoke" })).toEqual([]);
  });

  test("an admin grants and revokes only features the admin role holds; the owner grants anything grantable", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const admin = await world.signedIn(project, "admin");
    const member = await world.signedIn(project, "member");
    expect((await admin.client.get("/api/auth/me")).body.features).not.toContain("exec.unconfined");
    const before = world.platform.roles.list(project.id);
    const granted = await admin.client.put("/api/roles/member/features/exec.unconfined");
    expect({ status: granted.status, code: granted.body.error.code }).toEqual({ status: 403, code: "feature_not_held" });
    // core.execute is a member's default, but not an admin's: an admin can neither give it nor take it away.
    const revoked = await admin.client.delete("/api/roles/member/features/core.execute");
    expect({ status: revoked.status, code: revoked.body.error.code }).toEqual({ status: 403, code: "feature_not_held" });
    expect(world.platform.roles.list(project.id)).toEqual(before);
    expect((await member.client.get("/api/auth/me")).body.features).not.toContain("exec.unconfined");
    // What the admin role holds, an admin hands on and takes back.
    expect((await admin.client.put("/api/roles/viewer/features/terminal.supervise")).status).toBe(200);
    expect((await admin.client.delete("/api/roles/viewer/features/terminal.supervise")).status).toBe(200);
    expect((await owner.client.put("/api/roles/member/features/exec.unconfined")).status).toBe(200);
    expect((await member.client.get("/api/auth/me")).body.features).toContain("exec.unconfined");
    expect((await owner.client.delete("/api/roles/member/features/exec.unconfined")).status).toBe(200);
  });

  test("the owner's package-access feature hides the agent package from a custom role, which then gets 404 like an unknown route", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const admin = await world.signedIn(project, "admin");
    await owner.client.post("/api/roles", { name: "contractor" });
    await owner.client.put("/api/roles/contractor/features/terminal.read");
    await owner.client.put("/api/roles/member/features/agent.access");
    const contractor = await world.signedIn(project, "contractor");
    const member = await world.signedIn(project, "member");
    expect((await contractor.client.get(HEALTH)).status).toBe(200);

    expect((await admin.client.get("/api/packages/agent/access")).body).toEqual({ package: "agent", feature: null });
    expect((await admin.client.put("/api/packages/agent/access", { feature: "agent.access" })).status).toBe(403);
    expect((await owner.client.put("/api/packages/agent/access", { feature: "agent.access" })).status).toBe(200);
    // Read back by who manages roles; a member is refused.
    expect((await admin.client.get("/api/packages/agent/access")).body).toEqual({ package: "agent", feature: "agent.access" });
    expect((await member.client.get("/api/packages/agent/access")).body.error.code).toBe("admin_required");

    const hidden = await contractor.client.get(HEALTH);
    const unknown = await contractor.client.get("/api/packages/agent/no-such-route");
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual(unknown.body);
    expect((await member.client.get(HEALTH)).status).toBe(200);
    expect((await owner.client.get(HEALTH)).status).toBe(200);

    await owner.client.delete("/api/packages/agent/access");
    expect((await contractor.client.get(HEALTH)).status).toBe(200);
  });

  test("package access names a package hatch serves: a misspelt one is refused (404 package_not_found, CLI exit 1), not stored as a rule that hides nothing", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    const member = await world.signedIn(project, "member");
    for (const request of [owner.client.put("/api/packages/agents/access", { feature: "agent.access" }), owner.client.delete("/api/packages/agents/access"), owner.client.get("/api/packages/agents/access")]) {
      const refused = await request;
      expect({ status: refused.status, code: refused.body.error?.code }).toEqual({ status: 404, code: "package_not_found" });
    }
    const cli = await hatchCli(world.config.dataDir, ["admin", "package-access", "--project", project.slug, "--package", "agnet", "--feature", "agent.access", "--json"]);
    expect({ code: cli.code, error: JSON.parse(cli.err).error.code }).toEqual({ code: 1, error: "package_not_found" });
    expect(world.platform.roles.packageAccessFeature(project.id, "agents")).toBeNull();
    expect(world.platform.roles.packageAccessFeature(project.id, "agnet")).toBeNull();
    expect(world.platform.audit.query({ projectId: project.id, action: "package.access" })).toEqual([]);
    expect((await member.client.get(HEALTH)).status).toBe(200);
  });

  test("a caller for whom the owner hid the agent package gets 404 like an unknown route even for a malformed query or body", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const owner = await world.signedIn(project, "owner");
    expect((await owner.client.put("/api/packages/agent/access", { feature: "agent.access" })).status).toBe(200);
    const member = await world.signedIn(project, "member");
    const unknown = await member.client.get("/api/packages/agent/no-such-route");
    expect(unknown.status).toBe(404);
    const answers = [
      await member.client.get(`${TERMINAL}/sessions`),
      await member.client.get(`${TERMINAL}/sessions?scope=everything`),
      await member.client.get(`${TERMINAL}/sessions/x/read?lines=0`),
      await member.client.post(`${TERMINAL}/sessions`, "[]"),
      await member.client.post(`${TERMINAL}/sessions/x/exec`, { command: "" }),
    ];
    expect(answers.map((a) => ({ status: a.status, body: a.body }))).toEqual(Array(answers.length).fill({ status: 404, body: unknown.body }));
  });
});
