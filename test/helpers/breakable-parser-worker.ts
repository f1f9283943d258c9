/**
 * A parser thread that works like the real one until it is asked for the
 * last 666 lines, which makes it throw an uncaught error: how tests see what
 * mirrors do when their parser thread dies.
 *
 * @module
 */
import { ParserHost } from "../../src/screen/parser-host.ts";
import type { FromParser, ToParser } from "../../src/screen/parser-protocol.ts";

/** The readLines count that breaks this worker. */
export const BREAKING_LINE_COUNT = 666;

declare const self: { onmessage: ((event: MessageEvent<ToParser>) => void) | null; postMessage(message: FromParser): void };

const host = new ParserHost((message) => self.postMessage(message));
self.onmessage = (event) => {
  const message = event.data;
  if (message.op === "ask" && message.question.kind === "readLines" && message.question.max === BREAKING_LINE_COUNT) {
    throw new Error("parser thread broken on purpose");
  }
  host.handle(message);
};
