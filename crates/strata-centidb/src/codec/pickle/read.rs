//! The pickle reader: protocols 0–2, value types only, bounded.

use std::collections::HashMap;

use strata_key::Time;
use uuid::Uuid;

use super::{days_from_civil, err, MAX_DEPTH};
use crate::doc::Doc;
use crate::error::Result;

/// An object under construction: containers refer to other objects by index, so that a
/// memoised list that is appended to later is seen complete through every reference.
#[derive(Debug, Clone)]
enum Obj {
    Scalar(Doc),
    /// A long in 2^127 ..= 2^128 − 1: only a UUID's state may hold one.
    U128(u128),
    Tuple(Vec<usize>),
    List(Vec<usize>),
    Dict(Vec<(usize, usize)>),
    /// A class or function named by GLOBAL.
    Global(&'static str),
    /// `uuid.UUID` created by NEWOBJ or `copy_reg._reconstructor`, waiting for its state.
    PendingUuid,
}

#[derive(Debug, Clone, Copy)]
enum Slot {
    Mark,
    Obj(usize),
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    arena: Vec<Obj>,
    stack: Vec<Slot>,
    memo: HashMap<u32, usize>,
}

/// Globals a pickle may name.
const GLOBALS: &[(&str, &str, &str)] = &[
    ("uuid", "UUID", "uuid.UUID"),
    ("datetime", "datetime", "datetime.datetime"),
    ("copy_reg", "_reconstructor", "copy_reg._reconstructor"),
    ("__builtin__", "object", "object"),
];

impl<'a> Reader<'a> {
    fn fail<T>(&self, reason: impl Into<String>) -> Result<T> {
        Err(err(format!("at byte {}: {}", self.pos, reason.into())))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        match self.data.get(self.pos..self.pos.saturating_add(n)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => self.fail(format!("truncated: needs {n} more bytes")),
        }
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn line(&mut self) -> Result<&'a [u8]> {
        let rest = &self.data[self.pos..];
        match rest.iter().position(|&c| c == b'\n') {
            Some(n) => {
                self.pos += n + 1;
                Ok(&rest[..n])
            }
            None => self.fail("unterminated line"),
        }
    }

    fn new_obj(&mut self, o: Obj) -> usize {
        self.arena.push(o);
        self.arena.len() - 1
    }

    fn push(&mut self, o: Obj) {
        let i = self.new_obj(o);
        self.stack.push(Slot::Obj(i));
    }

    fn push_scalar(&mut self, d: Doc) {
        self.push(Obj::Scalar(d));
    }

    fn pop(&mut self) -> Result<usize> {
        match self.stack.pop() {
            Some(Slot::Obj(i)) => Ok(i),
            Some(Slot::Mark) => self.fail("unexpected MARK on the stack"),
            None => self.fail("stack underflow"),
        }
    }

    fn top(&self) -> Result<usize> {
        match self.stack.last() {
            Some(Slot::Obj(i)) => Ok(*i),
            _ => self.fail("no object on the stack"),
        }
    }

    /// Pops everything down to the last MARK (and the MARK).
    fn pop_mark(&mut self) -> Result<Vec<usize>> {
        let Some(m) = self.stack.iter().rposition(|s| matches!(s, Slot::Mark)) else {
            return self.fail("no MARK on the stack");
        };
        let items = self.stack.split_off(m + 1);
        self.stack.pop();
        Ok(items
            .into_iter()
            .map(|s| match s {
                Slot::Obj(i) => i,
                Slot::Mark => usize::MAX,
            })
            .collect())
    }

    fn memo_put(&mut self, id: u32) -> Result<()> {
        let i = self.top()?;
        self.memo.insert(id, i);
        Ok(())
    }

    fn memo_get(&mut self, id: u32) -> Result<()> {
        match self.memo.get(&id) {
            Some(&i) => {
                self.stack.push(Slot::Obj(i));
                Ok(())
            }
            None => self.fail(format!("memo {id} was never stored")),
        }
    }

    fn append(&mut self, list: usize, items: &[usize]) -> Result<()> {
        match &mut self.arena[list] {
            Obj::List(v) => {
                v.extend_from_slice(items);
                Ok(())
            }
            _ => self.fail("APPEND to something that is not a list"),
        }
    }

    /// A dict key in Python terms: equal keys replace each other's values.
    fn set_items(&mut self, dict: usize, pairs: &[usize]) -> Result<()> {
        if !pairs.len().is_multiple_of(2) {
            return self.fail("SETITEMS with an odd number of items");
        }
        for kv in pairs.chunks(2) {
            let key = self.scalar_key(kv[0])?;
            let Obj::Dict(entries) = &self.arena[dict] else {
                return self.fail("SETITEM on something that is not a dict");
            };
            let existing = entries.iter().position(|(k, _)| {
                matches!(&self.arena[*k], Obj::Scalar(d) if d.py_eq(&key))
                    || self.hashable_eq(*k, kv[0])
            });
            let Obj::Dict(entries) = &mut self.arena[dict] else {
                unreachable_dict()
            };
            match existing {
                Some(p) => entries[p].1 = kv[1],
                None => entries.push((kv[0], kv[1])),
            }
        }
        Ok(())
    }

    /// Dict keys must be hashable: scalars, or tuples of them.
    fn scalar_key(&self, i: usize) -> Result<Doc> {
        match &self.arena[i] {
            Obj::Scalar(d) => Ok(d.clone()),
            Obj::Tuple(_) => Ok(Doc::None), // compared structurally by hashable_eq
            _ => self.fail("unhashable dict key (a list or dict)"),
        }
    }

    fn hashable_eq(&self, a: usize, b: usize) -> bool {
        match (&self.arena[a], &self.arena[b]) {
            (Obj::Tuple(x), Obj::Tuple(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(p, q)| self.hashable_eq(*p, *q))
            }
            (Obj::Scalar(x), Obj::Scalar(y)) => x.py_eq(y),
            _ => false,
        }
    }

    fn global(&mut self) -> Result<()> {
        let module = self.line()?;
        let name = self.line()?;
        for (m, n, full) in GLOBALS {
            if module == m.as_bytes() && name == n.as_bytes() {
                self.push(Obj::Global(full));
                return Ok(());
            }
        }
        self.fail(format!(
            "global {}.{} is not a value type this store reads",
            String::from_utf8_lossy(module),
            String::from_utf8_lossy(name)
        ))
    }

    fn reduce(&mut self) -> Result<()> {
        let args = self.pop()?;
        let func = self.pop()?;
        let Obj::Tuple(args) = self.arena[args].clone() else {
            return self.fail("REDUCE arguments are not a tuple");
        };
        match self.arena[func] {
            Obj::Global("datetime.datetime") => {
                let state = match args.as_slice() {
                    [s] => self.arena[*s].clone(),
                    [s, tz] if matches!(self.arena[*tz], Obj::Scalar(Doc::None)) => {
                        self.arena[*s].clone()
                    }
                    _ => {
                        return self
                            .fail("datetime with a tzinfo object (only naive datetimes are read)")
                    }
                };
                let Obj::Scalar(Doc::Bytes(b)) = state else {
                    return self.fail("datetime state is not a 10-byte string");
                };
                let t = self.datetime(&b)?;
                self.push_scalar(Doc::Time(t));
                Ok(())
            }
            Obj::Global("copy_reg._reconstructor") => match args.as_slice() {
                [cls, _, _] if matches!(self.arena[*cls], Obj::Global("uuid.UUID")) => {
                    self.push(Obj::PendingUuid);
                    Ok(())
                }
                _ => self.fail("copy_reg._reconstructor of a class other than uuid.UUID"),
            },
            _ => self.fail("REDUCE of something that is not datetime or a reconstructor"),
        }
    }

    fn datetime(&self, b: &[u8]) -> Result<Time> {
        if b.len() != 10 {
            return self.fail("datetime state is not 10 bytes");
        }
        let y = i64::from(u16::from_be_bytes([b[0], b[1]]));
        let (mo, d, h, mi, s) = (b[2], b[3], b[4], b[5], b[6]);
        let us = (u32::from(b[7]) << 16) | (u32::from(b[8]) << 8) | u32::from(b[9]);
        if !(1..=12).contains(&mo)
            || !(1..=31).contains(&d)
            || h > 23
            || mi > 59
            || s > 59
            || us > 999_999
        {
            return self.fail("datetime state out of range");
        }
        let days = days_from_civil(y, u32::from(mo), u32::from(d));
        let secs = days * 86_400 + i64::from(h) * 3600 + i64::from(mi) * 60 + i64::from(s);
        Time::new(secs, us * 1000, 0).or_else(|e| self.fail(format!("datetime: {e}")))
    }

    fn build(&mut self) -> Result<()> {
        let state = self.pop()?;
        let obj = self.top()?;
        if !matches!(self.arena[obj], Obj::PendingUuid) {
            return self.fail("BUILD of something that is not a uuid.UUID");
        }
        // The state is the instance dict, or (dict, slots).
        let dict = match &self.arena[state] {
            Obj::Dict(_) => state,
            Obj::Tuple(t) if t.len() == 2 => t[0],
            _ => return self.fail("uuid.UUID state is not a dict"),
        };
        let Obj::Dict(entries) = &self.arena[dict] else {
            return self.fail("uuid.UUID state is not a dict");
        };
        let mut value = None;
        for (k, v) in entries {
            let Obj::Scalar(k) = &self.arena[*k] else {
                continue;
            };
            if k.py_eq(&Doc::Bytes(b"int".to_vec())) {
                value = match &self.arena[*v] {
                    Obj::Scalar(Doc::Int(n)) => u128::try_from(*n).ok(),
                    Obj::U128(n) => Some(*n),
                    _ => None,
                };
            }
        }
        let Some(n) = value else {
            return self.fail("uuid.UUID state has no 128-bit 'int'");
        };
        self.arena[obj] = Obj::Scalar(Doc::Uuid(Uuid::from_u128(n)));
        Ok(())
    }

    fn int_line(&mut self, long: bool) -> Result<Doc> {
        let l = self.line()?;
        let s = std::str::from_utf8(l).map_err(|_| err("INT/LONG line is not ASCII"))?;
        let s = if long {
            s.strip_suffix('L').unwrap_or(s)
        } else {
            s
        };
        if !long && s == "00" {
            return Ok(Doc::Bool(false));
        }
        if !long && s == "01" {
            return Ok(Doc::Bool(true));
        }
        s.parse::<i128>()
            .map(Doc::Int)
            .or_else(|_| self.fail(format!("integer {s:?} (beyond 128 bits or not a number)")))
    }

    fn long_bytes(&mut self, n: usize) -> Result<Obj> {
        if n == 17 {
            let b = self.take(17)?;
            if b[16] == 0 {
                let mut a = [0u8; 16];
                a.copy_from_slice(&b[..16]);
                let v = u128::from_le_bytes(a);
                return Ok(match i128::try_from(v) {
                    Ok(i) => Obj::Scalar(Doc::Int(i)),
                    Err(_) => Obj::U128(v),
                });
            }
            self.pos -= 17;
        }
        if n > 16 {
            return self.fail(format!("long of {n} bytes is beyond 128 bits"));
        }
        let b = self.take(n)?;
        if n == 0 {
            return Ok(Obj::Scalar(Doc::Int(0)));
        }
        let fill = if b[n - 1] & 0x80 != 0 { 0xff } else { 0 };
        let mut full = [fill; 16];
        full[..n].copy_from_slice(b);
        Ok(Obj::Scalar(Doc::Int(i128::from_le_bytes(full))))
    }

    fn run(&mut self) -> Result<usize> {
        loop {
            let op = self.u8()?;
            match op {
                0x80 => {
                    let p = self.u8()?;
                    if p > 2 {
                        return self.fail(format!("pickle protocol {p} (this store reads 0–2)"));
                    }
                }
                b'.' => {
                    let top = self.pop()?;
                    if self.pos != self.data.len() {
                        return self.fail("bytes after STOP");
                    }
                    if !self.stack.is_empty() {
                        return self.fail("values left on the stack at STOP");
                    }
                    return Ok(top);
                }
                b'(' => self.stack.push(Slot::Mark),
                b'0' => {
                    self.stack
                        .pop()
                        .map(|_| ())
                        .ok_or_else(|| err("POP of an empty stack"))?;
                }
                b'1' => {
                    self.pop_mark()?;
                }
                b'2' => {
                    let t = self.top()?;
                    self.stack.push(Slot::Obj(t));
                }
                b'N' => self.push_scalar(Doc::None),
                0x88 => self.push_scalar(Doc::Bool(true)),
                0x89 => self.push_scalar(Doc::Bool(false)),
                b'I' => {
                    let d = self.int_line(false)?;
                    self.push_scalar(d);
                }
                b'L' => {
                    let d = self.int_line(true)?;
                    self.push_scalar(d);
                }
                b'J' => {
                    let v = self.u32()? as i32;
                    self.push_scalar(Doc::Int(i128::from(v)));
                }
                b'K' => {
                    let v = self.u8()?;
                    self.push_scalar(Doc::Int(i128::from(v)));
                }
                b'M' => {
                    let b = self.take(2)?;
                    self.push_scalar(Doc::Int(i128::from(u16::from_le_bytes([b[0], b[1]]))));
                }
                0x8a => {
                    let n = self.u8()? as usize;
                    let o = self.long_bytes(n)?;
                    self.push(o);
                }
                0x8b => {
                    let n = self.u32()? as usize;
                    let o = self.long_bytes(n)?;
                    self.push(o);
                }
                b'F' => {
                    let l = self.line()?;
                    let f = std::str::from_utf8(l)
                        .ok()
                        .and_then(|s| s.parse::<f64>().ok())
                        .ok_or_else(|| err("FLOAT line is not a number"))?;
                    self.push_scalar(Doc::Float(f));
                }
                b'G' => {
                    let b = self.take(8)?;
                    let mut a = [0u8; 8];
                    a.copy_from_slice(b);
                    self.push_scalar(Doc::Float(f64::from_be_bytes(a)));
                }
                b'S' => {
                    let l = self.line()?;
                    let b = unrepr_str(l).map_err(|r| err(format!("STRING: {r}")))?;
                    self.push_scalar(Doc::Bytes(b));
                }
                b'T' => {
                    let n = self.u32()? as usize;
                    let b = self.take(n)?.to_vec();
                    self.push_scalar(Doc::Bytes(b));
                }
                b'U' => {
                    let n = self.u8()? as usize;
                    let b = self.take(n)?.to_vec();
                    self.push_scalar(Doc::Bytes(b));
                }
                b'V' => {
                    let l = self.line()?;
                    let s = raw_unicode_unescape(l).map_err(|r| err(format!("UNICODE: {r}")))?;
                    self.push_scalar(Doc::Text(s));
                }
                b'X' => {
                    let n = self.u32()? as usize;
                    let b = self.take(n)?;
                    let s = String::from_utf8(b.to_vec())
                        .map_err(|_| err("BINUNICODE is not valid UTF-8"))?;
                    self.push_scalar(Doc::Text(s));
                }
                b')' => self.push(Obj::Tuple(vec![])),
                b't' => {
                    let items = self.pop_mark()?;
                    self.check_no_marks(&items)?;
                    self.push(Obj::Tuple(items));
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        items.push(self.pop()?);
                    }
                    items.reverse();
                    self.push(Obj::Tuple(items));
                }
                b']' => self.push(Obj::List(vec![])),
                b'l' => {
                    let items = self.pop_mark()?;
                    self.check_no_marks(&items)?;
                    self.push(Obj::List(items));
                }
                b'a' => {
                    let item = self.pop()?;
                    let list = self.top()?;
                    self.append(list, &[item])?;
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    self.check_no_marks(&items)?;
                    let list = self.top()?;
                    self.append(list, &items)?;
                }
                b'}' => self.push(Obj::Dict(vec![])),
                b'd' => {
                    let items = self.pop_mark()?;
                    self.check_no_marks(&items)?;
                    let d = self.new_obj(Obj::Dict(vec![]));
                    self.set_items(d, &items)?;
                    self.stack.push(Slot::Obj(d));
                }
                b's' => {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    let d = self.top()?;
                    self.set_items(d, &[k, v])?;
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    self.check_no_marks(&items)?;
                    let d = self.top()?;
                    self.set_items(d, &items)?;
                }
                b'p' => {
                    let l = self.line()?;
                    let id = parse_id(l)?;
                    self.memo_put(id)?;
                }
                b'q' => {
                    let id = u32::from(self.u8()?);
                    self.memo_put(id)?;
                }
                b'r' => {
                    let id = self.u32()?;
                    self.memo_put(id)?;
                }
                b'g' => {
                    let l = self.line()?;
                    let id = parse_id(l)?;
                    self.memo_get(id)?;
                }
                b'h' => {
                    let id = u32::from(self.u8()?);
                    self.memo_get(id)?;
                }
                b'j' => {
                    let id = self.u32()?;
                    self.memo_get(id)?;
                }
                b'c' => self.global()?,
                b'R' => self.reduce()?,
                0x81 => {
                    let args = self.pop()?;
                    let cls = self.pop()?;
                    let empty = matches!(&self.arena[args], Obj::Tuple(t) if t.is_empty());
                    if !empty || !matches!(self.arena[cls], Obj::Global("uuid.UUID")) {
                        return self.fail("NEWOBJ of a class other than uuid.UUID");
                    }
                    self.push(Obj::PendingUuid);
                }
                b'b' => self.build()?,
                other => {
                    self.pos -= 1;
                    return self.fail(format!("unsupported opcode 0x{other:02x}"));
                }
            }
        }
    }

    fn check_no_marks(&self, items: &[usize]) -> Result<()> {
        if items.contains(&usize::MAX) {
            return self.fail("nested MARK");
        }
        Ok(())
    }

    /// The value of object `i`, copying shared objects; refuses cycles, excessive depth and
    /// a result larger than `budget` nodes.
    fn to_doc(
        &self,
        i: usize,
        depth: usize,
        budget: &mut usize,
        open: &mut Vec<bool>,
    ) -> Result<Doc> {
        if depth > MAX_DEPTH {
            return Err(err(format!("nesting deeper than {MAX_DEPTH}")));
        }
        if *budget == 0 {
            return Err(err(
                "the value is too large (shared references multiply it)",
            ));
        }
        *budget -= 1;
        if open[i] {
            return Err(err("recursive structure (a container holds itself)"));
        }
        open[i] = true;
        let seq = |v: &[usize], budget: &mut usize, open: &mut Vec<bool>| {
            v.iter()
                .map(|&j| self.to_doc(j, depth + 1, budget, open))
                .collect::<Result<Vec<_>>>()
        };
        let d = match &self.arena[i] {
            Obj::Scalar(d) => d.clone(),
            Obj::Tuple(v) => Doc::Tuple(seq(v, budget, open)?),
            Obj::List(v) => Doc::List(seq(v, budget, open)?),
            Obj::Dict(kv) => {
                let mut out = Vec::with_capacity(kv.len());
                for &(k, v) in kv {
                    out.push((
                        self.to_doc(k, depth + 1, budget, open)?,
                        self.to_doc(v, depth + 1, budget, open)?,
                    ));
                }
                Doc::Dict(out)
            }
            Obj::Global(g) => return Err(err(format!("the value is the class {g}, not data"))),
            Obj::U128(_) => return Err(err("integer beyond 128 bits")),
            Obj::PendingUuid => return Err(err("uuid.UUID without its state")),
        };
        open[i] = false;
        Ok(d)
    }
}

fn unreachable_dict() -> ! {
    // set_items checked the object is a dict just before; nothing ran in between.
    panic!("pickle reader: dict vanished")
}

fn parse_id(l: &[u8]) -> Result<u32> {
    std::str::from_utf8(l)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| err("memo id is not a number"))
}

/// Python 2 `repr(str)` (protocol 0 STRING): quoted, with `\\ \' \" \n \r \t \xhh` and octal.
fn unrepr_str(l: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let q = *l.first().ok_or("empty")?;
    if !(q == b'\'' || q == b'"') || l.len() < 2 || l[l.len() - 1] != q {
        return Err("not a quoted string".into());
    }
    let body = &l[1..l.len() - 1];
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        i += 1;
        if c != b'\\' {
            out.push(c);
            continue;
        }
        let e = *body.get(i).ok_or("dangling backslash")?;
        i += 1;
        match e {
            b'\\' | b'\'' | b'"' => out.push(e),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'x' => {
                let h = body.get(i..i + 2).ok_or("short \\x escape")?;
                let s = std::str::from_utf8(h).map_err(|_| "bad \\x escape")?;
                out.push(u8::from_str_radix(s, 16).map_err(|_| "bad \\x escape")?);
                i += 2;
            }
            b'0'..=b'7' => {
                let mut v = u32::from(e - b'0');
                for _ in 0..2 {
                    match body.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(v as u8);
            }
            other => return Err(format!("unknown escape \\{}", other as char)),
        }
    }
    Ok(out)
}

/// Protocol 0 UNICODE: raw-unicode-escape (`\uXXXX`, `\UXXXXXXXX`, other bytes Latin-1).
fn raw_unicode_unescape(l: &[u8]) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(l.len());
    let mut i = 0;
    while i < l.len() {
        if l[i] == b'\\' && matches!(l.get(i + 1), Some(b'u') | Some(b'U')) {
            let n = if l[i + 1] == b'u' { 4 } else { 8 };
            let h = l.get(i + 2..i + 2 + n).ok_or("short \\u escape")?;
            let s = std::str::from_utf8(h).map_err(|_| "bad \\u escape")?;
            let cp = u32::from_str_radix(s, 16).map_err(|_| "bad \\u escape")?;
            out.push(char::from_u32(cp).ok_or("\\u escape of a surrogate or beyond U+10FFFF")?);
            i += 2 + n;
        } else {
            out.push(char::from(l[i]));
            i += 1;
        }
    }
    Ok(out)
}

/// `cPickle.loads(data)` for the data types above.
pub fn loads(data: &[u8]) -> Result<Doc> {
    let mut r = Reader {
        data,
        pos: 0,
        arena: Vec::new(),
        stack: Vec::new(),
        memo: HashMap::new(),
    };
    let top = r.run()?;
    let mut budget = (1usize << 20).max(data.len().saturating_mul(8));
    let mut open = vec![false; r.arena.len()];
    r.to_doc(top, 0, &mut budget, &mut open)
}
