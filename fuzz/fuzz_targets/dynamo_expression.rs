//! Expression text is untrusted: parsing and resolving never panic, never recurse without
//! bound, and every failure is a ValidationException.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata_dynamo::expr::parse;
use strata_dynamo::expr::resolve::{ExprKind, Refs};
use strata_dynamo::model::{Names, Values};
use strata_dynamo::{AttributeValue, ErrorKind};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = parse::parse_condition(&text);
    let _ = parse::parse_update(&text);
    let _ = parse::parse_projection(&text);
    let names: Names = [("#a".to_string(), "a".to_string()), ("#b".to_string(), "b.c".to_string())]
        .into_iter()
        .collect();
    let values: Values = [
        (":v".to_string(), AttributeValue::N("1".into())),
        (":s".to_string(), AttributeValue::S("x".into())),
        (":l".to_string(), AttributeValue::L(vec![])),
        (":ss".to_string(), AttributeValue::Ss(vec!["x".into()])),
    ]
    .into_iter()
    .collect();
    for kind in [ExprKind::Condition, ExprKind::Filter] {
        let mut refs = Refs::new(Some(&names), Some(&values)).unwrap();
        if let Err(e) = refs.condition(&text, kind) {
            assert_eq!(e.kind, ErrorKind::Validation);
        }
    }
    let mut refs = Refs::new(Some(&names), Some(&values)).unwrap();
    if let Err(e) = refs.update(&text, &["p"]) {
        assert_eq!(e.kind, ErrorKind::Validation);
    }
    let mut refs = Refs::new(Some(&names), None).unwrap();
    if let Err(e) = strata_dynamo::expr::resolve::projection(&mut refs, &text) {
        assert_eq!(e.kind, ErrorKind::Validation);
    }
});
