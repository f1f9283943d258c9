import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import { createApp, MAX_REQUEST_BODY_BYTES } from "../src/app.ts";
import { startWorld } from "./helpers/world.ts";
import { commandWorkflow, countRows } from "./helpers/workflows.ts";

describe("the HTTP edge", () => {
  test("malformed JSON gets 400 invalid_json; a body failing its schema gets 400 naming the field", async () => {
    await using world = await startWorld();
    const client = world.anonymous();
    const malformed = await client.post("/api/auth/login", "{not json");
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({ error: { code: "invalid_json", message: "The request body is not valid JSON" } });
    const schema = await client.post("/api/auth/login", { email: "a@example.com" });
    expect(schema.status).toBe(400);
    expect(schema.body.error.code).toBe("invalid_request");
    expect(schema.body.error.message).toContain('"password"');
  });

  test("a JSON body that is not an object gets 400 invalid_body, even where every field is optional, and nothing happens", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "cat");
    const sessions = "/api/packages/agent/terminal/sessions";
    const cases: [string, string][] = [
      [`/api/workflows/${workflow.id}/runs`, '"Is the build green?"'],
      [`/api/workflows/${workflow.id}/runs`, '[{"text":"a"}]'],
      [`/api/workflows/${workflow.id}/runs`, "7"],
      [`/api/workflows/${workflow.id}/runs`, "null"],
      [sessions, "[]"],
    ];
    for (const [path, body] of cases) {
      const answer = await member.client.post(path, body);
      expect({ path, body, status: answer.status, error: answer.body.error }).toEqual({ path, body, status: 400, error: { code: "invalid_body", message: "The request body must be a JSON object" } });
    }
    const patched = await member.client.request("PATCH", `/api/workflows/${workflow.id}`, '["paused"]');
    expect(patched.body.error.code).toBe("invalid_body");
    expect(countRows(world, "workflow_runs")).toBe(0);
    expect((await member.client.get(sessions)).body.sessions).toEqual([]);
    // An object with every field left out is still a body.
    expect((await member.client.post(`/api/workflows/${workflow.id}/runs`, {})).status).toBe(202);
  });

  test("a number in a query or path that is not a whole number in range gets 400, never 500, and is not called a body", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    await owner.client.post("/api/packages/agent/terminal/sessions", { sourceSlug: "container-root", id: "r" });
    const workflow = await commandWorkflow(owner, "cat");
    const answers = [
      await owner.client.get("/api/packages/agent/terminal/sessions/r/read?lines=1.5"),
      await owner.client.get("/api/packages/agent/terminal/sessions/r/read?lines=0"),
      await owner.client.get(`/api/workflows/${workflow.id}/runs?limit=2.5`),
      await owner.client.get("/api/audit?limit=1.5"),
    ];
    const fields = ["lines", "lines", "limit", "limit"];
    answers.forEach((answer, i) => {
      expect(answer.status).toBe(400);
      expect(answer.body.error.code).toBe("invalid_request");
      expect(answer.body.error.message).not.toContain("body");
      // Named, though Elysia's own error for a converted number does not say which field it was.
      expect(answer.body.error.message).toStartWith(`Invalid request: field "${fields[i]}" expected a whole number from 1 to `);
    });
    const since = await owner.client.get("/api/audit?since=1.5");
    expect(since.body.error.message).toBe('Invalid request: field "since" expected a whole number of at least 0');
    expect((await owner.client.get("/api/packages/agent/terminal/sessions/r/read?lines=2")).status).toBe(200);
  });

  test("a value outside a field's choices or range gets a 400 naming what the field accepts", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const mode = await member.client.post("/api/workflows", { name: "x", runner: { kind: "command", command: "true" }, mode: "sometimes" });
    expect(mode.body).toEqual({ error: { code: "invalid_request", message: 'Invalid body: field "mode" expected one of "one-thread", "fresh"' } });
    const cols = await member.client.post("/api/packages/agent/terminal/sessions", { sourceSlug: "docs", cols: 0 });
    expect(cols.body).toEqual({ error: { code: "invalid_request", message: 'Invalid body: field "cols" expected an integer from 2 to 1000' } });
  });

  test("a body over 1 MiB gets 413 before any route reads it, whether its length is declared or it is chunked and never ends", async () => {
    await using world = await startWorld();
    const client = world.anonymous();
    const declared = await client.post("/api/auth/login", { email: "a@example.com", password: "x".repeat(MAX_REQUEST_BODY_BYTES) });
    expect(declared.status).toBe(413);
    const endless = new ReadableStream<Uint8Array>({
      pull: (controller) => controller.enqueue(new TextEncoder().encode("x".repeat(64 * 1024))),
    });
    const chunked = await fetch(world.hatch.url + "/api/auth/login", { method: "POST", headers: { "content-type": "application/json" }, body: endless });
    expect(chunked.status).toBe(413);
    // Just under the cap reaches the route, which answers as usual (here: the password is over its schema's length).
    const under = await client.post("/api/auth/login", { email: "a@example.com", password: "x".repeat(MAX_REQUEST_BODY_BYTES - 100) });
    expect({ status: under.status, code: under.body.error.code }).toEqual({ status: 400, code: "invalid_request" });
  });

  test("a duplicate that another process inserted between a store's check and its insert gets 409 conflict, not 500", async () => {
    using db = new Database(":memory:");
    db.run("CREATE TABLE roles (project_id TEXT, name TEXT, UNIQUE (project_id, name))");
    db.run("INSERT INTO roles VALUES ('p', 'ops')");
    const logged: unknown[] = [];
    const routes = new Elysia().post("/roles", () => db.run("INSERT INTO roles VALUES ('p', 'ops')"));
    const app = createApp({ routes: [routes], logError: (error) => logged.push(error) });
    const answer = await app.handle(new Request("http://localhost/roles", { method: "POST" }));
    expect({ status: answer.status, body: await answer.json(), logged }).toEqual({
      status: 409,
      body: { error: { code: "conflict", message: "Something with the same name was saved at the same moment; look again, then retry" } },
      logged: [],
    });
  });

  test("a JSON body nested deeper than 64 levels gets 400 invalid_json before it is parsed, not a 500 and a logged stack trace, even before sign-in", async () => {
    const logged: unknown[] = [];
    await using world = await startWorld();
    // A 10 KB body anyone can send: 5,000 nested arrays where the login wants a string.
    const depth = 5000;
    const body = `{"email":${"[".repeat(depth)}${"]".repeat(depth)},"password":"x"}`;
    const original = console.error;
    console.error = (...args: unknown[]) => void logged.push(args);
    try {
      const answer = await world.anonymous().post("/api/auth/login", body);
      expect({ status: answer.status, code: answer.body.error.code, logged: logged.length }).toEqual({ status: 400, code: "invalid_json", logged: 0 });
      // 64 levels are still a body, judged by the route's schema as usual.
      const deepest = `{"email":${"[".repeat(63)}${"]".repeat(63)},"password":"x"}`;
      const judged = await world.anonymous().post("/api/auth/login", deepest);
      expect({ status: judged.status, code: judged.body.error.code, logged: logged.length }).toEqual({ status: 400, code: "invalid_request", logged: 0 });
      // Every group of routes that reads JSON reads it so.
      const owner = await world.signedIn(await world.project(), "owner");
      const deep = `{"name":${"[".repeat(depth)}${"]".repeat(depth)}}`;
      for (const path of ["/api/workflows", "/api/sources", "/api/packages/agent/terminal/sessions", "/api/agents", "/api/auth/project"]) {
        const answer = await owner.client.post(path, deep);
        expect({ path, status: answer.status, code: answer.body.error?.code }).toEqual({ path, status: 400, code: "invalid_json" });
      }
      expect((await owner.client.put("/api/secrets/user/token", deep)).body.error?.code).toBe("invalid_json");
      expect(logged).toEqual([]);
    } finally {
      console.error = original;
    }
  });

  test("an unknown route gets 404 with the standard error body", async () => {
    await using world = await startWorld();
    const response = await world.anonymous().get("/api/nothing/here");
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ error: { code: "not_found", message: "Not found" } });
  });

  test("the companion server answers plain HTTP with 404 and serves nothing else", async () => {
    await using world = await startWorld();
    const response = await fetch(world.hatch.companionUrl + "/api/auth/me");
    expect(response.status).toBe(404);
  });
});

describe("the HTTP edge: requests without a body", () => {
  test("a DELETE or a logout labelled application/json but with no body is served as before the depth check, not refused as invalid JSON", async () => {
    await using world = await startWorld();
    const owner = await world.signedIn(await world.project(), "owner");
    expect((await owner.client.put("/api/secrets/user/token", { value: "v" })).status).toBe(200);
    // Many HTTP wrappers label every request JSON; these carry no body at all (no Content-Length, no chunks).
    const send = (method: string, path: string) =>
      fetch(world.hatch.url + path, { method, headers: { cookie: owner.client.cookieHeader, "content-type": "application/json" } }).then(async (r) => ({ path, status: r.status, code: ((await r.json()) as any).error?.code }));
    const deleted = await send("DELETE", "/api/secrets/user/token");
    const loggedOut = await send("POST", "/api/auth/logout");
    expect([deleted, loggedOut]).toEqual([
      { path: "/api/secrets/user/token", status: 200, code: undefined },
      { path: "/api/auth/logout", status: 200, code: undefined },
    ]);
  });
});
