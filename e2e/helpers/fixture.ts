import { rm } from 'node:fs/promises';
import { afterEach } from 'vitest';
import { makeConfigDir } from './cli.js';
import { LocalApp, startCli, type ListenProcess } from './listen.js';

export interface TestResources {
  /** Runs `cleanup` after the current test (last registered first). */
  defer(cleanup: () => Promise<unknown> | void): void;
  /** A CLI config dir of its own, removed after the test. */
  configDir(): Promise<string>;
  /** A local HTTP app that records what it receives, stopped after the test. */
  localApp(...args: Parameters<typeof LocalApp.start>): Promise<LocalApp>;
  /** `hookrelay listen <args>` with `env` (in `cwd`, default the repository root), killed after the test. */
  listen(args: string[], configDir: string, env: Record<string, string>, cwd?: string): ListenProcess;
  /** Runs what is still deferred now (a file's afterAll, before it stops its servers). */
  cleanup(): Promise<void>;
}

/**
 * What the e2e files of the listen workflow set up in every test — config dirs, local apps,
 * listeners — each undone after its test. Call it once at the top of a file: it registers the
 * afterEach hook.
 */
export function testResources(): TestResources {
  const cleanups: (() => Promise<unknown> | void)[] = [];
  const cleanup = async (): Promise<void> => {
    for (const fn of cleanups.splice(0).reverse()) await fn();
  };
  afterEach(cleanup);
  const defer = (fn: () => Promise<unknown> | void): void => void cleanups.push(fn);
  return {
    defer,
    cleanup,
    async configDir() {
      const dir = await makeConfigDir();
      defer(() => rm(dir, { recursive: true, force: true }));
      return dir;
    },
    async localApp(...args) {
      const app = await LocalApp.start(...args);
      defer(() => app.stop());
      return app;
    },
    listen(args, configDir, env, cwd) {
      const cli = startCli(['listen', ...args], { env, configDir, ...(cwd === undefined ? {} : { cwd }) });
      defer(() => cli.kill());
      return cli;
    },
  };
}
