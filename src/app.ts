import { Elysia, ValidationError, type AnyElysia } from "elysia";
import { isUniqueViolation } from "./db/index.ts";
import { forbidden, HatchError, isCrossOriginRequest } from "./platform/index.ts";

/** Options for `createApp`: the route plugins of every part, already built with their collaborators. */
export interface AppOptions {
  routes: AnyElysia[];
  /** Page origins besides the web host's own whose browsers may change things (HATCH_ALLOWED_ORIGINS). */
  allowedOrigins?: readonly string[];
  /** Where unexpected errors go (never to the client). */
  logError?: (error: unknown) => void;
}

/**
 * Largest request body the web host accepts (1 MiB), given to Bun as
 * `maxRequestBodySize`. The largest legitimate body is a 40,000-character text
 * JSON-escaped at worst (about 480 KB); without a cap Bun buffers up to 128 MB
 * for any route. Bun refuses a bigger body itself, declared or chunked, with a
 * bare 413 before any route (or this app's error mapping) sees it.
 */
export const MAX_REQUEST_BODY_BYTES = 1024 * 1024;

/** The body of every error answer. */
export interface ErrorBody {
  error: { code: string; message: string };
}

/**
 * Build the web host: every part's routes behind the one error mapping, so
 * each failure answers `{error:{code,message}}` with the specification's status
 * and never a stack trace or a secret. A browser's cross-origin request that
 * would change something is refused before any route (see isCrossOriginRequest).
 */
export function createApp(options: AppOptions) {
  const logError = options.logError ?? ((error: unknown) => console.error("hatch: unexpected error", error));
  const allowedOrigins = new Set(options.allowedOrigins ?? []);
  let app: AnyElysia = new Elysia({ name: "hatch" })
    .error({ HatchError })
    .onRequest(({ request, set }) => {
      // A page on an allowed origin (the widget served on another port or host) must be able to call the API
      // with its cookie and read the answer, so the browser is told so (CORS); no other origin is.
      const origin = request.headers.get("origin");
      if (origin !== null && allowedOrigins.has(origin)) {
        set.headers["access-control-allow-origin"] = origin;
        set.headers["access-control-allow-credentials"] = "true";
        set.headers["vary"] = "Origin";
        if (request.method === "OPTIONS" && request.headers.has("access-control-request-method")) return preflightAnswer(origin);
      }
      if (isCrossOriginRequest(request.method, request.headers, allowedOrigins)) {
        throw forbidden("cross_origin_request", "Requests that change something are refused from another origin's pages; list the page's origin in HATCH_ALLOWED_ORIGINS if it is yours");
      }
    })
    .onError(({ code, error, set }) => {
      const answer = (status: number, errorCode: string, message: string): ErrorBody => {
        set.status = status;
        set.headers["content-type"] = "application/json";
        return { error: { code: errorCode, message } };
      };
      if (error instanceof HatchError) {
        if (error.retryAfterMs !== undefined) set.headers["retry-after"] = String(Math.max(1, Math.ceil(error.retryAfterMs / 1000)));
        return answer(error.status, error.code, error.message);
      }
      // A store checks for a duplicate before it inserts, but another process (the CLI beside the server) can insert between the two.
      if (isUniqueViolation(error)) return answer(409, "conflict", "Something with the same name was saved at the same moment; look again, then retry");
      switch (code) {
        case "VALIDATION":
          return answer(400, "invalid_request", describeValidation(error as ValidationError));
        case "PARSE":
          return answer(400, "invalid_json", "The request body is not valid JSON");
        case "NOT_FOUND":
          return answer(404, "not_found", "Not found");
        default:
          logError(error);
          return answer(500, "internal_error", "Something went wrong on the server; the error was logged");
      }
    });
  for (const routes of options.routes) app = app.use(routes);
  return app;
}

/** The answer to a browser's CORS preflight from an allowed origin: the JSON calls the API takes, with the cookie. */
function preflightAnswer(origin: string): Response {
  return new Response(null, {
    status: 204,
    headers: {
      "access-control-allow-origin": origin,
      "access-control-allow-credentials": "true",
      "access-control-allow-methods": "GET, POST, PUT, PATCH, DELETE",
      "access-control-allow-headers": "content-type",
      "access-control-max-age": "600",
      vary: "Origin",
    },
  });
}

/** "Invalid body: field "email" expected string" — names the field, never echoes the value. */
function describeValidation(error: ValidationError): string {
  const first = error.all?.[0] as { path?: string; message?: string; schema?: FieldSchema } | undefined;
  // Elysia reports a failed query or path number conversion as "property", without a path or saying where:
  // such a field is named by its schema's title, and called part of the request.
  const field = first?.path ? first.path.replace(/^\//, "").replaceAll("/", ".") : (first?.schema?.title ?? "");
  const where = ({ body: "body", query: "query", params: "path", headers: "headers" } as Record<string, string>)[error.type] ?? "request";
  const why = expectation(first?.schema) ?? first?.message?.toLowerCase() ?? "does not match the schema";
  return field ? `Invalid ${where}: field "${field}" ${why}` : `Invalid ${where}: ${why}`;
}

/** The parts of a TypeBox schema an error message can name. */
interface FieldSchema {
  /** `t.Never()`: a field a route refuses outright (Elysia would otherwise drop an unknown field silently). */
  not?: unknown;
  anyOf?: { const?: unknown; type?: string }[];
  minimum?: number;
  maximum?: number;
  multipleOf?: number;
  /** The field's name, where Elysia's error has no path (a query or path number: see t.Numeric's uses). */
  title?: string;
}

/**
 * What a field accepts, where TypeBox would only say "expected union value"
 * or "never": the values of a union of literals, the range of a number (Elysia
 * makes a number a union, so a numeric string in a query coerces), or nothing.
 */
function expectation(schema: FieldSchema | undefined): string | null {
  if (schema?.not !== undefined) return "is not accepted here";
  const options = schema?.anyOf;
  if (options?.every((o) => o.const !== undefined)) return `expected one of ${options.map((o) => JSON.stringify(o.const)).join(", ")}`;
  if (!options && schema?.title === undefined) return null;
  if (schema?.minimum === undefined) return null;
  const kind = options?.some((o) => o.type === "integer") ? "an integer" : schema.multipleOf === 1 ? "a whole number" : "a number";
  return schema.maximum === undefined ? `expected ${kind} of at least ${schema.minimum}` : `expected ${kind} from ${schema.minimum} to ${schema.maximum}`;
}
