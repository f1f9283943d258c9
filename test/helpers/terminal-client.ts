import WebSocket from "ws";
import type { HttpClient } from "./http-client.ts";
import { waitFor } from "./wait-for.ts";

/** How much recent output a client keeps for `sees`. */
const OUTPUT_TAIL_CHARS = 1 << 20;

/** A control message as the test sees it. */
export type Control = { type: string; [key: string]: any };

/** Options for opening a terminal WebSocket. */
export interface OpenOptions {
  since?: number;
  /** The session instance `since` counts in: the earlier connection's `instance`. */
  instance?: string;
  agentId?: string;
  userId?: string;
  /** Acknowledge output as it arrives (default true), like a browser widget that keeps up. */
  autoAck?: boolean;
}

/**
 * A terminal WebSocket client speaking hatch's frames: binary output, JSON
 * control. It keeps the output offset the way the widget does (snapshot offset
 * plus every binary frame since) and the text it has seen.
 */
export class TerminalClient {
  readonly controls: Control[] = [];
  /** Recent raw output since the last snapshot or replay (a bounded tail). */
  output = "";
  /** The last snapshot's serialized screen and scrollback (empty after a replay). */
  screen = "";
  offset = 0;
  /** The session instance from the hello: a reconnect sends it with `since`. */
  instance = "";
  /** The largest binary frame received, in bytes. */
  largestFrame = 0;
  closeCode: number | null = null;
  closeReason = "";
  readonly closed: Promise<number>;
  #unackedBytes = 0;

  private constructor(
    readonly ws: WebSocket,
    private readonly autoAck: boolean,
  ) {
    ws.binaryType = "nodebuffer";
    this.closed = new Promise((resolve) =>
      ws.on("close", (code, reason) => {
        this.closeCode = code;
        this.closeReason = reason.toString();
        resolve(code);
      }),
    );
    ws.on("message", (data: Buffer, isBinary) => {
      if (isBinary) {
        this.output += data.toString("utf8");
        // Keep a bounded tail: a flood must not grow the test process either.
        if (this.output.length > OUTPUT_TAIL_CHARS) this.output = this.output.slice(-OUTPUT_TAIL_CHARS / 2);
        this.offset += data.length;
        this.largestFrame = Math.max(this.largestFrame, data.length);
        this.#unackedBytes += data.length;
        if (this.autoAck && this.#unackedBytes >= 1000) this.ack();
        return;
      }
      const message = JSON.parse(data.toString()) as Control;
      this.controls.push(message);
      if (message.type === "hello") this.instance = message.instance;
      if (message.type === "snapshot") {
        this.offset = message.offset;
        this.screen = message.data;
        this.output = "";
      } else if (message.type === "replay") {
        // Missed bytes follow as binary frames, starting at the offset the client sent.
        this.offset = message.from;
        this.screen = "";
        this.output = "";
      }
    });
  }

  /** Open `/ws/terminal/<id>` with the client's cookie. Resolves once open (or closed). */
  static async open(companionUrl: string, client: HttpClient | null, sessionId: string, options: OpenOptions = {}): Promise<TerminalClient> {
    const query = new URLSearchParams();
    if (options.since !== undefined) query.set("since", String(options.since));
    if (options.instance !== undefined) query.set("instance", options.instance);
    if (options.agentId) query.set("agentId", options.agentId);
    if (options.userId) query.set("userId", options.userId);
    const url = `${companionUrl.replace(/^http/, "ws")}/ws/terminal/${sessionId}${query.size ? `?${query}` : ""}`;
    const ws = new WebSocket(url, { headers: client?.cookies.size ? { cookie: client.cookieHeader } : {} });
    const terminal = new TerminalClient(ws, options.autoAck ?? true);
    await new Promise<void>((resolve) => {
      ws.once("open", () => resolve());
      ws.once("close", () => resolve());
      ws.once("error", () => resolve());
    });
    return terminal;
  }

  /** Send a JSON control frame. */
  send(message: Control): void {
    this.ws.send(JSON.stringify(message));
  }

  /** Type text into the session. */
  type(data: string): void {
    this.send({ type: "input", data });
  }

  /** Acknowledge everything received so far. */
  ack(): void {
    if (this.#unackedBytes === 0) return;
    this.send({ type: "ack", bytes: this.#unackedBytes });
    this.#unackedBytes = 0;
  }

  /** The first control message of a type, once it arrives. */
  control(type: string, predicate: (c: Control) => boolean = () => true, timeoutMs?: number): Promise<Control> {
    return waitFor(() => this.controls.find((c) => c.type === type && predicate(c)), `a "${type}" control message`, timeoutMs);
  }

  /** Wait until what the client shows (its last snapshot and the output since) contains `text`. */
  async sees(text: string | RegExp, timeoutMs?: number): Promise<void> {
    // What a widget shows: the last snapshot, then the output since (a line printed while a catch-up was on its way is in the snapshot).
    const shown = () => this.screen + this.output;
    await waitFor(() => (typeof text === "string" ? shown().includes(text) : text.test(shown())), `output matching ${text}`, timeoutMs);
  }

  /** Wait for the socket to close; resolves with the close code. */
  async closedWith(): Promise<number> {
    return this.closed;
  }

  close(): void {
    this.ws.close();
  }
}
