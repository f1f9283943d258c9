/** Storage: the drizzle schema and the one database handle. */
export { openDatabase, type Db, type OpenDatabase } from "./database.ts";
export * from "./schema.ts";
