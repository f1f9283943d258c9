import { describe, expect, test } from "bun:test";
import { startWorld } from "./helpers/world.ts";

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

  test("a value outside a field's choices or range gets a 400 naming what the field accepts", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const mode = await member.client.post("/api/workflows", { name: "x", runner: { kind: "command", command: "true" }, mode: "sometimes" });
    expect(mode.body).toEqual({ error: { code: "invalid_request", message: 'Invalid body: field "mode" expected one of "one-thread", "fresh"' } });
    const cols = await member.client.post("/api/packages/agent/terminal/sessions", { sourceSlug: "docs", cols: 0 });
    expect(cols.body).toEqual({ error: { code: "invalid_request", message: 'Invalid body: field "cols" expected an integer from 2 to 1000' } });
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
