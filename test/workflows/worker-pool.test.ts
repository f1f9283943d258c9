import { describe, expect, test } from "bun:test";
import { WorkerPool } from "../../src/workflows/index.ts";
import { waitFor } from "../helpers/wait-for.ts";

/** A job the test releases by hand, recording when it starts. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe("the worker pool", () => {
  test("never runs more than its size; the rest wait in order", async () => {
    await using pool = new WorkerPool({ size: 2 });
    const gates = Array.from({ length: 5 }, gate);
    const started: number[] = [];
    gates.forEach((g, i) => pool.submit({ id: `j${i}`, key: null, run: async () => (started.push(i), await g.opened) }));
    await waitFor(() => started.length === 2, "two jobs to start");
    expect(pool.stats()).toMatchObject({ running: 2, queued: 3 });
    gates[1]!.open();
    await waitFor(() => started.length === 3, "a third job");
    expect(started).toEqual([0, 1, 2]);
    for (const g of gates) g.open();
    await waitFor(() => pool.stats().running === 0 && started.length === 5, "all jobs");
    expect(pool.stats().peakRunning).toBe(2);
  });

  test("jobs sharing a key run one at a time even with free slots; a retrying job keeps its key but frees its slot", async () => {
    await using pool = new WorkerPool({ size: 4 });
    const log: string[] = [];
    let attempts = 0;
    pool.submit({
      id: "a",
      key: "thread",
      run: async () => {
        log.push(`a${++attempts}`);
        return attempts === 1 ? { retryAfterMs: 20 } : undefined;
      },
    });
    pool.submit({ id: "b", key: "thread", run: async () => void log.push("b") });
    pool.submit({ id: "c", key: null, run: async () => void log.push("c") });
    await waitFor(() => log.length === 4, "every job");
    expect(log.filter((l) => l !== "c")).toEqual(["a1", "a2", "b"]);
    expect(log.indexOf("c")).toBeLessThan(log.indexOf("a2"));
  });

  test("cancel drops a queued job and aborts a running one; dispose aborts and waits", async () => {
    const pool = new WorkerPool({ size: 1 });
    const aborted: string[] = [];
    const blocker = (id: string) => ({ id, key: null, run: (signal: AbortSignal) => new Promise<void>((resolve) => signal.addEventListener("abort", () => (aborted.push(id), resolve()))) });
    pool.submit(blocker("running"));
    pool.submit(blocker("queued"));
    await waitFor(() => pool.stats().running === 1, "the first job");
    expect(pool.cancel("queued")).toBe("removed");
    expect(pool.cancel("nope")).toBe("absent");
    expect(pool.cancel("running")).toBe("aborted");
    await waitFor(() => pool.stats().running === 0, "the abort");
    pool.submit(blocker("last"));
    await waitFor(() => pool.stats().running === 1, "the last job");
    await pool[Symbol.asyncDispose]();
    expect(aborted).toEqual(["running", "last"]);
    expect(() => new WorkerPool({ size: 0 })).toThrow(RangeError);
  });
});
