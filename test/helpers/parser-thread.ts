import { ParserThread } from "../../src/screen/index.ts";

/**
 * The parser thread mirrors in a test file share, as a server's do. Its
 * worker starts with the first mirror and does not keep the test process alive.
 */
export const parser = new ParserThread();
