/**
 * The one error type of hatch. Every expected failure carries a stable `code`
 * (what clients and tests match on) and the HTTP `status` it maps to; the
 * mapping to a response body happens in one place (`src/app.ts`).
 *
 * @example
 * throw new HatchError("session_not_found", 404, 'Cannot find session "a1"')
 */
export class HatchError extends Error {
  /** Extra machine-readable detail; never a secret. */
  readonly detail?: Record<string, unknown>;
  /** How long until trying again may succeed, sent as `Retry-After`; absent when no wait would help. */
  readonly retryAfterMs?: number;

  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
    options: { detail?: Record<string, unknown>; retryAfterMs?: number } = {},
  ) {
    super(message);
    this.name = "HatchError";
    this.detail = options.detail;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/** 400: the request is malformed; `message` names the field. */
export const badRequest = (code: string, message: string) => new HatchError(code, 400, message);
/** 401: no valid identity. */
export const unauthorized = (message = "Sign in first") => new HatchError("unauthorized", 401, message);
/** 403: identity known, permission missing. */
export const forbidden = (code: string, message: string) => new HatchError(code, 403, message);
/** 404: absent, or not to be revealed. */
export const notFound = (code: string, message: string) => new HatchError(code, 404, message);
/** 409: conflicts with the current state. */
export const conflict = (code: string, message: string) => new HatchError(code, 409, message);
/** 415: the body is not of a type the route reads. */
export const unsupportedMediaType = (message: string) => new HatchError("unsupported_media_type", 415, message);
/** 429: a limit was reached; `retryAfterMs`, when known, is when it frees up again. */
export const tooMany = (code: string, message: string, retryAfterMs?: number) => new HatchError(code, 429, message, { retryAfterMs });
/** 503: the service cannot take this now (shutting down, a dependency missing); trying later may work. */
export const unavailable = (code: string, message: string) => new HatchError(code, 503, message);

/**
 * A route hook for a body schema whose fields are all optional: Elysia reads
 * `"hi"`, `[]` or `7` as `{}` for such a schema, so a body that is not a JSON
 * object gets 400 `invalid_body` here instead. Per route, not global: a global
 * hook naming `body` makes every route parse its body (about 4 µs a request).
 */
export function requireObjectBody({ body }: { body: unknown }): void {
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw badRequest("invalid_body", "The request body must be a JSON object");
}
