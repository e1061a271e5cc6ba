#!/usr/bin/env python2.7
"""Writes centidb record-store vectors by running the ORIGINAL code.

Usage: python2.7 gen.py ACID_SRC OUTDIR

ACID_SRC is a checkout of github.com/dw/acid at 9402b1092b9c5e639e7db612a938eb781a71157d
(kept outside this repository; nothing of it is copied here: it is imported at run time).
Each scenario of scenarios.py is replayed against acid's in-memory ListEngine, and written as
OUTDIR/NN-name.json in the format of vectors/centidb-store/README.md: every op with its
arguments, its result (or error), the net engine writes it made, and the final engine dump.
"""

import bz2
import calendar
import datetime
import hashlib
import json
import os
import struct
import sys
import traceback
import uuid
import warnings

ACID_SRC = sys.argv[1]
OUTDIR = sys.argv[2]
sys.path.insert(0, ACID_SRC)

import acid                      # noqa: E402
import acid.encoders             # noqa: E402
import acid.engines              # noqa: E402
import acid.keylib               # noqa: E402

import scenarios                 # noqa: E402

COMMIT = '9402b1092b9c5e639e7db612a938eb781a71157d'


class Missing(object):
    pass


MISSING = Missing()

# --------------------------------------------------------------------------------------
# Typed JSON (vectors/centidb-store/README.md)


def to_typed(v):
    if v is MISSING:
        return {'t': 'missing'}
    if v is None:
        return {'t': 'null'}
    if v is True or v is False:
        return {'t': 'bool', 'v': v}
    if isinstance(v, (int, long)):
        return {'t': 'int', 'v': str(v)}
    if isinstance(v, float):
        return {'t': 'f64', 'bits': struct.pack('>d', v).encode('hex'), 'repr': repr(v)}
    if isinstance(v, str):
        return {'t': 'bytes', 'hex': v.encode('hex')}
    if isinstance(v, unicode):
        return {'t': 'text', 'v': v, 'utf8_hex': v.encode('utf-8').encode('hex')}
    if isinstance(v, uuid.UUID):
        return {'t': 'uuid', 'hex': v.bytes.encode('hex'), 'v': str(v)}
    if isinstance(v, datetime.datetime):
        naive = v.tzinfo is None
        ms = calendar.timegm(v.utctimetuple()) * 1000 + v.microsecond // 1000
        off = 0 if naive else int(v.utcoffset().total_seconds())
        return {'t': 'time', 'unix_ms': ms, 'utc_offset_s': off, 'naive': naive,
                'iso': v.isoformat()}
    if isinstance(v, acid.keylib.Key):
        return {'t': 'tuple', 'items': [to_typed(x) for x in v]}
    if isinstance(v, tuple):
        return {'t': 'tuple', 'items': [to_typed(x) for x in v]}
    if isinstance(v, list):
        return {'t': 'list', 'items': [to_typed(x) for x in v]}
    if isinstance(v, dict):
        return {'t': 'dict', 'items': [[to_typed(k), to_typed(x)] for k, x in v.iteritems()]}
    raise TypeError('cannot type %r' % (v,))


def from_typed(j):
    if not isinstance(j, dict):
        return j
    t = j['t']
    if t == 'null':
        return None
    if t == 'bool':
        return bool(j['v'])
    if t == 'int':
        n = long(j['v'])
        return n if j.get('py') == 'long' else int(n)
    if t == 'f64':
        return struct.unpack('>d', j['bits'].decode('hex'))[0]
    if t == 'bytes':
        return j['hex'].decode('hex')
    if t == 'text':
        return j['utf8_hex'].decode('hex').decode('utf-8')
    if t == 'uuid':
        return uuid.UUID(bytes=j['hex'].decode('hex'))
    if t == 'time':
        ms = j['unix_ms']
        dt = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
        if j.get('naive'):
            return dt
        off = j.get('utc_offset_s', 0)
        tz = acid.keylib.FixedOffsetZone(off)
        return (dt + datetime.timedelta(seconds=off)).replace(tzinfo=tz)
    if t == 'tuple':
        return tuple(from_typed(x) for x in j['items'])
    if t == 'list':
        return [from_typed(x) for x in j['items']]
    if t == 'dict':
        d = {}
        for k, v in j['items']:
            d[from_typed(k)] = from_typed(v)
        return d
    raise ValueError('unknown type %r' % (t,))


# Op fields that hold values (written typed); names, specs, flags and counts stay plain.
TYPED_ARGS = ('value', 'key', 'lo', 'hi', 'prefix', 'args', 'x', 'n', 'init')


def out_op(op):
    out = {}
    for k, v in op.items():
        if k in TYPED_ARGS:
            out[k] = to_typed(v)
        elif k == 'name' and op['op'] == 'count':
            out[k] = to_typed(v)
        elif isinstance(v, str):
            out[k] = v.decode('utf-8')
        else:
            out[k] = v
    return out


def arg_value(v):
    return v

# --------------------------------------------------------------------------------------
# Functions given as data


def make_fn(spec):
    fn = spec['fn']
    if fn == 'item':
        i = spec['index']
        return lambda v: v[i]
    if fn == 'items':
        ii = spec['indices']
        return lambda v: tuple(v[i] for i in ii)
    if fn == 'field':
        name = spec['name'].encode('utf-8')
        return lambda v: v[name]
    if fn == 'list':
        fs = [make_fn(s) for s in spec['of']]
        return lambda v: [f(v) for f in fs]
    raise ValueError(spec)


ENCODERS = {
    'key': acid.encoders.KEY,
    'pickle': acid.encoders.PICKLE,
    'json': acid.encoders.make_json_encoder(sort_keys=True),
}
PACKERS = {
    'plain': acid.encoders.PLAIN,
    'zlib': acid.encoders.ZLIB,
    'bz2': acid.encoders.Compressor('bz2', lambda d: bz2.decompress(str(d)), bz2.compress),
}

# --------------------------------------------------------------------------------------
# Running ops


class Runner(object):
    def __init__(self):
        self.engine = None
        self.store = None

    def snapshot(self):
        return dict(self.engine.items) if self.engine else {}

    def coll(self, op):
        return self.store[op['collection']]

    def query(self, op, keys):
        kw = {}
        for k in keys:
            if k in op:
                v = op[k]
                kw[k] = v if isinstance(v, (bool, int, long)) else arg_value(v)
        return kw

    def run(self, op):
        kind = op['op']
        if kind == 'open_store':
            if not op.get('reuse_engine'):
                self.engine = acid.engines.ListEngine()
            self.store = acid.Store(self.engine, prefix=op.get('prefix_hex', '').decode('hex'))
            return None
        with self.store.begin(write=True):
            return self.run_in_txn(kind, op)

    def run_in_txn(self, kind, op):
        s = self.store
        if kind == 'add_collection':
            kw = {}
            if op.get('key_func'):
                kw['key_func'] = make_fn(op['key_func'])
            kw['encoder'] = ENCODERS[op.get('encoder') or 'pickle']
            if op.get('counter_name') is not None:
                kw['counter_name'] = op['counter_name']
            c = s.add_collection(op['name'], **kw)
            return {'idx': to_typed(c.info['idx']), 'prefix_hex': c.prefix.encode('hex')}
        if kind == 'add_index':
            ix = self.coll(op).add_index(op['name'], make_fn(op['func']))
            return {'idx': to_typed(ix.info['idx']), 'prefix_hex': ix.prefix.encode('hex')}
        if kind == 'add_encoder':
            name = op['name']
            s.add_encoder(ENCODERS.get(name) or PACKERS[name])
            return None
        if kind == 'set_blind':
            self.coll(op).set_blind(op['blind'])
            return None
        if kind == 'count':
            return to_typed(s.count(arg_value(op['name']), arg_value(op.get('n', 1)),
                                    arg_value(op.get('init', 1))))
        if kind == 'put':
            kw = {}
            if 'key' in op:
                kw['key'] = arg_value(op['key'])
            if op.get('packer'):
                kw['packer'] = PACKERS[op['packer']]
            if op.get('blind'):
                kw['blind'] = True
            c = self.coll(op)
            value = op['value']
            op['encoded_hex'] = str(c.encoder.pack(value)).encode('hex')
            return {'key': to_typed(c.put(value, **kw))}
        if kind == 'delete':
            self.coll(op).delete(arg_value(op['key']))
            return None
        if kind == 'get':
            return to_typed(self.coll(op).get(arg_value(op['key']), MISSING))
        if kind in ('items', 'keys', 'values', 'find'):
            c = self.coll(op)
            kw = self.query(op, ('key', 'lo', 'hi', 'prefix', 'reverse', 'max', 'include'))
            if kind == 'find':
                return to_typed(c.find(default=MISSING, **kw))
            res = list(getattr(c, kind)(**kw))
            if kind == 'items':
                return [[to_typed(k), to_typed(v)] for k, v in res]
            return [to_typed(x) for x in res]
        if kind.startswith('index_'):
            ix = self.coll(op).indices[op['index']]
            what = kind[len('index_'):]
            if what in ('has', 'get'):
                x = arg_value(op['x'])
                if what == 'has':
                    return to_typed(ix.has(x))
                return to_typed(ix.get(x, MISSING))
            kw = self.query(op, ('args', 'lo', 'hi', 'prefix', 'reverse', 'max', 'include'))
            if what == 'count':
                kw.pop('reverse', None)
                return to_typed(ix.count(**kw))
            if what == 'find':
                kw.pop('max', None)
                return to_typed(ix.find(default=MISSING, **kw))
            res = list(getattr(ix, what)(**kw))
            if what == 'pairs':
                return [[to_typed(tuple(t)), to_typed(tuple(k))] for t, k in res]
            if what == 'items':
                return [[to_typed(k), to_typed(v)] for k, v in res]
            return [to_typed(x) for x in res]
        if kind == 'batch':
            kw = self.query(op, ('lo', 'hi', 'prefix', 'max_recs', 'max_bytes', 'preserve',
                                 'max_phys'))
            if op.get('packer'):
                kw['packer'] = PACKERS[op['packer']]
            if op.get('grouper'):
                kw['grouper'] = make_fn(op['grouper'])
            return to_typed(self.coll(op).batch(**kw))
        raise ValueError('unknown op %r' % (kind,))


def diff(before, after):
    out = []
    for k in sorted(set(before) | set(after)):
        if k not in after:
            out.append({'op': 'del', 'k': k.encode('hex')})
        elif before.get(k) != after[k]:
            out.append({'op': 'put', 'k': k.encode('hex'), 'v': after[k].encode('hex')})
    return out


def run_scenario(sc):
    r = Runner()
    ops_out = []
    checkpoints = []
    for op in sc['ops']:
        op = dict(op)
        if 'py' not in op:
            op['py'] = scenarios.py_call(op)
        before = r.snapshot()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            try:
                op['result'] = r.run(op)
            except Exception as e:
                tb = traceback.extract_tb(sys.exc_info()[2])[-1]
                op['error'] = {'type': type(e).__name__, 'message': str(e),
                               'where': '%s:%d' % (os.path.basename(tb[0]), tb[1])}
            if w:
                op['warnings'] = [str(x.message) for x in w]
        op['writes'] = diff(before, r.snapshot())
        ops_out.append(out_op(op))
        if op.get('checkpoint'):
            checkpoints.append({'label': op['checkpoint'], 'after_op': len(ops_out) - 1,
                                'dump': [{'k': k.encode('hex'), 'v': v.encode('hex')}
                                         for k, v in r.engine.items]})
    dump = [{'k': k.encode('hex'), 'v': v.encode('hex')} for k, v in r.engine.items]
    return {
        'format': 'centidb-record-vectors/1 (see README.md)',
        'source': {
            'repo': 'https://github.com/dw/acid (formerly dw/centidb)',
            'commit': COMMIT, 'profile': 'acid-9402b10', 'package': 'acid',
            'version': acid.__version__, 'python': sys.version.split()[0],
            'speedups': False, 'unmodified': True,
            'generator': 'strata tools/centidb-reference/gen.py',
            'profile_notes': scenarios.PROFILE_NOTES,
        },
        'scenario': sc['name'], 'title': sc['title'], 'notes': sc.get('notes', []),
        'store_prefix_hex': sc['ops'][0].get('prefix_hex', ''),
        'ops': ops_out, 'checkpoints': checkpoints, 'dump': dump,
        'dump_sha256': hashlib.sha256(json.dumps([[d['k'], d['v']] for d in dump]))
                       .hexdigest(),
    }


def main():
    try:
        import acid._keylib  # noqa: F401
        raise SystemExit('the C extension is built; use the pure-Python source tree')
    except ImportError:
        pass
    if not os.path.isdir(OUTDIR):
        os.makedirs(OUTDIR)
    for sc in scenarios.SCENARIOS:
        out = run_scenario(sc)
        path = os.path.join(OUTDIR, sc['name'] + '.json')
        with open(path, 'w') as f:
            json.dump(out, f, indent=1, sort_keys=True)
            f.write('\n')
        errors = sum(1 for o in out['ops'] if 'error' in o)
        print '%s: %d ops (%d errors), %d pairs' % (path, len(out['ops']), errors,
                                                  len(out['dump']))


if __name__ == '__main__':
    main()
