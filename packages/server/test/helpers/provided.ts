declare module 'vitest' {
  export interface ProvidedContext {
    backend: 'postgres' | 'pglite';
    postgresUrl: string;
    templateDatabase: string;
    pgliteTemplatePath: string;
  }
}
export {};
