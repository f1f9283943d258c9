import { expect, test } from "bun:test";
import { readCapped } from "../../src/platform/index.ts";

/** A stream of `chunks`, recording whether its reader cancelled it and how many chunks were pulled. */
function streamOf(chunks: string[]) {
  const seen = { pulled: 0, cancelled: false };
  const encoder = new TextEncoder();
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (seen.pulled === chunks.length) return controller.close();
      controller.enqueue(encoder.encode(chunks[seen.pulled++]!));
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  return { stream, seen };
}

test("a stream up to the cap is read whole, in order", async () => {
  const { stream } = streamOf(["ab", "cd", "e"]);
  expect(new TextDecoder().decode((await readCapped(stream, 5))!)).toBe("abcde");
  expect(await readCapped(null, 5)).toEqual(new Uint8Array(0));
});

test("a stream past the cap gives null and the rest is cancelled unread", async () => {
  const { stream, seen } = streamOf(["ab", "cd", "ef", "gh", "ij"]);
  expect(await readCapped(stream, 5)).toBeNull();
  expect(seen.cancelled).toBe(true);
  // The stream may pull one chunk ahead of the reader, never to the end.
  expect(seen.pulled).toBeLessThan(5);
});

test("a read that fails rejects for the caller to name", async () => {
  const stream = new ReadableStream<Uint8Array>({ pull: (controller) => controller.error(new Error("peer went away")) });
  await expect(readCapped(stream, 5)).rejects.toThrow("peer went away");
});
