//! The serializer: a `T: Serialize` straight to stored item bytes, byte-identical to
//! [`crate::item_codec::encode_item`] of the equivalent [`crate::Item`] (see the module docs of
//! [`crate::item_serde`] for the mapping).

use std::fmt;

use serde::ser::{self, Impossible, Serialize};

use crate::item_codec::{
    put_bytes, put_varint, zigzag, ITEM_FORMAT, MAX_DEPTH, T_BYTES, T_F32, T_F64, T_FALSE, T_INT,
    T_LIST, T_MAP, T_NULL, T_TEXT, T_TRUE,
};
use crate::schema::{KeyField, MAX_KEY_FIELDS};

/// Why a value does not serialize as an item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SerError(pub(crate) String);

impl fmt::Display for SerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SerError {}

impl ser::Error for SerError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        SerError(msg.to_string())
    }
}

type R = Result<(), SerError>;

/// Serializes `value` as a stored item (format byte, then the attribute map). The value must
/// serialize as a struct or a map with text keys.
pub fn to_item_bytes<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, SerError> {
    item_bytes(value, None)
}

/// [`to_item_bytes`] into `out` (its previous contents are dropped; its allocation is kept),
/// recording in `spots` where the key attributes of a table are in the bytes (see
/// [`KeySpots`]). On an error `out` holds a partial item, to be cleared by the next use.
pub(crate) fn to_item_bytes_keyed_into<T: Serialize + ?Sized>(
    value: &T,
    spots: &mut KeySpots<'_>,
    out: &mut Vec<u8>,
) -> R {
    item_bytes_into(value, Some(spots), out)
}

fn item_bytes<T: Serialize + ?Sized>(
    value: &T,
    capture: Option<&mut KeySpots<'_>>,
) -> Result<Vec<u8>, SerError> {
    // Most rows fit; a larger item grows as it is written.
    let mut out = Vec::with_capacity(128);
    item_bytes_into(value, capture, &mut out)?;
    Ok(out)
}

fn item_bytes_into<T: Serialize + ?Sized>(
    value: &T,
    capture: Option<&mut KeySpots<'_>>,
    out: &mut Vec<u8>,
) -> R {
    // Empty: the item's own map is the first thing written (see `MapEnc::new`).
    out.clear();
    value.serialize(Enc {
        out,
        depth: 0,
        capture,
    })?;
    match out.first() {
        // The value was written as a map attribute: its tag becomes the format byte.
        Some(&T_MAP) => {
            out[0] = ITEM_FORMAT;
            Ok(())
        }
        _ => Err(SerError(
            "an item must serialize as a struct or a map with text keys".into(),
        )),
    }
}

/// Where a table's key attributes lie in the bytes of an item being serialized: the item's
/// own map records, for each key field, the offset of its attribute's tag, so that a typed put
/// builds its key from the bytes it just wrote, without looking the attributes up again.
pub(crate) struct KeySpots<'k> {
    partition: &'k [KeyField],
    sort: &'k [KeyField],
    /// For key field `i` (partition fields, then sort fields): the offset of its attribute's
    /// tag in the item bytes, `usize::MAX` when the item has no such attribute.
    pub(crate) at: [usize; MAX_KEY_FIELDS],
    /// True once the item's own map recorded the spots. False when the value was not written
    /// as a struct or map at the top (an enum variant with data: `{variant: data}`); then
    /// `at` says nothing.
    pub(crate) done: bool,
}

impl<'k> KeySpots<'k> {
    /// Spots for the key fields `partition` then `sort` (at most [`MAX_KEY_FIELDS`] in all).
    pub(crate) fn new(partition: &'k [KeyField], sort: &'k [KeyField]) -> KeySpots<'k> {
        KeySpots {
            partition,
            sort,
            at: [usize::MAX; MAX_KEY_FIELDS],
            done: false,
        }
    }

    /// Records the spots of a struct's fields `fields` (distinct names; field `i`'s tag is at
    /// `value_at(i)`), as [`KeySpots::record`] of each field would, using `guess` (the field
    /// index of each key field, from the struct's type) when it holds: each guessed field
    /// has its key field's name, so it is the one field of that name. Otherwise the names are
    /// compared and the guess is renewed.
    fn record_known(
        &mut self,
        fields: &[&'static str],
        value_at: impl Fn(usize) -> usize,
        guess: [u8; KEY_GUESSES],
    ) {
        self.done = true;
        let nk = self.partition.len() + self.sort.len();
        let keys = self.partition.iter().chain(self.sort.iter());
        if nk <= KEY_GUESSES
            && keys
                .clone()
                .zip(guess)
                .all(|(f, g)| fields.get(usize::from(g)) == Some(&f.name.as_str()))
        {
            for (at, &g) in self.at.iter_mut().zip(&guess[..nk]) {
                *at = value_at(usize::from(g));
            }
            return;
        }
        let mut renewed = [NO_FIELD; KEY_GUESSES];
        for (i, name) in fields.iter().enumerate() {
            // The first key field of that name, as `record` takes.
            if let Some(j) = keys
                .clone()
                .take(MAX_KEY_FIELDS)
                .position(|f| f.name == *name)
            {
                self.at[j] = value_at(i);
                if let Some(g) = renewed.get_mut(j) {
                    *g = i as u8;
                }
            }
        }
        if nk <= KEY_GUESSES {
            remember_keys(fields, renewed);
        }
    }

    /// Records attribute `name` whose tag is at `pos`.
    fn record(&mut self, name: &[u8], pos: usize) {
        let fields = self.partition.iter().chain(self.sort.iter());
        for (i, f) in fields.enumerate().take(MAX_KEY_FIELDS) {
            if f.name.as_bytes() == name {
                self.at[i] = pos;
                return;
            }
        }
    }
}

/// Writes one attribute (tag and payload) at nesting level `depth` (a top-level attribute is
/// level 1; the item's own map is level 0). `capture` is only ever set for the item itself.
pub(crate) struct Enc<'a, 'k> {
    pub(crate) out: &'a mut Vec<u8>,
    pub(crate) depth: usize,
    pub(crate) capture: Option<&'a mut KeySpots<'k>>,
}

impl Enc<'_, '_> {
    fn int(self, v: i128) -> R {
        self.out.push(T_INT);
        put_varint(self.out, zigzag(v));
        Ok(())
    }

    fn text(self, s: &str) -> R {
        self.out.push(T_TEXT);
        put_bytes(self.out, s.as_bytes());
        Ok(())
    }

    /// A list, map or tuple may sit at levels 1 to `MAX_DEPTH` (the rule of `encode_item`).
    fn nest(&self) -> R {
        if self.depth > MAX_DEPTH {
            return Err(SerError(format!(
                "nested deeper than {MAX_DEPTH} levels of lists and maps"
            )));
        }
        Ok(())
    }

    /// Starts a one-entry map `{variant: …}` (an enum variant with data, externally tagged as
    /// in JSON); returns the level of the entry's value.
    fn variant_map(&mut self, variant: &str) -> Result<usize, SerError> {
        self.nest()?;
        self.out.push(T_MAP);
        put_varint(self.out, 1);
        put_bytes(self.out, variant.as_bytes());
        Ok(self.depth + 1)
    }
}

/// A list being written: elements follow a count, known up front or inserted at the end.
pub(crate) struct SeqEnc<'a> {
    out: &'a mut Vec<u8>,
    depth: usize,
    /// Where the count goes (when not known up front).
    at: usize,
    expected: Option<usize>,
    n: usize,
}

impl<'a> SeqEnc<'a> {
    fn new(enc: Enc<'a, '_>, len: Option<usize>) -> Result<SeqEnc<'a>, SerError> {
        enc.nest()?;
        enc.out.push(T_LIST);
        if let Some(n) = len {
            put_varint(enc.out, n as u128);
        }
        let at = enc.out.len();
        Ok(SeqEnc {
            out: enc.out,
            depth: enc.depth + 1,
            at,
            expected: len,
            n: 0,
        })
    }

    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        self.n += 1;
        v.serialize(Enc {
            out: self.out,
            depth: self.depth,
            capture: None,
        })
    }

    fn finish(self) -> R {
        match self.expected {
            Some(n) if n == self.n => Ok(()),
            Some(n) => Err(SerError(format!(
                "a sequence announced {n} elements and gave {}",
                self.n
            ))),
            None => {
                let mut count = Vec::with_capacity(3);
                put_varint(&mut count, self.n as u128);
                self.out.splice(self.at..self.at, count);
                Ok(())
            }
        }
    }
}

mod order;

use order::{
    known_fields, known_order, move_entries, name_head, name_order, perm_of, remember_keys,
    remember_order, Entries, Entry, Known, KEY_GUESSES, NO_FIELD,
};

/// A map or struct being written: entries go straight into the output in the order they come
/// (name, then attribute), after a count sized for the announced length. At the end the count
/// is set, and when the names did not come in ascending byte order (the stored order; struct
/// fields come in declaration order) the entries are moved into name order through a copy of
/// their bytes; a name given twice is refused. A struct of a type written before on this
/// thread takes the name order found then (see [`KnownFields`]) without comparing names.
pub(crate) struct MapEnc<'a, 'k> {
    out: &'a mut Vec<u8>,
    depth: usize,
    /// Where the count starts, and the bytes reserved for it.
    count_at: usize,
    count_len: usize,
    entries: Entries,
    /// The names of a struct's first 8 fields, as its `Serialize` gave them.
    fields: [&'static str; 8],
    /// True while every entry is a struct field in `fields` (false for a map, or past 8).
    all_fields: bool,
    key: Option<String>,
    capture: Option<&'a mut KeySpots<'k>>,
}

impl<'a, 'k> MapEnc<'a, 'k> {
    /// Starts a map (`is_struct` false) or a struct of `len` fields.
    fn new(
        enc: Enc<'a, 'k>,
        len: Option<usize>,
        is_struct: bool,
    ) -> Result<MapEnc<'a, 'k>, SerError> {
        enc.nest()?;
        // Only the item's own map (the first thing written) records the key attributes.
        let capture = if enc.out.is_empty() {
            enc.capture
        } else {
            None
        };
        enc.out.push(T_MAP);
        let count_at = enc.out.len();
        put_varint(enc.out, len.unwrap_or(0) as u128);
        let count_len = enc.out.len() - count_at;
        Ok(MapEnc {
            out: enc.out,
            depth: enc.depth + 1,
            count_at,
            count_len,
            entries: Entries::new(),
            fields: [""; 8],
            all_fields: is_struct,
            key: None,
            capture,
        })
    }

    /// Writes a struct field (its name a `&'static str`: see [`KnownFields`]).
    fn field<T: Serialize + ?Sized>(&mut self, name: &'static str, v: &T) -> R {
        match self.fields.get_mut(self.entries.len) {
            Some(f) => *f = name,
            None => self.all_fields = false,
        }
        self.entry(name, v)
    }

    fn entry<T: Serialize + ?Sized>(&mut self, name: &str, v: &T) -> R {
        let start = self.out.len();
        put_bytes(self.out, name.as_bytes());
        let value_at = self.out.len();
        let e = Entry {
            start,
            name_at: value_at - name.len(),
            value_at,
            // Set when the names are compared (see `MapEnc::place`).
            head: 0,
        };
        let r = v.serialize(Enc {
            out: self.out,
            depth: self.depth,
            capture: None,
        });
        if let Err(SerError(e)) = r {
            return Err(SerError(format!("attribute {name:?}: {e}")));
        }
        self.entries.push(e);
        Ok(())
    }

    /// Moves the entries (from `first` on) into name order, recording each one's final (name
    /// start, value start) in `placed`; refuses a name given twice.
    fn place(&mut self, first: usize, placed: &mut [(usize, usize)]) -> R {
        let n = self.entries.len;
        let fields = (self.all_fields && (2..=8).contains(&n)).then(|| &self.fields[..n]);
        let order = fields.and_then(known_order);
        let out: &mut Vec<u8> = self.out;
        let entries = match order {
            // A struct type seen before: its names were compared then.
            Some(_) => self.entries.as_slice(),
            None => {
                let entries = self.entries.as_mut_slice();
                for e in entries.iter_mut() {
                    e.head = name_head(&out[e.name_at..e.value_at]);
                }
                entries
            }
        };
        let in_place = |placed: &mut [(usize, usize)]| {
            for (p, e) in placed.iter_mut().zip(entries) {
                *p = (e.name_at, e.value_at);
            }
        };
        if let Some(order) = order {
            let order = &order[..n];
            if order.iter().enumerate().all(|(i, &o)| usize::from(o) == i) {
                in_place(placed);
            } else {
                move_entries(
                    out,
                    first,
                    entries,
                    order.iter().map(|&o| usize::from(o)),
                    placed,
                );
            }
            return Ok(());
        }
        // Strictly ascending: in name order, no name twice (equal names take the sorting
        // path, which refuses them).
        let sorted = entries.windows(2).all(|w| {
            w[0].head < w[1].head
                || (w[0].head == w[1].head
                    && out[w[0].name_at..w[0].value_at] < out[w[1].name_at..w[1].value_at])
        });
        let mut order_inline = [0usize; 8];
        let mut order_heap = Vec::new();
        let order: &mut [usize] = if n <= order_inline.len() {
            &mut order_inline[..n]
        } else {
            order_heap.resize(n, 0);
            &mut order_heap
        };
        if sorted {
            for (i, o) in order.iter_mut().enumerate() {
                *o = i;
            }
            in_place(placed);
        } else {
            name_order(out, entries, order)?;
            move_entries(out, first, entries, order.iter().copied(), placed);
        }
        if let Some(fields) = fields {
            remember_order(fields, perm_of(order));
        }
        Ok(())
    }

    fn finish(mut self) -> R {
        let n = self.entries.len;
        if self.all_fields && (2..=8).contains(&n) && self.count_len == 1 {
            if let Some(known) = known_fields(&self.fields[..n]) {
                self.finish_known(n, known);
                return Ok(());
            }
        }
        let first = self.count_at + self.count_len;
        // Final (name start, value start) of each entry, in name order.
        let mut inline = [(0usize, 0usize); 8];
        let mut heap = Vec::new();
        let placed: &mut [(usize, usize)] = if n <= inline.len() {
            &mut inline[..n]
        } else {
            heap.resize(n, (0, 0));
            &mut heap
        };
        self.place(first, placed)?;
        // The count: in place when its length is the one reserved, else moved in.
        let mut count = [0u8; 19];
        let mut c = Vec::with_capacity(0);
        let count_bytes: &[u8] = if n < 0x80 {
            count[0] = n as u8;
            &count[..1]
        } else {
            put_varint(&mut c, n as u128);
            &c
        };
        let shift = count_bytes.len() as isize - self.count_len as isize;
        if shift == 0 {
            self.out[self.count_at..first].copy_from_slice(count_bytes);
        } else {
            self.out
                .splice(self.count_at..first, count_bytes.iter().copied());
        }
        if let Some(spots) = self.capture.take() {
            for &(pn, pv) in placed.iter() {
                let at = |x: usize| (x as isize + shift) as usize;
                spots.record(&self.out[at(pn)..at(pv)], at(pv));
            }
            spots.done = true;
        }
        Ok(())
    }
}

impl MapEnc<'_, '_> {
    /// [`MapEnc::finish`] of a struct of `n` fields (2 to 8, its count one byte) whose type's
    /// name order is known on this thread: no name is compared. The entries are copied after
    /// themselves at the end of the output and back in name order (no stack buffer to clear),
    /// and the key attributes' spots come from the type's guess of which fields hold them,
    /// checked by name (see [`KeySpots::record_known`]).
    fn finish_known(&mut self, n: usize, known: Known) {
        let first = self.count_at + 1;
        self.out[self.count_at] = n as u8;
        let entries = self.entries.as_slice();
        let end = self.out.len();
        // Where each entry (in declaration order) starts once placed.
        let mut start = [0usize; 8];
        let order = &known.order[..n];
        if order.iter().enumerate().all(|(k, &o)| usize::from(o) == k) {
            for (s, e) in start.iter_mut().zip(entries) {
                *s = e.start;
            }
        } else {
            self.out.extend_from_within(first..end);
            // Entry bytes at `x` have their copy at `x + copied`.
            let copied = end - first;
            let mut w = first;
            for &o in order {
                let i = usize::from(o);
                let from = entries[i].start;
                let stop = entries.get(i + 1).map_or(end, |x| x.start);
                self.out.copy_within(from + copied..stop + copied, w);
                start[i] = w;
                w += stop - from;
            }
            self.out.truncate(end);
        }
        if let Some(spots) = self.capture.take() {
            let value_at = |i: usize| start[i] + (entries[i].value_at - entries[i].start);
            spots.record_known(&self.fields[..n], value_at, known.keys);
        }
    }
}

impl<'a, 'k> ser::Serializer for Enc<'a, 'k> {
    type Ok = ();
    type Error = SerError;
    type SerializeSeq = SeqEnc<'a>;
    type SerializeTuple = SeqEnc<'a>;
    type SerializeTupleStruct = SeqEnc<'a>;
    type SerializeTupleVariant = SeqEnc<'a>;
    type SerializeMap = MapEnc<'a, 'k>;
    type SerializeStruct = MapEnc<'a, 'k>;
    type SerializeStructVariant = MapEnc<'a, 'k>;

    fn serialize_bool(self, v: bool) -> R {
        self.out.push(if v { T_TRUE } else { T_FALSE });
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> R {
        self.int(v.into())
    }
    fn serialize_i16(self, v: i16) -> R {
        self.int(v.into())
    }
    fn serialize_i32(self, v: i32) -> R {
        self.int(v.into())
    }
    fn serialize_i64(self, v: i64) -> R {
        self.int(v.into())
    }
    fn serialize_i128(self, v: i128) -> R {
        self.int(v)
    }
    fn serialize_u8(self, v: u8) -> R {
        self.int(v.into())
    }
    fn serialize_u16(self, v: u16) -> R {
        self.int(v.into())
    }
    fn serialize_u32(self, v: u32) -> R {
        self.int(v.into())
    }
    fn serialize_u64(self, v: u64) -> R {
        self.int(v.into())
    }
    fn serialize_u128(self, v: u128) -> R {
        let v = i128::try_from(v)
            .map_err(|_| SerError(format!("integer {v} is out of range (128-bit signed)")))?;
        self.int(v)
    }
    fn serialize_f32(self, v: f32) -> R {
        self.out.push(T_F32);
        self.out.extend_from_slice(&v.to_bits().to_be_bytes());
        Ok(())
    }
    fn serialize_f64(self, v: f64) -> R {
        self.out.push(T_F64);
        self.out.extend_from_slice(&v.to_bits().to_be_bytes());
        Ok(())
    }
    fn serialize_char(self, v: char) -> R {
        self.text(v.encode_utf8(&mut [0u8; 4]))
    }
    fn serialize_str(self, v: &str) -> R {
        self.text(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> R {
        self.out.push(T_BYTES);
        put_bytes(self.out, v);
        Ok(())
    }
    fn serialize_none(self) -> R {
        self.out.push(T_NULL);
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> R {
        value.serialize(self)
    }
    fn serialize_unit(self) -> R {
        self.serialize_none()
    }
    fn serialize_unit_struct(self, _name: &'static str) -> R {
        self.serialize_none()
    }
    fn serialize_unit_variant(self, _name: &'static str, _i: u32, variant: &'static str) -> R {
        self.text(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, v: &T) -> R {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        mut self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        v: &T,
    ) -> R {
        let depth = self.variant_map(variant)?;
        v.serialize(Enc {
            out: self.out,
            depth,
            capture: None,
        })
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqEnc<'a>, SerError> {
        SeqEnc::new(self, len)
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqEnc<'a>, SerError> {
        SeqEnc::new(self, Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<SeqEnc<'a>, SerError> {
        SeqEnc::new(self, Some(len))
    }
    fn serialize_tuple_variant(
        mut self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<SeqEnc<'a>, SerError> {
        let depth = self.variant_map(variant)?;
        SeqEnc::new(
            Enc {
                out: self.out,
                depth,
                capture: None,
            },
            Some(len),
        )
    }
    fn serialize_map(self, len: Option<usize>) -> Result<MapEnc<'a, 'k>, SerError> {
        MapEnc::new(self, len, false)
    }
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<MapEnc<'a, 'k>, SerError> {
        MapEnc::new(self, Some(len), true)
    }
    fn serialize_struct_variant(
        mut self,
        _name: &'static str,
        _i: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<MapEnc<'a, 'k>, SerError> {
        let depth = self.variant_map(variant)?;
        MapEnc::new(
            Enc {
                out: self.out,
                depth,
                capture: None,
            },
            Some(len),
            true,
        )
    }
}

/// Sequences, tuples, tuple structs and tuple variants all encode as a list: one impl each, as
/// serde requires, all forwarding to `SeqEnc::element` / `SeqEnc::finish`.
macro_rules! seq_like {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for SeqEnc<'_> {
            type Ok = ();
            type Error = SerError;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
                self.element(v)
            }
            fn end(self) -> R {
                self.finish()
            }
        }
    )*};
}

seq_like!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for MapEnc<'_, '_> {
    type Ok = ();
    type Error = SerError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> R {
        self.key = Some(key.serialize(KeyName)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> R {
        let name = self
            .key
            .take()
            .ok_or_else(|| SerError("a map value without a key".into()))?;
        self.entry(&name, v)
    }
    fn end(self) -> R {
        self.finish()
    }
}

impl ser::SerializeStruct for MapEnc<'_, '_> {
    type Ok = ();
    type Error = SerError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, name: &'static str, v: &T) -> R {
        self.field(name, v)
    }
    fn end(self) -> R {
        self.finish()
    }
}

impl ser::SerializeStructVariant for MapEnc<'_, '_> {
    type Ok = ();
    type Error = SerError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, name: &'static str, v: &T) -> R {
        self.field(name, v)
    }
    fn end(self) -> R {
        self.finish()
    }
}

/// Serializes a map key: attribute names are text.
struct KeyName;

fn not_text<T>(what: &str) -> Result<T, SerError> {
    Err(SerError(format!(
        "attribute names are text, a map key was {what}"
    )))
}

impl ser::Serializer for KeyName {
    type Ok = String;
    type Error = SerError;
    type SerializeSeq = Impossible<String, SerError>;
    type SerializeTuple = Impossible<String, SerError>;
    type SerializeTupleStruct = Impossible<String, SerError>;
    type SerializeTupleVariant = Impossible<String, SerError>;
    type SerializeMap = Impossible<String, SerError>;
    type SerializeStruct = Impossible<String, SerError>;
    type SerializeStructVariant = Impossible<String, SerError>;

    fn serialize_str(self, v: &str) -> Result<String, SerError> {
        Ok(v.to_owned())
    }
    fn serialize_char(self, v: char) -> Result<String, SerError> {
        Ok(v.to_string())
    }
    fn serialize_unit_variant(
        self,
        _n: &'static str,
        _i: u32,
        variant: &'static str,
    ) -> Result<String, SerError> {
        Ok(variant.to_owned())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _n: &'static str,
        v: &T,
    ) -> Result<String, SerError> {
        v.serialize(self)
    }
    fn serialize_bool(self, _: bool) -> Result<String, SerError> {
        not_text("a bool")
    }
    fn serialize_i8(self, _: i8) -> Result<String, SerError> {
        not_text("an integer")
    }
    fn serialize_i16(self, _: i16) -> Result<String, SerError> {
        not_text("an integer")
    }
    fn serialize_i32(self, _: i32) -> Result<String, SerError> {
        not_text("an integer")
    }
    fn serialize_i64(self, _: i64) -> Result<String, SerError> {
        not_text("an integer")
    }
    fn serialize_u8(self, _: u8) -> Result<String, SerError> {
        not_text("an integer")
    }
    fn serialize_u16(self, _: u16) -> Result<String, SerError> {
        not_text("an integer")
    }
    fn serialize_u32(self, _: u32) -> Result<String, SerError> {
        not_text("an integer")
    }
    fn serialize_u64(self, _: u64) -> Result<String, SerError> {
        not_text("an integer")
    }
    fn serialize_f32(self, _: f32) -> Result<String, SerError> {
        not_text("a float")
    }
    fn serialize_f64(self, _: f64) -> Result<String, SerError> {
        not_text("a float")
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, SerError> {
        not_text("bytes")
    }
    fn serialize_none(self) -> Result<String, SerError> {
        not_text("none")
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<String, SerError> {
        not_text("an option")
    }
    fn serialize_unit(self) -> Result<String, SerError> {
        not_text("unit")
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, SerError> {
        not_text("a unit struct")
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, SerError> {
        not_text("an enum variant with data")
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, SerError> {
        not_text("a sequence")
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, SerError> {
        not_text("a tuple")
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, SerError> {
        not_text("a tuple struct")
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, SerError> {
        not_text("an enum variant with data")
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, SerError> {
        not_text("a map")
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, SerError> {
        not_text("a struct")
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, SerError> {
        not_text("an enum variant with data")
    }
}
