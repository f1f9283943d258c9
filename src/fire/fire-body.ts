import { badRequest, isJsonContentType } from "../platform/index.ts";
import { checkFireText } from "../workflows/index.ts";

/**
 * Largest fire body read: 4,000 characters of text JSON-escaped at worst
 * (`\uXXXX\uXXXX` per astral character) plus room for other fields. Bigger
 * bodies are refused before they are read.
 */
export const MAX_FIRE_BODY_BYTES = 64 * 1024;

/**
 * The optional `text` of a fire body, validated: an empty (zero-length) body
 * means no text; otherwise `Content-Type: application/json` with a JSON object whose `text`, if
 * present, is a string of at most 4,000 characters (`null` is refused). Every other shape is 400.
 */
export async function readFireText(request: Request): Promise<string | null> {
  const raw = await readCappedBody(request);
  // Only nothing at all is "no body": whitespace sent as JSON is not a JSON document (JSON.parse refuses it too).
  if (raw === "") return null;
  if (!isJsonContentType(request.headers)) {
    throw badRequest("invalid_content_type", 'Cannot fire: send the body as "Content-Type: application/json"');
  }
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    throw badRequest("invalid_json", "The request body is not valid JSON");
  }
  if (!body || typeof body !== "object" || Array.isArray(body)) throw badRequest("invalid_body", "Cannot fire: the body must be a JSON object");
  const text = (body as { text?: unknown }).text;
  // Absent means no text; null is not a string, so it is refused like any other non-string.
  if (text === undefined) return null;
  if (typeof text !== "string") throw badRequest("invalid_text", 'Cannot fire: "text" must be a string');
  checkFireText(text);
  return text;
}

/**
 * The body as text, refused (400 `body_too_large`) past MAX_FIRE_BODY_BYTES. A
 * declared length is checked before reading; a chunked body is counted as it
 * arrives and the read is cancelled at the cap, so a body without a length
 * cannot make the server hold more than the cap of it.
 */
async function readCappedBody(request: Request): Promise<string> {
  const declared = request.headers.get("content-length");
  if (declared !== null) {
    if (Number(declared) > MAX_FIRE_BODY_BYTES) throw tooLarge();
    // The server reads exactly the declared length, so the fast whole-body read is bounded too.
    return request.text();
  }
  if (!request.body) return "";
  const reader = request.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let size = 0;
  for (let part = await reader.read(); !part.done; part = await reader.read()) {
    size += part.value.byteLength;
    if (size > MAX_FIRE_BODY_BYTES) {
      await reader.cancel();
      throw tooLarge();
    }
    text += decoder.decode(part.value, { stream: true });
  }
  return text + decoder.decode();
}

function tooLarge() {
  return badRequest("body_too_large", `Cannot fire: the body is larger than ${MAX_FIRE_BODY_BYTES} bytes`);
}
