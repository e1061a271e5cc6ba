//! The parsers of DynamoDB's expression languages (built with `winnow`): conditions (also
//! used for filters and key conditions), update expressions and projection expressions.
//!
//! ```text
//! condition  := or
//! or         := and ("OR" and)*
//! and        := not ("AND" not)*
//! not        := "NOT" not | primary
//! primary    := "(" condition ")" | operand cmp operand
//!             | operand "BETWEEN" operand "AND" operand
//!             | operand "IN" "(" operand ("," operand)* ")" | call
//! operand    := ":value" | call | path
//! call       := name "(" operand ("," operand)* ")"
//! path       := (name | "#name") ("." (name | "#name") | "[" digits "]")*
//! update     := clause+ ;  clause := "SET" set ("," set)* | "REMOVE" path ("," path)*
//!             | "ADD" path ":value" ("," …)* | "DELETE" path ":value" ("," …)*
//! set        := path "=" operand (("+" | "-") operand)?
//! projection := path ("," path)*
//! ```
//!
//! Keywords are case-insensitive, function names are not; names start with a letter and go
//! on with letters, digits and `_`; `#name` and `:value` references take letters, digits and
//! `_`. Nesting (parentheses, NOT, calls) is limited to [`MAX_NESTING`] so that no input can
//! exhaust the stack.

use winnow::ascii::{digit1, Caseless};
use winnow::combinator::{alt, cut_err, delimited, not, opt, preceded, repeat, separated};
use winnow::error::{ContextError, ErrMode};
use winnow::prelude::*;
use winnow::stream::Stateful;
use winnow::token::{literal, one_of, take_while};

use super::ast::{CmpOp, RawClause, RawCond, RawElem, RawOperand, RawPath, RawSetValue};

/// Deepest nesting of parentheses, NOT and function calls accepted.
pub const MAX_NESTING: u32 = 200;

/// Why an expression does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// Not the grammar: the token at fault (`<EOF>` at the end) and the text around it.
    Syntax {
        /// The token where parsing failed.
        token: String,
        /// The expression around that token.
        near: String,
    },
    /// Nested deeper than [`MAX_NESTING`].
    TooDeep,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::Syntax { token, near } => {
                write!(f, "Syntax error; token: \"{token}\", near: \"{near}\"")
            }
            ParseError::TooDeep => write!(
                f,
                "The expression is nested too deeply; nesting levels exceed {MAX_NESTING}"
            ),
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct State {
    depth: u32,
    too_deep: bool,
    len: usize,
    furthest: usize,
}

type In<'a> = Stateful<&'a str, State>;
type PResult<T> = ModalResult<T>;

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Skips whitespace and notes how far parsing got (for the error's position).
fn ws(i: &mut In<'_>) -> PResult<()> {
    take_while(0.., |c: char| c.is_ascii_whitespace()).parse_next(i)?;
    let at = i.state.len - i.input.len();
    if at > i.state.furthest {
        i.state.furthest = at;
    }
    Ok(())
}

fn sym<'a>(s: &'static str) -> impl Parser<In<'a>, (), ErrMode<ContextError>> {
    preceded(ws, literal(s)).void()
}

fn keyword<'a>(kw: &'static str) -> impl Parser<In<'a>, (), ErrMode<ContextError>> {
    preceded(ws, (literal(Caseless(kw)), not(one_of(is_ident_char)))).void()
}

fn ident<'a>(i: &mut In<'a>) -> PResult<&'a str> {
    ws(i)?;
    (
        one_of(|c: char| c.is_ascii_alphabetic()),
        take_while(0.., is_ident_char),
    )
        .take()
        .parse_next(i)
}

fn reference<'a>(i: &mut In<'a>, sigil: char) -> PResult<&'a str> {
    ws(i)?;
    (one_of(sigil), take_while(1.., is_ident_char))
        .take()
        .parse_next(i)
}

fn name_ref(i: &mut In<'_>) -> PResult<String> {
    reference(i, '#').map(str::to_owned)
}

fn value_ref(i: &mut In<'_>) -> PResult<String> {
    reference(i, ':').map(str::to_owned)
}

/// Runs `f` one nesting level deeper, or fails for good beyond [`MAX_NESTING`].
fn deeper<'a, O>(i: &mut In<'a>, f: impl FnOnce(&mut In<'a>) -> PResult<O>) -> PResult<O> {
    if i.state.depth >= MAX_NESTING {
        i.state.too_deep = true;
        return Err(ErrMode::Cut(ContextError::new()));
    }
    i.state.depth += 1;
    let r = f(i);
    i.state.depth -= 1;
    r
}

fn path_name(i: &mut In<'_>) -> PResult<RawElem> {
    alt((
        name_ref.map(RawElem::Ref),
        ident.map(|s| RawElem::Name(s.to_owned())),
    ))
    .parse_next(i)
}

fn index(i: &mut In<'_>) -> PResult<RawElem> {
    ws(i)?;
    digit1
        .try_map(|s: &str| s.parse::<u32>())
        .map(RawElem::Index)
        .parse_next(i)
}

fn path(i: &mut In<'_>) -> PResult<RawPath> {
    let head = path_name(i)?;
    let rest: Vec<RawElem> = repeat(
        0..,
        alt((
            preceded(sym("."), path_name),
            delimited(sym("["), index, sym("]")),
        )),
    )
    .parse_next(i)?;
    let mut v = Vec::with_capacity(rest.len() + 1);
    v.push(head);
    v.extend(rest);
    Ok(RawPath(v))
}

fn call_with<'a>(
    i: &mut In<'a>,
    arg: fn(&mut In<'a>) -> PResult<RawOperand>,
) -> PResult<(String, Vec<RawOperand>)> {
    let name = (ident, sym("(")).map(|(n, _)| n.to_owned()).parse_next(i)?;
    let args = deeper(i, |i| cut_err(separated(1.., arg, sym(","))).parse_next(i))?;
    cut_err(sym(")")).parse_next(i)?;
    Ok((name, args))
}

fn operand(i: &mut In<'_>) -> PResult<RawOperand> {
    alt((
        value_ref.map(RawOperand::Value),
        (|i: &mut In<'_>| call_with(i, operand)).map(|(n, a)| RawOperand::Call(n, a)),
        path.map(RawOperand::Path),
    ))
    .parse_next(i)
}

fn comparator(i: &mut In<'_>) -> PResult<CmpOp> {
    alt((
        sym("<=").value(CmpOp::Le),
        sym("<>").value(CmpOp::Ne),
        sym(">=").value(CmpOp::Ge),
        sym("=").value(CmpOp::Eq),
        sym("<").value(CmpOp::Lt),
        sym(">").value(CmpOp::Gt),
    ))
    .parse_next(i)
}

fn comparison(i: &mut In<'_>) -> PResult<RawCond> {
    let a = operand(i)?;
    if let Some((op, b)) = opt((comparator, cut_err(operand))).parse_next(i)? {
        return Ok(RawCond::Cmp(a, op, b));
    }
    if opt(keyword("BETWEEN")).parse_next(i)?.is_some() {
        let (lo, _, hi) = cut_err((operand, keyword("AND"), operand)).parse_next(i)?;
        return Ok(RawCond::Between(a, lo, hi));
    }
    if opt(keyword("IN")).parse_next(i)?.is_some() {
        let list = cut_err(delimited(
            sym("("),
            separated(1.., operand, sym(",")),
            sym(")"),
        ))
        .parse_next(i)?;
        return Ok(RawCond::In(a, list));
    }
    match a {
        RawOperand::Call(name, args) => Ok(RawCond::Call(name, args)),
        _ => Err(ErrMode::Cut(ContextError::new())),
    }
}

fn primary(i: &mut In<'_>) -> PResult<RawCond> {
    if opt(sym("(")).parse_next(i)?.is_some() {
        let c = deeper(i, |i| cut_err(condition).parse_next(i))?;
        cut_err(sym(")")).parse_next(i)?;
        return Ok(RawCond::Paren(Box::new(c)));
    }
    comparison(i)
}

fn not_cond(i: &mut In<'_>) -> PResult<RawCond> {
    if opt(keyword("NOT")).parse_next(i)?.is_some() {
        let c = deeper(i, |i| cut_err(not_cond).parse_next(i))?;
        return Ok(RawCond::Not(Box::new(c)));
    }
    primary(i)
}

fn and_cond(i: &mut In<'_>) -> PResult<RawCond> {
    let mut c = not_cond(i)?;
    while opt(keyword("AND")).parse_next(i)?.is_some() {
        let r = cut_err(not_cond).parse_next(i)?;
        c = RawCond::And(Box::new(c), Box::new(r));
    }
    Ok(c)
}

fn condition(i: &mut In<'_>) -> PResult<RawCond> {
    let mut c = and_cond(i)?;
    while opt(keyword("OR")).parse_next(i)?.is_some() {
        let r = cut_err(and_cond).parse_next(i)?;
        c = RawCond::Or(Box::new(c), Box::new(r));
    }
    Ok(c)
}

fn update_operand(i: &mut In<'_>) -> PResult<RawOperand> {
    alt((
        value_ref.map(RawOperand::Value),
        (|i: &mut In<'_>| call_with(i, update_operand)).map(|(n, a)| RawOperand::Call(n, a)),
        path.map(RawOperand::Path),
    ))
    .parse_next(i)
}

fn set_action(i: &mut In<'_>) -> PResult<(RawPath, RawSetValue)> {
    let p = path(i)?;
    sym("=").parse_next(i)?;
    let a = update_operand(i)?;
    let v = match opt(alt((sym("+").value(true), sym("-").value(false)))).parse_next(i)? {
        Some(plus) => {
            let b = cut_err(update_operand).parse_next(i)?;
            if plus {
                RawSetValue::Plus(a, b)
            } else {
                RawSetValue::Minus(a, b)
            }
        }
        None => RawSetValue::Operand(a),
    };
    Ok((p, v))
}

fn path_value(i: &mut In<'_>) -> PResult<(RawPath, RawOperand)> {
    (path, value_ref.map(RawOperand::Value)).parse_next(i)
}

fn clause(i: &mut In<'_>) -> PResult<RawClause> {
    alt((
        preceded(
            keyword("SET"),
            cut_err(separated(1.., set_action, sym(","))),
        )
        .map(RawClause::Set),
        preceded(keyword("REMOVE"), cut_err(separated(1.., path, sym(",")))).map(RawClause::Remove),
        preceded(
            keyword("ADD"),
            cut_err(separated(1.., path_value, sym(","))),
        )
        .map(RawClause::Add),
        preceded(
            keyword("DELETE"),
            cut_err(separated(1.., path_value, sym(","))),
        )
        .map(RawClause::Delete),
    ))
    .parse_next(i)
}

fn update(i: &mut In<'_>) -> PResult<Vec<RawClause>> {
    repeat(1.., clause).parse_next(i)
}

fn projection(i: &mut In<'_>) -> PResult<Vec<RawPath>> {
    separated(1.., path, sym(",")).parse_next(i)
}

/// The token starting at byte `at` of `s` (after whitespace), for error messages.
fn token_at(s: &str, at: usize) -> String {
    let rest = s.get(at..).unwrap_or("").trim_start();
    let Some(c) = rest.chars().next() else {
        return "<EOF>".into();
    };
    if c.is_ascii_alphanumeric() || c == '_' || c == '#' || c == ':' {
        let n = rest
            .char_indices()
            .skip(1)
            .find(|&(_, c)| !is_ident_char(c))
            .map_or(rest.len(), |(i, _)| i);
        rest[..n].to_owned()
    } else {
        ["<=", "<>", ">="]
            .iter()
            .find(|t| rest.starts_with(**t))
            .map_or_else(|| c.to_string(), |t| (*t).to_owned())
    }
}

fn near(s: &str, at: usize) -> String {
    let mut lo = at.saturating_sub(20);
    while !s.is_char_boundary(lo) {
        lo -= 1;
    }
    let mut hi = (at + 20).min(s.len());
    while !s.is_char_boundary(hi) {
        hi += 1;
    }
    s[lo..hi].trim().to_owned()
}

fn run<'a, O>(s: &'a str, p: fn(&mut In<'a>) -> PResult<O>) -> Result<O, ParseError> {
    let mut input = In {
        input: s,
        state: State {
            len: s.len(),
            ..State::default()
        },
    };
    let r = p(&mut input);
    if input.state.too_deep {
        return Err(ParseError::TooDeep);
    }
    let at_end = ws(&mut input).is_ok() && input.input.is_empty();
    match r {
        Ok(o) if at_end => Ok(o),
        _ => {
            let at = input.state.furthest.max(s.len() - input.input.len());
            Err(ParseError::Syntax {
                token: token_at(s, at),
                near: near(s, at),
            })
        }
    }
}

/// Parses a ConditionExpression, FilterExpression or KeyConditionExpression.
pub fn parse_condition(s: &str) -> Result<RawCond, ParseError> {
    run(s, condition)
}

/// Parses an UpdateExpression into its clauses, in order.
pub fn parse_update(s: &str) -> Result<Vec<RawClause>, ParseError> {
    run(s, update)
}

/// Parses a ProjectionExpression.
pub fn parse_projection(s: &str) -> Result<Vec<RawPath>, ParseError> {
    run(s, projection)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> RawOperand {
        RawOperand::Path(RawPath(vec![RawElem::Name(s.into())]))
    }

    fn val(s: &str) -> RawOperand {
        RawOperand::Value(s.into())
    }

    #[test]
    fn conditions() {
        assert_eq!(
            parse_condition(" a  =   :v ").unwrap(),
            RawCond::Cmp(name("a"), CmpOp::Eq, val(":v"))
        );
        // AND binds tighter than OR; keywords are case-insensitive.
        let c = parse_condition("a < b oR c < d aNd e <> :x").unwrap();
        let RawCond::Or(l, r) = c else { panic!() };
        assert_eq!(*l, RawCond::Cmp(name("a"), CmpOp::Lt, name("b")));
        assert!(matches!(*r, RawCond::And(_, _)));
        assert_eq!(
            parse_condition("c BeTwEeN :a aNd :b").unwrap(),
            RawCond::Between(name("c"), val(":a"), val(":b"))
        );
        assert_eq!(
            parse_condition("a IN (:x,b)").unwrap(),
            RawCond::In(name("a"), vec![val(":x"), name("b")])
        );
        assert_eq!(
            parse_condition("attribute_exists (a)").unwrap(),
            RawCond::Call("attribute_exists".into(), vec![name("a")])
        );
        assert_eq!(
            parse_condition("size(a.b[3].#c) >= :n").unwrap(),
            RawCond::Cmp(
                RawOperand::Call(
                    "size".into(),
                    vec![RawOperand::Path(RawPath(vec![
                        RawElem::Name("a".into()),
                        RawElem::Name("b".into()),
                        RawElem::Index(3),
                        RawElem::Ref("#c".into()),
                    ]))]
                ),
                CmpOp::Ge,
                val(":n")
            )
        );
        assert!(matches!(
            parse_condition("NOT NOT a = b").unwrap(),
            RawCond::Not(_)
        ));
        assert!(matches!(
            parse_condition("((a = b))").unwrap(),
            RawCond::Paren(_)
        ));
    }

    #[test]
    fn syntax_errors() {
        for bad in [
            "",
            "a",
            "a !=:c",
            "a IN ()",
            "a <",
            "(a = b",
            "a = b)",
            "_a = b",
            "1a = b",
            "a[:x] = b",
            "a[#x] = b",
            "# = :v",
            "a = :",
            "a = :v :w",
            "a BETWEEN :x",
            "a.= b",
            "size(a",
        ] {
            let e = parse_condition(bad).unwrap_err();
            assert!(matches!(e, ParseError::Syntax { .. }), "{bad:?}: {e:?}");
        }
        let e = parse_condition("c!=:c").unwrap_err().to_string();
        assert_eq!(e, "Syntax error; token: \"!\", near: \"c!=:c\"");
        let e = parse_condition("a = ").unwrap_err().to_string();
        assert!(e.contains("<EOF>"), "{e}");
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("{}a<b{}", "(".repeat(5000), ")".repeat(5000));
        assert_eq!(parse_condition(&deep).unwrap_err(), ParseError::TooDeep);
        let nots = format!("{}a<b", "not ".repeat(5000));
        assert_eq!(parse_condition(&nots).unwrap_err(), ParseError::TooDeep);
        let calls = format!("a < {}b{}", "f(".repeat(5000), ")".repeat(5000));
        assert_eq!(parse_condition(&calls).unwrap_err(), ParseError::TooDeep);
        let ok = format!("a<b {}{}", "or (a<b ".repeat(149), ")".repeat(149));
        assert!(parse_condition(&ok).is_ok());
    }

    #[test]
    fn updates() {
        let u = parse_update("set a = :v, b=c REMOVE d[1], e.f ADD g :n DELETE h :s").unwrap();
        assert_eq!(u.len(), 4);
        assert!(matches!(&u[0], RawClause::Set(v) if v.len() == 2));
        let u = parse_update("SET b = if_not_exists(b, :one) + :two").unwrap();
        let RawClause::Set(v) = &u[0] else { panic!() };
        assert!(matches!(v[0].1, RawSetValue::Plus(RawOperand::Call(..), _)));
        for bad in [
            "",
            "HELLO b = :v",
            "SET b = :a + :b + :c",
            "SET :a = :b",
            "SET c = if_not_exists(c, :a+:b)",
            "SET a = _f(b)",
            "SET hi-there = :v",
            "ADD a b",
            "SET a = :v,",
            "REMOVE",
        ] {
            assert!(parse_update(bad).is_err(), "{bad:?}");
        }
        // Clause keywords may repeat syntactically; the resolver refuses that.
        assert_eq!(parse_update("SET a = :v SET b = :w").unwrap().len(), 2);
    }

    #[test]
    fn projections() {
        assert_eq!(parse_projection(" a  ,   b  ").unwrap().len(), 2);
        for bad in ["", "a,", ",a", "a,,b", "a b"] {
            assert!(parse_projection(bad).is_err(), "{bad:?}");
        }
    }
}
