import type { default as createOra, Ora } from 'ora';
import type { RejectionOut } from '@hookrelay/shared';
import {
  deliveryJson,
  formatAnswerPreview,
  formatDeliveryLine,
  formatGapText,
  formatLateSignatureLine,
  formatRejectionLine,
  formatResponseLines,
  formatStateLine,
  gapJson,
  rejectionJson,
  type GapReport,
} from '../format/listen.js';
import type { Style } from '../format/style.js';
import { terminalText } from '../format/text.js';
import { formatDuration } from './duration.js';
import type { HoldInfo } from './forwarder.js';
import type { DeliveryRecord, ListenerEvents, TransportName } from './ports.js';

export interface ListenOutputOptions {
  /** `--json`: deliveries as NDJSON on stdout; on stderr only warnings. */
  json: boolean;
  /** Colours of stderr. */
  style: Style;
  /**
   * Loads ora, for a spinner while connecting takes longer than SPINNER_DELAY_MS (stderr is a
   * terminal and not --json); no spinner without it.
   */
  loadSpinner?: () => Promise<typeof createOra>;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  apiUrl: string;
  /** The endpoint listened to, named in the fix a late signature's warning suggests. */
  endpointId?: string;
  /**
   * Names the endpoint in front of state lines and warnings, when one session listens to several
   * (`dev --verify`: its provider); delivery lines name the provider already.
   */
  label?: string | undefined;
  /** The target, or `N routes`. */
  target: string;
  /** Several routes: each line says which one took the message. */
  showTarget?: boolean;
  /** `--verbose`: the app's answer under each line. */
  verbose?: boolean;
  now?: () => Date;
}

/**
 * A connection made sooner shows no spinner: a spinner that flashes for a moment says nothing, and
 * ora (about 40 modules) then stays unloaded while `dev`'s server starts beside the CLI.
 */
export const SPINNER_DELAY_MS = 250;

/** Holding a message: say so at once, then about every 30 s, not at every retry. */
const HOLD_REPEAT_MS = 30_000;

/**
 * What `listen` shows. People get lines on stderr (and a spinner on a terminal); `--json` gets one
 * object per delivery on stdout and nothing else there, with warnings still on stderr.
 */
export class ListenOutput implements ListenerEvents {
  private spinnerInstance: Ora | undefined;
  /** What the spinner shows, or will once shown; undefined when it is stopped. */
  private spinnerText: string | undefined;
  private spinnerTimer: NodeJS.Timeout | undefined;
  private connecting_ = false;
  private holdShownAt = new Map<string, number>();

  constructor(private readonly options: ListenOutputOptions) {}

  private get style(): Style {
    return this.options.style;
  }

  private now(): Date {
    return this.options.now?.() ?? new Date();
  }

  private line(text: string, labelled = true): void {
    const label = labelled ? this.options.label : undefined;
    this.options.stderr.write(`${formatStateLine(label === undefined ? text : `${this.style.bold(label)}: ${text}`, this.style, this.now())}\n`);
  }

  /** Human-only information. */
  info(text: string): void {
    if (!this.options.json) this.line(text);
  }

  /** Shown under --json too. */
  warn(text: string): void {
    // Plain text that quotes the server (a close reason, an error): escaped whole.
    const safe = terminalText(text);
    if (this.options.json) this.options.stderr.write(`warning: ${this.options.label === undefined ? '' : `${this.options.label}: `}${safe}\n`);
    else this.line(`${this.style.yellow('warning:')} ${safe}`);
  }

  private spinner(text: string): void {
    const load = this.options.loadSpinner;
    if (load === undefined) return;
    this.spinnerText = text;
    if (this.spinnerInstance?.isSpinning === true) {
      this.spinnerInstance.text = text;
      return;
    }
    if (this.spinnerTimer !== undefined) return;
    this.spinnerTimer = setTimeout(() => {
      this.spinnerTimer = undefined;
      load().then(
        (ora) => {
          const shown = this.spinnerText;
          if (shown === undefined) return; // connected (or stopped) meanwhile
          this.spinnerInstance ??= ora({ stream: this.options.stderr as NodeJS.WriteStream, discardStdin: false, isEnabled: true });
          if (this.spinnerInstance.isSpinning) this.spinnerInstance.text = shown;
          else this.spinnerInstance.start(shown);
        },
        () => {}, // without ora (a broken install) no spinner; the connected line and the warnings still come
      );
    }, SPINNER_DELAY_MS);
    this.spinnerTimer.unref();
  }

  private stopSpinner(): void {
    this.spinnerText = undefined;
    if (this.spinnerTimer !== undefined) {
      clearTimeout(this.spinnerTimer);
      this.spinnerTimer = undefined;
    }
    if (this.spinnerInstance?.isSpinning === true) this.spinnerInstance.stop();
  }

  banner(lines: readonly string[]): void {
    if (this.options.json) return;
    for (const text of lines) this.options.stderr.write(`${text}\n`);
  }

  connecting(info: { transport: TransportName }): void {
    if (this.options.json || this.connecting_) return;
    this.connecting_ = true;
    const text = `connecting to ${this.options.apiUrl} (${info.transport})…`;
    if (this.options.loadSpinner !== undefined) this.spinner(text);
    else this.line(this.style.dim(text));
  }

  connected(info: { transport: TransportName; reconnect?: boolean }): void {
    this.connecting_ = false;
    if (this.options.json) return;
    this.stopSpinner();
    // Back after an outage: the gap's line says so, once what arrived meanwhile is forwarded.
    if (info.reconnect === true) return;
    this.line(`${this.style.green('connected')} (${info.transport}), forwarding to ${this.options.target}`);
  }

  disconnected(info: { transport: TransportName; reason: string }): void {
    this.warn(`disconnected (${info.transport}): ${info.reason}`);
  }

  reconnecting(info: { delayMs: number; reason: string }): void {
    if (this.options.json) return;
    const text = `reconnecting in ${formatDuration(info.delayMs)}`;
    const reason = terminalText(info.reason);
    if (this.options.loadSpinner !== undefined) this.spinner(`${text} (${reason})…`);
    else this.line(this.style.dim(`${text} (${reason})`));
  }

  fallback(info: { reason: string; retryWebSocketMs: number }): void {
    this.connecting_ = false;
    this.warn(`${info.reason}: falling back to polling (trying the WebSocket again in ${formatDuration(info.retryWebSocketMs)})`);
  }

  heartbeatMissing(info: { silentMs: number }): void {
    this.warn(`no heartbeat from the server for ${formatDuration(info.silentMs)}: the connection may be dead`);
  }

  delivery(record: DeliveryRecord): void {
    if (this.options.json) {
      this.options.stdout.write(`${JSON.stringify(deliveryJson(record))}\n`);
      return;
    }
    const at = this.now();
    const lines = [formatDeliveryLine(record, this.style, at, this.options.showTarget === true)];
    if (this.options.verbose === true) lines.push(...formatResponseLines(record, this.style));
    else {
      const preview = formatAnswerPreview(record, this.style);
      if (preview !== null) lines.push(preview);
    }
    const late = formatLateSignatureLine(record, this.style, at, this.options.endpointId ?? 'ENDPOINT-ID');
    if (late !== null) lines.push(late);
    this.options.stderr.write(`${lines.join('\n')}\n`);
  }

  /** A refused request: a line beside the deliveries, or a `type: "rejection"` object with --json. */
  rejected(rejection: RejectionOut): void {
    if (this.options.json) {
      this.options.stdout.write(`${JSON.stringify(rejectionJson(rejection))}\n`);
      return;
    }
    this.options.stderr.write(`${formatRejectionLine(rejection, this.style, new Date(rejection.received_at))}\n`);
  }

  paused(info: { paused: boolean; waiting: number }): void {
    if (info.paused) {
      this.info(`${this.style.yellow('paused')}: messages wait, in order (${info.waiting} waiting); p resumes`);
    } else {
      this.info(`${this.style.green('resumed')} (${info.waiting} waiting)`);
    }
  }

  /** The gap a lost connection left: a line, or a `type: "reconnected"` object with --json. */
  reconnected(report: GapReport): void {
    if (this.options.json) this.options.stdout.write(`${JSON.stringify(gapJson(report))}\n`);
    else this.line(formatGapText(report, this.style));
  }

  caughtUp(info: { count: number }): void {
    this.info(`${this.style.green('caught up')}: ${info.count} ${info.count === 1 ? 'message' : 'messages'} from the backlog forwarded`);
  }

  warning(text: string): void {
    this.warn(text);
  }

  holding(info: HoldInfo): void {
    const shownAt = this.holdShownAt.get(info.messageId);
    if (shownAt !== undefined && info.heldMs - shownAt < HOLD_REPEAT_MS) return;
    this.holdShownAt.set(info.messageId, info.heldMs);
    if (info.cause === 'body') {
      if (shownAt === undefined) this.warn(`cannot get the body of ${info.messageId} from the server (${info.error}): holding it and retrying, in order`);
      else this.warn(`still holding ${info.messageId}: its body has not come from the server for ${formatDuration(info.heldMs)} (${info.attempt} attempts)`);
    } else if (shownAt === undefined) {
      this.warn(`the local app at ${info.target} is not answering (${info.error}): holding ${info.messageId} and retrying, in order`);
    } else {
      this.warn(`still holding ${info.messageId}: the app has not answered for ${formatDuration(info.heldMs)} (${info.attempt} attempts)`);
    }
  }

  resumed(info: { messageId: string; heldMs: number }): void {
    this.holdShownAt.delete(info.messageId);
    this.info(`${this.style.green('the local app answered again')} after ${formatDuration(info.heldMs)}`);
  }

  /** The session's line, for all its listeners: never labelled. */
  stopping(): void {
    this.stopSpinner();
    if (!this.options.json) this.line(this.style.dim('stopping after the delivery in flight… (press Ctrl-C again to quit at once)'), false);
  }

  /** Stops the spinner: its timer would otherwise keep the process alive. */
  close(): void {
    this.stopSpinner();
  }

  stopped(text: string): void {
    this.stopSpinner();
    this.info(terminalText(text));
  }
}
