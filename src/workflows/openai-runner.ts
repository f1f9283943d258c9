import { renderInput, type Prompt } from "./prompt.ts";
import { redactSecret } from "./redact-secret.ts";
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
}

/** Longest error text kept from an endpoint's answer: enough to diagnose, never a whole HTML page. */
const MAX_REMOTE_MESSAGE = 500;

/**
 * The thread as chat messages: the instruction as the system message, each
 * earlier turn as its delimited input and the answers given, then this turn's
 * delimited input. The untrusted text is never placed anywhere else.
 */
export function chatMessages(prompt: Prompt): ChatMessage[] {
  const messages: ChatMessage[] = [];
  if (prompt.instruction) messages.push({ role: "system", content: prompt.instruction });
  for (const turn of prompt.history) {
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
    const response = await this.#post(request, key);
    if (!response) return { tokensUsed: 0, stopped: true };
    const body = (await response.json().catch(() => null)) as CompletionBody | null;
    if (!response.ok) throw refusal(settings.baseUrl, response.status, body, key);
    const message = body?.choices?.[0]?.message;
    if (!message || (message.content !== null && typeof message.content !== "string")) {
      throw new RunnerFailedError(`The model endpoint ${settings.baseUrl} answered without a message`);
    }
    const text = (message.content ?? "").trim();
    if (text) request.emit([{ type: "answer", text }]);
    return { tokensUsed: Math.max(0, Number(body?.usage?.total_tokens) || 0), stopped: false };
  }

  /** POST the completion request; null when the run was cancelled meanwhile. */
  async #post(request: RunnerRequest<OpenAiRunnerSettings>, key: string): Promise<Response | null> {
    const { settings } = request;
    const signal = AbortSignal.any([request.signal, AbortSignal.timeout(settings.timeoutSeconds * 1000)]);
    try {
      return await (this.options.fetch ?? fetch)(`${settings.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: settings.model, messages: chatMessages(request.prompt) }),
        signal,
      });
    } catch (error) {
      if (request.signal.aborted) return null;
      if (signal.aborted) throw new RunnerFailedError(`The model endpoint ${settings.baseUrl} did not answer within ${settings.timeoutSeconds} s`);
      throw new RunnerUnavailableError(`Cannot reach the model endpoint ${settings.baseUrl}: ${remoteText((error as Error).message, key)}`);
    }
  }
}

interface CompletionBody {
  choices?: { message?: { role?: string; content?: string | null } }[];
  usage?: { total_tokens?: number };
  error?: { message?: string } | string;
}

function refusal(baseUrl: string, status: number, body: CompletionBody | null, key: string): Error {
  const raw = typeof body?.error === "string" ? body.error : body?.error?.message;
  const detail = raw ? `: ${remoteText(String(raw), key)}` : "";
  const busy = status === 429 || status >= 500;
  const message = `The model endpoint ${baseUrl} answered ${status}${detail}`;
  return busy ? new RunnerUnavailableError(message) : new RunnerFailedError(message);
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
