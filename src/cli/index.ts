/** The CLI's command tables and runner; `src/cli.ts` is the executable. */
export { adminCommands } from "./admin-commands.ts";
export { auditCommands } from "./audit-commands.ts";
export { sourceCommands } from "./source-commands.ts";
export { UsageError, type Command, type CommandContext } from "./command.ts";
export { EXIT, runCli, type CliIo } from "./run-cli.ts";
export { workflowCommands } from "./workflow-commands.ts";
