//! PKCE with S256 only (RFC 7636): what the authorization endpoint accepts as a challenge and
//! what the token endpoint accepts as its verifier.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use sha2::{Digest, Sha256};

/// An S256 code challenge is base64url(SHA-256), 43 characters without padding.
pub(super) fn is_s256_challenge(challenge: &str) -> bool {
    challenge.len() == 43
        && challenge
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

/// RFC 7636 §4.1 and §4.6: a well-formed verifier whose S256 digest is the challenge.
pub(super) fn verifier_matches(verifier: &str, challenge: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~'));
    well_formed && URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) == challenge
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7636 Appendix B.
    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    #[test]
    fn pkce_s256_matches_the_rfc_example() {
        assert!(is_s256_challenge(CHALLENGE));
        assert!(verifier_matches(VERIFIER, CHALLENGE));
    }

    #[test]
    fn pkce_refuses_wrong_or_malformed_verifiers() {
        let mut wrong = VERIFIER.to_owned();
        wrong.replace_range(0..1, "e");
        assert!(!verifier_matches(&wrong, CHALLENGE));
        // plain: the verifier equal to the challenge is not accepted.
        assert!(!verifier_matches(CHALLENGE, CHALLENGE));
        // too short, and characters outside the unreserved set.
        assert!(!verifier_matches("abc", CHALLENGE));
        let with_space = format!("{} ", &VERIFIER[..43]);
        assert!(!verifier_matches(&with_space, CHALLENGE));
        assert!(!is_s256_challenge("short"));
        assert!(!is_s256_challenge(&format!("{}=", &CHALLENGE[..42])));
    }
}
