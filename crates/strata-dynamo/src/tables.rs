//! CreateTable, DescribeTable, DeleteTable, ListTables, UpdateTable and tags.
//!
//! A DynamoDB table is a Strata table (partition = the HASH attribute, sort = the RANGE
//! attribute; `S` → text, `N` → decimal, `B` → bytes). What DynamoDB describes beyond the key
//! schema (id, creation time, billing mode, throughput, tags) is kept in the Strata catalog
//! entry's metadata under `"dynamodb"`.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::json;
use strata::{KeyField, Table, TableSchema};

use crate::convert::{item_size, DType};
use crate::error::{ApiError, ErrorKind};
use crate::keys::{kind_of_dtype, KeySchema};
use crate::model::*;
use crate::Dynamo;

/// Region in ARNs.
pub const REGION: &str = "us-east-1";
/// Account in ARNs.
pub const ACCOUNT: &str = "000000000000";

/// What Strata keeps for DynamoDB about a table (catalog metadata `"dynamodb"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TableMeta {
    /// `TableId`.
    pub table_id: String,
    /// `CreationDateTime`, seconds since 1970.
    pub created: f64,
    /// `PAY_PER_REQUEST` or `PROVISIONED`.
    pub billing_mode: String,
    /// When the billing mode was last set.
    pub billing_mode_set: f64,
    /// Provisioned read capacity (0 on demand).
    pub read_capacity: i64,
    /// Provisioned write capacity (0 on demand).
    pub write_capacity: i64,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<Tag>,
    /// Deletion protection.
    #[serde(default)]
    pub deletion_protection: bool,
}

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Checks a table name: 3 to 255 characters of `[a-zA-Z0-9_.-]`.
pub fn check_table_name(name: Option<&str>) -> Result<&str, ApiError> {
    let Some(name) = name else {
        return Err(ApiError::validation(
            "1 validation error detected: Value null at 'tableName' failed to satisfy \
             constraint: Member must not be null",
        ));
    };
    if name.len() < 3 || name.len() > 255 {
        return Err(ApiError::validation(format!(
            "1 validation error detected: Value '{name}' at 'tableName' failed to satisfy \
             constraint: Member must have length between 3 and 255"
        )));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
    {
        return Err(ApiError::validation(format!(
            "1 validation error detected: Value '{name}' at 'tableName' failed to satisfy \
             constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+"
        )));
    }
    Ok(name)
}

fn invalid(msg: impl std::fmt::Display) -> ApiError {
    ApiError::validation(format!("One or more parameter values were invalid: {msg}"))
}

fn null_member(at: &str) -> ApiError {
    ApiError::validation(format!(
        "1 validation error detected: Value null at '{at}' failed to satisfy constraint: Member \
         must not be null"
    ))
}

/// The ARN of a table.
pub fn arn(name: &str) -> String {
    format!("arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}")
}

fn table_of_arn(arn: Option<&str>) -> Result<String, ApiError> {
    let arn = arn.ok_or_else(|| null_member("resourceArn"))?;
    arn.strip_prefix("arn:aws:dynamodb:")
        .and_then(|rest| rest.split_once(":table/"))
        .map(|(_, name)| name.to_owned())
        .filter(|n| !n.is_empty() && !n.contains('/'))
        .ok_or_else(|| ApiError::validation(format!("Invalid TableArn: {arn}")))
}

fn billing(
    mode: Option<&str>,
    pt: Option<&ProvisionedThroughput>,
) -> Result<(String, i64, i64), ApiError> {
    match mode.unwrap_or("PROVISIONED") {
        "PAY_PER_REQUEST" => {
            if pt.is_some() {
                return Err(invalid(
                    "Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when \
                     BillingMode is PAY_PER_REQUEST",
                ));
            }
            Ok(("PAY_PER_REQUEST".into(), 0, 0))
        }
        "PROVISIONED" => match pt {
            Some(ProvisionedThroughput {
                read_capacity_units: Some(r),
                write_capacity_units: Some(w),
            }) if *r >= 1 && *w >= 1 => Ok(("PROVISIONED".into(), *r, *w)),
            _ => Err(invalid(
                "ReadCapacityUnits and WriteCapacityUnits must both be specified (at least 1) \
                 when BillingMode is PROVISIONED",
            )),
        },
        other => Err(ApiError::validation(format!(
            "1 validation error detected: Value '{other}' at 'billingMode' failed to satisfy \
             constraint: Member must satisfy enum value set: [PROVISIONED, PAY_PER_REQUEST]"
        ))),
    }
}

fn check_stream(s: Option<&StreamSpecification>) -> Result<(), ApiError> {
    match s {
        Some(StreamSpecification {
            stream_enabled: Some(true),
            ..
        }) => Err(ApiError::validation(
            "StreamSpecification: streams are not supported by Strata yet",
        )),
        Some(StreamSpecification {
            stream_enabled: None,
            ..
        }) => Err(ApiError::validation(
            "StreamSpecification needs StreamEnabled",
        )),
        _ => Ok(()),
    }
}

fn key_schema_of(input: &CreateTableInput) -> Result<(String, Option<String>), ApiError> {
    let ks = input
        .key_schema
        .as_ref()
        .ok_or_else(|| null_member("keySchema"))?;
    if ks.is_empty() || ks.len() > 2 {
        return Err(ApiError::validation(format!(
            "1 validation error detected: Value at 'keySchema' failed to satisfy constraint: \
             Member must have length less than or equal to 2 and greater than or equal to 1 \
             (it has {})",
            ks.len()
        )));
    }
    let name = |i: usize, e: &KeySchemaElement| {
        e.attribute_name
            .clone()
            .ok_or_else(|| null_member(&format!("keySchema.{}.member.attributeName", i + 1)))
    };
    if ks[0].key_type.as_deref() != Some("HASH") {
        return Err(ApiError::validation(
            "Invalid KeySchema: The first KeySchemaElement is not a HASH key type",
        ));
    }
    let hash = name(0, &ks[0])?;
    let range = match ks.get(1) {
        Some(e) if e.key_type.as_deref() == Some("RANGE") => Some(name(1, e)?),
        Some(_) => {
            return Err(ApiError::validation(
                "Invalid KeySchema: The second KeySchemaElement is not a RANGE key type",
            ))
        }
        None => None,
    };
    if range.as_deref() == Some(hash.as_str()) {
        return Err(invalid(
            "Both the Hash Key and the Range Key element in the KeySchema have the same name",
        ));
    }
    Ok((hash, range))
}

fn definitions(input: &CreateTableInput) -> Result<Vec<(String, DType)>, ApiError> {
    let defs = input
        .attribute_definitions
        .as_ref()
        .ok_or_else(|| null_member("attributeDefinitions"))?;
    let mut out: Vec<(String, DType)> = Vec::with_capacity(defs.len());
    for (i, d) in defs.iter().enumerate() {
        let name = d.attribute_name.clone().ok_or_else(|| {
            null_member(&format!(
                "attributeDefinitions.{}.member.attributeName",
                i + 1
            ))
        })?;
        let t = d.attribute_type.as_deref().ok_or_else(|| {
            null_member(&format!(
                "attributeDefinitions.{}.member.attributeType",
                i + 1
            ))
        })?;
        let t = match t {
            "S" => DType::S,
            "N" => DType::N,
            "B" => DType::B,
            other => {
                return Err(ApiError::validation(format!(
                    "1 validation error detected: Value '{other}' at \
                     'attributeDefinitions.{}.member.attributeType' failed to satisfy \
                     constraint: Member must satisfy enum value set: [B, N, S]",
                    i + 1
                )))
            }
        };
        if name.is_empty() || name.len() > 255 {
            return Err(invalid(format!(
                "AttributeName length must be between 1 and 255, got {}",
                name.len()
            )));
        }
        if out.iter().any(|(n, _)| *n == name) {
            return Err(invalid(format!(
                "Duplicate AttributeName in AttributeDefinitions: {name}"
            )));
        }
        out.push((name, t));
    }
    Ok(out)
}

impl Dynamo {
    /// The table `name`, checked, with its DynamoDB key schema.
    pub(crate) fn table(&self, name: Option<&str>) -> Result<(Table, KeySchema), ApiError> {
        let name = check_table_name(name)?;
        let t = self
            .db()
            .table(name)
            .map_err(|_| ApiError::table_not_found(name))?;
        let ks = KeySchema::of(&t)?;
        Ok((t, ks))
    }

    fn meta_of(t: &Table) -> TableMeta {
        t.meta()
            .and_then(|m| m.get("dynamodb").cloned())
            .and_then(|m| serde_json::from_value(m).ok())
            .unwrap_or_else(|| TableMeta {
                table_id: format!("00000000-0000-4000-8000-{:012x}", t.id()),
                billing_mode: "PAY_PER_REQUEST".into(),
                ..TableMeta::default()
            })
    }

    fn describe(
        &self,
        t: &Table,
        ks: &KeySchema,
        counts: bool,
    ) -> Result<TableDescription, ApiError> {
        let m = Self::meta_of(t);
        let name = t.name().to_owned();
        let (mut count, mut size) = (0u64, 0u64);
        if counts {
            for item in t.scan_rows(&strata::Scan::all())? {
                let item = item?;
                count += 1;
                size += item_size(&item) as u64;
            }
        }
        let mut billing = json!({"BillingMode": m.billing_mode});
        if m.billing_mode == "PAY_PER_REQUEST" {
            billing["LastUpdateToPayPerRequestDateTime"] = json!(m.billing_mode_set);
        }
        Ok(TableDescription {
            table_name: Some(name.clone()),
            table_status: Some("ACTIVE".into()),
            table_id: Some(m.table_id),
            table_arn: Some(arn(&name)),
            attribute_definitions: Some(
                ks.attrs()
                    .map(|a| AttributeDefinition {
                        attribute_name: Some(a.name.clone()),
                        attribute_type: Some(a.dtype.name().into()),
                    })
                    .collect(),
            ),
            key_schema: Some(
                ks.attrs()
                    .zip(["HASH", "RANGE"])
                    .map(|(a, k)| KeySchemaElement {
                        attribute_name: Some(a.name.clone()),
                        key_type: Some(k.into()),
                    })
                    .collect(),
            ),
            creation_date_time: Some(m.created),
            item_count: Some(count),
            table_size_bytes: Some(size),
            billing_mode_summary: Some(billing),
            provisioned_throughput: Some(json!({
                "NumberOfDecreasesToday": 0,
                "ReadCapacityUnits": m.read_capacity,
                "WriteCapacityUnits": m.write_capacity,
            })),
            deletion_protection_enabled: Some(m.deletion_protection),
        })
    }

    /// CreateTable. The table is `ACTIVE` at once.
    pub fn create_table(&self, input: CreateTableInput) -> Result<CreateTableOutput, ApiError> {
        let name = check_table_name(input.table_name.as_deref())?.to_owned();
        let defs = definitions(&input)?;
        let (hash, range) = key_schema_of(&input)?;
        let (mode, r, w) = billing(
            input.billing_mode.as_deref(),
            input.provisioned_throughput.as_ref(),
        )?;
        if input.global_secondary_indexes.is_some() || input.local_secondary_indexes.is_some() {
            return Err(ApiError::validation(
                "Secondary indexes (GlobalSecondaryIndexes, LocalSecondaryIndexes) are not \
                 supported by Strata yet",
            ));
        }
        check_stream(input.stream_specification.as_ref())?;
        let key_names: Vec<&String> = std::iter::once(&hash).chain(range.as_ref()).collect();
        let missing: Vec<&String> = key_names
            .iter()
            .filter(|k| !defs.iter().any(|(n, _)| n == **k))
            .copied()
            .collect();
        if !missing.is_empty() {
            return Err(invalid(format!(
                "Some index key attributes are not defined in AttributeDefinitions. Keys: {:?}, \
                 AttributeDefinitions: {:?}",
                missing,
                defs.iter().map(|(n, _)| n).collect::<Vec<_>>()
            )));
        }
        if defs.len() != key_names.len() {
            return Err(invalid(
                "Number of attributes in KeySchema does not exactly match number of attributes \
                 defined in AttributeDefinitions",
            ));
        }
        let field = |n: &String| -> Result<KeyField, ApiError> {
            let t = defs
                .iter()
                .find(|(d, _)| d == n)
                .map(|(_, t)| *t)
                .ok_or_else(|| invalid("key attribute not defined"))?;
            let kind = kind_of_dtype(t).ok_or_else(|| invalid("key attribute type"))?;
            Ok(KeyField::new(n.clone(), kind))
        };
        let mut schema = TableSchema::new(name.clone(), vec![field(&hash)?]);
        if let Some(r) = &range {
            schema = schema.with_sort(vec![field(r)?]);
        }
        let created = now();
        let meta = TableMeta {
            table_id: uuid::Uuid::new_v4().to_string(),
            created,
            billing_mode: mode,
            billing_mode_set: created,
            read_capacity: r,
            write_capacity: w,
            tags: input.tags.clone().unwrap_or_default(),
            deletion_protection: input.deletion_protection_enabled.unwrap_or(false),
        };
        let meta = json!({ "dynamodb": meta });
        let t = match self.db().create_table_with_meta(schema, meta) {
            Ok(t) => t,
            Err(strata::Error::TableExists { .. }) => {
                return Err(ApiError::new(
                    ErrorKind::ResourceInUse,
                    format!("Table already exists: {name}"),
                ))
            }
            Err(e) => return Err(e.into()),
        };
        let ks = KeySchema::of(&t)?;
        Ok(CreateTableOutput {
            table_description: self.describe(&t, &ks, false)?,
        })
    }

    /// DescribeTable (with an exact `ItemCount` and `TableSizeBytes`: a scan of the table).
    pub fn describe_table(&self, input: TableNameInput) -> Result<DescribeTableOutput, ApiError> {
        let (t, ks) = self.table(input.table_name.as_deref())?;
        Ok(DescribeTableOutput {
            table: self.describe(&t, &ks, true)?,
        })
    }

    /// DeleteTable: the table and its items are gone when this returns.
    pub fn delete_table(&self, input: TableNameInput) -> Result<TableDescriptionOutput, ApiError> {
        let (t, ks) = self.table(input.table_name.as_deref())?;
        let mut d = self.describe(&t, &ks, true)?;
        if d.deletion_protection_enabled == Some(true) {
            return Err(ApiError::validation(
                "Resource cannot be deleted as it is currently protected against deletion. \
                 Disable deletion protection first.",
            ));
        }
        self.db().drop_table(t.name()).map_err(|e| match e {
            strata::Error::TableNotFound(n) => ApiError::table_not_found(&n),
            e => e.into(),
        })?;
        d.table_status = Some("DELETING".into());
        d.key_schema = None;
        d.attribute_definitions = None;
        d.creation_date_time = None;
        d.deletion_protection_enabled = None;
        Ok(TableDescriptionOutput {
            table_description: d,
        })
    }

    /// ListTables, in name order.
    pub fn list_tables(&self, input: ListTablesInput) -> Result<ListTablesOutput, ApiError> {
        let limit = input.limit.unwrap_or(100);
        if !(1..=100).contains(&limit) {
            return Err(ApiError::validation(format!(
                "1 validation error detected: Value '{limit}' at 'limit' failed to satisfy \
                 constraint: Member must have value less than or equal to 100 and greater than \
                 or equal to 1"
            )));
        }
        let after = input.exclusive_start_table_name.unwrap_or_default();
        let mut names: Vec<String> = self
            .db()
            .tables()
            .into_iter()
            .map(|s| s.name)
            .filter(|n| n.as_str() > after.as_str())
            .collect();
        let more = names.len() > limit as usize;
        names.truncate(limit as usize);
        Ok(ListTablesOutput {
            last_evaluated_table_name: if more { names.last().cloned() } else { None },
            table_names: names,
        })
    }

    fn update_meta(&self, t: &Table, f: impl FnOnce(&mut TableMeta)) -> Result<(), ApiError> {
        let mut m = Self::meta_of(t);
        f(&mut m);
        let mut all = t.meta().map(|m| (*m).clone()).unwrap_or_else(|| json!({}));
        if !all.is_object() {
            all = json!({});
        }
        all["dynamodb"] = json!(m);
        self.db().set_table_meta(t.name(), all)?;
        Ok(())
    }

    /// UpdateTable: billing mode, throughput and deletion protection; secondary indexes and
    /// streams are refused.
    pub fn update_table(
        &self,
        input: UpdateTableInput,
    ) -> Result<TableDescriptionOutput, ApiError> {
        let (t, ks) = self.table(input.table_name.as_deref())?;
        if input.global_secondary_index_updates.is_some() {
            return Err(ApiError::validation(
                "GlobalSecondaryIndexUpdates: secondary indexes are not supported by Strata yet",
            ));
        }
        check_stream(input.stream_specification.as_ref())?;
        let old = Self::meta_of(&t);
        let mode = input
            .billing_mode
            .clone()
            .unwrap_or_else(|| old.billing_mode.clone());
        let pt = match (&input.provisioned_throughput, mode.as_str()) {
            (Some(p), _) => Some(p.clone()),
            (None, "PROVISIONED") if old.billing_mode == "PROVISIONED" => {
                Some(ProvisionedThroughput {
                    read_capacity_units: Some(old.read_capacity),
                    write_capacity_units: Some(old.write_capacity),
                })
            }
            _ => None,
        };
        let (mode, r, w) = billing(Some(&mode), pt.as_ref())?;
        let changed = mode != old.billing_mode;
        self.update_meta(&t, |m| {
            m.billing_mode = mode;
            m.read_capacity = r;
            m.write_capacity = w;
            if changed {
                m.billing_mode_set = now();
            }
            if let Some(p) = input.deletion_protection_enabled {
                m.deletion_protection = p;
            }
        })?;
        Ok(TableDescriptionOutput {
            table_description: self.describe(&t, &ks, true)?,
        })
    }

    /// TagResource: adds or replaces tags.
    pub fn tag_resource(&self, input: TagResourceInput) -> Result<(), ApiError> {
        let name = table_of_arn(input.resource_arn.as_deref())?;
        let (t, _) = self.table(Some(&name))?;
        let tags = input.tags.ok_or_else(|| null_member("tags"))?;
        if let Some(bad) = tags.iter().find(|t| t.key.is_empty() || t.key.len() > 128) {
            return Err(invalid(format!("Invalid tag key: {:?}", bad.key)));
        }
        self.update_meta(&t, |m| {
            for tag in tags {
                m.tags.retain(|x| x.key != tag.key);
                m.tags.push(tag);
            }
        })
    }

    /// UntagResource: removes tags.
    pub fn untag_resource(&self, input: UntagResourceInput) -> Result<(), ApiError> {
        let name = table_of_arn(input.resource_arn.as_deref())?;
        let (t, _) = self.table(Some(&name))?;
        let keys = input.tag_keys.ok_or_else(|| null_member("tagKeys"))?;
        self.update_meta(&t, |m| m.tags.retain(|x| !keys.contains(&x.key)))
    }

    /// ListTagsOfResource.
    pub fn list_tags_of_resource(
        &self,
        input: ListTagsOfResourceInput,
    ) -> Result<ListTagsOfResourceOutput, ApiError> {
        let name = table_of_arn(input.resource_arn.as_deref())?;
        let (t, _) = self.table(Some(&name))?;
        Ok(ListTagsOfResourceOutput {
            tags: Self::meta_of(&t).tags,
        })
    }
}
