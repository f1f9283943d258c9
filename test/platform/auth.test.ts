import { describe, expect, test } from "bun:test";
import { startWorld, TEST_PASSWORD } from "../helpers/world.ts";

describe("login, logout, me and the active project", () => {
  test("login sets an HttpOnly SameSite=Lax session cookie and me shows user, project, role and features", async () => {
    await using world = await startWorld();
    const project = await world.project("demo");
    const member = await world.user("member");
    world.platform.projects.setMember(project.id, member.id, "member");
    const client = world.anonymous();
    const login = await client.post("/api/auth/login", { email: member.email, password: TEST_PASSWORD });
    expect(login.status).toBe(200);
    const cookie = login.headers.getSetCookie().find((c) => c.startsWith("hatch_session="))!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/Expires=/i);
    const me = await client.get("/api/auth/me");
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      user: { id: member.id, email: member.email },
      project: { id: project.id, slug: project.slug },
      role: "member",
      features: ["channels.connect", "core.execute", "terminal.read"],
    });
    expect(JSON.stringify(me.body)).not.toContain("passwordHash");
  });

  test("login takes JSON only: a form-encoded body (what a cross-site form can send) signs nobody in", async () => {
    await using world = await startWorld();
    const user = await world.user();
    const form = `email=${encodeURIComponent(user.email)}&password=${encodeURIComponent(TEST_PASSWORD)}`;
    const answer = await fetch(`${world.hatch.url}/api/auth/login`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", origin: "https://evil.example" }, body: form });
    expect(answer.status).toBe(400);
    expect(answer.headers.getSetCookie()).toEqual([]);
    expect((await world.anonymous().post("/api/auth/login", { email: user.email, password: TEST_PASSWORD })).status).toBe(200);
  });

  test("a wrong password and an unknown email get the same 401", async () => {
    await using world = await startWorld();
    const user = await world.user();
    const wrong = await world.anonymous().post("/api/auth/login", { email: user.email, password: "not the password" });
    const unknown = await world.anonymous().post("/api/auth/login", { email: "nobody@example.com", password: "not the password" });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toEqual(unknown.body);
    expect(wrong.headers.getSetCookie()).toEqual([]);
  });

  test("login rotates the session: the cookie from before stops working", async () => {
    await using world = await startWorld();
    const user = await world.user();
    const client = world.anonymous();
    await client.post("/api/auth/login", { email: user.email, password: TEST_PASSWORD });
    const first = client.cookies.get("hatch_session")!;
    await client.post("/api/auth/login", { email: user.email, password: TEST_PASSWORD });
    const second = client.cookies.get("hatch_session")!;
    expect(second).not.toBe(first);
    const stale = world.anonymous();
    stale.cookies.set("hatch_session", first);
    expect((await stale.get("/api/auth/me")).status).toBe(401);
    expect((await client.get("/api/auth/me")).status).toBe(200);
  });

  test("no cookie, a tampered cookie and an expired cookie get 401", async () => {
    await using world = await startWorld({ HATCH_SESSION_TTL_HOURS: "1" });
    const user = await world.user();
    expect((await world.anonymous().get("/api/auth/me")).status).toBe(401);
    const client = await world.login(user.email);
    const tampered = world.anonymous();
    tampered.cookies.set("hatch_session", client.cookies.get("hatch_session")!.slice(0, -2) + "xx");
    expect((await tampered.get("/api/auth/me")).body).toEqual({ error: { code: "unauthorized", message: "Sign in first" } });
    // Expire the session row in place: the cookie the browser still holds must be refused.
    world.hatch.sqlite.exec("UPDATE auth_sessions SET expires_at = 0");
    expect((await client.get("/api/auth/me")).status).toBe(401);
  });

  test("logout ends the session", async () => {
    await using world = await startWorld();
    const user = await world.user();
    const client = await world.login(user.email);
    const cookie = client.cookies.get("hatch_session")!;
    expect((await client.post("/api/auth/logout")).status).toBe(200);
    const replay = world.anonymous();
    replay.cookies.set("hatch_session", cookie);
    expect((await replay.get("/api/auth/me")).status).toBe(401);
  });

  test("switching the active project works only for a project the user is a member of", async () => {
    await using world = await startWorld();
    const a = await world.project("a");
    const b = await world.project("b");
    const outsider = await world.project("c");
    const person = await world.signedIn(a, "member");
    world.platform.projects.setMember(b.id, person.user.id, "viewer");
    const switched = await person.client.post("/api/auth/project", { project: b.slug });
    expect(switched.status).toBe(200);
    expect(switched.body).toMatchObject({ project: { slug: b.slug }, role: "viewer", features: [] });
    expect((await person.client.get("/api/auth/me")).body.role).toBe("viewer");
    const refused = await person.client.post("/api/auth/project", { project: outsider.slug });
    const absent = await person.client.post("/api/auth/project", { project: "no-such-project" });
    expect(refused.status).toBe(404);
    expect(refused.body.error.code).toBe(absent.body.error.code);
    expect((await person.client.get("/api/auth/me")).body.project.slug).toBe(b.slug);
  });
});
