'use strict'
// kafkajs, next slice, as applications use it: an idempotent producer and a
// consumer group (consumer.run) that commits, then a check of the committed
// offsets (OffsetFetch) and that a new member of the group resumes there.
//
// Usage: node kafkajs_next.js BOOTSTRAP TOPIC. Exit 0 on success.

const { Kafka, logLevel, CompressionTypes } = require('kafkajs')
const { RECORDS, gen, compare } = require('./common')

const NAME = 'kafkajs-next'
const PARTITIONS = 3
const errors = [] // every mismatch found, reported together at the end

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

// Runs a group member until want records arrived or deadlineMs passed.
async function consumeGroup(kafka, topic, groupId, want, deadlineMs) {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 1000 })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const got = {}
  let total = 0
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      ;(got[partition] = got[partition] || []).push(message)
      total++
    },
  })
  const deadline = Date.now() + deadlineMs
  while (total < want && Date.now() < deadline) await sleep(100)
  const offsets = Object.entries(got).map(([partition, msgs]) => ({
    topic,
    partition: Number(partition),
    offset: String(BigInt(msgs[msgs.length - 1].offset) + 1n),
  }))
  if (offsets.length) await consumer.commitOffsets(offsets)
  await consumer.disconnect()
  return { got, total }
}

// Produces gen(0..RECORDS) round robin over the partitions.
async function produce(kafka, topic, idempotent) {
  const producer = kafka.producer({ idempotent, maxInFlightRequests: 1, allowAutoTopicCreation: false })
  await producer.connect()
  try {
    for (let start = 0; start < RECORDS; start += 250) {
      const messages = []
      for (let i = start; i < start + 250; i++) {
        const r = gen(i)
        messages.push({ partition: i % PARTITIONS, key: r.key, value: r.value, headers: r.headers, timestamp: r.timestamp })
      }
      await producer.send({ topic, acks: -1, compression: CompressionTypes.GZIP, messages })
    }
  } finally {
    await producer.disconnect()
  }
}

async function main() {
  const [bootstrap, topic] = process.argv.slice(2)
  const groupId = `${topic}-group`
  const kafka = new Kafka({
    clientId: 'kcompatd-compat',
    brokers: [bootstrap],
    logLevel: process.env.COMPAT_DEBUG === '1' ? logLevel.DEBUG : logLevel.WARN,
    requestTimeout: 15000,
    retry: { retries: 3 },
  })
  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }], waitForLeaders: true })
  console.log(`${NAME}: created topic ${topic}`)

  let groupTopic = topic
  try {
    await produce(kafka, topic, true)
    console.log(`${NAME}: produced ${RECORDS} records idempotently`)
  } catch (e) {
    errors.push(`idempotent produce: ${e}`)
    // A fresh topic: the failed attempt may have left records behind.
    groupTopic = `${topic}-plain`
    await admin.createTopics({ topics: [{ topic: groupTopic, numPartitions: PARTITIONS, replicationFactor: 1 }], waitForLeaders: true })
    await produce(kafka, groupTopic, false)
    console.log(`${NAME}: produced ${RECORDS} records without idempotence (fallback)`)
  }

  const { got, total } = await consumeGroup(kafka, groupTopic, groupId, RECORDS, 30000)
  console.log(`${NAME}: group member consumed ${total} records and committed`)
  for (let p = 0; p < PARTITIONS; p++) {
    const msgs = got[p] || []
    const want = Math.ceil((RECORDS - p) / PARTITIONS)
    if (msgs.length !== want) errors.push(`group consume partition ${p}: ${msgs.length} records, want ${want}`)
    for (let pos = 0; pos < msgs.length; pos++) {
      const diff = compare(p + pos * PARTITIONS, msgs[pos], pos)
      if (diff) {
        errors.push(`group consume partition ${p}: ${diff}`)
        break
      }
    }
  }

  const committed = await admin.fetchOffsets({ groupId, topics: [groupTopic] })
  for (const { partitions } of committed) {
    for (const { partition, offset } of partitions) {
      const want = String(Math.ceil((RECORDS - partition) / PARTITIONS))
      if (offset !== want) errors.push(`OffsetFetch partition ${partition} = ${offset}, want ${want}`)
    }
  }
  const again = await consumeGroup(kafka, groupTopic, groupId, 1, 5000)
  if (again.total) errors.push(`second group member re-read ${again.total} records past the committed offsets`)

  await admin.deleteTopics({ topics: [...new Set([topic, groupTopic])], timeout: 15000 })
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
