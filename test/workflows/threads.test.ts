import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { THREAD_LIMIT, UNTRUSTED_NOTE } from "../../src/workflows/index.ts";
import { startWorld } from "../helpers/world.ts";
import { answers, commandWorkflow, fire, issueToken, memberWithBareRuns, traceDir, waitForRun } from "../helpers/workflows.ts";

/** A command that keeps its stdin for the test and answers with its run id. */
const keepStdin = (dir: string) => `cat > ${dir}/$HATCH_RUN_ID.stdin; echo "answer of $HATCH_RUN_ID"`;

describe("threads", () => {
  test("two fires into a one-thread workflow: the second run is given the first turn and its answer", async () => {
    await using world = await startWorld();
    const member = await memberWithBareRuns(world, await world.project());
    const dir = traceDir(world);
    const workflow = await commandWorkflow(member, keepStdin(dir));
    const { token, triggerId } = await issueToken(member.client, workflow.id);
    const first = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token, { text: "my name is Ada" })).body.runId);
    const second = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token, { text: "what is my name?" })).body.runId);
    expect(answers(first)).toEqual([`answer of ${first.id}`]);

    const stdin = readFileSync(join(dir, `${second.id}.stdin`), "utf8");
    const nonce = /<untrusted-context id="([0-9a-f]{16})">/.exec(stdin)![1];
    const block = (text: string) => [`<untrusted-context id="${nonce}">`, `source: fire endpoint, webhook trigger "${triggerId}"`, UNTRUSTED_NOTE, "", text, `</untrusted-context id="${nonce}">`].join("\n");
    expect(stdin).toBe(
      [
        "Answer the message.",
        "Earlier turns of this conversation, oldest first:",
        block("my name is Ada"),
        [`<answer id="${nonce}">`, `answer of ${first.id}`, `</answer id="${nonce}">`].join("\n"),
        "This turn:",
        block("what is my name?"),
      ].join("\n\n") + "\n",
    );
  });

  test("a one-thread run is given the latest turns that fit the thread's character budget, so long answers cannot grow every later prompt", async () => {
    await using world = await startWorld();
    const member = await memberWithBareRuns(world, await world.project());
    const dir = traceDir(world);
    // More than half the budget: two such turns do not fit together.
    const long = Math.ceil(THREAD_LIMIT.chars * 0.6);
    const command = `cat > ${dir}/$HATCH_RUN_ID.stdin; if grep -q 'write at length' ${dir}/$HATCH_RUN_ID.stdin; then head -c ${long} /dev/zero | tr '\\0' x; echo; else echo "answer of $HATCH_RUN_ID"; fi`;
    const workflow = await commandWorkflow(member, command);
    const { token } = await issueToken(member.client, workflow.id);
    const texts = ["the first turn", "write at length, once", "write at length, twice", "the last turn"];
    const runs = [];
    for (const text of texts) runs.push(await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token, { text })).body.runId));
    expect(runs.map((run) => run.status)).toEqual(["succeeded", "succeeded", "succeeded", "succeeded"]);
    expect(answers(runs[2]!)[0]!.length).toBe(long);

    const stdin = readFileSync(join(dir, `${runs[3]!.id}.stdin`), "utf8");
    const history = stdin.slice(stdin.indexOf("Earlier turns"), stdin.indexOf("This turn:"));
    // Only the latest earlier turn fits; the older ones are left out whole, the first included (the thread stays unbroken).
    expect({ twice: history.includes("write at length, twice"), once: history.includes("write at length, once"), first: history.includes("the first turn") }).toEqual({ twice: true, once: false, first: false });
    expect(stdin.length).toBeLessThan(THREAD_LIMIT.chars + 2000);
  });

  test("fresh runs are independent: no earlier turns", async () => {
    await using world = await startWorld();
    const member = await memberWithBareRuns(world, await world.project());
    const dir = traceDir(world);
    const workflow = await commandWorkflow(member, keepStdin(dir), { mode: "fresh" });
    const { token } = await issueToken(member.client, workflow.id);
    await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token, { text: "one" })).body.runId);
    const second = await waitForRun(member.client, workflow.id, (await fire(world, workflow.id, token, { text: "two" })).body.runId);
    const stdin = readFileSync(join(dir, `${second.id}.stdin`), "utf8");
    expect(stdin).not.toContain("Earlier turns");
    expect(stdin).not.toContain("one");
    expect(stdin.startsWith("Answer the message.\n\n<untrusted-context")).toBe(true);
  });

  test("one-thread runs of a workflow run one at a time, in the order they were fired", async () => {
    await using world = await startWorld();
    const member = await memberWithBareRuns(world, await world.project());
    const dir = traceDir(world);
    const workflow = await commandWorkflow(member, `n=$(tail -n 2 | head -n 1); echo "start $n" >> ${dir}/log; sleep 0.05; echo "end $n" >> ${dir}/log; echo "done $n"`);
    const { token } = await issueToken(member.client, workflow.id);
    const fired = [];
    for (const n of [1, 2, 3, 4, 5]) fired.push(await fire(world, workflow.id, token, { text: String(n) }));
    for (const f of fired) await waitForRun(member.client, workflow.id, f.body.runId);
    expect(readFileSync(join(dir, "log"), "utf8").trim().split("\n")).toEqual([1, 2, 3, 4, 5].flatMap((n) => [`start ${n}`, `end ${n}`]));
    const runs = (await member.client.get(`/api/workflows/${workflow.id}/runs`)).body.runs;
    expect(runs.map((r: { number: number; status: string }) => [r.number, r.status])).toEqual([5, 4, 3, 2, 1].map((n) => [n, "succeeded"]));
  });

  test("fresh runs of one workflow run side by side", async () => {
    await using world = await startWorld();
    const member = await memberWithBareRuns(world, await world.project());
    const dir = traceDir(world);
    // Each run waits until both have started: that only ends if they run at the same time.
    const command = `touch ${dir}/$HATCH_RUN_ID; until [ $(ls ${dir} | wc -l) -ge 2 ]; do sleep 0.01; done; echo together`;
    const workflow = await commandWorkflow(member, command, { mode: "fresh", runner: { kind: "command", command, timeoutSeconds: 10 } });
    const { token } = await issueToken(member.client, workflow.id);
    const fired = await Promise.all([fire(world, workflow.id, token), fire(world, workflow.id, token)]);
    for (const f of fired) expect(answers(await waitForRun(member.client, workflow.id, f.body.runId))).toEqual(["together"]);
  });
  test("a fire text starting with a NUL still counts every character against the thread's budget, so untrusted senders cannot grow every later prompt", async () => {
    await using world = await startWorld();
    const member = await memberWithBareRuns(world, await world.project());
    const dir = traceDir(world);
    // 28 fires of 4,000 characters each (the fire endpoint's cap): 27 earlier turns hold 108,000, more than the 100,000 budget.
    const historyOfLastTurn = async (text: string) => {
      const workflow = await commandWorkflow(member, keepStdin(dir));
      const { token } = await issueToken(member.client, workflow.id);
      const fired = [];
      for (let i = 0; i < 28; i++) fired.push((await fire(world, workflow.id, token, { text })).body.runId as string);
      const last = await waitForRun(member.client, workflow.id, fired.at(-1)!);
      expect(last.status).toBe("succeeded");
      const stdin = readFileSync(join(dir, `${last.id}.stdin`), "utf8");
      return stdin.slice(stdin.indexOf("Earlier turns"), stdin.indexOf("This turn:")).length;
    };
    const plain = await historyOfLastTurn("x".repeat(4000));
    const nulFirst = await historyOfLastTurn("\u0000" + "x".repeat(3999));
    expect({ plain: plain < THREAD_LIMIT.chars + 10_000, nulFirst: nulFirst < THREAD_LIMIT.chars + 10_000, nulFirstChars: nulFirst }).toEqual({ plain: true, nulFirst: true, nulFirstChars: expect.any(Number) });
  }, 60_000);
});
