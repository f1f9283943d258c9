#!/usr/bin/env bun
/** The `hatch` CLI: `serve`, the admin commands (sources and the audit log included) and the workflow commands. */
import { adminCommands, auditCommands, runCli, sourceCommands, workflowCommands } from "./cli/index.ts";
import { startHatch } from "./main.ts";

const commands = [...adminCommands, ...auditCommands, ...sourceCommands, ...workflowCommands];

const code = await runCli(process.argv.slice(2), commands, {
  stdin: () => Bun.stdin.text(),
  serve: async (config) => {
    const hatch = await startHatch(config);
    console.log(`hatch: web host on ${hatch.url}, companion (terminal WebSocket) on ${hatch.companionUrl}, data in ${config.dataDir}`);
    const shutdown = async () => {
      await hatch.stop();
      process.exit(0);
    };
    process.once("SIGINT", shutdown);
    process.once("SIGTERM", shutdown);
    await new Promise(() => {});
  },
});
process.exit(code);
