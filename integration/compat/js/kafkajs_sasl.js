'use strict'
// kafkajs over SASL_PLAINTEXT with SCRAM-SHA-512: create a topic, produce,
// read back with a consumer group and compare; then a wrong password must
// fail with KafkaJSSASLAuthenticationError.
//
// Usage: node kafkajs_sasl.js SASL_BOOTSTRAP TOPIC USER PASSWORD. Exit 0 on success.

const { Kafka, logLevel } = require('kafkajs')
const { gen, compare } = require('./common')

const NAME = 'kafkajs-sasl'
const RECORDS = 200
const errors = []

function client(bootstrap, username, password) {
  return new Kafka({
    clientId: 'kcompatd-compat-sasl',
    brokers: [bootstrap],
    logLevel: process.env.COMPAT_DEBUG === '1' ? logLevel.DEBUG : logLevel.NOTHING,
    requestTimeout: 15000,
    retry: { retries: 2 },
    sasl: { mechanism: 'scram-sha-512', username, password },
  })
}

async function main() {
  const [bootstrap, topic, user, pass] = process.argv.slice(2)
  const kafka = client(bootstrap, user, pass)

  const admin = kafka.admin()
  await admin.connect()
  await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true, timeout: 15000 })
  await admin.disconnect()
  console.log(`${NAME}: created topic ${topic} over SASL_PLAINTEXT with SCRAM-SHA-512`)

  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  const messages = []
  for (let i = 0; i < RECORDS; i++) {
    const r = gen(i)
    messages.push({ partition: 0, key: r.key, value: r.value, headers: r.headers, timestamp: r.timestamp })
  }
  await producer.send({ topic, acks: -1, messages })
  await producer.disconnect()
  console.log(`${NAME}: produced ${RECORDS} records`)

  const consumer = kafka.consumer({ groupId: `${topic}-group`, sessionTimeout: 10000, heartbeatInterval: 1000 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  let got = 0
  const done = new Promise((resolve) => {
    consumer.run({
      eachMessage: async ({ message }) => {
        const e = compare(got, message)
        if (e) errors.push(e)
        got++
        if (got === RECORDS) resolve()
      },
    })
  })
  await Promise.race([done, new Promise(resolve => setTimeout(resolve, 60000))])
  await consumer.disconnect()
  if (got !== RECORDS) errors.push(`consumed ${got} of ${RECORDS} records`)
  console.log(`${NAME}: consumed ${got} records`)

  const bad = client(bootstrap, user, pass + '-wrong').admin()
  try {
    await bad.connect()
    errors.push('a wrong password was accepted')
    await bad.disconnect()
  } catch (e) {
    if (e.name !== 'KafkaJSSASLAuthenticationError') errors.push(`a wrong password failed with ${e.name}: ${e.message}`)
    else console.log(`${NAME}: wrong password: ${e.message}`)
  }
}

main().then(() => {
  for (const e of errors) console.log(`${NAME}: FAIL ${e}`)
  process.exit(errors.length ? 1 : 0)
}, (e) => {
  console.log(`${NAME}: FAIL ${e.stack || e}`)
  process.exit(1)
})
