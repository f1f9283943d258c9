import { readCapped } from "../platform/index.ts";
import { renderInput, type Prompt } from "./prompt.ts";
import { redactSecret, redactWholeSecret } from "./redact-secret.ts";
import { RunnerFailedError, RunnerUnavailableError, type Runner, type RunnerRequest, type RunnerResult } from "./runner.ts";
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
    const key = await this.options.revealSecret(workflow.projectId, settings.apiKeySecret);
    if (key === null) throw new RunnerFailedError(`Cannot find the project secret "${settings.apiKeySecret}" holding the API key`);
    const exchange = await this.#exchange(request, key);
    if (!exchange) return { tokensUsed: 0, stopped: true };
    const { response, body } = exchange;
    // Billed even when the answer is refused below: the spend limit counts what the endpoint counted.
    const tokensUsed = tokenCount(body?.usage?.total_tokens);
    if (!response.ok) throw refusal(settings.baseUrl, response, body, key, { tokensUsed, now: this.options.now ?? Date.now });
    const message = body?.choices?.[0]?.message;
    if (!message || (message.content !== null && typeof message.content !== "string")) {
      throw new RunnerFailedError(`The model endpoint ${settings.baseUrl} answered without a message`, { tokensUsed });
    }
    // An endpoint or proxy that echoes the request could put the key in the answer, which goes to the run row and the chat.
    const text = redactWholeSecret((message.content ?? "").trim(), key);
    if (text) request.emit([{ type: "answer", text }]);
    return { tokensUsed, stopped: false };
  }

  /**
   * POST the completion request and read its answer, both within the turn's
   * timeout; null when the run was cancelled meanwhile. A body that is not
   * JSON reads as null.
   */
  async #exchange(request: RunnerRequest<OpenAiRunnerSettings>, key: string): Promise<{ response: Response; body: CompletionBody | null } | null> {
    const { settings } = request;
    const signal = AbortSignal.any([request.signal, AbortSignal.timeout(settings.timeoutSeconds * 1000)]);
    try {
      const response = await (this.options.fetch ?? fetch)(completionsUrl(settings.baseUrl), {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: settings.model, messages: chatMessages(request.prompt) }),
        signal,
      });
      // A stalled body is the timeout's too, and a cancel stops it: only a body that arrived and is not JSON is null.
      const bytes = await readCapped(response.body, MAX_COMPLETION_BYTES);
      if (bytes === null) throw new RunnerFailedError(`The model endpoint ${settings.baseUrl} answered with more than ${MAX_COMPLETION_BYTES} bytes`);
      return { response, body: parseJson(new TextDecoder().decode(bytes)) as CompletionBody | null };
    } catch (error) {
      if (request.signal.aborted) return null;
      if (error instanceof RunnerFailedError) throw error;
      if (signal.aborted) throw new RunnerFailedError(`The model endpoint ${settings.baseUrl} did not answer within ${settings.timeoutSeconds} s`);
      throw new RunnerUnavailableError(`Cannot reach the model endpoint ${settings.baseUrl}: ${remoteText((error as Error).message, key)}`);
    }
  }
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

interface CompletionBody {
  choices?: { message?: { role?: string; content?: string | null } }[];
  usage?: { total_tokens?: number };
  error?: { message?: string } | string;
}

function refusal(baseUrl: string, response: Response, body: CompletionBody | null, key: string, context: { tokensUsed: number; now: () => number }): Error {
  const { status } = response;
  const raw = typeof body?.error === "string" ? body.error : body?.error?.message;
  const detail = raw ? `: ${remoteText(String(raw), key)}` : "";
  const busy = status === 429 || status >= 500;
  const message = `The model endpoint ${baseUrl} answered ${status}${detail}`;
  if (!busy) return new RunnerFailedError(message, { tokensUsed: context.tokensUsed });
  const retryAfterMs = retryAfter(response.headers.get("retry-after"), context.now());
  return new RunnerUnavailableError(message, { tokensUsed: context.tokensUsed, ...(retryAfterMs === null ? {} : { retryAfterMs }) });
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
