import { describe, expect, test } from "bun:test";
import { startWorld, TEST_PASSWORD } from "../helpers/world.ts";
import { MAX_SIGN_INS_PER_USER } from "../../src/platform/index.ts";
import { countRows } from "../helpers/workflows.ts";

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

  test("the cookie is Secure when the browser came over TLS: a trusted proxy's X-Forwarded-Proto says so, anyone else's does not", async () => {
    await using world = await startWorld({ HATCH_TRUSTED_PROXIES: "127.0.0.1" });
    const user = await world.user();
    const cookieOf = async (headers: Record<string, string>) =>
      (await world.anonymous().post("/api/auth/login", { email: user.email, password: TEST_PASSWORD }, headers)).headers.getSetCookie().find((c) => c.startsWith("hatch_session="))!;
    expect(await cookieOf({ "x-forwarded-proto": "https" })).toMatch(/;\s*Secure/i);
    expect(await cookieOf({ "x-forwarded-proto": "https, http" })).toMatch(/;\s*Secure/i);
    expect(await cookieOf({ "x-forwarded-proto": "http" })).not.toMatch(/Secure/i);
    expect(await cookieOf({})).not.toMatch(/Secure/i);
    // Logging out over TLS clears the cookie with the same attributes.
    const client = world.anonymous();
    await client.post("/api/auth/login", { email: user.email, password: TEST_PASSWORD }, { "x-forwarded-proto": "https" });
    const cleared = (await client.post("/api/auth/logout", undefined, { "x-forwarded-proto": "https" })).headers.getSetCookie()[0]!;
    expect(cleared).toMatch(/^hatch_session=;.*Secure/i);
  });

  test("a peer that is not a trusted proxy cannot claim TLS", async () => {
    await using world = await startWorld();
    const user = await world.user();
    const answer = await world.anonymous().post("/api/auth/login", { email: user.email, password: TEST_PASSWORD }, { "x-forwarded-proto": "https" });
    expect(answer.headers.getSetCookie().find((c) => c.startsWith("hatch_session="))).not.toMatch(/Secure/i);
  });

  test("login takes JSON only: a form-encoded body (what a cross-site form can send) signs nobody in", async () => {
    await using world = await startWorld();
    const user = await world.user();
    const form = `email=${encodeURIComponent(user.email)}&password=${encodeURIComponent(TEST_PASSWORD)}`;
    // A browser names the page it came from, and another origin's page is refused before the body is read;
    // without that header (an old browser, a page the check let through) the body's type alone refuses it.
    for (const [origin, status] of [["https://evil.example", 403], [null, 415]] as const) {
      const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded", ...(origin ? { origin } : {}) };
      const answer = await fetch(`${world.hatch.url}/api/auth/login`, { method: "POST", headers, body: form });
      expect(answer.status).toBe(status);
      expect(answer.headers.getSetCookie()).toEqual([]);
    }
    expect((await world.anonymous().post("/api/auth/login", { email: user.email, password: TEST_PASSWORD })).status).toBe(200);
  });

  test("login takes JSON only: a text/plain body holding JSON (what a form with enctype=text/plain sends) gets 415 and signs nobody in", async () => {
    await using world = await startWorld();
    const user = await world.user();
    // <form enctype="text/plain"><input name='{"email":"…","password":"…","x":"' value='"}'> sends exactly this shape.
    const body = `{"email":"${user.email}","password":"${TEST_PASSWORD}","x":"="}`;
    const answer = await fetch(`${world.hatch.url}/api/auth/login`, { method: "POST", headers: { "content-type": "text/plain" }, body });
    expect(answer.headers.getSetCookie()).toEqual([]);
    expect({ status: answer.status, code: ((await answer.json()) as any).error.code }).toEqual({ status: 415, code: "unsupported_media_type" });
    // The JSON type with a parameter is JSON.
    const json = await fetch(`${world.hatch.url}/api/auth/login`, { method: "POST", headers: { "content-type": "application/json; charset=utf-8" }, body });
    expect(json.status).toBe(200);
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

  test("failed logins are limited per address and per email: past the limit even the right password gets 429 until the last window has room again", async () => {
    const clock = { now: Date.now() };
    await using world = await startWorld({ HATCH_TRUSTED_PROXIES: "127.0.0.1" }, { now: () => clock.now });
    const user = await world.user();
    const login = (password: string, from = "203.0.113.1") =>
      world.anonymous().post("/api/auth/login", { email: user.email, password }, { "x-forwarded-for": from });
    for (let i = 0; i < 10; i++) expect((await login("not the password")).status).toBe(401);
    const refused = await login(TEST_PASSWORD);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toEqual({ code: "too_many_logins", message: "Too many failed logins: try again later" });
    // Ten failures in a sliding 15-minute window: room for one more once the first of them leaves it.
    expect(refused.headers.get("retry-after")).toBe("900");
    expect(refused.headers.getSetCookie()).toEqual([]);
    // The same /64 is the same client; another address is not held back by this one's failures.
    expect((await login(TEST_PASSWORD, "2001:db8::1")).status).toBe(200);
    clock.now += 899_000;
    expect((await login(TEST_PASSWORD)).status).toBe(429);
    clock.now += 1_000;
    expect((await login(TEST_PASSWORD)).status).toBe(200);

    // Guesses spread over many addresses meet the per-email limit (20), which holds for every address.
    // Two windows on, the failures above count no more.
    clock.now += 30 * 60_000;
    for (let i = 0; i < 20; i++) expect((await login("not the password", `198.51.100.${i}`)).status).toBe(401);
    expect((await login(TEST_PASSWORD, "192.0.2.1")).status).toBe(429);
    // Another user's email is not affected.
    const other = await world.user("other");
    expect((await world.anonymous().post("/api/auth/login", { email: other.email, password: TEST_PASSWORD }, { "x-forwarded-for": "192.0.2.1" })).status).toBe(200);
  });

  test("through a trusted proxy that writes ip:port, failed logins from one client are still limited per address", async () => {
    await using world = await startWorld({ HATCH_TRUSTED_PROXIES: "127.0.0.1" });
    const statuses: number[] = [];
    // Different emails, so only the per-address limit (10) can stop this client; each connection has a new source port.
    for (let i = 0; i < 12; i++) {
      const answer = await world.anonymous().post("/api/auth/login", { email: `nobody-${i}@example.com`, password: "a guess" }, { "x-forwarded-for": `203.0.113.7:${40000 + i}` });
      statuses.push(answer.status);
    }
    expect(statuses).toEqual([...Array<number>(10).fill(401), 429, 429]);
  });

  test("logins that succeed do not count, and a burst of parallel guesses cannot pass the limit before the first fails", async () => {
    await using world = await startWorld();
    const user = await world.user();
    for (let i = 0; i < 12; i++) expect((await world.anonymous().post("/api/auth/login", { email: user.email, password: TEST_PASSWORD })).status).toBe(200);
    const burst = await Promise.all(Array.from({ length: 30 }, () => world.anonymous().post("/api/auth/login", { email: user.email, password: "a guess" })));
    const statuses = burst.map((answer) => answer.status).sort();
    expect(statuses).toEqual([...Array<number>(10).fill(401), ...Array<number>(20).fill(429)]);
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

  test("a user keeps at most 50 sign-ins: a login past that ends the oldest, and the others stay signed in", async () => {
    await using world = await startWorld();
    const user = await world.user();
    const login = (await world.platform.users.verifyLogin(user.email, TEST_PASSWORD))!;
    const tokens: string[] = [];
    for (let i = 0; i < MAX_SIGN_INS_PER_USER + 1; i++) tokens.push((await world.platform.sessions.create(login, null))!.token);
    const live = await Promise.all(tokens.map(async (token) => (await world.platform.sessions.resolve(token)) !== null));
    expect({ oldest: live[0], rest: live.slice(1).every(Boolean), rows: countRows(world, "auth_sessions") }).toEqual({ oldest: false, rest: true, rows: MAX_SIGN_INS_PER_USER });
    // Another user's sign-ins are not touched.
    const other = await world.signedIn(await world.project(), "member");
    expect((await other.client.get("/api/auth/me")).status).toBe(200);
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

  test("two hatch_session cookies (one planted by a page on another port of the host) sign nobody in, rather than the planter", async () => {
    await using world = await startWorld();
    const victim = await world.signedIn(await world.project(), "member");
    const attacker = await world.signedIn(await world.project(), "owner");
    // The attacker's page answered `Set-Cookie: hatch_session=<attacker's own>; Path=/api` (cookies ignore ports):
    // the victim's browser now sends both on every /api request, the longer path first.
    const both = world.anonymous();
    both.cookies.set("hatch_session", `${attacker.client.cookies.get("hatch_session")}; hatch_session=${victim.client.cookies.get("hatch_session")}`);
    expect((await both.get("/api/auth/me")).body).toEqual({ error: { code: "unauthorized", message: "Sign in first" } });
    expect((await both.put("/api/secrets/user/openai.apiKey", { value: "sk-the-victims-own-key" })).status).toBe(401);
    expect((await both.get("/api/packages/agent/terminal/health")).status).toBe(401);
    expect(world.platform.secrets.list("user", attacker.user.id)).toEqual([]);
    // Each cookie alone still works.
    expect((await victim.client.get("/api/auth/me")).body.user.id).toBe(victim.user.id);
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

  test("logout ends the session even when a second hatch_session cookie was planted beside it", async () => {
    await using world = await startWorld();
    const user = await world.user();
    const client = await world.login(user.email);
    const own = client.cookies.get("hatch_session")!;
    // A page on another port planted `hatch_session=junk; Path=/api`: every /api request now carries both, and the
    // victim, seeing 401s, logs out. The answer says it worked and clears the browser's cookie at Path=/ ...
    const both = world.anonymous();
    both.cookies.set("hatch_session", `planted-junk; hatch_session=${own}`);
    expect((await both.post("/api/auth/logout")).body).toEqual({ ok: true });
    // ... so the sign-in behind it must be over: a copy of the cookie taken before must not work any more.
    const replay = world.anonymous();
    replay.cookies.set("hatch_session", own);
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

  test("without a session every signed-in route answers 401, and without an active project 403, whatever the query or body", async () => {
    await using world = await startWorld();
    const anonymous = world.anonymous();
    const malformed = [
      () => anonymous.post("/api/auth/project", {}),
      () => anonymous.get("/api/audit?limit=0"),
      () => anonymous.put("/api/settings/terminalMaxSessions", "[]"),
      () => anonymous.post("/api/roles", { name: 7 }),
      () => anonymous.put("/api/packages/agent/access", {}),
      () => anonymous.get("/api/packages/agent/access"),
      () => anonymous.post("/api/agents", { shared: "yes" }),
    ];
    for (const send of malformed) expect((await send()).status).toBe(401);
    // Signed in, but in no project: the project routes refuse before they look at the request.
    const loner = { client: await world.login((await world.user("loner")).email) };
    expect((await loner.client.get("/api/audit?limit=0")).body.error.code).toBe("no_project");
    expect((await loner.client.post("/api/roles", { name: 7 })).body.error.code).toBe("no_project");
  });
});

describe("logout with planted cookies", () => {
  test("a logout that answers ok leaves no sign-in behind even when the planting page set eight junk cookies at longer paths before the real one", async () => {
    await using world = await startWorld();
    const user = await world.user();
    const client = await world.login(user.email);
    const own = client.cookies.get("hatch_session")!;
    // Paths /api/auth/logout, /api/auth/, /api/auth, /api/, /api ... each longer than "/", so the browser sends them all first.
    const planted = Array.from({ length: 8 }, (_, i) => `hatch_session=junk-${i}`).join("; ");
    const all = world.anonymous();
    all.cookies.set("hatch_session", `x; ${planted}; hatch_session=${own}`.replace(/^x; hatch_session=/, ""));
    expect((await all.post("/api/auth/logout")).body).toEqual({ ok: true });
    const replay = world.anonymous();
    replay.cookies.set("hatch_session", own);
    expect((await replay.get("/api/auth/me")).status).toBe(401);
  });
});
