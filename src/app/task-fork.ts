/**
 * How the worker starts a task process (`icefloe task`, app.ts startTaskProcess): its V8 flags and its
 * environment, each tuned by measurement for a task's memory (docs/benchmarks.md, memory) and each left
 * to the user when they set it themselves.
 */

/** The options of child_process.fork for a task process. */
export function taskForkOptions(): { readonly execArgv: string[]; readonly env: NodeJS.ProcessEnv } {
  return { execArgv: execArgv(), env: env() };
}

/**
 * V8 flags of a task process. A task allocates short-lived objects at a high rate (a record, its key and
 * value views per message), and V8 grows the young generation's semi-spaces to their maximum under that
 * load, a reservation it keeps: measured, 166–184 MiB of heap for 46–77 MiB in use at the task's peak RSS.
 * Semi-spaces of 8 MiB keep the heap near what is in use, at no CPU cost we could measure
 * (docs/benchmarks.md, memory). NODE_OPTIONS that set it win.
 */
function execArgv(): string[] {
  const own = (process.env['NODE_OPTIONS'] ?? '').includes('--max-semi-space-size');
  return own ? process.execArgv : [...process.execArgv, `--max-semi-space-size=${TASK_SEMI_SPACE_MIB}`];
}
const TASK_SEMI_SPACE_MIB = 8;

/**
 * A task's environment: the worker's, plus glibc's mmap threshold fixed at its 128 KiB default unless set.
 * glibc raises the threshold to the size of every mmapped block freed (up to 32 MiB), after which the
 * consumer's batch blocks (about 1 MiB each, freed when the GC collects their Buffer) and librdkafka's
 * fetch buffers come from the heap arenas, which fragment and keep the pages: measured, 50–60 MiB of the
 * task's peak RSS (docs/benchmarks.md, memory). Other C libraries ignore the variable.
 */
function env(): NodeJS.ProcessEnv {
  return { ...process.env, MALLOC_MMAP_THRESHOLD_: process.env['MALLOC_MMAP_THRESHOLD_'] ?? '131072' };
}

