//! The syntax trees of DynamoDB expressions, as parsed (names and values still references)
//! and, after [`super::resolve`], as evaluated.

use std::fmt;

/// One element of a document path as written: a name (`a`), a name reference (`#n`) or a list
/// index (`[3]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawElem {
    /// A name written in the expression (subject to the reserved-word rule).
    Name(String),
    /// `#ref`, resolved through `ExpressionAttributeNames` (the `#` included).
    Ref(String),
    /// `[n]`.
    Index(u32),
}

/// A document path as written: a name or reference, then names and indexes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawPath(pub Vec<RawElem>);

/// An operand as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawOperand {
    /// A document path.
    Path(RawPath),
    /// `:ref`, resolved through `ExpressionAttributeValues` (the `:` included).
    Value(String),
    /// A function call `name(args…)` (any name: unknown names are refused when resolving).
    Call(String, Vec<RawOperand>),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `<>`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "<>",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }

    /// The operator with its operands swapped (`a < b` is `b > a`).
    pub fn swapped(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            o => o,
        }
    }
}

/// A condition as written (ConditionExpression, FilterExpression, KeyConditionExpression).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawCond {
    /// `a op b`
    Cmp(RawOperand, CmpOp, RawOperand),
    /// `a BETWEEN b AND c`
    Between(RawOperand, RawOperand, RawOperand),
    /// `a IN (b, c, …)`
    In(RawOperand, Vec<RawOperand>),
    /// A function call used as a condition (`attribute_exists(a)`).
    Call(String, Vec<RawOperand>),
    /// `x AND y`
    And(Box<RawCond>, Box<RawCond>),
    /// `x OR y`
    Or(Box<RawCond>, Box<RawCond>),
    /// `NOT x`
    Not(Box<RawCond>),
    /// `( x )`, kept to detect redundant parentheses.
    Paren(Box<RawCond>),
}

/// The right-hand side of a SET action as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawSetValue {
    /// `operand`
    Operand(RawOperand),
    /// `operand + operand`
    Plus(RawOperand, RawOperand),
    /// `operand - operand`
    Minus(RawOperand, RawOperand),
}

/// One clause of an update expression as written; a clause keyword may repeat (refused when
/// resolving, as DynamoDB does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawClause {
    /// `SET path = value, …`
    Set(Vec<(RawPath, RawSetValue)>),
    /// `REMOVE path, …`
    Remove(Vec<RawPath>),
    /// `ADD path :value, …`
    Add(Vec<(RawPath, RawOperand)>),
    /// `DELETE path :value, …`
    Delete(Vec<(RawPath, RawOperand)>),
}

impl RawClause {
    /// The clause keyword.
    pub fn keyword(&self) -> &'static str {
        match self {
            RawClause::Set(_) => "SET",
            RawClause::Remove(_) => "REMOVE",
            RawClause::Add(_) => "ADD",
            RawClause::Delete(_) => "DELETE",
        }
    }
}

/// One element of a resolved document path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PathElem {
    /// A map member (or a top-level attribute).
    Name(String),
    /// A list element.
    Index(u32),
}

/// A resolved document path: a top-level attribute name, then members and indexes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Path(pub Vec<PathElem>);

impl Path {
    /// A top-level attribute.
    pub fn attr(name: impl Into<String>) -> Path {
        Path(vec![PathElem::Name(name.into())])
    }

    /// The top-level attribute name.
    pub fn root(&self) -> &str {
        match self.0.first() {
            Some(PathElem::Name(n)) => n,
            _ => "",
        }
    }

    /// True for a bare top-level attribute (no member or index).
    pub fn is_top_level(&self) -> bool {
        self.0.len() == 1
    }
}

impl fmt::Display for Path {
    /// DynamoDB's form in error messages: `[a, b, [3]]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match e {
                PathElem::Name(n) => f.write_str(n)?,
                PathElem::Index(x) => write!(f, "[{x}]")?,
            }
        }
        f.write_str("]")
    }
}
