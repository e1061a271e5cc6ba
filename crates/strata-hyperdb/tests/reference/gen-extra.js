#!/usr/bin/env node
// Extra scenarios for strata-hyperdb, run against the reference hyperdb 3.5.0.
// Helpers and runner are those of the project's vectors/hyperdb generator (shared/tools/hyperdb-reference/gen.js).
// Usage: HYPERDB_NODE_MODULES=/path/node_modules node gen-extra.js OUTDIR

'use strict'

const fs = require('fs')
const path = require('path')
const nodeCrypto = require('crypto')

const NM = process.env.HYPERDB_NODE_MODULES || path.join(__dirname, 'node_modules')
const hyperdb = require(path.join(NM, 'hyperdb'))
const ram = require(path.join(NM, 'random-access-memory'))
const sodium = require(path.join(NM, 'sodium-universal'))
const hash = require(path.join(NM, 'hyperdb/lib/hash'))
const messages = require(path.join(NM, 'hyperdb/lib/messages'))
const trieEncoding = require(path.join(NM, 'hyperdb/lib/trie-encoding'))
const varint = require(path.join(NM, 'varint'))
const normalizeKey = require(path.join(NM, 'hyperdb/lib/normalize'))

const OUT = process.argv[2] || __dirname

// ---------------------------------------------------------------- helpers

const hex = (b) => (b == null ? null : Buffer.from(b).toString('hex'))
const P = (fn) => new Promise((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))))

function keyPairFromLabel (label) {
  const seed = nodeCrypto.createHash('sha256').update('hyperdb-vectors:' + label).digest()
  const publicKey = Buffer.alloc(32)
  const secretKey = Buffer.alloc(64)
  sodium.crypto_sign_seed_keypair(publicKey, secretKey, seed)
  return { seed, publicKey, secretKey }
}

// mulberry32: tiny deterministic PRNG (same sequence on every platform)
function prng (seed) {
  let a = seed >>> 0
  return function () {
    a = (a + 0x6D2B79F5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function makeStorage (prefill) {
  const files = new Map()
  function storage (name) {
    let r
    if (prefill && prefill[name]) r = ram(Buffer.from(prefill[name]))
    else r = ram()
    if (files.has(name)) throw new Error('storage file opened twice: ' + name)
    files.set(name, r)
    return r
  }
  storage.files = files
  return storage
}

async function dumpStorage (storage) {
  const out = {}
  const names = Array.from(storage.files.keys()).sort()
  for (const name of names) {
    const r = storage.files.get(name)
    const len = r.length
    const buf = len ? await P(cb => r.read(0, len, cb)) : Buffer.alloc(0)
    out[name] = {
      length: len,
      sha256: nodeCrypto.createHash('sha256').update(buf).digest('hex'),
      hex: len <= 65536 ? buf.toString("hex") : undefined
    }
  }
  return out
}

function pathString (key) {
  // 2-bit path (values 0..3, terminator 4) as a compact digit string.
  // Computed on the *normalized* key (one leading '/' stripped), exactly as put/get do.
  return hash(normalizeKey(key), true).join('')
}

function decodeTrie (buf) {
  const out = []
  let off = 0
  while (off < buf.length) {
    const index = varint.decode(buf, off); off += varint.decode.bytes
    let bits = varint.decode(buf, off); off += varint.decode.bytes
    const bitfield = bits
    const buckets = []
    let v = 0
    while (bits) {
      if (bits & 1) {
        const pointers = []
        let more = 1
        while (more) {
          const f = varint.decode(buf, off); off += varint.decode.bytes
          const s = varint.decode(buf, off); off += varint.decode.bytes
          more = f & 1
          pointers.push({ feed: (f - more) / 2, seq: s })
        }
        buckets.push({ value: v, pointers })
        bits = (bits - 1) / 2
      } else {
        bits = bits / 2
      }
      v++
    }
    out.push({ index, bitfield, buckets })
  }
  return out
}

function decodeBlock (seq, buf) {
  if (seq === 0) {
    const h = messages.Header.decode(buf)
    return { type: 'Header', protocol: h.protocol }
  }
  const e = messages.InflatedEntry.decode(buf)
  const inflated = e.feeds.length > 0 || e.contentFeed != null
  const d = {
    type: inflated ? 'InflatedEntry' : 'Entry',
    key: e.key,
    path: pathString(e.key),
    value: e.value == null ? null : hex(e.value),
    deleted: e.deleted,
    deletedFieldPresent: hasField(buf, 3),
    trie: hex(e.trie),
    trieDecoded: decodeTrie(e.trie),
    clock: e.clock,
    inflate: e.inflate
  }
  if (inflated) {
    d.feeds = e.feeds.map(f => hex(f.key))
    d.contentFeed = e.contentFeed == null ? null : hex(e.contentFeed)
  }
  return d
}

function hasField (buf, fieldNo) {
  // walk the protobuf and check whether a field number is present
  let off = 0
  while (off < buf.length) {
    const tag = varint.decode(buf, off); off += varint.decode.bytes
    const f = tag >> 3
    const wt = tag & 7
    if (f === fieldNo) return true
    if (wt === 0) { varint.decode(buf, off); off += varint.decode.bytes } else if (wt === 2) {
      const l = varint.decode(buf, off); off += varint.decode.bytes + l
    } else if (wt === 1) off += 8
    else if (wt === 5) off += 4
    else throw new Error('bad wire type')
  }
  return false
}

async function dumpFeed (feed) {
  const blocks = []
  for (let i = 0; i < feed.length; i++) {
    const b = await P(cb => feed.get(i, { valueEncoding: 'binary' }, cb))
    blocks.push({ seq: i, hex: hex(b), decoded: decodeBlock(i, b) })
  }
  return { key: hex(feed.key), discoveryKey: hex(feed.discoveryKey), length: feed.length, byteLength: feed.byteLength, blocks }
}

function nodeJSON (n) {
  if (!n) return null
  return {
    key: n.key,
    value: n.value == null ? null : hex(n.value),
    valueUtf8: n.value == null ? null : Buffer.from(n.value).toString('utf-8'),
    deleted: !!n.deleted,
    feed: n.feed,
    seq: n.seq
  }
}

function toBuf (v) {
  if (v == null) return null
  if (Buffer.isBuffer(v)) return v
  return Buffer.from(String(v), 'utf-8')
}

function opJSON (op) {
  const o = { type: op.type, key: op.key }
  if (op.type === 'put') {
    o.value = op.value == null ? null : hex(toBuf(op.value))
    o.valueUtf8 = op.value == null ? null : toBuf(op.value).toString('utf-8')
    if (op.opts) o.opts = op.opts
  }
  if (op.type === 'batch') o.batch = op.batch.map(opJSON)
  if (op.writer != null) o.writer = op.writer
  return o
}

async function applyOp (db, op) {
  if (op.type === 'put') return P(cb => db.put(op.key, toBuf(op.value), op.opts || {}, cb))
  if (op.type === 'del') return P(cb => db.del(op.key, cb))
  if (op.type === 'batch') {
    return P(cb => db.batch(op.batch.map(b => ({ type: b.type, key: b.key, value: toBuf(b.value) })), cb))
  }
  throw new Error('unknown op ' + op.type)
}

async function runQueries (db, q) {
  const res = {}
  res.version = hex(await P(cb => db.version(cb)))
  res.heads = (await P(cb => db.heads(cb))).map(nodeJSON)
  res.get = []
  for (const key of q.get || []) {
    const nodes = await P(cb => db.get(key, cb))
    const withDeletes = await P(cb => db.get(key, { deletes: true }, cb))
    res.get.push({ key, nodes: nodes.map(nodeJSON), nodesWithDeletes: withDeletes.map(nodeJSON) })
  }
  res.list = []
  for (const l of q.list || [{ prefix: '' }]) {
    const r = await P(cb => db.list(l.prefix, l.opts || {}, cb))
    res.list.push({ prefix: l.prefix, opts: l.opts || {}, result: r.map(nodes => nodes.map(nodeJSON)), keys: r.map(nodes => nodes[0].key) })
  }
  if (q.history !== false) {
    res.history = await collect(db.createHistoryStream())
    res.historyReverse = await collect(db.createHistoryStream({ reverse: true }))
  }
  res.keyHistory = []
  for (const k of q.keyHistory || []) {
    res.keyHistory.push({ key: k, result: await collect(db.createKeyHistoryStream(k)) })
  }
  return res
}

function collect (stream, map) {
  return new Promise((resolve, reject) => {
    const out = []
    stream.on('data', d => out.push(map ? map(d) : (Array.isArray(d) ? d.map(nodeJSON) : nodeJSON(d))))
    stream.on('error', reject)
    stream.on('end', () => resolve(out))
  })
}

function uniq (a) { return Array.from(new Set(a)) }

function keysOf (ops) {
  const ks = []
  for (const op of ops) {
    if (op.type === 'batch') ks.push(...keysOf(op.batch))
    else ks.push(op.key)
  }
  return ks
}

// ---------------------------------------------------------------- single-writer runner

async function runSingle (sc) {
  const kp = keyPairFromLabel(sc.name + ':source')
  const storage = makeStorage()
  const opts = Object.assign({ secretKey: kp.secretKey, valueEncoding: 'binary' }, sc.dbOpts || {})
  const db = hyperdb(storage, kp.publicKey, opts)
  await P(cb => db.ready(cb))

  const checkpoints = []
  for (let i = 0; i < sc.ops.length; i++) {
    await applyOp(db, sc.ops[i])
    if (sc.checkpointAfter && sc.checkpointAfter.includes(i)) {
      checkpoints.push({ afterOp: i, version: await P(cb => db.version(cb)) })
    }
  }

  const queries = Object.assign({}, sc.queries || {})
  if (!queries.get) queries.get = uniq(keysOf(sc.ops).concat(sc.extraGets || []))
  const results = await runQueries(db, queries)

  // checkouts + diffs against earlier versions
  if (checkpoints.length) {
    results.checkouts = []
    for (const cp of checkpoints) {
      const co = db.checkout(cp.version)
      const coRes = await runQueries(co, { get: queries.get, list: [{ prefix: '' }], history: false })
      const diff = await collect(db.createDiffStream(co, ''), d => ({
        left: d.left ? d.left.map(nodeJSON) : null,
        right: d.right ? d.right.map(nodeJSON) : null
      }))
      results.checkouts.push({ afterOp: cp.afterOp, version: hex(cp.version), results: coRes, diffLatestVsCheckout: diff })
    }
  }

  const out = {
    name: sc.name,
    description: sc.description,
    hyperdbVersion: require(path.join(NM, 'hyperdb/package.json')).version,
    hypercoreVersion: require(path.join(NM, 'hypercore/package.json')).version,
    dbOptions: Object.assign({ valueEncoding: 'binary' }, sc.dbOpts || {}),
    keyPairs: { source: { seed: hex(kp.seed), publicKey: hex(kp.publicKey), secretKey: hex(kp.secretKey) } },
    ops: sc.ops.map(opJSON),
    paths: {},
    feeds: { source: await dumpFeed(db.source) },
    results,
    storage: sc.noStorage ? undefined : await dumpStorage(storage)
  }
  if (db.localContent) out.feeds.content = { key: hex(db.localContent.key), length: db.localContent.length }
  for (const k of uniq(keysOf(sc.ops).concat(queries.get))) out.paths[k] = pathString(k)
  return out
}

// ---------------------------------------------------------------- extra scenarios

const scenarios = []

// 12 and 13 of the shared generator (not copied into the repo's vectors/)
{
  const ops = []
  for (let i = 0; i < 200; i++) ops.push({ type: 'put', key: '/dir/file' + i, value: 'v' + i })
  for (let i = 0; i < 200; i += 7) ops.push({ type: 'del', key: '/dir/file' + i })
  scenarios.push({ name: 'x12-wide-folder', ops, extraGets: ['/dir/file200', '/dir'], queries: { list: [{ prefix: '' }, { prefix: '/dir', opts: { recursive: false } }, { prefix: '/dir', opts: { reverse: true } }] }, noHistory: true })
}

function randomScenario (name, seed, n, delP, valueSize) {
  const rnd = prng(seed)
  const pool = ['a', 'b', 'c', 'foo', 'bar', 'baz', 'x', 'y', 'data', 'img']
  const pick = (arr) => arr[Math.floor(rnd() * arr.length)]
  const randSeg = () => {
    if (rnd() < 0.5) return pick(pool)
    const k = 1 + Math.floor(rnd() * 8)
    let s = ''
    for (let i = 0; i < k; i++) s += 'abcdefghijklmnopqrstuvwxyz0123456789'[Math.floor(rnd() * 36)]
    return s
  }
  const ops = []
  const live = []
  let puts = 0
  while (puts < n) {
    let key
    if (live.length && rnd() < 0.1) key = pick(live)
    else {
      const depth = 1 + Math.floor(rnd() * 4)
      const segs = []
      for (let d = 0; d < depth; d++) segs.push(randSeg())
      key = '/' + segs.join('/') + (rnd() < 0.05 ? '/' : '')
    }
    const value = valueSize ? Buffer.alloc(Math.floor(rnd() * valueSize), puts & 255) : 'val-' + puts
    if (rnd() < 0.05 && ops.length) {
      const b = []
      for (let j = 0; j < 5; j++) b.push({ type: 'put', key: key + '/b' + j, value: 'b' + j })
      b.push({ type: 'del', key: pick(live) })
      ops.push({ type: 'batch', batch: b })
    } else ops.push({ type: 'put', key, value })
    if (!live.includes(key)) live.push(key)
    puts++
    if (rnd() < delP && live.length) {
      const idx = Math.floor(rnd() * live.length)
      ops.push({ type: 'del', key: live[idx] })
      live.splice(idx, 1)
    }
  }
  return {
    name,
    ops,
    extraGets: ['/does/not/exist', '/a', '/foo'],
    queries: {
      list: [{ prefix: '' }, { prefix: '/a' }, { prefix: '/foo', opts: { reverse: true } }, { prefix: '/data', opts: { recursive: false } },
        { prefix: '/b', opts: { gt: true } }, { prefix: '', opts: { recursive: false, reverse: true } }, { prefix: '/x', opts: { deletes: true } }]
    },
    checkpointAfter: [Math.floor(n / 2)],
    noHistory: true
  }
}
scenarios.push(randomScenario('x13-random-1000', 0xC0FFEE, 1000, 0.2, 0))
scenarios.push(randomScenario('x20-random-seed2', 0xBEEF02, 700, 0.3, 0))
scenarios.push(randomScenario('x21-random-bigvalues', 0x5EED03, 150, 0.1, 70000))

scenarios.push({
  name: 'x22-collision-chains',
  description: 'Four keys on one path (a SipHash collision pair, each with and without a trailing slash), overwrites and deletes inside the chain, children below',
  ops: [
    { type: 'put', key: '/mpomeiehc', value: '1' },
    { type: 'put', key: '/idgcmnmna', value: '2' },
    { type: 'put', key: '/mpomeiehc/', value: '3' },
    { type: 'put', key: '/idgcmnmna/', value: '4' },
    { type: 'put', key: '/mpomeiehc/child', value: '5' },
    { type: 'put', key: '/mpomeiehc', value: '1b' },
    { type: 'del', key: '/idgcmnmna/' },
    { type: 'put', key: 'idgcmnmna/', value: '4b' },
    { type: 'put', key: '/idgcmnmna', value: '2b' },
    { type: 'del', key: '/mpomeiehc/' },
    { type: 'put', key: '/other', value: 'o' },
    { type: 'batch', batch: [{ type: 'put', key: '/mpomeiehc/', value: 'b3' }, { type: 'del', key: '/mpomeiehc' }, { type: 'put', key: '/idgcmnmna', value: 'b2' }] }
  ],
  extraGets: ['/mpomeiehc/child'],
  queries: { list: [{ prefix: '' }, { prefix: '', opts: { reverse: true } }, { prefix: '/mpomeiehc' }, { prefix: '/idgcmnmna', opts: { gt: true } }, { prefix: '', opts: { deletes: true } }, { prefix: '/mpomeiehc', opts: { recursive: false } }] },
  checkpointAfter: [3, 8],
  keyHistory: ['/mpomeiehc', '/idgcmnmna/']
})

{
  const ops = []
  let k = '/r'
  for (let i = 0; i < 40; i++) { k += '/s' + i; ops.push({ type: 'put', key: k, value: 'd' + i }) }
  ops.push({ type: 'put', key: '/r/s0/s1/s2/other', value: 'x' })
  ops.push({ type: 'del', key: '/r/s0/s1/s2/s3' })
  scenarios.push({ name: 'x23-deep-folders', ops, extraGets: ['/r/s0/s1'], queries: { list: [{ prefix: '' }, { prefix: '/r/s0/s1/s2' }, { prefix: '/r/s0/s1/s2', opts: { recursive: false } }, { prefix: '/r/s0/s1/s2/s3', opts: { deletes: true } }] }, checkpointAfter: [20], noHistory: false })
}

{
  const ops = []
  for (let i = 0; i < 9000; i++) ops.push({ type: 'put', key: '/p' + (i % 37) + '/k' + i, value: 'v' + i })
  const b = []
  for (let i = 0; i < 1000; i++) b.push({ type: 'put', key: '/batch/k' + i, value: 'bv' + i })
  ops.push({ type: 'batch', batch: b })
  for (let i = 0; i < 300; i++) ops.push({ type: 'put', key: '/p' + (i % 37) + '/k' + i, value: '' })
  scenarios.push({ name: 'x24-bitfield-pages', description: '10,300 blocks: two bitfield pages, a 1000-entry batch', ops, extraGets: [], queries: { get: ['/p3/k3', '/batch/k999', '/p5/k8000'], list: [{ prefix: '/p3' }, { prefix: '/batch', opts: { recursive: false } }] }, noHistory: true })
}

async function main () {
  fs.mkdirSync(OUT, { recursive: true })
  for (const sc of scenarios) {
    sc.queries = Object.assign({}, sc.queries || {})
    if (sc.keyHistory) sc.queries.keyHistory = sc.keyHistory
    if (sc.noHistory) sc.queries.history = false
    const res = await runSingle(sc)
    if (sc.name === 'x24-bitfield-pages') { delete res.results.get; res.feeds.source.blocks = res.feeds.source.blocks.filter(b => b.seq % 97 === 0 || b.seq > 10290) }
    for (const b of res.feeds.source.blocks) delete b.decoded
    delete res.paths
    fs.writeFileSync(path.join(OUT, sc.name + '.json'), JSON.stringify(res) + '\n')
    console.log('wrote', sc.name, res.feeds.source.length)
  }
}

main().catch((err) => { console.error(err); process.exit(1) })
