// Optional instrumentation, preloaded with `--import` into a benchmarked node process (the CLI or
// the server in bench/listen.mjs); it changes no product code. It samples the event loop
// (utilisation, and delay beyond a 10 ms tick) and V8's GC pauses, and on SIGUSR2 writes the
// figures since the previous SIGUSR2 to $HOOKRELAY_BENCH_LOOP_STATS (JSON), then resets them.
import { writeFileSync } from 'node:fs';
import { PerformanceObserver, monitorEventLoopDelay, performance } from 'node:perf_hooks';

const out = process.env.HOOKRELAY_BENCH_LOOP_STATS;
if (out) {
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  let elu = performance.eventLoopUtilization();
  let since = performance.now();
  let gc = { count: 0, ms: 0, maxMs: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gc.count += 1;
      gc.ms += entry.duration;
      gc.maxMs = Math.max(gc.maxMs, entry.duration);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  process.on('SIGUSR2', () => {
    const now = performance.now();
    const used = performance.eventLoopUtilization(elu);
    // The histogram holds whole intervals between ticks: the delay is what exceeds the 10 ms tick.
    const ms = (ns) => Math.max(0, ns / 1e6 - 10);
    writeFileSync(
      out,
      JSON.stringify({
        wallMs: now - since,
        utilization: used.utilization,
        delayP50Ms: ms(loopDelay.percentile(50)),
        delayP99Ms: ms(loopDelay.percentile(99)),
        delayMaxMs: ms(loopDelay.max),
        gc,
      }),
    );
    loopDelay.reset();
    elu = performance.eventLoopUtilization();
    since = now;
    gc = { count: 0, ms: 0, maxMs: 0 };
  });
}
