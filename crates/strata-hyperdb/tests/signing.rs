//! The fast signer (AWS-LC, the `aws-lc` feature) gives the very bytes ed25519-dalek gives:
//! Ed25519 is deterministic, and every signature lands in the `signatures` file that the
//! reference checks.

use ed25519_dalek::Signer;
use proptest::prelude::*;
use strata_hyperdb::sleep::KeyPair;

#[test]
fn aws_lc_signs_when_the_feature_is_on() {
    let kp = KeyPair::from_seed(&[9; 32]);
    assert_eq!(kp.signs_with_aws_lc(), cfg!(feature = "aws-lc"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn signatures_match_ed25519_dalek(seed in any::<[u8; 32]>(), msg in proptest::collection::vec(any::<u8>(), 0..200)) {
        let kp = KeyPair::from_seed(&seed);
        let dalek = kp.signing_key().sign(&msg).to_bytes();
        prop_assert_eq!(kp.sign(&msg), dalek);
        prop_assert!(strata_hyperdb::sleep::crypto::verify(&kp.public_key(), &msg, &dalek));
        // A copy signs the same (the AWS-LC key is shared, not rebuilt).
        prop_assert_eq!(kp.clone().sign(&msg), dalek);
        let back = KeyPair::from_secret_key(&kp.secret_key()).expect("own secret key");
        prop_assert_eq!(back.sign(&msg), dalek);
    }
}
