/**
 * Two fixes to the Kafka client's native layer, then a rebuild of the addon:
 *
 * 1. A null Kafka header value stays null.
 *
 * @confluentinc/kafka-javascript 1.10.1 turns every header value of a consumed record into a Buffer
 * (`src/common.cc`, ToV8Object: `Nan::Encode(value_string(), value_size(), BUFFER)`), so librdkafka's NULL
 * value — a header written as null by a Java or other client — reaches JavaScript as an empty buffer, the
 * same as an empty value, and lands in the `headers` metadata column as empty binary instead of null. The
 * fix is one expression in that function: a NULL value becomes JavaScript null. It belongs upstream;
 * until it is there, this script applies it after `npm ci` (scripts/lib/toolchain.sh, the Dockerfile) and
 * rebuilds the addon from the patched source (seconds: only common.cc changes when the package was built
 * from source, as it is here; a full build when a prebuilt binary had been downloaded).
 *
 * 2. A group description that failed does not crash the process. DescribeConsumerGroups answers a group
 * whose coordinator is not available yet (a fresh cluster creating __consumer_offsets, or a coordinator
 * moving) with an error and a NULL partition assignor; FromConsumerGroupDescription hands that NULL to
 * `Nan::New<v8::String>` (strlen(NULL)): SIGSEGV. The worker describes its connector's group at start
 * (src/runtime/task-ids.ts), so the first worker on a fresh stack — the quickstart's — died with a
 * segmentation fault most times (core: __strlen_evex ← NewFromUtf8 ← FromConsumerGroupDescription ←
 * AdminClientDescribeGroups::HandleOKCallback). Patched, the description carries its error and an empty
 * assignor, and the caller sees the error.
 *
 * Idempotent: a patched source is recognised by its marker and rebuilt only when the addon is older than
 * it. A source that no longer has the expected expression (another client version) fails loudly rather
 * than leaving the worker silently turning null into empty; the e2e test test/e2e/sink-headers.test.ts
 * checks the result through the real worker.
 *
 * Usage: node scripts/patch-kafka-binding.ts [node_modules dir]   (default: ./node_modules)
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

interface Patch {
  readonly what: string;
  readonly marker: string;
  readonly original: string;
  readonly patched: string;
  /** How often `original` occurs in an unpatched source. */
  readonly occurrences: number;
}

const HEADER_MARKER = 'icefloe: a NULL header value stays null';
const ASSIGNOR_MARKER = 'icefloe: a failed group description has no assignor';
const PATCHES: readonly Patch[] = [
  {
    what: 'null header values',
    marker: HEADER_MARKER,
    original: `        Nan::Set(v8header, Nan::New<v8::String>(it->key()).ToLocalChecked(),
          Nan::Encode(it->value_string(),
            it->value_size(), Nan::Encoding::BUFFER));`,
    patched: `        // ${HEADER_MARKER} (librdkafka tells a null value from an empty one)
        Nan::Set(v8header, Nan::New<v8::String>(it->key()).ToLocalChecked(),
          it->value() == NULL ? v8::Local<v8::Value>(Nan::Null()) :
          Nan::Encode(it->value_string(),
            it->value_size(), Nan::Encoding::BUFFER));`,
    occurrences: 1,
  },
  {
    what: 'failed group descriptions',
    marker: ASSIGNOR_MARKER,
    original: `           Nan::New<v8::String>(
               rd_kafka_ConsumerGroupDescription_partition_assignor(desc))
               .ToLocalChecked());`,
    patched: `           Nan::New<v8::String>(  // ${ASSIGNOR_MARKER} (NULL then: no strlen(NULL))
               rd_kafka_ConsumerGroupDescription_partition_assignor(desc) == NULL ? "" :
               rd_kafka_ConsumerGroupDescription_partition_assignor(desc))
               .ToLocalChecked());`,
    occurrences: 2,
  },
];

const pkg = join(resolve(process.argv[2] ?? 'node_modules'), '@confluentinc', 'kafka-javascript');
const source = join(pkg, 'src', 'common.cc');
const addon = join(pkg, 'build', 'Release', 'confluent-kafka-javascript.node');

function fail(message: string): never {
  console.error(`patch-kafka-binding: ${message}`);
  process.exit(1);
}

if (!existsSync(source)) fail(`${source} not found: run npm ci first`);
let text = readFileSync(source, 'utf8');
for (const p of PATCHES) {
  if (text.includes(p.marker)) continue;
  const found = text.split(p.original).length - 1;
  if (found !== p.occurrences) {
    fail(`${source} holds the code this script patches for ${p.what} ${found} times, not ${p.occurrences}: a new client version? Check whether it still needs the fix and update this script`);
  }
  text = text.replaceAll(p.original, p.patched);
  writeFileSync(source, text);
  console.error(`patch-kafka-binding: patched src/common.cc (${p.what})`);
}

if (existsSync(addon) && statSync(addon).mtimeMs > statSync(source).mtimeMs) process.exit(0);

// npm run-script puts npm's own node-gyp on PATH; the linking mode must match the install's.
const env = { ...process.env, CKJS_LINKING: process.env['CKJS_LINKING'] ?? 'dynamic' };
const run = (script: string): void => {
  execFileSync('npm', ['run', script], { cwd: pkg, env, stdio: ['ignore', 'ignore', 'inherit'] });
};
if (!existsSync(join(pkg, 'build', 'Makefile'))) run('configure');
console.error('patch-kafka-binding: rebuilding the Kafka addon');
run('build');
if (!existsSync(addon) || statSync(addon).mtimeMs <= statSync(source).mtimeMs) fail(`the rebuild did not produce a new ${addon}`);
