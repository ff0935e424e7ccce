'use strict'
// kafkajs round trip: admin createTopics, produce with gzip/snappy/none (one
// partition per codec, idempotence off), then read everything back.
//
// kafkajs has no group-less consumer: its Consumer always joins a group. Until
// kcompatd serves consumer groups, the records are read with kafkajs's own
// Fetch request and record-batch decoder through its (internal, version
// pinned) Cluster/Broker objects, with ListOffsets via admin.fetchTopicOffsets.
//
// Usage: node kafkajs_roundtrip.js BOOTSTRAP TOPIC. Exit 0 on success.

const { Kafka, logLevel, CompressionTypes, CompressionCodecs } = require('kafkajs')
const SnappyCodec = require('kafkajs-snappy')
const { RECORDS, gen, compare } = require('./common')

CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec

const NAME = 'kafkajs'
const errors = [] // every mismatch found, reported together at the end
const CODECS = [
  ['gzip', CompressionTypes.GZIP],
  ['snappy', CompressionTypes.Snappy],
  ['none', CompressionTypes.None],
]

function privateSymbol(obj, description) {
  const s = Object.getOwnPropertySymbols(obj).find(sym => sym.description === description)
  if (!s) throw new Error(`kafkajs internals changed: no ${description}`)
  return obj[s]
}

async function main() {
  const [bootstrap, topic] = process.argv.slice(2)
  const kafka = new Kafka({
    clientId: 'kcompatd-compat',
    brokers: [bootstrap],
    logLevel: process.env.COMPAT_DEBUG === '1' ? logLevel.DEBUG : logLevel.WARN,
    requestTimeout: 15000,
    retry: { retries: 3 },
  })

  const admin = kafka.admin()
  await admin.connect()
  const created = await admin.createTopics({
    topics: [{ topic, numPartitions: CODECS.length, replicationFactor: 1 }],
    waitForLeaders: true,
    timeout: 15000,
  })
  if (!created) errors.push(`createTopics returned false (topic ${topic} already existed)`)
  console.log(`${NAME}: created topic ${topic}`)

  const producer = kafka.producer({ idempotent: false, maxInFlightRequests: 1, allowAutoTopicCreation: false })
  await producer.connect()
  for (let p = 0; p < CODECS.length; p++) {
    const [codecName, codec] = CODECS[p]
    const messages = []
    for (let i = 0; i < RECORDS; i++) {
      const r = gen(i)
      messages.push({ partition: p, key: r.key, value: r.value, headers: r.headers, timestamp: r.timestamp })
    }
    // Several sends so that a partition holds several batches.
    for (let start = 0; start < RECORDS; start += 250) {
      const res = await producer.send({ topic, acks: -1, compression: codec, messages: messages.slice(start, start + 250) })
      for (const md of res) {
        if (md.errorCode !== 0 || md.baseOffset !== String(start)) {
          errors.push(`produce ${codecName} partition ${p}: errorCode ${md.errorCode} baseOffset ${md.baseOffset}, want ${start}`)
        }
      }
    }
    console.log(`${NAME}: produced ${RECORDS} records with ${codecName} to partition ${p}`)
  }
  await producer.disconnect()

  const offsets = await admin.fetchTopicOffsets(topic)
  for (const o of offsets) {
    if (o.low !== '0' || o.high !== String(RECORDS)) {
      errors.push(`ListOffsets partition ${o.partition}: low ${o.low} high ${o.high}, want 0 ${RECORDS}`)
    }
  }

  // Group-less read through kafkajs's Fetch (see the header comment).
  const cluster = privateSymbol(kafka, 'private:Kafka:createCluster')({ allowAutoTopicCreation: false })
  await cluster.connect()
  await cluster.addTargetTopic(topic)
  const partitions = cluster.findTopicPartitionMetadata(topic)
  let total = 0
  for (let p = 0; p < CODECS.length; p++) {
    const meta = partitions.find(pm => pm.partitionId === p)
    if (!meta) {
      errors.push(`metadata has no partition ${p}`)
      continue
    }
    const broker = await cluster.findBroker({ nodeId: meta.leader })
    const got = []
    const deadline = Date.now() + 30000
    while (got.length < RECORDS && Date.now() < deadline) {
      const fetchOffset = String(got.length)
      const res = await broker.fetch({
        replicaId: -1,
        isolationLevel: 0,
        maxWaitTime: 500,
        minBytes: 1,
        maxBytes: 1 << 20,
        topics: [{ topic, partitions: [{ partition: p, fetchOffset, maxBytes: 256 << 10 }] }],
      })
      const pr = res.responses[0].partitions[0]
      if (pr.errorCode !== 0) {
        errors.push(`fetch partition ${p} offset ${fetchOffset}: errorCode ${pr.errorCode}`)
        break
      }
      if (pr.highWatermark !== String(RECORDS)) {
        errors.push(`fetch partition ${p}: high watermark ${pr.highWatermark}, want ${RECORDS}`)
        break
      }
      // A fetch may return the whole batch holding fetchOffset, from its base offset.
      for (const m of pr.messages) {
        if (BigInt(m.offset) >= BigInt(fetchOffset) && BigInt(m.offset) === BigInt(got.length)) got.push(m)
      }
    }
    total += got.length
    if (got.length !== RECORDS) errors.push(`consume ${CODECS[p][0]} partition ${p}: got ${got.length} records, want ${RECORDS}`)
    for (let i = 0; i < got.length; i++) {
      const diff = compare(i, got[i])
      if (diff) {
        errors.push(`consume ${CODECS[p][0]} partition ${p}: ${diff}`)
        break
      }
    }
  }
  await cluster.disconnect()
  console.log(`${NAME}: consumed ${total} of ${RECORDS * CODECS.length} records (group-less Fetch)`)

  await admin.deleteTopics({ topics: [topic], timeout: 15000 })
  // Deletion may take a moment to show in Metadata; bounded wait.
  let gone = false
  for (let i = 0; i < 50 && !gone; i++) {
    gone = !(await admin.listTopics()).includes(topic)
    if (!gone) await new Promise(resolve => setTimeout(resolve, 200))
  }
  if (gone) console.log(`${NAME}: deleted topic ${topic}`)
  else errors.push(`topic ${topic} still listed by Metadata 10 s after DeleteTopics`)
  await admin.disconnect()
}

function report() {
  if (errors.length) {
    for (const e of errors) console.log(`${NAME}: FAIL ${e}`)
    process.exit(1)
  }
  console.log(`${NAME}: OK`)
  process.exit(0)
}

main().then(report, err => {
  console.log(err && err.stack ? err.stack : err)
  errors.push(`aborted: ${err}`)
  report()
})
