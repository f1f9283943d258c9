import { Elysia } from "elysia";
import { clientAddress, HatchError, normalizeAddress, RateLimiter, rateKey, tooMany } from "../platform/index.ts";
import type { WorkflowsPart } from "../workflows/index.ts";
import { readFireText } from "./fire-body.ts";
import type { WebhookTokens } from "./webhook-tokens.ts";

/**
 * Fires per source address per minute. A webhook sender fires a handful of
 * times a minute; 60 leaves room for bursts while a token-guessing loop from one
 * address is held to one try a second.
 */
export const DEFAULT_FIRE_RATE_PER_MINUTE = 60;
const MINUTE_MS = 60_000;

/** Collaborators and settings of the fire endpoint. */
export interface FireRoutesOptions {
  part: WorkflowsPart;
  tokens: WebhookTokens;
  /** Peers whose X-Forwarded-For is believed (HATCH_TRUSTED_PROXIES). */
  trustedProxies: readonly string[];
  /** Per-address cap; 0 disables it. */
  ratePerMinute?: number;
  now?: () => number;
}

/** The one 401 of the fire endpoint: wrong, revoked and rotated-out tokens and unknown workflows all get it. */
function fireUnauthorized(): HatchError {
  return new HatchError("unauthorized", 401, "Invalid fire token");
}

/** The token of an `Authorization: Bearer …` header, or null. */
function bearerToken(header: string | null): string | null {
  const match = header && /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/**
 * `POST /api/webhooks/workflow/<workflow_id>/fire`: rate cap per source
 * address, then the bearer token, then the body, then the token again (it may
 * have been revoked while the body arrived), then the workflow's state and the
 * spend limit; 202 with the run id once the run is queued.
 */
export function fireRoutes(options: FireRoutesOptions) {
  const { part, tokens } = options;
  const trusted = new Set(options.trustedProxies.map(normalizeAddress));
  const limiter = new RateLimiter({ limit: options.ratePerMinute ?? DEFAULT_FIRE_RATE_PER_MINUTE, windowMs: MINUTE_MS, now: options.now });

  return new Elysia({ name: "fire-routes" }).post(
    "/api/webhooks/workflow/:id/fire",
    async ({ params, request, server, set }) => {
      const address = clientAddress(server?.requestIP(request)?.address, request.headers.get("x-forwarded-for"), trusted);
      const gate = limiter.take(rateKey(address));
      if (!gate.ok) throw tooMany("rate_limited", "Too many fires from this address: try again in a minute", gate.retryAfterMs);
      const token = bearerToken(request.headers.get("authorization"));
      const triggerId = tokens.authenticate(params.id, token);
      if (!triggerId) throw fireUnauthorized();
      const text = await readFireText(request);
      // A body can take its time: a token revoked or rotated (or a workflow deleted) meanwhile must not fire.
      if (tokens.authenticate(params.id, token) !== triggerId) throw fireUnauthorized();
      const run = await part.engine.fire({ workflowId: params.id, trigger: { id: triggerId, kind: "webhook" }, text, source: { kind: "webhook", triggerId } });
      set.status = 202;
      return { runId: run.id, workflowId: run.workflowId, number: run.number, status: run.status };
    },
    // The body is read by hand after the token check, so a bad token never gets as far as parsing.
    { parse: "none" },
  );
}
