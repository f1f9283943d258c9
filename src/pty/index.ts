/** PTY sessions: processes, views, input screening, scratch dirs, the manager and reaper, exec. */
export { stripAnsi } from "./ansi.ts";
export { bunPtyBackend } from "./bun-pty-backend.ts";
export { bunTerminalBackend } from "./bun-terminal-backend.ts";
export { createCommandSpawner, spawnCommandUnconfined, spawnDetached, type CommandProcess, type CommandSpawner } from "./command-spawn.ts";
export type { ControlMessage, ViewSink } from "./control-message.ts";
export { buildSessionEnv, isSensitiveEnvName, SENSITIVE_ENV_PATTERNS } from "./environment.ts";
export { ACK_EVERY_BYTES, HIGH_WATERMARK_BYTES, LOW_WATERMARK_BYTES } from "./flow-control.ts";
export type { ConfineRequest, LaunchSpec, PtySpawner, SpawnedPty } from "./launch-spec.ts";
export { killMarkedProcesses, scratchMarks } from "./marked-processes.ts";
export { MAX_COLS, MAX_ROWS, MIN_COLS, MIN_ROWS, type PtyBackend, type PtyProcess } from "./pty-process.ts";
export { CLOSE_SESSION_ENDED, PtySession, type SessionInfo } from "./pty-session.ts";
export { createPtySpawner, type ConfinePlanner } from "./pty-spawner.ts";
export { execInSession, type ExecResult } from "./session-exec.ts";
export { SESSION_ID, type SessionKey, type SessionNamespace } from "./session-key.ts";
export { SessionManager, sessionNotFound, type SessionLimits } from "./session-manager.ts";
export { MAX_UNREAD_BYTES, MAX_VIEWS_PER_SESSION, type View } from "./session-views.ts";
export { COMMAND_TEXT_VARIABLE, shellCommand } from "./shell-command.ts";
export { defaultShellDeps, selectShell } from "./shell-selection.ts";
