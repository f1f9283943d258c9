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
});
