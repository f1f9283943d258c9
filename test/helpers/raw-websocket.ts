import { connect, type Socket } from "node:net";
import { randomBytes } from "node:crypto";

/** How much of the binary frames' text a RawWebSocket keeps. */
const TAIL_CHARS = 64 * 1024;

/**
 * A WebSocket client written on a bare TCP socket (RFC 6455, no extensions), for
 * what a well-behaved client library will not do: stop reading while it keeps
 * writing. Frames are parsed only while reading is on.
 */
export class RawWebSocket {
  /** The text frames parsed so far. */
  readonly texts: string[] = [];
  /** The end of the binary frames' text (a bounded tail). */
  tail = "";
  /** Payload bytes of every frame parsed so far (binary and text). */
  receivedBytes = 0;
  /** Payload bytes of the binary frames parsed so far. */
  binaryBytes = 0;
  /** The code of the server's close frame, once one is parsed. */
  closeCode: number | null = null;
  #pending: Buffer = Buffer.alloc(0);

  private constructor(private readonly socket: Socket) {
    socket.on("data", (chunk: Buffer) => this.#parse(chunk));
  }

  /** Connect and complete the opening handshake; `headers` such as a cookie go on the upgrade request. */
  static open(url: string, headers: Record<string, string> = {}): Promise<RawWebSocket> {
    const { hostname, port, pathname, search } = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => {
        const lines = [
          `GET ${pathname}${search} HTTP/1.1`,
          `Host: ${hostname}:${port}`,
          "Upgrade: websocket",
          "Connection: Upgrade",
          `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}`,
          "Sec-WebSocket-Version: 13",
          ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
        ];
        socket.write(`${lines.join("\r\n")}\r\n\r\n`);
      });
      let head = Buffer.alloc(0);
      const onHead = (chunk: Buffer) => {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf("\r\n\r\n");
        if (end < 0) return;
        socket.off("data", onHead);
        socket.off("error", reject);
        if (!head.subarray(0, end).toString().startsWith("HTTP/1.1 101")) {
          socket.destroy();
          reject(new Error(`upgrade refused: ${head.subarray(0, end).toString().split("\r\n")[0]}`));
          return;
        }
        const client = new RawWebSocket(socket);
        client.#parse(head.subarray(end + 4));
        resolve(client);
      };
      socket.on("data", onHead);
      socket.once("error", reject);
    });
  }

  /** Stop reading: the server's frames pile up in the kernel, then in the server. */
  pause(): void {
    this.socket.pause();
  }

  /** Read again. */
  resume(): void {
    this.socket.resume();
  }

  /** Send a text frame (masked, as a client must); a Buffer is sent as it is, even if it is not UTF-8. */
  sendText(text: string | Buffer): void {
    this.socket.write(textFrame(text));
  }

  /** Send text frames in one write, so the server reads them in one chunk and handles them in one tick. */
  sendTexts(texts: (string | Buffer)[]): void {
    this.socket.write(Buffer.concat(texts.map(textFrame)));
  }

  /** Drop the connection. */
  destroy(): void {
    this.socket.destroy();
  }

  #parse(chunk: Buffer): void {
    this.#pending = this.#pending.length ? Buffer.concat([this.#pending, chunk]) : chunk;
    for (;;) {
      const frame = this.#pending;
      if (frame.length < 2) return;
      const opcode = frame[0]! & 0x0f;
      let length = frame[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (frame.length < 4) return;
        length = frame.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (frame.length < 10) return;
        length = Number(frame.readBigUInt64BE(2));
        offset = 10;
      }
      if (frame.length < offset + length) return;
      const payload = frame.subarray(offset, offset + length);
      this.#pending = frame.subarray(offset + length);
      this.receivedBytes += length;
      // Continuation frames are not expected from this server (it sends whole messages).
      if (opcode === 0x1) this.texts.push(payload.toString());
      if (opcode === 0x8 && payload.length >= 2) this.closeCode = payload.readUInt16BE(0);
      if (opcode !== 0x2) continue;
      this.binaryBytes += length;
      this.tail = (this.tail + payload.toString()).slice(-TAIL_CHARS);
    }
  }
}

/** A masked text frame, as a client sends it (payloads under 64 KiB). */
function textFrame(text: string | Buffer): Buffer {
  const payload = Buffer.from(text);
  const mask = randomBytes(4);
  const length = payload.length;
  const header = length < 126 ? Buffer.from([0x81, 0x80 | length]) : Buffer.from([0x81, 0x80 | 126, length >> 8, length & 0xff]);
  if (length > 0xffff) throw new Error("RawWebSocket sends frames under 64 KiB only");
  for (let i = 0; i < length; i++) payload[i]! ^= mask[i % 4]!;
  return Buffer.concat([header, mask, payload]);
}
