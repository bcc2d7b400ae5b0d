/**
 * Two fixes and one addition to the Kafka client's native layer, then a rebuild of the addon:
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
 * 3. Packed batches (src/workers.cc, workers.h, kafka-consumer.cc). The client's `consume(n)` makes, on the
 * main thread, a JavaScript object per message with eight `Nan::Set`s and copies its key and value into two
 * new Buffers (each its own backing store for the GC to track): measured, the largest single cost of a
 * task, and the consumer alone cost about 1.4× the whole decode + Parquet encode (docs/benchmarks.md,
 * issue 15). With a fifth argument `true` (after the callback), the native consume packs the batch on
 * the libuv pool thread instead: every key and value copied into one malloc'd block behind a table of
 * eight doubles per message (topic index, partition, offset, timestamp, key start/length, value
 * start/length), the librdkafka messages freed there; the main thread wraps the block in one Buffer and
 * converts only headers, for the messages that have any. The consume loop itself (librdkafka's
 * `consume` per message, its rebalance and error handling) is unchanged; without the flag the
 * client behaves as released. src/consume/confluent/internal.ts (`consumePacked`, `packedRecords`)
 * reads it; every Kafka integration and exactly-once test runs through it.
 *
 * Idempotent: a patched source is recognised by its marker and rebuilt only when the addon is older than
 * it. A source that no longer has the expected expression (another client version) fails loudly rather
 * than leaving the worker silently turning null into empty (or without packed batches); the e2e test
 * test/e2e/sink-headers.test.ts checks header values through the real worker.
 *
 * Usage: node scripts/patch-kafka-binding.ts [node_modules dir]   (default: ./node_modules)
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

interface Patch {
  /** The source file, under the package's src/. */
  readonly file: string;
  readonly what: string;
  readonly marker: string;
  readonly original: string;
  readonly patched: string;
  /** How often `original` occurs in an unpatched source. */
  readonly occurrences: number;
}

const HEADER_MARKER = 'icefloe: a NULL header value stays null';
const ASSIGNOR_MARKER = 'icefloe: a failed group description has no assignor';
const PACKED_MARKER = 'icefloe: packed batches';
const PACKED_MEMBERS_MARKER = 'icefloe: packed batch state';
const PACKED_EXECUTE_MARKER = 'icefloe: packed batches are packed on the pool thread';
const PACKED_CALLBACK_MARKER = 'icefloe: a packed batch for JavaScript';
const PATCHES: readonly Patch[] = [
  {
    file: 'common.cc',
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
    file: 'common.cc',
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
  // 3. Packed batches: see the module header.
  {
    file: 'workers.h',
    what: 'packed batches (declaration)',
    marker: PACKED_MARKER,
    original: `  KafkaConsumerConsumeNum(Nan::Callback*, NodeKafka::KafkaConsumer*,
    const uint32_t &, const int &, bool);`,
    patched: `  // ${PACKED_MARKER}: one buffer and a table of numbers per batch, not an object per message
  KafkaConsumerConsumeNum(Nan::Callback*, NodeKafka::KafkaConsumer*,
    const uint32_t &, const int &, bool, bool packed = false);`,
    occurrences: 1,
  },
  {
    file: 'workers.h',
    what: 'packed batches (members)',
    marker: PACKED_MEMBERS_MARKER,
    original: `  const bool m_timeout_only_for_first_message;
  std::vector<RdKafka::Message*> m_messages;
};`,
    patched: `  const bool m_timeout_only_for_first_message;
  std::vector<RdKafka::Message*> m_messages;
  // ${PACKED_MEMBERS_MARKER}
  void Pack();
  const bool m_packed;
  char* m_block = NULL;
  size_t m_block_size = 0;
  uint32_t m_count = 0;
  std::vector<std::string> m_topics;
  std::vector<std::pair<uint32_t, RdKafka::Message*> > m_with_headers;
};`,
    occurrences: 1,
  },
  {
    file: 'kafka-consumer.cc',
    what: 'packed batches (argument)',
    marker: PACKED_MARKER,
    original: `      new Workers::KafkaConsumerConsumeNum(callback, consumer, numMessages, timeout_ms, isTimeoutOnlyForFirstMessage));  // NOLINT`,
    patched: `      // ${PACKED_MARKER}: a fifth argument (after the callback), true, asks for them
      new Workers::KafkaConsumerConsumeNum(callback, consumer, numMessages, timeout_ms, isTimeoutOnlyForFirstMessage,
        info.Length() > 4 && info[4]->IsTrue()));  // NOLINT`,
    occurrences: 1,
  },
  {
    file: 'workers.cc',
    what: 'packed batches (constructor, packing)',
    marker: PACKED_MARKER,
    original: `                                     bool timeout_only_for_first_message) :
  ErrorAwareWorker(callback),
  m_consumer(consumer),
  m_num_messages(num_messages),
  m_timeout_ms(timeout_ms),
  m_timeout_only_for_first_message(timeout_only_for_first_message) {}

KafkaConsumerConsumeNum::~KafkaConsumerConsumeNum() {}
`,
    patched: `                                     bool timeout_only_for_first_message,
                                     bool packed) :
  ErrorAwareWorker(callback),
  m_consumer(consumer),
  m_num_messages(num_messages),
  m_timeout_ms(timeout_ms),
  m_timeout_only_for_first_message(timeout_only_for_first_message),
  m_packed(packed) {}

KafkaConsumerConsumeNum::~KafkaConsumerConsumeNum() {
  // ${PACKED_MARKER}: a block not handed to JavaScript, and messages not converted, are ours to free
  if (m_block != NULL) free(m_block);
  for (size_t i = 0; i < m_with_headers.size(); i++) delete m_with_headers[i].second;
}

/**
 * ${PACKED_MARKER}. Runs on the pool thread after the messages were taken: every message's key and
 * value are copied into one block, after a table of 8 doubles per message (topic index into m_topics,
 * partition, offset, timestamp, key start, key length, value start, value length; starts count from the
 * end of the table, a length of -1 is a null key or value), and the message is freed here, off the main
 * thread. Messages with headers are kept for the main thread, which converts their headers (V8 objects).
 * EOF events stay in m_messages for the usual path.
 */
void KafkaConsumerConsumeNum::Pack() {
  std::vector<RdKafka::Message*> rest;
  size_t count = 0;
  size_t bytes = 0;
  for (size_t i = 0; i < m_messages.size(); i++) {
    RdKafka::Message* message = m_messages[i];
    if (message->err() != RdKafka::ERR_NO_ERROR) continue;
    count++;
    if (message->key_pointer() != NULL) bytes += message->key_len();
    if (message->payload() != NULL) bytes += message->len();
  }
  const size_t table = count * 8 * sizeof(double);
  if (count > 0) {
    m_block = static_cast<char*>(malloc(table + bytes));
    if (m_block == NULL) {
      SetErrorBaton(Baton(RdKafka::ERR__FAIL, "out of memory for a consumed batch"));
      return;
    }
    m_block_size = table + bytes;
  }
  double* fields = reinterpret_cast<double*>(m_block);
  char* data = m_block + table;
  size_t at = 0;
  uint32_t index = 0;
  for (size_t i = 0; i < m_messages.size(); i++) {
    RdKafka::Message* message = m_messages[i];
    if (message->err() != RdKafka::ERR_NO_ERROR) {
      rest.push_back(message);
      continue;
    }
    const std::string topic = message->topic_name();
    size_t topic_index = 0;
    while (topic_index < m_topics.size() && m_topics[topic_index] != topic) topic_index++;
    if (topic_index == m_topics.size()) m_topics.push_back(topic);
    double* f = fields + static_cast<size_t>(index) * 8;
    f[0] = static_cast<double>(topic_index);
    f[1] = static_cast<double>(message->partition());
    f[2] = static_cast<double>(message->offset());
    f[3] = static_cast<double>(message->timestamp().timestamp);
    const void* key = message->key_pointer();
    f[4] = static_cast<double>(at);
    f[5] = key == NULL ? -1 : static_cast<double>(message->key_len());
    if (key != NULL) {
      memcpy(data + at, key, message->key_len());
      at += message->key_len();
    }
    const void* value = message->payload();
    f[6] = static_cast<double>(at);
    f[7] = value == NULL ? -1 : static_cast<double>(message->len());
    if (value != NULL) {
      memcpy(data + at, value, message->len());
      at += message->len();
    }
    RdKafka::Headers* headers = message->headers();
    if (headers != NULL && headers->size() > 0) {
      m_with_headers.push_back(std::make_pair(index, message));
    } else {
      delete message;
    }
    index++;
  }
  m_count = index;
  m_messages.swap(rest);
}
`,
    occurrences: 1,
  },
  {
    file: 'workers.cc',
    what: 'packed batches (pack after consuming)',
    marker: PACKED_EXECUTE_MARKER,
    original: `    } else {
      if (m_messages.size() == eof_event_count) {
        SetErrorBaton(b);
      }
      looping = false;
    }
  }
}
`,
    patched: `    } else {
      if (m_messages.size() == eof_event_count) {
        SetErrorBaton(b);
      }
      looping = false;
    }
  }
  // ${PACKED_EXECUTE_MARKER}
  if (m_packed) Pack();
}
`,
    occurrences: 1,
  },
  {
    file: 'workers.cc',
    what: 'packed batches (handing over)',
    marker: PACKED_CALLBACK_MARKER,
    original: `  argv[1] = returnArray;
  argv[2] = eofEventsArray;
`,
    patched: `  argv[1] = returnArray;
  argv[2] = eofEventsArray;
  if (m_packed) {
    // ${PACKED_CALLBACK_MARKER}: { count, block (a Buffer that owns the block), topics, headers
    // (flat: message index, then that message's headers as ToV8Object gives them, null values kept) }
    v8::Local<v8::Object> batch = Nan::New<v8::Object>();
    Nan::Set(batch, Nan::New<v8::String>("count").ToLocalChecked(), Nan::New<v8::Number>(m_count));
    if (m_block != NULL) {
      Nan::Set(batch, Nan::New<v8::String>("block").ToLocalChecked(),
        Nan::NewBuffer(m_block, static_cast<uint32_t>(m_block_size)).ToLocalChecked());
      m_block = NULL;
    }
    v8::Local<v8::Array> topics = Nan::New<v8::Array>();
    for (size_t i = 0; i < m_topics.size(); i++) {
      Nan::Set(topics, static_cast<uint32_t>(i), Nan::New<v8::String>(m_topics[i]).ToLocalChecked());
    }
    Nan::Set(batch, Nan::New<v8::String>("topics").ToLocalChecked(), topics);
    v8::Local<v8::Array> withHeaders = Nan::New<v8::Array>();
    for (size_t i = 0; i < m_with_headers.size(); i++) {
      RdKafka::Message* message = m_with_headers[i].second;
      v8::Local<v8::Array> v8headers = Nan::New<v8::Array>();
      std::vector<RdKafka::Headers::Header> all = message->headers()->get_all();
      uint32_t h = 0;
      for (std::vector<RdKafka::Headers::Header>::iterator it = all.begin(); it != all.end(); it++) {
        v8::Local<v8::Object> v8header = Nan::New<v8::Object>();
        Nan::Set(v8header, Nan::New<v8::String>(it->key()).ToLocalChecked(),
          it->value() == NULL ? v8::Local<v8::Value>(Nan::Null()) :
          Nan::Encode(it->value_string(), it->value_size(), Nan::Encoding::BUFFER));
        Nan::Set(v8headers, h++, v8header);
      }
      Nan::Set(withHeaders, static_cast<uint32_t>(2 * i), Nan::New<v8::Number>(m_with_headers[i].first));
      Nan::Set(withHeaders, static_cast<uint32_t>(2 * i + 1), v8headers);
      delete message;
    }
    m_with_headers.clear();
    Nan::Set(batch, Nan::New<v8::String>("headers").ToLocalChecked(), withHeaders);
    argv[1] = batch;
  }
`,
    occurrences: 1,
  },
];

const pkg = join(resolve(process.argv[2] ?? 'node_modules'), '@confluentinc', 'kafka-javascript');
const addon = join(pkg, 'build', 'Release', 'confluent-kafka-javascript.node');

function fail(message: string): never {
  console.error(`patch-kafka-binding: ${message}`);
  process.exit(1);
}

const files = [...new Set(PATCHES.map((p) => p.file))].map((f) => join(pkg, 'src', f));
for (const source of files) {
  if (!existsSync(source)) fail(`${source} not found: run npm ci first`);
  let text = readFileSync(source, 'utf8');
  for (const p of PATCHES.filter((q) => join(pkg, 'src', q.file) === source)) {
    if (text.includes(p.marker)) continue;
    const found = text.split(p.original).length - 1;
    if (found !== p.occurrences) {
      fail(`${source} holds the code this script patches for ${p.what} ${found} times, not ${p.occurrences}: a new client version? Check whether it still needs the fix and update this script`);
    }
    text = text.replaceAll(p.original, p.patched);
    writeFileSync(source, text);
    console.error(`patch-kafka-binding: patched src/${p.file} (${p.what})`);
  }
}

const newestSource = Math.max(...files.map((f) => statSync(f).mtimeMs));
if (existsSync(addon) && statSync(addon).mtimeMs > newestSource) process.exit(0);

// npm run-script puts npm's own node-gyp on PATH; the linking mode must match the install's.
const env = { ...process.env, CKJS_LINKING: process.env['CKJS_LINKING'] ?? 'dynamic' };
const run = (script: string): void => {
  execFileSync('npm', ['run', script], { cwd: pkg, env, stdio: ['ignore', 'ignore', 'inherit'] });
};
if (!existsSync(join(pkg, 'build', 'Makefile'))) run('configure');
console.error('patch-kafka-binding: rebuilding the Kafka addon');
run('build');
if (!existsSync(addon) || statSync(addon).mtimeMs <= newestSource) fail(`the rebuild did not produce a new ${addon}`);
