/**
 * The order-event generator for the benchmark, from whichever tree the benchmark runs in: tools/generate/
 * (the generator as a tool, its composition in index.ts) or, in trees before it moved there (45caa8e and
 * older), src/app.ts (runGenerate) and src/generate/orders.ts. A before/after comparison runs this same
 * script in both trees (docs/benchmarks.md, "Before and after").
 */
import { existsSync } from 'node:fs';
import type { GenerateStats, OrderGenerator, RunGenerateOptions, orderAvroSchema, orderEncoder } from '../../tools/generate/index.ts';

export type { GenerateStats, RunGenerateOptions };

/** What the benchmark uses of the generator. */
export interface Generator {
  readonly runGenerate: (options: RunGenerateOptions) => Promise<GenerateStats>;
  readonly OrderGenerator: typeof OrderGenerator;
  readonly orderAvroSchema: typeof orderAvroSchema;
  readonly orderEncoder: typeof orderEncoder;
}

const root = new URL('../../', import.meta.url);

export async function loadGenerator(): Promise<Generator> {
  if (existsSync(new URL('tools/generate/index.ts', root))) return import('../../tools/generate/index.ts');
  // The older layout. Paths through URLs: the type checker of the newer tree must not look for them.
  const app = (await import(new URL('src/app.ts', root).href)) as Pick<Generator, 'runGenerate'>;
  const orders = (await import(new URL('src/generate/orders.ts', root).href)) as Omit<Generator, 'runGenerate'>;
  return { runGenerate: app.runGenerate, OrderGenerator: orders.OrderGenerator, orderAvroSchema: orders.orderAvroSchema, orderEncoder: orders.orderEncoder };
}
