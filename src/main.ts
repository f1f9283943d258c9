import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { createApp } from "./app.ts";
import type { HatchConfig } from "./config.ts";
import { openDatabase, type OpenDatabase } from "./db/index.ts";
import { createPlatform, loadSecretKey, platformRoutes, type Platform } from "./platform/index.ts";
import { startCompanionServer, terminalRoutes, type CompanionServer } from "./terminal/index.ts";

/** A running hatch: both servers, the platform, and one stop for all of it. */
export interface Hatch {
  platform: Platform;
  /** The raw SQLite handle, for operators' tooling and tests that inspect storage. */
  sqlite: OpenDatabase["sqlite"];
  /** Base URL of the web host, e.g. http://127.0.0.1:3100 */
  url: string;
  /** Base URL of the companion server (terminal WebSocket). */
  companionUrl: string;
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Name of the SQLite file inside the data dir. */
export const DATABASE_FILE = "hatch.db";

/**
 * The composition root: config -> database -> platform -> parts -> app -> listen.
 * Everything is built here and passed down; nothing below reads the environment.
 */
export async function startHatch(config: HatchConfig): Promise<Hatch> {
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const database = openDatabase(join(config.dataDir, DATABASE_FILE));
  const platform = createPlatform({
    db: database.db,
    secretKey: await loadSecretKey(config),
    sessionTtlMs: config.sessionTtlHours * 3600_000,
  });
  const app = createApp({
    routes: [platformRoutes(platform), terminalRoutes({ platform, sessionCount: () => 0 })],
  });
  const web = app.listen({ port: config.port, hostname: config.host });
  let companion: CompanionServer;
  try {
    companion = await startCompanionServer({ port: config.companionPort, host: config.host });
  } catch (error) {
    await web.stop(true);
    database.close();
    throw error;
  }
  const stop = async () => {
    await companion.close();
    await web.stop(true);
    database.close();
  };
  return {
    platform,
    sqlite: database.sqlite,
    url: `http://${displayHost(config.host)}:${web.server!.port}`,
    companionUrl: `http://${displayHost(config.host)}:${companion.port}`,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

function displayHost(host: string): string {
  return host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
}
