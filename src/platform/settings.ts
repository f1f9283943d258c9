import { and, eq } from "drizzle-orm";
import type { Db } from "../db/index.ts";
import { projectSettings, settings } from "../db/index.ts";
import { badRequest } from "./errors.ts";

/** One admin-editable setting: its default and the range that is not absurd. */
interface SettingSpec {
  label: string;
  default: number;
  min: number;
  max: number;
  unit: string;
}

/**
 * The platform settings, read at use time (next create, exec, sweep or fire).
 * Defaults are the ones DESIGN.md records.
 */
export const SETTINGS = {
  terminalMaxSessions: { label: "Terminal: Max Sessions", default: 8, min: 1, max: 256, unit: "sessions" },
  terminalScrollbackLines: { label: "Terminal: Scrollback Lines", default: 10_000, min: 100, max: 100_000, unit: "lines" },
  terminalExecTimeoutSeconds: { label: "Terminal: Exec Timeout", default: 30, min: 1, max: 3600, unit: "seconds" },
  terminalExecOutputCapBytes: { label: "Terminal: Exec Output Cap", default: 65_536, min: 1024, max: 16 * 1024 * 1024, unit: "bytes" },
  terminalIdleShutdownMinutes: { label: "Terminal: Idle Shutdown", default: 60, min: 1, max: 7 * 24 * 60, unit: "minutes" },
  channelInboundFiresPerMinute: { label: "Channels: inbound fires per minute (0 disables)", default: 30, min: 0, max: 10_000, unit: "fires" },
} as const satisfies Record<string, SettingSpec>;

/** A setting key. */
export type SettingKey = keyof typeof SETTINGS;

/** Where a setting's value in force is set: the project's own, the server-wide one, or none (the default). */
export type SettingScope = "project" | "server" | "default";

/** A setting as the API lists it. */
export interface SettingView {
  key: SettingKey;
  label: string;
  value: number;
  /** Where `value` comes from. */
  scope: SettingScope;
  default: number;
  min: number;
  max: number;
  unit: string;
}

/**
 * The platform settings stored in the database, at two levels: a server-wide
 * value (the operator's, by the CLI) and a project's own value over it (its
 * owners' and admins'). Each project's admins thus tune their own project and
 * nobody else's: one project's admin cannot reap another project's sessions
 * early or shrink its limits. `projectId: null` means the server-wide level.
 */
export class Settings {
  constructor(private readonly db: Db) {}

  /** Whether `key` names a setting. */
  static isKey(key: string): key is SettingKey {
    return Object.hasOwn(SETTINGS, key);
  }

  /** The value in force (the project's, else the server-wide one, else the default). Cheap enough to call per use. */
  get(key: SettingKey, projectId: string | null): number {
    return this.#resolve(key, projectId).value;
  }

  /** Every setting with its value in force, where that is set, and its bounds. */
  list(projectId: string | null): SettingView[] {
    return (Object.keys(SETTINGS) as SettingKey[]).map((key) => this.#view(key, projectId));
  }

  /** Validate, then store at the project's level (or server-wide): a bad value changes nothing. */
  set(key: string, value: unknown, projectId: string | null): SettingView {
    const known = requireKey(key);
    const spec = SETTINGS[known];
    if (typeof value !== "number" || !Number.isInteger(value) || value < spec.min || value > spec.max) {
      throw badRequest("invalid_setting", `Cannot set "${key}": expected an integer from ${spec.min} to ${spec.max} ${spec.unit}`);
    }
    const stored = { value: JSON.stringify(value), updatedAt: Date.now() };
    if (projectId === null) {
      this.db.insert(settings).values({ key: known, ...stored }).onConflictDoUpdate({ target: settings.key, set: stored }).run();
    } else {
      this.db
        .insert(projectSettings)
        .values({ projectId, key: known, ...stored })
        .onConflictDoUpdate({ target: [projectSettings.projectId, projectSettings.key], set: stored })
        .run();
    }
    return this.#view(known, projectId);
  }

  /**
   * Drop the value stored at the project's level (or server-wide), so the next
   * level applies: the setting as it is then, and whether a value was dropped.
   */
  clear(key: string, projectId: string | null): { setting: SettingView; cleared: boolean } {
    const known = requireKey(key);
    const dropped =
      projectId === null
        ? this.db.delete(settings).where(eq(settings.key, known)).returning({ key: settings.key }).all()
        : this.db.delete(projectSettings).where(and(eq(projectSettings.projectId, projectId), eq(projectSettings.key, known))).returning({ key: projectSettings.key }).all();
    return { setting: this.#view(known, projectId), cleared: dropped.length > 0 };
  }

  #view(key: SettingKey, projectId: string | null): SettingView {
    const { label, default: fallback, min, max, unit } = SETTINGS[key];
    return { key, label, ...this.#resolve(key, projectId), default: fallback, min, max, unit };
  }

  #resolve(key: SettingKey, projectId: string | null): { value: number; scope: SettingScope } {
    if (projectId !== null) {
      const own = this.db
        .select({ value: projectSettings.value })
        .from(projectSettings)
        .where(and(eq(projectSettings.projectId, projectId), eq(projectSettings.key, key)))
        .get();
      if (own) return { value: JSON.parse(own.value) as number, scope: "project" };
    }
    const server = this.db.select({ value: settings.value }).from(settings).where(eq(settings.key, key)).get();
    return server ? { value: JSON.parse(server.value) as number, scope: "server" } : { value: SETTINGS[key].default, scope: "default" };
  }
}

function requireKey(key: string): SettingKey {
  if (!Settings.isKey(key)) throw badRequest("unknown_setting", `Cannot set "${key}": no such setting`);
  return key;
}
