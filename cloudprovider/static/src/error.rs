//! Configuration errors of the static provider: bad `--nodes` values and bad cloud-config files.

use std::fmt;

use thiserror::Error;

use cloudprovider::CloudProviderError;

#[derive(Debug, Error)]
pub enum ConfigError {
    /// A `--nodes=<min>:<max>:<id>` value that cannot be used.
    #[error("invalid --nodes value {value:?}: {reason}")]
    NodesFlag { value: String, reason: String },

    /// The cloud-config file could not be read.
    #[error("cannot read cloud config {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },

    /// The cloud-config file is malformed or inconsistent. `field` is the path inside the file
    /// (`nodeGroups[1].maxSize`), `line` the 1-based line when known.
    #[error("{}", InvalidDisplay { source_name, field: field.as_deref(), line: *line, message })]
    Invalid { source_name: String, field: Option<String>, line: Option<u64>, message: String },
}

impl ConfigError {
    pub(crate) fn invalid(
        source_name: &str,
        field: impl Into<String>,
        line: Option<u64>,
        message: impl Into<String>,
    ) -> Self {
        let field = field.into();
        ConfigError::Invalid {
            source_name: source_name.to_string(),
            field: (!field.is_empty()).then_some(field),
            line,
            message: message.into(),
        }
    }

    pub(crate) fn nodes_flag(value: &str, reason: impl Into<String>) -> Self {
        ConfigError::NodesFlag { value: value.to_string(), reason: reason.into() }
    }

    /// The field path inside the file, for `Invalid` errors that have one.
    pub fn field(&self) -> Option<&str> {
        match self {
            ConfigError::Invalid { field, .. } => field.as_deref(),
            _ => None,
        }
    }

    /// The 1-based line inside the file, when known.
    pub fn line(&self) -> Option<u64> {
        match self {
            ConfigError::Invalid { line, .. } => *line,
            _ => None,
        }
    }
}

/// `<file>:<line>: <field>: <message>`, leaving out what is unknown.
struct InvalidDisplay<'a> {
    source_name: &'a str,
    field: Option<&'a str>,
    line: Option<u64>,
    message: &'a str,
}

impl fmt::Display for InvalidDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.source_name)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = self.field {
            write!(f, ": {field}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl From<ConfigError> for CloudProviderError {
    fn from(error: ConfigError) -> Self {
        CloudProviderError::Configuration(error.to_string())
    }
}
