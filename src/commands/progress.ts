// One progress display for long-running commands (demo, import): a live bar on a terminal, and
// plain periodic lines elsewhere (CI logs, pipes, files), where a redrawn bar would be noise.
import cliProgress from 'cli-progress';

export interface ProgressOptions {
  /** e.g. "synced", "imported". */
  label: string;
  total: number;
  /** e.g. "batches", "rows". */
  unit: string;
  stream?: NodeJS.WriteStream;
  /** Force the bar (true) or plain lines (false); default: the bar when `stream` is a terminal. */
  tty?: boolean;
  /** Plain mode prints at most one line per this many ms (the final line always prints). */
  intervalMs?: number;
}

export interface Progress {
  /** `counters` are shown after the count in the order given, e.g. { retries: 2, failed: 0 }. */
  update(done: number, counters?: Record<string, number>, total?: number): void;
  /** Draws the final state and releases the terminal. Safe to call twice. */
  stop(): void;
}

export function createProgress(options: ProgressOptions): Progress {
  const stream = options.stream ?? process.stdout;
  const tty = options.tty ?? stream.isTTY === true;
  return tty ? barProgress(options, stream) : lineProgress(options, stream);
}

function describe(counters: Record<string, number>): string {
  return Object.entries(counters)
    .map(([name, n]) => ` · ${name} ${n}`)
    .join('');
}

function barProgress(options: ProgressOptions, stream: NodeJS.WriteStream): Progress {
  const bar = new cliProgress.SingleBar(
    {
      format: `${options.label} |{bar}| {value}/{total} ${options.unit}{counters} · {duration_formatted}`,
      stream,
      barsize: 30,
      hideCursor: true,
      clearOnComplete: false,
      stopOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(options.total, 0, { counters: '' });
  let stopped = false;
  return {
    update(done, counters = {}, total) {
      if (stopped) return;
      if (total !== undefined) bar.setTotal(total);
      bar.update(done, { counters: describe(counters) });
    },
    stop() {
      if (stopped) return;
      stopped = true;
      bar.stop();
    },
  };
}

function lineProgress(options: ProgressOptions, stream: NodeJS.WriteStream): Progress {
  const every = options.intervalMs ?? 2_000;
  const started = Date.now();
  let total = options.total;
  let last = { line: '', at: 0 };
  let current = '';
  let stopped = false;
  const print = (line: string) => {
    last = { line, at: Date.now() };
    stream.write(`${line} (${((Date.now() - started) / 1000).toFixed(1)} s)\n`);
  };
  return {
    update(done, counters = {}, newTotal) {
      if (stopped) return;
      total = newTotal ?? total;
      current = `${options.label} ${done}/${total} ${options.unit}${describe(counters)}`;
      if (current !== last.line && Date.now() - last.at >= every) print(current);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      if (current && current !== last.line) print(current);
    },
  };
}
