//! The error of an RRD operation: rrdtool's own message text.
//!
//! rrdtool reports every failure as one line of text (`ERROR: <text>` on the CLI,
//! `-1 RRD Error: <text>` through rrdcached). Scripts match on those texts, so the text is the
//! contract: [`RrdError::msg`] holds exactly what rrdtool 1.7.2 would print after `ERROR: `.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RrdError {
    /// rrdtool's message, without the `ERROR: ` prefix and without a trailing newline.
    pub msg: String,
}

impl RrdError {
    pub fn new(msg: impl Into<String>) -> Self {
        RrdError { msg: msg.into() }
    }
}

impl fmt::Display for RrdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for RrdError {}

/// `Err(RrdError::new(format!(...)))` in one line.
#[macro_export]
macro_rules! rrd_bail {
    ($($arg:tt)*) => {
        return Err($crate::RrdError::new(format!($($arg)*)))
    };
}
