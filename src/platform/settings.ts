import { eq } from "drizzle-orm";
import type { Db } from "../db/index.ts";
import { settings } from "../db/index.ts";
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

/** A setting as the API lists it. */
export interface SettingView {
  key: SettingKey;
  label: string;
  value: number;
  default: number;
  min: number;
  max: number;
  unit: string;
}

/** Admin-editable platform settings stored in the database. */
export class Settings {
  constructor(private readonly db: Db) {}

  /** Whether `key` names a setting. */
  static isKey(key: string): key is SettingKey {
    return Object.hasOwn(SETTINGS, key);
  }

  /** The current value (stored, else the default). Cheap enough to call per use. */
  get(key: SettingKey): number {
    const row = this.db.select({ value: settings.value }).from(settings).where(eq(settings.key, key)).get();
    return row ? (JSON.parse(row.value) as number) : SETTINGS[key].default;
  }

  /** Every setting with its value and bounds. */
  list(): SettingView[] {
    return (Object.keys(SETTINGS) as SettingKey[]).map((key) => ({ key, ...SETTINGS[key], value: this.get(key) }));
  }

  /** Validate then store: a bad value changes nothing. */
  set(key: string, value: unknown): SettingView {
    if (!Settings.isKey(key)) throw badRequest("unknown_setting", `Cannot set "${key}": no such setting`);
    const spec = SETTINGS[key];
    if (typeof value !== "number" || !Number.isInteger(value) || value < spec.min || value > spec.max) {
      throw badRequest("invalid_setting", `Cannot set "${key}": expected an integer from ${spec.min} to ${spec.max} ${spec.unit}`);
    }
    this.db
      .insert(settings)
      .values({ key, value: JSON.stringify(value), updatedAt: Date.now() })
      .onConflictDoUpdate({ target: settings.key, set: { value: JSON.stringify(value), updatedAt: Date.now() } })
      .run();
    return { key, ...spec, value };
  }
}
