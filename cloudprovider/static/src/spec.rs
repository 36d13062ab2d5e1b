//! The `--nodes=<min>:<max>:<id>` flag.

use super::error::ConfigError;

/// One `--nodes` value: a node group and its size bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeGroupSpec {
    pub min: usize,
    pub max: usize,
    pub id: String,
}

/// Parses `<min>:<max>:<id>`.
///
/// Like upstream, the value is split at the first two colons only, so the id may itself contain
/// colons (GCE group ids are URLs). Sizes are non-negative integers with `min <= max`; `max` may
/// be 0, since this provider supports groups scaled to zero.
pub fn parse_node_group_spec(value: &str) -> Result<NodeGroupSpec, ConfigError> {
    let mut fields = value.splitn(3, ':');
    let (Some(min), Some(max), Some(id)) = (fields.next(), fields.next(), fields.next()) else {
        return Err(ConfigError::nodes_flag(value, "expected <min>:<max>:<id>"));
    };
    let min = parse_size(value, "min", min)?;
    let max = parse_size(value, "max", max)?;
    if id.is_empty() {
        return Err(ConfigError::nodes_flag(value, "node group id must not be empty"));
    }
    if min > max {
        return Err(ConfigError::nodes_flag(value, format!("min size {min} is greater than max size {max}")));
    }
    Ok(NodeGroupSpec { min, max, id: id.to_string() })
}

fn parse_size(value: &str, which: &str, text: &str) -> Result<usize, ConfigError> {
    match text.parse::<i64>() {
        Ok(size) if size < 0 => {
            Err(ConfigError::nodes_flag(value, format!("{which} size {size} must not be negative")))
        }
        Ok(size) => usize::try_from(size)
            .map_err(|_| ConfigError::nodes_flag(value, format!("{which} size {size} is too large"))),
        Err(_) => Err(ConfigError::nodes_flag(value, format!("{which} size {text:?} is not an integer"))),
    }
}

/// Parses every `--nodes` value and refuses an id given twice.
pub(crate) fn parse_node_group_specs(values: &[String]) -> Result<Vec<NodeGroupSpec>, ConfigError> {
    let mut specs: Vec<NodeGroupSpec> = Vec::with_capacity(values.len());
    for value in values {
        let spec = parse_node_group_spec(value)?;
        if specs.iter().any(|seen| seen.id == spec.id) {
            return Err(ConfigError::nodes_flag(value, format!("node group {:?} is given more than once", spec.id)));
        }
        specs.push(spec);
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(value: &str) -> String {
        parse_node_group_spec(value).unwrap_err().to_string()
    }

    #[test]
    fn nodes_flag_parses_min_max_id() {
        let spec = parse_node_group_spec("1:10:general").unwrap();
        assert_eq!(spec, NodeGroupSpec { min: 1, max: 10, id: "general".into() });
    }

    #[test]
    fn nodes_flag_id_may_contain_colons() {
        let spec = parse_node_group_spec("0:3:https://example.com/groups/a").unwrap();
        assert_eq!(spec.id, "https://example.com/groups/a");
    }

    #[test]
    fn nodes_flag_allows_equal_bounds_and_zero_max() {
        assert_eq!(parse_node_group_spec("3:3:g").unwrap().max, 3);
        assert_eq!(parse_node_group_spec("0:0:g").unwrap().max, 0);
    }

    #[test]
    fn nodes_flag_min_greater_than_max_is_refused() {
        assert_eq!(error("5:3:g"), r#"invalid --nodes value "5:3:g": min size 5 is greater than max size 3"#);
    }

    #[test]
    fn nodes_flag_wrong_number_of_fields_is_refused() {
        assert_eq!(error("1:3"), r#"invalid --nodes value "1:3": expected <min>:<max>:<id>"#);
        assert!(error("g").contains("expected <min>:<max>:<id>"));
    }

    #[test]
    fn nodes_flag_non_integer_sizes_are_refused() {
        assert_eq!(error("a:3:g"), r#"invalid --nodes value "a:3:g": min size "a" is not an integer"#);
        assert_eq!(error("1:3.5:g"), r#"invalid --nodes value "1:3.5:g": max size "3.5" is not an integer"#);
        assert!(error(":3:g").contains(r#"min size "" is not an integer"#));
    }

    #[test]
    fn nodes_flag_negative_sizes_are_refused() {
        assert_eq!(error("-1:3:g"), r#"invalid --nodes value "-1:3:g": min size -1 must not be negative"#);
        assert!(error("0:-2:g").contains("max size -2 must not be negative"));
    }

    #[test]
    fn nodes_flag_empty_id_is_refused() {
        assert_eq!(error("1:3:"), r#"invalid --nodes value "1:3:": node group id must not be empty"#);
    }

    #[test]
    fn nodes_flag_same_id_twice_is_refused() {
        let values = vec!["1:3:g".to_string(), "2:4:g".to_string()];
        let message = parse_node_group_specs(&values).unwrap_err().to_string();
        assert_eq!(message, r#"invalid --nodes value "2:4:g": node group "g" is given more than once"#);
    }
}
