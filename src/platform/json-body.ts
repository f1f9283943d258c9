import { unsupportedMediaType } from "./errors.ts";
import { parseJsonBody } from "./json-depth.ts";

/**
 * A route hook refusing a body that is not `Content-Type: application/json`
 * (parameters such as `charset` allowed) with 415 `unsupported_media_type`.
 * An HTML form can send only form-encoded, multipart or text/plain bodies, and
 * a text/plain body can carry JSON (`enctype="text/plain"` writes
 * `name=value` as-is), so a route that reads JSON whatever the label could be
 * driven by another site's form: that is how login CSRF signs a visitor in as
 * someone else. A request without a body passes; its route's schema decides.
 * It reads only the headers, so a group can use it without every route parsing its body.
 *
 * @example
 * new Elysia().onTransform(requireJsonBody).post("/api/x", ({ body }) => body, { body: t.Object({}) })
 */
export function requireJsonBody({ request }: { request: Request }): void {
  if (!hasBody(request.headers)) return;
  if (!isJsonContentType(request.headers)) {
    throw unsupportedMediaType('The request body must be JSON: send it as "Content-Type: application/json"');
  }
}

/** Whether the headers label the body `application/json` (with parameters such as `charset`, and nothing else such as `application/json-patch+json`). */
export function isJsonContentType(headers: Headers): boolean {
  return headers.get("content-type")?.split(";")[0]?.trim().toLowerCase() === "application/json";
}

/** Whether the request says it carries a body (a length above zero, or chunks). */
function hasBody(headers: Headers): boolean {
  const length = headers.get("content-length");
  if (length !== null) return Number(length) > 0;
  return headers.has("transfer-encoding");
}

/**
 * A route parse hook reading a JSON body through `parseJsonBody`, so one
 * nested too deep is refused (400 `invalid_json`) before the route's schema
 * walks it; other bodies are left to the framework (and refused by
 * `requireJsonBody`). Route groups that read JSON use both; a route that
 * reads its own body (`parse: "none"`) uses neither.
 *
 * @example
 * new Elysia().onParse(parseJsonRequest).onTransform(requireJsonBody)
 */
export async function parseJsonRequest({ request }: { request: Request }): Promise<unknown> {
  // A request without a body labelled JSON all the same (HTTP wrappers label every request) is left to the framework.
  if (!hasBody(request.headers) || !isJsonContentType(request.headers)) return undefined;
  return parseJsonBody(await request.text());
}
