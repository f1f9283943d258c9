/**
 * Whether `error` is SQLite refusing a row that repeats a unique key. A check
 * before an insert cannot rule that out: another process (the CLI beside the
 * server) or an await between the two can insert the same key first.
 */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY";
}
