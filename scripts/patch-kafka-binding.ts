/**
 * Keeps a null Kafka header value null in the Kafka client's native layer, then rebuilds the addon.
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

const MARKER = 'icefloe: a NULL header value stays null';
const ORIGINAL = `        Nan::Set(v8header, Nan::New<v8::String>(it->key()).ToLocalChecked(),
          Nan::Encode(it->value_string(),
            it->value_size(), Nan::Encoding::BUFFER));`;
const PATCHED = `        // ${MARKER} (librdkafka tells a null value from an empty one)
        Nan::Set(v8header, Nan::New<v8::String>(it->key()).ToLocalChecked(),
          it->value() == NULL ? v8::Local<v8::Value>(Nan::Null()) :
          Nan::Encode(it->value_string(),
            it->value_size(), Nan::Encoding::BUFFER));`;

const pkg = join(resolve(process.argv[2] ?? 'node_modules'), '@confluentinc', 'kafka-javascript');
const source = join(pkg, 'src', 'common.cc');
const addon = join(pkg, 'build', 'Release', 'confluent-kafka-javascript.node');

function fail(message: string): never {
  console.error(`patch-kafka-binding: ${message}`);
  process.exit(1);
}

if (!existsSync(source)) fail(`${source} not found: run npm ci first`);
const text = readFileSync(source, 'utf8');
if (!text.includes(MARKER)) {
  const at = text.indexOf(ORIGINAL);
  if (at < 0 || text.indexOf(ORIGINAL, at + 1) >= 0) {
    fail(`${source} does not hold the expected header conversion exactly once: a new client version? Check whether it keeps null header values and update this script`);
  }
  writeFileSync(source, text.replace(ORIGINAL, PATCHED));
  console.error('patch-kafka-binding: patched src/common.cc (null header values)');
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
