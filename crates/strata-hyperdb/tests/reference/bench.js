#!/usr/bin/env node
// The reference side of `cargo run --release -p strata-bench --bin hyperdb`: the same workload on
// hyperdb 3.5.0 with random-access-memory. Prints one JSON line of timings.
// Usage: node bench.js N (keys /d<i%10>/k<i>, values value-<i>)
'use strict'
const path = require('path')
const NM = process.env.HYPERDB_NODE_MODULES || path.join(__dirname, 'node_modules')
const hyperdb = require(path.join(NM, 'hyperdb'))
const ram = require(path.join(NM, 'random-access-memory'))
const sodium = require(path.join(NM, 'sodium-universal'))

const P = (fn) => new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))))
const now = () => Number(process.hrtime.bigint()) / 1e9

async function main () {
  const n = Number(process.argv[2] || 100000)
  const out = { n, native: (() => { try { require(path.join(NM, 'sodium-native')); return true } catch (e) { return false } })() }
  const db = hyperdb(ram, { valueEncoding: 'binary' })
  await P(cb => db.ready(cb))
  let t = now()
  for (let i = 0; i < n; i++) await P(cb => db.put('/d' + (i % 10) + '/k' + i, Buffer.from('value-' + i), cb))
  out.put_s = now() - t
  let x = 88172645463325252n
  const rnd = () => { x ^= x << 13n; x &= 0xffffffffffffffffn; x ^= x >> 7n; x ^= x << 17n; x &= 0xffffffffffffffffn; return Number(x % BigInt(n)) }
  t = now()
  for (let i = 0; i < n; i++) {
    const k = rnd()
    const nodes = await P(cb => db.get('/d' + (k % 10) + '/k' + k, cb))
    if (!nodes.length) throw new Error('missing key ' + k)
  }
  out.get_s = now() - t
  // Every one of the ten folders is listed once (10 x n/10 keys): one listing of a tenth of
  // the keys takes a few milliseconds on the Strata side, too short to time on a busy machine.
  t = now()
  out.list_len = 0
  for (let d = 0; d < 10; d++) {
    const list = await P(cb => db.list('/d' + d, cb))
    out.list_len += list.length
  }
  out.list_s = now() - t
  const db2 = hyperdb(ram, { valueEncoding: 'binary' })
  await P(cb => db2.ready(cb))
  t = now()
  for (let i = 0; i < n; i += 1000) {
    const b = []
    for (let j = i; j < Math.min(n, i + 1000); j++) b.push({ type: 'put', key: '/d' + (j % 10) + '/k' + j, value: Buffer.from('value-' + j) })
    await P(cb => db2.batch(b, cb))
  }
  out.batch_s = now() - t
  process.stdout.write(JSON.stringify(out) + '\n')
}

main().catch((err) => { console.error(err); process.exit(1) })
