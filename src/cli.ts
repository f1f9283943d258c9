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
    // Every signal waits for the one stop: a supervisor's SIGTERM during a Ctrl+C's stop, or npm passing on the
    // SIGINT the terminal already sent, must neither exit early nor fall back to the default (instant) death.
    const shutdown = async () => {
      await hatch.stop();
      process.exit(0);
    };
    // SIGHUP too: the terminal or ssh session running hatch in the foreground closed, which must not kill it on the spot.
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, shutdown);
    await new Promise(() => {});
  },
});
process.exit(code);
