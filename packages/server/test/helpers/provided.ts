declare module 'vitest' {
  export interface ProvidedContext {
    backend: 'postgres' | 'pglite';
    postgresUrl: string;
    /** The cluster's Unix-socket directory ('' on PGlite). */
    postgresSocketDir: string;
    templateDatabase: string;
    pgliteTemplatePath: string;
  }
}
export {};
