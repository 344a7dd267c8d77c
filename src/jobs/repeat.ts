/**
 * Runs `job` every `intervalSeconds` in the background (it must catch its own failures); returns the
 * function that stops it and waits for a run under way. The next run is timed from the end of the
 * previous one, so runs never overlap however long one takes (a big backlog, a slow database).
 */
export function repeat(intervalSeconds: number, job: () => Promise<void>): () => Promise<void> {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();

  async function run() {
    await job();
    if (!stopped) schedule();
  }
  function schedule() {
    timer = setTimeout(() => {
      running = run();
    }, intervalSeconds * 1000);
    timer.unref();
  }

  schedule();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}
