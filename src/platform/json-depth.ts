import { badRequest } from "./errors.ts";

/**
 * How deep a request body's arrays and objects may nest. The API's deepest
 * body is 3 levels; a value nested thousands deep (10 KB of `[`) makes the
 * schema validator's error summary overflow the stack, which would answer
 * 500 and log a stack trace for any caller, before any sign-in.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Parse a JSON request body, refusing one nested deeper than `maxDepth` with
 * 400 `invalid_json` before it is parsed, and one that is not JSON likewise.
 *
 * @example
 * ```ts
 * parseJsonBody('{"email":"a@b.c"}'); // { email: "a@b.c" }
 * ```
 */
export function parseJsonBody(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  if (nestingExceeds(text, maxDepth)) throw badRequest("invalid_json", `The request body nests arrays and objects deeper than ${maxDepth} levels`);
  try {
    return JSON.parse(text);
  } catch {
    throw badRequest("invalid_json", "The request body is not valid JSON");
  }
}

/** Whether brackets outside strings open more than `maxDepth` deep; malformed text is left to JSON.parse. */
function nestingExceeds(text: string, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (inString) {
      if (code === 0x5c) i++; // a backslash: the next character is escaped
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) {
      inString = true;
    } else if (code === 0x5b || code === 0x7b) {
      if (++depth > maxDepth) return true;
    } else if (code === 0x5d || code === 0x7d) {
      depth--;
    }
  }
  return false;
}
