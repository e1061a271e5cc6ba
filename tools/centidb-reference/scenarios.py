# -*- coding: utf-8 -*-
"""Scenarios for gen.py: ops with Python values (the arguments the original is called with).

Scenario numbers continue those of the shared vectors (01, 02 and 04 come from the lead's
generator): 03 indexes, 05 collections and metadata, 06 key types, 07 reverse iteration
through batches, 08 batch members, 09 reopen with encoders.
"""

import datetime
import uuid

PROFILE_NOTES = [
    "github.com/dw/acid commit 9402b10 (2013-09-29), acid.__version__ 0.0.16 (unreleased): "
    "the last code with the record format of the seed document and a working batch split.",
    "Every operation runs inside \"with store.begin(write=True):\"; ListEngine has no real "
    "transactions (writes before an exception stay).",
    "Known bugs visible here (Strata differs, see docs/format/centidb.md): put over a batch "
    "member without indexes (blind) leaves both values; a put inside a batch's key span hides "
    "the batch's lower members from get(); falsy keys and bounds (0, '', None, False) are "
    "ignored by get/items/find (get(0) returns the first record); batch(preserve=False) leaves "
    "the old batch record; batch(grouper=) closes a batch one record late; index functions "
    "are not applied to records stored before add_index; blind puts leave stale index "
    "entries; Index.items() drops records whose value is falsy; args= ignores reverse and "
    "max; prefix= matches bytes, not whole tuple elements; the Python key decoder is wrong "
    "for negatives below -67823, a UUID in last position and times before 1970.",
]


def fn_item(i):
    return {'fn': 'item', 'index': i}


def fn_items(*ii):
    return {'fn': 'items', 'indices': list(ii)}


def fn_field(name):
    return {'fn': 'field', 'name': name}


def fn_list(*specs):
    return {'fn': 'list', 'of': list(specs)}


def op(kind, **kw):
    d = {'op': kind}
    d.update(kw)
    return d


def open_store(prefix_hex='', reuse=False):
    return op('open_store', prefix_hex=prefix_hex, reuse_engine=reuse)


def add(name, key=None, encoder='key', counter_name=None):
    return op('add_collection', name=name, key_func=key, encoder=encoder,
              counter_name=counter_name)


def put(coll, value, **kw):
    return op('put', collection=coll, value=value, **kw)


def get(coll, key):
    return op('get', collection=coll, key=key)


def delete(coll, key):
    return op('delete', collection=coll, key=key)


def items(coll, **kw):
    return op('items', collection=coll, **kw)


def keys(coll, **kw):
    return op('keys', collection=coll, **kw)


def values(coll, **kw):
    return op('values', collection=coll, **kw)


def find(coll, **kw):
    return op('find', collection=coll, **kw)


def index(kind, coll, name, **kw):
    return op('index_' + kind, collection=coll, index=name, **kw)


def batch(coll, **kw):
    return op('batch', collection=coll, **kw)


def py_call(o):
    args = ', '.join('%s=%r' % (k, v) for k, v in sorted(o.items())
                     if k not in ('op', 'collection', 'index', 'note'))
    if 'collection' in o:
        return "store[%r].%s(%s)" % (o['collection'], o['op'], args)
    return 'store.%s(%s)' % (o['op'], args)

# --------------------------------------------------------------------------------------


def indexes():
    rows = 'rows'
    ops = [
        open_store(),
        add(rows, key=fn_item(0), encoder='pickle'),
        op('add_index', collection=rows, name='by_age', func=fn_item(2)),
        op('add_index', collection=rows, name='by_name_age', func=fn_items(1, 2)),
        op('add_index', collection=rows, name='by_tag', func=fn_item(3)),
        op('add_index', collection=rows, name='multi', func=fn_list(fn_item(1), fn_item(2))),
        put(rows, (1, u'alice', 30, [u'a', u'b'])),
        put(rows, (2, u'bob', 25, [u'b'])),
        put(rows, (3, u'carol', 30, [])),
        put(rows, (4, u'', 0, [u''])),
        put(rows, (5, u'dave', None, [None, u'z'])),
        put(rows, (6, u'erin', False, [0, False])),
        index('pairs', rows, 'by_age'),
        index('pairs', rows, 'by_tag'),
        index('pairs', rows, 'multi'),
        index('pairs', rows, 'by_name_age', reverse=True),
        index('tups', rows, 'by_name_age'),
        index('keys', rows, 'by_age', args=30),
        index('keys', rows, 'by_age', args=(30,)),
        index('items', rows, 'by_age', args=30),
        index('items', rows, 'by_tag'),
        index('values', rows, 'by_tag', lo=u'b'),
        index('pairs', rows, 'by_age', lo=25, hi=30),
        index('pairs', rows, 'by_age', lo=25, hi=30, include=True),
        index('pairs', rows, 'by_age', hi=30, reverse=True),
        index('pairs', rows, 'by_age', max=2),
        index('pairs', rows, 'by_name_age', prefix=(u'alice',)),
        index('count', rows, 'by_tag'),
        index('count', rows, 'by_age', lo=25),
        index('has', rows, 'by_age', x=25),
        index('has', rows, 'by_age', x=26),
        index('has', rows, 'by_tag', x=u''),
        index('get', rows, 'by_age', x=25),
        index('get', rows, 'by_age', x=99),
        index('find', rows, 'by_tag', lo=u'a'),
        op('put', collection=rows, value=(1, u'alice', 31, [u'b', u'c']),
           note='update moves entries: old ones go, new ones come'),
        index('pairs', rows, 'by_age'),
        index('pairs', rows, 'by_tag'),
        op('delete', collection=rows, key=2, note='delete removes its entries'),
        index('pairs', rows, 'by_tag'),
        index('pairs', rows, 'multi'),
        op('put', collection=rows, value=(7, u'frank', 40, [u'x']), key=70,
           note='key= with indexes'),
        index('pairs', rows, 'by_age'),
        op('add_index', collection=rows, name='late', func=fn_item(1),
           note='added after records: the original indexes only later puts'),
        put(rows, (8, u'gina', 20, [])),
        index('pairs', rows, 'late'),
        op('set_blind', collection=rows, blind=True),
        op('put', collection=rows, value=(3, u'carol', 33, [u'q']),
           note='blind put over a record with indexes: the original leaves stale entries'),
        index('pairs', rows, 'by_age'),
        index('items', rows, 'by_age'),
        op('set_blind', collection=rows, blind=False),
        get(rows, 3),
        items(rows),
    ]
    docs = 'docs'
    ops += [
        add(docs, key=fn_field('id'), encoder='json'),
        op('add_index', collection=docs, name='by_kind', func=fn_field('kind')),
        op('add_index', collection=docs, name='by_tags', func=fn_field('tags')),
        put(docs, {'id': 1, 'kind': u'a', 'tags': [u'x', u'y']}),
        put(docs, {'id': 2, 'kind': u'b', 'tags': []}),
        put(docs, {'id': 3, 'kind': u'a', 'tags': [u'y']}),
        put(docs, {'id': 4, 'kind': 0, 'tags': [0]}),
        index('pairs', docs, 'by_kind'),
        index('pairs', docs, 'by_tags'),
        index('items', docs, 'by_kind', args=u'a'),
        index('items', docs, 'by_kind', args=0, note='falsy index tuple (0,)'),
        index('values', docs, 'by_tags', args=u'y', reverse=True, max=1),
        put(docs, {'id': 3, 'kind': u'c', 'tags': [u'y', u'z']}),
        index('pairs', docs, 'by_kind'),
        index('pairs', docs, 'by_tags'),
        delete(docs, 1),
        index('pairs', docs, 'by_tags'),
        items(docs),
    ]
    return ops


def collections_metadata():
    ops = [open_store('6162')]
    for i in range(236):
        ops.append(add('c%03d' % i, key=fn_item(0), encoder='key'))
    ops += [
        put('c000', (1, u'first')),
        put('c230', (1, u'idx 240')),
        put('c231', (1, u'idx 241: a two-byte prefix')),
        put('c235', (2, u'idx 245')),
        get('c231', 1),
        items('c235'),
        add('c000', key=fn_item(0), encoder='key'),
        add('c001', key=fn_item(0), encoder='pickle'),
        add('p', key=fn_item(0), encoder='pickle'),
        add('j', key=fn_field('id'), encoder='json'),
        op('set_blind', collection='p', blind=True),
        op('set_blind', collection='p', blind=False),
        put('p', (1, u'x')),
        put('j', {'id': 5, 'v': 1.5}),
        op('count', name='visits', n=3, init=10),
        op('count', name=u'visits', n=1, init=0),
        op('count', name='\x00private', n=1, init=1),
        open_store('6162', reuse=True),
        add('p', key=fn_item(0), encoder='pickle'),
        add('j', key=fn_field('id'), encoder='json'),
        get('p', 1),
        get('j', 5),
        op('count', name='visits', n=0, init=0),
        add('new_after_reopen', key=fn_item(0), encoder='key'),
        put('new_after_reopen', (9,)),
        open_store('6364', reuse=True),
        add('other', key=fn_item(0), encoder='key'),
        put('other', (1, u'second store')),
        op('count', name='visits', n=1, init=100),
        items('other'),
        open_store('', reuse=True),
        add('root', key=fn_item(0), encoder='key'),
        put('root', (1, u'empty prefix')),
    ]
    return ops


UUID1 = uuid.UUID('12345678-9abc-def0-1234-56789abcdef0')
UUID0 = uuid.UUID(int=0)
UTC = None


def tz(seconds):
    import acid.keylib
    return acid.keylib.FixedOffsetZone(seconds)


def key_types():
    k = 'k'
    scalars = [
        None, -(2 ** 64 - 1) + 1, -67823, -2288, -2287, -241, -240, -1, 0, 1, 240, 241, 2287,
        2288, 67823, 67824, 2 ** 24 - 1, 2 ** 24, 2 ** 32, 2 ** 40, 2 ** 56, 2 ** 64 - 2,
        False, True, '', '\x00', '\x00\x00', '\xff', 'a', 'a\x00', 'ab', 'abcdefgh',
        u'', u'a', u'a\x00', u'\xe9', u'\u65e5\u672c', u'\U0001f600',
        datetime.datetime(2013, 8, 30, 12, 34, 56, 789000, tzinfo=tz(0)),
        datetime.datetime(2013, 8, 30, 12, 34, 56, 789000, tzinfo=tz(19800)),
        datetime.datetime(2013, 8, 30, 12, 34, 56, 789000, tzinfo=tz(-18000)),
        datetime.datetime(2040, 1, 1, tzinfo=tz(0)),
    ]
    ops = [open_store(), add(k, key=fn_item(0), encoder='key')]
    for i, s in enumerate(scalars):
        ops.append(put(k, (s, i)))
    ops += [
        items(k),
        items(k, reverse=True),
        keys(k, lo=-240, hi=241),
        keys(k, lo=True, hi=u'a', include=True),
        keys(k, lo='a', hi='b'),
        keys(k, prefix='a'),
        keys(k, prefix=u'a'),
        values(k, lo=u'\xe9', reverse=True, max=3),
        find(k, lo=2 ** 24),
        find(k, hi=-1, reverse=True),
        get(k, 2 ** 64 - 2),
        get(k, u'\U0001f600'),
        get(k, datetime.datetime(2013, 8, 30, 12, 34, 56, 789000, tzinfo=tz(19800))),
        get(k, 'a\x00'),
        get(k, 12345),
        op('get', collection=k, key=0, note='falsy key: the original returns the first record'),
        op('get', collection=k, key=None, note='falsy key'),
        op('keys', collection=k, lo=0, hi=2, note='falsy lo: the original ignores it'),
        delete(k, 0),
        delete(k, ''),
        delete(k, None),
        keys(k, max=4),
    ]
    t = 'tuples'
    ops += [
        add(t, key=fn_items(0, 1), encoder='pickle'),
        put(t, (1, 1, u'a')),
        put(t, (1, 2, u'b')),
        put(t, (1, u'x', u'c')),
        put(t, (2, None, u'd')),
        put(t, (2, True, u'e')),
        put(t, (UUID1, u'k', u'f')),
        put(t, (UUID1, 'bytes', u'g')),
        put(t, (u'l', datetime.datetime(2001, 1, 1, tzinfo=tz(0)), u'h')),
        items(t),
        items(t, prefix=(1,)),
        items(t, prefix=(UUID1,), reverse=True),
        items(t, lo=(1, 2), hi=(2,)),
        items(t, lo=(1, 2), hi=(2, True), include=True, reverse=True),
        get(t, (UUID1, u'k')),
        delete(t, (1, 2)),
        keys(t),
    ]
    bad = 'decoder_bugs'
    ops += [
        add(bad, key=fn_item(0), encoder='key'),
        op('put', collection=bad, value=(-67824, u'below -67823'),
           note='the Python decoder reads it back wrong'),
        op('put', collection=bad, value=(UUID1, u'uuid last'),
           note='the Python decoder raises short UUID read'),
        op('put', collection=bad, value=(datetime.datetime(1969, 12, 31, 23, 59, 59,
                                                          tzinfo=tz(0)), u'pre-1970'),
           note='the Python decoder reads it back wrong'),
        get(bad, -67824),
        items(bad),
    ]
    return ops


def reverse_batches():
    r = 'r'
    ops = [open_store(), add(r, key=fn_item(0), encoder='key')]
    for i in range(1, 21):
        ops.append(put(r, (i * 10, u'v%d' % i)))
    ops += [
        batch(r, max_recs=4, packer='zlib'),
        items(r, reverse=True),
        keys(r, hi=65, reverse=True),
        keys(r, hi=60, reverse=True),
        keys(r, hi=60, include=True, reverse=True),
        keys(r, hi=80, reverse=True, max=3),
        keys(r, lo=35, hi=115, reverse=True),
        keys(r, lo=40, hi=120, include=True, reverse=True),
        keys(r, lo=35, hi=115),
        values(r, lo=95, max=3),
        find(r, hi=45, reverse=True),
        find(r, lo=45),
        get(r, 10), get(r, 20), get(r, 40), get(r, 50), get(r, 200), get(r, 15),
        keys(r, key=70),
    ]
    t = 'rt'
    ops += [add(t, key=fn_items(0, 1), encoder='key')]
    for g in (1, 2, 3):
        for n in range(1, 6):
            ops.append(put(t, (g, n, u'%d.%d' % (g, n))))
    ops += [
        batch(t, max_recs=4, packer='plain'),
        keys(t, prefix=(2,), reverse=True),
        keys(t, prefix=(2,)),
        items(t, lo=(1, 3), hi=(3, 2), reverse=True),
        items(t, lo=(1, 3), hi=(3, 2), include=True, reverse=True, max=5),
        get(t, (2, 5)),
        get(t, (3, 1)),
    ]
    return ops


def batch_members():
    b = 'b'
    ops = [open_store(), add(b, key=fn_item(0), encoder='key')]
    for i in range(1, 13):
        ops.append(put(b, (i * 10, u'v%d' % i)))
    ops += [
        batch(b, max_recs=4, packer='zlib'),
        op('delete', collection=b, key=10, note='first member of [10..40]'),
        op('delete', collection=b, key=70, note='middle member of [50..80]'),
        op('delete', collection=b, key=120, note='last member of [90..120]'),
        items(b),
        batch(b, max_recs=3, packer='zlib', note='re-batch what the splits left'),
        op('put', collection=b, value=(60, u'replaced'),
           note='replace of a batch member without indexes'),
        get(b, 60),
        items(b, lo=50, hi=90),
        op('put', collection=b, value=(95, u'inside a span'),
           note='a new key inside a batch span'),
        get(b, 90),
        get(b, 100),
        items(b, lo=85, hi=115, include=True),
        items(b, reverse=True),
        batch(b, max_recs=20, preserve=False, packer='plain',
              note='preserve=False: existing batches join the new one'),
        items(b),
        get(b, 100),
    ]
    i = 'bi'
    ops += [
        add(i, key=fn_item(0), encoder='key'),
        op('add_index', collection=i, name='by_v', func=fn_item(1)),
    ]
    for n in range(1, 9):
        ops.append(put(i, (n, u'v%d' % (n % 3))))
    ops += [
        batch(i, max_recs=4, packer='zlib'),
        index('pairs', i, 'by_v'),
        op('put', collection=i, value=(2, u'new'), note='replace with an index: split'),
        op('delete', collection=i, key=6, note='delete with an index: split'),
        index('pairs', i, 'by_v'),
        op('put', collection=i, value=(3, u'zz'), packer='zlib',
           note='replace of a now-single record with a packer'),
        get(i, 3),
        index('items', i, 'by_v'),
        batch(i, lo=5, hi=8, max_recs=2, packer='plain', note='lo..hi, both inclusive'),
        batch(i, max_recs=2, max_phys=2, packer='zlib', note='max_phys'),
        items(i),
        index('pairs', i, 'by_v'),
    ]
    p = 'bp'
    ops += [add(p, key=fn_items(0, 1), encoder='key')]
    for g in (u'a', u'b'):
        for n in range(1, 5):
            ops.append(put(p, (g, n, n * 11)))
    ops += [
        batch(p, prefix=(u'b',), max_recs=3, packer='zlib'),
        items(p),
        delete(p, (u'b', 2)),
        items(p, prefix=(u'b',), reverse=True),
    ]
    return ops


def reopen_encoders():
    j = 'j'
    ops = [
        open_store(),
        add(j, key=fn_field('id'), encoder='json'),
        put(j, {'id': 1, 'text': u'plain'}),
        put(j, {'id': 2, 'text': u'bz2 packed'}, packer='bz2'),
        put(j, {'id': 3, 'text': u'zlib packed'}, packer='zlib'),
        put(j, {'id': 4, 'text': u'four'}),
        put(j, {'id': 5, 'text': u'five'}),
        batch(j, lo=4, max_recs=5, packer='bz2'),
        open_store(reuse=True),
        add(j, key=fn_field('id'), encoder='json'),
        op('get', collection=j, key=2,
           note='a new Store does not know bz2 until add_encoder: the original fails'),
        get(j, 3),
        op('add_encoder', name='bz2'),
        get(j, 2),
        items(j),
        op('add_collection', name=j, key_func=fn_field('id'), encoder='pickle',
           counter_name=None, note='a different encoder: refused'),
        add('auto', encoder='pickle'),
        put('auto', {'a': 1}),
        put('auto', [1, 2, 3]),
        open_store(reuse=True),
        add('auto', encoder='pickle'),
        put('auto', {'b': 2}),
        items('auto'),
        op('count', name='key:auto', n=0, init=1),
    ]
    return ops


SCENARIOS = [
    {'name': '03-indexes', 'title': 'secondary indexes: scalar, tuple, list and falsy values, '
     'updates, deletes, every Index query', 'ops': indexes()},
    {'name': '05-collections-metadata', 'title': 'many collections (two-byte prefixes), '
     'metadata rows, reopen, several store prefixes on one engine',
     'ops': collections_metadata()},
    {'name': '06-key-types', 'title': 'every key type, order across kinds, bounds, prefixes, '
     'falsy keys and the original decoder\'s bugs', 'ops': key_types()},
    {'name': '07-reverse-batches', 'title': 'reverse iteration through batches with bounds',
     'ops': reverse_batches()},
    {'name': '08-batch-members', 'title': 'delete and replace of batch members with and '
     'without indexes, puts inside a batch span, preserve=False, max_phys, prefix',
     'ops': batch_members()},
    {'name': '09-reopen-encoders', 'title': 'reopening a store with user packers and encoders',
     'ops': reopen_encoders()},
]
