import { describe, expect, test } from "bun:test";
import { CUT_SHORT_NOTE, leftOutNote, MAX_COMPLETION_BYTES, MAX_RETRY_AFTER_MS, retryAfter, UNTRUSTED_NOTE, type RunUpdate } from "../../src/workflows/index.ts";
import { startFakeOpenAi } from "../helpers/fake-openai.ts";
import { startWorld, type World } from "../helpers/world.ts";
import { answers, countRows, createWorkflow, fire, issueToken, waitForRun } from "../helpers/workflows.ts";

const API_KEY = "sk-test-0123456789";
const INSTRUCTION = "You are terse.";

/** The body that creates an openai workflow naming the project secret `openai-key`. */
function openAiWorkflow(baseUrl: string, extra: Record<string, unknown> = {}) {
  return { name: "Bot", instruction: INSTRUCTION, runner: { kind: "openai", baseUrl, model: "gpt-test", apiKeySecret: "openai-key" }, ...extra };
}

/** A project whose owner stored the API key as the project secret `openai-key`. */
async function projectWithApiKey(world: World) {
  const project = await world.project();
  const owner = await world.signedIn(project, "owner");
  expect((await owner.client.put("/api/secrets/project/openai-key", { value: API_KEY })).status).toBe(200);
  return { project, owner };
}

/** A project whose owner stored the API key as a project secret and created an openai workflow with a fire token. */
async function openAiSetup(world: World, baseUrl: string, extra: Record<string, unknown> = {}) {
  const { project, owner } = await projectWithApiKey(world);
  const workflow = await createWorkflow(owner.client, openAiWorkflow(baseUrl, extra));
  const { token, triggerId } = await issueToken(owner.client, workflow.id);
  return { project, owner, workflow, token, triggerId };
}

/** Every 8-character piece of the API key that `text` holds (none, once redacted). */
function piecesOfKeyIn(text: string): string[] {
  const pieces = Array.from({ length: API_KEY.length - 7 }, (_, i) => API_KEY.slice(i, i + 8));
  return pieces.filter((piece) => text.includes(piece));
}

describe("the openai runner", () => {
  test("the fake OpenAI-compatible server receives exactly the instruction and the delimited input; earlier turns follow in one-thread mode", async () => {
    await using world = await startWorld();
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token, triggerId } = await openAiSetup(world, openai.baseUrl);
    const first = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "Hi, I am Ada." })).body.runId);
    expect(first).toMatchObject({ status: "succeeded", tokensUsed: 42 });
    expect(answers(first)).toEqual(["fake answer 1"]);
    openai.reply({ content: "Your name is Ada." });
    const second = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "Who am I?" })).body.runId);
    expect(answers(second)).toEqual(["Your name is Ada."]);

    const block = (nonce: string, text: string) =>
      [`<untrusted-context id="${nonce}">`, `source: fire endpoint, webhook trigger "${triggerId}"`, UNTRUSTED_NOTE, "", text, `</untrusted-context id="${nonce}">`].join("\n");
    const nonceOf = (i: number) => /id="([0-9a-f]{16})"/.exec(openai.requests[i]!.body.messages.at(-1)!.content)![1]!;
    expect(openai.requests).toEqual([
      {
        authorization: `Bearer ${API_KEY}`,
        query: "",
        body: { model: "gpt-test", messages: [{ role: "system", content: INSTRUCTION }, { role: "user", content: block(nonceOf(0), "Hi, I am Ada.") }] },
      },
      {
        authorization: `Bearer ${API_KEY}`,
        query: "",
        body: {
          model: "gpt-test",
          messages: [
            { role: "system", content: INSTRUCTION },
            { role: "user", content: block(nonceOf(1), "Hi, I am Ada.") },
            { role: "assistant", content: "fake answer 1" },
            { role: "user", content: block(nonceOf(1), "Who am I?") },
          ],
        },
      },
    ]);
  });

  test("a turn the model left unanswered is not replayed in the thread, as an empty assistant message or at all", async () => {
    await using world = await startWorld();
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl);
    openai.reply({ content: "  " });
    const silent = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "first" })).body.runId);
    expect({ status: silent.status, answers: answers(silent) }).toEqual({ status: "succeeded", answers: [] });
    openai.reply({ content: "answered" });
    await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "second" })).body.runId);
    await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "third" })).body.runId);
    const roles = (i: number) => openai.requests[i]!.body.messages.map((m: { role: string }) => m.role);
    expect([roles(1), roles(2)]).toEqual([
      ["system", "user"],
      ["system", "user", "assistant", "user"],
    ]);
    expect(openai.requests[2]!.body.messages[1]!.content).toContain("second");
  });

  test("an answer that quotes the API key (an echoing proxy) has it redacted before it is kept or sent on", async () => {
    await using world = await startWorld();
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "fresh" });
    openai.reply({ content: `You sent: Authorization: Bearer ${API_KEY}` });
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "hi" })).body.runId);
    expect(answers(run)).toEqual(["You sent: Authorization: Bearer [redacted]"]);
  });

  test("tokens count against the project's tokens-per-day limit: past it a fire gets 429 and is audited", async () => {
    await using world = await startWorld();
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "fresh" });
    await owner.client.put("/api/workflows/spend-limit", { runsPerDay: 100, tokensPerDay: 50 });
    openai.reply({ content: "one", totalTokens: 30 });
    openai.reply({ content: "two", totalTokens: 30 });
    for (const text of ["a", "b"]) await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text })).body.runId);
    const refused = await fire(world, workflow.id, token, { text: "c" });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toEqual({ code: "spend_limit_reached", message: "The project's spend limit of 50 tokens per day is reached" });
    expect((await owner.client.get("/api/workflows/spend-limit")).body.used).toEqual({ runs: 2, tokens: 60 });
    expect(openai.requests).toHaveLength(2);
    expect(world.platform.audit.query({ projectId: workflow.projectId, action: "workflow.fire.refused" })[0]!.detail).toEqual({ code: "spend_limit_reached", limit: "tokens", trigger: "webhook" });
  });

  test("the fire that reaches the runs-per-day limit still runs: its own run is not counted against it again as it starts", async () => {
    await using world = await startWorld();
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "fresh" });
    await owner.client.put("/api/workflows/spend-limit", { runsPerDay: 2, tokensPerDay: 1000 });
    for (const text of ["a", "b"]) {
      const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text })).body.runId);
      expect(run).toMatchObject({ status: "succeeded", error: null });
    }
    expect(openai.requests).toHaveLength(2);
    expect((await fire(world, workflow.id, token, { text: "c" })).status).toBe(429);
  });

  test("an endpoint that says no fails the run with its message, never the key", async () => {
    await using world = await startWorld();
    await using openai = startFakeOpenAi({ apiKey: "sk-some-other-key" });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl);
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "hi" })).body.runId);
    expect(run).toMatchObject({ status: "failed", error: `The model endpoint ${openai.baseUrl} answered 401: Incorrect API key provided.`, attempts: 1 });
    expect(JSON.stringify(run)).not.toContain(API_KEY);
  });

  test("an endpoint that quotes the API key in its error, whole, cut short or masked, gets it redacted on the run row and in the audit log", async () => {
    await using world = await startWorld();
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { project, owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "fresh" });
    const quotes: [(key: string) => string, string][] = [
      [(key) => `Invalid model for API Key = ${key}`, "Invalid model for API Key = [redacted]"],
      [(key) => `Received API Key = ${key.slice(0, 12)}..., Key Hash = 5f2c`, "Received API Key = [redacted]..., Key Hash = 5f2c"],
      // The key straddles the 500 characters kept: the cut leaves its first 10.
      [(key) => "x".repeat(490) + key, "x".repeat(490) + "[redacted]"],
      [(key) => `Key sk-...${key.slice(-8)} may not use this model`, "Key sk-...[redacted] may not use this model"],
    ];
    const errors: (string | null)[] = [];
    for (const [quote] of quotes) {
      openai.reply({ status: 400, errorMessage: quote });
      const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "hi" })).body.runId);
      expect(run.status).toBe("failed");
      errors.push(run.error);
    }
    expect(errors).toEqual(quotes.map(([, stored]) => `The model endpoint ${openai.baseUrl} answered 400: ${stored}`));
    const runs = (await owner.client.get(`/api/workflows/${workflow.id}/runs`)).body;
    const audit = world.platform.audit.query({ projectId: project.id, action: "workflow.run.failed" });
    expect(audit).toHaveLength(quotes.length);
    expect(piecesOfKeyIn(JSON.stringify(runs) + JSON.stringify(audit))).toEqual([]);
  });

  test("a fetch error that quotes the request's headers gets the API key redacted on the run row", async () => {
    const quotesHeaders = (async (_url: string, init?: RequestInit) => {
      throw new TypeError(`proxy refused the request with headers ${JSON.stringify(init?.headers)}`);
    }) as unknown as typeof fetch;
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [], fetch: quotesHeaders } });
    const { owner, workflow, token } = await openAiSetup(world, "http://127.0.0.1:9/v1");
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    expect(run).toMatchObject({
      status: "failed",
      error: 'Cannot reach the model endpoint http://127.0.0.1:9/v1: proxy refused the request with headers {"authorization":"Bearer [redacted]","content-type":"application/json"}',
    });
    expect(piecesOfKeyIn(JSON.stringify(run))).toEqual([]);
  });

  test("a missing API key secret fails the run before anything is sent", async () => {
    await using world = await startWorld();
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl);
    await owner.client.delete("/api/secrets/project/openai-key");
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    expect(run).toMatchObject({ status: "failed", error: 'Cannot find the project secret "openai-key" holding the API key' });
    expect(openai.requests).toHaveLength(0);
  });

  test("a busy endpoint (503) puts the run in waiting-retry; the retry succeeds", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [100] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl);
    openai.reply({ status: 503, errorMessage: "overloaded" });
    openai.reply({ content: "second time lucky" });
    const statuses: string[] = [];
    world.hatch.workflows.bus.subscribe({ workflowId: workflow.id }, (u: RunUpdate) => statuses.push(u.type === "status" ? u.status : u.type === "event" ? u.event.type : u.outcome.kind));
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "hi" })).body.runId);
    expect(run).toMatchObject({ status: "succeeded", attempts: 2, error: null });
    expect(answers(run)).toEqual(["second time lucky"]);
    expect(statuses).toEqual(["running", "waiting-retry", "running", "answer", "succeeded"]);
  });

  test("cancelling a run that waits to retry ends it cancelled before start, and it is not retried", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [60_000] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "fresh" });
    openai.reply({ status: 502 });
    const runId = (await fire(world, workflow.id, token)).body.runId;
    const outcomes: RunUpdate[] = [];
    world.hatch.workflows.bus.subscribe({ runId }, (u) => outcomes.push(u));
    await waitForRun(owner.client, workflow.id, runId, (r) => r.status === "waiting-retry");
    const cancelled = await owner.client.post(`/api/workflows/${workflow.id}/runs/${runId}/cancel`);
    expect(cancelled.body).toMatchObject({ status: "cancelled", cancelled: "before-start", attempts: 1 });
    expect(outcomes.at(-1)).toMatchObject({ type: "finished", outcome: { kind: "cancelled-before-start", wasWaitingRetry: true } });
    expect(world.hatch.workflows.pool.stats().delayed).toBe(0);
    expect(openai.requests).toHaveLength(1);
  });

  test("naming a project secret is for owners and admins: a member's openai workflow is refused 403 and nothing reaches the URL", async () => {
    await using world = await startWorld();
    await using attacker = startFakeOpenAi({ apiKey: API_KEY });
    const { project } = await projectWithApiKey(world);
    const member = await world.signedIn(project, "member");
    const refused = await member.client.post("/api/workflows", openAiWorkflow(attacker.baseUrl));
    expect({ status: refused.status, code: refused.body.error.code }).toEqual({ status: 403, code: "secret_access_required" });
    expect(JSON.stringify(refused.body)).not.toContain(API_KEY);
    expect(countRows(world, "workflows")).toBe(0);
    expect(attacker.requests).toHaveLength(0);
  });

  test("the creator's role is checked again at each fire and run: an admin demoted to member stops revealing the secret", async () => {
    await using world = await startWorld({}, { workflows: { poolSize: 1 } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { project, owner } = await projectWithApiKey(world);
    world.platform.roles.grant(project.id, "admin", "core.execute");
    const admin = await world.signedIn(project, "admin");
    const workflow = await createWorkflow(admin.client, openAiWorkflow(openai.baseUrl, { mode: "fresh" }));
    const { token } = await issueToken(admin.client, workflow.id);
    expect((await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token)).body.runId)).status).toBe("succeeded");

    // The owner's command holds the one worker, so a run fired before the demotion waits in the queue.
    const holder = await createWorkflow(owner.client, { name: "Holder", instruction: "Hold.", runner: { kind: "command", command: "sleep 300" } });
    const holding = (await fire(world, holder.id, (await issueToken(owner.client, holder.id)).token)).body.runId;
    await waitForRun(owner.client, holder.id, holding, (r) => r.status === "running");
    const queued = (await fire(world, workflow.id, token)).body.runId;
    world.platform.projects.setMember(project.id, admin.user.id, "member");
    // Fires after it are refused, recording nothing; the queued run fails at its start.
    const refused = await fire(world, workflow.id, token);
    expect({ status: refused.status, code: refused.body.error.code }).toEqual({ status: 409, code: "creator_not_permitted" });
    await owner.client.post(`/api/workflows/${holder.id}/runs/${holding}/cancel`);
    const run = await waitForRun(owner.client, workflow.id, queued);
    expect(run).toMatchObject({
      status: "failed",
      error: `The workflow's creator "${admin.user.email}" (role "member") is no longer a project owner or admin, so the openai runner may not use the project secret`,
    });
    expect(openai.requests).toHaveLength(1);
  });

  test("a 429 with Retry-After waits as long as the endpoint asked when that is longer than its own delay, up to a cap", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [10] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "fresh" });
    openai.reply({ status: 429, errorMessage: "Rate limit reached", retryAfter: "120" });
    openai.reply({ status: 429, retryAfter: "86400" });
    const waits: number[] = [];
    for (const _ of [1, 2]) {
      const runId = (await fire(world, workflow.id, token)).body.runId;
      const waiting = await waitForRun(owner.client, workflow.id, runId, (r) => r.status === "waiting-retry");
      // Read after the row was written: its retryAt was taken from a clock at most this far along.
      const readAt = Date.now();
      waits.push(waiting.retryAt! - waiting.startedAt!);
      expect(waiting.retryAt).toBeLessThanOrEqual(readAt + MAX_RETRY_AFTER_MS);
      expect((await owner.client.post(`/api/workflows/${workflow.id}/runs/${runId}/cancel`)).body).toMatchObject({ cancelled: "before-start", error: "The model endpoint " + openai.baseUrl + (waits.length === 1 ? " answered 429: Rate limit reached" : " answered 429: The server had an error") });
    }
    expect(waits[0]).toBeGreaterThanOrEqual(120_000);
    expect(waits[1]).toBeGreaterThanOrEqual(MAX_RETRY_AFTER_MS);
    expect(openai.requests).toHaveLength(2);
  });

  test("a 429 for an account out of credit (insufficient_quota) fails the run at once: waiting does not pay the bill", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [10, 10, 10] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "fresh" });
    openai.reply({ status: 429, errorMessage: "You exceeded your current quota, please check your plan and billing details.", errorCode: "insufficient_quota" });
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    expect({ status: run.status, attempts: run.attempts, error: run.error }).toEqual({
      status: "failed",
      attempts: 1,
      error: `The model endpoint ${openai.baseUrl} answered 429: You exceeded your current quota, please check your plan and billing details.`,
    });
    expect(openai.requests).toHaveLength(1);
  });

  test("a 429 with retry-after-ms (OpenAI's) waits that many milliseconds when longer than the runner's own delay", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [10] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "fresh" });
    openai.reply({ status: 429, errorMessage: "Rate limit reached", retryAfterMs: "45500.5", retryAfter: "1" });
    const runId = (await fire(world, workflow.id, token)).body.runId;
    const waiting = await waitForRun(owner.client, workflow.id, runId, (r) => r.status === "waiting-retry");
    expect(waiting.retryAt! - waiting.startedAt!).toBeGreaterThanOrEqual(45_501);
    expect(waiting.retryAt! - waiting.startedAt!).toBeLessThan(120_000);
    await owner.client.post(`/api/workflows/${workflow.id}/runs/${runId}/cancel`);
    // Where the two disagree (a proxy's retry-after-ms: 0 beside the endpoint's Retry-After), the longer wait holds.
    openai.reply({ status: 429, errorMessage: "Rate limit reached", retryAfterMs: "0", retryAfter: "120" });
    const second = (await fire(world, workflow.id, token)).body.runId;
    const waitingAgain = await waitForRun(owner.client, workflow.id, second, (r) => r.status === "waiting-retry");
    expect(waitingAgain.retryAt! - waitingAgain.startedAt!).toBeGreaterThanOrEqual(120_000);
    await owner.client.post(`/api/workflows/${workflow.id}/runs/${second}/cancel`);
  });

  const partsOnly = [
    ["a usage with no total_tokens (some compatible servers send only its parts) counts its parts", { withoutTotal: true }],
    ["a usage whose total_tokens is null (beside its parts) counts its parts, not 0", { nullTotal: true }],
  ] as const;
  for (const [name, usage] of partsOnly) {
    test(name, async () => {
      await using world = await startWorld({}, { workflows: { retryDelaysMs: [] } });
      await using openai = startFakeOpenAi({ apiKey: API_KEY });
      const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl);
      openai.reply({ content: "hello", totalTokens: 321, ...usage });
      const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "hi" })).body.runId);
      expect({ status: run.status, tokensUsed: run.tokensUsed }).toEqual({ status: "succeeded", tokensUsed: 321 });
    });
  }

  test("a base URL carrying a user name or password is refused at creation (400 invalid_base_url), and one stored before is shown without them in run errors", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl);
    const withPassword = openai.baseUrl.replace("http://", "http://proxyuser:hunter2@");
    const refused = await owner.client.post("/api/workflows", { name: "Proxied", instruction: "Hi.", runner: { kind: "openai", baseUrl: withPassword, model: "m", apiKeySecret: "openai-key" } });
    expect({ status: refused.status, code: refused.body.error?.code }).toEqual({ status: 400, code: "invalid_base_url" });
    // A row written before the check (by hand here) keeps working, and its errors never show the password.
    const config = JSON.parse((world.hatch.sqlite.query("SELECT runner_config FROM workflows WHERE id = ?").get(workflow.id) as { runner_config: string }).runner_config);
    world.hatch.sqlite.query("UPDATE workflows SET runner_config = ? WHERE id = ?").run(JSON.stringify({ ...config, baseUrl: withPassword }), workflow.id);
    openai.reply({ status: 400, errorMessage: "Bad request" });
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    expect(run.error).toBe(`The model endpoint ${openai.baseUrl} answered 400: Bad request`);
  });

  test("a base URL's query string (where some proxies take their key) is kept for the request but left out of run errors", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner } = await openAiSetup(world, openai.baseUrl);
    const withKey = `${openai.baseUrl}?api-key=proxy-s3cret&api-version=2024-10-21#frag`;
    const proxied = await createWorkflow(owner.client, { name: "Proxied", instruction: "Hi.", runner: { kind: "openai", baseUrl: withKey, model: "m", apiKeySecret: "openai-key" } });
    const { token } = await issueToken(owner.client, proxied.id);
    openai.reply({ status: 400, errorMessage: "Bad request" });
    const run = await waitForRun(owner.client, proxied.id, (await fire(world, proxied.id, token)).body.runId);
    expect(openai.requests.at(-1)!.query).toBe("?api-key=proxy-s3cret&api-version=2024-10-21");
    expect(run.error).toBe(`The model endpoint ${openai.baseUrl}?… answered 400: Bad request`);
  });

  test("Retry-After is read as seconds or as an HTTP date", () => {
    const now = Date.parse("2026-11-24T10:00:00Z");
    expect(retryAfter("7", now)).toBe(7000);
    expect(retryAfter("Tue, 24 Nov 2026 10:00:30 GMT", now)).toBe(30_000);
    expect(retryAfter("Tue, 24 Nov 2026 09:00:00 GMT", now)).toBe(0);
    expect([retryAfter(null, now), retryAfter("soon", now), retryAfter("-5", now), retryAfter("", now)]).toEqual([null, null, null, null]);
  });

  test("tokens the endpoint billed for a turn the runner then refuses count on the row and against the spend limit", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl);
    openai.reply({ content: "hello", contentAsParts: true, totalTokens: 500 });
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "hi" })).body.runId);
    expect(run).toMatchObject({ status: "failed", tokensUsed: 500, error: `The model endpoint ${openai.baseUrl} answered without a message` });
    expect((await owner.client.get("/api/workflows/spend-limit")).body.used).toEqual({ runs: 1, tokens: 500 });
  });

  test("an answer larger than 2 MiB fails the run, and none of it is stored or sent back in later turns", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "one-thread" });
    openai.reply({ content: "x".repeat(MAX_COMPLETION_BYTES) });
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "hi" })).body.runId);
    expect({ status: run.status, error: run.error, answers: answers(run) }).toEqual({
      status: "failed",
      error: `The model endpoint ${openai.baseUrl} answered with more than ${MAX_COMPLETION_BYTES} bytes`,
      answers: [],
    });
    const next = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "again" })).body.runId);
    expect(next.status).toBe("succeeded");
    expect(JSON.stringify(openai.requests[1]!.body).length).toBeLessThan(10_000);
  });

  test("a base URL with a query (Azure's ?api-version=) keeps it, after the path /chat/completions", async () => {
    await using world = await startWorld();
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, `${openai.baseUrl}/?api-version=2024-02-01`);
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "hi" })).body.runId);
    expect({ status: run.status, query: openai.requests.map((r) => r.query) }).toEqual({ status: "succeeded", query: ["?api-version=2024-02-01"] });
  });

  test("a token count that is not a whole number is rounded up", async () => {
    await using world = await startWorld();
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl);
    openai.reply({ content: "ok", totalTokens: 2.5 });
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "hi" })).body.runId);
    expect({ tokensUsed: run.tokensUsed, used: (await owner.client.get("/api/workflows/spend-limit")).body.used }).toEqual({ tokensUsed: 3, used: { runs: 1, tokens: 3 } });
  });

  test("an endpoint that sends its headers and then stalls fails the run as timed out", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner } = await projectWithApiKey(world);
    const workflow = await createWorkflow(owner.client, { name: "Slow", runner: { kind: "openai", baseUrl: openai.baseUrl, model: "m", apiKeySecret: "openai-key", timeoutSeconds: 1 } });
    const { token } = await issueToken(owner.client, workflow.id);
    openai.reply({ stallBody: true });
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    expect(run).toMatchObject({ status: "failed", error: `The model endpoint ${openai.baseUrl} did not answer within 1 s` });
  });

  test("a run cancelled while its retry works ends with no error: the earlier attempt's 503 no longer describes it", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [10] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl);
    openai.reply({ status: 503, errorMessage: "overloaded" });
    openai.reply({ stallBody: true });
    const runId = (await fire(world, workflow.id, token, { text: "hi" })).body.runId;
    const retrying = await waitForRun(owner.client, workflow.id, runId, (r) => r.status === "running" && r.attempts === 2 && openai.requests.length === 2);
    expect(retrying.error).toBeNull();
    const cancelled = await owner.client.post(`/api/workflows/${workflow.id}/runs/${runId}/cancel`);
    expect(cancelled.body).toMatchObject({ status: "cancelled", cancelled: "while-working", error: null });
  });

  test("an unreachable endpoint fails once the retries run out", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [10, 10] } });
    const closed = startFakeOpenAi({ apiKey: API_KEY });
    const baseUrl = closed.baseUrl;
    await closed[Symbol.asyncDispose]();
    const { owner, workflow, token } = await openAiSetup(world, baseUrl);
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token)).body.runId);
    expect(run.status).toBe("failed");
    expect(run.attempts).toBe(3);
    expect(run.error).toStartWith(`Cannot reach the model endpoint ${baseUrl}:`);
  });
});

describe("what the openai runner makes of an endpoint's answer, and what it counts", () => {
  test("tokens a run spends count against the day they are spent in: runs that start a day after their fire cannot all pass the token limit", async () => {
    let shift = 0;
    const now = () => Date.now() + shift;
    await using world = await startWorld({}, { now, workflows: { poolSize: 1, retryDelaysMs: [] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "fresh" });
    expect((await owner.client.put("/api/workflows/spend-limit", { runsPerDay: 100, tokensPerDay: 100 })).status).toBe(200);
    // The one worker is held, so the fires below wait in the queue (as they would across a day-long outage).
    const holder = await createWorkflow(owner.client, { name: "Holder", instruction: "Hold.", runner: { kind: "command", command: "sleep 300" } });
    const holding = (await fire(world, holder.id, (await issueToken(owner.client, holder.id)).token)).body.runId;
    await waitForRun(owner.client, holder.id, holding, (r) => r.status === "running");
    const runIds: string[] = [];
    for (const text of ["a", "b", "c"]) {
      openai.reply({ content: `answer ${text}`, totalTokens: 60 });
      const fired = await fire(world, workflow.id, token, { text });
      expect(fired.status).toBe(202);
      runIds.push(fired.body.runId);
    }
    shift = 25 * 3600_000;
    await owner.client.post(`/api/workflows/${holder.id}/runs/${holding}/cancel`);
    const runs = [];
    for (const id of runIds) runs.push(await waitForRun(owner.client, workflow.id, id));
    // 60 tokens spent, then 120 (past the 100 of the limit): the third run must be refused at its start, and a new fire too.
    expect({ requests: openai.requests.length, third: runs[2]!.status, used: (await owner.client.get("/api/workflows/spend-limit")).body.used.tokens }).toEqual({
      requests: 2,
      third: "failed",
      used: 120,
    });
  });

  test("an endpoint's error text with a NUL is stored as U+FFFD while the run waits to retry, as every other stored error is", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [60_000] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "fresh" });
    openai.reply({ status: 503, errorMessage: "\u0000overloaded, try later" });
    const runId = (await fire(world, workflow.id, token, { text: "hi" })).body.runId;
    const waiting = await waitForRun(owner.client, workflow.id, runId, (r) => r.status === "waiting-retry");
    const expected = `The model endpoint ${openai.baseUrl} answered 503: \uFFFDoverloaded, try later`;
    const listed = (await owner.client.get(`/api/workflows/${workflow.id}/runs`)).body.runs[0];
    expect({ row: waiting.error, listed: listed.error }).toEqual({ row: expected, listed: expected });
    await owner.client.post(`/api/workflows/${workflow.id}/runs/${runId}/cancel`);
  });

  test("a refusal is the model's answer; a filtered completion with no text fails the run, naming why: neither is a silent success", async () => {
    await using world = await startWorld();
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "fresh" });
    openai.reply({ refusal: "I'm sorry, I can't help with that." });
    openai.reply({ finishReason: "content_filter" });
    const outcomes = [];
    for (const text of ["a", "b"]) {
      const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text })).body.runId);
      outcomes.push({ status: run.status, answers: answers(run), error: run.error });
    }
    expect(outcomes).toEqual([
      { status: "succeeded", answers: ["I'm sorry, I can't help with that."], error: null },
      { status: "failed", answers: [], error: `The model endpoint ${openai.baseUrl} gave no answer (finish_reason "content_filter")` },
    ]);
  });

  test("a one-thread conversation that outgrew the model's context is asked again with the older half of its earlier turns left out, until it fits; the run says how many", async () => {
    await using world = await startWorld();
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "one-thread" });
    for (const text of ["one", "two", "three", "four"]) {
      openai.reply({ content: `answer ${text}` });
      await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text })).body.runId);
    }
    // OpenAI's refusal, then a compatible server's (vLLM writes the limit in the message), then an answer.
    openai.reply({ status: 400, errorCode: "context_length_exceeded", errorMessage: "This model's maximum context length is 8192 tokens." });
    openai.reply({ status: 400, errorMessage: "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens." });
    openai.reply({ content: "answer five" });
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "five" })).body.runId);
    // System, four earlier turns (two messages each) and the input; then two turns; then the newest one.
    expect(openai.requests.slice(4).map((r) => r.body.messages.length)).toEqual([10, 6, 4]);
    expect(openai.requests.at(-1)!.body.messages[2]!.content).toBe("answer four");
    expect({ status: run.status, events: run.events.map((e) => ({ type: e.type, text: e.text })) }).toEqual({
      status: "succeeded",
      events: [
        { type: "note", text: leftOutNote(3) },
        { type: "answer", text: "answer five" },
      ],
    });
    // With no earlier turn left to drop, the refusal is final, as any other.
    openai.reply({ status: 400, errorCode: "context_length_exceeded", errorMessage: "This model's maximum context length is 8192 tokens." });
    const fresh = await createWorkflow(owner.client, openAiWorkflow(openai.baseUrl, { name: "Fresh", mode: "fresh" }));
    const failed = await waitForRun(owner.client, fresh.id, (await fire(world, fresh.id, (await issueToken(owner.client, fresh.id)).token, { text: "big" })).body.runId);
    expect({ status: failed.status, requests: openai.requests.length }).toEqual({ status: "failed", requests: 8 });
  });

  test("an answer the model stopped at its output limit (finish_reason length) is delivered, and a note after it says it is cut short", async () => {
    await using world = await startWorld();
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "fresh" });
    openai.reply({ content: "The three steps are: first, unpack; second,", finishReason: "length" });
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "steps?" })).body.runId);
    expect({ status: run.status, events: run.events.map((e) => ({ type: e.type, text: e.text })) }).toEqual({
      status: "succeeded",
      events: [
        { type: "answer", text: "The three steps are: first, unpack; second," },
        { type: "note", text: CUT_SHORT_NOTE },
      ],
    });
  });

  test("tokens an endpoint reports for an answer over 2 MiB count against the spend limit, as for any answer the runner cannot read", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "fresh" });
    // About what 2 MiB of text costs: the usage the endpoint billed comes after the content.
    openai.reply({ content: "x ".repeat(MAX_COMPLETION_BYTES / 2), totalTokens: 600_000 });
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "hi" })).body.runId);
    expect(run.status).toBe("failed");
    expect({ tokensUsed: run.tokensUsed, used: (await owner.client.get("/api/workflows/spend-limit")).body.used.tokens }).toEqual({ tokensUsed: 600_000, used: 600_000 });
  });

  test("an answer over 2 MiB with no usage found counts a token per 4 bytes read", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "fresh" });
    openai.reply({ content: "y".repeat(MAX_COMPLETION_BYTES), withoutUsage: true });
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "hi" })).body.runId);
    const bodyBytes = openai.lastResponseBytes();
    expect({ status: run.status, tokensUsed: run.tokensUsed }).toEqual({ status: "failed", tokensUsed: Math.ceil(bodyBytes / 4) });
  });

  test("a redirect to another origin is not followed: the conversation does not go to a host the creator never named", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [] } });
    await using elsewhere = startFakeOpenAi({ apiKey: API_KEY });
    const port = new URL(elsewhere.baseUrl).port;
    // The configured endpoint answers every request with a 307 to another origin (a compromised or misconfigured proxy).
    const redirector = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(null, { status: 307, headers: { location: `http://localhost:${port}/v1/chat/completions` } }) });
    world.onDispose(() => void redirector.stop(true));
    const { owner, workflow, token } = await openAiSetup(world, `http://127.0.0.1:${redirector.port}/v1`, { mode: "fresh" });
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "my private message" })).body.runId);
    expect({ status: run.status, forwarded: elsewhere.requests.map((r) => JSON.stringify(r.body.messages).includes("my private message")) }).toEqual({ status: "failed", forwarded: [] });
    expect(run.error).toStartWith(`The model endpoint http://127.0.0.1:${redirector.port}/v1 answered 307, a redirect, which is not followed`);
  });

  test("an API key a header cannot carry fails the run at once, not as an unreachable endpoint retried", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [10, 10] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "fresh" });
    // Pasted from a web page with a zero-width space at its end.
    expect((await owner.client.put("/api/secrets/project/openai-key", { value: `${API_KEY}\u200b` })).status).toBe(200);
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "hi" })).body.runId);
    expect({ status: run.status, attempts: run.attempts, unreachable: run.error!.startsWith("Cannot reach") }).toEqual({ status: "failed", attempts: 1, unreachable: false });
    expect({ error: run.error, requests: openai.requests.length }).toEqual({
      error: `The API key in the project secret "openai-key" holds a character an HTTP header cannot carry (a space, or an invisible character pasted with it): store it again`,
      requests: 0,
    });
  });

  test("a line break pasted after the API key is forgiven", async () => {
    await using world = await startWorld();
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await openAiSetup(world, openai.baseUrl, { mode: "fresh" });
    expect((await owner.client.put("/api/secrets/project/openai-key", { value: `${API_KEY}\n` })).status).toBe(200);
    openai.reply({ content: "hello" });
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "hi" })).body.runId);
    expect({ status: run.status, answers: answers(run) }).toEqual({ status: "succeeded", answers: ["hello"] });
  });
});

describe("the context-length retry loop and usage", () => {
  /** A one-thread openai workflow with the given per-turn timeout, and its fire token, after `turns` answered (or unanswered) turns. */
  async function threadWithTurns(world: World, openai: ReturnType<typeof startFakeOpenAi>, turns: string[], timeoutSeconds = 60) {
    const { owner } = await projectWithApiKey(world);
    const workflow = await createWorkflow(owner.client, {
      name: "Thread",
      instruction: INSTRUCTION,
      mode: "one-thread",
      runner: { kind: "openai", baseUrl: openai.baseUrl, model: "gpt-test", apiKeySecret: "openai-key", timeoutSeconds },
    });
    const { token } = await issueToken(owner.client, workflow.id);
    for (const content of turns) {
      openai.reply({ content });
      const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: `turn ${content}` })).body.runId);
      expect(run.status).toBe("succeeded");
    }
    return { owner, workflow, token };
  }

  test("the runner's timeoutSeconds bounds the whole turn, not each attempt of the context-length loop: four slow refusals in a row fail a 1 s turn", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await threadWithTurns(world, openai, ["a", "b", "c", "d"], 1);
    for (let i = 0; i < 3; i++) openai.reply({ status: 400, errorCode: "context_length_exceeded", errorMessage: "This model's maximum context length is 8192 tokens.", delayMs: 750 });
    openai.reply({ content: "late answer", delayMs: 750 });
    // Each attempt alone answers within the second; all four together do not.
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "five" })).body.runId);
    expect({ status: run.status, error: run.error }).toEqual({
      status: "failed",
      error: `The model endpoint ${openai.baseUrl} did not answer within 1 s`,
    });
  });

  test("earlier turns the model left unanswered are not in the messages, so leaving them out is no reason to send the same request again", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await threadWithTurns(world, openai, ["", "", "", "", "", "", "", ""]);
    const before = openai.requests.length;
    for (let i = 0; i < 8; i++) openai.reply({ status: 400, errorCode: "context_length_exceeded", errorMessage: "This model's maximum context length is 8192 tokens." });
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "x".repeat(3000) })).body.runId);
    const sent = openai.requests.slice(before).map((r) => JSON.stringify(r.body.messages));
    expect({ status: run.status, requests: sent.length, distinct: new Set(sent).size }).toEqual({ status: "failed", requests: 1, distinct: 1 });
  });

  test("tokens billed by a context-length refusal still count when the attempt after it times out", async () => {
    await using world = await startWorld({}, { workflows: { retryDelaysMs: [] } });
    await using openai = startFakeOpenAi({ apiKey: API_KEY });
    const { owner, workflow, token } = await threadWithTurns(world, openai, ["a", "b"], 1);
    const spentBefore = (await owner.client.get("/api/workflows/spend-limit")).body.used.tokens as number;
    openai.reply({ status: 400, errorCode: "context_length_exceeded", errorMessage: "This model's maximum context length is 8192 tokens.", errorUsage: 500 });
    openai.reply({ stallBody: true });
    const run = await waitForRun(owner.client, workflow.id, (await fire(world, workflow.id, token, { text: "three" })).body.runId);
    const spent = (await owner.client.get("/api/workflows/spend-limit")).body.used.tokens as number;
    expect({ status: run.status, error: run.error, tokensUsed: run.tokensUsed, counted: spent - spentBefore }).toEqual({
      status: "failed",
      error: `The model endpoint ${openai.baseUrl} did not answer within 1 s`,
      tokensUsed: 500,
      counted: 500,
    });
  });
});
