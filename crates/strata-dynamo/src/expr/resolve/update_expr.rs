//! Resolving an UpdateExpression: its SET, REMOVE, ADD and DELETE actions with their
//! operands checked (DynamoDB's messages), into an [`Update`].

use super::*;

/// The right-hand side of a SET action.
#[derive(Debug, Clone, PartialEq)]
pub enum SetValue {
    /// `x`
    Operand(Operand),
    /// `x + y`
    Plus(Operand, Operand),
    /// `x - y`
    Minus(Operand, Operand),
}

/// A resolved UpdateExpression.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Update {
    /// `SET` actions.
    pub set: Vec<(Path, SetValue)>,
    /// `REMOVE` actions.
    pub remove: Vec<Path>,
    /// `ADD` actions (a number or a set).
    pub add: Vec<(Path, Attr)>,
    /// `DELETE` actions (a set).
    pub delete: Vec<(Path, Attr)>,
}

impl Update {
    /// Every path the update writes.
    pub fn paths(&self) -> Vec<&Path> {
        self.set
            .iter()
            .map(|(p, _)| p)
            .chain(self.remove.iter())
            .chain(self.add.iter().map(|(p, _)| p))
            .chain(self.delete.iter().map(|(p, _)| p))
            .collect()
    }

    /// True when the update only removes (then it does not create a missing item).
    pub fn only_removes(&self) -> bool {
        self.set.is_empty() && self.add.is_empty()
    }
}

fn update_type_name(t: DType) -> &'static str {
    match t {
        DType::S => "STRING",
        DType::N => "NUMBER",
        DType::B => "BINARY",
        DType::Bool => "BOOLEAN",
        DType::Null => "NULL",
        DType::Ss => "SS",
        DType::Ns => "NS",
        DType::Bs => "BS",
        DType::L => "LIST",
        DType::M => "MAP",
    }
}

impl Refs<'_> {
    fn update_operand(&mut self, o: RawOperand, in_function: bool) -> Result<Operand, ApiError> {
        let kind = ExprKind::Update;
        match o {
            RawOperand::Path(p) => Ok(Operand::Path(self.path(p, kind)?)),
            RawOperand::Value(v) => Ok(Operand::Const(self.resolve_value(&v, kind)?)),
            RawOperand::Call(name, args) => match name.as_str() {
                "if_not_exists" => {
                    arity(&name, &args, 2, kind)?;
                    let mut it = args.into_iter();
                    let (Some(p), Some(v)) = (it.next(), it.next()) else {
                        return Err(kind.error("if_not_exists needs two operands"));
                    };
                    let p = match p {
                        RawOperand::Path(p) => self.path(p, kind)?,
                        RawOperand::Value(v) => {
                            self.resolve_value(&v, kind)?;
                            return Err(needs_path(&name, kind));
                        }
                        RawOperand::Call(..) => return Err(needs_path(&name, kind)),
                    };
                    let v = self.update_operand(v, true)?;
                    Ok(Operand::IfNotExists(p, Box::new(v)))
                }
                "list_append" => {
                    if in_function {
                        return Err(kind.error(
                            "The function is not allowed to be used this way in an expression; \
                             function: list_append",
                        ));
                    }
                    arity(&name, &args, 2, kind)?;
                    let mut it = args.into_iter();
                    let (Some(a), Some(b)) = (it.next(), it.next()) else {
                        return Err(kind.error("list_append needs two operands"));
                    };
                    let a = self.update_operand(a, true)?;
                    let b = self.update_operand(b, true)?;
                    for o in [&a, &b] {
                        if let Some(t) = o.static_type() {
                            if t != DType::L {
                                return Err(operand_type_error("list_append", t, kind));
                            }
                        }
                    }
                    Ok(Operand::ListAppend(Box::new(a), Box::new(b)))
                }
                n if CONDITION_FUNCTIONS.contains(&n) || n == "size" => Err(kind.error(format!(
                    "The function is not allowed in an update expression; function: {n}"
                ))),
                _ => Err(kind.error(format!("Invalid function name; function: {name}"))),
            },
        }
    }

    fn number_operand(&mut self, o: RawOperand, op: &str) -> Result<Operand, ApiError> {
        let o = self.update_operand(o, false)?;
        match o.static_type() {
            Some(t) if t != DType::N => Err(operand_type_error(op, t, ExprKind::Update)),
            _ => Ok(o),
        }
    }

    fn path_value(
        &mut self,
        p: RawPath,
        v: RawOperand,
        _op: &str,
    ) -> Result<(Path, Attr), ApiError> {
        let kind = ExprKind::Update;
        let p = self.path(p, kind)?;
        let RawOperand::Value(v) = v else {
            return Err(kind.error("ADD and DELETE take a value reference"));
        };
        Ok((p, self.resolve_value(&v, kind)?))
    }

    /// Parses and resolves an UpdateExpression; `key` names the key attributes (which no
    /// action may touch).
    pub fn update(&mut self, text: &str, key: &[&str]) -> Result<Update, ApiError> {
        let kind = ExprKind::Update;
        check_text(text, kind)?;
        let clauses = parse::parse_update(text).map_err(|e| parse_error(e, kind))?;
        let mut seen = BTreeSet::new();
        let mut u = Update::default();
        let mut ops = 0usize;
        for c in clauses {
            if !seen.insert(c.keyword()) {
                return Err(kind.error(format!(
                    "The \"{}\" section can only be used once in an update expression;",
                    c.keyword()
                )));
            }
            match c {
                RawClause::Set(actions) => {
                    for (p, v) in actions {
                        ops += 1;
                        let p = self.path(p, kind)?;
                        let v = match v {
                            RawSetValue::Operand(o) => {
                                SetValue::Operand(self.update_operand(o, false)?)
                            }
                            RawSetValue::Plus(a, b) => {
                                ops += 1;
                                SetValue::Plus(
                                    self.number_operand(a, "+")?,
                                    self.number_operand(b, "+")?,
                                )
                            }
                            RawSetValue::Minus(a, b) => {
                                ops += 1;
                                SetValue::Minus(
                                    self.number_operand(a, "-")?,
                                    self.number_operand(b, "-")?,
                                )
                            }
                        };
                        u.set.push((p, v));
                    }
                }
                RawClause::Remove(paths) => {
                    for p in paths {
                        ops += 1;
                        u.remove.push(self.path(p, kind)?);
                    }
                }
                RawClause::Add(actions) => {
                    for (p, v) in actions {
                        ops += 1;
                        let (p, a) = self.path_value(p, v, "ADD")?;
                        let t = dtype(&a);
                        if !(t == DType::N || t.is_set()) {
                            return Err(kind.error(format!(
                                "Incorrect operand type for operator or function; operator: \
                                 ADD, operand type: {}",
                                update_type_name(t)
                            )));
                        }
                        u.add.push((p, a));
                    }
                }
                RawClause::Delete(actions) => {
                    for (p, v) in actions {
                        ops += 1;
                        let (p, a) = self.path_value(p, v, "DELETE")?;
                        let t = dtype(&a);
                        if !t.is_set() {
                            return Err(kind.error(format!(
                                "Incorrect operand type for operator or function; operator: \
                                 DELETE, operand type: {}",
                                update_type_name(t)
                            )));
                        }
                        u.delete.push((p, a));
                    }
                }
            }
        }
        if ops > MAX_OPERATORS {
            return Err(kind.error(format!(
                "The expression contains too many operators; operator count: {ops}"
            )));
        }
        let paths = u.paths();
        if let Some(p) = paths.iter().find(|p| key.contains(&p.root())) {
            return Err(ApiError::validation(format!(
                "One or more parameter values were invalid: Cannot update attribute {}. This \
                 attribute is part of the key",
                p.root()
            )));
        }
        check_paths(&paths, kind)?;
        Ok(u)
    }
}
