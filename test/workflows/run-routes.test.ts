import { describe, expect, test } from "bun:test";
import { LISTED_EVENT_TEXT_CHARS, LISTED_EVENTS_PER_RUN } from "../../src/workflows/index.ts";
import { startWorld } from "../helpers/world.ts";
import { commandWorkflow, waitForRun } from "../helpers/workflows.ts";

describe("the run routes", () => {
  test("a list carries each run's last events with their texts cut short, so a page stays small; the run itself has them all", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    // Twelve notes, then a plain answer of 5,000 characters: 13 events, one long.
    const notes = Array.from({ length: 12 }, (_, i) => `echo '{"type":"note","text":"step ${i + 1}"}'`).join("; ");
    const workflow = await commandWorkflow(member, `${notes}; head -c 5000 /dev/zero | tr '\\0' a`, { mode: "fresh" });
    const runId = (await member.client.post(`/api/workflows/${workflow.id}/runs`, {})).body.id;
    const whole = await waitForRun(member.client, workflow.id, runId);
    expect(whole.events).toHaveLength(13);
    expect(whole.events.at(-1)!.text).toHaveLength(5000);

    const [listed] = (await member.client.get(`/api/workflows/${workflow.id}/runs`)).body.runs;
    expect(listed.eventCount).toBe(13);
    expect(listed.events.map((e: { seq: number }) => e.seq)).toEqual([9, 10, 11, 12, 13].slice(-LISTED_EVENTS_PER_RUN));
    expect(listed.events.slice(0, -1).map((e: { text: string; truncated?: true }) => [e.text, e.truncated])).toEqual([
      ["step 9", undefined],
      ["step 10", undefined],
      ["step 11", undefined],
      ["step 12", undefined],
    ]);
    expect(listed.events.at(-1)).toEqual({ ...whole.events.at(-1)!, text: "a".repeat(LISTED_EVENT_TEXT_CHARS), truncated: true });
  });

  test("a list stays small when runs failed with a long error event: the error on each listed run is cut like its events", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    // One error event of 900,000 characters (under the 1 MiB stdout cap): the run fails with that text.
    const workflow = await commandWorkflow(member, `printf '{"type":"error","text":"'; head -c 900000 /dev/zero | tr '\\0' e; printf '"}\\n'`, { mode: "fresh" });
    const fired = [];
    for (let i = 0; i < 3; i++) fired.push((await member.client.post(`/api/workflows/${workflow.id}/runs`, {})).body.id);
    for (const id of fired) expect((await waitForRun(member.client, workflow.id, id)).status).toBe("failed");

    const { runs } = (await member.client.get(`/api/workflows/${workflow.id}/runs`)).body;
    expect(runs).toHaveLength(3);
    // Each listed event is cut at 1,000 characters, and so is the run's error (the same text).
    expect(runs.map((run: { events: { text: string }[]; error: string; errorTruncated?: true }) => ({ event: run.events[0]!.text.length, error: run.error.length, cut: run.errorTruncated }))).toEqual(
      runs.map(() => ({ event: LISTED_EVENT_TEXT_CHARS, error: LISTED_EVENT_TEXT_CHARS, cut: true })),
    );
    // The run itself still has the whole error.
    expect((await member.client.get(`/api/workflows/${workflow.id}/runs/${fired[0]}`)).body.error).toHaveLength(900_000);
  });

  test("a long history reads page by page: each full page says where the next begins, and the last says there is none", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo done", { mode: "fresh" });
    const fired = [];
    for (let i = 0; i < 5; i++) fired.push((await member.client.post(`/api/workflows/${workflow.id}/runs`, {})).body.id);
    for (const id of fired) await waitForRun(member.client, workflow.id, id);

    const pages: number[][] = [];
    let before: number | null = null;
    do {
      const page: { status: number; body: { runs: { number: number }[]; nextBefore: number | null } } = await member.client.get(`/api/workflows/${workflow.id}/runs?limit=2${before === null ? "" : `&before=${before}`}`);
      expect(page.status).toBe(200);
      pages.push(page.body.runs.map((r) => r.number));
      before = page.body.nextBefore;
    } while (before !== null && pages.length < 10);
    // A last page that happens to be full costs one more, empty, read.
    expect(pages).toEqual([[5, 4], [3, 2], [1]]);
  });

  test("a page start that is not a whole number of at least 1 gets 400 invalid_request, naming the field", async () => {
    await using world = await startWorld();
    const member = await world.signedIn(await world.project(), "member");
    const workflow = await commandWorkflow(member, "echo done", { mode: "fresh" });
    for (const before of ["0", "1.5", "soon"]) {
      const answer = await member.client.get(`/api/workflows/${workflow.id}/runs?before=${before}`);
      expect({ before, status: answer.status, code: answer.body.error?.code, mentions: String(answer.body.error?.message).includes('"before"') }).toEqual({ before, status: 400, code: "invalid_request", mentions: true });
    }
  });
});
