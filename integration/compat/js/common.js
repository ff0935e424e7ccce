'use strict'
// The record set and checks shared by the kafkajs scripts (same rules as
// python/gen.py and java/.../Main.java).

const RECORDS = 1000
const BASE_TS = 1700000000000
// kafkajs headers are an object (duplicate keys become an array) and cannot carry a
// null value, so h2 is empty here.
function gen(i) {
  let key
  if (i % 7 === 0) key = null
  else if (i % 11 === 0) key = Buffer.alloc(0)
  else key = Buffer.from(`key-${i}`)
  let value
  if (i % 13 === 0 && key !== null) value = null
  else if (i % 17 === 0) value = Buffer.alloc(0)
  else {
    const n = ((i * 37) % 300) + (i % 100 === 1 ? 20000 : 0)
    value = Buffer.alloc(n)
    for (let j = 0; j < n; j++) value[j] = (i * 31 + j) & 0xff
  }
  let headers = {}
  if (i % 3 === 1) headers = { h1: Buffer.from(`v-${i}`) }
  else if (i % 3 === 2) headers = { h1: [Buffer.from('a'), Buffer.from('dup')], h2: Buffer.alloc(0) }
  return { key, value, headers, timestamp: String(BASE_TS + i) }
}

function sameBuf(a, b) {
  if (a === null || a === undefined) return b === null || b === undefined
  if (b === null || b === undefined) return false
  return Buffer.compare(a, b) === 0
}

function sameHeaders(want, got) {
  const wk = Object.keys(want).sort()
  const gk = Object.keys(got || {}).sort()
  if (JSON.stringify(wk) !== JSON.stringify(gk)) return false
  return wk.every(k => {
    const w = [].concat(want[k])
    const g = [].concat(got[k])
    return w.length === g.length && w.every((b, j) => sameBuf(b, g[j]))
  })
}

// compare checks consumed message m against gen(i), at offset wantOffset.
function compare(i, m, wantOffset = i) {
  const w = gen(i)
  if (m.offset !== String(wantOffset)) return `record ${i} has offset ${m.offset}, want ${wantOffset}`
  if (!sameBuf(w.key, m.key)) return `record ${i} key ${m.key}, want ${w.key}`
  if (!sameBuf(w.value, m.value)) {
    return `record ${i} value differs (want ${w.value && w.value.length} bytes, got ${m.value && m.value.length})`
  }
  if (m.timestamp !== w.timestamp) return `record ${i} timestamp ${m.timestamp}, want ${w.timestamp}`
  if (!sameHeaders(w.headers, m.headers)) return `record ${i} headers differ`
  return null
}

module.exports = { RECORDS, BASE_TS, gen, compare }
