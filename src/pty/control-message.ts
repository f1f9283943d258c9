/** JSON text frames the server sends on a terminal WebSocket (binary frames carry output). */
export type ControlMessage =
  | { type: "hello"; viewId: string; sessionId: string; instance: string; readOnly: boolean; cols: number; rows: number; scrollback: number }
  | { type: "snapshot"; data: string; cols: number; rows: number; offset: number; fullScreen: boolean }
  | { type: "replay"; from: number; to: number }
  | { type: "readOnly" }
  | { type: "lease"; viewId: string | null; userId: string | null; you: boolean }
  | { type: "resize"; cols: number; rows: number }
  | { type: "blocked"; reason: string }
  /** Seconds until an idle reap; null withdraws an earlier countdown (activity came, or the session is watched past its limit). */
  | { type: "countdown"; secondsLeft: number | null }
  | { type: "notice"; message: string }
  | { type: "fullScreen"; active: boolean }
  | { type: "exit"; code: number | null; reason: string };

/** Where a view's frames go: the terminal edge implements it over a WebSocket. */
export interface ViewSink {
  /** Raw PTY output bytes (a binary frame). */
  output(bytes: Uint8Array): void;
  /** A control message (a JSON text frame). */
  control(message: ControlMessage): void;
  /** Close the connection with a WebSocket close code. */
  close(code: number, reason: string): void;
  /** Bytes the connection holds that have not yet left this server (a WebSocket's bufferedAmount). */
  buffered(): number;
}
