import { describe, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { startWorld } from "../helpers/world.ts";

describe("source roots", () => {
  test("a root written with .., . or a trailing slash is stored and audited as the directory sessions open", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const admin = await world.signedIn(project, "admin");
    const real = world.tempDir("real-root");
    mkdirSync(join(real, "public"));
    // Reads as a folder below public/, and is the folder above it.
    const added = await admin.client.post("/api/sources", { slug: "docs", kind: "local", root: `${real}/public/./..//` });
    expect({ status: added.status, root: added.body.root }).toEqual({ status: 201, root: real });
    expect(world.platform.audit.query({ projectId: project.id, action: "source.add" }).map((e) => e.detail?.root)).toEqual([real]);
  });

  test("\"host\" is kept for a host source: a local one of that name would list as a second host tab", async () => {
    await using world = await startWorld();
    const project = await world.project();
    const admin = await world.signedIn(project, "admin");
    const added = await admin.client.post("/api/sources", { slug: "host", kind: "local", root: world.tempDir("host-notes") });
    expect({ status: added.status, code: added.body.error?.code }).toEqual({ status: 400, code: "invalid_slug" });
    expect((await admin.client.post("/api/sources", { slug: "host", kind: "host", root: "/srv" })).status).toBe(201);
  });
});
