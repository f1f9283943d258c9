/** Storage: the drizzle schema, the one database handle, and the group commit for writes on a hot path. */
export { DATABASE_FILE, openDataDir } from "./data-dir.ts";
export { openDatabase, type Db, type OpenDatabase } from "./database.ts";
export { claimDataDir, type ServerClaim } from "./server-claim.ts";
export { isUniqueViolation } from "./unique-violation.ts";
export { GroupCommit, MAX_GROUP_COMMIT_WRITES, type GroupCommitOptions, type GroupCommitStats } from "./group-commit.ts";
export * from "./schema.ts";
