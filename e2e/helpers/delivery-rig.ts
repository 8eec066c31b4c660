import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseJsonOutput, runCli, type CliResult } from './cli.js';
import { expectSuccess } from './expect-cli.js';
import { startHttpsReceiver, type HttpsReceiver } from './https-receiver.js';
import { startServer, type RunningServer } from './server.js';

/** The real server delivering outbound messages to a local HTTPS receiver, and a scratch dir for files. */
export interface DeliveryRig {
  server: RunningServer;
  receiver: HttpsReceiver;
  /** The CLI's environment for the server: its URL and key. */
  env: Record<string, string>;
  workDir: string;
  /** The built CLI with `env`, `input` on its stdin. */
  cli(args: readonly string[], input?: string): Promise<CliResult>;
  /** The CLI with `--json`, which must succeed: its output parsed. */
  json<T>(args: readonly string[], input?: string): Promise<T>;
  stop(): Promise<void>;
}

/**
 * The server with private addresses allowed and the receiver's certificate trusted, and one retry an
 * hour after a failure, so that a failed message stays in pending_retry for the test; `serverEnv`
 * adds to its settings.
 */
export async function startDeliveryRig(name: string, serverEnv: Record<string, string> = {}): Promise<DeliveryRig> {
  const receiver = await startHttpsReceiver();
  const server = await startServer({
    env: { HOOKRELAY_ALLOW_PRIVATE_NETWORKS: 'true', HOOKRELAY_TLS_CA_FILE: receiver.caFile, HOOKRELAY_RETRY_SCHEDULE: '3600', ...serverEnv },
  }).catch(async (error: unknown) => {
    await receiver.stop();
    throw error;
  });
  const workDir = await mkdtemp(join(tmpdir(), `hookrelay-e2e-${name}-`));
  const env = { HOOKRELAY_API_URL: server.url, HOOKRELAY_API_KEY: server.apiKey };
  const cli = (args: readonly string[], input?: string): Promise<CliResult> => runCli(args, input === undefined ? { env } : { env, input });
  return {
    server,
    receiver,
    env,
    workDir,
    cli,
    json: async <T>(args: readonly string[], input?: string): Promise<T> => {
      const result = await cli([...args, '--json'], input);
      expectSuccess(result);
      return parseJsonOutput<T>(result);
    },
    stop: async () => {
      await server.stop();
      await receiver.stop();
      await rm(workDir, { recursive: true, force: true });
    },
  };
}
