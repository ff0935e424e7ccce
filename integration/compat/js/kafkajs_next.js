'use strict'
// kafkajs, next slice, as applications use it: an idempotent producer and a
// consumer group (consumer.run) that commits, then a check of the committed
// offsets (OffsetFetch) and that a new member of the group resumes there;
// then transactions (committed, aborted, offsets sent to a transaction) read
// with read_committed and read_uncommitted.
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

// Reads every partition of topic from the start with a group consumer at the
// given isolation (kafkajs consumers always join a group) until want records
// arrived and 2 s more passed; returns the values in (partition, offset) order.
async function readAll(kafka, topic, readUncommitted, want) {
  const consumer = kafka.consumer({ groupId: `${topic}-reader-${readUncommitted}`, readUncommitted, sessionTimeout: 10000, heartbeatInterval: 1000 })
  await consumer.connect()
  await consumer.subscribe({ topics: [topic], fromBeginning: true })
  const got = []
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      got.push({ partition, offset: BigInt(message.offset), value: message.value.toString() })
    },
  })
  const deadline = Date.now() + 30000
  while (got.length < want && Date.now() < deadline) await sleep(100)
  await sleep(2000) // give a record that should not be seen the chance to show up
  await consumer.disconnect()
  got.sort((a, b) => a.partition - b.partition || (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0))
  return got.map(r => r.value)
}

// A committed and an aborted transaction over every partition, offsets sent
// to a committed and to an aborted transaction: read_committed sees the
// committed records only, read_uncommitted all, the group the committed offset.
async function transactions(kafka, admin, topic) {
  const groupId = `${topic}-txgroup`
  const producer = kafka.producer({ transactionalId: `${topic}-txid`, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 30000 })
  await producer.connect()
  const txn = async (prefix, commit, offset) => {
    const t = await producer.transaction()
    const messages = []
    for (let i = 0; i < 9; i++) messages.push({ partition: i % PARTITIONS, value: `${prefix}-${i}` })
    await t.send({ topic, acks: -1, messages })
    if (offset !== undefined) {
      await t.sendOffsets({ consumerGroupId: groupId, topics: [{ topic, partitions: [{ partition: 0, offset: String(offset) }] }] })
    }
    if (commit) await t.commit()
    else await t.abort()
  }
  await txn('committed', true)
  await txn('aborted', false, 5)
  await txn('offsets', true, 7)
  await txn('aborted-again', false, 9)
  await producer.disconnect()
  console.log(`${NAME}: 4 transactions ended`)

  const values = prefixes => {
    const out = []
    for (let p = 0; p < PARTITIONS; p++) {
      for (const prefix of prefixes) for (let i = p; i < 9; i += PARTITIONS) out.push(`${prefix}-${i}`)
    }
    return out
  }
  const wantCommitted = values(['committed', 'offsets'])
  const wantAll = values(['committed', 'aborted', 'offsets', 'aborted-again'])
  let got = await readAll(kafka, topic, false, wantCommitted.length)
  if (JSON.stringify(got) !== JSON.stringify(wantCommitted)) errors.push(`read_committed saw ${got}, want ${wantCommitted}`)
  got = await readAll(kafka, topic, true, wantAll.length)
  if (JSON.stringify(got) !== JSON.stringify(wantAll)) errors.push(`read_uncommitted saw ${got}, want ${wantAll}`)

  // Each transaction wrote 3 records and a marker to each partition.
  for (const { partition, high } of await admin.fetchTopicOffsets(topic)) {
    if (high !== '16') errors.push(`high watermark of partition ${partition} = ${high}, want 16`)
  }
  const committed = await admin.fetchOffsets({ groupId, topics: [topic] })
  const p0 = committed[0].partitions.find(p => p.partition === 0)
  if (!p0 || p0.offset !== '7') errors.push(`offset committed in the transaction = ${p0 && p0.offset}, want 7`)
  console.log(`${NAME}: read_committed, read_uncommitted and transactional offsets checked`)
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

  const txTopic = `${topic}-tx`
  await admin.createTopics({ topics: [{ topic: txTopic, numPartitions: PARTITIONS, replicationFactor: 1 }], waitForLeaders: true })
  try {
    await transactions(kafka, admin, txTopic)
  } catch (e) {
    console.log(e && e.stack ? e.stack : e)
    errors.push(`transactions: ${e}`)
  }

  await admin.deleteTopics({ topics: [...new Set([topic, groupTopic, txTopic])], timeout: 15000 })
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
