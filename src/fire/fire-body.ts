import { badRequest, isJsonContentType, readCapped } from "../platform/index.ts";
import { checkFireText } from "../workflows/index.ts";

/**
 * Largest fire body read: 4,000 characters of text JSON-escaped at worst
 * (`\uXXXX\uXXXX` per astral character) plus room for other fields. Bigger
 * bodies are refused before they are read.
 */
export const MAX_FIRE_BODY_BYTES = 64 * 1024;

/** Fatal: bytes that are not UTF-8 are refused, never replaced with U+FFFD in the run's text. Shared: it keeps no state between whole decodes. */
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The optional `text` of a fire body, validated: an empty (zero-length) body
 * means no text; otherwise `Content-Type: application/json` with a JSON object whose `text`, if
 * present, is a string of at most 4,000 characters (`null` is refused). Every other shape is 400.
 */
export async function readFireText(request: Request): Promise<string | null> {
  const raw = await readCappedBody(request);
  // Only nothing at all is "no body": whitespace sent as JSON is not a JSON document (JSON.parse refuses it too).
  if (raw.byteLength === 0) return null;
  if (!isJsonContentType(request.headers) || !saysUtf8(request.headers.get("content-type")!)) {
    throw badRequest("invalid_content_type", 'Cannot fire: send the body as UTF-8 JSON, "Content-Type: application/json"');
  }
  let body: unknown;
  try {
    body = JSON.parse(UTF8.decode(raw));
  } catch {
    throw badRequest("invalid_json", "The request body is not valid JSON (in UTF-8)");
  }
  if (!body || typeof body !== "object" || Array.isArray(body)) throw badRequest("invalid_body", "Cannot fire: the body must be a JSON object");
  const text = (body as { text?: unknown }).text;
  // Absent means no text; null is not a string, so it is refused like any other non-string.
  if (text === undefined) return null;
  if (typeof text !== "string") throw badRequest("invalid_text", 'Cannot fire: "text" must be a string');
  checkFireText(text);
  return text;
}

/** Whether a JSON content type leaves the body UTF-8: no charset (JSON's own), or one of UTF-8's names. */
function saysUtf8(contentType: string): boolean {
  // Every well-behaved client's header: no parameters to read.
  if (!contentType.includes(";")) return true;
  const charset = contentType
    .split(";")
    .slice(1)
    .map((parameter) => parameter.trim().split("="))
    .find(([name]) => name?.trim().toLowerCase() === "charset")?.[1];
  return charset === undefined || namesUtf8(charset.trim().replace(/^"(.*)"$/, "$1"));
}

/** Whether `label` is a name of UTF-8 (`utf-8`, `utf8`, `unicode-1-1-utf-8`…), as the Encoding Standard browsers follow reads it. */
function namesUtf8(label: string): boolean {
  try {
    return new TextDecoder(label).encoding === "utf-8";
  } catch {
    return false; // a name of no encoding at all
  }
}

/**
 * The body's bytes, refused (400 `body_too_large`) past MAX_FIRE_BODY_BYTES. A
 * declared length is checked before reading; a chunked body is counted as it
 * arrives and the read is cancelled at the cap, so a body without a length
 * cannot make the server hold more than the cap of it. A client that goes
 * away mid-body gets 400 `body_incomplete` (it hears nothing, but the server
 * does not take its leaving for a fault of its own).
 */
async function readCappedBody(request: Request): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null) {
    if (Number(declared) > MAX_FIRE_BODY_BYTES) throw tooLarge();
    // The server reads exactly the declared length, so the fast whole-body read is bounded too.
    return new Uint8Array(await untilComplete(request.arrayBuffer()));
  }
  const bytes = await untilComplete(readCapped(request.body, MAX_FIRE_BODY_BYTES));
  if (bytes === null) throw tooLarge();
  return bytes;
}

/** A body read, with the client's leaving mid-body as 400 `body_incomplete`. */
async function untilComplete<T>(read: Promise<T>): Promise<T> {
  try {
    return await read;
  } catch {
    throw badRequest("body_incomplete", "Cannot fire: the connection closed before the whole body arrived");
  }
}

function tooLarge() {
  return badRequest("body_too_large", `Cannot fire: the body is larger than ${MAX_FIRE_BODY_BYTES} bytes`);
}
