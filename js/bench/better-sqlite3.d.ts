/** The part of better-sqlite3's API the bench's D1 shim uses (the package ships no types). */
declare module "better-sqlite3" {
  export interface RunResult {
    readonly changes: number;
    readonly lastInsertRowid: number | bigint;
  }
  export interface Statement {
    /** True when the statement returns rows (a SELECT, or RETURNING). */
    readonly reader: boolean;
    run(...params: unknown[]): RunResult;
    get(...params: unknown[]): unknown;
    all(...params: unknown[]): unknown[];
    raw(toggle?: boolean): Statement;
  }
  export interface Connection {
    prepare(sql: string): Statement;
    exec(sql: string): Database;
    transaction<T>(fn: () => T): () => T;
    close(): void;
  }
  const Database: new (filename: string) => Connection;
  export default Database;
}
