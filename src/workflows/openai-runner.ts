import { renderInput, type Prompt } from "./prompt.ts";
import { redactSecret, redactWholeSecret } from "./redact-secret.ts";
import { RunnerError, RunnerFailedError, RunnerUnavailableError, type Runner, type RunnerRequest, type RunnerResult } from "./runner.ts";
import type { OpenAiRunnerSettings } from "./workflow.ts";

/** A chat message of the OpenAI chat-completions API. */
export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

/** Collaborators of the OpenAI runner. */
export interface OpenAiRunnerOptions {
  /** Reads a project secret (the API key) on the server; null when absent. */
  revealSecret(projectId: string, secretId: string): Promise<string | null>;
  fetch?: typeof fetch;
  /** The clock a Retry-After date is read against. */
  now?: () => number;
}

/** Longest error text kept from an endpoint's answer: enough to diagnose, never a whole HTML page. */
const MAX_REMOTE_MESSAGE = 500;
/**
 * Largest answer body read from an endpoint. A long completion is a few
 * hundred kilobytes of JSON; past this one endpoint could fill the server's
 * memory, and each turn of a one-thread workflow sends the answers before
 * it again. A command's stdout has a cap of the same order.
 */
export const MAX_COMPLETION_BYTES = 2 * 1024 * 1024;
/**
 * Past MAX_COMPLETION_BYTES the rest of an answer is still read, not kept, up
 * to this many bytes, for the tokens the endpoint billed for it: they come
 * after the content, and the spend limit must count them.
 */
const MAX_SKIPPED_BYTES = 64 * 1024 * 1024;
/** The ends of an oversized answer searched for its usage: where an endpoint puts it, before or after the choices. */
const USAGE_SEARCH_BYTES = 8192;
/** An API key is visible ASCII: anything else cannot go in an Authorization header, and is a paste gone wrong. */
const HEADER_SAFE_KEY = /^[\x21-\x7e]+$/;

/** The chat-completions URL under a base URL, keeping the base's query (Azure's `?api-version=`). */
export function completionsUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/chat/completions`;
  return url.href;
}

/**
 * The thread as chat messages: the instruction as the system message, each
 * earlier answered turn as its delimited input and the answers given, then
 * this turn's delimited input. The untrusted text is never placed anywhere else.
 */
export function chatMessages(prompt: Prompt): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (prompt.instruction) messages.push({ role: "system", content: prompt.instruction });
  for (const turn of prompt.history) {
    // A turn the model did not answer is left out: an empty assistant message is refused by some servers, and two user messages in a row by others.
    if (!turn.answers.some((answer) => answer.trim())) continue;
    messages.push({ role: "user", content: renderInput(turn.input, prompt.nonce) });
    messages.push({ role: "assistant", content: turn.answers.join("\n\n") });
  }
  messages.push({ role: "user", content: renderInput(prompt.input, prompt.nonce) });
  return messages;
}

/**
 * Runs a turn against any OpenAI-compatible chat-completions endpoint. "Could
 * not reach it" and "it is busy" (429, 5xx) are `RunnerUnavailableError` and the
 * run retries; any other refusal is final and its message goes on the run row.
 */
export class OpenAiRunner implements Runner<OpenAiRunnerSettings> {
  constructor(private readonly options: OpenAiRunnerOptions) {}

  /** Run one turn (see the class). */
  async run(request: RunnerRequest<OpenAiRunnerSettings>): Promise<RunnerResult> {
    const { settings, workflow } = request;
    const stored = await this.options.revealSecret(workflow.projectId, settings.apiKeySecret);
    if (stored === null) throw new RunnerFailedError(`Cannot find the project secret "${settings.apiKeySecret}" holding the API key`);
    // A line break pasted with the key is forgiven; a space or an invisible character inside it cannot be sent at all.
    const key = stored.trim();
    if (!HEADER_SAFE_KEY.test(key)) {
      throw new RunnerFailedError(`The API key in the project secret "${settings.apiKeySecret}" holds a character an HTTP header cannot carry (a space, or an invisible character pasted with it): store it again`);
    }
    const asked = await this.#askUntilItFits(request, key);
    if (asked.stopped) return { tokensUsed: asked.spentBefore, stopped: true };
    const { exchange, leftOut, spentBefore } = asked;
    const { response, body } = exchange;
    // Billed even when the answer is refused below: the spend limit counts what the endpoint counted.
    const tokensUsed = spentBefore + billedTokens(body?.usage);
    if (!response.ok) throw refusal(settings.baseUrl, response, body, key, { tokensUsed, now: this.options.now ?? Date.now });
    const choice = body?.choices?.[0];
    const message = choice?.message;
    if (!message || (message.content !== null && typeof message.content !== "string")) {
      throw new RunnerFailedError(`The model endpoint ${shownUrl(settings.baseUrl)} answered without a message`, { tokensUsed });
    }
    // A model that declines says so in `refusal`, with no content: that is its answer to the sender.
    const said = message.content || (typeof message.refusal === "string" ? message.refusal : "");
    // No text, and stopped for another reason than being done (content_filter, tool_calls, length): nothing was answered.
    if (!said.trim() && choice?.finish_reason && choice.finish_reason !== "stop") {
      throw new RunnerFailedError(`The model endpoint ${shownUrl(settings.baseUrl)} gave no answer (finish_reason "${remoteText(String(choice.finish_reason), key)}")`, { tokensUsed });
    }
    // An endpoint or proxy that echoes the request could put the key in the answer, which goes to the run row and the chat.
    const text = redactWholeSecret(said.trim(), key);
    // Stopped at the model's output limit, the answer is cut short: it is still the answer, and the run says so.
    const cutShort = text && choice?.finish_reason === "length" ? [{ type: "note" as const, text: CUT_SHORT_NOTE }] : [];
    const trimmed = leftOut > 0 ? [{ type: "note" as const, text: leftOutNote(leftOut) }] : [];
    if (text) request.emit([...trimmed, { type: "answer", text }, ...cutShort]);
    return { tokensUsed, stopped: false };
  }

  /**
   * Ask the turn, and ask again while the conversation does not fit the
   * model's context: a one-thread conversation can outgrow it, and every
   * later turn would then fail the same way. Each time the older half of the
   * earlier turns is left out, until it fits or none are left. Only answered
   * turns are sent (see chatMessages), so only they are counted and left out.
   * One deadline bounds all the attempts; the tokens the refused ones were
   * billed (`spentBefore`) count, also on an error a later one throws.
   */
  async #askUntilItFits(
    request: RunnerRequest<OpenAiRunnerSettings>,
    key: string,
  ): Promise<{ stopped: true; spentBefore: number } | { stopped: false; exchange: Exchange; leftOut: number; spentBefore: number }> {
    const answered = request.prompt.history.filter((turn) => turn.answers.some((answer) => answer.trim()));
    let prompt = { ...request.prompt, history: answered };
    let spentBefore = 0;
    const deadline = AbortSignal.timeout(request.settings.timeoutSeconds * 1000);
    try {
      for (;;) {
        const exchange = await this.#exchange(request, prompt, key, deadline);
        if (!exchange) return { stopped: true, spentBefore };
        if (prompt.history.length === 0 || !overflowsContext(exchange.response, exchange.body)) {
          return { stopped: false, exchange, leftOut: answered.length - prompt.history.length, spentBefore };
        }
        spentBefore += billedTokens(exchange.body?.usage);
        prompt = { ...prompt, history: prompt.history.slice(Math.ceil(prompt.history.length / 2)) };
      }
    } catch (error) {
      if (error instanceof RunnerError && spentBefore > 0) error.details.tokensUsed = (error.details.tokensUsed ?? 0) + spentBefore;
      throw error;
    }
  }

  /**
   * POST `prompt` as the completion request and read its answer, both before
   * the turn's `deadline`; null when the run was cancelled meanwhile. A body that is not
   * JSON reads as null.
   */
  async #exchange(request: RunnerRequest<OpenAiRunnerSettings>, prompt: Prompt, key: string, deadline: AbortSignal): Promise<Exchange | null> {
    const { settings } = request;
    const signal = AbortSignal.any([request.signal, deadline]);
    try {
      const response = await (this.options.fetch ?? fetch)(completionsUrl(settings.baseUrl), {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: settings.model, messages: chatMessages(prompt) }),
        signal,
        // A redirect would re-send the thread to a host the workflow never named (a 307 keeps the body).
        redirect: "manual",
      });
      // A stalled body is the timeout's too, and a cancel stops it: only a body that arrived and is not JSON is null.
      const answer = await readAnswer(response.body);
      if ("tooLarge" in answer) {
        throw new RunnerFailedError(`The model endpoint ${shownUrl(settings.baseUrl)} answered with more than ${MAX_COMPLETION_BYTES} bytes`, { tokensUsed: answer.tokensUsed });
      }
      return { response, body: parseJson(new TextDecoder().decode(answer.bytes)) as CompletionBody | null };
    } catch (error) {
      if (request.signal.aborted) return null;
      if (error instanceof RunnerFailedError) throw error;
      if (signal.aborted) throw new RunnerFailedError(`The model endpoint ${shownUrl(settings.baseUrl)} did not answer within ${settings.timeoutSeconds} s`);
      throw new RunnerUnavailableError(`Cannot reach the model endpoint ${shownUrl(settings.baseUrl)}: ${remoteText((error as Error).message, key)}`);
    }
  }
}

/**
 * An answer body up to MAX_COMPLETION_BYTES; past it, the tokens it was
 * billed: the `total_tokens` found at either end of the body read on (not
 * kept) up to MAX_SKIPPED_BYTES, else an estimate of a token per 4 bytes read.
 */
async function readAnswer(stream: ReadableStream<Uint8Array> | null): Promise<{ bytes: Uint8Array } | { tooLarge: true; tokensUsed: number }> {
  if (!stream) return { bytes: new Uint8Array(0) };
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  let tail: Uint8Array = new Uint8Array(0);
  for (let part = await reader.read(); !part.done; part = await reader.read()) {
    size += part.value.byteLength;
    if (size <= MAX_COMPLETION_BYTES) parts.push(part.value);
    else tail = lastBytes([tail, part.value], USAGE_SEARCH_BYTES);
    if (size > MAX_SKIPPED_BYTES) {
      void reader.cancel().catch(() => {});
      break;
    }
  }
  const bytes = Buffer.concat(parts);
  if (size <= MAX_COMPLETION_BYTES) return { bytes };
  const ends = [bytes.subarray(0, USAGE_SEARCH_BYTES), lastBytes([bytes, tail], USAGE_SEARCH_BYTES)].map((end) => new TextDecoder().decode(end));
  const reported = ends.map((end) => [...end.matchAll(BILLED_TOKENS)].at(-1)?.[1]).find((count) => count !== undefined);
  return { tooLarge: true, tokensUsed: reported === undefined ? Math.ceil(size / 4) : tokenCount(reported) };
}

/** `"total_tokens": N` as a key: inside a JSON string every `"` is escaped. */
const BILLED_TOKENS = /(?<!\\)"total_tokens"\s*:\s*(\d+)/g;

/** The last `count` bytes of `chunks` joined. */
function lastBytes(chunks: Uint8Array[], count: number): Uint8Array {
  const joined = Buffer.concat(chunks);
  return joined.subarray(Math.max(0, joined.byteLength - count));
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** An endpoint's token count as a whole number the spend limit can add up; anything else (a fraction rounds up) counts 0. */
function tokenCount(reported: unknown): number {
  const count = Math.ceil(Number(reported));
  return Number.isSafeInteger(count) && count > 0 ? count : 0;
}

/** An endpoint's answer: the response, and its body read as JSON (null when it is not). */
interface Exchange {
  response: Response;
  body: CompletionBody | null;
}

interface CompletionBody {
  choices?: { message?: { role?: string; content?: string | null; refusal?: unknown }; finish_reason?: unknown }[];
  usage?: CompletionUsage;
  error?: { message?: string; type?: unknown; code?: unknown } | string;
}

interface CompletionUsage {
  total_tokens?: unknown;
  prompt_tokens?: unknown;
  completion_tokens?: unknown;
}

/** The tokens a completion's `usage` bills: the larger of its total and its two parts (some compatible servers send no total, or a null one). */
function billedTokens(usage: CompletionUsage | undefined): number {
  // A total that is missing, null or 0 beside its parts is no total: the parts are what was billed.
  return Math.max(tokenCount(usage?.total_tokens), tokenCount(usage?.prompt_tokens) + tokenCount(usage?.completion_tokens));
}

function refusal(baseUrl: string, response: Response, body: CompletionBody | null, key: string, context: { tokensUsed: number; now: () => number }): Error {
  const { status } = response;
  const raw = typeof body?.error === "string" ? body.error : body?.error?.message;
  const detail = raw ? `: ${remoteText(String(raw), key)}` : "";
  // A 429 for an account out of credit is not "busy": waiting does not pay the bill, so it fails at once.
  const outOfQuota = typeof body?.error === "object" && (body.error.code === "insufficient_quota" || body.error.type === "insufficient_quota");
  const busy = (status === 429 && !outOfQuota) || status >= 500;
  const redirect = status >= 300 && status < 400 ? ", a redirect, which is not followed: set the base URL to where the endpoint is" : "";
  const message = `The model endpoint ${shownUrl(baseUrl)} answered ${status}${redirect}${detail}`;
  if (!busy) return new RunnerFailedError(message, { tokensUsed: context.tokensUsed });
  // OpenAI says how long in milliseconds too, the finer of the two; where both are sent, the longer wait holds.
  const waits = [retryAfterMilliseconds(response.headers.get("retry-after-ms")), retryAfter(response.headers.get("retry-after"), context.now())].filter((ms) => ms !== null);
  const retryAfterMs = waits.length === 0 ? null : Math.max(...waits);
  return new RunnerUnavailableError(message, { tokensUsed: context.tokensUsed, ...(retryAfterMs === null ? {} : { retryAfterMs }) });
}

/**
 * Whether a refusal says the messages do not fit the model's context: OpenAI's
 * `context_length_exceeded`, or the "maximum context length" that vLLM and
 * other compatible servers write in a 400's message.
 */
function overflowsContext(response: Response, body: CompletionBody | null): boolean {
  if (response.status !== 400 || !body?.error) return false;
  if (typeof body.error === "string") return /maximum context length/i.test(body.error);
  return body.error.code === "context_length_exceeded" || /maximum context length/i.test(String(body.error.message ?? ""));
}

/** The note before an answer given with the oldest `count` earlier turns left out. */
export function leftOutNote(count: number): string {
  return `The ${count} oldest earlier turn${count === 1 ? " was" : "s were"} left out: the conversation no longer fit the model's context`;
}

/** The note after an answer the model stopped at its output limit (finish_reason "length"). */
export const CUT_SHORT_NOTE = 'The answer above is cut short: the model stopped at its output limit (finish_reason "length")';

/** A `retry-after-ms` header (OpenAI's) as a wait: a non-negative number of milliseconds, or null. */
function retryAfterMilliseconds(header: string | null): number | null {
  const value = header?.trim() ?? "";
  if (!/^\d+(\.\d+)?$/.test(value)) return null;
  return Math.ceil(Number(value));
}

/**
 * A base URL as errors show it: without a user name or password a URL may
 * carry (`https://user:pass@proxy/v1`), nor its query string and fragment
 * (where some proxies take their key: `?api-key=…`), shown as `?…`. Errors go
 * to the run row and the audit log, which every manager of the workflow reads.
 */
export function shownUrl(baseUrl: string): string {
  try {
    const url = new URL(baseUrl);
    const hidden = url.search !== "" || url.hash !== "";
    url.username = "";
    url.password = "";
    url.search = "";
    url.hash = "";
    const shown = url.toString();
    return `${url.pathname === "/" && !baseUrl.endsWith("/") ? shown.replace(/\/$/, "") : shown}${hidden ? "?…" : ""}`;
  } catch {
    return "(an unreadable URL)";
  }
}

/**
 * A Retry-After header as a wait in milliseconds: delay-seconds, or an HTTP
 * date read against `now`. Null when absent or unreadable.
 *
 * @example
 * retryAfter("2", Date.now()) // => 2000
 */
export function retryAfter(header: string | null, now: number): number | null {
  const value = header?.trim() ?? "";
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  // An HTTP date is always in GMT (RFC 9110); Date.parse alone would take "-5" for a year.
  const at = value.endsWith(" GMT") ? Date.parse(value) : Number.NaN;
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * Text from the endpoint (or from the fetch that failed to reach it), fit for
 * the run row and the audit log: cut to MAX_REMOTE_MESSAGE, then with the API
 * key and any piece of it redacted. Some servers and proxies quote the key they
 * were sent in their errors, and the row is readable by every manager of the workflow.
 */
function remoteText(text: string, key: string): string {
  // Cut first: a key straddling the cut leaves a prefix, and prefixes are redacted too.
  return redactSecret(text.slice(0, MAX_REMOTE_MESSAGE), key);
}
