import { ExitCode } from './exit-codes.js';

export interface StopSignalsOptions {
  /** The signals that stop the command. */
  signals?: readonly NodeJS.Signals[];
  /** How a second signal ends the process (injected in tests). */
  exit?: (code: number) => void;
}

/**
 * Ctrl-C for long-running commands (`listen`, `dev`, `inbound logs --follow`): the first signal asks
 * the command to stop cleanly (its `signal` aborts and the `onStop` hooks run), a second one quits at
 * once with exit 130 after the `onQuit` hooks (stop a spinner, stop a child process).
 */
export class StopSignals {
  private readonly controller = new AbortController();
  private readonly signals: readonly NodeJS.Signals[];
  private readonly exit: (code: number) => void;
  private readonly stopHooks = new Set<() => void>();
  private readonly quitHooks = new Set<() => void>();
  private count = 0;
  private installed = false;
  private readonly handler = (): void => this.trigger();

  constructor(options: StopSignalsOptions = {}) {
    this.signals = options.signals ?? ['SIGINT', 'SIGTERM'];
    this.exit = options.exit ?? ((code) => process.exit(code));
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get stopping(): boolean {
    return this.controller.signal.aborted;
  }

  install(): this {
    if (!this.installed) {
      this.installed = true;
      for (const name of this.signals) process.on(name, this.handler);
    }
    return this;
  }

  dispose(): void {
    if (!this.installed) return;
    this.installed = false;
    for (const name of this.signals) process.off(name, this.handler);
  }

  /** Runs at the first signal (at once when it already came); returns the unsubscribe function. */
  onStop(hook: () => void): () => void {
    if (this.count > 0) hook();
    else this.stopHooks.add(hook);
    return () => this.stopHooks.delete(hook);
  }

  /** Runs at the second signal, just before the process exits with 130. */
  onQuit(hook: () => void): () => void {
    this.quitHooks.add(hook);
    return () => this.quitHooks.delete(hook);
  }

  /** What a signal does; also a programmatic stop (`trigger()` once is a clean stop). */
  trigger(): void {
    this.count += 1;
    if (this.count === 1) {
      for (const hook of [...this.stopHooks]) hook();
      this.controller.abort();
      return;
    }
    for (const hook of [...this.quitHooks]) {
      try {
        hook();
      } catch {
        // Quitting anyway.
      }
    }
    this.exit(ExitCode.INTERRUPTED);
  }
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export function sleepUnlessStopped(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
