/**
 * Entry point of the parser thread (a Worker started by ParserThread): every
 * message goes to one ParserHost, whose messages go back to the main thread.
 *
 * @module
 */
import { ParserHost } from "./parser-host.ts";
import type { FromParser, ToParser } from "./parser-protocol.ts";

declare const self: { onmessage: ((event: MessageEvent<ToParser>) => void) | null; postMessage(message: FromParser): void };

const host = new ParserHost((message) => self.postMessage(message));
self.onmessage = (event) => host.handle(event.data);
