import { Database } from "bun:sqlite";
import { describe, expect, spyOn, test } from "bun:test";
import { join } from "node:path";
import { DATABASE_FILE } from "../../src/db/index.ts";
import { startWorld } from "../helpers/world.ts";
import { answers, commandWorkflow, countRows, fire, firePath, issueToken, waitForRun } from "../helpers/workflows.ts";

describe("the fire endpoint", () => {
  test("a workflow fired with a bearer token runs its command, answers 202 with the run id, and the run row shows the answer", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, `printf 'you said: %s' "$(tail -n 2 | head -n 1)"`);
    const { token, triggerId } = await issueToken(member.client, workflow.id);
    expect(token).toMatch(/^wfk1_[A-Za-z0-9_-]{43}$/);

    const fired = await fire(world, workflow.id, token, { text: "hello there" });
    expect(fired.status).toBe(202);
    expect(fired.body).toEqual({ runId: expect.stringMatching(/^run-/), workflowId: workflow.id, number: 1, status: "queued" });

    const run = await waitForRun(member.client, workflow.id, fired.body.runId);
    expect(run).toMatchObject({ status: "succeeded", trigger: { id: triggerId, kind: "webhook" }, input: { text: "hello there", source: { kind: "webhook", triggerId } }, error: null, attempts: 1 });
    expect(answers(run)).toEqual(["you said: hello there"]);
  });

  test("a body without text fires too; the run's input text is null", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo fired");
    const { token } = await issueToken(member.client, workflow.id);
    const empty = await world.anonymous().request("POST", firePath(workflow.id), undefined, { authorization: `Bearer ${token}` });
    expect(empty.status).toBe(202);
    const run = await waitForRun(member.client, workflow.id, empty.body.runId);
    expect(run.input.text).toBeNull();
    expect(answers(run)).toEqual(["fired"]);
  });

  test("a body of only whitespace sent as JSON is not an empty body: 400 invalid_json and no run", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo never");
    const { token } = await issueToken(member.client, workflow.id);
    for (const body of [" ", "  \n\t\r\n "]) {
      const response = await fire(world, workflow.id, token, body, { "content-type": "application/json" });
      expect({ body, status: response.status, code: response.body.error?.code }).toEqual({ body, status: 400, code: "invalid_json" });
    }
    expect(countRows(world, "workflow_runs")).toBe(0);
  });

  test("a wrong token, a revoked token, a rotated-out token, no token and an unknown workflow all get the same 401, and nothing is recorded", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo never");
    const first = await issueToken(member.client, workflow.id);
    const rotated = await member.client.post(`/api/workflows/${workflow.id}/triggers/${first.triggerId}/rotate`);
    expect(rotated.status).toBe(200);
    const revoked = await issueToken(member.client, workflow.id);
    expect((await member.client.delete(`/api/workflows/${workflow.id}/triggers/${revoked.triggerId}`)).status).toBe(200);
    const auditBefore = countRows(world, "audit_log");

    const attempts = [
      await fire(world, workflow.id, "wfk1_" + "A".repeat(43)),
      await fire(world, workflow.id, "not-even-a-token"),
      await fire(world, workflow.id, first.token),
      await fire(world, workflow.id, revoked.token),
      await fire(world, "wf-unknown", rotated.body.token),
      await world.anonymous().post(firePath(workflow.id), {}),
    ];
    for (const attempt of attempts) {
      expect(attempt.status).toBe(401);
      expect(attempt.body).toEqual({ error: { code: "unauthorized", message: "Invalid fire token" } });
    }
    expect((await fire(world, workflow.id, rotated.body.token)).status).toBe(202);
    expect(countRows(world, "workflow_runs")).toBe(1);
    expect(countRows(world, "audit_log")).toBe(auditBefore);
  });

  test("a token revoked or rotated, or a workflow deleted, while the body is still arriving: 401 and no run", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo never");
    const triggers = `/api/workflows/${workflow.id}/triggers`;
    const changes: [string, (triggerId: string) => Promise<{ status: number }>][] = [
      ["revoked", (triggerId) => member.client.delete(`${triggers}/${triggerId}`)],
      ["rotated", (triggerId) => member.client.post(`${triggers}/${triggerId}/rotate`)],
      ["workflow deleted", () => member.client.delete(`/api/workflows/${workflow.id}`)],
    ];
    for (const [change, apply] of changes) {
      const { token, triggerId } = await issueToken(member.client, workflow.id);
      const rest = Promise.withResolvers<void>();
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(new TextEncoder().encode('{"text":"sent before the '));
          await rest.promise;
          controller.enqueue(new TextEncoder().encode(`${change}"}`));
          controller.close();
        },
      });
      const answer = fetch(world.hatch.url + firePath(workflow.id), { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body });
      // Let the headers reach the server and pass the token check; the answer is the same 401 if the change arrives first.
      await Bun.sleep(50);
      expect((await apply(triggerId)).status).toBe(200);
      rest.resolve();
      const response = await answer;
      expect({ change, status: response.status, body: await response.json() }).toEqual({ change, status: 401, body: { error: { code: "unauthorized", message: "Invalid fire token" } } });
    }
    expect(countRows(world, "workflow_runs")).toBe(0);
  });

  test("a body that is not JSON, a text that is not a string, a text over 4,000 characters, another content type: 400 and no run", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "cat");
    const { token } = await issueToken(member.client, workflow.id);
    const cases: [unknown, string, Record<string, string>?][] = [
      ["{not json", "invalid_json"],
      ["[1, 2]", "invalid_body"],
      ['"just a string"', "invalid_body"],
      [{ text: 42 }, "invalid_text"],
      [{ text: null }, "invalid_text"],
      [{ text: ["a"] }, "invalid_text"],
      [{ text: "x".repeat(4001) }, "text_too_long"],
      [{ text: "😀".repeat(4001) }, "text_too_long"],
      [JSON.stringify({ text: "hi" }), "invalid_content_type", { "content-type": "text/plain" }],
      [JSON.stringify({ text: "hi" }), "invalid_content_type", { "content-type": "application/json-patch+json" }],
      [JSON.stringify({ text: "y".repeat(70_000) }), "body_too_large"],
    ];
    for (const [body, code, headers] of cases) {
      const response = await fire(world, workflow.id, token, body, headers);
      expect({ status: response.status, code: response.body.error?.code }).toEqual({ status: 400, code });
      expect(JSON.stringify(response.body)).not.toContain(token);
    }
    expect(countRows(world, "workflow_runs")).toBe(0);

    const limit = await fire(world, workflow.id, token, { text: "😀".repeat(4000) });
    expect(limit.status).toBe(202);
  });

  test("a body in another charset, or not UTF-8 at all, is refused with 400, never run with its text replaced; charset=utf-8 is fine", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "cat");
    const { token } = await issueToken(member.client, workflow.id);
    // {"text":"café"} in ISO-8859-1: the é is the one byte 0xE9, which is no UTF-8.
    const latin1 = new Uint8Array([...new TextEncoder().encode('{"text":"caf'), 0xe9, ...new TextEncoder().encode('"}')]);
    const post = (body: Uint8Array | string, contentType: string) =>
      fetch(world.hatch.url + firePath(workflow.id), { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": contentType }, body: body as BodyInit });
    for (const [body, contentType, code] of [
      [latin1, "application/json; charset=iso-8859-1", "invalid_content_type"],
      [JSON.stringify({ text: "café" }), "application/json; charset=utf-16", "invalid_content_type"],
      // A name of windows-1252, and a name of no encoding at all.
      [latin1, "application/json; charset=latin1", "invalid_content_type"],
      [JSON.stringify({ text: "café" }), "application/json; charset=utf-9", "invalid_content_type"],
      [latin1, "application/json", "invalid_json"],
      [latin1, "application/json; charset=utf-8", "invalid_json"],
    ] as const) {
      const response = await post(body, contentType);
      expect({ contentType, status: response.status, code: ((await response.json()) as any).error.code }).toEqual({ contentType, status: 400, code });
    }
    expect(countRows(world, "workflow_runs")).toBe(0);
    const accepted = await post(JSON.stringify({ text: "café" }), 'application/json; Charset="UTF-8"');
    expect(accepted.status).toBe(202);
    expect((await waitForRun(member.client, workflow.id, ((await accepted.json()) as any).runId)).input.text).toBe("café");
  });

  test("a JSON body labelled with another name of UTF-8 (charset=utf8, UTF8: WHATWG labels of UTF-8) fires: it names no charset other than UTF-8", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "cat");
    const { token } = await issueToken(member.client, workflow.id);
    for (const contentType of ["application/json; charset=utf8", "application/json;charset=UTF8", 'application/json; charset="unicode-1-1-utf-8"']) {
      const response = await fire(world, workflow.id, token, { text: "café" }, { "content-type": contentType });
      expect({ contentType, status: response.status, code: response.body.error?.code }).toEqual({ contentType, status: 202, code: undefined });
    }
  });

  test("a text holding a lone surrogate (\\ud83d: an emoji cut in half by a sender trimming to 4,000) is refused with 400, never run with U+FFFD in its place", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "cat");
    const { token } = await issueToken(member.client, workflow.id);
    const text = "deploy \u{1F680}".slice(0, -1); // "deploy \ud83d": what "…".slice(0, n) leaves when n splits a pair
    // Valid JSON, and valid UTF-8 bytes on the wire: JSON.stringify writes the lone half as the escape \ud83d.
    const body = JSON.stringify({ text });
    expect(body).toContain("\\ud83d");
    const response = await fire(world, workflow.id, token, body, { "content-type": "application/json" });
    expect({ status: response.status, code: response.body.error?.code }).toEqual({ status: 400, code: "invalid_text" });
    expect(countRows(world, "workflow_runs")).toBe(0);
  });

  test("a client that goes away mid-body leaves no run and is not logged as a server error", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "cat");
    const { token } = await issueToken(member.client, workflow.id);
    const logged = spyOn(console, "error");
    try {
      const port = Number(new URL(world.hatch.url).port);
      for (const framing of ["Content-Length: 50\r\n\r\n", "Transfer-Encoding: chunked\r\n\r\n5\r\n"]) {
        const socket = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
        socket.write(`POST ${firePath(workflow.id)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n${framing}{"tex`);
        // The server has the headers and the start of the body, and waits for the rest when the client leaves.
        await Bun.sleep(100);
        socket.end();
      }
      // A request after both: they were handled (or dropped) by the time it is answered.
      expect((await fire(world, workflow.id, token, { text: "after" })).status).toBe(202);
      expect(logged.mock.calls.map((call) => call.map(String).join(" ")).filter((line) => line.includes("unexpected"))).toEqual([]);
    } finally {
      logged.mockRestore();
    }
    expect(countRows(world, "workflow_runs")).toBe(1);
  });

  test("a chunked body (no Content-Length) is cut off at the cap as it streams: a body that never ends still gets its 400", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "cat");
    const { token } = await issueToken(member.client, workflow.id);
    let sent = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        // Valid JSON that never closes: only the cap can end the read.
        controller.enqueue(new TextEncoder().encode(sent === 0 ? '{"text":"' : "y".repeat(1024)));
        sent++;
      },
    });
    const response = await fetch(world.hatch.url + firePath(workflow.id), {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: endless,
    });
    expect({ status: response.status, code: ((await response.json()) as any).error.code }).toEqual({ status: 400, code: "body_too_large" });
    expect(countRows(world, "workflow_runs")).toBe(0);

    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const part of ['{"te', 'xt":"in ', 'chunks"}']) controller.enqueue(new TextEncoder().encode(part));
        controller.close();
      },
    });
    const accepted = await fetch(world.hatch.url + firePath(workflow.id), {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: chunked,
    });
    expect(accepted.status).toBe(202);
    const run = await waitForRun(member.client, workflow.id, ((await accepted.json()) as any).runId);
    expect(run.input.text).toBe("in chunks");
  });

  test("a paused, archived or template-awaiting workflow refuses with 409 and records nothing as a run", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo hi");
    const { token } = await issueToken(member.client, workflow.id);
    for (const status of ["paused", "archived"]) {
      expect((await member.client.request("PATCH", `/api/workflows/${workflow.id}`, { status })).status).toBe(200);
      const refused = await fire(world, workflow.id, token, { text: "anyone?" });
      expect(refused.status).toBe(409);
      expect(refused.body.error).toEqual({ code: "workflow_not_active", message: `Workflow "Echo" is ${status}: it does not fire until it is active` });
    }
    world.hatch.sqlite.run("UPDATE workflows SET status = 'awaiting-template-upgrade' WHERE id = ?", [workflow.id]);
    expect((await fire(world, workflow.id, token)).body.error.code).toBe("workflow_not_active");
    expect(countRows(world, "workflow_runs")).toBe(0);
  });

  test("a wrong token on a paused workflow still gets the 401, not the 409", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo hi", { status: "paused" });
    await issueToken(member.client, workflow.id);
    expect((await fire(world, workflow.id, "wfk1_" + "B".repeat(43))).status).toBe(401);
  });

  test("every fire's run row is in the database, as a second connection reads it, by the time its 202 arrives", async () => {
    await using world = await startWorld({}, { fireRatePerMinute: 0 });
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo hi", { mode: "fresh" });
    const { token } = await issueToken(member.client, workflow.id);
    const reader = new Database(join(world.config.dataDir, DATABASE_FILE), { readonly: true });
    world.onDispose(() => reader.close());
    const stored = reader.query("SELECT number, input_text AS text FROM workflow_runs WHERE id = ?");

    // Twenty at once, so fires arriving in the same turn share a group commit.
    const seen = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const fired = await fire(world, workflow.id, token, { text: `fire ${i}` });
        return { status: fired.status, row: stored.get(fired.body.runId), number: fired.body.number };
      }),
    );
    expect(seen.map((s) => ({ status: s.status, row: s.row }))).toEqual(seen.map((s, i) => ({ status: 202, row: { number: s.number, text: `fire ${i}` } })));
    expect(seen.map((s) => s.number).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });
});
