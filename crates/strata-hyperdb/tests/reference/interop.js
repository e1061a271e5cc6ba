#!/usr/bin/env node
// Interop helper for strata-hyperdb's tests: `node interop.js apply DIR OPS` creates or opens the
// hyperdb in DIR (random-access-file, as hyperdb('DIR') does), applies the ops (JSON lines in
// the vectors' op format), then dumps; `node interop.js dump DIR KEYS` only dumps.
// Dump (stdout, JSON): {length, gets: {key: [nodes]}, list: [[nodes]], listFlat: [[nodes]]}.
'use strict'
const fs = require('fs')
const path = require('path')
const NM = process.env.HYPERDB_NODE_MODULES || path.join(__dirname, 'node_modules')
const hyperdb = require(path.join(NM, 'hyperdb'))

const P = (fn) => new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))))
const hexOrNull = (v) => (v == null ? null : Buffer.from(v).toString('hex'))
const nodeJSON = (n) => ({ key: n.key, value: hexOrNull(n.value), seq: n.seq, deleted: !!n.deleted })
const toBuf = (v) => (v == null ? null : Buffer.from(v, 'hex'))

async function main () {
  const [mode, dir, file] = process.argv.slice(2)
  const db = hyperdb(dir, { valueEncoding: 'binary' })
  await P(cb => db.ready(cb))
  const lines = fs.readFileSync(file, 'utf-8').split('\n').filter(Boolean).map(l => JSON.parse(l))
  const keys = new Set()
  for (const op of lines) {
    if (op.type === 'batch') for (const b of op.batch) keys.add(b.key)
    else keys.add(op.key)
    if (mode !== 'apply') continue
    if (op.type === 'put') await P(cb => db.put(op.key, toBuf(op.value), op.opts || {}, cb))
    else if (op.type === 'del') await P(cb => db.del(op.key, cb))
    else await P(cb => db.batch(op.batch.map(b => ({ type: b.type, key: b.key, value: toBuf(b.value) })), cb))
  }
  const gets = {}
  for (const k of keys) gets[k] = (await P(cb => db.get(k, cb))).map(nodeJSON)
  const list = (await P(cb => db.list('', cb))).map(ns => ns.map(nodeJSON))
  const listFlat = (await P(cb => db.list('', { recursive: false }, cb))).map(ns => ns.map(nodeJSON))
  process.stdout.write(JSON.stringify({ length: db.source.length, key: db.key.toString('hex'), gets, list, listFlat }) + '\n')
}

main().catch((err) => { console.error(err); process.exit(1) })
