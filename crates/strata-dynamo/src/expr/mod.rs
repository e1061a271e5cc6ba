//! DynamoDB expressions: parsed once per request into an AST ([`parse`]), resolved against
//! `ExpressionAttributeNames` / `ExpressionAttributeValues` and checked ([`resolve`]), then
//! evaluated on items.

pub mod ast;
pub mod parse;
