import { createInterface } from 'node:readline/promises';
import { Writable } from 'node:stream';
import { CliErrorCode, CliFailure } from './errors.js';
import { ExitCode } from './exit-codes.js';

/** Where prompts read and write: stdin and stderr, so that stdout stays for the command's output. */
export interface PromptStreams {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
}

export interface AskOptions {
  /** Shown in brackets and returned when the answer is empty. */
  defaultValue?: string;
  /** Do not echo what is typed (API keys). */
  hidden?: boolean;
}

/** Ask one question on a terminal. Ctrl-C or end of input stops the command (exit 130). */
export async function ask(streams: PromptStreams, question: string, options: AskOptions = {}): Promise<string> {
  let muted = false;
  const echo = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      if (!muted) streams.output.write(chunk);
      callback();
    },
  });
  const rl = createInterface({ input: streams.input, output: echo, terminal: true });
  const abort = new AbortController();
  rl.on('SIGINT', () => abort.abort());
  rl.on('close', () => abort.abort());
  const suffix = options.defaultValue !== undefined && options.defaultValue !== '' ? ` [${options.defaultValue}]` : '';
  try {
    const pending = rl.question(`${question}${suffix}: `, { signal: abort.signal });
    // The prompt is written synchronously by question(); only what is typed afterwards is hidden.
    muted = options.hidden === true;
    const answer = (await pending).trim();
    return answer === '' ? (options.defaultValue ?? '') : answer;
  } catch (error) {
    if (abort.signal.aborted) {
      throw new CliFailure(CliErrorCode.INTERRUPTED, 'interrupted', ExitCode.INTERRUPTED);
    }
    throw error;
  } finally {
    if (muted) streams.output.write('\n');
    rl.close();
  }
}

/** A yes/no question; only "y" or "yes" means yes. */
export async function confirm(streams: PromptStreams, question: string): Promise<boolean> {
  const answer = await ask(streams, `${question} (y/N)`);
  return /^y(es)?$/iu.test(answer);
}
