import { badRequest } from "../platform/index.ts";
import { checkFireText } from "../workflows/index.ts";

/**
 * Largest fire body read: 4,000 characters of text JSON-escaped at worst
 * (`\uXXXX\uXXXX` per astral character) plus room for other fields. Bigger
 * bodies are refused before they are read.
 */
export const MAX_FIRE_BODY_BYTES = 64 * 1024;

/**
 * The optional `text` of a fire body, validated: an empty body means no text;
 * otherwise `Content-Type: application/json` with a JSON object whose `text`, if
 * present, is a string of at most 4,000 characters (`null` is refused). Every other shape is 400.
 */
export async function readFireText(request: Request): Promise<string | null> {
  const declared = Number(request.headers.get("content-length") ?? 0);
  if (declared > MAX_FIRE_BODY_BYTES) throw tooLarge();
  const raw = await request.text();
  if (raw.length > MAX_FIRE_BODY_BYTES) throw tooLarge();
  if (raw.trim() === "") return null;
  const type = request.headers.get("content-type") ?? "";
  if (!/^application\/json\b/i.test(type.trim())) {
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

function tooLarge() {
  return badRequest("body_too_large", `Cannot fire: the body is larger than ${MAX_FIRE_BODY_BYTES} bytes`);
}
