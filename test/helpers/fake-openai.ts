/**
 * A fake OpenAI-compatible chat-completions server on loopback, speaking the
 * real shapes: `POST /v1/chat/completions` with `Authorization: Bearer <key>`
 * and `{model, messages}`, answering `{id, object: "chat.completion", created,
 * model, choices: [{index, message: {role, content}, finish_reason}], usage}` or
 * an OpenAI error body `{error: {message, type, code}}`.
 *
 * @example
 * await using openai = startFakeOpenAi({ apiKey: "sk-test" });
 * openai.reply({ content: "hi" });
 */

/** One scripted answer: a message, or an HTTP error. */
export interface FakeReply {
  content?: string;
  status?: number;
  /** The error's message; a function is given the key the request carried, to echo it as some servers and proxies do. */
  errorMessage?: string | ((sentKey: string) => string);
  totalTokens?: number;
  /** Retry-After on an error reply (seconds or an HTTP date), as rate-limited endpoints send it. */
  retryAfter?: string;
  /** retry-after-ms on an error reply, as OpenAI sends it beside Retry-After. */
  retryAfterMs?: string;
  /** The error's `code` (and `type`), e.g. "insufficient_quota" on a 429 for an account out of credit. */
  errorCode?: string;
  /** `usage` with its prompt and completion parts but no total_tokens, as some compatible servers send it. */
  withoutTotal?: boolean;
  /** The message content as an array of parts, as some compatible servers answer (the runner refuses it). */
  contentAsParts?: boolean;
  /** Send the status and headers, then stall the body until the request goes away. */
  stallBody?: boolean;
  /** A refusal as OpenAI sends one (`content: null`, `refusal: <text>`). */
  refusal?: string;
  /** The choice's finish_reason (default "stop"); with `content` absent, the content is null, as for `content_filter`. */
  finishReason?: string;
  /** Leave `usage` out of the completion, as some compatible servers do. */
  withoutUsage?: boolean;
  /** Wait this long before answering, as a loaded endpoint does. */
  delayMs?: number;
  /** `usage.total_tokens` sent as JSON null beside its parts, as some compatible servers do. */
  nullTotal?: boolean;
  /** On an error reply, a `usage` with this total, as some servers bill a refused request. */
  errorUsage?: number;
}

/** A request the fake received. */
export interface FakeRequest {
  authorization: string | null;
  /** The query string the request carried ("" for none). */
  query: string;
  body: { model: string; messages: { role: string; content: string }[] };
}

/** The running fake. */
export interface FakeOpenAi extends AsyncDisposable {
  /** Base URL to configure, e.g. http://127.0.0.1:4321/v1 */
  baseUrl: string;
  requests: FakeRequest[];
  /** Queue a scripted reply; unscripted requests get `fake answer <n>`. */
  reply(reply: FakeReply): void;
  /** The size in bytes of the last completion body sent. */
  lastResponseBytes(): number;
}

/** Tokens reported when a reply does not say. */
const DEFAULT_TOTAL_TOKENS = 42;

/** Start the fake; requests with another key get the real 401 shape. */
export function startFakeOpenAi(options: { apiKey: string }): FakeOpenAi {
  const requests: FakeRequest[] = [];
  const script: FakeReply[] = [];
  let lastResponseBytes = 0;
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (request) => {
      const url = new URL(request.url);
      if (request.method !== "POST" || url.pathname !== "/v1/chat/completions") return Response.json({ error: { message: "Not found", type: "invalid_request_error" } }, { status: 404 });
      const body = (await request.json()) as FakeRequest["body"];
      requests.push({ authorization: request.headers.get("authorization"), query: url.search, body });
      if (request.headers.get("authorization") !== `Bearer ${options.apiKey}`) {
        return Response.json({ error: { message: "Incorrect API key provided.", type: "invalid_request_error", code: "invalid_api_key" } }, { status: 401 });
      }
      const next = script.shift() ?? { content: `fake answer ${requests.length}` };
      if (next.delayMs) await Bun.sleep(next.delayMs);
      if (next.stallBody) {
        // The first bytes of a completion, and then nothing, until the client gives up.
        const stalled = new ReadableStream({ start: (controller) => controller.enqueue(new TextEncoder().encode('{"id":"chatcmpl-stalled",')) });
        return new Response(stalled, { headers: { "content-type": "application/json" } });
      }
      if (next.status && next.status !== 200) {
        const sentKey = (request.headers.get("authorization") ?? "").replace(/^Bearer /, "");
        const message = typeof next.errorMessage === "function" ? next.errorMessage(sentKey) : (next.errorMessage ?? "The server had an error");
        const headers: Record<string, string> = {};
        if (next.retryAfter !== undefined) headers["retry-after"] = next.retryAfter;
        if (next.retryAfterMs !== undefined) headers["retry-after-ms"] = next.retryAfterMs;
        const type = next.errorCode ?? (next.status === 429 ? "requests" : "server_error");
        const usage = next.errorUsage === undefined ? {} : { usage: { prompt_tokens: next.errorUsage, completion_tokens: 0, total_tokens: next.errorUsage } };
        return Response.json({ error: { message, type, code: next.errorCode ?? null }, ...usage }, { status: next.status, headers });
      }
      const total = next.totalTokens ?? DEFAULT_TOTAL_TOKENS;
      const content = next.contentAsParts
        ? [{ type: "text", text: next.content ?? "" }]
        : next.refusal !== undefined || (next.finishReason !== undefined && next.content === undefined)
          ? null
          : (next.content ?? "");
      const message = next.refusal === undefined ? { role: "assistant", content } : { role: "assistant", content, refusal: next.refusal };
      const completion = JSON.stringify({
        id: `chatcmpl-${requests.length}`,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [{ index: 0, message, logprobs: null, finish_reason: next.finishReason ?? "stop" }],
        ...(next.withoutUsage
          ? {}
          : { usage: { prompt_tokens: total - 2, completion_tokens: 2, ...(next.withoutTotal ? {} : { total_tokens: next.nullTotal ? null : total }) } }),
      });
      lastResponseBytes = Buffer.byteLength(completion);
      return new Response(completion, { headers: { "content-type": "application/json" } });
    },
  });
  return {
    baseUrl: `http://127.0.0.1:${server.port}/v1`,
    requests,
    reply: (reply) => void script.push(reply),
    lastResponseBytes: () => lastResponseBytes,
    [Symbol.asyncDispose]: async () => void (await server.stop(true)),
  };
}
