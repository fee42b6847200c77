//! JSON replies parsed (`serde_json`), so that a test checks a reply by its fields rather than
//! by searching its text.

pub use serde_json::Value;

/// `text` parsed; a test fails with the text when it is not JSON.
pub fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}
