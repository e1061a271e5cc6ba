//! DynamoDB expressions: parsed once per request into an AST ([`parse`]), resolved against
//! `ExpressionAttributeNames` / `ExpressionAttributeValues` and checked ([`resolve`]), then
//! evaluated on items ([`eval`], [`update`]).

pub mod ast;
pub mod eval;
pub mod parse;
pub mod resolve;
pub mod update;
