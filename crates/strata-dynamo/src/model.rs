//! Requests and responses of the DynamoDB operations, shaped like DynamoDB's JSON (the field
//! names are the JSON names in `PascalCase`), for embedded users of [`crate::Dynamo`].
//!
//! Every request field is optional in the types (DynamoDB checks required fields itself and
//! answers a `ValidationException` naming the field); build requests with
//! `..Default::default()`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::types::{AttributeMap, AttributeValue};

/// `ExpressionAttributeNames`.
pub type Names = BTreeMap<String, String>;
/// `ExpressionAttributeValues`.
pub type Values = BTreeMap<String, AttributeValue>;

/// `AttributeDefinitions[i]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct AttributeDefinition {
    /// Attribute name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute_name: Option<String>,
    /// `S`, `N` or `B`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute_type: Option<String>,
}

/// `KeySchema[i]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct KeySchemaElement {
    /// Attribute name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute_name: Option<String>,
    /// `HASH` or `RANGE`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_type: Option<String>,
}

/// `ProvisionedThroughput`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ProvisionedThroughput {
    /// Read capacity units.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_capacity_units: Option<i64>,
    /// Write capacity units.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_capacity_units: Option<i64>,
}

/// `Projection` of a secondary index.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Projection {
    /// `ALL`, `KEYS_ONLY` or `INCLUDE`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projection_type: Option<String>,
    /// For `INCLUDE`: the attributes copied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub non_key_attributes: Option<Vec<String>>,
}

/// A secondary index in CreateTable (global or local).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SecondaryIndex {
    /// Index name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_name: Option<String>,
    /// Key schema of the index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_schema: Option<Vec<KeySchemaElement>>,
    /// What the index holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projection: Option<Projection>,
    /// Accepted and ignored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioned_throughput: Option<ProvisionedThroughput>,
}

/// `StreamSpecification`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct StreamSpecification {
    /// Whether a stream is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_enabled: Option<bool>,
    /// What the stream records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_view_type: Option<String>,
}

/// `Tags[i]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Tag {
    /// Tag key.
    #[serde(default)]
    pub key: String,
    /// Tag value.
    #[serde(default)]
    pub value: String,
}

/// CreateTable request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CreateTableInput {
    /// Table name: 3 to 255 of `[a-zA-Z0-9_.-]`.
    pub table_name: Option<String>,
    /// Types of the key attributes.
    pub attribute_definitions: Option<Vec<AttributeDefinition>>,
    /// `HASH` and optionally `RANGE`.
    pub key_schema: Option<Vec<KeySchemaElement>>,
    /// `PROVISIONED` (the default) or `PAY_PER_REQUEST`; recorded, no throttling.
    pub billing_mode: Option<String>,
    /// Required with `PROVISIONED`; recorded, no throttling.
    pub provisioned_throughput: Option<ProvisionedThroughput>,
    /// Refused (not supported yet).
    pub global_secondary_indexes: Option<Vec<SecondaryIndex>>,
    /// Refused (not supported yet).
    pub local_secondary_indexes: Option<Vec<SecondaryIndex>>,
    /// Accepted when disabled; refused when enabled (streams not supported yet).
    pub stream_specification: Option<StreamSpecification>,
    /// Accepted and ignored.
    #[serde(rename = "SSESpecification")]
    pub sse_specification: Option<Json>,
    /// Tags of the table.
    pub tags: Option<Vec<Tag>>,
    /// Accepted and ignored.
    pub table_class: Option<String>,
    /// Recorded.
    pub deletion_protection_enabled: Option<bool>,
}

/// A table's description (DescribeTable's `Table`, CreateTable's `TableDescription`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TableDescription {
    /// Name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_name: Option<String>,
    /// `ACTIVE`, or `DELETING` in DeleteTable's answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_status: Option<String>,
    /// A UUID, fixed at creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_id: Option<String>,
    /// `arn:aws:dynamodb:…:table/NAME`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_arn: Option<String>,
    /// Key attribute types.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute_definitions: Option<Vec<AttributeDefinition>>,
    /// The key schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_schema: Option<Vec<KeySchemaElement>>,
    /// Seconds since 1970 (fractional).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_date_time: Option<f64>,
    /// Number of items (counted exactly, see `docs/dynamodb.md`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item_count: Option<u64>,
    /// Total size of the items in bytes (DynamoDB's item-size rules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_size_bytes: Option<u64>,
    /// Billing mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub billing_mode_summary: Option<Json>,
    /// Provisioned throughput (zeros for on-demand tables).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provisioned_throughput: Option<Json>,
    /// Whether deletion protection is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_protection_enabled: Option<bool>,
}

/// CreateTable response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CreateTableOutput {
    /// The new table.
    pub table_description: TableDescription,
}

/// DescribeTable / DeleteTable request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TableNameInput {
    /// The table.
    pub table_name: Option<String>,
}

/// DescribeTable response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeTableOutput {
    /// The table.
    pub table: TableDescription,
}

/// DeleteTable / UpdateTable response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TableDescriptionOutput {
    /// The table.
    pub table_description: TableDescription,
}

/// ListTables request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ListTablesInput {
    /// Start after this name.
    pub exclusive_start_table_name: Option<String>,
    /// At most this many names (1 to 100, default 100).
    pub limit: Option<i64>,
}

/// ListTables response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ListTablesOutput {
    /// Names, in order.
    pub table_names: Vec<String>,
    /// Present when more names follow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_evaluated_table_name: Option<String>,
}

/// UpdateTable request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct UpdateTableInput {
    /// The table.
    pub table_name: Option<String>,
    /// Only needed with index changes (refused).
    pub attribute_definitions: Option<Vec<AttributeDefinition>>,
    /// New billing mode (recorded).
    pub billing_mode: Option<String>,
    /// New throughput (recorded).
    pub provisioned_throughput: Option<ProvisionedThroughput>,
    /// Refused (not supported yet).
    pub global_secondary_index_updates: Option<Json>,
    /// Accepted when disabling; refused when enabling.
    pub stream_specification: Option<StreamSpecification>,
    /// Accepted and ignored.
    #[serde(rename = "SSESpecification")]
    pub sse_specification: Option<Json>,
    /// Accepted and ignored.
    pub table_class: Option<String>,
    /// Recorded.
    pub deletion_protection_enabled: Option<bool>,
}

/// `ConsumedCapacity` of a request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ConsumedCapacity {
    /// The table.
    pub table_name: String,
    /// Capacity units by DynamoDB's rules (4 KB reads, 1 KB writes).
    pub capacity_units: f64,
}

/// PutItem request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct PutItemInput {
    /// The table.
    pub table_name: Option<String>,
    /// The item, key attributes included.
    pub item: Option<AttributeMap>,
    /// A condition on the item being replaced.
    pub condition_expression: Option<String>,
    /// `#name` references.
    pub expression_attribute_names: Option<Names>,
    /// `:value` references.
    pub expression_attribute_values: Option<Values>,
    /// `NONE` or `ALL_OLD`.
    pub return_values: Option<String>,
    /// `NONE` or `ALL_OLD`: the item in the ConditionalCheckFailedException.
    pub return_values_on_condition_check_failure: Option<String>,
    /// `INDEXES`, `TOTAL` or `NONE`.
    pub return_consumed_capacity: Option<String>,
    /// Accepted and ignored.
    pub return_item_collection_metrics: Option<String>,
    /// Legacy condition.
    pub expected: Option<BTreeMap<String, ExpectedAttributeValue>>,
    /// `AND` (default) or `OR` for `Expected`.
    pub conditional_operator: Option<String>,
}

/// Response of PutItem, DeleteItem and UpdateItem.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct WriteItemOutput {
    /// What `ReturnValues` asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes: Option<AttributeMap>,
    /// With `ReturnConsumedCapacity`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<ConsumedCapacity>,
}

/// GetItem request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct GetItemInput {
    /// The table.
    pub table_name: Option<String>,
    /// The key attributes.
    pub key: Option<AttributeMap>,
    /// Legacy projection (top-level names).
    pub attributes_to_get: Option<Vec<String>>,
    /// Accepted: every read is consistent.
    pub consistent_read: Option<bool>,
    /// The attributes to return.
    pub projection_expression: Option<String>,
    /// `#name` references.
    pub expression_attribute_names: Option<Names>,
    /// `INDEXES`, `TOTAL` or `NONE`.
    pub return_consumed_capacity: Option<String>,
}

/// GetItem response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct GetItemOutput {
    /// The item, absent when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<AttributeMap>,
    /// With `ReturnConsumedCapacity`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<ConsumedCapacity>,
}

/// DeleteItem request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteItemInput {
    /// The table.
    pub table_name: Option<String>,
    /// The key attributes.
    pub key: Option<AttributeMap>,
    /// A condition on the item being deleted.
    pub condition_expression: Option<String>,
    /// `#name` references.
    pub expression_attribute_names: Option<Names>,
    /// `:value` references.
    pub expression_attribute_values: Option<Values>,
    /// `NONE` or `ALL_OLD`.
    pub return_values: Option<String>,
    /// `NONE` or `ALL_OLD`.
    pub return_values_on_condition_check_failure: Option<String>,
    /// `INDEXES`, `TOTAL` or `NONE`.
    pub return_consumed_capacity: Option<String>,
    /// Accepted and ignored.
    pub return_item_collection_metrics: Option<String>,
    /// Legacy condition.
    pub expected: Option<BTreeMap<String, ExpectedAttributeValue>>,
    /// `AND` or `OR` for `Expected`.
    pub conditional_operator: Option<String>,
}

/// UpdateItem request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct UpdateItemInput {
    /// The table.
    pub table_name: Option<String>,
    /// The key attributes.
    pub key: Option<AttributeMap>,
    /// SET / REMOVE / ADD / DELETE actions.
    pub update_expression: Option<String>,
    /// A condition on the item being updated.
    pub condition_expression: Option<String>,
    /// `#name` references.
    pub expression_attribute_names: Option<Names>,
    /// `:value` references.
    pub expression_attribute_values: Option<Values>,
    /// `NONE`, `ALL_OLD`, `UPDATED_OLD`, `ALL_NEW` or `UPDATED_NEW`.
    pub return_values: Option<String>,
    /// `NONE` or `ALL_OLD`.
    pub return_values_on_condition_check_failure: Option<String>,
    /// `INDEXES`, `TOTAL` or `NONE`.
    pub return_consumed_capacity: Option<String>,
    /// Accepted and ignored.
    pub return_item_collection_metrics: Option<String>,
    /// Legacy update actions.
    pub attribute_updates: Option<BTreeMap<String, AttributeValueUpdate>>,
    /// Legacy condition.
    pub expected: Option<BTreeMap<String, ExpectedAttributeValue>>,
    /// `AND` or `OR` for `Expected`.
    pub conditional_operator: Option<String>,
}

/// `AttributeUpdates[name]` (legacy UpdateItem).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct AttributeValueUpdate {
    /// The operand.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<AttributeValue>,
    /// `PUT` (default), `DELETE` or `ADD`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

/// `Expected[name]` (legacy condition).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ExpectedAttributeValue {
    /// Equal to this (with `Exists`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<AttributeValue>,
    /// Whether the attribute must exist.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
    /// `EQ`, `NE`, `LE`, `LT`, `GE`, `GT`, `NOT_NULL`, `NULL`, `CONTAINS`, `NOT_CONTAINS`,
    /// `BEGINS_WITH`, `IN`, `BETWEEN`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison_operator: Option<String>,
    /// The operator's operands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute_value_list: Option<Vec<AttributeValue>>,
}

/// `KeyConditions[name]`, `QueryFilter[name]`, `ScanFilter[name]` (legacy).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Condition {
    /// The operator (as in [`ExpectedAttributeValue::comparison_operator`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison_operator: Option<String>,
    /// Its operands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribute_value_list: Option<Vec<AttributeValue>>,
}

/// Query request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct QueryInput {
    /// The table.
    pub table_name: Option<String>,
    /// Refused (no secondary indexes yet).
    pub index_name: Option<String>,
    /// `ALL_ATTRIBUTES`, `SPECIFIC_ATTRIBUTES` or `COUNT`.
    pub select: Option<String>,
    /// Legacy projection.
    pub attributes_to_get: Option<Vec<String>>,
    /// Items evaluated per page, at most.
    pub limit: Option<i64>,
    /// Accepted: every read is consistent.
    pub consistent_read: Option<bool>,
    /// Legacy key condition.
    pub key_conditions: Option<BTreeMap<String, Condition>>,
    /// Legacy filter.
    pub query_filter: Option<BTreeMap<String, Condition>>,
    /// `AND` or `OR` for `QueryFilter`.
    pub conditional_operator: Option<String>,
    /// Ascending sort-key order (default true).
    pub scan_index_forward: Option<bool>,
    /// Resume after this key.
    pub exclusive_start_key: Option<AttributeMap>,
    /// `INDEXES`, `TOTAL` or `NONE`.
    pub return_consumed_capacity: Option<String>,
    /// The attributes to return.
    pub projection_expression: Option<String>,
    /// A condition items must meet to be returned.
    pub filter_expression: Option<String>,
    /// The partition (and sort-key range).
    pub key_condition_expression: Option<String>,
    /// `#name` references.
    pub expression_attribute_names: Option<Names>,
    /// `:value` references.
    pub expression_attribute_values: Option<Values>,
}

/// Scan request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ScanInput {
    /// The table.
    pub table_name: Option<String>,
    /// Refused (no secondary indexes yet).
    pub index_name: Option<String>,
    /// Legacy projection.
    pub attributes_to_get: Option<Vec<String>>,
    /// Items evaluated per page, at most.
    pub limit: Option<i64>,
    /// `ALL_ATTRIBUTES`, `SPECIFIC_ATTRIBUTES` or `COUNT`.
    pub select: Option<String>,
    /// Legacy filter.
    pub scan_filter: Option<BTreeMap<String, Condition>>,
    /// `AND` or `OR` for `ScanFilter`.
    pub conditional_operator: Option<String>,
    /// Resume after this key.
    pub exclusive_start_key: Option<AttributeMap>,
    /// `INDEXES`, `TOTAL` or `NONE`.
    pub return_consumed_capacity: Option<String>,
    /// Number of segments of a parallel scan.
    pub total_segments: Option<i64>,
    /// This segment, `0..TotalSegments`.
    pub segment: Option<i64>,
    /// The attributes to return.
    pub projection_expression: Option<String>,
    /// A condition items must meet to be returned.
    pub filter_expression: Option<String>,
    /// `#name` references.
    pub expression_attribute_names: Option<Names>,
    /// `:value` references.
    pub expression_attribute_values: Option<Values>,
    /// Accepted: every read is consistent.
    pub consistent_read: Option<bool>,
}

/// Query / Scan response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct QueryOutput {
    /// The items (absent with `Select=COUNT`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<AttributeMap>>,
    /// Items returned (after the filter).
    pub count: u64,
    /// Items evaluated (before the filter).
    pub scanned_count: u64,
    /// Present when the page stopped early: pass it as `ExclusiveStartKey`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_evaluated_key: Option<AttributeMap>,
    /// With `ReturnConsumedCapacity`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<ConsumedCapacity>,
}

/// `RequestItems[table]` of BatchGetItem.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct KeysAndAttributes {
    /// The keys.
    #[serde(default)]
    pub keys: Vec<AttributeMap>,
    /// Legacy projection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attributes_to_get: Option<Vec<String>>,
    /// Accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consistent_read: Option<bool>,
    /// The attributes to return.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projection_expression: Option<String>,
    /// `#name` references.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expression_attribute_names: Option<Names>,
}

/// BatchGetItem request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchGetItemInput {
    /// Per table: the keys to read (100 keys at most in all).
    pub request_items: Option<BTreeMap<String, KeysAndAttributes>>,
    /// `INDEXES`, `TOTAL` or `NONE`.
    pub return_consumed_capacity: Option<String>,
}

/// BatchGetItem response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchGetItemOutput {
    /// Per table: the items found.
    pub responses: BTreeMap<String, Vec<AttributeMap>>,
    /// Keys not read (always empty: every key is read).
    pub unprocessed_keys: BTreeMap<String, KeysAndAttributes>,
    /// With `ReturnConsumedCapacity`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<Vec<ConsumedCapacity>>,
}

/// `PutRequest` of BatchWriteItem.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct PutRequest {
    /// The item.
    #[serde(default)]
    pub item: AttributeMap,
}

/// `DeleteRequest` of BatchWriteItem.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DeleteRequest {
    /// The key.
    #[serde(default)]
    pub key: AttributeMap,
}

/// One write of BatchWriteItem: exactly one of the two.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct WriteRequest {
    /// A put.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub put_request: Option<PutRequest>,
    /// A delete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete_request: Option<DeleteRequest>,
}

/// BatchWriteItem request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchWriteItemInput {
    /// Per table: the writes (25 at most in all).
    pub request_items: Option<BTreeMap<String, Vec<WriteRequest>>>,
    /// `INDEXES`, `TOTAL` or `NONE`.
    pub return_consumed_capacity: Option<String>,
    /// Accepted and ignored.
    pub return_item_collection_metrics: Option<String>,
}

/// BatchWriteItem response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct BatchWriteItemOutput {
    /// Writes not done (always empty: the batch is applied atomically).
    pub unprocessed_items: BTreeMap<String, Vec<WriteRequest>>,
    /// With `ReturnConsumedCapacity`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<Vec<ConsumedCapacity>>,
}

/// The common fields of a TransactWriteItems action.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransactAction {
    /// The table.
    pub table_name: Option<String>,
    /// The key (ConditionCheck, Delete, Update).
    pub key: Option<AttributeMap>,
    /// The item (Put).
    pub item: Option<AttributeMap>,
    /// The update (Update).
    pub update_expression: Option<String>,
    /// The condition.
    pub condition_expression: Option<String>,
    /// `#name` references.
    pub expression_attribute_names: Option<Names>,
    /// `:value` references.
    pub expression_attribute_values: Option<Values>,
    /// `NONE` or `ALL_OLD`.
    pub return_values_on_condition_check_failure: Option<String>,
}

/// One action of TransactWriteItems: exactly one of the four.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransactWriteItem {
    /// A condition that must hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub condition_check: Option<TransactAction>,
    /// A put.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub put: Option<TransactAction>,
    /// A delete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete: Option<TransactAction>,
    /// An update.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update: Option<TransactAction>,
}

/// TransactWriteItems request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransactWriteItemsInput {
    /// 1 to 100 actions, on distinct items, all applied or none.
    pub transact_items: Option<Vec<TransactWriteItem>>,
    /// `INDEXES`, `TOTAL` or `NONE`.
    pub return_consumed_capacity: Option<String>,
    /// Accepted and ignored.
    pub return_item_collection_metrics: Option<String>,
    /// Accepted and ignored (no idempotency window).
    pub client_request_token: Option<String>,
}

/// TransactWriteItems response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransactWriteItemsOutput {
    /// With `ReturnConsumedCapacity`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<Vec<ConsumedCapacity>>,
}

/// `Get` of TransactGetItems.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransactGet {
    /// The table.
    pub table_name: Option<String>,
    /// The key.
    pub key: Option<AttributeMap>,
    /// The attributes to return.
    pub projection_expression: Option<String>,
    /// `#name` references.
    pub expression_attribute_names: Option<Names>,
}

/// One read of TransactGetItems.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransactGetItem {
    /// The read.
    pub get: Option<TransactGet>,
}

/// TransactGetItems request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransactGetItemsInput {
    /// 1 to 100 reads, all from one snapshot.
    pub transact_items: Option<Vec<TransactGetItem>>,
    /// `INDEXES`, `TOTAL` or `NONE`.
    pub return_consumed_capacity: Option<String>,
}

/// One answer of TransactGetItems.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ItemResponse {
    /// The item, absent when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<AttributeMap>,
}

/// TransactGetItems response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TransactGetItemsOutput {
    /// One per read, in request order.
    pub responses: Vec<ItemResponse>,
    /// With `ReturnConsumedCapacity`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consumed_capacity: Option<Vec<ConsumedCapacity>>,
}

/// TagResource request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct TagResourceInput {
    /// The table's ARN.
    pub resource_arn: Option<String>,
    /// Tags to add or replace.
    pub tags: Option<Vec<Tag>>,
}

/// UntagResource request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct UntagResourceInput {
    /// The table's ARN.
    pub resource_arn: Option<String>,
    /// Tag keys to remove.
    pub tag_keys: Option<Vec<String>>,
}

/// ListTagsOfResource request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ListTagsOfResourceInput {
    /// The table's ARN.
    pub resource_arn: Option<String>,
    /// Accepted (every tag is returned at once).
    pub next_token: Option<String>,
}

/// ListTagsOfResource response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ListTagsOfResourceOutput {
    /// The tags.
    pub tags: Vec<Tag>,
}

/// DescribeEndpoints response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct DescribeEndpointsOutput {
    /// This endpoint.
    pub endpoints: Vec<Endpoint>,
}

/// One endpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Endpoint {
    /// `host:port`.
    pub address: String,
    /// How long clients may cache it.
    pub cache_period_in_minutes: i64,
}
